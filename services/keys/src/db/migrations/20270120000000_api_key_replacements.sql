-- A two-step rotation: the key issued to replace another names it, until the old one is revoked.
ALTER TABLE api_keys ADD COLUMN replaces_key_id text REFERENCES api_keys (id);
CREATE INDEX api_keys_replacing ON api_keys (replaces_key_id) WHERE replaces_key_id IS NOT NULL;
