-- OAuth clients of the server's own authorization server. An agent client
-- authenticates with client_credentials and gets short-lived access tokens
-- (access_tokens rows with audience 'mcp', their OAuth scopes in `scope`, and the
-- client in `created_by`). Client ids are unique across organizations: the token
-- endpoint learns the organization from the client.
CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_clients_by_identity ON oauth_clients (org_id, identity_id);

-- A client's secrets, hashed (SHA-256). Two may be live at once, so a rotation has no gap.
CREATE TABLE oauth_client_secrets (
    client_id TEXT NOT NULL,
    id TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    PRIMARY KEY (client_id, id)
);
