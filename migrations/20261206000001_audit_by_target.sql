-- The audit log read by what an entry is about (a run's page shows who decided each
-- of its work items; admins filter by target).
CREATE INDEX audit_log_by_target ON audit_log (org_id, target, id);
