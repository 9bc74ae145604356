-- People reach /mcp from MCP clients with their own sign-in (authorization code +
-- PKCE). The clients they use are either registered by the client itself (RFC 7591;
-- org_id NULL, removed when never used) or made by an organization's admin (org_id
-- set; only these may be marked as operated by people, the one kind whose tokens may
-- decide). Clients named by a metadata document URL are fetched, not stored here.
CREATE TABLE oauth_apps (
    id TEXT PRIMARY KEY,
    org_id TEXT,
    name TEXT,
    redirect_uris TEXT NOT NULL,
    application_type TEXT NOT NULL,
    auth_method TEXT NOT NULL,
    secret_hash TEXT,
    people_operated BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX oauth_apps_by_org ON oauth_apps (org_id, created_at);
CREATE INDEX oauth_apps_by_age ON oauth_apps (created_at);

-- A person's consent that one client acts for them, within scopes, for one
-- resource: the family of its authorization code, refresh tokens and access tokens
-- (access_tokens.created_by holds the grant's id). Revoking the grant ends them all.
CREATE TABLE oauth_grants (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    resource TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_grants_by_client ON oauth_grants (client_id);
CREATE INDEX oauth_grants_by_identity ON oauth_grants (org_id, identity_id);

-- Authorization codes, hashed; used once.
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);

-- Refresh tokens, hashed. Each is used once: a refresh makes the next one.
CREATE TABLE oauth_refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX oauth_refresh_tokens_by_grant ON oauth_refresh_tokens (grant_id);

-- The `jti` of every JWT client assertion accepted (RFC 7523), until it expires,
-- so no assertion is accepted twice on any API process.
CREATE TABLE oauth_assertions (
    client_id TEXT NOT NULL,
    jti_hash TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (client_id, jti_hash)
);

-- An agent client that authenticates with private_key_jwt holds its public keys
-- (a JWK Set, JSON) instead of secrets.
ALTER TABLE oauth_clients ADD COLUMN jwks TEXT;

CREATE INDEX access_tokens_by_creator ON access_tokens (org_id, created_by);
