//! Agent clients of the server's own authorization server, which an admin makes for an
//! agent, and the `client_credentials` grant they use (authenticated by a secret, or by
//! a JWT signed with a registered key; see [`crate::client_auth`]). Access tokens are
//! opaque, stored hashed like every other token, and short-lived.

use agentprocess_store::{Audience, ClientSecret, DirectoryTx, IdentityKind, OAuthClient, Store, StoreTx, TokenRow};
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::secrets::{new_id, new_token, sha256_hex};
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;

/// How an OAuth access token for `/mcp` begins.
pub const ACCESS_TOKEN_PREFIX: &str = "apo_";
/// How a client secret begins.
pub const CLIENT_SECRET_PREFIX: &str = "apcs_";
/// How many secrets of one client may be live at once: two, so a rotation has no gap.
pub const LIVE_SECRETS: usize = 2;

/// The scopes an agent client may hold. `process:decide` and `process:operate` are never
/// an agent's.
pub const AGENT_SCOPES: [&str; 2] = ["process:work", "process:start"];

/// An OAuth error of the token endpoint (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantError {
    /// The error code: `invalid_request`, `invalid_client`, `invalid_grant`,
    /// `unauthorized_client`, `unsupported_grant_type`, `invalid_scope`, `invalid_target`.
    pub error: &'static str,
    /// A sentence for the developer.
    pub description: String,
}

impl GrantError {
    /// An error with its description.
    pub fn new(error: &'static str, description: impl Into<String>) -> Self {
        Self {
            error,
            description: description.into(),
        }
    }
}

/// An access token issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The token, shown this once.
    pub access_token: String,
    /// Seconds it lives.
    pub expires_in: u64,
    /// The scopes granted, space-separated.
    pub scope: String,
    /// The refresh token of a person's grant, shown this once.
    pub refresh_token: Option<String>,
}

/// An agent client to make.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewAgentClient<'a> {
    /// A display name.
    pub name: Option<&'a str>,
    /// Public keys (a JWK Set): the client then authenticates with `private_key_jwt`
    /// and holds no secret.
    pub jwks: Option<&'a serde_json::Value>,
}

/// What a `client_credentials` request asks.
#[derive(Debug, Clone, Copy)]
pub struct ClientCredentials<'a> {
    /// `scope`, space-separated; all the client may hold when absent.
    pub scope: Option<&'a str>,
    /// `resource` (RFC 8707); the MCP resource when absent.
    pub resource: Option<&'a str>,
}

impl Auth {
    /// An agent's OAuth clients, with their live secrets (never the secrets).
    pub async fn agent_clients(&self, org: &str, agent: &str) -> Result<Vec<(OAuthClient, Vec<ClientSecret>)>, Error> {
        self.agent(org, agent).await?;
        Ok(self.store.oauth_clients(org, agent).await?)
    }

