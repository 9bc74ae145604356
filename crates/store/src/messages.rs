//! Messages to people (email and chat), made from the outbox's notifications: what is
//! not yet handed over, the messages waiting to be sent, what people chose to hear of,
//! and the groups' chat hooks; and the organization's policies of who decides.

use std::collections::BTreeMap;
use std::future::Future;

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::runs::Query;
use crate::{Error, Result};

/// A notification not yet handed to people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhanded {
    /// The organization.
    pub org: String,
    /// The notification's id.
    pub id: String,
    /// The run it is about.
    pub run_id: String,
    /// Its event type (`work_item.created`, `step.overdue`, …).
    pub event: String,
    /// The JSON body the webhooks receive.
    pub body: String,
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// To a person's email address; the recipient is an identity id.
    Email,
    /// To a group's chat hook; the recipient is a group id.
    Chat,
}

impl Channel {
    /// The name stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Email => "email",
            Channel::Chat => "chat",
        }
    }

    fn parse(text: &str) -> Result<Self> {
        match text {
            "email" => Ok(Channel::Email),
            "chat" => Ok(Channel::Chat),
            other => Err(Error::Corrupt(format!("message channel {other}"))),
        }
    }
}

/// A message to add when a notification is handed to people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// Where it goes.
    pub channel: Channel,
    /// An identity id (email) or a group id (chat).
    pub recipient: String,
    /// What it tells: `waiting`, `overdue`, `escalation` or `ended`.
    pub kind: String,
    /// Whether it waits for the recipient's daily digest.
    pub digest: bool,
    /// When it is first sent.
    pub next_at: i64,
}

/// A message taken for sending, with its notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenMessage {
    /// The organization.
    pub org: String,
    /// The notification it tells of.
    pub notification_id: String,
    /// Where it goes.
    pub channel: Channel,
    /// An identity id (email) or a group id (chat).
    pub recipient: String,
    /// `waiting`, `overdue`, `escalation` or `ended`.
    pub kind: String,
    /// Whether it is part of a daily digest.
    pub digest: bool,
    /// Attempts so far, this one included.
    pub attempts: u32,
    /// How many times it was sent before (an overdue message's reminders).
    pub sent: u32,
    /// The notification's run.
    pub run_id: String,
    /// The notification's JSON body.
    pub body: String,
    /// When the notification was made.
    pub created_at: i64,
}

/// How sending a message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageOutcome {
    /// Sent; to be sent again at the time given (a reminder), or done.
    Sent {
        /// When to send it again, if ever.
        again_at: Option<i64>,
    },
    /// Not sent; to be tried again at `at`.
    Retry {
        /// When.
        at: i64,
        /// Why it failed.
        error: String,
    },
    /// Not sent, and given up.
    Failed {
        /// Why.
        error: String,
    },
    /// Not sent because it no longer applies (the item was decided, the person left).
    Dropped {
        /// Why.
        reason: String,
    },
}

/// A message as an organization's admins see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    /// The notification it tells of.
    pub notification_id: String,
    /// The notification's run.
    pub run_id: String,
    /// Where it goes.
    pub channel: Channel,
    /// An identity id (email) or a group id (chat).
    pub recipient: String,
    /// What it tells.
    pub kind: String,
    /// `pending`, `sent`, `failed` or `dropped`.
    pub status: String,
    /// Whether it is part of a daily digest.
    pub digest: bool,
    /// Attempts of its latest sending.
    pub attempts: u32,
    /// How many times it was sent.
    pub sent: u32,
    /// Why its latest attempt failed, or why it was dropped.
    pub last_error: Option<String>,
    /// When it is next sent, while pending.
    pub next_at: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// A group's chat hook, its URL sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatHook {
    /// The group.
    pub group: String,
    /// The incoming-webhook URL, sealed with the server's key.
    pub sealed_url: String,
    /// The markup its chat reads (`slack`, `markdown`); `None` for a hook set before
    /// kinds were told, read by its URL.
    pub kind: Option<String>,
    /// When it was set.
    pub created_at: i64,
}

/// Reads and the sending loop's writes of messages to people.
pub trait Messages {
    /// Up to `limit` notifications not yet handed to people, oldest first, across
    /// organizations.
    fn unhanded(&self, limit: u32) -> impl Future<Output = Result<Vec<Unhanded>>> + Send;

