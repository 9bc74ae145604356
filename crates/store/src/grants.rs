//! What people's MCP clients hold: the clients themselves (registered, or made by an
//! admin), grants (a person's consent to one client), authorization codes, refresh
//! tokens, and the JWT client assertions already accepted.

use std::future::Future;

use sqlx::{AnyConnection, Row as _};

use crate::sql::{SqlStore, SqlTx};
use crate::{Error, Result};

/// A client people use: registered by itself (RFC 7591, no organization) or made by
/// an organization's admin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OAuthApp {
    /// The `client_id`.
    pub id: String,
    /// The organization of an admin-made client; `None` for a registered one.
    pub org: Option<String>,
    /// `client_name`.
    pub name: Option<String>,
    /// The redirect URIs, exactly as registered.
    pub redirect_uris: Vec<String>,
    /// `web` or `native`.
    pub application_type: String,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    /// SHA-256 hex of the secret of a confidential client.
    pub secret_hash: Option<String>,
    /// Whether the organization's admin says people, not agents, operate it: only
    /// then may its tokens carry `process:decide`.
    pub people_operated: bool,
    /// When it was made (milliseconds).
    pub created_at: i64,
    /// When it first got a token.
    pub used_at: Option<i64>,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// A person's consent that a client acts for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Its id; every access token of the grant has it as `created_by`.
    pub id: String,
    /// The organization.
    pub org: String,
    /// The person.
    pub identity: String,
    /// The client.
    pub client_id: String,
    /// The scopes granted, space-separated.
    pub scope: String,
    /// The resource the tokens are for.
    pub resource: String,
    /// When the person consented.
    pub created_at: i64,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// An authorization code, hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationCode {
    /// SHA-256 hex of the code.
    pub code_hash: String,
    /// The grant it opens.
    pub grant_id: String,
    /// The redirect URI it was sent to.
    pub redirect_uri: String,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// When it stops working.
    pub expires_at: i64,
    /// When it was used.
    pub used_at: Option<i64>,
}

/// A refresh token, hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    /// SHA-256 hex of the token.
    pub token_hash: String,
    /// The grant it belongs to.
    pub grant_id: String,
    /// When it was issued.
    pub created_at: i64,
    /// When it stops working.
    pub expires_at: i64,
    /// When it was used (each is used once).
    pub used_at: Option<i64>,
}

/// What taking a one-time value found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken<T> {
    /// It was unused, and is used now, by this transaction.
    Fresh(T),
    /// It had been used already (at `used_at`).
    Used(T),
    /// There is no such value.
    Unknown,
}

/// Reads of people's clients and grants.
pub trait Grants: Send + Sync + 'static {
    /// A live client people use, by `client_id`.
    fn oauth_app(&self, id: &str) -> impl Future<Output = Result<Option<OAuthApp>>> + Send;
    /// An organization's admin-made clients, revoked ones included, oldest first.
    fn oauth_apps(&self, org: &str) -> impl Future<Output = Result<Vec<OAuthApp>>> + Send;
    /// A grant, revoked or not.
    fn grant(&self, id: &str) -> impl Future<Output = Result<Option<Grant>>> + Send;
    /// A refresh token by its hash, used or not.
    fn refresh_token(&self, token_hash: &str) -> impl Future<Output = Result<Option<RefreshToken>>> + Send;
}

