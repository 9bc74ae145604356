//! Sending the messages that are due: each checked again against the run as it is now
//! (a decided item's messages are dropped), a recipient's daily digest as one email,
//! failures retried with the webhooks' backoff, and an overdue item's message sent
//! again as a reminder while the item stays open.

use std::sync::Arc;
use std::time::Duration;

use agentprocess_engine::{ProcessVersion, Run, StepState};
use agentprocess_store::{
    Channel, ChatHook, Directory as _, Identity, MessageOutcome, Messages as _, Role, Store as _, TakenMessage,
};

use super::chat::{Chat, kind_of, open_hook};
use super::choices::{Chosen, MessageKind};
use super::letters::{Told, chat_text, digest, letter};
use super::mail::{MailError, Mailer};
use super::medium::Said;
use super::recipients::Item;
use crate::fair::{self, Pass, Sends, hold_for};
use crate::scheduler::duration_millis;
use crate::{Policies, Service, WebhookSettings, millis};

/// What sends messages.
pub(crate) struct Sender {
    pub(crate) mailer: Option<Mailer>,
    /// The SMTP timeout (the mailer's own).
    pub(crate) mail_timeout: Duration,
    pub(crate) chat: Chat,
    pub(crate) settings: WebhookSettings,
}

impl Sender {
    /// The longest a send on `channel` may take: twice its timeout, for a chat post
    /// or an SMTP exchange, and what comes before it (reading the run).
    fn send_deadline(&self, channel: Channel) -> Duration {
        match channel {
            Channel::Chat => self.settings.send_deadline(),
            Channel::Email => self.mail_timeout.saturating_mul(2),
        }
    }

    /// How long taken messages are held: enough for the longest send of a channel
    /// in use, and recording how it went.
    fn hold(&self) -> Duration {
        let chat = self.send_deadline(Channel::Chat);
        hold_for(match self.mailer {
            Some(_) => chat.max(self.send_deadline(Channel::Email)),
            None => chat,
        })
    }
}

/// A message ready to be told: the run as it is now, and why its recipient hears of it.
struct Ready {
    run: Run,
    version: Arc<ProcessVersion>,
    step: Option<String>,
    link: String,
    why: Said,
}

/// Why a message was not sent: words its organization's admins may read, and whether
/// sending it again cannot help.
struct Unsent {
    words: String,
    for_good: bool,
}

impl From<String> for Unsent {
    fn from(words: String) -> Self {
        Self { words, for_good: false }
    }
}

impl From<&str> for Unsent {
    fn from(words: &str) -> Self {
        Self::from(words.to_owned())
    }
}

/// What one organization's messages are checked and written with, read once a pass.
struct Organization {
    id: String,
    name: String,
    identities: Vec<Identity>,
    chosen: Chosen,
    hooks: Vec<ChatHook>,
    policies: Policies,
}

impl Service {
    /// Takes each organization's share of the messages due now and starts their
    /// sends, waiting for none of them.
    pub(super) async fn message_pass(
        self: &Arc<Self>,
        sender: &Arc<Sender>,
        sends: &mut Sends,
    ) -> Result<Pass, String> {
        let now = millis(self.now());
        let hold_until = now.saturating_add(duration_millis(sender.hold()));
        let listed = sender
            .settings
            .batch
            .saturating_add(u32::try_from(sends.busiest()).unwrap_or(u32::MAX));
        let organizations = self
            .bounded(self.store.due_message_organizations(now, listed))
            .await
            .ok_or_else(|| self.past_deadline())?
            .map_err(|error| error.to_string())?;
        sends
            .pass(organizations, |org, room| async move {
                let taken = self
                    .bounded(self.store.take_messages(&org, now, hold_until, room))
                    .await
                    .ok_or_else(|| self.past_deadline())?
                    .map_err(|error| error.to_string())?;
                let rows = taken.len();
                if taken.is_empty() {
                    return Ok((0, Vec::new()));
                }
                let organization = match self.bounded(self.organization_of(&org)).await {
                    Some(Ok(organization)) => Arc::new(organization),
                    // Its messages are taken again when their hold ends.
                    Some(Err(error)) => {
                        tracing::warn!(%error, org = %org, "messages not sent");
                        return Ok((rows, Vec::new()));
                    }
                    None => {
                        tracing::warn!(org = %org, "messages not sent: past the deadline");
                        return Ok((rows, Vec::new()));
                    }
                };
                let started = bundles(taken)
                    .into_iter()
                    .map(|bundle| fair::Send {
                        keys: bundle.iter().map(key_of).collect(),
                        work: Box::pin(Arc::clone(self).send_and_settle(
                            Arc::clone(sender),
                            Arc::clone(&organization),
                            bundle,
                        )),
                    })
                    .collect();
                Ok((rows, started))
            })
            .await
    }

