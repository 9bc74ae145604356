//! The organization and its people, as its admins manage them.

use agentprocess_store::{DirectoryTx, Domain, Identity, IdentityKind, Organization, Role, Store, StoreTx};
use serde::Deserialize;
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::secrets::{new_id, new_token};
use crate::signin::is_email;
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;

/// Someone an admin invites; they get in at their first sign-in with this email.
#[derive(Debug, Clone, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Invite {
    /// Their email, which becomes their person value.
    #[schema(pattern = "^[^@\\s]+@[^@\\s.]+(\\.[^@\\s.]+)+$", max_length = 320)]
    pub email: String,
    /// A display name; the email when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// Their role.
    #[serde(deserialize_with = "role")]
    #[schema(value_type = crate::RoleName)]
    pub role: Role,
    /// Groups they join.
    #[serde(default)]
    pub groups: Vec<String>,
}

/// What an admin changes about a member; absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberChange {
    /// A new role.
    #[serde(default, deserialize_with = "optional_role")]
    #[schema(value_type = Option<crate::RoleName>)]
    pub role: Option<Role>,
    /// `false` deactivates (their sessions end, their tokens are revoked); `true`
    /// reactivates.
    #[serde(default)]
    pub active: Option<bool>,
    /// Their groups, all of them.
    #[serde(default)]
    pub groups: Option<Vec<String>>,
}

/// What an admin changes about the organization; absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrganizationChange {
    /// A new display name.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200, pattern = "\\S")]
    pub name: Option<String>,
    /// Whether people of allowed domains become members at first sign-in.
    #[serde(default)]
    pub auto_provision: Option<bool>,
    /// The ID token claim that lists groups; an empty string stops syncing them.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub groups_claim: Option<String>,
}

fn role_of(text: &str) -> Result<Role, String> {
    Role::parse(text).ok_or_else(|| format!("{text:?} is not a role: use admin, operator or member"))
}

