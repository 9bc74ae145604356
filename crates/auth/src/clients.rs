//! OAuth clients of the server's own authorization server, and the grants it answers.
//! So far: agent clients, which an admin makes for an agent and which authenticate
//! with `client_credentials` (a secret, sent by HTTP Basic or in the form). Their access
//! tokens are opaque, stored hashed like every other token, and short-lived.

use agentprocess_store::{Audience, ClientSecret, DirectoryTx, IdentityKind, OAuthClient, Store, StoreTx, TokenRow};
use serde_json::json;

use crate::audit::{self, Actor, detail};
use crate::idempotency::{Idempotent, remember};
use crate::secrets::{new_id, new_token, same, sha256_hex};
use crate::{Auth, Error, millis};

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
}

/// What a `client_credentials` request asks.
#[derive(Debug, Clone, Copy)]
pub struct ClientCredentials<'a> {
    /// `client_id`.
    pub client_id: &'a str,
    /// `client_secret`.
    pub client_secret: &'a str,
    /// `scope`, space-separated; all the client may hold when absent.
    pub scope: Option<&'a str>,
    /// `resource` (RFC 8707); the MCP resource when absent.
    pub resource: Option<&'a str>,
}

impl<S: Store + Clone> Auth<S> {
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
        name: Option<&str>,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(OAuthClient, ClientSecret, String), Error> {
        if name.is_some_and(|name| name.chars().count() > 200) {
            return Err(Error::invalid(
                "the client was not made",
                vec!["name: at most 200 characters".to_owned()],
            ));
        }
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
            created_at: at,
            revoked_at: None,
        };
        tx.add_oauth_client(&client).await?;
        let (secret, plain) = new_secret(&client.id, at);
        tx.add_client_secret(&secret).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            "agent.client_created",
            Some(agent),
            detail([("client", json!(client.id))]),
            at,
        )
        .await?;
        let made = (client, secret, plain);
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
            "agent.client_secret_added",
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
            "agent.client_secret_revoked",
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
            "agent.client_revoked",
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

    /// The `client_credentials` grant: a live client with a live secret gets an access
    /// token for `mcp_resource`, acting as its agent, for `lifetime` seconds.
    pub async fn client_credentials(
        &self,
        asked: ClientCredentials<'_>,
        mcp_resource: &str,
        lifetime: u64,
        now: jiff::Timestamp,
    ) -> Result<Issued, GrantErrorOr> {
        let client = self.authenticate_client(asked.client_id, asked.client_secret).await?;
        if asked
            .resource
            .is_some_and(|resource| resource.trim_end_matches('/') != mcp_resource)
        {
            return Err(GrantError::new(
                "invalid_target",
                format!("this server issues tokens for its MCP resource {mcp_resource} only"),
            )
            .into());
        }
        let scope = match asked.scope {
            None => AGENT_SCOPES.join(" "),
            Some(requested) => {
                let unknown: Vec<&str> = requested
                    .split_ascii_whitespace()
                    .filter(|name| !AGENT_SCOPES.contains(name))
                    .collect();
                if !unknown.is_empty() {
                    return Err(GrantError::new(
                        "invalid_scope",
                        format!(
                            "an agent client may hold {} only, not {}",
                            AGENT_SCOPES.join(" and "),
                            unknown.join(", ")
                        ),
                    )
                    .into());
                }
                let mut granted: Vec<&str> = AGENT_SCOPES
                    .into_iter()
                    .filter(|scope| requested.split_ascii_whitespace().any(|name| name == *scope))
                    .collect();
                if granted.is_empty() {
                    granted = AGENT_SCOPES.to_vec();
                }
                granted.join(" ")
            }
        };
        let at = millis(now);
        let agent = self
            .store
            .identity(&client.org, &client.identity)
            .await
            .map_err(|error| GrantErrorOr::Failed(error.into()))?
            .filter(|identity| identity.deactivated_at.is_none())
            .ok_or_else(|| GrantError::new("unauthorized_client", "the client's agent is disabled"))?;
        let token = new_token(ACCESS_TOKEN_PREFIX);
        let row = TokenRow {
            id: new_id("tok_"),
            org: client.org.clone(),
            identity: agent.id.clone(),
            token_hash: sha256_hex(token.as_bytes()),
            audience: Audience::Mcp,
            scope: Some(scope.clone()),
            name: Some(format!("OAuth access token of {}", client.id)),
            expires_at: Some(at.saturating_add(i64::try_from(lifetime).unwrap_or(i64::MAX).saturating_mul(1000))),
            created_by: Some(client.id.clone()),
            created_at: at,
            revoked_at: None,
        };
        let issue = async {
            let mut tx = self.store.begin().await?;
            tx.add_token(&row).await?;
            let actor = Actor {
                id: agent.id.clone(),
                address: None,
            };
            audit::append(
                &mut tx,
                &client.org,
                &actor,
                "oauth.token_issued",
                Some(&client.id),
                detail([("scope", json!(scope)), ("grant", json!("client_credentials"))]),
                at,
            )
            .await?;
            tx.commit().await
        };
        issue.await.map_err(|error| GrantErrorOr::Failed(error.into()))?;
        Ok(Issued {
            access_token: token,
            expires_in: lifetime,
            scope,
        })
    }
}

impl<S: Store + Clone> Auth<S> {
    /// The live client `client_id` whose live secret `client_secret` is.
    async fn authenticate_client(&self, client_id: &str, client_secret: &str) -> Result<OAuthClient, GrantErrorOr> {
        let invalid_client = || {
            GrantError::new(
                "invalid_client",
                "the client is unknown, revoked, or its secret is wrong",
            )
        };
        let (client, secrets) = self
            .store
            .oauth_client(client_id)
            .await
            .map_err(|error| GrantErrorOr::Failed(error.into()))?
            .ok_or_else(invalid_client)?;
        let presented = sha256_hex(client_secret.as_bytes());
        // Every live secret is compared, so the time taken says nothing of which matched.
        let matched = secrets
            .iter()
            .fold(false, |matched, secret| same(&secret.secret_hash, &presented) | matched);
        if matched {
            Ok(client)
        } else {
            Err(invalid_client().into())
        }
    }

    /// Token revocation (RFC 7009): the authenticated client's own access token stops
    /// working. A token that is unknown, already revoked or another client's is left as
    /// it is, and the answer is the same, so nothing is learnt about other tokens.
    pub async fn revoke_access_token(
        &self,
        client_id: &str,
        client_secret: &str,
        token: &str,
        now: jiff::Timestamp,
    ) -> Result<(), GrantErrorOr> {
        let client = self.authenticate_client(client_id, client_secret).await?;
        let failed = |error: agentprocess_store::Error| GrantErrorOr::Failed(error.into());
        let Some(row) = self
            .store
            .token_by_hash(&sha256_hex(token.as_bytes()))
            .await
            .map_err(failed)?
        else {
            return Ok(());
        };
        if row.org != client.org || row.created_by.as_deref() != Some(client.id.as_str()) || row.revoked_at.is_some() {
            return Ok(());
        }
        let at = millis(now);
        let revoke = async {
            let mut tx = self.store.begin().await?;
            tx.revoke_token(&client.org, &row.id, at).await?;
            let actor = Actor {
                id: client.identity.clone(),
                address: None,
            };
            audit::append(
                &mut tx,
                &client.org,
                &actor,
                "oauth.token_revoked",
                Some(&client.id),
                detail([("token", json!(row.id))]),
                at,
            )
            .await?;
            tx.commit().await
        };
        revoke.await.map_err(failed)
    }
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
