//! Identities named by their id, as the platform's operator makes them at the command
//! line (`agentprocess admin create-identity`): an agent or a person with the id given,
//! in groups made when missing; a static MCP token for a person; and every token of
//! an identity revoked at once. The REST surface makes agents and invites people
//! (agents.rs, members.rs) under the same rules of ids, emails and conflicts.

use agentprocess_store::{DirectoryTx, Identity, IdentityKind, Role, Store, StoreTx, TokenRow};
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::signin::is_email;
use crate::{Auth, Error, millis};

/// An identity to make under the id given.
#[derive(Debug, Clone)]
pub struct NewIdentity {
    /// Its id.
    pub id: String,
    /// A person's role; `None` makes an agent.
    pub role: Option<Role>,
    /// A display name; the id when absent.
    pub name: Option<String>,
    /// A person's email, which becomes their person value; an agent has none.
    pub person: Option<String>,
    /// Groups it joins, each made when the organization lacks it.
    pub groups: Vec<String>,
}

/// Every issue of `new`, and the email it names, lowercased.
fn issues_of(new: &NewIdentity) -> (Vec<String>, Option<String>) {
    let mut issues = crate::identity_id_issues(&new.id);
    if new.name.as_deref().is_some_and(|name| name.chars().count() > 200) {
        issues.push("name: at most 200 characters".to_owned());
    }
    let email = new.person.as_deref().map(|person| person.trim().to_ascii_lowercase());
    match (new.role, &email) {
        (None, Some(_)) => issues.push("person: an agent has no person value".to_owned()),
        (Some(_), None) => issues.push("person: a person needs one, their email".to_owned()),
        (Some(_), Some(email)) if !is_email(email) => {
            issues.push(format!(
                "person: {:?} is not an email address",
                new.person.as_deref().unwrap_or_default()
            ));
        }
        _ => {}
    }
    for group in &new.groups {
        issues.extend(
            crate::id_issues(group)
                .into_iter()
                .map(|issue| format!("group {issue}")),
        );
    }
    (issues, email)
}

impl Auth {
    /// Makes an agent (`role` absent) or a person under the id given, in its groups,
    /// making each group the organization lacks: one transaction, with an audit entry
    /// for each group made and one for the identity (`agent.created`, or
    /// `member.invited` as for a person an admin invites).
    pub async fn create_identity(
        &self,
        actor: &Actor,
        org: &str,
        new: &NewIdentity,
        now: jiff::Timestamp,
    ) -> Result<Identity, Error> {
        let (issues, email) = issues_of(new);
        refuse_if_any("the identity was not made", issues)?;
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if tx.identity(org, &new.id).await?.is_some() {
            return Err(Error::conflict(format!("an identity {:?} exists already", new.id)));
        }
        if let Some(email) = &email
            && tx.identity_by_person(org, email).await?.is_some()
        {
            return Err(Error::conflict(format!("{email} is already a member")));
        }
        let mut groups = new.groups.clone();
        groups.sort();
        groups.dedup();
        let at = millis(now);
        let known = tx.groups(org).await?;
        for group in groups.iter().filter(|group| !known.contains(group)) {
            tx.create_group(org, group, at).await?;
            let detail = detail([("name", serde_json::Value::Null)]);
            audit::append(&mut tx, org, actor, AuditEvent::GroupCreated, Some(group), detail, at).await?;
        }
        let name = new.name.as_deref().map(str::trim).filter(|name| !name.is_empty());
        let identity = Identity {
            org: org.to_owned(),
            id: new.id.clone(),
            kind: if new.role.is_some() {
                IdentityKind::Person
            } else {
                IdentityKind::Agent
            },
            role: new.role,
            name: name.unwrap_or(&new.id).to_owned(),
            person: email,
            groups,
            deactivated_at: None,
        };
        tx.create_identity(&identity, at).await?;
        let (kind, detail) = match (identity.role, &identity.person) {
            (Some(role), Some(email)) => (
                AuditEvent::MemberInvited,
                detail([
                    ("email", json!(email)),
                    ("role", json!(role.as_str())),
                    ("groups", json!(identity.groups)),
                ]),
            ),
            _ => (
                AuditEvent::AgentCreated,
                detail([("name", json!(identity.name)), ("groups", json!(identity.groups))]),
            ),
        };
        audit::append(&mut tx, org, actor, kind, Some(&identity.id), detail, at).await?;
        tx.commit().await?;
        Ok(identity)
    }

    /// Issues a person a static MCP token that lives until revoked; returned this
    /// once. People otherwise get their credentials by signing in themselves.
    pub async fn create_person_token(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        now: jiff::Timestamp,
    ) -> Result<(TokenRow, String), Error> {
        self.member(org, id).await?;
        let mut tx = self.store.begin().await?;
        let made = crate::agents::add_mcp_token(
            &mut tx,
            actor,
            (org, id),
            None,
            millis(now),
            AuditEvent::MemberTokenCreated,
        )
        .await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Revokes every token of an identity, of any kind; returns how many. The entry
    /// (`identity.tokens_revoked`) is written when one was.
    pub async fn revoke_identity_tokens(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        now: jiff::Timestamp,
    ) -> Result<u64, Error> {
        if self.store.identity(org, id).await?.is_none() {
            return Err(Error::not_found(format!("there is no identity {id:?}")));
        }
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        let revoked = tx.revoke_tokens(org, id, at).await?;
        if revoked > 0 {
            let detail = detail([("count", json!(revoked))]);
            audit::append(
                &mut tx,
                org,
                actor,
                AuditEvent::IdentityTokensRevoked,
                Some(id),
                detail,
                at,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acting::COMMAND_LINE_ID;

    fn new(id: &str, role: Option<Role>, person: Option<&str>, groups: &[&str]) -> NewIdentity {
        NewIdentity {
            id: id.to_owned(),
            role,
            name: None,
            person: person.map(str::to_owned),
            groups: groups.iter().map(|group| (*group).to_owned()).collect(),
        }
    }

    #[test]
    fn every_issue_is_named_at_once() {
        let (issues, _) = issues_of(&new("Bad Id", Some(Role::Member), None, &["Fin ance"]));
        assert_eq!(issues.len(), 3, "{issues:?}");
        assert!(issues[0].starts_with("id: \"Bad Id\""), "{issues:?}");
        assert_eq!(issues[1], "person: a person needs one, their email");
        assert!(issues[2].starts_with("group id: \"Fin ance\""), "{issues:?}");
        let (issues, _) = issues_of(&new("bot", None, Some("bot@acme.test"), &[]));
        assert_eq!(issues, ["person: an agent has no person value"]);
        let (issues, _) = issues_of(&new("mira", Some(Role::Member), Some("mira"), &[]));
        assert_eq!(issues, ["person: \"mira\" is not an email address"]);
    }

    #[test]
    fn the_platforms_id_is_nobody_elses() {
        let (issues, _) = issues_of(&new(COMMAND_LINE_ID, None, None, &[]));
        assert_eq!(
            issues,
            ["id: \"agentprocess-admin\" is the platform's operator's, as the audit log names them"]
        );
    }

    #[test]
    fn a_persons_email_is_kept_lowercase() {
        let (issues, email) = issues_of(&new("mira", Some(Role::Member), Some(" Mira@Acme.com"), &[]));
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(email.as_deref(), Some("mira@acme.com"));
    }
}
