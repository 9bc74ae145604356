//! The organization's people.

use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::members::{Invite, MemberChange};
use agentprocess_auth::{Acting, Identity, Role};

use crate::{Error, Operations, unless_replayed};

impl Operations {
    /// Every member.
    pub async fn members(&self, acting: &Acting) -> Result<Vec<Identity>, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self.auth.members(acting.org()).await?)
    }

    /// One member: anyone may read themselves.
    pub async fn member(&self, acting: &Acting, id: &str) -> Result<Identity, Error> {
        if id != acting.identity.id {
            acting.require(Role::Operator, false)?;
        }
        Ok(self.auth.member(acting.org(), id).await?)
    }

    /// Invites a person.
    pub async fn invite(&self, acting: &Acting, invite: &Invite, key: Option<&str>) -> Result<Identity, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::MemberInvite, invite);
        Ok(self
            .auth
            .invite(&acting.actor(), acting.org(), invite, self.now(), request.as_deref())
            .await?)
    }

    /// Changes a member's role, or whether they may sign in.
    pub async fn change_member(&self, acting: &Acting, id: &str, change: &MemberChange) -> Result<Identity, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .change_member(&acting.actor(), acting.org(), id, change, self.now())
            .await?)
    }
}
