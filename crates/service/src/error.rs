//! The one error of the service: a refusal in the protocol's terms, or a failure of
//! the server that keeps its cause. Both surfaces (MCP and REST) turn it into what the
//! caller sees through [`Error::into_tool_error`], which is also the one place an
//! internal failure is logged.

use agentprocess_engine::{Code, ToolError};

/// The cause of an internal failure.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The call was refused; nothing changed.
    #[error(transparent)]
    Refused(#[from] ToolError),
    /// The server failed (storage, blobs, a row it cannot read); the call changed
    /// nothing and may be retried.
    #[error("the server failed")]
    Internal(#[source] Cause),
    /// The organization is at one of its limits; nothing changed, and the call may be
    /// made again later (`retry`; 429 with `Retry-After` over HTTP).
    #[error(transparent)]
    OverLimit(#[from] crate::OverLimit),
}

/// The message of `retry`: the same for every internal failure, so nothing of the cause
/// reaches the caller.
pub const RETRY_MESSAGE: &str = "the server could not complete the call; retry with the same requestId";

impl From<agentprocess_store::Error> for Error {
    fn from(cause: agentprocess_store::Error) -> Self {
        Self::internal(cause)
    }
}

impl From<agentprocess_auth::Error> for Error {
    fn from(error: agentprocess_auth::Error) -> Self {
        match error {
            agentprocess_auth::Error::Refused(refusal) => Self::Refused(refusal),
            internal => Self::internal(internal),
        }
    }
}

impl Error {
    /// An internal failure caused by `cause`.
    pub fn internal(cause: impl Into<Cause>) -> Self {
        Self::Internal(cause.into())
    }

    /// The refusal, if this is one.
    pub fn refusal(&self) -> Option<&ToolError> {
        match self {
            Self::Refused(error) => Some(error),
            Self::Internal(_) | Self::OverLimit(_) => None,
        }
    }

    /// The protocol's code: the refusal's, or `retry`.
    pub fn code(&self) -> Code {
        self.refusal().map_or(Code::Retry, |error| error.code)
    }

    /// What the caller is told. An internal failure is logged here, once, with its
    /// cause chain, and answered `retry`.
    pub fn into_tool_error(self) -> ToolError {
        match self {
            Self::Refused(error) => error,
            Self::OverLimit(over) => over.to_tool_error(),
            Self::Internal(cause) => {
                tracing::error!(error = %agentprocess_auth::oidc::chain(cause.as_ref()), "the server failed");
                ToolError::new(Code::Retry, RETRY_MESSAGE, Vec::new())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_failure_is_answered_retry_without_its_cause() {
        let error = Error::internal(std::io::Error::other("disk on fire"));
        assert_eq!(error.code(), Code::Retry);
        let told = error.into_tool_error();
        assert_eq!(told.code, Code::Retry);
        assert!(!told.message.contains("disk"), "{told}");
    }

    #[test]
    fn a_refusal_is_passed_on_as_it_is() {
        let refusal = ToolError::new(Code::Stale, "the snapshot is old", vec!["snapshot".to_owned()]);
        let error = Error::from(refusal.clone());
        assert_eq!(error.refusal(), Some(&refusal));
        assert_eq!(error.into_tool_error(), refusal);
    }
}
