#![doc = include_str!("../README.md")]

pub mod agreement;
mod data;
pub mod map;
mod results;
mod run;
mod work;

pub use data::{EvidenceView, RecordView, RunData, StepData};
pub use results::{ClaimResult, ClaimedStep, EventResult, RenewResult, UploadResult};
pub use run::{Ended, Page, Point, RunListItem, RunSummary, RunView, StepView};
pub use work::{
    AgentWork, ClaimArguments, ClaimCall, DecideArguments, DecideCall, EscalationView, HandoffView, Note, PersonWork,
    Route, WorkEntry, WorkItemView,
};

/// What a write answers: stored under its `requestId` as JSON and read back for a
/// replay, when the URLs of its files are signed afresh.
pub trait ToolResult: serde::Serialize + serde::de::DeserializeOwned {
    /// Fills the `url` of every file item this result shows with `url(ref)`.
    fn sign_files(&mut self, url: &dyn Fn(&str) -> String) {
        let _ = url;
    }

    /// The run data this result shows, if it shows any: a recorded result may keep it
    /// as a reference to the run instead of a copy.
    fn run_data_mut(&mut self) -> Option<&mut RunData> {
        None
    }

    /// The credential this result hands out (a claim token), if any: a recorded result
    /// keeps it sealed, so the database alone yields no usable token.
    fn credential_mut(&mut self) -> Option<&mut String> {
        None
    }
}

/// What a call gives an agent to copy as `requestId`: the caller makes a new one.
pub const NEW_REQUEST_ID: &str = "<new UUID>";
