//! Groups: what process roles bind to, and what people belong to.

use std::collections::BTreeMap;

use agentprocess_store::{DirectoryTx, Group, Store, StoreTx};
use serde::Deserialize;
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::{Auth, Error, millis};
use agentprocess_store::Directory;

/// A group to make.
#[derive(Debug, Clone, serde::Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewGroup {
    /// Its id, which role bindings name: lowercase letters, digits, `-`, `_` and `.`.
    #[schema(pattern = "^[a-z0-9][a-z0-9._-]{0,63}$")]
    pub id: String,
    /// A display name.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub name: Option<String>,
}

fn name_issues(name: Option<&str>) -> Vec<String> {
    match name {
        Some(name) if name.chars().count() > 200 => vec!["name: at most 200 characters".to_owned()],
        _ => Vec::new(),
    }
}

impl Auth {
    /// The organization's groups with their members.
    pub async fn groups(&self, org: &str) -> Result<Vec<Group>, Error> {
        Ok(self.store.group_list(org).await?)
    }

    /// One group.
    pub async fn group(&self, org: &str, id: &str) -> Result<Group, Error> {
        self.groups(org)
            .await?
            .into_iter()
            .find(|group| group.id == id)
            .ok_or_else(|| Error::not_found(format!("there is no group {id:?}")))
    }

    /// Makes a group.
    pub async fn create_group(
        &self,
        actor: &Actor,
        org: &str,
        new: &NewGroup,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<Group, Error> {
        let mut issues = crate::id_issues(&new.id);
        issues.extend(name_issues(new.name.as_deref()));
        refuse_if_any("the group was not made", issues)?;
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if tx.groups(org).await?.contains(&new.id) {
            return Err(Error::conflict(format!("the group {:?} exists already", new.id)));
        }
        let at = millis(now);
        tx.create_group(org, &new.id, at).await?;
        let name = new.name.as_deref().map(str::trim).filter(|name| !name.is_empty());
        tx.rename_group(org, &new.id, name).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::GroupCreated,
            Some(&new.id),
            detail([("name", json!(name))]),
            at,
        )
        .await?;
        let group = Group {
            id: new.id.clone(),
            name: name.map(str::to_owned),
            claim_values: Vec::new(),
            members: Vec::new(),
        };
        remember(request, &mut tx, org, &group, at).await?;
        tx.commit().await?;
        Ok(group)
    }

    /// Renames a group (its id stays).
    pub async fn rename_group(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        name: Option<&str>,
        now: jiff::Timestamp,
    ) -> Result<Group, Error> {
        refuse_if_any("the group was not renamed", name_issues(name))?;
        let name = name.map(str::trim).filter(|name| !name.is_empty());
        let mut tx = self.store.begin().await?;
        if !tx.rename_group(org, id, name).await? {
            return Err(Error::not_found(format!("there is no group {id:?}")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::GroupRenamed,
            Some(id),
            detail([("name", json!(name))]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        self.group(org, id).await
    }

    /// Sets the values of the provider's groups claim that mean this group (Entra's group
    /// object ids, say); empty, the group's id alone does.
    pub async fn set_claim_values(
        &self,
        actor: &Actor,
        org: &str,
        id: &str,
        values: &[String],
        now: jiff::Timestamp,
    ) -> Result<Group, Error> {
        let mut issues = Vec::new();
        if values.len() > 50 {
            issues.push(format!("values: {} values, at most 50", values.len()));
        }
        for value in values {
            if value.trim().is_empty() || value.chars().count() > 200 {
                issues.push(format!("values: {value:?} must have 1 to 200 characters"));
            }
        }
        refuse_if_any("the claim values were not set", issues)?;
        let mut values: Vec<String> = values.iter().map(|value| value.trim().to_owned()).collect();
        values.sort();
        values.dedup();
        let mut tx = self.store.begin().await?;
        if !tx.set_claim_values(org, id, &values).await? {
            return Err(Error::not_found(format!("there is no group {id:?}")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::GroupClaimValuesSet,
            Some(id),
            detail([("values", json!(values))]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        self.group(org, id).await
    }

    /// Deletes a group, unless a role or an agent step of a draft or a published
    /// version is bound to it.
    pub async fn delete_group(&self, actor: &Actor, org: &str, id: &str, now: jiff::Timestamp) -> Result<(), Error> {
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        let mut uses = Vec::new();
        for bound in tx.bindings(org).await? {
            let version = bound
                .number
                .map_or_else(|| "the draft".to_owned(), |number| format!("version {number}"));
            let process = &bound.process;
            let roles: BTreeMap<String, String> = serde_json::from_str(&bound.roles).unwrap_or_default();
            for (role, group) in roles {
                if group == id {
                    uses.push(format!("{process} ({version}): role {role} is bound to {id}"));
                }
            }
            let agents: agentprocess_engine::AgentBindings = serde_json::from_str(&bound.agents).unwrap_or_default();
            for (step, claimants) in agents.0 {
                if claimants.groups.iter().any(|group| group == id) {
                    let step = if step == agentprocess_engine::EVERY_AGENT_STEP {
                        "every agent step".to_owned()
                    } else {
                        format!("agent step {step}")
                    };
                    uses.push(format!("{process} ({version}): {step} is bound to {id}"));
                }
            }
        }
        if !uses.is_empty() {
            return Err(Error::refused(
                agentprocess_engine::Code::Conflict,
                format!("the group {id:?} is bound to process roles or agent steps and stays"),
                uses,
            ));
        }
        if !tx.delete_group(org, id).await? {
            return Err(Error::not_found(format!("there is no group {id:?}")));
        }
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::GroupDeleted,
            Some(id),
            detail([]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Puts a member in a group, or takes them out.
    pub async fn set_membership(
        &self,
        actor: &Actor,
        org: &str,
        group: &str,
        member: &str,
        inside: bool,
        now: jiff::Timestamp,
    ) -> Result<Group, Error> {
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        if !tx.groups(org).await?.iter().any(|known| known == group) {
            return Err(Error::not_found(format!("there is no group {group:?}")));
        }
        if tx.identity(org, member).await?.is_none() {
            return Err(Error::not_found(format!("there is no member {member:?}")));
        }
        if inside {
            tx.add_member(org, group, member).await?;
        } else {
            tx.remove_member(org, group, member).await?;
        }
        let kind = if inside {
            AuditEvent::GroupMemberAdded
        } else {
            AuditEvent::GroupMemberRemoved
        };
        audit::append(
            &mut tx,
            org,
            actor,
            kind,
            Some(group),
            detail([("member", json!(member))]),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        self.group(org, group).await
    }
}
