//! `Idempotency-Key` on the REST surface's creating requests, with a tool's `requestId`
//! semantics: the same key with the same request gets the first answer again, with
//! another request `conflict`. The answer is recorded in the action's own transaction,
//! so a request either happened once with its answer kept, or not at all. Answers can
//! hold a secret shown once (a token), so they are stored sealed.

use agentprocess_store::{NewRequest, Store, StoreTx};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::secrets::{SecretKey, sha256_hex};
use crate::{Auth, Error};

/// The longest key accepted.
const MAX_KEY: usize = 128;

/// One creating request, made idempotent by its key.
#[derive(Debug, Clone)]
pub struct Idempotent {
    request_id: String,
    operation: String,
    args_hash: String,
    key: SecretKey,
}

/// The REST requests an `Idempotency-Key` makes safe to send again: every creating
/// `POST`. Recorded as `rest:<operation>` beside the tools' `requestId`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Make an OAuth client for an agent. (`agent.client.create`)
    AgentClientCreate,
    /// Add a secret to an agent's client. (`agent.client.secret.add`)
    AgentClientSecretAdd,
    /// Make an agent. (`agent.create`)
    AgentCreate,
    /// Issue an agent a static token. (`agent.token.create`)
    AgentTokenCreate,
    /// Replace an agent's static token. (`agent.token.rotate`)
    AgentTokenRotate,
    /// Make a client for people's applications. (`app.create`)
    AppCreate,
    /// Add an email domain. (`domain.add`)
    DomainAdd,
    /// Make a group. (`group.create`)
    GroupCreate,
    /// Invite a person. (`member.invite`)
    MemberInvite,
    /// Import a process as a draft. (`process.import`)
    ProcessImport,
    /// Publish a draft. (`process.publish`)
    ProcessPublish,
    /// Make an API token. (`token.create`)
    TokenCreate,
    /// Add a webhook endpoint. (`webhook.add`)
    WebhookAdd,
}

impl Operation {
    /// The operation as it is recorded.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::AgentClientCreate => "agent.client.create",
            Operation::AgentClientSecretAdd => "agent.client.secret.add",
            Operation::AgentCreate => "agent.create",
            Operation::AgentTokenCreate => "agent.token.create",
            Operation::AgentTokenRotate => "agent.token.rotate",
            Operation::AppCreate => "app.create",
            Operation::DomainAdd => "domain.add",
            Operation::GroupCreate => "group.create",
            Operation::MemberInvite => "member.invite",
            Operation::ProcessImport => "process.import",
            Operation::ProcessPublish => "process.publish",
            Operation::TokenCreate => "token.create",
            Operation::WebhookAdd => "webhook.add",
        }
    }
}

impl Auth {
    /// The request `operation` with `arguments` (what it was asked, path ids
    /// included) by the identity `caller` under the client's `key`. Keys live beside
    /// `requestId`s but never meet them: they are kept as `rest:<key>`. The caller is
    /// part of the request: another identity sending the key gets `conflict`, never
    /// the first one's answer (which may hold a secret shown once).
    pub fn idempotent(
        &self,
        key: &str,
        caller: &str,
        operation: Operation,
        arguments: &impl Serialize,
    ) -> Result<Idempotent, Error> {
        let key = key.trim();
        if key.is_empty() || key.chars().count() > MAX_KEY || key.chars().any(char::is_control) {
            return Err(Error::invalid(
                "the Idempotency-Key header is not usable",
                vec![format!(
                    "Idempotency-Key: use 1 to {MAX_KEY} printable characters, a new UUID per request"
                )],
            ));
        }
        let canonical = serde_json::to_value(arguments)
            .ok()
            .map(|arguments| serde_json::json!({"arguments": arguments, "caller": caller}))
            .and_then(|value| serde_json_canonicalizer::to_string(&value).ok())
            .unwrap_or_default();
        Ok(Idempotent {
            request_id: format!("rest:{key}"),
            operation: format!("rest:{}", operation.as_str()),
            args_hash: sha256_hex(canonical.as_bytes()),
            key: self.key.clone(),
        })
    }
}

impl Idempotent {
    /// The answer recorded for this key, if the request was made before; `conflict` if
    /// the key was used for another request.
    pub async fn replayed<T: DeserializeOwned>(&self, store: &impl Store, org: &str) -> Result<Option<T>, Error> {
        let Some(recorded) = store.request(org, &self.request_id).await? else {
            return Ok(None);
        };
        if recorded.tool != self.operation || recorded.args_hash != self.args_hash {
            return Err(Error::conflict(format!(
                "the Idempotency-Key {:?} was used before for another request, or by another caller",
                self.key_text()
            )));
        }
        let text = self.key.open(&recorded.result, &self.context(org))?;
        serde_json::from_str(&text).map(Some).map_err(|error| {
            Error::Store(agentprocess_store::Error::Corrupt(format!(
                "a recorded answer: {error}"
            )))
        })
    }

    /// Records `answer` under this key in `tx`, the action's transaction. If another
    /// request with the key committed first, this one is refused (and rolls back):
    /// sending it again gets that one's answer.
    pub async fn remember<T: Serialize>(
        &self,
        tx: &mut impl StoreTx,
        org: &str,
        answer: &T,
        at: i64,
    ) -> Result<(), Error> {
        let text = serde_json::to_string(answer)
            .map_err(|error| Error::Store(agentprocess_store::Error::Corrupt(format!("an answer: {error}"))))?;
        let sealed = self.key.seal(&text, &self.context(org));
        let request = NewRequest {
            request_id: &self.request_id,
            tool: &self.operation,
            args_hash: &self.args_hash,
            result: &sealed,
            at,
        };
        if tx.record_request(org, &request).await? {
            Ok(())
        } else {
            Err(Error::conflict(format!(
                "another request with the Idempotency-Key {:?} finished first; send this one again to get its answer",
                self.key_text()
            )))
        }
    }

    fn key_text(&self) -> &str {
        self.request_id.strip_prefix("rest:").unwrap_or(&self.request_id)
    }

    fn context(&self, org: &str) -> String {
        format!("idempotency/{org}/{}", self.request_id)
    }
}

/// Records `answer` under `request`'s key, when the request has one.
pub async fn remember<T: Serialize>(
    request: Option<&Idempotent>,
    tx: &mut impl StoreTx,
    org: &str,
    answer: &T,
    at: i64,
) -> Result<(), Error> {
    match request {
        Some(request) => request.remember(tx, org, answer, at).await,
        None => Ok(()),
    }
}
