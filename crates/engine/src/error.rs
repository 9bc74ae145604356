//! The protocol's errors (spec §4.3): one code and every issue.

use std::fmt;

/// The seven error codes of spec §4.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// Bad arguments: fix the call.
    Invalid,
    /// A submission broke a rule; `issues` lists each. Nothing changed.
    NotAccepted,
    /// The token, claim or snapshot is no longer current.
    Stale,
    /// Someone else holds it, it is already decided, or a `requestId` was reused.
    Conflict,
    /// Not allowed for this identity.
    Forbidden,
    /// No such run, step or process in this organization.
    NotFound,
    /// Transient server state: retry with the same `requestId`.
    Retry,
}

impl Code {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Invalid => "invalid",
            Code::NotAccepted => "not_accepted",
            Code::Stale => "stale",
            Code::Conflict => "conflict",
            Code::Forbidden => "forbidden",
            Code::NotFound => "not_found",
            Code::Retry => "retry",
        }
    }
}

/// A refused call: its code, a sentence for people, and every issue for programs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What kind of refusal.
    pub code: Code,
    /// One sentence saying what happened.
    pub message: String,
    /// Each problem, in the tool contracts' wording (`output.cleared: expected boolean`).
    pub issues: Vec<String>,
}

impl ToolError {
    /// A refusal with issues.
    pub fn new(code: Code, message: impl Into<String>, issues: Vec<String>) -> Self {
        Self {
            code,
            message: message.into(),
            issues,
        }
    }

    /// `not_accepted` with every issue of a submission.
    pub fn not_accepted(issues: Vec<String>) -> Self {
        Self::new(
            Code::NotAccepted,
            "the submission was not accepted; nothing changed",
            issues,
        )
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)?;
        for issue in &self.issues {
            write!(f, "; {issue}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolError {}
