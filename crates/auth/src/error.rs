//! The one error of identity's operations: a refusal in the protocol's terms, or a
//! failure of the server that keeps its cause.

use agentprocess_engine::{Code, ToolError};

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request was refused; nothing changed.
    #[error(transparent)]
    Refused(ToolError),
    /// The store failed.
    #[error("the store failed")]
    Store(#[from] agentprocess_store::Error),
    /// A secret sealed at rest could not be opened (another key, or damaged).
    #[error("a sealed secret could not be opened")]
    Sealed(#[from] crate::secrets::SealError),
}

impl Error {
    /// A refusal with `code`.
    pub fn refused(code: Code, message: impl Into<String>, issues: Vec<String>) -> Self {
        Self::Refused(ToolError::new(code, message, issues))
    }

    /// `invalid`, naming every issue.
    pub fn invalid(message: impl Into<String>, issues: Vec<String>) -> Self {
        Self::refused(Code::Invalid, message, issues)
    }

    /// `forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::refused(Code::Forbidden, message, Vec::new())
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::refused(Code::NotFound, message, Vec::new())
    }

    /// `conflict`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::refused(Code::Conflict, message, Vec::new())
    }

    /// What the caller is told: the refusal, or `retry` for a failure of the server
    /// (whose cause the caller's side logs, once).
    pub fn to_tool_error(&self) -> ToolError {
        match self {
            Self::Refused(error) => error.clone(),
            Self::Store(_) | Self::Sealed(_) => ToolError::new(
                Code::Retry,
                "the server could not complete the request; try again shortly",
                Vec::new(),
            ),
        }
    }

    /// Whether this is a failure of the server rather than a refusal.
    pub fn is_internal(&self) -> bool {
        !matches!(self, Self::Refused(_))
    }
}

/// Refuses with every issue at once, when there is any.
pub(crate) fn refuse_if_any(message: &str, issues: Vec<String>) -> Result<(), Error> {
    if issues.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(message, issues))
    }
}
