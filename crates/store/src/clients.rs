//! OAuth clients and their secrets, and what an access token grants.

use sqlx::{AnyConnection, Row as _};

use crate::Result;
use crate::model::Identity;

/// An OAuth client of the server's authorization server.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OAuthClient {
    /// The `client_id`, unique across organizations.
    pub id: String,
    /// Its organization.
    pub org: String,
    /// The identity its tokens act as (an agent).
    pub identity: String,
    /// `agent`.
    pub kind: String,
    /// A display name.
    pub name: Option<String>,
    /// The public keys (a JWK Set, JSON) of a client that authenticates with
    /// `private_key_jwt`; `None` for one that uses secrets.
    pub jwks: Option<String>,
    /// When it was made (milliseconds).
    pub created_at: i64,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// One secret of a client, hashed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientSecret {
    /// The client.
    pub client_id: String,
    /// The secret's id.
    pub id: String,
    /// SHA-256 hex of the secret.
    pub secret_hash: String,
    /// When it was made.
    pub created_at: i64,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

/// What an access token is: whose, and the OAuth scopes it carries (`None` for a token
/// an admin issued, which may do whatever its identity may).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The identity, active.
    pub identity: Identity,
    /// The space-separated scopes of an OAuth token.
    pub scope: Option<String>,
}

const CLIENT_COLUMNS: &str = "id, org_id, identity_id, kind, name, jwks, created_at, revoked_at";

fn client_row(row: &sqlx::any::AnyRow) -> Result<OAuthClient> {
    Ok(OAuthClient {
        id: row.try_get("id")?,
        org: row.try_get("org_id")?,
        identity: row.try_get("identity_id")?,
        kind: row.try_get("kind")?,
        name: row.try_get("name")?,
        jwks: row.try_get("jwks")?,
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

pub(crate) async fn credential(
    connection: &mut AnyConnection,
    token_hash: &str,
    now: i64,
) -> Result<Option<Credential>> {
    let row = sqlx::query(
        "SELECT org_id, identity_id, scope FROM access_tokens WHERE token_hash = $1 AND audience = 'mcp' \
         AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let org: String = row.try_get("org_id")?;
    let id: String = row.try_get("identity_id")?;
    let scope: Option<String> = row.try_get("scope")?;
    let identity = crate::admin::identity(connection, &org, &id)
        .await?
        .filter(|identity| identity.deactivated_at.is_none());
    Ok(identity.map(|identity| Credential { identity, scope }))
}

/// A live client by its id, with its live secrets.
pub(crate) async fn client(
    connection: &mut AnyConnection,
    id: &str,
) -> Result<Option<(OAuthClient, Vec<ClientSecret>)>> {
    let row = sqlx::query(&format!(
        "SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 AND revoked_at IS NULL"
    ))
    .bind(id)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let client = client_row(&row)?;
    let secrets = secrets(&mut *connection, id).await?;
    Ok(Some((client, secrets)))
}

async fn secrets(connection: &mut AnyConnection, client_id: &str) -> Result<Vec<ClientSecret>> {
    let rows = sqlx::query(
        "SELECT client_id, id, secret_hash, created_at, revoked_at FROM oauth_client_secrets \
         WHERE client_id = $1 AND revoked_at IS NULL ORDER BY created_at, id",
    )
    .bind(client_id)
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(ClientSecret {
                client_id: row.try_get("client_id")?,
                id: row.try_get("id")?,
                secret_hash: row.try_get("secret_hash")?,
                created_at: row.try_get("created_at")?,
                revoked_at: row.try_get("revoked_at")?,
            })
        })
        .collect()
}

/// An organization's clients of one identity, with their live secrets, oldest first.
pub(crate) async fn clients_of(
    connection: &mut AnyConnection,
    org: &str,
    identity: &str,
) -> Result<Vec<(OAuthClient, Vec<ClientSecret>)>> {
    let rows = sqlx::query(&format!(
        "SELECT {CLIENT_COLUMNS} FROM oauth_clients WHERE org_id = $1 AND identity_id = $2 ORDER BY created_at, id"
    ))
    .bind(org)
    .bind(identity)
    .fetch_all(&mut *connection)
    .await?;
    let mut found = Vec::with_capacity(rows.len());
    for row in &rows {
        let client = client_row(row)?;
        let secrets = secrets(&mut *connection, &client.id).await?;
        found.push((client, secrets));
    }
    Ok(found)
}

pub(crate) async fn add_client(connection: &mut AnyConnection, client: &OAuthClient) -> Result<()> {
    sqlx::query(&format!(
        "INSERT INTO oauth_clients ({CLIENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    ))
    .bind(&client.id)
    .bind(&client.org)
    .bind(&client.identity)
    .bind(&client.kind)
    .bind(client.name.as_deref())
    .bind(client.jwks.as_deref())
    .bind(client.created_at)
    .bind(client.revoked_at)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn add_secret(connection: &mut AnyConnection, secret: &ClientSecret) -> Result<()> {
    sqlx::query(
        "INSERT INTO oauth_client_secrets (client_id, id, secret_hash, created_at, revoked_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&secret.client_id)
    .bind(&secret.id)
    .bind(&secret.secret_hash)
    .bind(secret.created_at)
    .bind(secret.revoked_at)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn revoke_secret(connection: &mut AnyConnection, client_id: &str, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE oauth_client_secrets SET revoked_at = $3 WHERE client_id = $1 AND id = $2 AND revoked_at IS NULL",
    )
    .bind(client_id)
    .bind(id)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Revokes a client and every access token it was given.
pub(crate) async fn revoke_client(connection: &mut AnyConnection, org: &str, id: &str, now: i64) -> Result<bool> {
    let done =
        sqlx::query("UPDATE oauth_clients SET revoked_at = $3 WHERE org_id = $1 AND id = $2 AND revoked_at IS NULL")
            .bind(org)
            .bind(id)
            .bind(now)
            .execute(&mut *connection)
            .await?;
    sqlx::query(
        "UPDATE access_tokens SET revoked_at = $3 WHERE org_id = $1 AND created_by = $2 AND revoked_at IS NULL",
    )
    .bind(org)
    .bind(id)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn identity_by_token(
    connection: &mut AnyConnection,
    token_hash: &str,
    now: i64,
) -> Result<Option<Identity>> {
    let credential = credential(connection, token_hash, now).await?;
    Ok(credential.map(|credential| credential.identity))
}
