//! What the caller passes with every command: the time, who acts, where ids and tokens
//! come from, and the server's settings. The engine reads no clock and draws no random
//! number of its own.

use std::collections::BTreeMap;

use agentprocess_format::ValidatedProcess;
use jiff::Timestamp;

use crate::claimants::AgentBindings;
use crate::fields::PersonFormat;
use crate::verdict::CheckLimits;

/// Who calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// An agent identity.
    Agent {
        /// Its identity id, as recorded in `by`.
        id: String,
        /// The groups it belongs to, which agent bindings name.
        groups: Vec<String>,
    },
    /// A person, signed in.
    Person {
        /// Their person value (an email), as recorded in `by`.
        person: String,
        /// The groups they belong to.
        groups: Vec<String>,
        /// Whether they hold the organization's operator role.
        operator: bool,
    },
}

impl Actor {
    /// The name recorded in `by` and `startedBy`.
    pub fn name(&self) -> &str {
        match self {
            Actor::Agent { id, .. } => id,
            Actor::Person { person, .. } => person,
        }
    }
}

/// Ids and tokens for new things. The server draws them at random; tests count.
pub trait Ids: Send {
    /// A new work item id, unique within the run.
    fn work_item(&mut self) -> String;
    /// A new claim token: opaque and unguessable.
    fn token(&mut self) -> String;
}

/// The server's settings the rules depend on (published in `describe`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How long a claim lasts.
    pub lease_seconds: u32,
    /// The largest run data, in bytes of JSON (`limits.runDataBytes`).
    pub run_data_bytes: usize,
    /// The form of `person` values.
    pub person: PersonFormat,
    /// The group whose members take escalations: the organization's operators.
    pub escalation_group: String,
    /// The check-1 limits.
    pub check: CheckLimits,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            lease_seconds: 600,
            run_data_bytes: 1 << 20,
            person: PersonFormat::Email,
            escalation_group: "operators".to_owned(),
            check: CheckLimits::default(),
        }
    }
}

/// Everything a command needs besides the run and its version.
pub struct Context<'a> {
    /// The time of the call.
    pub now: Timestamp,
    /// Who calls.
    pub actor: &'a Actor,
    /// Where new ids and tokens come from.
    pub ids: &'a mut dyn Ids,
    /// The server's settings.
    pub settings: &'a Settings,
}

/// A published process version as a run needs it.
#[derive(Debug, Clone)]
pub struct ProcessVersion {
    /// The version number.
    pub number: u32,
    /// The validated document.
    pub process: ValidatedProcess,
    /// Role name → group id, bound at import (spec §7).
    pub roles: BTreeMap<String, String>,
    /// Which agents may claim its agent steps; empty: any agent of the organization.
    pub agents: AgentBindings,
}