    /// Makes an OAuth client for an agent, with its first secret (shown this once).
    pub async fn create_agent_client(
        &self,
        actor: &Actor,
        org: &str,
        agent: &str,
        new: NewAgentClient<'_>,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(OAuthClient, Option<(ClientSecret, String)>), Error> {
        let NewAgentClient { name, jwks } = new;
        let mut issues = Vec::new();
        if name.is_some_and(|name| name.chars().count() > 200) {
            issues.push("name: at most 200 characters".to_owned());
        }
        if let Some(jwks) = jwks {
            issues.extend(crate::assertion::jwks_issues(jwks));
        }
        refuse_if_any("the client was not made", issues)?;
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        tx.identity(org, agent)
            .await?
            .filter(|identity| identity.kind == IdentityKind::Agent)
            .ok_or_else(|| Error::not_found(format!("there is no agent {agent:?}")))?;
        let client = OAuthClient {
            id: new_id("apc_"),
            org: org.to_owned(),
            identity: agent.to_owned(),
            kind: "agent".to_owned(),
            name: name.map(str::trim).filter(|name| !name.is_empty()).map(str::to_owned),
            jwks: jwks.map(serde_json::Value::to_string),
            created_at: at,
            revoked_at: None,
        };
        tx.add_oauth_client(&client).await?;
        // A client with keys authenticates with private_key_jwt and holds no secret.
        let secret = match jwks {
            Some(_) => None,
            None => {
                let (secret, plain) = new_secret(&client.id, at);
                tx.add_client_secret(&secret).await?;
                Some((secret, plain))
            }
        };
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentClientCreated,
            Some(agent),
            detail([
                ("client", json!(client.id)),
                (
                    "authentication",
                    json!(if jwks.is_some() {
                        "private_key_jwt"
                    } else {
                        "client_secret"
                    }),
                ),
            ]),
            at,
        )
        .await?;
        let made = (client, secret);
        remember(request, &mut tx, org, &made, at).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Adds a secret to a client, refused while it has two live ones.
    pub async fn add_client_secret(
        &self,
        actor: &Actor,
        org: &str,
        agent: &str,
        client_id: &str,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(ClientSecret, String), Error> {
        let (client, secrets) = self.client_of(org, agent, client_id).await?;
        if client.jwks.is_some() {
            return Err(Error::conflict(format!(
                "client {client_id:?} authenticates with private_key_jwt; it holds no secrets"
            )));
        }
        if secrets.len() >= LIVE_SECRETS {
            return Err(Error::conflict(format!(
                "client {client_id:?} has {LIVE_SECRETS} live secrets; revoke one before adding another"
            )));
        }
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        let (secret, plain) = new_secret(&client.id, at);
        tx.add_client_secret(&secret).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentClientSecretAdded,
            Some(agent),
            detail([("client", json!(client.id)), ("secret", json!(secret.id))]),
            at,
        )
        .await?;
        let made = (secret, plain);
        remember(request, &mut tx, org, &made, at).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Revokes one secret of a client.
    pub async fn revoke_client_secret(
        &self,
        actor: &Actor,
        org: &str,
        agent: &str,
        client_id: &str,
        secret_id: &str,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        self.client_of(org, agent, client_id).await?;
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        if !tx.revoke_client_secret(client_id, secret_id, at).await? {
            return Err(Error::not_found(format!(
                "client {client_id:?} has no live secret {secret_id:?}"
            )));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentClientSecretRevoked,
            Some(agent),
            detail([("client", json!(client_id)), ("secret", json!(secret_id))]),
            at,
        )
        .await?;
        Ok(tx.commit().await?)
    }

    /// Revokes a client and every access token it was given.
    pub async fn revoke_client(
        &self,
        actor: &Actor,
        org: &str,
        agent: &str,
        client_id: &str,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        self.client_of(org, agent, client_id).await?;
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        tx.revoke_oauth_client(org, client_id, at).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentClientRevoked,
            Some(agent),
            detail([("client", json!(client_id))]),
            at,
        )
        .await?;
        Ok(tx.commit().await?)
    }

    /// A live client of this organization's agent.
    async fn client_of(
        &self,
        org: &str,
        agent: &str,
        client_id: &str,
    ) -> Result<(OAuthClient, Vec<ClientSecret>), Error> {
        match self.store.oauth_client(client_id).await? {
            Some((client, secrets)) if client.org == org && client.identity == agent => Ok((client, secrets)),
            _ => Err(Error::not_found(format!(
                "agent {agent:?} has no live client {client_id:?}"
            ))),
        }
    }

