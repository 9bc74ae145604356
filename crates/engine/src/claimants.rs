//! Which agents may claim a version's agent steps. The protocol lets any agent of the
//! organization claim any agent step; an organization may bind a process's agent
//! steps, all of them or step by step, to named agents and groups of agents, as it
//! binds roles to groups. A step bound on its own follows its binding; otherwise the
//! binding of every agent step, if there is one; otherwise any agent may claim it.

use std::collections::BTreeMap;

/// The key of the binding that covers every agent step without one of its own.
pub const EVERY_AGENT_STEP: &str = "*";

/// The agents and groups of agents a binding admits.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claimants {
    /// Agent identity ids.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Group ids: every agent in one of them.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Claimants {
    /// Whether agent `id`, a member of `groups`, is admitted.
    pub fn admits(&self, id: &str, groups: &[String]) -> bool {
        self.agents.iter().any(|agent| agent == id) || self.groups.iter().any(|group| groups.contains(group))
    }

    /// Whether it names nobody.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty() && self.groups.is_empty()
    }

    /// Who it admits, in words: "the agent a, the agents of group g".
    pub fn described(&self) -> String {
        let agents = self.agents.iter().map(|agent| format!("the agent {agent}"));
        let groups = self.groups.iter().map(|group| format!("the agents of group {group}"));
        agents.chain(groups).collect::<Vec<_>>().join(", ")
    }
}

/// A version's bindings: step id, or [`EVERY_AGENT_STEP`], to who may claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct AgentBindings(pub BTreeMap<String, Claimants>);

impl AgentBindings {
    /// The binding that covers agent step `step`, with its key; `None`: any agent.
    pub fn covering(&self, step: &str) -> Option<(&str, &Claimants)> {
        self.0
            .get_key_value(step)
            .or_else(|| self.0.get_key_value(EVERY_AGENT_STEP))
            .map(|(key, claimants)| (key.as_str(), claimants))
    }

    /// Whether agent `id`, a member of `groups`, may claim agent step `step`.
    pub fn admits(&self, step: &str, id: &str, groups: &[String]) -> bool {
        self.covering(step)
            .is_none_or(|(_, claimants)| claimants.admits(id, groups))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bindings(pairs: &[(&str, &[&str], &[&str])]) -> AgentBindings {
        AgentBindings(
            pairs
                .iter()
                .map(|(key, agents, groups)| {
                    let claimants = Claimants {
                        agents: agents.iter().map(|agent| (*agent).to_owned()).collect(),
                        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
                    };
                    ((*key).to_owned(), claimants)
                })
                .collect(),
        )
    }

    #[test]
    fn a_step_of_its_own_wins_over_every_step_and_nothing_bound_admits_anyone() {
        let bound = bindings(&[("*", &["collector"], &[]), ("write_erp", &[], &["erp"])]);
        let erp = vec!["erp".to_owned()];
        assert!(bound.admits("collect", "collector", &[]));
        assert!(!bound.admits("collect", "writer", &erp));
        assert!(bound.admits("write_erp", "writer", &erp));
        assert!(!bound.admits("write_erp", "collector", &[]));
        assert_eq!(bound.covering("write_erp").map(|(key, _)| key), Some("write_erp"));
        assert_eq!(bound.covering("collect").map(|(key, _)| key), Some("*"));
        assert!(AgentBindings::default().admits("collect", "anyone", &[]));
        assert_eq!(
            bound.covering("collect").map(|(_, claimants)| claimants.described()),
            Some("the agent collector".to_owned())
        );
    }
}
