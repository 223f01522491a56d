-- The version of the server pepper a key's hash was made with (decision 0345), so the pepper can
-- rotate without voiding every key. Every hash made before versions existed was made with the
-- one pepper, which is version 1.
ALTER TABLE api_keys ADD COLUMN pepper_version smallint NOT NULL DEFAULT 1;
