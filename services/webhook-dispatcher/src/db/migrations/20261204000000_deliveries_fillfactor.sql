-- A delivery row is rewritten three times after its insert: the claim's lease, the charge, the
-- attempt's record. The lease and the charge change no indexed column, so with room left on the
-- row's page they are heap-only updates (no entry in any of the table's indexes); a full page
-- instead makes each a new row version in every index. Pages keep half their space for that.
-- Only pages written from now on follow it.
ALTER TABLE deliveries SET (fillfactor = 50);
