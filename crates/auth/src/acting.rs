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
}
