//! Work items (what a person is asked) and the items of `get_work`, each carrying the
//! call to make on it.

use agentprocess_engine::{
    Assignee, Decision, Escalation, Handoff, ItemKind, Mode, ProcessVersion, Run, Work, asked, snapshot,
};
use agentprocess_format::{EvidenceKind, Next, Step, exact};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::NEW_REQUEST_ID;

/// An open work item, as the run view and `get_work` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkItemView {
    /// Its id, unique in the run.
    pub id: String,
    /// The step it is on.
    pub step_id: String,
    /// `approve`, `task`, or `agent` for an escalated agent step.
    #[schema(value_type = String, pattern = "^(agent|task|approve)$")]
    pub kind: ItemKind,
    /// The step's text.
    pub text: String,
    /// The step's `output` declaration as written; `null` for an approval.
    #[serde(default, deserialize_with = "exact::deserialize_optional_object")]
    #[schema(value_type = Option<Object>)]
    pub output: Option<Map<String, Value>>,
    /// The evidence kinds the step asks for; `null` for an approval.
    #[schema(value_type = Option<Vec<String>>)]
    pub evidence: Option<Vec<EvidenceKind>>,
    /// The routes to choose from, when `next` is a list.
    pub next: Option<Vec<Route>>,
    /// What the previous attempt left; `null` on a first attempt.
    pub handoff: Option<HandoffView>,
    /// `{ group }` or `{ person }`.
    #[schema(value_type = Object)]
    pub assigned_to: Assignee,
    /// The run data's snapshot when this was read; `decide` sends it back.
    pub snapshot: String,
    /// When the step's `due` passes.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub due: Option<Timestamp>,
    /// The escalation, if an agent or an unsure check escalated the step.
    pub escalation: Option<EscalationView>,
    /// `test` on a test run's item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, pattern = "^test$")]
    pub mode: Option<Mode>,
    /// The call that decides it.
    pub decide: DecideCall,
}

impl WorkItemView {
    /// The open work item of step `index`, if it has one that a person decides.
    pub fn of(run: &Run, version: &ProcessVersion, index: usize, snapshot: &str) -> Option<Self> {
        let step = &run.steps[index];
        let item = step.work_item.as_ref()?;
        let definition = &version.process.document().steps[index];
        let asked = asked(definition, item)?;
        let (output, evidence, next) = if asked.kind == ItemKind::Approve {
            (None, None, None)
        } else {
            (
                Some(output_declaration(version, index)),
                Some(evidence_kinds(definition)),
                routes(definition),
            )
        };
        Some(Self {
            id: item.id.clone(),
            step_id: step.id.clone(),
            kind: asked.kind,
            text: asked.text.to_owned(),
            output,
            evidence,
            next,
            handoff: HandoffView::of(&step.handoff),
            assigned_to: item.assigned_to.clone(),
            snapshot: snapshot.to_owned(),
            due: step.due_at,
            escalation: item.escalation.as_ref().map(EscalationView::of),
            mode: (run.mode == Mode::Test).then_some(Mode::Test),
            decide: DecideCall {
                tool: "decide".to_owned(),
                arguments: DecideArguments {
                    run_id: run.id.clone(),
                    work_item_id: item.id.clone(),
                    snapshot: snapshot.to_owned(),
                    request_id: NEW_REQUEST_ID.to_owned(),
                },
                decisions: asked.decisions.to_vec(),
            },
        })
    }
}

/// The step's `output` declaration as written (`{}` when it declares none).
pub(crate) fn output_declaration(version: &ProcessVersion, index: usize) -> Map<String, Value> {
    version.process.frontmatter()["steps"][index]
        .get("output")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The evidence kinds a step asks for.
pub(crate) fn evidence_kinds(definition: &Step) -> Vec<EvidenceKind> {
    definition.evidence.clone()
}

/// The routes of a step whose `next` is a list.
pub(crate) fn routes(definition: &Step) -> Option<Vec<Route>> {
    match &definition.next {
        Some(Next::Routes(routes)) => Some(
            routes
                .iter()
                .map(|route| Route {
                    to: route.to.clone(),
                    when: route.when.clone(),
                })
                .collect(),
        ),
        _ => None,
    }
}

/// A route to choose as `next`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Route {
    /// The step it goes to.
    pub to: String,
    /// Its plain-language label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
}

/// What the previous attempt at a step left for the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HandoffView {
    /// The last `progress` note of a lease that ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// The note of the person who returned the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned: Option<Note>,
    /// The issues of the last refused submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues: Option<Vec<String>>,
    /// The verdict of the check that sent it back (check-1, `check-verdict.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub check: Option<Value>,
}

impl HandoffView {
    /// The handoff, or `None` on a first attempt.
    pub fn of(handoff: &Handoff) -> Option<Self> {
        (!handoff.is_empty()).then(|| Self {
            progress: handoff.progress.clone(),
            returned: handoff.returned.as_ref().map(|returned| Note {
                note: returned.note.clone(),
                by: returned.by.clone(),
                at: returned.at,
            }),
            issues: handoff.issues.clone(),
            check: handoff.check.as_ref().and_then(|check| exact::to_value(check).ok()),
        })
    }
}

