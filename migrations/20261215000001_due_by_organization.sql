-- The delivery and message loops share each pass between organizations: they find
-- which organizations have work due (across organizations, through `deliveries_pending`
-- and `messages_pending`), then take each one's oldest due rows. These indexes serve
-- that take, so an organization with a long backlog costs another's take nothing.
CREATE INDEX deliveries_due_by_organization ON deliveries (org_id, next_at) WHERE status = 'pending';
CREATE INDEX messages_due_by_organization ON messages (org_id, next_at) WHERE status = 'pending';
