//! Agents and their static MCP bearer tokens.

use agentprocess_auth::agents::NewAgent;
use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::{Acting, Identity, Role};
use agentprocess_store::TokenRow;
use serde::{Deserialize, Serialize};

use crate::{Error, Operations, unless_replayed};

/// A static token to issue an agent.
#[derive(Debug, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAgentToken {
    /// Days until it stops working (1 to 366); absent, it lives until revoked.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 366)]
    pub expires_in_days: Option<u32>,
}

/// Replacing an agent's token.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rotation {
    /// How long the old token keeps working.
    #[schema(maximum = 604800)]
    pub overlap_seconds: u32,
}

/// Whether an agent may call.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentChange {
    /// `false` refuses its every call until it is enabled again.
    pub enabled: bool,
}

impl Operations {
    /// Every agent.
    pub async fn agents(&self, acting: &Acting) -> Result<Vec<Identity>, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self.auth.agents(acting.org()).await?)
    }

    /// One agent.
    pub async fn agent(&self, acting: &Acting, id: &str) -> Result<Identity, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self.auth.agent(acting.org(), id).await?)
    }

    /// Makes an agent.
    pub async fn create_agent(&self, acting: &Acting, new: &NewAgent, key: Option<&str>) -> Result<Identity, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AgentCreate, new);
        Ok(self
            .auth
            .create_agent(&acting.actor(), acting.org(), new, self.now(), request.as_deref())
            .await?)
    }

    /// Enables or disables an agent.
    pub async fn set_agent_enabled(&self, acting: &Acting, id: &str, change: &AgentChange) -> Result<Identity, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .set_agent_enabled(&acting.actor(), acting.org(), id, change.enabled, self.now())
            .await?)
    }

    /// An agent's tokens.
    pub async fn agent_tokens(&self, acting: &Acting, id: &str) -> Result<Vec<TokenRow>, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.auth.agent_tokens(acting.org(), id).await?)
    }

    /// Issues an agent a token, with the token itself (shown this once).
    pub async fn create_agent_token(
        &self,
        acting: &Acting,
        id: &str,
        new: &NewAgentToken,
        key: Option<&str>,
    ) -> Result<(TokenRow, String), Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AgentTokenCreate, &(id, new));
        Ok(self
            .auth
            .create_agent_token(
                &acting.actor(),
                acting.org(),
                id,
                new.expires_in_days,
                self.now(),
                request.as_deref(),
            )
            .await?)
    }

    /// Replaces an agent's token, the old one working on for the overlap.
    pub async fn rotate_agent_token(
        &self,
        acting: &Acting,
        (id, token): (&str, &str),
        rotation: &Rotation,
        key: Option<&str>,
    ) -> Result<(TokenRow, String), Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AgentTokenRotate, &(id, token, rotation));
        let rotation = agentprocess_auth::agents::Rotation {
            token,
            overlap_seconds: rotation.overlap_seconds,
        };
        Ok(self
            .auth
            .rotate_agent_token(
                &acting.actor(),
                acting.org(),
                id,
                rotation,
                self.now(),
                request.as_deref(),
            )
            .await?)
    }

    /// Revokes an agent's token.
    pub async fn revoke_agent_token(&self, acting: &Acting, id: &str, token: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .revoke_agent_token(&acting.actor(), acting.org(), id, token, self.now())
            .await?)
    }
}
