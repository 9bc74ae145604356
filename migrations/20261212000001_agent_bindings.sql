-- Which agents may claim a process's agent steps, kept with its draft and each version
-- as a JSON object: a step id, or "*" for every agent step without a binding of its
-- own, to {"agents": [...], "groups": [...]}. Empty: any agent of the organization.
ALTER TABLE drafts ADD COLUMN agents TEXT NOT NULL DEFAULT '{}';
ALTER TABLE process_versions ADD COLUMN agents TEXT NOT NULL DEFAULT '{}';

-- The same bindings of the published versions, one row per agent or group admitted,
-- for `get_work` to filter by. `binding` is "<version>/<step id or *>"; `kind` is
-- 'agent' or 'group'. Written with the version, never changed.
CREATE TABLE agent_bindings (
    org_id TEXT NOT NULL,
    process TEXT NOT NULL,
    binding TEXT NOT NULL,
    kind TEXT NOT NULL,
    who TEXT NOT NULL,
    PRIMARY KEY (org_id, process, binding, kind, who)
);

-- An agent step's binding, as `agent_bindings.binding` names it; NULL: any agent.
ALTER TABLE work_index ADD COLUMN bound_to TEXT;
