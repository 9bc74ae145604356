-- One organization's limits beyond the server's defaults, each a JSON object such as
-- {"callsPerSecond": 2000}. `granted` is set by the platform's operators and may raise
-- or lower a default; `chosen` is set by the organization's admins and only ever
-- lowers what is granted.
CREATE TABLE org_limits (
    org_id TEXT PRIMARY KEY,
    granted TEXT,
    chosen TEXT,
    updated_at BIGINT NOT NULL
);
