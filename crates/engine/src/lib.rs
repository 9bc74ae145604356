#![doc = include_str!("../README.md")]

mod acceptance;
mod cancel;
mod check;
mod claim;
mod claimants;
mod context;
mod decide;
mod effect;
mod error;
mod escalate;
mod event;
mod fields;
mod guard;
mod machine;
mod model;
mod outcome;
mod renew;
mod start;
mod submit;
mod timer;
mod verdict;
mod view;
mod work;

pub use acceptance::{
    EvidenceItem, MAX_SUMMARY_CHARS, Submission, Submitter, check_submission, is_web_link, link_accepted,
};
pub use cancel::cancel;
pub use check::{Answer, Checked, Material, material, verdict};
pub use claim::{Claimed, claim};
pub use claimants::{AgentBindings, Claimants, EVERY_AGENT_STEP};
pub use context::{Actor, Context, Ids, ProcessVersion, Settings};
pub use decide::{Decide, decide};
pub use effect::{Effect, Notification, Timer, TimerId, TimerKind};
pub use error::{Code, ToolError};
pub use escalate::escalate;
pub use event::send_event;
pub use fields::{PersonFormat, check_fields};
pub use guard::sha256_hex;
pub use model::{
    Assignee, Claim, Decision, End, Escalation, Evidence, Handoff, HeldEvent, Mode, Record, Returned, Run, StepRun,
    StepState, WorkItem,
};
pub use outcome::Transition;
pub use renew::{Renewed, renew};
pub use start::{StartRun, start};
pub use submit::{Submitted, submit};
pub use timer::timer_fired;
pub use verdict::{CheckLimits, CheckRecord, Outcome, QuestionRecord, QuestionType, Verdict};
pub use view::{Asked, ItemKind, RunState, asked, run_data, run_state, snapshot, step_state};
pub use work::{Work, work_items};
