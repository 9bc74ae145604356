//! Identities under the ids an operator gives them, their static MCP tokens, and every
//! identity of the organization listed: what `agentprocess admin create-identity`,
//! `issue-token`, `revoke-tokens` and `identities` call.

use agentprocess_auth::identities::NewIdentity;
use agentprocess_auth::{Acting, Identity, IdentityKind, Role};
use agentprocess_store::{Store as _, TokenRow};

use crate::agents::NewAgentToken;
use crate::{Error, Operations};

impl Operations {
    /// Every identity, agents and people, by id.
    pub async fn identities(&self, acting: &Acting) -> Result<Vec<Identity>, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self
            .service
            .store()
            .identities(acting.org())
            .await
            .map_err(agentprocess_service::Error::from)?)
    }

    /// Makes an agent or a person under the id given, in its groups (each made when
    /// missing).
    pub async fn create_identity(&self, acting: &Acting, new: &NewIdentity) -> Result<Identity, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .create_identity(&acting.actor(), acting.org(), new, self.now())
            .await?)
    }

    /// Issues an identity a static MCP token that lives until revoked, with the token
    /// itself (shown this once): an agent's as its admins issue one; a person's only
    /// by the platform, since people otherwise hold only the credentials they get by
    /// signing in themselves, and a token an admin held would let them decide as that
    /// person.
    pub async fn issue_token(&self, acting: &Acting, id: &str) -> Result<(TokenRow, String), Error> {
        acting.require(Role::Admin, true)?;
        let identity = self
            .service
            .store()
            .identity(acting.org(), id)
            .await
            .map_err(agentprocess_service::Error::from)?
            .ok_or_else(|| Error::not_found(format!("there is no identity {id:?}")))?;
        match identity.kind {
            IdentityKind::Agent => {
                self.create_agent_token(acting, id, &NewAgentToken::default(), None)
                    .await
            }
            IdentityKind::Person => {
                acting.require_platform()?;
                Ok(self
                    .auth
                    .create_person_token(&acting.actor(), acting.org(), id, self.now())
                    .await?)
            }
        }
    }

    /// Revokes every token of an identity; how many.
    pub async fn revoke_tokens(&self, acting: &Acting, id: &str) -> Result<u64, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .revoke_identity_tokens(&acting.actor(), acting.org(), id, self.now())
            .await?)
    }
}