    /// Sends one bundle within its deadline, and records how each of its messages
    /// went.
    async fn send_and_settle(
        self: Arc<Self>,
        sender: Arc<Sender>,
        organization: Arc<Organization>,
        bundle: Vec<TakenMessage>,
    ) {
        let Some(channel) = bundle.first().map(|first| first.channel) else {
            return;
        };
        let deadline = sender.send_deadline(channel);
        let outcomes = match tokio::time::timeout(deadline, self.send_bundle(&sender, &organization, &bundle)).await {
            Ok(Ok(outcomes)) => outcomes,
            // Taken again when the hold ends.
            Ok(Err(error)) => {
                tracing::warn!(%error, "messages not sent");
                return;
            }
            Err(_) => {
                tracing::warn!(org = %organization.id, "messages not sent within their deadline of {deadline:?}");
                return;
            }
        };
        let at = millis(self.now());
        for (message, outcome) in bundle.iter().zip(&outcomes) {
            crate::observe::message(message.channel, outcome);
            let settled = match self.bounded(self.store.settle_message(message, outcome, at)).await {
                Some(settled) => settled.map_err(|error| error.to_string()),
                None => Err(self.past_deadline()),
            };
            if let Err(error) = settled {
                tracing::warn!(%error, notification = %message.notification_id, "message outcome not recorded");
            }
        }
    }

    /// What `org`'s messages are checked and written with.
    async fn organization_of(&self, org: &str) -> Result<Organization, String> {
        let text = |error: agentprocess_store::Error| error.to_string();
        Ok(Organization {
            id: org.to_owned(),
            name: self
                .store
                .organization(org)
                .await
                .map_err(text)?
                .map_or_else(|| org.to_owned(), |organization| organization.name),
            identities: self.store.identities(org).await.map_err(text)?,
            chosen: Chosen::read(org, self.store.message_choices(org).await.map_err(text)?),
            hooks: self.store.chat_hooks(org).await.map_err(text)?,
            policies: self.policies(org).await.map_err(|error| error.to_string())?,
        })
    }

    /// Sends one bundle (a message, or a recipient's digest); an outcome per message.
    async fn send_bundle(
        &self,
        sender: &Sender,
        organization: &Organization,
        bundle: &[TakenMessage],
    ) -> Result<Vec<MessageOutcome>, String> {
        let Some(first) = bundle.first() else {
            return Ok(Vec::new());
        };
        let mut outcomes: Vec<Option<MessageOutcome>> = Vec::with_capacity(bundle.len());
        let mut ready: Vec<(usize, Ready)> = Vec::new();
        for (index, message) in bundle.iter().enumerate() {
            match self.ready(message, organization).await? {
                Ok(one) => {
                    outcomes.push(None);
                    ready.push((index, one));
                }
                Err(reason) => outcomes.push(Some(MessageOutcome::Dropped { reason })),
            }
        }
        if !ready.is_empty() {
            let told: Vec<Told<'_>> = ready
                .iter()
                .map(|(index, one)| Told {
                    kind: MessageKind::parse(&bundle[*index].kind).unwrap_or(MessageKind::Waiting),
                    reminder: bundle[*index].sent > 0,
                    run: &one.run,
                    version: &one.version,
                    step: one.step.as_deref(),
                    link: one.link.clone(),
                    why: one.why.clone(),
                })
                .collect();
            let sent = self.send(sender, first, organization, &told).await;
            let now = millis(self.now());
            for ((index, one), told) in ready.iter().zip(&told) {
                let message = &bundle[*index];
                outcomes[*index] = Some(match &sent {
                    Ok(()) => MessageOutcome::Sent {
                        again_at: self.reminder_after(&organization.chosen, told, one, now),
                    },
                    Err(unsent) if unsent.for_good || message.attempts >= sender.settings.max_attempts => {
                        MessageOutcome::Failed {
                            error: unsent.words.clone(),
                        }
                    }
                    Err(unsent) => MessageOutcome::Retry {
                        at: now.saturating_add(crate::webhooks::backoff(&sender.settings, message.attempts)),
                        error: unsent.words.clone(),
                    },
                });
            }
        }
        Ok(outcomes
            .into_iter()
            .map(|outcome| {
                outcome.unwrap_or(MessageOutcome::Dropped {
                    reason: "not told".to_owned(),
                })
            })
            .collect())
    }

