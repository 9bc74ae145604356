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

/// What an entry records: every kind the log holds, spelled as the log and its
/// filter spell them (`kind` of `GET /api/v1/audit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditEvent {
    /// An admin made an OAuth client for an agent. (`agent.client_created`)
    AgentClientCreated,
    /// An agent's OAuth client was revoked. (`agent.client_revoked`)
    AgentClientRevoked,
    /// A secret was added to an agent's client. (`agent.client_secret_added`)
    AgentClientSecretAdded,
    /// A secret of an agent's client was revoked. (`agent.client_secret_revoked`)
    AgentClientSecretRevoked,
    /// An agent identity was made. (`agent.created`)
    AgentCreated,
    /// An agent was enabled again. (`agent.enabled`)
    AgentEnabled,
    /// An agent was disabled. (`agent.disabled`)
    AgentDisabled,
    /// A static MCP token was issued to an agent. (`agent.token_created`)
    AgentTokenCreated,
    /// An agent's static token was revoked. (`agent.token_revoked`)
    AgentTokenRevoked,
    /// An agent's static token was replaced by a new one. (`agent.token_rotated`)
    AgentTokenRotated,
    /// An admin made a client for people's MCP applications. (`app.created`)
    AppCreated,
    /// A people's client was revoked. (`app.revoked`)
    AppRevoked,
    /// An email domain was added to the organization. (`domain.added`)
    DomainAdded,
    /// An email domain was removed. (`domain.removed`)
    DomainRemoved,
    /// An email domain's ownership was proven (DNS TXT). (`domain.verified`)
    DomainVerified,
    /// The identity provider's claim values mapped to a group were set. (`group.claim_values_set`)
    GroupClaimValuesSet,
    /// A group was made. (`group.created`)
    GroupCreated,
    /// A group was deleted. (`group.deleted`)
    GroupDeleted,
    /// A group was renamed. (`group.renamed`)
    GroupRenamed,
    /// A person was added to a group. (`group.member_added`)
    GroupMemberAdded,
    /// A person was removed from a group. (`group.member_removed`)
    GroupMemberRemoved,
    /// The organization's admins chose (lower) limits. (`limits.chosen`)
    LimitsChosen,
    /// A member's role, groups or standing changed. (`member.changed`)
    MemberChanged,
    /// A person was invited. (`member.invited`)
    MemberInvited,
    /// A person became a member at their first sign-in. (`member.provisioned`)
    MemberProvisioned,
    /// A person consented to a client. (`oauth.consented`)
    OauthConsented,
    /// An access token for `/mcp` was issued. (`oauth.token_issued`)
    OauthTokenIssued,
    /// A refresh or access token was revoked. (`oauth.token_revoked`)
    OauthTokenRevoked,
    /// The organization's settings changed. (`organization.changed`)
    OrganizationChanged,
    /// The organization was signed up. (`organization.created`)
    OrganizationCreated,
    /// The organization's identity provider changed. (`organization.sign_in_changed`)
    OrganizationSignInChanged,
    /// A process was imported as a draft. (`process.imported`)
    ProcessImported,
    /// A version was published. (`process.published`)
    ProcessPublished,
    /// A process role was bound to a group. (`process.role_bound`)
    ProcessRoleBound,
    /// A run was cancelled. (`run.cancelled`)
    RunCancelled,
    /// A person decided a work item. (`run.decided`)
    RunDecided,
    /// A sign-in failed at the callback. (`signin.failed`)
    SigninFailed,
    /// A person signed in. (`signin.succeeded`)
    SigninSucceeded,
    /// An API token was made. (`token.created`)
    TokenCreated,
    /// An API token was revoked. (`token.revoked`)
    TokenRevoked,
    /// A webhook endpoint was added. (`webhook.added`)
    WebhookAdded,
    /// A webhook delivery was sent again. (`webhook.redelivered`)
    WebhookRedelivered,
    /// A webhook endpoint was removed. (`webhook.removed`)
    WebhookRemoved,
}

