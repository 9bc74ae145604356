//! The organization's limits: admins may only lower one below what the server grants.

use agentprocess_auth::{Acting, Role};
use agentprocess_service::{LimitValues, LimitsReport};

use crate::{Error, Operations};

impl Operations {
    /// The limits in force, and what the organization uses.
    pub async fn limits(&self, acting: &Acting) -> Result<LimitsReport, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.organization_limits(acting.org()).await?)
    }

    /// Chooses limits at or below what the server grants.
    pub async fn choose_limits(&self, acting: &Acting, chosen: &LimitValues) -> Result<LimitsReport, Error> {
        acting.require(Role::Admin, true)?;
        let ceiling = self.service.limit_ceiling(acting.org()).await?;
        self.auth
            .choose_limits(&acting.actor(), acting.org(), chosen, &ceiling, self.now())
            .await?;
        self.service.limits_changed(acting.org());
        self.limits(acting).await
    }
}
