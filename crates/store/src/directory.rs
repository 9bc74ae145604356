//! Who may sign in and how: organizations' settings, identity providers, people's
//! logins, email domains, browser sessions, tokens and the audit log.

use crate::clients::{ClientSecret, Credential, OAuthClient};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use std::future::Future;

use crate::model::{Identity, Role};
use crate::{Dialect, Error, Result, admin};

/// An organization as its admins see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Organization {
    /// The id every row carries.
    pub id: String,
    /// The name in sign-in addresses, unique.
    pub slug: String,
    /// A display name.
    pub name: String,
    /// Whether people of an allowed domain become members at their first sign-in.
    pub auto_provision: bool,
    /// The ID token claim listing a person's groups, if groups are synced.
    pub groups_claim: Option<String>,
    /// Bumped by every change.
    pub revision: i64,
    /// When it was created.
    pub created_at: i64,
}

/// An organization's OpenID provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    /// The organization.
    pub org: String,
    /// The issuer URL, exactly as discovery confirmed it.
    pub issuer: String,
    /// The client id registered at the provider.
    pub client_id: String,
    /// The client secret, sealed with the server's key; `None` for a public client.
    pub sealed_secret: Option<String>,
}

/// A group with its members.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Group {
    /// The id role bindings name.
    pub id: String,
    /// A display name, if given.
    pub name: Option<String>,
    /// The values of the provider's groups claim that mean this group; empty: its id.
    pub claim_values: Vec<String>,
    /// Ids of its members, sorted.
    pub members: Vec<String>,
}

/// The bindings of a draft or a published version, as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bindings {
    /// The process.
    pub process: String,
    /// The version number; `None` for the draft.
    pub number: Option<i64>,
    /// Role → group.
    pub roles: String,
    /// Step (or `*`) → the agents and groups that may claim it.
    pub agents: String,
}

/// An email domain of an organization.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Domain {
    /// The domain, lowercase.
    pub domain: String,
    /// The value the DNS TXT record must hold to prove ownership.
    pub token: String,
    /// When ownership was proven.
    pub verified_at: Option<i64>,
}

/// A browser session as stored: keyed by the SHA-256 of its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// SHA-256 hex of the session id.
    pub id_hash: String,
    /// Who signed in with it, once someone did: (organization, identity).
    pub signed_in: Option<(String, String)>,
    /// The session's data, JSON.
    pub data: String,
    /// When it expires.
    pub expires_at: i64,
}

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Audience {
    /// The MCP tool surface.
    Mcp,
    /// The REST admin surface.
    Api,
}

impl Audience {
    /// The name stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Mcp => "mcp",
            Audience::Api => "api",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "mcp" => Some(Audience::Mcp),
            "api" => Some(Audience::Api),
            _ => None,
        }
    }
}

/// A bearer token's record; the token itself is kept only as its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenRow {
    /// The public id, to list and revoke it.
    pub id: String,
    /// The organization.
    pub org: String,
    /// Whose it is.
    pub identity: String,
    /// SHA-256 hex of the token.
    pub token_hash: String,
    /// What it is for.
    pub audience: Audience,
    /// For API tokens: `admin` or `read`.
    pub scope: Option<String>,
    /// A name its maker gave it.
    pub name: Option<String>,
    /// When it stops working, if ever.
    pub expires_at: Option<i64>,
    /// Who made it (an identity id).
    pub created_by: Option<String>,
    /// When it was made.
    pub created_at: i64,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// Sorts by time; the cursor of the log.
    pub id: String,
    /// When, in milliseconds.
    pub at: i64,
    /// Who: an identity id, or what is known of someone who failed to sign in.
    pub actor: String,
    /// What happened, as a dotted name (`member.invited`, `signin.failed`).
    pub kind: String,
    /// What it happened to, if anything in particular.
    pub target: Option<String>,
    /// The particulars, a JSON object.
    pub detail: String,
    /// The caller's network address.
    pub address: Option<String>,
}

/// Which audit entries to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Entries after this id (the cursor).
    pub after: Option<String>,
    /// At or after this time (milliseconds).
    pub since: Option<i64>,
    /// Before this time (milliseconds).
    pub until: Option<i64>,
    /// Only this actor.
    pub actor: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only entries about this target (a run id, a member id, …).
    pub target: Option<String>,
    /// At most this many.
    pub limit: u32,
}

