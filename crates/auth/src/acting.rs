//! Who acts on the organization's operations, as every surface names them: the
//! identity, how it was authenticated (a read-only API token only reads) and its
//! network address, which the audit log records.
//!
//! The platform's operator, who holds the database URL and runs `agentprocess admin`,
//! acts as [`COMMAND_LINE_ID`] ([`Acting::command_line`]): an admin of whichever
//! organization a command names, with no row among its identities, and the only
//! caller of what the platform alone grants ([`Acting::require_platform`]). No
//! surface reached over the network builds that acting: they name callers by a
//! session or a token.

use agentprocess_store::{Identity, IdentityKind, Role};

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
    /// The platform's operator, at `agentprocess admin` with the database URL.
    CommandLine,
}

impl Via {
    /// As the session's answer names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Session => "session",
            Via::Token(_) => "token",
            Via::CommandLine => "command-line",
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

/// The identity id the audit log names the platform's operator by, at the command
/// line; no organization may give it to an identity of its own.
pub const COMMAND_LINE_ID: &str = "agentprocess-admin";

impl Acting {
    /// The platform's operator at `agentprocess admin`, acting on `org` as its admin
    /// would (and beyond, where [`Acting::require_platform`] asks for it). It is no
    /// stored identity: nothing reads it back from the organization's rows.
    pub fn command_line(org: &str) -> Self {
        Self {
            identity: Identity {
                org: org.to_owned(),
                id: COMMAND_LINE_ID.to_owned(),
                kind: IdentityKind::Person,
                role: Some(Role::Admin),
                person: None,
                name: "agentprocess admin".to_owned(),
                groups: Vec::new(),
                deactivated_at: None,
            },
            via: Via::CommandLine,
            address: None,
        }
    }

    /// The same caller, acting on `org`.
    #[must_use]
    pub fn in_org(&self, org: &str) -> Self {
        let mut acting = self.clone();
        acting.identity.org = org.to_owned();
        acting
    }

    /// Refuses unless the platform's operator acts, at the command line: what only
    /// the platform grants (organizations, limits above the defaults, resealing, a
    /// person's static token) is never reached through a session or a token.
    pub fn require_platform(&self) -> Result<(), Error> {
        if self.via == Via::CommandLine {
            Ok(())
        } else {
            Err(Error::forbidden(
                "only the platform's operators do this, with `agentprocess admin`",
            ))
        }
    }

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

#[cfg(test)]
mod tests {
    use agentprocess_store::IdentityKind;

    use super::*;

    fn acting(role: Option<Role>, via: Via) -> Acting {
        Acting {
            identity: Identity {
                org: "acme".to_owned(),
                id: "ann".to_owned(),
                kind: role.map_or(IdentityKind::Agent, |_| IdentityKind::Person),
                role,
                person: role.map(|_| "ann@acme.test".to_owned()),
                name: "Ann".to_owned(),
                groups: Vec::new(),
                deactivated_at: None,
            },
            via,
            address: Some("192.0.2.1".to_owned()),
        }
    }

    fn refused(result: Result<(), Error>) -> String {
        match result {
            Err(Error::Refused(refusal)) => format!("{}: {}", refusal.code.as_str(), refusal.message),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_role_at_or_above_the_one_needed_is_allowed() {
        let admin = acting(Some(Role::Admin), Via::Session);
        for role in [Role::Member, Role::Operator, Role::Admin] {
            assert!(admin.require(role, true).is_ok(), "{role}");
        }
        assert!(
            acting(Some(Role::Operator), Via::Token(Scope::Admin))
                .require(Role::Operator, true)
                .is_ok()
        );
    }

    #[test]
    fn a_lower_role_an_agent_or_a_deactivated_person_is_refused() {
        let member = acting(Some(Role::Member), Via::Session);
        assert_eq!(
            refused(member.require(Role::Operator, false)),
            "forbidden: this needs the operator role"
        );
        assert_eq!(
            refused(acting(None, Via::Session).require(Role::Member, false)),
            "forbidden: this needs the member role"
        );
        let mut gone = acting(Some(Role::Admin), Via::Session);
        gone.identity.deactivated_at = Some(1);
        assert_eq!(
            refused(gone.require(Role::Member, false)),
            "forbidden: this needs the member role"
        );
    }

    #[test]
    fn a_read_only_token_reads_and_never_writes_whatever_its_role() {
        let reader = acting(Some(Role::Admin), Via::Token(Scope::Read));
        assert!(reader.require(Role::Admin, false).is_ok());
        assert_eq!(
            refused(reader.require(Role::Member, true)),
            "forbidden: this API token may only read"
        );
    }

    #[test]
    fn the_audit_log_names_the_identity_and_its_address() {
        let ann = acting(Some(Role::Member), Via::Session);
        assert_eq!(
            ann.actor(),
            Actor {
                id: "ann".to_owned(),
                address: Some("192.0.2.1".to_owned())
            }
        );
        assert_eq!(ann.org(), "acme");
        assert_eq!(
            (Via::Session.as_str(), Via::Token(Scope::Read).as_str()),
            ("session", "token")
        );
    }

    #[test]
    fn the_command_line_acts_as_an_admin_of_the_organization_it_names_and_alone_as_the_platform() {
        let platform = Acting::command_line("acme");
        assert_eq!(platform.org(), "acme");
        assert_eq!(
            platform.actor(),
            Actor {
                id: COMMAND_LINE_ID.to_owned(),
                address: None
            }
        );
        assert!(platform.require(Role::Admin, true).is_ok());
        assert!(platform.require_platform().is_ok());
        assert_eq!(platform.in_org("other").org(), "other");
        for via in [Via::Session, Via::Token(Scope::Admin)] {
            assert_eq!(
                refused(acting(Some(Role::Admin), via).require_platform()),
                "forbidden: only the platform's operators do this, with `agentprocess admin`"
            );
        }
    }
}
