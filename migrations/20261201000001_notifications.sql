-- Webhook endpoints, the notification outbox and its deliveries.
--
-- A notification is written in the transaction of the run change that caused it,
-- together with one delivery row for each endpoint of the organization at that
-- moment; the delivery loop then posts each delivery until it succeeds or gives up.

CREATE TABLE webhooks (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    url TEXT NOT NULL,
    -- The signing key, kept as given: the server needs it to sign every delivery.
    secret TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);

CREATE TABLE notifications (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    event TEXT NOT NULL,
    -- The JSON body posted to every endpoint, byte for byte.
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX notifications_by_run ON notifications (org_id, run_id, created_at);

CREATE TABLE deliveries (
    org_id TEXT NOT NULL,
    notification_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    -- pending, delivered or failed (given up after the last attempt).
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    -- When a pending delivery may next be attempted; while an attempt is under way,
    -- when another loop may take it over.
    next_at BIGINT NOT NULL,
    last_status_code BIGINT,
    last_error TEXT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, notification_id, webhook_id)
);
-- The delivery loop reads pending rows across organizations, like `timers_due`.
CREATE INDEX deliveries_pending ON deliveries (next_at) WHERE status = 'pending';
