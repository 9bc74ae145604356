//! Who acts on the organization's operations, as every surface names them: the
//! identity, how it was authenticated (a read-only API token only reads) and its
//! network address, which the audit log records.

use agentprocess_store::{Identity, Role};

use crate::Error;
use crate::audit::Actor;
use crate::tokens::Scope;

/// How a caller was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// A browser session (CSRF-checked on unsafe requests).
    Session,
    /// An API token of this scope.
    Token(Scope),
}

impl Via {
    /// As the session's answer names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Session => "session",
            Via::Token(_) => "token",
        }
    }
}

/// One identity acting, by one credential, from one address.
#[derive(Debug, Clone)]
pub struct Acting {
    /// Who acts.
    pub identity: Identity,
    /// By a session or a token.
    pub via: Via,
    /// Their network address, as the listener saw it.
    pub address: Option<String>,
}

impl Acting {
    /// The caller as the audit log names them.
    pub fn actor(&self) -> Actor {
        Actor {
            id: self.identity.id.clone(),
            address: self.address.clone(),
        }
    }

    /// The caller's organization.
    pub fn org(&self) -> &str {
        &self.identity.org
    }

    /// Refuses unless the caller holds `role` (a read-scoped token only reads).
    pub fn require(&self, role: Role, writes: bool) -> Result<(), Error> {
        if writes && self.via == Via::Token(Scope::Read) {
            return Err(Error::forbidden("this API token may only read"));
        }
        if !self.identity.has_role(role) {
            return Err(Error::forbidden(format!("this needs the {role} role")));
        }
        Ok(())
    }
}