pub(crate) async fn organization_ids(
    connection: &mut AnyConnection,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<String>> {
    Ok(
        sqlx::query_scalar("SELECT id FROM organizations WHERE id > $1 ORDER BY id LIMIT $2")
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(connection)
            .await?,
    )
}

pub(crate) async fn organization(
    connection: &mut AnyConnection,
    column: OrgKey,
    value: &str,
) -> Result<Option<Organization>> {
    let sql = match column {
        OrgKey::Id => {
            "SELECT id, slug, name, auto_provision, groups_claim, revision, created_at FROM organizations WHERE id = $1"
        }
        OrgKey::Slug => {
            "SELECT id, slug, name, auto_provision, groups_claim, revision, created_at FROM organizations \
             WHERE slug = $1"
        }
    };
    let row = sqlx::query(sql).bind(value).fetch_optional(connection).await?;
    row.map(|row| {
        Ok(Organization {
            id: row.try_get("id")?,
            slug: row.try_get("slug")?,
            name: row.try_get("name")?,
            auto_provision: row.try_get::<i64, _>("auto_provision")? != 0,
            groups_claim: row.try_get("groups_claim")?,
            revision: row.try_get("revision")?,
            created_at: row.try_get("created_at")?,
        })
    })
    .transpose()
}

/// How an organization is looked up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OrgKey {
    Id,
    Slug,
}

pub(crate) async fn lock_org(connection: &mut AnyConnection, dialect: Dialect, org: &str) -> Result<Option<i64>> {
    let sql = match dialect {
        Dialect::Postgres => "SELECT revision FROM organizations WHERE id = $1 FOR UPDATE",
        Dialect::Sqlite => "SELECT revision FROM organizations WHERE id = $1",
    };
    let row = sqlx::query(sql).bind(org).fetch_optional(connection).await?;
    row.map(|row| Ok(row.try_get("revision")?)).transpose()
}