fn role<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Role, D::Error> {
    role_of(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
}

fn optional_role<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Role>, D::Error> {
    Option::<String>::deserialize(deserializer)?
        .map(|text| role_of(&text).map_err(serde::de::Error::custom))
        .transpose()
}

impl Auth {
    /// The organization, by id.
    pub async fn organization(&self, org: &str) -> Result<Organization, Error> {
        self.store
            .organization(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))
    }

    /// The organization's identity provider, if set: (issuer, client id, whether a
    /// secret is kept). The secret itself is never given out.
    pub async fn provider_summary(&self, org: &str) -> Result<Option<(String, String, bool)>, Error> {
        Ok(self
            .store
            .provider(org)
            .await?
            .map(|provider| (provider.issuer, provider.client_id, provider.sealed_secret.is_some())))
    }

    /// The organization's email domains.
    pub async fn domains(&self, org: &str) -> Result<Vec<Domain>, Error> {
        Ok(self.store.domains(org).await?)
    }

    /// Changes the organization's settings, when it is still at `revision` (if given).
    pub async fn change_organization(
        &self,
        actor: &Actor,
        org: &str,
        change: &OrganizationChange,
        revision: Option<i64>,
        now: jiff::Timestamp,
    ) -> Result<Organization, Error> {
        let mut issues = Vec::new();
        if let Some(name) = &change.name
            && (name.trim().is_empty() || name.chars().count() > 200)
        {
            issues.push("name: give a name of at most 200 characters".to_owned());
        }
        if let Some(claim) = &change.groups_claim
            && claim.chars().count() > 200
        {
            issues.push("groupsClaim: at most 200 characters".to_owned());
        }
        refuse_if_any("the change has problems; nothing changed", issues)?;
        let mut tx = self.store.begin().await?;
        let current = tx
            .lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if let Some(expected) = revision
            && expected != current
        {
            return Err(Error::conflict(format!(
                "the organization changed since revision {expected} (it is at {current}): read it again and redo the change"
            )));
        }
        let mut organization = tx
            .organization(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if let Some(name) = &change.name {
            organization.name = name.trim().to_owned();
        }
        if let Some(auto) = change.auto_provision {
            organization.auto_provision = auto;
        }
        if let Some(claim) = &change.groups_claim {
            organization.groups_claim = Some(claim.trim().to_owned()).filter(|claim| !claim.is_empty());
        }
        tx.update_org(&organization).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::OrganizationChanged,
            Some(org),
            detail([
                ("name", json!(change.name)),
                ("autoProvision", json!(change.auto_provision)),
                ("groupsClaim", json!(change.groups_claim)),
            ]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        organization.revision += 1;
        Ok(organization)
    }

    /// Adds an email domain; its people can then be provisioned at sign-in, and once
    /// verified it routes sign-in by email.
    pub async fn add_domain(
        &self,
        actor: &Actor,
        org: &str,
        domain: &str,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<Domain, Error> {
        let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        if !crate::domains::is_domain_name(&domain) {
            return Err(Error::invalid(
                "the domain is not valid; nothing changed",
                vec![format!("domain: {domain:?} is not a domain name")],
            ));
        }
        if let Some(known) = self
            .store
            .domains(org)
            .await?
            .into_iter()
            .find(|known| known.domain == domain)
        {
            return Ok(known);
        }
        let added = Domain {
            domain: domain.clone(),
            token: new_token("agentprocess-verification="),
            verified_at: None,
        };
        let mut tx = self.store.begin().await?;
        tx.put_domain(org, &added, millis(now)).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::DomainAdded,
            Some(&domain),
            detail([]),
            millis(now),
        )
        .await?;
        remember(request, &mut tx, org, &added, millis(now)).await?;
        tx.commit().await?;
        Ok(added)
    }

    /// Removes an email domain.
    pub async fn remove_domain(
        &self,
        actor: &Actor,
        org: &str,
        domain: &str,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        let mut tx = self.store.begin().await?;
        if !tx.remove_domain(org, domain).await? {
            return Err(Error::not_found(format!("the organization has no domain {domain:?}")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::DomainRemoved,
            Some(domain),
            detail([]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The organization's people, by id.
    pub async fn members(&self, org: &str) -> Result<Vec<Identity>, Error> {
        Ok(self
            .store
            .identities(org)
            .await?
            .into_iter()
            .filter(|identity| identity.kind == IdentityKind::Person)
            .collect())
    }

    /// One member.
    pub async fn member(&self, org: &str, id: &str) -> Result<Identity, Error> {
        self.store
            .identity(org, id)
            .await?
            .filter(|identity| identity.kind == IdentityKind::Person)
            .ok_or_else(|| Error::not_found(format!("there is no member {id:?}")))
    }

    /// Invites someone by email.
    pub async fn invite(
        &self,
        actor: &Actor,
        org: &str,
        invite: &Invite,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<Identity, Error> {
        let email = invite.email.trim().to_ascii_lowercase();
        let mut issues = Vec::new();
        if !is_email(&email) {
            issues.push(format!("email: {:?} is not an email address", invite.email));
        }
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        let known = tx.groups(org).await?;
        issues.extend(unknown_groups(&invite.groups, &known));
        refuse_if_any("the invitation has problems; nobody was invited", issues)?;
        if tx.identity_by_person(org, &email).await?.is_some() {
            return Err(Error::conflict(format!("{email} is already a member")));
        }
        let mut groups = invite.groups.clone();
        groups.sort();
        groups.dedup();
        let identity = Identity {
            org: org.to_owned(),
            id: new_id("per_"),
            kind: IdentityKind::Person,
            role: Some(invite.role),
            person: Some(email.clone()),
            name: invite
                .name
                .clone()
                .filter(|name| !name.trim().is_empty())
                .unwrap_or_else(|| email.clone()),
            groups,
            deactivated_at: None,
        };
        let at = millis(now);
        tx.create_identity(&identity, at).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::MemberInvited,
            Some(&identity.id),
            detail([
                ("email", json!(email)),
                ("role", json!(invite.role.as_str())),
                ("groups", json!(identity.groups)),
            ]),
            at,
        )
        .await?;
        remember(request, &mut tx, org, &identity, at).await?;
        tx.commit().await?;
        Ok(identity)
    }

    /// Changes a member's role, activity or groups. The organization keeps at least
    /// one active admin; a deactivated member's sessions end and tokens are revoked
    /// in the same transaction.
    pub async fn change_member(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        change: &MemberChange,
        now: jiff::Timestamp,
    ) -> Result<Identity, Error> {
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        let Some(mut identity) = tx
            .identity(org, id)
            .await?
            .filter(|identity| identity.kind == IdentityKind::Person)
        else {
            return Err(Error::not_found(format!("there is no member {id:?}")));
        };
        if let Some(groups) = &change.groups {
            let known = tx.groups(org).await?;
            refuse_if_any(
                "the change has problems; nothing changed",
                unknown_groups(groups, &known),
            )?;
        }
        let was_admin = identity.has_role(Role::Admin);
        if let Some(role) = change.role {
            identity.role = Some(role);
        }
        match change.active {
            Some(false) if identity.deactivated_at.is_none() => identity.deactivated_at = Some(at),
            Some(true) => identity.deactivated_at = None,
            _ => {}
        }
        if was_admin && !identity.has_role(Role::Admin) && tx.active_admins(org).await? <= 1 {
            return Err(Error::conflict(format!(
                "{} is the organization's last admin: make someone else admin first",
                identity.person.as_deref().unwrap_or(&identity.id)
            )));
        }
        tx.set_person(org, id, identity.role, identity.deactivated_at).await?;
        if let Some(groups) = &change.groups {
            for group in &identity.groups {
                if !groups.contains(group) {
                    tx.remove_member(org, group, id).await?;
                }
            }
            for group in groups {
                if !identity.groups.contains(group) {
                    tx.add_member(org, group, id).await?;
                }
            }
            let mut groups = groups.clone();
            groups.sort();
            groups.dedup();
            identity.groups = groups;
        }
        if identity.deactivated_at.is_some() {
            tx.delete_sessions_of(org, id).await?;
            tx.revoke_tokens(org, id, at).await?;
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::MemberChanged,
            Some(id),
            detail([
                ("role", json!(change.role.map(Role::as_str))),
                ("active", json!(change.active)),
                ("groups", json!(change.groups)),
            ]),
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(identity)
    }
}

fn unknown_groups(groups: &[String], known: &[String]) -> Vec<String> {
    groups
        .iter()
        .filter(|group| !known.contains(group))
        .map(|group| format!("groups: the organization has no group {group:?}"))
        .collect()
}
