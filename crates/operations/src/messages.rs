//! What people hear of: each person's own choices, the organization's defaults and
//! reminders, the groups' chat hooks, and the latest messages sent; and the
//! organization's policies of who decides.

use agentprocess_auth::audit::{AuditEvent, detail};
use agentprocess_auth::{Acting, Role};
use agentprocess_service::{ChatHookView, ChatKind, Choices, OrgMessageSettings, Policies};
use agentprocess_store::MessageRecord;
use serde_json::json;

use crate::{Error, Operations};

impl Operations {
    /// The organization's settings of messages and what the caller chose.
    pub async fn message_settings(&self, acting: &Acting) -> Result<(OrgMessageSettings, Choices), Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.message_settings(acting.org(), &acting.identity.id).await?)
    }

    /// Replaces what the caller chose to hear of.
    pub async fn choose_messages(&self, acting: &Acting, choices: &Choices) -> Result<(), Error> {
        acting.require(Role::Member, true)?;
        self.service
            .set_message_choices(acting.org(), &acting.identity.id, choices)
            .await?;
        let detail = detail([("choices", json!(choices))]);
        self.record(acting, AuditEvent::MessagesChosen, &acting.identity.id, detail)
            .await
    }

    /// Replaces the organization's defaults, reminder cadence and digest hour.
    pub async fn set_message_settings(&self, acting: &Acting, settings: &OrgMessageSettings) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        self.service.set_org_message_settings(acting.org(), settings).await?;
        let detail = detail([("settings", json!(settings))]);
        let org = acting.org().to_owned();
        self.record(acting, AuditEvent::MessagesSettingsChanged, &org, detail)
            .await
    }

    /// The organization's policies of who decides.
    pub async fn policies(&self, acting: &Acting) -> Result<Policies, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.policies(acting.org()).await?)
    }

    /// Replaces the organization's policies of who decides.
    pub async fn set_policies(&self, acting: &Acting, policies: &Policies) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        self.service.set_policies(acting.org(), policies).await?;
        let detail = detail([("policies", json!(policies))]);
        let org = acting.org().to_owned();
        self.record(acting, AuditEvent::PoliciesChanged, &org, detail).await
    }

    /// The groups' chat hooks.
    pub async fn chat_hooks(&self, acting: &Acting) -> Result<Vec<ChatHookView>, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.service.admin().chat_hooks(acting.org()).await?)
    }

    /// Points a group at a chat hook whose chat reads `kind` (when not given, as its
    /// URL says).
    pub async fn set_chat_hook(
        &self,
        acting: &Acting,
        group: &str,
        url: &str,
        kind: Option<ChatKind>,
    ) -> Result<ChatHookView, Error> {
        acting.require(Role::Admin, true)?;
        let hook = self
            .service
            .admin()
            .set_chat_hook(acting.org(), group, url, kind)
            .await?;
        // The URL is the hook's credential: only its host is recorded.
        let detail = detail([("host", json!(hook.host)), ("kind", json!(hook.kind))]);
        self.record(acting, AuditEvent::ChatHookSet, group, detail).await?;
        Ok(hook)
    }

    /// Removes a group's chat hook.
    pub async fn remove_chat_hook(&self, acting: &Acting, group: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        self.service.admin().remove_chat_hook(acting.org(), group).await?;
        self.record(acting, AuditEvent::ChatHookRemoved, group, detail([]))
            .await
    }

    /// The latest messages to people, at most `limit` (1 to the service's page size).
    pub async fn messages(&self, acting: &Acting, limit: u32) -> Result<Vec<MessageRecord>, Error> {
        acting.require(Role::Admin, false)?;
        let limit = limit.clamp(1, agentprocess_service::MAX_PAGE);
        Ok(self.service.messages(acting.org(), limit).await?)
    }
}
