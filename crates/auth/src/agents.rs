//! Agents: identities an admin makes for the software that claims and submits agent
//! steps, with bearer tokens for the MCP endpoint (OAuth clients come next).

use agentprocess_store::{Audience, DirectoryTx, Identity, IdentityKind, Store, StoreTx, TokenRow};
use serde::Deserialize;
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::secrets::{new_id, new_token, sha256_hex};
use crate::tokens::MAX_TOKEN_DAYS;
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;
use agentprocess_store::SqlTx;

/// Which token of an agent to replace, and how long the old one keeps working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation<'a> {
    /// The old token's id.
    pub token: &'a str,
    /// Seconds the old token keeps working after the new one is made.
    pub overlap_seconds: u32,
}

/// An agent to make.
#[derive(Debug, Clone, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAgent {
    /// Its id, which work items and the record show as who claimed.
    #[schema(pattern = "^[a-z0-9][a-z0-9._-]{0,63}$")]
    pub id: String,
    /// A display name; the id when absent.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub name: Option<String>,
}

/// The prefix of MCP bearer tokens.
pub const MCP_TOKEN_PREFIX: &str = "apt_";

/// The longest overlap of a rotated token with its successor.
pub const MAX_OVERLAP_SECONDS: u32 = 7 * 86_400;

impl Auth {
    /// The organization's agents.
    pub async fn agents(&self, org: &str) -> Result<Vec<Identity>, Error> {
        Ok(self
            .store
            .identities(org)
            .await?
            .into_iter()
            .filter(|identity| identity.kind == IdentityKind::Agent)
            .collect())
    }

    /// One agent.
    pub async fn agent(&self, org: &str, id: &str) -> Result<Identity, Error> {
        self.store
            .identity(org, id)
            .await?
            .filter(|identity| identity.kind == IdentityKind::Agent)
            .ok_or_else(|| Error::not_found(format!("there is no agent {id:?}")))
    }

    /// Makes an agent.
    pub async fn create_agent(
        &self,
        actor: &Actor,
        org: &str,
        new: &NewAgent,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<Identity, Error> {
        let mut issues = crate::identity_id_issues(&new.id);
        if new.name.as_deref().is_some_and(|name| name.chars().count() > 200) {
            issues.push("name: at most 200 characters".to_owned());
        }
        refuse_if_any("the agent was not made", issues)?;
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if tx.identity(org, &new.id).await?.is_some() {
            return Err(Error::conflict(format!("an identity {:?} exists already", new.id)));
        }
        let agent = Identity {
            org: org.to_owned(),
            id: new.id.clone(),
            kind: IdentityKind::Agent,
            role: None,
            person: None,
            name: new
                .name
                .clone()
                .filter(|name| !name.trim().is_empty())
                .unwrap_or_else(|| new.id.clone()),
            groups: Vec::new(),
            deactivated_at: None,
        };
        let at = millis(now);
        tx.create_identity(&agent, at).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentCreated,
            Some(&agent.id),
            detail([("name", json!(agent.name))]),
            at,
        )
        .await?;
        remember(request, &mut tx, org, &agent, at).await?;
        tx.commit().await?;
        Ok(agent)
    }

    /// Disables an agent (its tokens stop working; kept, so enabling restores them) or
    /// enables it again.
    pub async fn set_agent_enabled(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        enabled: bool,
        now: jiff::Timestamp,
    ) -> Result<Identity, Error> {
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        let Some(mut agent) = tx
            .identity(org, id)
            .await?
            .filter(|identity| identity.kind == IdentityKind::Agent)
        else {
            return Err(Error::not_found(format!("there is no agent {id:?}")));
        };
        agent.deactivated_at = if enabled {
            None
        } else {
            agent.deactivated_at.or(Some(at))
        };
        tx.set_person(org, id, None, agent.deactivated_at).await?;
        let kind = if enabled {
            AuditEvent::AgentEnabled
        } else {
            AuditEvent::AgentDisabled
        };
        audit::append(&mut tx, org, actor, kind, Some(id), detail([]), at).await?;
        tx.commit().await?;
        Ok(agent)
    }

    /// An agent's MCP tokens (never the tokens themselves).
    pub async fn agent_tokens(&self, org: &str, id: &str) -> Result<Vec<TokenRow>, Error> {
        self.agent(org, id).await?;
        Ok(self
            .store
            .tokens(org, Audience::Mcp)
            .await?
            .into_iter()
            .filter(|token| token.identity == id)
            .collect())
    }

