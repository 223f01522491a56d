-- Starting a manual run counts the tenant's live runs; this keeps that count to the few live
-- rows instead of every run the tenant ever made.
CREATE INDEX manual_runs_tenant_live ON manual_runs (tenant_id) WHERE status IN ('queued', 'running');
