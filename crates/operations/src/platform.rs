//! What the platform alone does, at the command line (`agentprocess admin`, acting as
//! `agentprocess-admin`): make an organization, grant it limits in place of the
//! server's defaults, and seal its secrets again after the key is rotated. Each
//! refuses every other caller ([`Acting::require_platform`]) and is recorded in the
//! organization's audit log; no REST route or page calls them.

use agentprocess_auth::audit::{AuditEvent, detail};
use agentprocess_auth::{Acting, Role};
use agentprocess_service::{LimitValues, OrgLimits};
use agentprocess_store::Store as _;
use serde_json::json;

use crate::{Error, Operations};

/// How many organizations are read at once while resealing.
const ORGANIZATIONS_PAGE: u32 = 100;

/// What a reseal sealed again with the current key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resealed {
    /// Webhook signing secrets.
    pub webhooks: usize,
    /// Chat hook URLs.
    pub chat_hooks: usize,
    /// Identity providers' client secrets.
    pub providers: usize,
}

impl Resealed {
    fn any(self) -> bool {
        self.webhooks + self.chat_hooks + self.providers > 0
    }

    fn add(&mut self, other: Resealed) {
        self.webhooks += other.webhooks;
        self.chat_hooks += other.chat_hooks;
        self.providers += other.providers;
    }
}

impl Operations {
    /// Makes the organization `acting` names, with a display name.
    pub async fn create_organization(&self, acting: &Acting, name: &str) -> Result<(), Error> {
        acting.require_platform()?;
        let org = acting.org();
        self.service.admin().create_org(org, name).await?;
        let detail = detail([("slug", json!(org)), ("name", json!(name))]);
        self.record(acting, AuditEvent::OrganizationCreated, org, detail).await
    }

    /// Grants the organization limits in place of the server's defaults (0: no
    /// limit): those `changes` names, over what was granted before unless `reset`.
    /// Its admins may then lower them, never raise them.
    pub async fn grant_limits(&self, acting: &Acting, changes: &LimitValues, reset: bool) -> Result<OrgLimits, Error> {
        acting.require_platform()?;
        let org = acting.org();
        let limits = self.service.admin().grant_limits(org, changes, reset).await?;
        let detail = detail([("granted", json!(limits.granted)), ("reset", json!(reset))]);
        self.record(acting, AuditEvent::LimitsGranted, org, detail).await?;
        self.service.limits_changed(org);
        Ok(limits)
    }

    /// What the organization was granted and what its admins chose.
    pub async fn granted_limits(&self, acting: &Acting) -> Result<OrgLimits, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.service.admin().org_limits(acting.org()).await?)
    }

    /// Seals again with the current key what a previous key sealed (and webhook
    /// secrets kept in clear by earlier versions), in every organization, whichever
    /// `acting` names: each organization where something was resealed gets an
    /// entry. One whose values no given key opens stops it there.
    pub async fn reseal(&self, acting: &Acting) -> Result<Resealed, Error> {
        acting.require_platform()?;
        let mut total = Resealed::default();
        let mut after: Option<String> = None;
        loop {
            let orgs = self
                .service
                .store()
                .organization_ids(after.as_deref(), ORGANIZATIONS_PAGE)
                .await
                .map_err(agentprocess_service::Error::from)?;
            for org in &orgs {
                total.add(self.reseal_organization(&acting.in_org(org)).await?);
            }
            match orgs.last() {
                Some(last) if orgs.len() == ORGANIZATIONS_PAGE as usize => after = Some(last.clone()),
                _ => return Ok(total),
            }
        }
    }

    async fn reseal_organization(&self, acting: &Acting) -> Result<Resealed, Error> {
        let org = acting.org();
        let admin = self.service.admin();
        let resealed = Resealed {
            webhooks: admin.reseal_webhooks(org).await?,
            chat_hooks: admin.reseal_chat_hooks(org).await?,
            providers: usize::from(self.auth.reseal_provider(org, self.now()).await?),
        };
        if resealed.any() {
            let detail = detail([
                ("webhooks", json!(resealed.webhooks)),
                ("chatHooks", json!(resealed.chat_hooks)),
                ("providers", json!(resealed.providers)),
            ]);
            self.record(acting, AuditEvent::OrganizationResealed, org, detail)
                .await?;
        }
        Ok(resealed)
    }
}
