-- Versions an admin keeps open to new runs. A run starts on the latest version of its
-- process, or on an older one listed here, so that a control added in a later version
-- (an agent binding, a role bound to another group, a check) is not walked around by
-- naming the version before it. Runs already started keep their version either way.
CREATE TABLE open_versions (
    org_id TEXT NOT NULL,
    process TEXT NOT NULL,
    number BIGINT NOT NULL,
    kept_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    kept_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, process, number)
);
