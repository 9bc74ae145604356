//! Messages to people: each notification of the outbox, handed over to the people it
//! concerns (by email, as each chose) and to the chat hooks of the groups concerned,
//! then sent with retries, reminders while an item stays overdue, and daily digests.
//!
//! Nothing here is on a write's path: a write adds its notification as before, and
//! this loop (beside the webhook loop) does the rest, so a slow or refusing SMTP
//! server delays messages and blocks no write. A message is checked again when it is
//! sent: one about an item already decided, or to someone who left the organization,
//! is dropped.

mod chat;
mod choices;
mod hooks;
mod letters;
mod mail;
mod medium;
mod recipients;
mod sending;
mod settings;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentprocess_store::{Messages as _, Store as _, Unhanded};
use tokio_util::sync::CancellationToken;

use crate::fair::Sends;
use crate::scheduler::after_failure;
use crate::{Service, WebhookSettings, millis};

pub use chat::ChatKind;
pub(crate) use choices::Chosen;
pub use choices::{Choice, Choices, LONGEST_REMINDER_HOURS, MessageKind, OrgMessageSettings};
pub use hooks::ChatHookView;
pub use mail::MailSettings;

/// The page where a person chooses what they hear of.
pub(crate) fn settings_url(public_url: &str) -> String {
    format!("{}/account#messages", public_url.trim_end_matches('/'))
}

impl Service {
    /// Hands notifications over to people and sends their messages until `stop` is
    /// cancelled; sends under way finish first. Without `mail` no email is sent (chat
    /// hooks still are). Chat posts have the webhooks' timeouts, email the SMTP
    /// server's; retries are the webhooks', and so is how sends are shared between
    /// organizations (the `fair` module).
    pub async fn run_messages(
        self: Arc<Self>,
        settings: WebhookSettings,
        mail: Option<MailSettings>,
        stop: CancellationToken,
    ) {
        let mail_timeout = mail.as_ref().map_or(MailSettings::DEFAULT_TIMEOUT, |mail| mail.timeout);
        let mailer = mail.and_then(|mail| match mail.mailer() {
            Ok(mailer) => Some(mailer),
            Err(error) => {
                tracing::error!(%error, "no mailer: email is not sent");
                None
            }
        });
        let chat = match chat::Chat::new(&settings, self.settings.plain_http_hooks) {
            Ok(chat) => chat,
            Err(error) => {
                tracing::error!(%error, "no HTTP client: messages are not sent");
                return;
            }
        };
        let mut sends = Sends::new(settings.concurrency, settings.per_organization);
        let sender = Arc::new(sending::Sender {
            mailer,
            mail_timeout,
            chat,
            settings,
        });
        loop {
            let handed = self.hand_over_pass(&sender).await;
            let sent = self.message_pass(&sender, &mut sends).await;
            let batch = sender.settings.batch as usize;
            let poll = sender.settings.poll;
            let pause = match (handed, sent) {
                (Err(error), _) | (_, Err(error)) => after_failure("message pass", &error, poll),
                (Ok(handed), Ok(_)) if handed >= batch => Duration::ZERO,
                (Ok(_), Ok(pass)) => pass.pause(&sends, poll),
            };
            if !sends.rest(&stop, &self.messages_wake, pause).await {
                break;
            }
        }
        sends.finish().await;
    }

    /// Hands over what the outbox holds that is new; how many notifications.
    async fn hand_over_pass(&self, sender: &sending::Sender) -> Result<usize, String> {
        let unhanded = self
            .bounded(self.store.unhanded(sender.settings.batch))
            .await
            .ok_or_else(|| self.past_deadline())?
            .map_err(|error| error.to_string())?;
        let count = unhanded.len();
        let mut by_org: BTreeMap<String, Vec<Unhanded>> = BTreeMap::new();
        for notification in unhanded {
            by_org.entry(notification.org.clone()).or_default().push(notification);
        }
        for (org, notifications) in by_org {
            self.bounded(self.hand_over_of(&org, &notifications, sender))
                .await
                .ok_or_else(|| self.past_deadline())??;
        }
        Ok(count)
    }

    async fn hand_over_of(
        &self,
        org: &str,
        notifications: &[Unhanded],
        sender: &sending::Sender,
    ) -> Result<(), String> {
        let text = |error: agentprocess_store::Error| error.to_string();
        let identities = self.store.identities(org).await.map_err(text)?;
        let chosen = Chosen::read(org, self.store.message_choices(org).await.map_err(text)?);
        let chat_groups: Vec<String> = self
            .store
            .chat_hooks(org)
            .await
            .map_err(text)?
            .into_iter()
            .map(|hook| hook.group)
            .collect();
        let policies = self.policies(org).await.map_err(|error| error.to_string())?;
        let now = millis(self.now());
        let audience = recipients::Audience {
            identities: &identities,
            chosen: &chosen,
            chat_groups: &chat_groups,
            operators_group: &self.settings.engine.escalation_group,
            policies: &policies,
            now,
        };
        for notification in notifications {
            let body: serde_json::Value = serde_json::from_str(&notification.body).unwrap_or_default();
            let mut messages = Vec::new();
            if let Some(kind) = recipients::kind_of(&notification.event) {
                // Whoever a policy keeps from an item is read against the run as it is now.
                let read_run = match kind {
                    MessageKind::Ended => true,
                    MessageKind::Waiting | MessageKind::Overdue => !policies.all_off(),
                    MessageKind::Escalation => false,
                };
                let run = if read_run {
                    self.current_run(org, &notification.run_id).await?
                } else {
                    None
                };
                messages = audience.messages(kind, &body, run.as_ref().map(|(run, version)| (run, &**version)));
                if sender.mailer.is_none() {
                    messages.retain(|message| message.channel != agentprocess_store::Channel::Email);
                }
            }
            self.store
                .hand_over(org, &notification.id, &messages, now)
                .await
                .map_err(text)?;
        }
        Ok(())
    }

    /// A run as it is now, with its version; `None` when it is gone (purged).
    pub(crate) async fn current_run(
        &self,
        org: &str,
        run_id: &str,
    ) -> Result<Option<(agentprocess_engine::Run, Arc<agentprocess_engine::ProcessVersion>)>, String> {
        let Some(stored) = self.store.run(org, run_id).await.map_err(|error| error.to_string())? else {
            return Ok(None);
        };
        self.with_version(org, &stored)
            .await
            .map(Some)
            .map_err(|error| error.to_string())
    }
}