/// Writes of people's clients and grants, inside a store transaction.
pub trait GrantsTx: Send {
    /// Records a client.
    fn add_oauth_app(&mut self, app: &OAuthApp) -> impl Future<Output = Result<()>> + Send;
    /// Notes that a client got a token (so it is not removed as unused).
    fn mark_app_used(&mut self, id: &str, now: i64) -> impl Future<Output = Result<()>> + Send;
    /// Revokes an organization's client with every grant and token of it; whether it was live.
    fn revoke_oauth_app(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Removes up to `limit` registered clients made before `before` that never got a token.
    fn delete_unused_apps(&mut self, before: i64, limit: u32) -> impl Future<Output = Result<u64>> + Send;
    /// Records a grant.
    fn add_grant(&mut self, grant: &Grant) -> impl Future<Output = Result<()>> + Send;
    /// A grant, read inside the transaction.
    fn grant_in_tx(&mut self, id: &str) -> impl Future<Output = Result<Option<Grant>>> + Send;
    /// Revokes a grant and its access tokens (its refresh tokens die with it); whether it was live.
    fn revoke_grant(&mut self, id: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;
    /// Records an authorization code.
    fn add_code(&mut self, code: &AuthorizationCode) -> impl Future<Output = Result<()>> + Send;
    /// Uses an authorization code, once.
    fn take_code(&mut self, code_hash: &str, now: i64)
    -> impl Future<Output = Result<Taken<AuthorizationCode>>> + Send;
    /// Records a refresh token.
    fn add_refresh_token(&mut self, token: &RefreshToken) -> impl Future<Output = Result<()>> + Send;
    /// Uses a refresh token, once.
    fn take_refresh_token(
        &mut self,
        token_hash: &str,
        now: i64,
    ) -> impl Future<Output = Result<Taken<RefreshToken>>> + Send;
    /// Records a client assertion's `jti` until `expires_at`; false when it was seen
    /// before and has not expired. Forgets the client's expired ones.
    fn remember_assertion(
        &mut self,
        client_id: &str,
        jti_hash: &str,
        expires_at: i64,
        now: i64,
    ) -> impl Future<Output = Result<bool>> + Send;
}

const APP_COLUMNS: &str = "id, org_id, name, redirect_uris, application_type, auth_method, secret_hash, \
                           people_operated, created_at, used_at, revoked_at";

fn app_row(row: &sqlx::any::AnyRow) -> Result<OAuthApp> {
    let uris: String = row.try_get("redirect_uris")?;
    Ok(OAuthApp {
        id: row.try_get("id")?,
        org: row.try_get("org_id")?,
        name: row.try_get("name")?,
        redirect_uris: serde_json::from_str(&uris)
            .map_err(|error| Error::Corrupt(format!("oauth_apps.redirect_uris: {error}")))?,
        application_type: row.try_get("application_type")?,
        auth_method: row.try_get("auth_method")?,
        secret_hash: row.try_get("secret_hash")?,
        people_operated: row.try_get::<i64, _>("people_operated")? != 0,
        created_at: row.try_get("created_at")?,
        used_at: row.try_get("used_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

const GRANT_COLUMNS: &str = "id, org_id, identity_id, client_id, scope, resource, created_at, revoked_at";

fn grant_row(row: &sqlx::any::AnyRow) -> Result<Grant> {
    Ok(Grant {
        id: row.try_get("id")?,
        org: row.try_get("org_id")?,
        identity: row.try_get("identity_id")?,
        client_id: row.try_get("client_id")?,
        scope: row.try_get("scope")?,
        resource: row.try_get("resource")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

async fn app(connection: &mut AnyConnection, id: &str) -> Result<Option<OAuthApp>> {
    let row = sqlx::query(&format!(
        "SELECT {APP_COLUMNS} FROM oauth_apps WHERE id = $1 AND revoked_at IS NULL"
    ))
    .bind(id)
    .fetch_optional(connection)
    .await?;
    row.as_ref().map(app_row).transpose()
}

async fn apps(connection: &mut AnyConnection, org: &str) -> Result<Vec<OAuthApp>> {
    let rows = sqlx::query(&format!(
        "SELECT {APP_COLUMNS} FROM oauth_apps WHERE org_id = $1 ORDER BY created_at, id"
    ))
    .bind(org)
    .fetch_all(connection)
    .await?;
    rows.iter().map(app_row).collect()
}

async fn grant(connection: &mut AnyConnection, id: &str) -> Result<Option<Grant>> {
    let row = sqlx::query(&format!("SELECT {GRANT_COLUMNS} FROM oauth_grants WHERE id = $1"))
        .bind(id)
        .fetch_optional(connection)
        .await?;
    row.as_ref().map(grant_row).transpose()
}

async fn add_app(connection: &mut AnyConnection, app: &OAuthApp) -> Result<()> {
    let uris = serde_json::to_string(&app.redirect_uris).map_err(|error| Error::Corrupt(error.to_string()))?;
    sqlx::query(&format!(
        "INSERT INTO oauth_apps ({APP_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(&app.id)
    .bind(app.org.as_deref())
    .bind(app.name.as_deref())
    .bind(uris)
    .bind(&app.application_type)
    .bind(&app.auth_method)
    .bind(app.secret_hash.as_deref())
    .bind(i64::from(app.people_operated))
    .bind(app.created_at)
    .bind(app.used_at)
    .bind(app.revoked_at)
    .execute(connection)
    .await?;
    Ok(())
}

async fn revoke_app(connection: &mut AnyConnection, org: &str, id: &str, now: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE oauth_apps SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL")
            .bind(org)
            .bind(id)
            .bind(now)
            .execute(&mut *connection)
            .await?;
    sqlx::query(
        "UPDATE access_tokens SET revoked_at = $3 WHERE org_id = $1 AND revoked_at IS NULL AND created_by IN \
         (SELECT id FROM oauth_grants WHERE client_id = $2)",
    )
    .bind(org)
    .bind(id)
    .bind(now)
    .execute(&mut *connection)
    .await?;
    sqlx::query("UPDATE oauth_grants SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL")
        .bind(id)
        .bind(now)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

async fn revoke_grant(connection: &mut AnyConnection, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query("UPDATE oauth_grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .bind(id)
        .bind(now)
        .execute(&mut *connection)
        .await?;
    sqlx::query("UPDATE access_tokens SET revoked_at = $2 WHERE created_by = $1 AND revoked_at IS NULL")
        .bind(id)
        .bind(now)
        .execute(connection)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Marks a one-time row used, and reads it back: fresh when this transaction used it.
async fn take<T>(
    connection: &mut AnyConnection,
    table: &str,
    key: &str,
    value: &str,
    now: i64,
    columns: &str,
    read: impl Fn(&sqlx::any::AnyRow) -> Result<T>,
) -> Result<Taken<T>> {
    let done = sqlx::query(&format!(
        "UPDATE {table} SET used_at = $2 WHERE {key} = $1 AND used_at IS NULL"
    ))
    .bind(value)
    .bind(now)
    .execute(&mut *connection)
    .await?;
    let row = sqlx::query(&format!("SELECT {columns} FROM {table} WHERE {key} = $1"))
        .bind(value)
        .fetch_optional(connection)
        .await?;
    Ok(match row {
        None => Taken::Unknown,
        Some(row) if done.rows_affected() > 0 => Taken::Fresh(read(&row)?),
        Some(row) => Taken::Used(read(&row)?),
    })
}

const CODE_COLUMNS: &str = "code_hash, grant_id, redirect_uri, code_challenge, expires_at, used_at";

fn code_row(row: &sqlx::any::AnyRow) -> Result<AuthorizationCode> {
    Ok(AuthorizationCode {
        code_hash: row.try_get("code_hash")?,
        grant_id: row.try_get("grant_id")?,
        redirect_uri: row.try_get("redirect_uri")?,
        code_challenge: row.try_get("code_challenge")?,
        expires_at: row.try_get("expires_at")?,
        used_at: row.try_get("used_at")?,
    })
}

const REFRESH_COLUMNS: &str = "token_hash, grant_id, created_at, expires_at, used_at";

fn refresh_row(row: &sqlx::any::AnyRow) -> Result<RefreshToken> {
    Ok(RefreshToken {
        token_hash: row.try_get("token_hash")?,
        grant_id: row.try_get("grant_id")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        used_at: row.try_get("used_at")?,
    })
}

impl Grants for SqlStore {
    async fn oauth_app(&self, id: &str) -> Result<Option<OAuthApp>> {
        app(&mut *self.lend().await?, id).await
    }

    async fn oauth_apps(&self, org: &str) -> Result<Vec<OAuthApp>> {
        apps(&mut *self.lend().await?, org).await
    }

    async fn grant(&self, id: &str) -> Result<Option<Grant>> {
        grant(&mut *self.lend().await?, id).await
    }

    async fn refresh_token(&self, token_hash: &str) -> Result<Option<RefreshToken>> {
        let row = sqlx::query(&format!(
            "SELECT {REFRESH_COLUMNS} FROM oauth_refresh_tokens WHERE token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(&mut *self.lend().await?)
        .await?;
        row.as_ref().map(refresh_row).transpose()
    }
}

impl GrantsTx for SqlTx {
    async fn add_oauth_app(&mut self, app: &OAuthApp) -> Result<()> {
        add_app(self.connection(), app).await
    }

    async fn mark_app_used(&mut self, id: &str, now: i64) -> Result<()> {
        sqlx::query("UPDATE oauth_apps SET used_at = $2 WHERE id = $1 AND used_at IS NULL")
            .bind(id)
            .bind(now)
            .execute(self.connection())
            .await?;
        Ok(())
    }

    async fn revoke_oauth_app(&mut self, org: &str, id: &str, now: i64) -> Result<bool> {
        revoke_app(self.connection(), org, id, now).await
    }

    async fn delete_unused_apps(&mut self, before: i64, limit: u32) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM oauth_apps WHERE id IN (SELECT id FROM oauth_apps WHERE org_id IS NULL \
             AND used_at IS NULL AND created_at < $1 LIMIT $2)",
        )
        .bind(before)
        .bind(i64::from(limit))
        .execute(self.connection())
        .await?;
        Ok(done.rows_affected())
    }

    async fn add_grant(&mut self, grant: &Grant) -> Result<()> {
        sqlx::query(&format!(
            "INSERT INTO oauth_grants ({GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&grant.id)
        .bind(&grant.org)
        .bind(&grant.identity)
        .bind(&grant.client_id)
        .bind(&grant.scope)
        .bind(&grant.resource)
        .bind(grant.created_at)
        .bind(grant.revoked_at)
        .execute(self.connection())
        .await?;
        Ok(())
    }

    async fn grant_in_tx(&mut self, id: &str) -> Result<Option<Grant>> {
        grant(self.connection(), id).await
    }

    async fn revoke_grant(&mut self, id: &str, now: i64) -> Result<bool> {
        revoke_grant(self.connection(), id, now).await
    }

    async fn add_code(&mut self, code: &AuthorizationCode) -> Result<()> {
        sqlx::query(&format!(
            "INSERT INTO oauth_codes ({CODE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(&code.code_hash)
        .bind(&code.grant_id)
        .bind(&code.redirect_uri)
        .bind(&code.code_challenge)
        .bind(code.expires_at)
        .bind(code.used_at)
        .execute(self.connection())
        .await?;
        Ok(())
    }

    async fn take_code(&mut self, code_hash: &str, now: i64) -> Result<Taken<AuthorizationCode>> {
        take(
            self.connection(),
            "oauth_codes",
            "code_hash",
            code_hash,
            now,
            CODE_COLUMNS,
            code_row,
        )
        .await
    }

    async fn add_refresh_token(&mut self, token: &RefreshToken) -> Result<()> {
        sqlx::query(&format!(
            "INSERT INTO oauth_refresh_tokens ({REFRESH_COLUMNS}) VALUES ($1, $2, $3, $4, $5)"
        ))
        .bind(&token.token_hash)
        .bind(&token.grant_id)
        .bind(token.created_at)
        .bind(token.expires_at)
        .bind(token.used_at)
        .execute(self.connection())
        .await?;
        Ok(())
    }

    async fn take_refresh_token(&mut self, token_hash: &str, now: i64) -> Result<Taken<RefreshToken>> {
        take(
            self.connection(),
            "oauth_refresh_tokens",
            "token_hash",
            token_hash,
            now,
            REFRESH_COLUMNS,
            refresh_row,
        )
        .await
    }

    async fn remember_assertion(&mut self, client_id: &str, jti_hash: &str, expires_at: i64, now: i64) -> Result<bool> {
        sqlx::query("DELETE FROM oauth_assertions WHERE client_id = $1 AND expires_at <= $2")
            .bind(client_id)
            .bind(now)
            .execute(self.connection())
            .await?;
        let inserted = sqlx::query(
            "INSERT INTO oauth_assertions (client_id, jti_hash, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (client_id, jti_hash) DO NOTHING",
        )
        .bind(client_id)
        .bind(jti_hash)
        .bind(expires_at)
        .execute(self.connection())
        .await?;
        Ok(inserted.rows_affected() > 0)
    }
}