    /// Marks a notification handed over and adds its `messages`, in one transaction;
    /// nothing when it was already handed over.
    fn hand_over(
        &self,
        org: &str,
        notification_id: &str,
        messages: &[NewMessage],
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The organizations with messages due at `now`, the one whose oldest due message
    /// has waited longest first, at most `limit`: a sweep across organizations, so a
    /// pass can share its sends between them.
    fn due_message_organizations(&self, now: i64, limit: u32) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Takes up to `limit` of `org`'s pending messages due at `now`, oldest first, for
    /// sending: each counts one more attempt and is hidden from other loops until
    /// `hold_until`; concurrent callers never take the same message. A recipient's
    /// daily digest is taken whole.
    fn take_messages(
        &self,
        org: &str,
        now: i64,
        hold_until: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TakenMessage>>> + Send;

    /// Records how sending `message` ended.
    fn settle_message(
        &self,
        message: &TakenMessage,
        outcome: &MessageOutcome,
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// What every identity of the organization chose (JSON objects by identity id; the
    /// organization's defaults under `""`).
    fn message_choices(&self, org: &str) -> impl Future<Output = Result<BTreeMap<String, String>>> + Send;

    /// The organization's chat hooks.
    fn chat_hooks(&self, org: &str) -> impl Future<Output = Result<Vec<ChatHook>>> + Send;

    /// The organization's latest messages, newest first.
    fn messages(&self, org: &str, limit: u32) -> impl Future<Output = Result<Vec<MessageRecord>>> + Send;

    /// The organization's policies beyond the protocol (a JSON object), if it set any.
    fn org_policies(&self, org: &str) -> impl Future<Output = Result<Option<String>>> + Send;
}

/// Changes to what people chose and to chat hooks.
pub trait MessagesTx {
    /// Replaces what `identity` chose (`""`: the organization's defaults).
    fn put_message_choices(
        &mut self,
        org: &str,
        identity: &str,
        choices: &str,
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Replaces the organization's policies (a JSON object).
    fn put_org_policies(&mut self, org: &str, policies: &str, now: i64) -> impl Future<Output = Result<()>> + Send;

    /// Sets a group's chat hook, replacing any it had.
    fn put_chat_hook(&mut self, org: &str, hook: &ChatHook) -> impl Future<Output = Result<()>> + Send;

    /// Removes a group's chat hook; whether it had one. Its messages not yet sent are
    /// dropped.
    fn remove_chat_hook(&mut self, org: &str, group: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;
}

pub(crate) async fn unhanded(connection: &mut AnyConnection, limit: u32) -> Result<Vec<Unhanded>> {
    let rows = sqlx::query(
        "/* all organizations: the message loop finds what is new everywhere */ \
         SELECT org_id, id, run_id, event, body FROM notifications \
         WHERE handed_at IS NULL ORDER BY created_at LIMIT $1",
    )
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Unhanded {
                org: row.try_get("org_id")?,
                id: row.try_get("id")?,
                run_id: row.try_get("run_id")?,
                event: row.try_get("event")?,
                body: row.try_get("body")?,
            })
        })
        .collect()
}

pub(crate) async fn hand_over(
    connection: &mut AnyConnection,
    org: &str,
    notification_id: &str,
    messages: &[NewMessage],
    now: i64,
) -> Result<()> {
    // Marked first: of two loops handing the same notification over, the second waits
    // on the row and then finds it handed.
    let marked =
        sqlx::query("UPDATE notifications SET handed_at = $3 WHERE org_id = $1 AND id = $2 AND handed_at IS NULL")
            .bind(org)
            .bind(notification_id)
            .bind(now)
            .execute(&mut *connection)
            .await?;
    if marked.rows_affected() == 0 {
        return Ok(());
    }
    for message in messages {
        sqlx::query(
            "INSERT INTO messages (org_id, notification_id, channel, recipient, kind, status, digest, attempts, \
             sent, next_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, 0, 0, $7, $8) \
             ON CONFLICT (org_id, notification_id, channel, recipient) DO NOTHING",
        )
        .bind(org)
        .bind(notification_id)
        .bind(message.channel.as_str())
        .bind(&message.recipient)
        .bind(&message.kind)
        .bind(i64::from(message.digest))
        .bind(message.next_at)
        .bind(now)
        .execute(&mut *connection)
        .await?;
    }
    Ok(())
}

/// The key of a message.
type Key = (String, String, String);

pub(crate) async fn due_message_organizations(
    connection: &mut AnyConnection,
    now: i64,
    limit: u32,
) -> Result<Vec<String>> {
    let sweep = "/* all organizations: the message loop finds which organizations have messages due */ \
                 SELECT org_id FROM messages WHERE status = 'pending' AND next_at <= $1 \
                 GROUP BY org_id ORDER BY MIN(next_at), org_id LIMIT $2";
    crate::outbox::due_organizations(connection, sweep, now, limit).await
}

pub(crate) async fn take_messages(
    connection: &mut AnyConnection,
    org: &str,
    now: i64,
    hold_until: i64,
    limit: u32,
) -> Result<Vec<TakenMessage>> {
    let due = sqlx::query(
        "SELECT notification_id, channel, recipient, digest FROM messages \
         WHERE org_id = $1 AND status = 'pending' AND next_at <= $2 ORDER BY next_at LIMIT $3",
    )
    .bind(org)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(&mut *connection)
    .await?;
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let mut keys: Vec<Key> = Vec::with_capacity(due.len());
    let mut digests: Vec<String> = Vec::new();
    for row in &due {
        let recipient: String = row.try_get("recipient")?;
        if row.try_get::<i64, _>("digest")? != 0 && !digests.contains(&recipient) {
            // The rest of the digest comes with it, whatever the limit.
            digests.push(recipient.clone());
        }
        keys.push((row.try_get("notification_id")?, row.try_get("channel")?, recipient));
    }
    take_of_organization(connection, org, &keys, &digests, now, hold_until).await
}

async fn take_of_organization(
    connection: &mut AnyConnection,
    org: &str,
    keys: &[Key],
    digests: &[String],
    now: i64,
    hold_until: i64,
) -> Result<Vec<TakenMessage>> {
    let mut take = Query::new("");
    let org_bind = take.text(org);
    let now_bind = take.int(now);
    let hold_bind = take.int(hold_until);
    let listed = key_rows(&mut take, keys);
    let digest_of = if digests.is_empty() {
        String::new()
    } else {
        let recipients = digests
            .iter()
            .map(|recipient| take.text(recipient))
            .collect::<Vec<_>>()
            .join(", ");
        format!(" OR (digest = 1 AND recipient IN ({recipients}))")
    };
    take.push(&format!(
        "UPDATE messages SET next_at = {hold_bind}, attempts = attempts + 1, updated_at = {now_bind} \
         WHERE org_id = {org_bind} AND status = 'pending' AND next_at <= {now_bind} \
         AND ((notification_id, channel, recipient) IN ({listed}){digest_of}) \
         RETURNING notification_id, channel, recipient"
    ));
    let rows = take.fetch(&mut *connection).await?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut read = Query::new("");
    let org_bind = read.text(org);
    let taken = rows
        .iter()
        .map(|row| {
            Ok((
                row.try_get("notification_id")?,
                row.try_get("channel")?,
                row.try_get("recipient")?,
            ))
        })
        .collect::<Result<Vec<Key>>>()?;
    let listed = key_rows(&mut read, &taken);
    read.push(&format!(
        "SELECT m.org_id, m.notification_id, m.channel, m.recipient, m.kind, m.digest, m.attempts, m.sent, \
         n.run_id, n.body, n.created_at FROM messages m \
         JOIN notifications n ON n.org_id = m.org_id AND n.id = m.notification_id \
         WHERE m.org_id = {org_bind} AND (m.notification_id, m.channel, m.recipient) IN ({listed}) \
         ORDER BY n.created_at, m.notification_id"
    ));
    read.fetch(connection).await?.iter().map(taken_message).collect()
}

/// `($n, $m, $k), …` for message keys.
fn key_rows(query: &mut Query, keys: &[Key]) -> String {
    query.text_rows(
        keys.iter()
            .map(|(notification, channel, recipient)| [notification.as_str(), channel.as_str(), recipient.as_str()]),
    )
}

fn taken_message(row: &AnyRow) -> Result<TakenMessage> {
    Ok(TakenMessage {
        org: row.try_get("org_id")?,
        notification_id: row.try_get("notification_id")?,
        channel: Channel::parse(&row.try_get::<String, _>("channel")?)?,
        recipient: row.try_get("recipient")?,
        kind: row.try_get("kind")?,
        digest: row.try_get::<i64, _>("digest")? != 0,
        attempts: count(row.try_get("attempts")?)?,
        sent: count(row.try_get("sent")?)?,
        run_id: row.try_get("run_id")?,
        body: row.try_get("body")?,
        created_at: row.try_get("created_at")?,
    })
}

fn count(value: i64) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::Corrupt(format!("message count {value}")))
}

