-- Policies an organization may turn on beyond the protocol (segregation of duties), as
-- a JSON object such as {"initiatorDoesNotDecide": true, "fourEyes": true}. No row:
-- every policy off.
CREATE TABLE org_policies (
    org_id TEXT PRIMARY KEY,
    policies TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
