-- Organizations' records are purged one organization at a time (each purge names one
-- organization, so a database sharded by organization routes it to one shard): their
-- age indexes lead with org_id. The directory's credentials are still purged whole.
DROP INDEX idempotency_by_age;
DROP INDEX deliveries_settled;
DROP INDEX notifications_by_age;
CREATE INDEX idempotency_by_age ON idempotency (org_id, created_at);
CREATE INDEX deliveries_settled ON deliveries (org_id, updated_at) WHERE status <> 'pending';
CREATE INDEX notifications_by_age ON notifications (org_id, created_at);
