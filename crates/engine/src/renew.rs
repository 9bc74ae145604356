//! `renew`: a new token and expiry for a live claim; the old token dies at once.

use jiff::Timestamp;

use crate::context::Context;
use crate::error::{Code, ToolError};
use crate::guard::{agent, claimed_step, expire_leases, lease_end, not_ended, token_hash};
use crate::model::{Claim, Run};
use crate::outcome::Transition;

/// The new token of a renewed claim and its expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renewed {
    /// The new token; the old one is dead.
    pub token: String,
    /// When the new lease ends.
    pub expires_at: Timestamp,
}

/// Renews the claim `token` holds, keeping `progress` on the step when given.
pub fn renew(
    run: &Run,
    token: &str,
    progress: Option<String>,
    context: &mut Context<'_>,
) -> Result<(Transition, Renewed), ToolError> {
    not_ended(run)?;
    agent(context.actor, "renew")?;
    let mut run = run.clone();
    expire_leases(&mut run, context.now);
    let index = claimed_step(&run, token)?;
    let fresh = context.ids.token();
    let expires_at = lease_end(context);
    let step = &mut run.steps[index];
    let Some(old) = step.retire_claim() else {
        return Err(ToolError::new(
            Code::Stale,
            "the claim is no longer current",
            Vec::new(),
        ));
    };
    step.claim = Some(Claim {
        holder: old.holder,
        token_hash: token_hash(&fresh),
        expires_at,
        progress: progress.or(old.progress),
    });
    run.updated_at = context.now;
    Ok((
        Transition {
            run,
            effects: Vec::new(),
        },
        Renewed {
            token: fresh,
            expires_at,
        },
    ))
}
