//! The organization's operations, as every surface calls them: the REST admin API,
//! the admin pages and `agentprocess admin` (as `agentprocess-admin`,
//! [`Acting::command_line`]). Each takes who acts ([`Acting`]), checks the
//! role it needs (a read-only API token only reads), gives a creating request's first
//! answer again when its key was sent before, and writes the audit entry with the
//! change. The surfaces only translate: a request or a form into the typed command,
//! the typed answer into JSON or a page.

pub mod agents;
pub mod apps;
mod archive;
pub mod audit;
pub mod clients;
pub mod groups;
pub mod identities;
pub mod limits;
pub mod members;
pub mod messages;
pub mod organization;
pub mod platform;
pub mod processes;
pub mod runs;
pub mod tokens;
pub mod webhooks;

use std::sync::Arc;

use agentprocess_auth::idempotency::{Idempotent, Operation};
use agentprocess_auth::{Acting, Auth};
use agentprocess_service::Service;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What an operation can answer instead of its result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Identity refused it, or failed.
    #[error(transparent)]
    Auth(#[from] agentprocess_auth::Error),
    /// The service refused it, or failed.
    #[error(transparent)]
    Service(#[from] agentprocess_service::Error),
}

impl Error {
    /// `invalid`, with every issue.
    pub fn invalid(message: impl Into<String>, issues: Vec<String>) -> Self {
        Self::Auth(agentprocess_auth::Error::invalid(message, issues))
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::Auth(agentprocess_auth::Error::not_found(message))
    }
}

/// The operations over one server's identity and service.
#[derive(Clone)]
pub struct Operations {
    auth: Arc<Auth>,
    service: Arc<Service>,
}

/// A creating request's first answer, or what records this one's.
enum Replay<T> {
    /// The request was made before: its answer.
    Answered(T),
    /// A new request: where its answer is recorded, when it has a key.
    Fresh(Option<Box<Idempotent>>),
}

/// The answer recorded for a creating request's key, returned from the operation at
/// once when there is one; else what records this request's answer.
macro_rules! unless_replayed {
    ($operations:expr, $acting:expr, $key:expr, $operation:expr, $asked:expr) => {
        match $operations.replay($acting, $key, $operation, $asked).await? {
            $crate::Replay::Answered(answer) => return Ok(answer),
            $crate::Replay::Fresh(request) => request,
        }
    };
}
pub(crate) use unless_replayed;

impl Operations {
    /// The operations over `auth` and `service`.
    pub fn new(auth: Arc<Auth>, service: Arc<Service>) -> Self {
        Self { auth, service }
    }

    fn now(&self) -> jiff::Timestamp {
        self.service.now()
    }

    /// `operation` asking `asked` by `acting` under the client's `key`: the answer
    /// recorded when it was made before (`conflict` if the key was used for another
    /// request, or by another caller).
    async fn replay<T: DeserializeOwned>(
        &self,
        acting: &Acting,
        key: Option<&str>,
        operation: Operation,
        asked: &impl Serialize,
    ) -> Result<Replay<T>, Error> {
        let Some(key) = key else {
            return Ok(Replay::Fresh(None));
        };
        let request = self.auth.idempotent(key, &acting.identity.id, operation, asked)?;
        Ok(match request.replayed(self.service.store(), acting.org()).await? {
            Some(answer) => Replay::Answered(answer),
            None => Replay::Fresh(Some(Box::new(request))),
        })
    }

    /// Writes an audit entry of `acting`'s change.
    async fn record(
        &self,
        acting: &Acting,
        event: agentprocess_auth::audit::AuditEvent,
        target: &str,
        detail: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        self.auth
            .record(acting.org(), &acting.actor(), event, Some(target), detail, self.now())
            .await?;
        Ok(())
    }
}

/// A stored time as every surface writes it: RFC 3339, in UTC.
pub fn time_text(millis: i64) -> String {
    jiff::Timestamp::from_millisecond(millis)
        .map(|at| at.to_string())
        .unwrap_or_default()
}
