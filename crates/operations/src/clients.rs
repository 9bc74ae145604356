//! An agent's OAuth clients and their secrets.

use agentprocess_auth::clients::NewAgentClient;
use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::{Acting, Role};
use agentprocess_store::{ClientSecret, OAuthClient};
use serde::{Deserialize, Serialize};

use crate::{Error, Operations, unless_replayed};

/// An OAuth client to make for an agent.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewClient {
    /// A display name, such as the host the agent runs on.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub name: Option<String>,
    /// Public keys (a JWK Set): the client then authenticates with `private_key_jwt`
    /// (RFC 7523) and holds no secret.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub jwks: Option<serde_json::Value>,
}

/// A client just made: with its first secret and the secret itself (shown this once),
/// or none when it was given keys.
pub type MadeClient = (OAuthClient, Option<(ClientSecret, String)>);

impl Operations {
    /// An agent's clients, each with its live secrets.
    pub async fn agent_clients(
        &self,
        acting: &Acting,
        agent: &str,
    ) -> Result<Vec<(OAuthClient, Vec<ClientSecret>)>, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.auth.agent_clients(acting.org(), agent).await?)
    }

    /// Makes a client for an agent.
    pub async fn create_client(
        &self,
        acting: &Acting,
        agent: &str,
        new: &NewClient,
        key: Option<&str>,
    ) -> Result<MadeClient, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AgentClientCreate, &(agent, new));
        let new = NewAgentClient {
            name: new.name.as_deref(),
            jwks: new.jwks.as_ref(),
        };
        Ok(self
            .auth
            .create_agent_client(
                &acting.actor(),
                acting.org(),
                agent,
                new,
                self.now(),
                request.as_deref(),
            )
            .await?)
    }

    /// Revokes a client.
    pub async fn revoke_client(&self, acting: &Acting, agent: &str, client: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .revoke_client(&acting.actor(), acting.org(), agent, client, self.now())
            .await?)
    }

    /// Adds a secret to a client, with the secret itself (shown this once).
    pub async fn add_client_secret(
        &self,
        acting: &Acting,
        agent: &str,
        client: &str,
        key: Option<&str>,
    ) -> Result<(ClientSecret, String), Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AgentClientSecretAdd, &(agent, client));
        Ok(self
            .auth
            .add_client_secret(
                &acting.actor(),
                acting.org(),
                agent,
                client,
                self.now(),
                request.as_deref(),
            )
            .await?)
    }

    /// Revokes a client's secret.
    pub async fn revoke_client_secret(
        &self,
        acting: &Acting,
        agent: &str,
        client: &str,
        secret: &str,
    ) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .revoke_client_secret(&acting.actor(), acting.org(), agent, client, secret, self.now())
            .await?)
    }

    /// Where clients get tokens.
    pub fn token_endpoint(&self) -> String {
        format!(
            "{}/oauth/token",
            self.service.settings().public_url.trim_end_matches('/')
        )
    }
}
