//! Clients for the organization's people: the MCP clients or inbox apps people sign
//! in to with their own account.

use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::people_clients::NewApp;
use agentprocess_auth::{Acting, Role};
use agentprocess_store::OAuthApp;

use crate::{Error, Operations, unless_replayed};

impl Operations {
    /// Every client for people.
    pub async fn apps(&self, acting: &Acting) -> Result<Vec<OAuthApp>, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.auth.apps(acting.org()).await?)
    }

    /// Makes a client for people, with its secret when it is confidential (shown
    /// this once).
    pub async fn create_app(
        &self,
        acting: &Acting,
        new: &NewApp,
        key: Option<&str>,
    ) -> Result<(OAuthApp, Option<String>), Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::AppCreate, new);
        Ok(self
            .auth
            .create_app(&acting.actor(), acting.org(), new, self.now(), request.as_deref())
            .await?)
    }

    /// Revokes a client for people.
    pub async fn revoke_app(&self, acting: &Acting, id: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .revoke_app(&acting.actor(), acting.org(), id, self.now())
            .await?)
    }

    /// Where people are sent to sign in and consent.
    pub fn authorization_endpoint(&self) -> String {
        format!(
            "{}/oauth/authorize",
            self.service.settings().public_url.trim_end_matches('/')
        )
    }
}
