//! The results of `claim`, `renew`, `upload` and `send_event`.

use agentprocess_engine::{Claimed, Mode, ProcessVersion, Renewed};
use agentprocess_format::{EvidenceKind, StepKind, exact};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::data::RunData;
use crate::work::{HandoffView, Route, evidence_kinds, output_declaration, routes};

/// `claim`'s result: the token, the step's instructions and declarations, the handoff,
/// the body and the run data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimResult {
    /// The claim token: the agent's proof of the claim, shown this once.
    pub token: String,
    /// When the lease ends unless renewed.
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
    /// `live` or `test`.
    #[schema(value_type = String, pattern = "^(live|test)$")]
    pub mode: Mode,
    /// The claimed step.
    pub step: ClaimedStep,
    /// What the previous attempt left.
    pub handoff: Option<HandoffView>,
    /// The process body.
    pub body: String,
    /// The run data.
    pub data: RunData,
}

impl ClaimResult {
    /// The result of `claimed`, on `version`.
    pub fn of(claimed: &Claimed, version: &ProcessVersion) -> Self {
        let run = &claimed.transition.run;
        let step = &run.steps[claimed.step];
        let definition = &version.process.document().steps[claimed.step];
        let instructions = match &definition.kind {
            StepKind::Agent(instructions) => instructions.clone(),
            _ => String::new(),
        };
        Self {
            token: claimed.token.clone(),
            expires_at: claimed.expires_at,
            mode: run.mode,
            step: ClaimedStep {
                id: step.id.clone(),
                instructions,
                output: output_declaration(version, claimed.step),
                evidence: evidence_kinds(definition),
                next: routes(definition),
            },
            handoff: HandoffView::of(&step.handoff),
            body: version.process.body().to_owned(),
            data: RunData::of(run),
        }
    }
}

impl crate::ToolResult for ClaimResult {
    fn sign_files(&mut self, url: &dyn Fn(&str) -> String) {
        self.data.sign_files(url);
    }

    fn run_data_mut(&mut self) -> Option<&mut RunData> {
        Some(&mut self.data)
    }

    fn credential_mut(&mut self) -> Option<&mut String> {
        Some(&mut self.token)
    }
}

/// `step` of a claim result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ClaimedStep {
    /// The step id.
    pub id: String,
    /// What to do.
    pub instructions: String,
    /// The `output` declaration as written.
    #[serde(deserialize_with = "exact::deserialize_object")]
    #[schema(value_type = Object)]
    pub output: Map<String, Value>,
    /// The evidence kinds asked for.
    #[schema(value_type = Vec<String>)]
    pub evidence: Vec<EvidenceKind>,
    /// The routes to choose from, when `next` is a list.
    pub next: Option<Vec<Route>>,
}

/// `renew`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenewResult {
    /// The new token; the old one is dead.
    pub token: String,
    /// When the new lease ends.
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

impl From<Renewed> for RenewResult {
    fn from(renewed: Renewed) -> Self {
        Self {
            token: renewed.token,
            expires_at: renewed.expires_at,
        }
    }
}

impl crate::ToolResult for RenewResult {
    fn credential_mut(&mut self) -> Option<&mut String> {
        Some(&mut self.token)
    }
}

/// `upload`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UploadResult {
    /// The file's id, to cite as evidence `ref`.
    pub id: String,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

impl crate::ToolResult for UploadResult {}

/// `send_event`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventResult {
    /// The step whose wait took the event, or `null` when it is held for later.
    pub consumed_by: Option<String>,
}

impl crate::ToolResult for EventResult {}