pub(crate) async fn settle_message(
    connection: &mut AnyConnection,
    message: &TakenMessage,
    outcome: &MessageOutcome,
    now: i64,
) -> Result<()> {
    // $5 status, $6 next_at, $7 error; a reminder due again starts its attempts afresh.
    let (status, next_at, error, sent, attempts_reset) = match outcome {
        MessageOutcome::Sent { again_at: Some(at) } => ("pending", *at, None, 1, true),
        MessageOutcome::Sent { again_at: None } => ("sent", now, None, 1, false),
        MessageOutcome::Retry { at, error } => ("pending", *at, Some(error.as_str()), 0, false),
        MessageOutcome::Failed { error } => ("failed", now, Some(error.as_str()), 0, false),
        MessageOutcome::Dropped { reason } => ("dropped", now, Some(reason.as_str()), 0, false),
    };
    let attempts = if attempts_reset { "0" } else { "attempts" };
    sqlx::query(&format!(
        "UPDATE messages SET status = $5, next_at = $6, last_error = $7, sent = sent + $8, \
         attempts = {attempts}, updated_at = $9 \
         WHERE org_id = $1 AND notification_id = $2 AND channel = $3 AND recipient = $4"
    ))
    .bind(&message.org)
    .bind(&message.notification_id)
    .bind(message.channel.as_str())
    .bind(&message.recipient)
    .bind(status)
    .bind(next_at)
    .bind(error)
    .bind(sent)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn message_choices(connection: &mut AnyConnection, org: &str) -> Result<BTreeMap<String, String>> {
    let rows = sqlx::query("SELECT identity_id, choices FROM message_choices WHERE org_id = $1")
        .bind(org)
        .fetch_all(connection)
        .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("identity_id")?, row.try_get("choices")?)))
        .collect()
}

