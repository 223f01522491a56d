-- The listing sorted by follow-up orders by the day with "none" last; an index on that very
-- expression lets a page of a large pipeline be read in order instead of sorted whole.
DROP INDEX items_by_follow_up;
CREATE INDEX items_by_follow_up ON items (tenant_id, (coalesce(follow_up_on, 'infinity'::date)), id);
