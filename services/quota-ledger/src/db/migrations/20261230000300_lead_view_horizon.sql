-- The first day whose lead-views the ledger still keeps: retention moves it forward before it
-- drops a month (decision 0393). An event of an earlier day (a consumer group read again from the
-- log's start, which keeps its segments a little longer than the ledger keeps months) is past
-- retention: it is not recorded, rather than bring back a month retention dropped or fail for want
-- of its partition. The rebuild compares only the days from it on.
CREATE TABLE lead_view_horizon (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  kept_from date NOT NULL
);
INSERT INTO lead_view_horizon (kept_from) VALUES ('-infinity');

-- As 20261229000000, with the events of days before the horizon left out.
CREATE OR REPLACE FUNCTION record_lead_views(
  p_tenant_id text[], p_day date[], p_folio text[], p_period_start date[], p_surface text[],
  p_request_id text[], p_key_id text[], p_member_id text[], p_recorded_at timestamptz[],
  p_partition int[], p_offset bigint[], p_lock_space int, p_lock_buckets int
) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  inserted integer;
  horizon date := (SELECT h.kept_from FROM lead_view_horizon h);
BEGIN
  PERFORM pg_advisory_xact_lock_shared(p_lock_space, b)
     FROM (SELECT DISTINCT hashtext(t) & (p_lock_buckets - 1) AS b
             FROM unnest(p_tenant_id) AS t ORDER BY 1) AS buckets;

  WITH fresh AS (
    INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
      key_id, member_id, recorded_at, source_partition, source_offset)
    SELECT v.tenant_id, v.day, v.folio, v.billing_period_start, v.surface, v.request_id,
           v.key_id, v.member_id, v.recorded_at, v.source_partition, v.source_offset
      FROM unnest(p_tenant_id, p_day, p_folio, p_period_start, p_surface, p_request_id,
                  p_key_id, p_member_id, p_recorded_at, p_partition, p_offset)
           WITH ORDINALITY AS v(tenant_id, day, folio, billing_period_start, surface, request_id,
                                key_id, member_id, recorded_at, source_partition, source_offset, ord)
     WHERE v.day >= horizon
       AND NOT EXISTS (SELECT 1 FROM lead_view_voids x
                        WHERE x.tenant_id = v.tenant_id AND x.day = v.day AND x.folio = v.folio
                          AND x.request_id = v.request_id)
     ORDER BY v.ord
    ON CONFLICT DO NOTHING
    RETURNING tenant_id, billing_period_start
  ),
  counted AS (
    INSERT INTO period_usage (tenant_id, period_start, lead_views)
    SELECT tenant_id, billing_period_start, count(*) FROM fresh
     GROUP BY tenant_id, billing_period_start
    ON CONFLICT (tenant_id, period_start)
    DO UPDATE SET lead_views = period_usage.lead_views + EXCLUDED.lead_views
  )
  SELECT count(*) INTO inserted FROM fresh;

  IF inserted < cardinality(p_tenant_id) THEN
    INSERT INTO lead_view_runners_up (tenant_id, day, folio, billing_period_start, surface,
      request_id, key_id, member_id, recorded_at, source_partition, source_offset)
    SELECT v.tenant_id, v.day, v.folio, v.billing_period_start, v.surface, v.request_id,
           v.key_id, v.member_id, v.recorded_at, v.source_partition, v.source_offset
      FROM unnest(p_tenant_id, p_day, p_folio, p_period_start, p_surface, p_request_id,
                  p_key_id, p_member_id, p_recorded_at, p_partition, p_offset)
           AS v(tenant_id, day, folio, billing_period_start, surface, request_id,
                key_id, member_id, recorded_at, source_partition, source_offset)
     CROSS JOIN LATERAL (
       SELECT l.request_id FROM lead_views l
        WHERE l.tenant_id = v.tenant_id AND l.day = v.day AND l.folio = v.folio
        LIMIT 1) AS charged
     WHERE v.day >= horizon
       AND charged.request_id <> v.request_id
       AND NOT EXISTS (SELECT 1 FROM lead_view_voids x
                        WHERE x.tenant_id = v.tenant_id AND x.day = v.day AND x.folio = v.folio
                          AND x.request_id = v.request_id)
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN inserted;
END
$$;
