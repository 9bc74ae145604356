-- Messages to people: email and chat, made from the notifications the outbox already
-- holds.
--
-- A write only adds its notification, as before. A loop beside the webhook loop then
-- finds each notification not yet handed to people, works out who should hear of it
-- (a work item's group or person, the operators, the run's initiator) and what each
-- of them chose, and adds one message per person and per chat hook; it marks the
-- notification done in the same transaction. Messages are sent by the same loop,
-- retried like webhook deliveries, and dropped at sending time when they no longer
-- apply (the item was decided, the person left the organization).

ALTER TABLE notifications ADD COLUMN handed_at BIGINT;
UPDATE notifications SET handed_at = created_at;
-- The loop reads what is not yet handed across organizations, like `deliveries_pending`.
CREATE INDEX notifications_unhanded ON notifications (created_at) WHERE handed_at IS NULL;

CREATE TABLE messages (
    org_id TEXT NOT NULL,
    notification_id TEXT NOT NULL,
    -- email (recipient: an identity id) or chat (recipient: a group id).
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    -- waiting, overdue, escalation or ended; overdue messages come back as reminders.
    kind TEXT NOT NULL,
    -- pending, sent, failed (given up) or dropped (no longer applies).
    status TEXT NOT NULL,
    -- 1 when it waits for the recipient's daily digest.
    digest BIGINT NOT NULL,
    attempts BIGINT NOT NULL,
    -- How many times it was sent: an overdue message is sent again as a reminder.
    sent BIGINT NOT NULL,
    next_at BIGINT NOT NULL,
    last_error TEXT,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, notification_id, channel, recipient)
);
CREATE INDEX messages_pending ON messages (next_at) WHERE status = 'pending';
-- The retention sweep removes settled messages one organization at a time.
CREATE INDEX messages_settled ON messages (org_id, updated_at) WHERE status <> 'pending';

-- What each person chose to hear of, and the organization's defaults (identity '').
-- A JSON object such as {"waiting": "immediately", "overdue": "daily", "ended": "off"}.
CREATE TABLE message_choices (
    org_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    choices TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, identity_id)
);

-- A group's chat channel: a Slack-compatible incoming-webhook URL, sealed with the
-- server's key (the URL is the credential).
CREATE TABLE chat_hooks (
    org_id TEXT NOT NULL,
    group_id TEXT NOT NULL,
    url TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, group_id)
);
