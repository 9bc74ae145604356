-- Each get_work list reads only its own rows: an agent's list the agent rows, a
-- person's list the rows assigned to a group or a person. Partial indexes keep every
-- write from maintaining the entries the other lists never read.
DROP INDEX work_agent;
DROP INDEX work_by_group;
DROP INDEX work_by_person;
CREATE INDEX work_agent ON work_index (org_id, since, run_id, step_id) WHERE kind = 'agent';
CREATE INDEX work_by_group ON work_index (org_id, assignee_group, since, run_id, step_id)
    WHERE assignee_group IS NOT NULL;
CREATE INDEX work_by_person ON work_index (org_id, assignee_person, since, run_id, step_id)
    WHERE assignee_person IS NOT NULL;