pub(crate) async fn chat_hooks(connection: &mut AnyConnection, org: &str) -> Result<Vec<ChatHook>> {
    let rows =
        sqlx::query("SELECT group_id, url, kind, created_at FROM chat_hooks WHERE org_id = $1 ORDER BY group_id")
            .bind(org)
            .fetch_all(connection)
            .await?;
    rows.iter()
        .map(|row| {
            Ok(ChatHook {
                group: row.try_get("group_id")?,
                sealed_url: row.try_get("url")?,
                kind: row.try_get("kind")?,
                created_at: row.try_get("created_at")?,
            })
        })
        .collect()
}

pub(crate) async fn messages(connection: &mut AnyConnection, org: &str, limit: u32) -> Result<Vec<MessageRecord>> {
    let rows = sqlx::query(
        "SELECT m.notification_id, n.run_id, m.channel, m.recipient, m.kind, m.status, m.digest, m.attempts, \
         m.sent, m.last_error, m.next_at, m.updated_at FROM messages m \
         JOIN notifications n ON n.org_id = m.org_id AND n.id = m.notification_id \
         WHERE m.org_id = $1 ORDER BY m.updated_at DESC, m.notification_id DESC, m.channel, m.recipient LIMIT $2",
    )
    .bind(org)
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(MessageRecord {
                notification_id: row.try_get("notification_id")?,
                run_id: row.try_get("run_id")?,
                channel: Channel::parse(&row.try_get::<String, _>("channel")?)?,
                recipient: row.try_get("recipient")?,
                kind: row.try_get("kind")?,
                status: row.try_get("status")?,
                digest: row.try_get::<i64, _>("digest")? != 0,
                attempts: count(row.try_get("attempts")?)?,
                sent: count(row.try_get("sent")?)?,
                last_error: row.try_get("last_error")?,
                next_at: row.try_get("next_at")?,
                updated_at: row.try_get("updated_at")?,
            })
        })
        .collect()
}

