-- An agent's get_work filtered by process reads only that process's ready steps, in
-- order, however many other processes' steps the organization has ready.
CREATE INDEX work_agent_by_process ON work_index (org_id, process, since, run_id, step_id) WHERE kind = 'agent';
