//! The audit log: who did what, when, from where. Append-only: the store offers no
//! way to change or remove an entry.

use std::sync::atomic::{AtomicU64, Ordering};

use agentprocess_store::{AuditFilter, AuditRow, Directory, DirectoryTx};
use serde_json::{Map, Value};

use crate::secrets::random_bytes;

/// Who acts, and from which address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The identity id, or `anonymous` for someone not signed in.
    pub id: String,
    /// The caller's network address, when known.
    pub address: Option<String>,
}

impl Actor {
    /// Someone not (yet) signed in.
    pub fn anonymous(address: Option<String>) -> Self {
        Self {
            id: "anonymous".to_owned(),
            address,
        }
    }
}

/// Declares [`AuditEvent`] from one table: each variant with its spelling, so the
/// enum, [`AuditEvent::as_str`] and [`AuditEvent::ALL`] cannot drift apart.
macro_rules! audit_events {
    ($($(#[$doc:meta])* $variant:ident => $spelled:literal,)*) => {
        /// What an entry records: every kind the log holds, spelled as the log and its
        /// filter spell them (`kind` of `GET /api/v1/audit`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum AuditEvent {
            $($(#[$doc])* $variant,)*
        }

        impl AuditEvent {
            /// Every kind, for listings and tests.
            pub const ALL: &[AuditEvent] = &[$(AuditEvent::$variant,)*];

            /// The kind as the log spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AuditEvent::$variant => $spelled,)*
                }
            }
        }
    };
}

audit_events! {
    /// An admin made an OAuth client for an agent. (`agent.client_created`)
    AgentClientCreated => "agent.client_created",
    /// An agent's OAuth client was revoked. (`agent.client_revoked`)
    AgentClientRevoked => "agent.client_revoked",
    /// A secret was added to an agent's client. (`agent.client_secret_added`)
    AgentClientSecretAdded => "agent.client_secret_added",
    /// A secret of an agent's client was revoked. (`agent.client_secret_revoked`)
    AgentClientSecretRevoked => "agent.client_secret_revoked",
    /// An agent identity was made. (`agent.created`)
    AgentCreated => "agent.created",
    /// An agent was enabled again. (`agent.enabled`)
    AgentEnabled => "agent.enabled",
    /// An agent was disabled. (`agent.disabled`)
    AgentDisabled => "agent.disabled",
    /// A static MCP token was issued to an agent. (`agent.token_created`)
    AgentTokenCreated => "agent.token_created",
    /// An agent's static token was revoked. (`agent.token_revoked`)
    AgentTokenRevoked => "agent.token_revoked",
    /// An agent's static token was replaced by a new one. (`agent.token_rotated`)
    AgentTokenRotated => "agent.token_rotated",
    /// An admin made a client for people's MCP applications. (`app.created`)
    AppCreated => "app.created",
    /// A people's client was revoked. (`app.revoked`)
    AppRevoked => "app.revoked",
    /// A group's chat hook was removed. (`chat_hook.removed`)
    ChatHookRemoved => "chat_hook.removed",
    /// A group was pointed at a chat hook. (`chat_hook.set`)
    ChatHookSet => "chat_hook.set",
    /// An email domain was added to the organization. (`domain.added`)
    DomainAdded => "domain.added",
    /// An email domain was removed. (`domain.removed`)
    DomainRemoved => "domain.removed",
    /// An email domain's ownership was proven (DNS TXT). (`domain.verified`)
    DomainVerified => "domain.verified",
    /// The identity provider's claim values mapped to a group were set. (`group.claim_values_set`)
    GroupClaimValuesSet => "group.claim_values_set",
    /// A group was made. (`group.created`)
    GroupCreated => "group.created",
    /// A group was deleted. (`group.deleted`)
    GroupDeleted => "group.deleted",
    /// A group was renamed. (`group.renamed`)
    GroupRenamed => "group.renamed",
    /// A person was added to a group. (`group.member_added`)
    GroupMemberAdded => "group.member_added",
    /// A person was removed from a group. (`group.member_removed`)
    GroupMemberRemoved => "group.member_removed",
    /// Every token of an identity was revoked at once (`agentprocess admin revoke-tokens`).
    /// (`identity.tokens_revoked`)
    IdentityTokensRevoked => "identity.tokens_revoked",
    /// The organization's admins chose (lower) limits. (`limits.chosen`)
    LimitsChosen => "limits.chosen",
    /// The platform granted the organization limits in place of the defaults.
    /// (`limits.granted`)
    LimitsGranted => "limits.granted",
    /// A member's role, groups or standing changed. (`member.changed`)
    MemberChanged => "member.changed",
    /// A person was invited. (`member.invited`)
    MemberInvited => "member.invited",
    /// A person became a member at their first sign-in. (`member.provisioned`)
    MemberProvisioned => "member.provisioned",
    /// The platform issued a person a static MCP token (`agentprocess admin issue-token`).
    /// (`member.token_created`)
    MemberTokenCreated => "member.token_created",
    /// A person changed what they hear of. (`messages.chosen`)
    MessagesChosen => "messages.chosen",
    /// The organization's settings of messages were changed. (`messages.settings_changed`)
    MessagesSettingsChanged => "messages.settings_changed",
    /// A person consented to a client. (`oauth.consented`)
    OauthConsented => "oauth.consented",
    /// An access token for `/mcp` was issued. (`oauth.token_issued`)
    OauthTokenIssued => "oauth.token_issued",
    /// A refresh or access token was revoked. (`oauth.token_revoked`)
    OauthTokenRevoked => "oauth.token_revoked",
    /// The organization's settings changed. (`organization.changed`)
    OrganizationChanged => "organization.changed",
    /// The organization was signed up, or made by the platform. (`organization.created`)
    OrganizationCreated => "organization.created",
    /// The platform sealed the organization's secrets again with the current key.
    /// (`organization.resealed`)
    OrganizationResealed => "organization.resealed",
    /// The organization's identity provider changed. (`organization.sign_in_changed`)
    OrganizationSignInChanged => "organization.sign_in_changed",
    /// A draft's agent steps were bound to agents. (`process.agents_bound`)
    ProcessAgentsBound => "process.agents_bound",
    /// A binding of a draft's agent steps was removed. (`process.agents_unbound`)
    ProcessAgentsUnbound => "process.agents_unbound",
    /// A process was imported as a draft. (`process.imported`)
    ProcessImported => "process.imported",
    /// A version was published. (`process.published`)
    ProcessPublished => "process.published",
    /// A process role was bound to a group. (`process.role_bound`)
    ProcessRoleBound => "process.role_bound",
    /// An older version was closed to new runs again. (`process.version_closed`)
    ProcessVersionClosed => "process.version_closed",
    /// A version was kept open to new runs once newer ones are published. (`process.version_kept_open`)
    ProcessVersionKeptOpen => "process.version_kept_open",
    /// A run was cancelled. (`run.cancelled`)
    RunCancelled => "run.cancelled",
    /// A person decided a work item. (`run.decided`)
    RunDecided => "run.decided",
    /// A sign-in failed at the callback. (`signin.failed`)
    SigninFailed => "signin.failed",
    /// The organization's policies of who decides were changed. (`policies.changed`)
    PoliciesChanged => "policies.changed",
    /// A person signed in. (`signin.succeeded`)
    SigninSucceeded => "signin.succeeded",
    /// An API token was made. (`token.created`)
    TokenCreated => "token.created",
    /// An API token was revoked. (`token.revoked`)
    TokenRevoked => "token.revoked",
    /// A webhook endpoint was added. (`webhook.added`)
    WebhookAdded => "webhook.added",
    /// A webhook delivery was sent again. (`webhook.redelivered`)
    WebhookRedelivered => "webhook.redelivered",
    /// A webhook endpoint was removed. (`webhook.removed`)
    WebhookRemoved => "webhook.removed",
}

impl std::fmt::Display for AuditEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Orders the entries one process appends within one millisecond.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// An entry to append.
pub fn entry(actor: &Actor, kind: AuditEvent, target: Option<&str>, detail: Map<String, Value>, at: i64) -> AuditRow {
    let suffix: String = random_bytes::<4>().iter().map(|byte| format!("{byte:02x}")).collect();
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed) % 1_000_000_000_000;
    AuditRow {
        // Zero-padded milliseconds first, so ids sort by time; then this process's
        // sequence, so entries of one transaction keep their order; then a random part,
        // so two processes never make the same id.
        id: format!("{at:015}-{sequence:012}-{suffix}"),
        at,
        actor: actor.id.clone(),
        kind: kind.as_str().to_owned(),
        target: target.map(str::to_owned),
        detail: Value::Object(detail).to_string(),
        address: actor.address.clone(),
    }
}