/// An escalation: an agent's note, or an unsure check's verdict with the submission it
/// held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EscalationView {
    /// The agent's note, or the check's unsure answers.
    pub note: String,
    /// The agent, or whoever made the held submission.
    pub by: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The unsure verdict (check-1, `check-verdict.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub check: Option<Value>,
    /// The held submission; `completed` without `output` completes the step with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub candidate: Option<Value>,
}

impl EscalationView {
    /// The view of `escalation`.
    pub fn of(escalation: &Escalation) -> Self {
        Self {
            note: escalation.note.clone(),
            by: escalation.by.clone(),
            at: escalation.at,
            check: escalation.check.as_ref().and_then(|check| exact::to_value(check).ok()),
            candidate: escalation
                .candidate
                .as_ref()
                .and_then(|candidate| exact::to_value(candidate).ok()),
        }
    }
}

/// A note someone left: an escalation, or a step returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Note {
    /// What they wrote.
    pub note: String,
    /// Who.
    pub by: String,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
}

/// `decide` as a work item spells it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecideCall {
    /// `decide`.
    pub tool: String,
    /// Its arguments but the decision.
    pub arguments: DecideArguments,
    /// The decisions the item accepts.
    #[schema(value_type = Vec<String>)]
    pub decisions: Vec<Decision>,
}

/// The arguments a `decide` call copies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecideArguments {
    /// The run.
    pub run_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The snapshot the decision is made on.
    pub snapshot: String,
    /// A placeholder: the caller makes a new one.
    pub request_id: String,
}

/// An item of `get_work`: a step an agent may claim, or a work item a person may decide.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
#[expect(
    clippy::large_enum_variant,
    reason = "made per item of one page and serialized at once; a box would only add an allocation"
)]
pub enum WorkEntry {
    /// For an agent.
    Agent(AgentWork),
    /// For a person.
    Person(PersonWork),
}

impl WorkEntry {
    /// The item `work` names in `run`; `None` if it names no decidable item. Only a
    /// person's item carries the run data's snapshot, so only it pays for one.
    pub fn of(run: &Run, version: &ProcessVersion, work: Work) -> Option<Self> {
        match work {
            Work::Claimable { step, since, handoff } => {
                let step = &run.steps[step];
                Some(Self::Agent(AgentWork {
                    run_id: run.id.clone(),
                    step_id: step.id.clone(),
                    process: run.process.clone(),
                    version: run.version,
                    mode: run.mode,
                    ready_since: since,
                    due: step.due_at,
                    overdue: step.overdue,
                    handoff: HandoffView::of(&handoff),
                    claim: ClaimCall {
                        tool: "claim".to_owned(),
                        arguments: ClaimArguments {
                            run_id: run.id.clone(),
                            step_id: step.id.clone(),
                            request_id: NEW_REQUEST_ID.to_owned(),
                        },
                    },
                }))
            }
            Work::Decidable { step } => Some(Self::Person(PersonWork {
                run_id: run.id.clone(),
                process: run.process.clone(),
                version: run.version,
                mode: run.mode,
                work_item: WorkItemView::of(run, version, step, &snapshot(run))?,
            })),
        }
    }
}

/// A ready agent step, with the `claim` call that takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentWork {
    /// The run.
    pub run_id: String,
    /// The step.
    pub step_id: String,
    /// The process name.
    pub process: String,
    /// The version the run is pinned to.
    pub version: u32,
    /// `live` or `test`.
    #[schema(value_type = String, pattern = "^(live|test)$")]
    pub mode: Mode,
    /// Since when the step is ready.
    #[schema(value_type = String, format = DateTime)]
    pub ready_since: Timestamp,
    /// When its `due` passes.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub due: Option<Timestamp>,
    /// Whether `due` has passed.
    pub overdue: bool,
    /// What the previous attempt left.
    pub handoff: Option<HandoffView>,
    /// The call that claims it.
    pub claim: ClaimCall,
}

/// `claim` as a `get_work` item spells it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimCall {
    /// `claim`.
    pub tool: String,
    /// Its arguments.
    pub arguments: ClaimArguments,
}

/// The arguments a `claim` call copies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimArguments {
    /// The run.
    pub run_id: String,
    /// The step.
    pub step_id: String,
    /// A placeholder: the caller makes a new one.
    pub request_id: String,
}

/// An open work item assigned to the calling person.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersonWork {
    /// The run.
    pub run_id: String,
    /// The process name.
    pub process: String,
    /// The version the run is pinned to.
    pub version: u32,
    /// `live` or `test`.
    #[schema(value_type = String, pattern = "^(live|test)$")]
    pub mode: Mode,
    /// The work item.
    pub work_item: WorkItemView,
}
