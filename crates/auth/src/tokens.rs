//! API tokens: for automation on the REST surface, made by a person, acting as that
//! person within a scope. Shown once, kept as SHA-256, listed, revocable, expiring.

use agentprocess_store::{Audience, DirectoryTx as _, Identity, Role, Store, StoreTx, TokenRow};
use serde::Deserialize;
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::secrets::{new_id, new_token, sha256_hex};
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;

/// What an API token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// What its maker may do.
    Admin,
    /// Reads only.
    Read,
}

impl Scope {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Admin => "admin",
            Scope::Read => "read",
        }
    }
}

/// The longest an API token may live.
pub const MAX_TOKEN_DAYS: u32 = 366;

/// A token to make.
#[derive(Debug, Clone, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewToken {
    /// What it is for.
    #[schema(min_length = 1, max_length = 200, pattern = "\\S")]
    pub name: String,
    /// What it may do.
    pub scope: Scope,
    /// Days until it stops working (1 to 366; 90 when absent).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 366)]
    pub expires_in_days: Option<u32>,
}

/// The prefix of API tokens, so a leaked one is recognisable to secret scanners.
pub const API_TOKEN_PREFIX: &str = "apr_";

impl Auth {
    /// Makes an API token for `maker`; the token is returned this once.
    pub async fn create_token(
        &self,
        actor: &Actor,
        maker: &Identity,
        new: &NewToken,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(TokenRow, String), Error> {
        let mut issues = Vec::new();
        let name = new.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            issues.push("name: give the token a name of at most 200 characters".to_owned());
        }
        let days = new.expires_in_days.unwrap_or(90);
        if !(1..=MAX_TOKEN_DAYS).contains(&days) {
            issues.push(format!("expiresInDays: {days} is not between 1 and {MAX_TOKEN_DAYS}"));
        }
        if new.scope == Scope::Admin && !maker.has_role(Role::Admin) {
            issues.push("scope: only admins make admin tokens".to_owned());
        }
        refuse_if_any("the token was not made", issues)?;
        let secret = new_token(API_TOKEN_PREFIX);
        let at = millis(now);
        let row = TokenRow {
            id: new_id("tok_"),
            org: maker.org.clone(),
            identity: maker.id.clone(),
            token_hash: sha256_hex(secret.as_bytes()),
            audience: Audience::Api,
            scope: Some(new.scope.as_str().to_owned()),
            name: Some(name.to_owned()),
            expires_at: Some(at.saturating_add(i64::from(days) * 86_400_000)),
            created_by: Some(maker.id.clone()),
            created_at: at,
            revoked_at: None,
        };
        let mut tx = self.store.begin().await?;
        tx.add_token(&row).await?;
        audit::append(
            &mut tx,
            &maker.org,
            actor,
            AuditEvent::TokenCreated,
            Some(&row.id),
            detail([
                ("name", json!(name)),
                ("scope", json!(new.scope.as_str())),
                ("expiresInDays", json!(days)),
            ]),
            at,
        )
        .await?;
        let made = (row, secret);
        remember(request, &mut tx, &maker.org, &made, at).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// The organization's API tokens (never the tokens themselves).
    pub async fn tokens(&self, org: &str) -> Result<Vec<TokenRow>, Error> {
        Ok(self.store.tokens(org, Audience::Api).await?)
    }

    /// Revokes an API token. An admin revokes any; others only their own.
    pub async fn revoke_token(
        &self,
        actor: &Actor,
        caller: &Identity,
        id: &str,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        let org = &caller.org;
        let token = self
            .store
            .tokens(org, Audience::Api)
            .await?
            .into_iter()
            .find(|token| token.id == id);
        let Some(token) = token else {
            return Err(Error::not_found(format!("there is no token {id:?}")));
        };
        if token.identity != caller.id && !caller.has_role(Role::Admin) {
            return Err(Error::forbidden("only admins revoke other people's tokens"));
        }
        let mut tx = self.store.begin().await?;
        if !tx.revoke_token(org, id, millis(now)).await? {
            return Err(Error::conflict(format!("the token {id:?} is already revoked")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::TokenRevoked,
            Some(id),
            detail([]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Who an API token acts as, and within which scope: `None` for a token that is
    /// unknown, revoked, expired, for another surface, or whose maker is deactivated.
    pub async fn api_caller(&self, token: &str, now: jiff::Timestamp) -> Result<Option<(Identity, Scope)>, Error> {
        if !token.starts_with(API_TOKEN_PREFIX) {
            return Ok(None);
        }
        let Some(row) = self.store.token_by_hash(&sha256_hex(token.as_bytes())).await? else {
            return Ok(None);
        };
        let live = row.audience == Audience::Api
            && row.revoked_at.is_none()
            && row.expires_at.is_none_or(|expires| expires > millis(now));
        if !live {
            return Ok(None);
        }
        let scope = match row.scope.as_deref() {
            Some("admin") => Scope::Admin,
            _ => Scope::Read,
        };
        let identity = self.store.identity(&row.org, &row.identity).await?;
        Ok(identity
            .filter(|identity| identity.deactivated_at.is_none())
            .map(|identity| (identity, scope)))
    }

    /// The active identity a session signed in as, read afresh (so a deactivation or a
    /// role change applies to the next request).
    pub async fn session_identity(&self, org: &str, id: &str) -> Result<Option<Identity>, Error> {
        Ok(self
            .store
            .identity(org, id)
            .await?
            .filter(|identity| identity.deactivated_at.is_none()))
    }
}