/// Appends one entry inside a transaction.
pub(crate) async fn append(
    tx: &mut impl DirectoryTx,
    org: &str,
    actor: &Actor,
    kind: AuditEvent,
    target: Option<&str>,
    detail: Map<String, Value>,
    at: i64,
) -> Result<(), agentprocess_store::Error> {
    tx.append_audit(org, &entry(actor, kind, target, detail, at)).await
}

/// A JSON object from pairs, for an entry's detail.
pub fn detail<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

impl crate::Auth {
    /// Records an action taken elsewhere (publishing, webhooks, cancelling a run), in
    /// a transaction of its own, after that action committed.
    pub async fn record(
        &self,
        org: &str,
        actor: &Actor,
        kind: AuditEvent,
        target: Option<&str>,
        detail: Map<String, Value>,
        now: jiff::Timestamp,
    ) -> Result<(), crate::Error> {
        let mut tx = agentprocess_store::Store::begin(&self.store).await?;
        append(&mut tx, org, actor, kind, target, detail, crate::millis(now)).await?;
        agentprocess_store::StoreTx::commit(tx).await?;
        Ok(())
    }
}

impl crate::Auth {
    /// Entries of an organization's log, in order, and whether more follow.
    pub async fn audit(&self, org: &str, filter: &AuditFilter) -> Result<(Vec<AuditRow>, bool), crate::Error> {
        Ok(self.store.audit(org, filter).await?)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::AuditEvent;

    #[test]
    fn every_kind_is_spelled_once_as_subject_dot_event() {
        let spelled: HashSet<&str> = AuditEvent::ALL.iter().map(|kind| kind.as_str()).collect();
        assert_eq!(spelled.len(), AuditEvent::ALL.len(), "two kinds share a spelling");
        for kind in spelled {
            let (subject, event) = kind.split_once('.').expect("subject.event");
            assert!(
                [subject, event]
                    .iter()
                    .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_lowercase() || c == '_')),
                "{kind}"
            );
        }
    }
}