    /// Makes an MCP token for an agent; returned this once. `expires_in_days` absent:
    /// it lives until revoked.
    pub async fn create_agent_token(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        expires_in_days: Option<u32>,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(TokenRow, String), Error> {
        self.agent(org, id).await?;
        if let Some(days) = expires_in_days
            && !(1..=MAX_TOKEN_DAYS).contains(&days)
        {
            return Err(Error::invalid(
                "the token was not made",
                vec![format!("expiresInDays: {days} is not between 1 and {MAX_TOKEN_DAYS}")],
            ));
        }
        let mut tx = self.store.begin().await?;
        let made = add_mcp_token(
            &mut tx,
            actor,
            (org, id),
            expires_in_days,
            millis(now),
            AuditEvent::AgentTokenCreated,
        )
        .await?;
        remember(request, &mut tx, org, &made, millis(now)).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Replaces an agent's token: a new one now, and the old one keeps working for
    /// `overlap_seconds` more, so the agent can switch without a gap.
    pub async fn rotate_agent_token(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        rotation: Rotation<'_>,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(TokenRow, String), Error> {
        let Rotation { token, overlap_seconds } = rotation;
        if overlap_seconds > MAX_OVERLAP_SECONDS {
            return Err(Error::invalid(
                "the token was not rotated",
                vec![format!(
                    "overlapSeconds: {overlap_seconds} is more than {MAX_OVERLAP_SECONDS}"
                )],
            ));
        }
        let old = self
            .agent_tokens(org, id)
            .await?
            .into_iter()
            .find(|row| row.id == token);
        let Some(old) = old.filter(|row| row.revoked_at.is_none()) else {
            return Err(Error::not_found(format!("agent {id:?} has no live token {token:?}")));
        };
        let at = millis(now);
        let lifetime = old.expires_at.map(|expires| expires.saturating_sub(old.created_at));
        let days = lifetime.map(|millis| {
            u32::try_from(millis / 86_400_000)
                .unwrap_or(MAX_TOKEN_DAYS)
                .clamp(1, MAX_TOKEN_DAYS)
        });
        let mut tx = self.store.begin().await?;
        let made = add_mcp_token(&mut tx, actor, (org, id), days, at, AuditEvent::AgentTokenCreated).await?;
        tx.set_token_expiry(org, &old.id, at.saturating_add(i64::from(overlap_seconds) * 1000))
            .await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentTokenRotated,
            Some(id),
            detail([
                ("old", json!(old.id)),
                ("new", json!(made.0.id)),
                ("overlapSeconds", json!(overlap_seconds)),
            ]),
            at,
        )
        .await?;
        remember(request, &mut tx, org, &made, at).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Revokes an agent's token.
    pub async fn revoke_agent_token(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        token: &str,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        if !self.agent_tokens(org, id).await?.iter().any(|row| row.id == token) {
            return Err(Error::not_found(format!("agent {id:?} has no token {token:?}")));
        }
        let mut tx = self.store.begin().await?;
        if !tx.revoke_token(org, token, millis(now)).await? {
            return Err(Error::conflict(format!("the token {token:?} is already revoked")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AgentTokenRevoked,
            Some(id),
            detail([("token", json!(token))]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Adds a static MCP token for identity `id` of `org` and its audit entry of `kind`,
/// in `tx`: the row (only the token's hash) and the token itself, shown this once.
pub(crate) async fn add_mcp_token(
    tx: &mut SqlTx,
    actor: &Actor,
    (org, id): (&str, &str),
    expires_in_days: Option<u32>,
    at: i64,
    kind: AuditEvent,
) -> Result<(TokenRow, String), Error> {
    let secret = new_token(MCP_TOKEN_PREFIX);
    let row = TokenRow {
        id: new_id("tok_"),
        org: org.to_owned(),
        identity: id.to_owned(),
        token_hash: sha256_hex(secret.as_bytes()),
        audience: Audience::Mcp,
        scope: None,
        name: None,
        expires_at: expires_in_days.map(|days| at.saturating_add(i64::from(days) * 86_400_000)),
        created_by: Some(actor.id.clone()),
        created_at: at,
        revoked_at: None,
    };
    tx.add_token(&row).await?;
    audit::append(tx, org, actor, kind, Some(id), detail([("token", json!(row.id))]), at).await?;
    Ok((row, secret))
}
