-- Nothing a receiver sends back is kept any more (decision 0331): an excerpt of the answer, or a
-- socket's own error text, let a tenant read what answered at an address of its choosing. The
-- excerpts already stored are cleared; the column stays, unwritten and unread, until no running
-- release writes it, and a later migration drops it. Error texts written before carried the
-- socket's or the resolver's words (addresses, ports, certificate names, what a name resolved
-- to): those become the coarse reasons recorded from now on.
UPDATE attempts SET response_excerpt = NULL WHERE response_excerpt IS NOT NULL;

UPDATE attempts
   SET error = CASE failure WHEN 'network' THEN 'network error'
                            ELSE 'host resolves to an address that is not public' END
 WHERE (failure = 'network' OR (failure = 'blocked_address' AND error LIKE '%resolves to%'))
   AND error IS NOT NULL;

UPDATE deliveries
   SET last_error = CASE last_failure WHEN 'network' THEN 'network error'
                                      ELSE 'host resolves to an address that is not public' END
 WHERE (last_failure = 'network'
        OR (last_failure = 'blocked_address' AND last_error LIKE '%resolves to%'))
   AND last_error IS NOT NULL;