    /// Sends `told` to `first`'s recipient: one email (a digest when several), or a chat
    /// post.
    async fn send(
        &self,
        sender: &Sender,
        first: &TakenMessage,
        organization: &Organization,
        told: &[Told<'_>],
    ) -> Result<(), Unsent> {
        let settings = super::settings_url(&self.settings.public_url);
        let organization_name = Said::new(organization.name.clone());
        match first.channel {
            Channel::Email => {
                let mailer = sender.mailer.as_ref().ok_or("no SMTP server is configured")?;
                let identity = organization
                    .identities
                    .iter()
                    .find(|identity| identity.id == first.recipient)
                    .ok_or("the recipient is gone")?;
                let address = identity.person.as_deref().ok_or("the recipient has no email address")?;
                let (letter, id) = match told {
                    [one] => (
                        letter(one, &organization_name, &settings),
                        format!("{}.{}.{}", first.notification_id, first.recipient, first.sent),
                    ),
                    several => (
                        digest(several, &organization_name, &settings),
                        format!("digest.{}.{}", first.recipient, millis(self.now())),
                    ),
                };
                mailer
                    .send(&identity.name, address, &letter, &id, &settings)
                    .await
                    .map_err(|error| not_taken(first, error))
            }
            Channel::Chat => {
                let hook = organization
                    .hooks
                    .iter()
                    .find(|hook| hook.group == first.recipient)
                    .ok_or("the group's chat hook was removed")?;
                let url = open_hook(&self.settings.seal_key, &first.org, &hook.group, &hook.sealed_url)
                    .map_err(|error| format!("the hook's URL cannot be opened: {error}"))?;
                let medium = kind_of(hook, &url).medium();
                for one in told {
                    sender.chat.post(&url, &chat_text(one, medium)).await?;
                }
                Ok(())
            }
        }
    }

    /// `message` ready to be told, or why it no longer applies; an error when the run
    /// cannot be read now (the message is taken again later).
    async fn ready(
        &self,
        message: &TakenMessage,
        organization: &Organization,
    ) -> Result<Result<Ready, String>, String> {
        let Some((run, version)) = self.current_run(&message.org, &message.run_id).await? else {
            return Ok(Err("the run is gone".to_owned()));
        };
        let body: serde_json::Value = serde_json::from_str(&message.body).unwrap_or_default();
        let kind = MessageKind::parse(&message.kind).unwrap_or(MessageKind::Waiting);
        let step = body.get("step").and_then(|step| step.as_str()).map(str::to_owned);
        let item = body
            .get("workItem")
            .and_then(|item| item.get("id"))
            .and_then(|id| id.as_str())
            .map(str::to_owned);
        if let Err(reason) = still_open(&run, kind, step.as_deref(), item.as_deref()) {
            return Ok(Err(reason));
        }
        let why = match message.channel {
            Channel::Chat => Said::new(format!("this channel follows the {} group", message.recipient)),
            Channel::Email => {
                let Some(identity) = organization
                    .identities
                    .iter()
                    .find(|identity| identity.id == message.recipient && identity.deactivated_at.is_none())
                else {
                    return Ok(Err(format!("{} is no longer a member", message.recipient)));
                };
                let item = Item::of(&body, Some((&run, &version)), &organization.policies);
                match self.why(identity, kind, item.as_ref()) {
                    Some(why) => Said::new(why),
                    None => return Ok(Err(format!("{} no longer may decide it", message.recipient))),
                }
            }
        };
        let public_url = &self.settings.public_url;
        let link = match &item {
            Some(item) => crate::notify::item_url(public_url, &run.id, item),
            None => format!("{}/runs/{}", public_url.trim_end_matches('/'), run.id),
        };
        Ok(Ok(Ready {
            run,
            version,
            step,
            link,
            why,
        }))
    }

    /// Why `identity` hears of a message of `kind` about `item`; `None` when they no
    /// longer should (left the group, no longer an operator, kept by a policy).
    fn why(&self, identity: &Identity, kind: MessageKind, item: Option<&Item<'_>>) -> Option<String> {
        let operator = identity.has_role(Role::Operator);
        let assigned = item.and_then(|item| item.decider_because(identity, &self.settings.engine.escalation_group));
        match kind {
            MessageKind::Waiting => assigned,
            MessageKind::Overdue => assigned.or_else(|| operator.then(|| "you are an operator".to_owned())),
            MessageKind::Escalation => operator.then(|| "you are an operator".to_owned()),
            MessageKind::Ended => Some("you started the run".to_owned()),
        }
    }

    /// When an overdue item's message is sent again: after the organization's cadence,
    /// while reminders are on.
    fn reminder_after(&self, chosen: &Chosen, told: &Told<'_>, ready: &Ready, now: i64) -> Option<i64> {
        let hours = chosen.organization.remind_every_hours;
        (told.kind == MessageKind::Overdue && hours > 0 && ready.step.is_some())
            .then(|| now.saturating_add(i64::from(hours) * 3_600_000))
    }
}

/// What the organization reads of an email the mail server did not take: the class of
/// failure. The server's own reply, which names the platform's mail relay, goes to the
/// operators' logs alone.
fn not_taken(message: &TakenMessage, error: MailError) -> Unsent {
    tracing::warn!(
        org = %message.org,
        notification = %message.notification_id,
        recipient = %message.recipient,
        failure = error.failure.as_str(),
        reply = %error.detail,
        "the mail server did not take a message"
    );
    Unsent {
        words: error.failure.to_string(),
        for_good: error.failure.is_final(),
    }
}

/// Whether what a message of `kind` tells still holds of `run`: the item is still
/// open, the step still overdue, the run over for an ended run's message.
fn still_open(run: &Run, kind: MessageKind, step: Option<&str>, item: Option<&str>) -> Result<(), String> {
    if kind == MessageKind::Ended {
        return Ok(());
    }
    if run.is_over() {
        return Err("the run is over".to_owned());
    }
    let Some(step) = step.and_then(|step| run.step(step)) else {
        return Err("the step is gone".to_owned());
    };
    if let Some(item) = item
        && step.work_item.as_ref().is_none_or(|open| open.id != item)
    {
        return Err("the work item was decided".to_owned());
    }
    if kind == MessageKind::Overdue && (!step.overdue || step.state == Some(StepState::Done)) {
        return Err("the step is no longer overdue".to_owned());
    }
    Ok(())
}

/// A message's key, unique within the loop.
fn key_of(message: &TakenMessage) -> String {
    format!(
        "{}/{}/{}/{}",
        message.org,
        message.notification_id,
        message.channel.as_str(),
        message.recipient
    )
}

/// The taken messages as bundles to send: a recipient's digest messages together,
/// every other message alone.
fn bundles(taken: Vec<TakenMessage>) -> Vec<Vec<TakenMessage>> {
    let mut bundles: Vec<Vec<TakenMessage>> = Vec::new();
    for message in taken {
        let joins = bundles.iter_mut().find(|bundle| {
            message.digest
                && bundle.first().is_some_and(|first| {
                    first.digest
                        && first.org == message.org
                        && first.channel == message.channel
                        && first.recipient == message.recipient
                })
        });
        match joins {
            Some(bundle) => bundle.push(message),
            None => bundles.push(vec![message]),
        }
    }
    bundles
}
