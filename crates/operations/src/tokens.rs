//! API tokens of people, for the REST surface.

use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::tokens::NewToken;
use agentprocess_auth::{Acting, Role, Via};
use agentprocess_store::TokenRow;

use crate::{Error, Operations, unless_replayed};

/// Refuses unless the caller is a person at a browser: a token cannot make more of
/// itself.
pub fn from_session(acting: &Acting) -> Result<(), agentprocess_auth::Error> {
    if acting.via == Via::Session {
        Ok(())
    } else {
        Err(agentprocess_auth::Error::forbidden(
            "API tokens are made from a signed-in session",
        ))
    }
}

impl Operations {
    /// API tokens: every one for an admin, else the caller's own.
    pub async fn tokens(&self, acting: &Acting) -> Result<Vec<TokenRow>, Error> {
        let admin = acting.identity.has_role(Role::Admin);
        let mut tokens = self.auth.tokens(acting.org()).await?;
        tokens.retain(|token| admin || token.identity == acting.identity.id);
        Ok(tokens)
    }

    /// Makes an API token of the caller's, with the token itself (shown this once).
    /// Only a person at a browser makes tokens: a token cannot make more of itself.
    pub async fn create_token(
        &self,
        acting: &Acting,
        new: &NewToken,
        key: Option<&str>,
    ) -> Result<(TokenRow, String), Error> {
        from_session(acting)?;
        let asked = (&acting.identity.id, new);
        let request = unless_replayed!(self, acting, key, Operation::TokenCreate, &asked);
        Ok(self
            .auth
            .create_token(&acting.actor(), &acting.identity, new, self.now(), request.as_deref())
            .await?)
    }

    /// Revokes one of the caller's tokens (any, for an admin).
    pub async fn revoke_token(&self, acting: &Acting, id: &str) -> Result<(), Error> {
        acting.require(Role::Member, true)?;
        Ok(self
            .auth
            .revoke_token(&acting.actor(), &acting.identity, id, self.now())
            .await?)
    }
}
