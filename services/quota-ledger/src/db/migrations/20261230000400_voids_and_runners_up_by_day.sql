-- Voids and runners-up are kept only while a void can still arrive (decision 0393): retention
-- deletes the days past that window in small batches, found through these. Both tables are small
-- (they grow with given-up and concurrent reads, not with traffic), so building them takes a
-- moment.
SET LOCAL lock_timeout = '5s';
CREATE INDEX lead_view_voids_by_day ON lead_view_voids (day);
CREATE INDEX lead_view_runners_up_by_day ON lead_view_runners_up (day);
