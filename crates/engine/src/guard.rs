//! Checks every write shares: the run has not ended (checked first of all), the token
//! verifies, the lease is live, the caller is who the call needs.

use jiff::{SignedDuration, Timestamp};
use sha2::{Digest, Sha256};

use crate::context::{Actor, Context, Settings};
use crate::error::{Code, ToolError};
use crate::model::{Assignee, Handoff, Run, StepRun, StepState};

/// `conflict` with `run_ended` when the run has ended or been cancelled.
pub(crate) fn not_ended(run: &Run) -> Result<(), ToolError> {
    if run.is_over() {
        return Err(ToolError::new(
            Code::Conflict,
            "the run has ended",
            vec!["run_ended".to_owned()],
        ));
    }
    Ok(())
}

/// The agent's id, or `forbidden` for anyone else.
pub(crate) fn agent(actor: &Actor, tool: &str) -> Result<String, ToolError> {
    match actor {
        Actor::Agent { id, .. } => Ok(id.clone()),
        Actor::Person { .. } => Err(ToolError::new(
            Code::Forbidden,
            format!("{tool} is for agents"),
            Vec::new(),
        )),
    }
}

/// Whether `actor` is among those a work item is assigned to: a member of its group
/// (operators take the escalation group's items), or its person.
pub(crate) fn assigned(actor: &Actor, assignee: &Assignee, settings: &Settings) -> bool {
    let Actor::Person {
        person,
        groups,
        operator,
    } = actor
    else {
        return false;
    };
    match assignee {
        Assignee::Group(group) => groups.contains(group) || (*operator && *group == settings.escalation_group),
        Assignee::Person(assigned) => assigned.eq_ignore_ascii_case(person),
    }
}

/// When a lease taken now ends.
pub(crate) fn lease_end(context: &Context<'_>) -> Timestamp {
    let lease = SignedDuration::from_secs(i64::from(context.settings.lease_seconds));
    context.now.checked_add(lease).unwrap_or(Timestamp::MAX)
}

/// SHA-256 of a token, lowercase hex: all a run keeps of it.
pub(crate) fn token_hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// SHA-256 of `bytes`, lowercase hex: the one spelling of a hash every crate uses.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// When a lease has ended, the step is claimable at once: the claim goes, its token
/// is retired, and its last progress note goes to the handoff.
pub(crate) fn expire_leases(run: &mut Run, now: Timestamp) {
    for step in &mut run.steps {
        if lease_ended(step, now) {
            step.handoff = handoff_at(step, now);
            if step.retire_claim().is_some() {
                step.state = Some(StepState::Ready);
            }
        }
    }
}

/// Whether `step` is claimed on a lease that has ended by `now`.
fn lease_ended(step: &StepRun, now: Timestamp) -> bool {
    step.state == Some(StepState::Claimed) && step.claim.as_ref().is_some_and(|claim| claim.expires_at <= now)
}

/// What the next attempt at `step` is handed as of `now`: its handoff, with the last
/// progress note of a claim whose lease has ended, which the next write moves there.
pub(crate) fn handoff_at(step: &StepRun, now: Timestamp) -> Handoff {
    let mut handoff = step.handoff.clone();
    if lease_ended(step, now)
        && let Some(progress) = step.claim.as_ref().and_then(|claim| claim.progress.clone())
    {
        handoff.progress = Some(progress);
    }
    handoff
}

/// The index of the step a token holds. A token whose lease ended or that was replaced
/// is `stale`; one that never verified is `invalid`. Call after [`expire_leases`].
pub(crate) fn claimed_step(run: &Run, token: &str) -> Result<usize, ToolError> {
    let hash = token_hash(token);
    if let Some(index) = run
        .steps
        .iter()
        .position(|step| step.claim.as_ref().is_some_and(|c| c.token_hash == hash))
    {
        return Ok(index);
    }
    if run.steps.iter().any(|step| step.retired_tokens.contains(&hash)) {
        return Err(ToolError::new(
            Code::Stale,
            "the token is no longer current: its lease ended or the claim was replaced",
            Vec::new(),
        ));
    }
    Err(ToolError::new(
        Code::Invalid,
        "the token does not verify",
        vec!["token: not a token of this run".to_owned()],
    ))
}