pub(crate) async fn update_org(connection: &mut AnyConnection, organization: &Organization) -> Result<()> {
    sqlx::query(
        "UPDATE organizations SET name = $2, auto_provision = $3, groups_claim = $4, revision = revision + 1 \
         WHERE id = $1",
    )
    .bind(&organization.id)
    .bind(&organization.name)
    .bind(i64::from(organization.auto_provision))
    .bind(organization.groups_claim.as_deref())
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn provider(connection: &mut AnyConnection, org: &str) -> Result<Option<Provider>> {
    let row = sqlx::query("SELECT org_id, issuer, client_id, client_secret FROM identity_providers WHERE org_id = $1")
        .bind(org)
        .fetch_optional(connection)
        .await?;
    row.map(|row| {
        Ok(Provider {
            org: row.try_get("org_id")?,
            issuer: row.try_get("issuer")?,
            client_id: row.try_get("client_id")?,
            sealed_secret: row.try_get("client_secret")?,
        })
    })
    .transpose()
}

pub(crate) async fn put_provider(connection: &mut AnyConnection, provider: &Provider, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO identity_providers (org_id, issuer, client_id, client_secret, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (org_id) DO UPDATE SET issuer = excluded.issuer, \
         client_id = excluded.client_id, client_secret = excluded.client_secret, updated_at = excluded.updated_at",
    )
    .bind(&provider.org)
    .bind(&provider.issuer)
    .bind(&provider.client_id)
    .bind(provider.sealed_secret.as_deref())
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn login(
    connection: &mut AnyConnection,
    org: &str,
    issuer: &str,
    subject: &str,
) -> Result<Option<Identity>> {
    let row = sqlx::query("SELECT identity_id FROM person_logins WHERE org_id = $1 AND issuer = $2 AND subject = $3")
        .bind(org)
        .bind(issuer)
        .bind(subject)
        .fetch_optional(&mut *connection)
        .await?;
    match row {
        Some(row) => admin::identity(connection, org, &row.try_get::<String, _>("identity_id")?).await,
        None => Ok(None),
    }
}

pub(crate) async fn add_login(
    connection: &mut AnyConnection,
    org: &str,
    issuer: &str,
    subject: &str,
    identity: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO person_logins (org_id, issuer, subject, identity_id, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(org)
    .bind(issuer)
    .bind(subject)
    .bind(identity)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

/// Whether an identity already has a login at `issuer` (a person invited by email
/// gets linked at their first sign-in there, and only then).
pub(crate) async fn has_login(connection: &mut AnyConnection, org: &str, identity: &str, issuer: &str) -> Result<bool> {
    let row = sqlx::query(
        "SELECT 1 AS one FROM person_logins WHERE org_id = $1 AND identity_id = $2 AND issuer = $3 LIMIT 1",
    )
    .bind(org)
    .bind(identity)
    .bind(issuer)
    .fetch_optional(connection)
    .await?;
    Ok(row.is_some())
}

pub(crate) async fn identity_by_person(
    connection: &mut AnyConnection,
    org: &str,
    person: &str,
) -> Result<Option<Identity>> {
    let row = sqlx::query("SELECT id FROM identities WHERE org_id = $1 AND person = $2")
        .bind(org)
        .bind(person)
        .fetch_optional(&mut *connection)
        .await?;
    match row {
        Some(row) => admin::identity(connection, org, &row.try_get::<String, _>("id")?).await,
        None => Ok(None),
    }
}

pub(crate) async fn set_person(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    role: Option<Role>,
    deactivated_at: Option<i64>,
) -> Result<()> {
    sqlx::query("UPDATE identities SET role = $3, deactivated_at = $4 WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .bind(role.map(Role::as_str))
        .bind(deactivated_at)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn active_admins(connection: &mut AnyConnection, org: &str) -> Result<i64> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n FROM identities WHERE org_id = $1 AND role = 'admin' AND deactivated_at IS NULL",
    )
    .bind(org)
    .fetch_one(connection)
    .await?;
    Ok(row.try_get("n")?)
}

pub(crate) async fn groups(connection: &mut AnyConnection, org: &str) -> Result<Vec<String>> {
    let rows = sqlx::query("SELECT id FROM org_groups WHERE org_id = $1 ORDER BY id")
        .bind(org)
        .fetch_all(connection)
        .await?;
    rows.iter().map(|row| Ok(row.try_get("id")?)).collect()
}

pub(crate) async fn group_list(connection: &mut AnyConnection, org: &str) -> Result<Vec<Group>> {
    let rows = sqlx::query(
        "SELECT g.id AS id, g.name AS name, g.claim_values AS claim_values, m.identity_id AS member \
         FROM org_groups g \
         LEFT JOIN memberships m ON m.org_id = g.org_id AND m.group_id = g.id WHERE g.org_id = $1 \
         ORDER BY g.id, m.identity_id",
    )
    .bind(org)
    .fetch_all(connection)
    .await?;
    let mut groups: Vec<Group> = Vec::new();
    for row in &rows {
        let id: String = row.try_get("id")?;
        let member: Option<String> = row.try_get("member")?;
        if groups.last().is_none_or(|last| last.id != id) {
            let values: Option<String> = row.try_get("claim_values")?;
            let claim_values = match values {
                Some(text) => {
                    serde_json::from_str(&text).map_err(|_| Error::Corrupt(format!("claim values {text:?}")))?
                }
                None => Vec::new(),
            };
            groups.push(Group {
                id,
                name: row.try_get("name")?,
                claim_values,
                members: Vec::new(),
            });
        }
        if let (Some(member), Some(group)) = (member, groups.last_mut()) {
            group.members.push(member);
        }
    }
    Ok(groups)
}

pub(crate) async fn rename_group(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    name: Option<&str>,
) -> Result<bool> {
    let done = sqlx::query("UPDATE org_groups SET name = $3 WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .bind(name)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn set_claim_values(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    values: &[String],
) -> Result<bool> {
    let text = (!values.is_empty()).then(|| serde_json::Value::from(values.to_vec()).to_string());
    let done = sqlx::query("UPDATE org_groups SET claim_values = $3 WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .bind(text)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn delete_group(connection: &mut AnyConnection, org: &str, id: &str) -> Result<bool> {
    sqlx::query("DELETE FROM memberships WHERE org_id = $1 AND group_id = $2")
        .bind(org)
        .bind(id)
        .execute(&mut *connection)
        .await?;
    let done = sqlx::query("DELETE FROM org_groups WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Every binding of the organization's drafts and published versions: process,
/// version number (`None` for the draft), role bindings and agent bindings (JSON).
pub(crate) async fn bindings(connection: &mut AnyConnection, org: &str) -> Result<Vec<Bindings>> {
    let rows = sqlx::query(
        "SELECT process, CAST(NULL AS BIGINT) AS number, roles, agents FROM drafts WHERE org_id = $1 \
         UNION ALL SELECT process, number, roles, agents FROM process_versions WHERE org_id = $1",
    )
    .bind(org)
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Bindings {
                process: row.try_get("process")?,
                number: row.try_get("number")?,
                roles: row.try_get("roles")?,
                agents: row.try_get("agents")?,
            })
        })
        .collect()
}

pub(crate) async fn remove_member(
    connection: &mut AnyConnection,
    org: &str,
    group: &str,
    identity: &str,
) -> Result<()> {
    sqlx::query("DELETE FROM memberships WHERE org_id = $1 AND group_id = $2 AND identity_id = $3")
        .bind(org)
        .bind(group)
        .bind(identity)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn domains(connection: &mut AnyConnection, org: &str) -> Result<Vec<Domain>> {
    let rows = sqlx::query("SELECT domain, token, verified_at FROM org_domains WHERE org_id = $1 ORDER BY domain")
        .bind(org)
        .fetch_all(connection)
        .await?;
    rows.iter()
        .map(|row| {
            Ok(Domain {
                domain: row.try_get("domain")?,
                token: row.try_get("token")?,
                verified_at: row.try_get("verified_at")?,
            })
        })
        .collect()
}

pub(crate) async fn org_of_verified_domain(connection: &mut AnyConnection, domain: &str) -> Result<Option<String>> {
    let row = sqlx::query("SELECT org_id FROM org_domains WHERE domain = $1 AND verified_at IS NOT NULL")
        .bind(domain)
        .fetch_optional(connection)
        .await?;
    row.map(|row| Ok(row.try_get("org_id")?)).transpose()
}

pub(crate) async fn put_domain(connection: &mut AnyConnection, org: &str, domain: &Domain, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO org_domains (org_id, domain, token, verified_at, created_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (org_id, domain) DO UPDATE SET verified_at = excluded.verified_at",
    )
    .bind(org)
    .bind(&domain.domain)
    .bind(&domain.token)
    .bind(domain.verified_at)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn remove_domain(connection: &mut AnyConnection, org: &str, domain: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM org_domains WHERE org_id = $1 AND domain = $2")
        .bind(org)
        .bind(domain)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn session(connection: &mut AnyConnection, id_hash: &str, now: i64) -> Result<Option<SessionRow>> {
    let row = sqlx::query(
        "SELECT id_hash, org_id, identity_id, data, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2",
    )
    .bind(id_hash)
    .bind(now)
    .fetch_optional(connection)
    .await?;
    row.map(|row| {
        let org: Option<String> = row.try_get("org_id")?;
        let identity: Option<String> = row.try_get("identity_id")?;
        Ok(SessionRow {
            id_hash: row.try_get("id_hash")?,
            signed_in: org.zip(identity),
            data: row.try_get("data")?,
            expires_at: row.try_get("expires_at")?,
        })
    })
    .transpose()
}

/// Writes a session; with `only_new`, refuses (returns false) when the id is taken.
pub(crate) async fn put_session(connection: &mut AnyConnection, session: &SessionRow, only_new: bool) -> Result<bool> {
    let sql = if only_new {
        "INSERT INTO sessions (id_hash, org_id, identity_id, data, expires_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (id_hash) DO NOTHING"
    } else {
        "INSERT INTO sessions (id_hash, org_id, identity_id, data, expires_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (id_hash) DO UPDATE SET org_id = excluded.org_id, identity_id = excluded.identity_id, \
         data = excluded.data, expires_at = excluded.expires_at"
    };
    let (org, identity) = session.signed_in.clone().unzip();
    let done = sqlx::query(sql)
        .bind(&session.id_hash)
        .bind(org)
        .bind(identity)
        .bind(&session.data)
        .bind(session.expires_at)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn delete_session(connection: &mut AnyConnection, id_hash: &str) -> Result<()> {
    sqlx::query("DELETE FROM sessions WHERE id_hash = $1")
        .bind(id_hash)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn delete_sessions_of(connection: &mut AnyConnection, org: &str, identity: &str) -> Result<u64> {
    let done = sqlx::query("DELETE FROM sessions WHERE org_id = $1 AND identity_id = $2")
        .bind(org)
        .bind(identity)
        .execute(connection)
        .await?;
    Ok(done.rows_affected())
}

const TOKEN_COLUMNS: &str = "id, org_id, identity_id, token_hash, audience, scope, name, expires_at, created_by, \
                             created_at, revoked_at";

pub(crate) async fn add_token(connection: &mut AnyConnection, token: &TokenRow) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO access_tokens ({TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(&token.id)
    .bind(&token.org)
    .bind(&token.identity)
    .bind(&token.token_hash)
    .bind(token.audience.as_str())
    .bind(token.scope.as_deref())
    .bind(token.name.as_deref())
    .bind(token.expires_at)
    .bind(token.created_by.as_deref())
    .bind(token.created_at)
    .bind(token.revoked_at)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn token_by_hash(connection: &mut AnyConnection, token_hash: &str) -> Result<Option<TokenRow>> {
    let row = sqlx::query(&format!(
        "SELECT {TOKEN_COLUMNS} FROM access_tokens WHERE token_hash = $1"
    ))
    .bind(token_hash)
    .fetch_optional(connection)
    .await?;
    row.as_ref().map(token_row).transpose()
}

pub(crate) async fn tokens(connection: &mut AnyConnection, org: &str, audience: Audience) -> Result<Vec<TokenRow>> {
    let rows = sqlx::query(&format!(
        "SELECT {TOKEN_COLUMNS} FROM access_tokens WHERE org_id = $1 AND audience = $2 ORDER BY created_at, id"
    ))
    .bind(org)
    .bind(audience.as_str())
    .fetch_all(connection)
    .await?;
    rows.iter().map(token_row).collect()
}

pub(crate) async fn revoke_token(connection: &mut AnyConnection, org: &str, id: &str, now: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE access_tokens SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL")
            .bind(org)
            .bind(id)
            .bind(now)
            .execute(connection)
            .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn set_token_expiry(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    expires_at: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE access_tokens SET expires_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > $3)",
    )
    .bind(org)
    .bind(id)
    .bind(expires_at)
    .execute(connection)
    .await?;
    Ok(done.rows_affected() > 0)
}

fn token_row(row: &AnyRow) -> Result<TokenRow> {
    let audience: String = row.try_get("audience")?;
    Ok(TokenRow {
        id: row.try_get("id")?,
        org: row.try_get("org_id")?,
        identity: row.try_get("identity_id")?,
        token_hash: row.try_get("token_hash")?,
        audience: Audience::parse(&audience).ok_or_else(|| Error::Corrupt(format!("token audience {audience:?}")))?,
        scope: row.try_get("scope")?,
        name: row.try_get("name")?,
        expires_at: row.try_get("expires_at")?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

pub(crate) const AUDIT_INSERT: &str = "INSERT INTO audit_log (org_id, id, at, actor, kind, target, detail, address)";

pub(crate) async fn append_audit(connection: &mut AnyConnection, org: &str, entry: &AuditRow) -> Result<()> {
    sqlx::query(&format!("{AUDIT_INSERT} VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"))
        .bind(org)
        .bind(&entry.id)
        .bind(entry.at)
        .bind(&entry.actor)
        .bind(&entry.kind)
        .bind(entry.target.as_deref())
        .bind(&entry.detail)
        .bind(entry.address.as_deref())
        .execute(connection)
        .await?;
    Ok(())
}

/// Entries matching `filter` in order, and whether more follow.
pub(crate) async fn audit(
    connection: &mut AnyConnection,
    org: &str,
    filter: &AuditFilter,
) -> Result<(Vec<AuditRow>, bool)> {
    let limit = filter.limit.max(1);
    // Every condition is always present and switched off by a NULL, so one statement
    // serves every filter.
    let rows = sqlx::query(
        "SELECT id, at, actor, kind, target, detail, address FROM audit_log WHERE org_id = $1 \
         AND ($2 IS NULL OR id > $2) AND ($3 IS NULL OR at >= $3) AND ($4 IS NULL OR at < $4) \
         AND ($5 IS NULL OR actor = $5) AND ($6 IS NULL OR kind = $6) AND ($7 IS NULL OR target = $7) \
         ORDER BY id LIMIT $8",
    )
    .bind(org)
    .bind(filter.after.as_deref())
    .bind(filter.since)
    .bind(filter.until)
    .bind(filter.actor.as_deref())
    .bind(filter.kind.as_deref())
    .bind(filter.target.as_deref())
    .bind(i64::from(limit) + 1)
    .fetch_all(connection)
    .await?;
    let mut items = rows
        .iter()
        .map(|row| {
            Ok(AuditRow {
                id: row.try_get("id")?,
                at: row.try_get("at")?,
                actor: row.try_get("actor")?,
                kind: row.try_get("kind")?,
                target: row.try_get("target")?,
                detail: row.try_get("detail")?,
                address: row.try_get("address")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let more = items.len() > limit as usize;
    items.truncate(limit as usize);
    Ok((items, more))
}

/// Reads of who may sign in and how. Every method but the lookups by token, session,
/// slug and verified domain filters by organization.
pub trait Directory: Send + Sync + 'static {
    /// An organization by id.
    fn organization(&self, org: &str) -> impl Future<Output = Result<Option<Organization>>> + Send;
    /// An organization by slug.
    fn organization_by_slug(&self, slug: &str) -> impl Future<Output = Result<Option<Organization>>> + Send;
    /// The organization whose verified domains include `domain`.
    fn org_of_verified_domain(&self, domain: &str) -> impl Future<Output = Result<Option<String>>> + Send;
    /// An organization's identity provider.
    fn provider(&self, org: &str) -> impl Future<Output = Result<Option<Provider>>> + Send;
    /// The person who signs in as (`issuer`, `subject`).
    fn login(&self, org: &str, issuer: &str, subject: &str) -> impl Future<Output = Result<Option<Identity>>> + Send;
    /// The identity with this person value.
    fn identity_by_person(&self, org: &str, person: &str) -> impl Future<Output = Result<Option<Identity>>> + Send;
    /// The organization's group ids.
    fn groups(&self, org: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// The organization's email domains.
    fn domains(&self, org: &str) -> impl Future<Output = Result<Vec<Domain>>> + Send;
    /// The organization's groups with their members, by id.
    fn group_list(&self, org: &str) -> impl Future<Output = Result<Vec<Group>>> + Send;
    /// A live session.
    fn session(&self, id_hash: &str, now: i64) -> impl Future<Output = Result<Option<SessionRow>>> + Send;
    /// A token's record by the token's hash, revoked or not.
    fn token_by_hash(&self, token_hash: &str) -> impl Future<Output = Result<Option<TokenRow>>> + Send;
    /// An organization's tokens of one audience, oldest first.
    fn tokens(&self, org: &str, audience: Audience) -> impl Future<Output = Result<Vec<TokenRow>>> + Send;
    /// Audit entries in order, and whether more follow.
    fn audit(&self, org: &str, filter: &AuditFilter) -> impl Future<Output = Result<(Vec<AuditRow>, bool)>> + Send;
    /// What a live MCP access token grants: its active identity and its OAuth scopes.
    fn credential(&self, token_hash: &str, now: i64) -> impl Future<Output = Result<Option<Credential>>> + Send;
    /// A live OAuth client by its `client_id`, with its live secrets.
    fn oauth_client(&self, id: &str) -> impl Future<Output = Result<Option<(OAuthClient, Vec<ClientSecret>)>>> + Send;
    /// The OAuth clients of one identity, revoked ones included, with their live secrets.
    fn oauth_clients(
        &self,
        org: &str,
        identity: &str,
    ) -> impl Future<Output = Result<Vec<(OAuthClient, Vec<ClientSecret>)>>> + Send;
}

/// Writes of who may sign in and how, inside a store transaction.
pub trait DirectoryTx: Send {
    /// Records an OAuth client.
    fn add_oauth_client(&mut self, client: &OAuthClient) -> impl Future<Output = Result<()>> + Send;
    /// Records a client secret.
    fn add_client_secret(&mut self, secret: &ClientSecret) -> impl Future<Output = Result<()>> + Send;
    /// Revokes one secret of a client; says whether it was live.
    fn revoke_client_secret(
        &mut self,
        client_id: &str,
        id: &str,
        now: i64,
    ) -> impl Future<Output = Result<bool>> + Send;
    /// Revokes a client and every access token it was given; says whether it was live.
    fn revoke_oauth_client(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Locks the organization's row until commit, so changes to its people are
    /// serial; its revision, or `None` when there is no such organization.
    fn lock_org(&mut self, org: &str) -> impl Future<Output = Result<Option<i64>>> + Send;
    /// An organization, read inside the transaction.
    fn organization(&mut self, org: &str) -> impl Future<Output = Result<Option<Organization>>> + Send;
    /// Writes an organization's settings and bumps its revision.
    fn update_org(&mut self, organization: &Organization) -> impl Future<Output = Result<()>> + Send;
    /// Sets an organization's identity provider.
    fn put_provider(&mut self, provider: &Provider, now: i64) -> impl Future<Output = Result<()>> + Send;
    /// Links (`issuer`, `subject`) to a person.
    fn add_login(
        &mut self,
        org: &str,
        issuer: &str,
        subject: &str,
        identity: &str,
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Whether a person has a login at `issuer` already.
    fn has_login(&mut self, org: &str, identity: &str, issuer: &str) -> impl Future<Output = Result<bool>> + Send;
    /// One identity with its groups, read inside the transaction.
    fn identity(&mut self, org: &str, id: &str) -> impl Future<Output = Result<Option<Identity>>> + Send;
    /// The identity with this person value, read inside the transaction.
    fn identity_by_person(&mut self, org: &str, person: &str) -> impl Future<Output = Result<Option<Identity>>> + Send;
    /// Sets a person's role and deactivation.
    fn set_person(
        &mut self,
        org: &str,
        id: &str,
        role: Option<Role>,
        deactivated_at: Option<i64>,
    ) -> impl Future<Output = Result<()>> + Send;
    /// How many active admins the organization has.
    fn active_admins(&mut self, org: &str) -> impl Future<Output = Result<i64>> + Send;
    /// The organization's group ids.
    fn groups(&mut self, org: &str) -> impl Future<Output = Result<Vec<String>>> + Send;
    /// Sets a group's display name; whether the group exists.
    fn rename_group(&mut self, org: &str, id: &str, name: Option<&str>) -> impl Future<Output = Result<bool>> + Send;
    /// Sets the groups-claim values that mean a group (empty: its id); whether it exists.
    fn set_claim_values(&mut self, org: &str, id: &str, values: &[String])
    -> impl Future<Output = Result<bool>> + Send;
    /// The organization's groups with their members, read inside the transaction.
    fn group_list(&mut self, org: &str) -> impl Future<Output = Result<Vec<Group>>> + Send;
    /// Removes a group and its memberships; whether it existed.
    fn delete_group(&mut self, org: &str, id: &str) -> impl Future<Output = Result<bool>> + Send;
    /// Every binding, of roles and of agent steps, of drafts and published versions.
    fn bindings(&mut self, org: &str) -> impl Future<Output = Result<Vec<Bindings>>> + Send;
    /// Takes an identity out of a group.
    fn remove_member(&mut self, org: &str, group: &str, identity: &str) -> impl Future<Output = Result<()>> + Send;
    /// Adds or updates an email domain.
    fn put_domain(&mut self, org: &str, domain: &Domain, now: i64) -> impl Future<Output = Result<()>> + Send;
    /// Removes an email domain; whether it was there.
    fn remove_domain(&mut self, org: &str, domain: &str) -> impl Future<Output = Result<bool>> + Send;
    /// Writes a session; with `only_new`, returns false when the id is taken.
    fn put_session(&mut self, session: &SessionRow, only_new: bool) -> impl Future<Output = Result<bool>> + Send;
    /// Removes a session.
    fn delete_session(&mut self, id_hash: &str) -> impl Future<Output = Result<()>> + Send;
    /// Removes every session of an identity; how many.
    fn delete_sessions_of(&mut self, org: &str, identity: &str) -> impl Future<Output = Result<u64>> + Send;
    /// Stores a token's record.
    fn add_token(&mut self, token: &TokenRow) -> impl Future<Output = Result<()>> + Send;
    /// Brings a live token's expiry forward to `expires_at`; whether it did.
    fn set_token_expiry(&mut self, org: &str, id: &str, expires_at: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Revokes one token; whether it was live.
    fn revoke_token(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Appends to the audit log.
    fn append_audit(&mut self, org: &str, entry: &AuditRow) -> impl Future<Output = Result<()>> + Send;
}