    /// The `client_credentials` grant: an authenticated agent client gets an access
    /// token for `mcp_resource`, acting as its agent, for `lifetime` seconds.
    pub async fn client_credentials(
        &self,
        client: &OAuthClient,
        asked: ClientCredentials<'_>,
        mcp_resource: &str,
        lifetime: u64,
        now: jiff::Timestamp,
    ) -> Result<Issued, GrantErrorOr> {
        check_resource(asked.resource, mcp_resource)?;
        let scope = granted_scope(asked.scope, &AGENT_SCOPES, "an agent client")?;
        let agent = self
            .store
            .identity(&client.org, &client.identity)
            .await
            .map_err(|error| GrantErrorOr::Failed(error.into()))?
            .filter(|identity| identity.deactivated_at.is_none())
            .ok_or_else(|| GrantError::new("unauthorized_client", "the client's agent is disabled"))?;
        let at = millis(now);
        let issue = async {
            let mut tx = self.store.begin().await?;
            let token = issue_access_token(&mut tx, &agent, &scope, &client.id, lifetime, at).await?;
            let actor = Actor {
                id: agent.id.clone(),
                address: None,
            };
            audit::append(
                &mut tx,
                &client.org,
                &actor,
                AuditEvent::OauthTokenIssued,
                Some(&client.id),
                detail([("scope", json!(scope)), ("grant", json!("client_credentials"))]),
                at,
            )
            .await?;
            tx.commit().await?;
            Ok::<String, agentprocess_store::Error>(token)
        };
        let access_token = issue.await.map_err(|error| GrantErrorOr::Failed(error.into()))?;
        Ok(Issued {
            access_token,
            expires_in: lifetime,
            scope,
            refresh_token: None,
        })
    }
}

/// Refuses a `resource` (RFC 8707) other than the MCP resource.
pub(crate) fn check_resource(resource: Option<&str>, mcp_resource: &str) -> Result<(), GrantError> {
    if resource.is_some_and(|resource| resource.trim_end_matches('/') != mcp_resource) {
        return Err(GrantError::new(
            "invalid_target",
            format!("this server issues tokens for its MCP resource {mcp_resource} only"),
        ));
    }
    Ok(())
}

/// The scopes granted for `requested` out of `grantable` (all of them when none is
/// asked); `invalid_scope` naming every one that cannot be.
pub(crate) fn granted_scope(requested: Option<&str>, grantable: &[&str], who: &str) -> Result<String, GrantError> {
    let Some(requested) = requested.filter(|requested| !requested.trim().is_empty()) else {
        return Ok(grantable.join(" "));
    };
    let unknown: Vec<&str> = requested
        .split_ascii_whitespace()
        .filter(|name| !grantable.contains(name))
        .collect();
    if !unknown.is_empty() {
        return Err(GrantError::new(
            "invalid_scope",
            format!(
                "{who} may hold {} only, not {}",
                grantable.join(", "),
                unknown.join(", ")
            ),
        ));
    }
    Ok(grantable
        .iter()
        .filter(|scope| requested.split_ascii_whitespace().any(|name| name == **scope))
        .copied()
        .collect::<Vec<_>>()
        .join(" "))
}

/// Stores a new access token for `identity` and returns it.
pub(crate) async fn issue_access_token<T: StoreTx>(
    tx: &mut T,
    identity: &agentprocess_store::Identity,
    scope: &str,
    created_by: &str,
    lifetime: u64,
    at: i64,
) -> Result<String, agentprocess_store::Error> {
    let token = new_token(ACCESS_TOKEN_PREFIX);
    let row = TokenRow {
        id: new_id("tok_"),
        org: identity.org.clone(),
        identity: identity.id.clone(),
        token_hash: sha256_hex(token.as_bytes()),
        audience: Audience::Mcp,
        scope: Some(scope.to_owned()),
        name: Some(format!("OAuth access token of {created_by}")),
        expires_at: Some(at.saturating_add(i64::try_from(lifetime).unwrap_or(i64::MAX).saturating_mul(1000))),
        created_by: Some(created_by.to_owned()),
        created_at: at,
        revoked_at: None,
    };
    tx.add_token(&row).await?;
    Ok(token)
}

/// A refusal of the token endpoint, or a failure of the server.
#[derive(Debug)]
pub enum GrantErrorOr {
    /// The request was refused (RFC 6749 §5.2).
    Refused(GrantError),
    /// The server failed.
    Failed(Error),
}

impl From<GrantError> for GrantErrorOr {
    fn from(error: GrantError) -> Self {
        Self::Refused(error)
    }
}

fn new_secret(client_id: &str, at: i64) -> (ClientSecret, String) {
    let plain = new_token(CLIENT_SECRET_PREFIX);
    let secret = ClientSecret {
        client_id: client_id.to_owned(),
        id: new_id("sec_"),
        secret_hash: sha256_hex(plain.as_bytes()),
        created_at: at,
        revoked_at: None,
    };
    (secret, plain)
}