impl AuditEvent {
    /// Every kind, for listings and tests.
    pub const ALL: [AuditEvent; 43] = [
        AuditEvent::AgentClientCreated,
        AuditEvent::AgentClientRevoked,
        AuditEvent::AgentClientSecretAdded,
        AuditEvent::AgentClientSecretRevoked,
        AuditEvent::AgentCreated,
        AuditEvent::AgentEnabled,
        AuditEvent::AgentDisabled,
        AuditEvent::AgentTokenCreated,
        AuditEvent::AgentTokenRevoked,
        AuditEvent::AgentTokenRotated,
        AuditEvent::AppCreated,
        AuditEvent::AppRevoked,
        AuditEvent::DomainAdded,
        AuditEvent::DomainRemoved,
        AuditEvent::DomainVerified,
        AuditEvent::GroupClaimValuesSet,
        AuditEvent::GroupCreated,
        AuditEvent::GroupDeleted,
        AuditEvent::GroupRenamed,
        AuditEvent::GroupMemberAdded,
        AuditEvent::GroupMemberRemoved,
        AuditEvent::LimitsChosen,
        AuditEvent::MemberChanged,
        AuditEvent::MemberInvited,
        AuditEvent::MemberProvisioned,
        AuditEvent::OauthConsented,
        AuditEvent::OauthTokenIssued,
        AuditEvent::OauthTokenRevoked,
        AuditEvent::OrganizationChanged,
        AuditEvent::OrganizationCreated,
        AuditEvent::OrganizationSignInChanged,
        AuditEvent::ProcessImported,
        AuditEvent::ProcessPublished,
        AuditEvent::ProcessRoleBound,
        AuditEvent::RunCancelled,
        AuditEvent::RunDecided,
        AuditEvent::SigninFailed,
        AuditEvent::SigninSucceeded,
        AuditEvent::TokenCreated,
        AuditEvent::TokenRevoked,
        AuditEvent::WebhookAdded,
        AuditEvent::WebhookRedelivered,
        AuditEvent::WebhookRemoved,
    ];

    /// The kind as the log spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditEvent::AgentClientCreated => "agent.client_created",
            AuditEvent::AgentClientRevoked => "agent.client_revoked",
            AuditEvent::AgentClientSecretAdded => "agent.client_secret_added",
            AuditEvent::AgentClientSecretRevoked => "agent.client_secret_revoked",
            AuditEvent::AgentCreated => "agent.created",
            AuditEvent::AgentEnabled => "agent.enabled",
            AuditEvent::AgentDisabled => "agent.disabled",
            AuditEvent::AgentTokenCreated => "agent.token_created",
            AuditEvent::AgentTokenRevoked => "agent.token_revoked",
            AuditEvent::AgentTokenRotated => "agent.token_rotated",
            AuditEvent::AppCreated => "app.created",
            AuditEvent::AppRevoked => "app.revoked",
            AuditEvent::DomainAdded => "domain.added",
            AuditEvent::DomainRemoved => "domain.removed",
            AuditEvent::DomainVerified => "domain.verified",
            AuditEvent::GroupClaimValuesSet => "group.claim_values_set",
            AuditEvent::GroupCreated => "group.created",
            AuditEvent::GroupDeleted => "group.deleted",
            AuditEvent::GroupRenamed => "group.renamed",
            AuditEvent::GroupMemberAdded => "group.member_added",
            AuditEvent::GroupMemberRemoved => "group.member_removed",
            AuditEvent::LimitsChosen => "limits.chosen",
            AuditEvent::MemberChanged => "member.changed",
            AuditEvent::MemberInvited => "member.invited",
            AuditEvent::MemberProvisioned => "member.provisioned",
            AuditEvent::OauthConsented => "oauth.consented",
            AuditEvent::OauthTokenIssued => "oauth.token_issued",
            AuditEvent::OauthTokenRevoked => "oauth.token_revoked",
            AuditEvent::OrganizationChanged => "organization.changed",
            AuditEvent::OrganizationCreated => "organization.created",
            AuditEvent::OrganizationSignInChanged => "organization.sign_in_changed",
            AuditEvent::ProcessImported => "process.imported",
            AuditEvent::ProcessPublished => "process.published",
            AuditEvent::ProcessRoleBound => "process.role_bound",
            AuditEvent::RunCancelled => "run.cancelled",
            AuditEvent::RunDecided => "run.decided",
            AuditEvent::SigninFailed => "signin.failed",
            AuditEvent::SigninSucceeded => "signin.succeeded",
            AuditEvent::TokenCreated => "token.created",
            AuditEvent::TokenRevoked => "token.revoked",
            AuditEvent::WebhookAdded => "webhook.added",
            AuditEvent::WebhookRedelivered => "webhook.redelivered",
            AuditEvent::WebhookRemoved => "webhook.removed",
        }
    }
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
