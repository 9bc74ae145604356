//! Binding a draft's agent steps to the agents that may claim them: all of them at
//! once (`*`) or step by step, to named agents and groups of agents. Published with
//! the draft, as role bindings are; the engine refuses a claim by any other agent and
//! `get_work` lists the step only for those it names.

use agentprocess_engine::{Claimants, EVERY_AGENT_STEP};
use agentprocess_store::{DirectoryTx as _, IdentityKind, Store as _, StoreTx as _};

use crate::admin::{Admin, Draft, agents_json, no_such_group, parse_agents, refuse};
use crate::{Error, millis, not_found};

/// The most agents, and the most groups, one binding names.
const MOST_NAMED: usize = 100;

impl Admin {
    /// Binds agent step `step` of a draft (or every agent step without a binding of
    /// its own, for `*`) to `claimants`. Each agent must be an active agent of the
    /// organization and each group must exist; a group with no agent in it is refused
    /// unless `force` (the step would wait for nobody). Read, checked and written under
    /// the organization's lock, which deleting a group takes too.
    pub async fn bind_agents(
        &self,
        org: &str,
        process: &str,
        step: &str,
        claimants: &Claimants,
        force: bool,
    ) -> Result<Draft, Error> {
        let identities = self.store.identities(org).await?;
        let mut tx = self.store.begin().await?;
        let (mut stored, parsed) = self.locked_draft(&mut tx, org, process).await?;
        let steps = crate::admin::agent_steps(&parsed);
        let mut issues = Vec::new();
        if steps.is_empty() {
            issues.push(format!("step {step:?}: {process} has no agent steps"));
        } else if step != EVERY_AGENT_STEP && !steps.iter().any(|known| known == step) {
            issues.push(format!(
                "step {step:?}: not an agent step of {process} (its agent steps: {}; or * for every one)",
                steps.join(", ")
            ));
        }
        if claimants.is_empty() {
            issues.push(
                "agents, groups: name at least one agent or group; to let any agent claim the step, \
                 remove its binding"
                    .to_owned(),
            );
        }
        for (what, named) in [("agents", &claimants.agents), ("groups", &claimants.groups)] {
            if named.len() > MOST_NAMED {
                issues.push(format!("{what}: {} named, at most {MOST_NAMED}", named.len()));
            }
        }
        for agent in &claimants.agents {
            match identities.iter().find(|identity| &identity.id == agent) {
                None => issues.push(format!("agent {agent:?}: the organization has no such agent")),
                Some(identity) if identity.kind != IdentityKind::Agent => {
                    issues.push(format!("agent {agent:?}: is a person; only agents claim agent steps"));
                }
                Some(identity) if identity.deactivated_at.is_some() => {
                    issues.push(format!("agent {agent:?}: is deactivated and can claim nothing"));
                }
                Some(_) => {}
            }
        }
        let groups = tx.group_list(org).await?;
        let mut notes = Vec::new();
        for group in &claimants.groups {
            let Some(known) = groups.iter().find(|known| &known.id == group) else {
                issues.push(no_such_group(group, &groups));
                continue;
            };
            let has_agents = identities.iter().any(|identity| {
                identity.kind == IdentityKind::Agent
                    && identity.deactivated_at.is_none()
                    && known.members.contains(&identity.id)
            });
            match (has_agents, force) {
                (true, _) => {}
                (false, true) => notes.push(format!(
                    "group {group:?} has no active agents: the steps bound to it wait until it has"
                )),
                (false, false) => issues.push(format!(
                    "group {group:?}: has no active agents, so the steps bound to it would wait for none; \
                     add agents first, or bind with force"
                )),
            }
        }
        refuse(issues)?;
        let mut bindings = parse_agents(&stored.agents)?;
        bindings.0.insert(step.to_owned(), sorted(claimants));
        stored.agents = agents_json(&bindings);
        tx.put_draft(org, process, &stored, millis(self.now())).await?;
        tx.commit().await?;
        Draft::of(&parsed, &stored, notes)
    }

    /// Removes the binding of agent step `step` (or of `*`), so that it follows the
    /// binding of every step, or any agent may claim it. Nothing bound: nothing changes.
    pub async fn unbind_agents(&self, org: &str, process: &str, step: &str) -> Result<Draft, Error> {
        let mut tx = self.store.begin().await?;
        let (mut stored, parsed) = self.locked_draft(&mut tx, org, process).await?;
        let mut bindings = parse_agents(&stored.agents)?;
        if bindings.0.remove(step).is_some() {
            stored.agents = agents_json(&bindings);
            tx.put_draft(org, process, &stored, millis(self.now())).await?;
            tx.commit().await?;
        } else if step != EVERY_AGENT_STEP && !crate::admin::agent_steps(&parsed).iter().any(|known| known == step) {
            return Err(not_found(format!("{process} has no agent step {step:?}")));
        }
        Draft::of(&parsed, &stored, Vec::new())
    }
}

/// Each name once, in order.
fn sorted(claimants: &Claimants) -> Claimants {
    let order = |names: &[String]| {
        let mut names = names.to_vec();
        names.sort();
        names.dedup();
        names
    };
    Claimants {
        agents: order(&claimants.agents),
        groups: order(&claimants.groups),
    }
}
