//! `claim`: an agent takes a ready agent step for the length of a lease.

use jiff::Timestamp;

use crate::context::{Actor, Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::{agent, expire_leases, lease_end, not_ended, token_hash};
use crate::model::{Claim, Run, StepState};
use crate::outcome::Transition;
use agentprocess_format::StepKind;

/// What `claim` returns besides the new run: the token (the run keeps only its hash),
/// its expiry, and the step claimed.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The run after the claim.
    pub transition: Transition,
    /// The claim token.
    pub token: String,
    /// When the lease ends.
    pub expires_at: Timestamp,
    /// The index of the claimed step.
    pub step: usize,
}

/// Claims step `step_id` for the calling agent.
pub fn claim(
    run: &Run,
    version: &ProcessVersion,
    step_id: &str,
    context: &mut Context<'_>,
) -> Result<Claimed, ToolError> {
    not_ended(run)?;
    let holder = agent(context.actor, "claim")?;
    let index = run
        .steps
        .iter()
        .position(|step| step.id == step_id)
        .ok_or_else(|| ToolError::new(Code::NotFound, format!("no step {step_id:?} in this run"), Vec::new()))?;
    let definition = &version.process.document().steps[index];
    let StepKind::Agent(_) = &definition.kind else {
        return Err(ToolError::new(
            Code::Forbidden,
            format!("{step_id} is not an agent step"),
            Vec::new(),
        ));
    };
    if let Actor::Agent { id, groups } = context.actor
        && let Some((_, claimants)) = version.agents.covering(step_id)
        && !claimants.admits(id, groups)
    {
        return Err(ToolError::new(
            Code::Forbidden,
            format!("{step_id} is bound to other agents"),
            vec![format!(
                "stepId: the organization binds {step_id} of {} to {}; agent {id} is not among them",
                run.process,
                claimants.described()
            )],
        ));
    }
    let mut run = run.clone();
    expire_leases(&mut run, context.now);
    let step = &mut run.steps[index];
    match (step.state, &step.claim) {
        (Some(StepState::Claimed), Some(claim)) => {
            let who = if claim.holder == holder {
                "claimed_by_you"
            } else {
                "claimed_by_other"
            };
            return Err(ToolError::new(
                Code::Conflict,
                format!("{step_id} is claimed"),
                vec![who.to_owned()],
            ));
        }
        (Some(StepState::Ready), _) => {}
        _ => {
            return Err(ToolError::new(
                Code::Conflict,
                format!("{step_id} is not ready"),
                vec!["not_ready".to_owned()],
            ));
        }
    }
    let token = context.ids.token();
    let expires_at = lease_end(context);
    step.state = Some(StepState::Claimed);
    step.claim = Some(Claim {
        holder,
        token_hash: token_hash(&token),
        expires_at,
        progress: None,
    });
    run.updated_at = context.now;
    Ok(Claimed {
        transition: Transition {
            run,
            effects: Vec::new(),
        },
        token,
        expires_at,
        step: index,
    })
}
