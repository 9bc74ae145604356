-- Organizations sign up through their own OIDC provider; people sign in through it.

-- The slug names the organization in sign-in addresses; organizations made before
-- sign-up existed keep their id as their slug.
ALTER TABLE organizations ADD COLUMN slug TEXT;
UPDATE organizations SET slug = id;
CREATE UNIQUE INDEX organizations_by_slug ON organizations (slug);
-- 1: people whose email domain is an allowed domain become members at first sign-in.
ALTER TABLE organizations ADD COLUMN auto_provision BIGINT NOT NULL DEFAULT 1;
-- The ID token claim that lists a person's groups (NULL: groups are not synced).
ALTER TABLE organizations ADD COLUMN groups_claim TEXT;
-- Bumped by every change, so two admins cannot overwrite each other unseen.
ALTER TABLE organizations ADD COLUMN revision BIGINT NOT NULL DEFAULT 1;

-- A person's role in the organization: admin, operator or member (NULL for agents).
-- The old `operator` kind becomes a person with the operator role.
ALTER TABLE identities ADD COLUMN role TEXT;
UPDATE identities SET role = 'operator', kind = 'person' WHERE kind = 'operator';
UPDATE identities SET role = 'member' WHERE kind = 'person' AND role IS NULL;
ALTER TABLE identities ADD COLUMN deactivated_at BIGINT;

-- A group's display name; its id, which role bindings name, never changes.
ALTER TABLE org_groups ADD COLUMN name TEXT;
-- The values of the provider's groups claim that mean this group (a JSON array; Entra
-- sends object ids): NULL means the group's id.
ALTER TABLE org_groups ADD COLUMN claim_values TEXT;

-- An organization's identity provider. The client secret is sealed with the server's
-- secret key (AES-256-GCM); NULL for a public client, which uses PKCE alone.
CREATE TABLE identity_providers (
    org_id TEXT PRIMARY KEY,
    issuer TEXT NOT NULL,
    client_id TEXT NOT NULL,
    client_secret TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Who a person is at their provider: (issuer, sub), never the email alone.
CREATE TABLE person_logins (
    org_id TEXT NOT NULL,
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    identity_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, issuer, subject)
);
CREATE INDEX person_logins_by_identity ON person_logins (org_id, identity_id);

-- Email domains of an organization. Any listed domain lets its people be provisioned
-- at sign-in; only a verified one routes sign-in by email, and a verified domain
-- belongs to one organization at a time.
CREATE TABLE org_domains (
    org_id TEXT NOT NULL,
    domain TEXT NOT NULL,
    token TEXT NOT NULL,
    verified_at BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, domain)
);
CREATE UNIQUE INDEX org_domains_verified ON org_domains (domain) WHERE verified_at IS NOT NULL;

-- Browser sessions, keyed by the SHA-256 of the session id, so the table alone
-- opens no session. org_id and identity_id are set once someone signed in.
CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    org_id TEXT,
    identity_id TEXT,
    data TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_by_identity ON sessions (org_id, identity_id);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

-- Tokens get a public id (to list and revoke them), an audience (`mcp` for the tool
-- surface, `api` for the REST surface), a scope for API tokens (`admin` or `read`), a
-- name, an expiry and who made them.
ALTER TABLE access_tokens ADD COLUMN id TEXT;
UPDATE access_tokens SET id = 'tok_' || substr(token_hash, 1, 20);
ALTER TABLE access_tokens ADD COLUMN audience TEXT NOT NULL DEFAULT 'mcp';
ALTER TABLE access_tokens ADD COLUMN scope TEXT;
ALTER TABLE access_tokens ADD COLUMN name TEXT;
ALTER TABLE access_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE access_tokens ADD COLUMN created_by TEXT;
CREATE UNIQUE INDEX access_tokens_by_id ON access_tokens (org_id, id);

-- The audit log: append-only. Nothing in the server updates or deletes a row.
-- id sorts by time (milliseconds, zero-padded, then random), so it is the cursor.
CREATE TABLE audit_log (
    org_id TEXT NOT NULL,
    id TEXT NOT NULL,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT,
    detail TEXT NOT NULL,
    address TEXT,
    PRIMARY KEY (org_id, id)
);
CREATE INDEX audit_log_by_kind ON audit_log (org_id, kind, id);
