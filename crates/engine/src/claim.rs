//! `claim`: an agent takes a ready agent step for the length of a lease.

use serde_json::{Value, json};

use crate::Transition;
use crate::context::{Context, ProcessVersion};
use crate::error::{Code, ToolError};
use crate::guard::{agent, expire_leases, lease_end, not_ended, token_hash};
use crate::model::{Claim, Run, StepState};
use crate::view::{handoff, routes, run_data};
use agentprocess_format::StepKind;

/// What `claim` returns besides the new run: the claim result of tools.md, token
/// included (the run keeps only its hash).
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The run after the claim.
    pub transition: Transition,
    /// `{ token, expiresAt, mode, step, handoff, body, data }`.
    pub result: Value,
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
    let StepKind::Agent(instructions) = &definition.kind else {
        return Err(ToolError::new(
            Code::Forbidden,
            format!("{step_id} is not an agent step"),
            Vec::new(),
        ));
    };
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
    let step_handoff = handoff(&step.handoff);
    run.updated_at = context.now;

    let written = &version.process.frontmatter()["steps"][index];
    let evidence: Vec<&str> = definition.evidence.iter().map(|kind| kind.name()).collect();
    let mut result = json!({
        "token": token,
        "expiresAt": expires_at,
        "mode": run.mode.as_str(),
        "step": {
            "id": step_id,
            "instructions": instructions,
            "output": written.get("output").cloned().unwrap_or_else(|| json!({})),
            "evidence": evidence,
            "next": routes(definition),
        },
        "handoff": step_handoff,
        "body": version.process.body(),
        "data": null,
    });
    // Set after `json!`, which would respell the numbers of the run data.
    result["data"] = run_data(&run);
    Ok(Claimed {
        transition: Transition {
            run,
            effects: Vec::new(),
        },
        result,
    })
}
