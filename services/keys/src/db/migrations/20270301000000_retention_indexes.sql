-- Retention removes expired sessions, password links and pending trials oldest first (decision
-- 0394); each batch finds its rows through one of these. These tables hold only live or recently
-- expired rows, so building the indexes is quick.
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
CREATE INDEX password_tokens_expiry ON password_tokens (expires_at);
CREATE INDEX pending_trials_created ON pending_trials (created_at);
