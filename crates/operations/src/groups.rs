//! The organization's groups, which processes' roles are bound to.

use agentprocess_auth::groups::NewGroup;
use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::{Acting, Role};
use agentprocess_store::Group;

use crate::{Error, Operations, unless_replayed};

/// A group's new name.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupName {
    /// Absent, the group has no name but its id.
    pub name: Option<String>,
}

/// The values of the provider's groups claim that mean a group.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimValues {
    /// Values of the groups claim that mean this group; empty, its id alone does.
    #[schema(max_items = 50)]
    pub values: Vec<String>,
}

impl Operations {
    /// Every group.
    pub async fn groups(&self, acting: &Acting) -> Result<Vec<Group>, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.auth.groups(acting.org()).await?)
    }

    /// One group.
    pub async fn group(&self, acting: &Acting, id: &str) -> Result<Group, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.auth.group(acting.org(), id).await?)
    }

    /// Makes a group.
    pub async fn create_group(&self, acting: &Acting, new: &NewGroup, key: Option<&str>) -> Result<Group, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::GroupCreate, new);
        Ok(self
            .auth
            .create_group(&acting.actor(), acting.org(), new, self.now(), request.as_deref())
            .await?)
    }

    /// Names a group, or takes its name away.
    pub async fn rename_group(&self, acting: &Acting, id: &str, name: &GroupName) -> Result<Group, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .rename_group(&acting.actor(), acting.org(), id, name.name.as_deref(), self.now())
            .await?)
    }

    /// Sets the values of the provider's groups claim that mean a group.
    pub async fn set_claim_values(&self, acting: &Acting, id: &str, values: &ClaimValues) -> Result<Group, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .set_claim_values(&acting.actor(), acting.org(), id, &values.values, self.now())
            .await?)
    }

    /// Deletes a group.
    pub async fn delete_group(&self, acting: &Acting, id: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .delete_group(&acting.actor(), acting.org(), id, self.now())
            .await?)
    }

    /// Puts a member in a group (`inside`) or takes them out.
    pub async fn set_membership(
        &self,
        acting: &Acting,
        group: &str,
        member: &str,
        inside: bool,
    ) -> Result<Group, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .set_membership(&acting.actor(), acting.org(), group, member, inside, self.now())
            .await?)
    }
}
