-- Retention: each table that is purged by age is read oldest first through an index on
-- that age, so a purge batch never scans the table.
CREATE INDEX idempotency_by_age ON idempotency (created_at);
CREATE INDEX deliveries_settled ON deliveries (updated_at) WHERE status <> 'pending';
CREATE INDEX notifications_by_age ON notifications (created_at);
CREATE INDEX access_tokens_by_expiry ON access_tokens (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX access_tokens_revoked ON access_tokens (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX oauth_codes_by_expiry ON oauth_codes (expires_at);
CREATE INDEX oauth_refresh_tokens_by_expiry ON oauth_refresh_tokens (expires_at);
CREATE INDEX oauth_assertions_by_expiry ON oauth_assertions (expires_at);