pub(crate) async fn put_message_choices(
    connection: &mut AnyConnection,
    org: &str,
    identity: &str,
    choices: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO message_choices (org_id, identity_id, choices, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (org_id, identity_id) DO UPDATE SET choices = excluded.choices, updated_at = excluded.updated_at",
    )
    .bind(org)
    .bind(identity)
    .bind(choices)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn org_policies(connection: &mut AnyConnection, org: &str) -> Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT policies FROM org_policies WHERE org_id = $1")
            .bind(org)
            .fetch_optional(connection)
            .await?,
    )
}

pub(crate) async fn put_org_policies(
    connection: &mut AnyConnection,
    org: &str,
    policies: &str,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO org_policies (org_id, policies, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (org_id) DO UPDATE SET policies = excluded.policies, updated_at = excluded.updated_at",
    )
    .bind(org)
    .bind(policies)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn put_chat_hook(connection: &mut AnyConnection, org: &str, hook: &ChatHook) -> Result<()> {
    sqlx::query(
        "INSERT INTO chat_hooks (org_id, group_id, url, kind, created_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (org_id, group_id) DO UPDATE SET url = excluded.url, kind = excluded.kind, \
         created_at = excluded.created_at",
    )
    .bind(org)
    .bind(&hook.group)
    .bind(&hook.sealed_url)
    .bind(hook.kind.as_deref())
    .bind(hook.created_at)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn remove_chat_hook(connection: &mut AnyConnection, org: &str, group: &str, now: i64) -> Result<bool> {
    let removed = sqlx::query("DELETE FROM chat_hooks WHERE org_id = $1 AND group_id = $2")
        .bind(org)
        .bind(group)
        .execute(&mut *connection)
        .await?;
    sqlx::query(
        "UPDATE messages SET status = 'dropped', last_error = 'chat hook removed', updated_at = $3 \
         WHERE org_id = $1 AND channel = 'chat' AND recipient = $2 AND status = 'pending'",
    )
    .bind(org)
    .bind(group)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(removed.rows_affected() == 1)
}

impl Messages for crate::SqlStore {
    async fn unhanded(&self, limit: u32) -> Result<Vec<Unhanded>> {
        unhanded(&mut *self.lend().await?, limit).await
    }

    async fn hand_over(&self, org: &str, notification_id: &str, messages: &[NewMessage], now: i64) -> Result<()> {
        let mut tx = self.lent_tx().await?;
        hand_over(&mut tx, org, notification_id, messages, now).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn due_message_organizations(&self, now: i64, limit: u32) -> Result<Vec<String>> {
        due_message_organizations(&mut *self.lend().await?, now, limit).await
    }

    async fn take_messages(&self, org: &str, now: i64, hold_until: i64, limit: u32) -> Result<Vec<TakenMessage>> {
        take_messages(&mut *self.lend().await?, org, now, hold_until, limit).await
    }

    async fn settle_message(&self, message: &TakenMessage, outcome: &MessageOutcome, now: i64) -> Result<()> {
        settle_message(&mut *self.lend().await?, message, outcome, now).await
    }

    async fn message_choices(&self, org: &str) -> Result<BTreeMap<String, String>> {
        message_choices(&mut *self.lend().await?, org).await
    }

    async fn chat_hooks(&self, org: &str) -> Result<Vec<ChatHook>> {
        chat_hooks(&mut *self.lend().await?, org).await
    }

    async fn messages(&self, org: &str, limit: u32) -> Result<Vec<MessageRecord>> {
        messages(&mut *self.lend().await?, org, limit).await
    }

    async fn org_policies(&self, org: &str) -> Result<Option<String>> {
        org_policies(&mut *self.lend().await?, org).await
    }
}

impl MessagesTx for crate::SqlTx {
    async fn put_message_choices(&mut self, org: &str, identity: &str, choices: &str, now: i64) -> Result<()> {
        put_message_choices(self.connection(), org, identity, choices, now).await
    }

    async fn put_org_policies(&mut self, org: &str, policies: &str, now: i64) -> Result<()> {
        put_org_policies(self.connection(), org, policies, now).await
    }

    async fn put_chat_hook(&mut self, org: &str, hook: &ChatHook) -> Result<()> {
        put_chat_hook(self.connection(), org, hook).await
    }

    async fn remove_chat_hook(&mut self, org: &str, group: &str, now: i64) -> Result<bool> {
        remove_chat_hook(self.connection(), org, group, now).await
    }
}
