-- The claim walks the tenants that have waiting deliveries (a loose index scan) and takes each
-- one's oldest due rows up to its free slots, so its cost follows tenants and caps, not the size
-- of the backlog. Exhausted deliveries (dead-lettered at their due time) are found on their own.
CREATE INDEX deliveries_due_by_tenant ON deliveries (tenant_id, due_at)
  WHERE state IN ('pending', 'retrying', 'exhausted', 'parked');
CREATE INDEX deliveries_exhausted_due ON deliveries (due_at) WHERE state = 'exhausted';
DROP INDEX deliveries_due;
