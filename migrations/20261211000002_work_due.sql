-- When each open work item or agent step is due, so the operators' queue of overdue
-- work is one ordered read. Rows written before this column stay NULL until their
-- run is next written.
ALTER TABLE work_index ADD COLUMN due_at BIGINT;
CREATE INDEX work_overdue ON work_index (org_id, due_at, run_id, step_id) WHERE due_at IS NOT NULL;
