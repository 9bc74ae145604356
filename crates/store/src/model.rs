//! The rows the store reads and writes. Times are milliseconds since the Unix epoch.

use std::fmt;

/// What an identity is to the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityKind {
    /// Claims and submits agent steps.
    Agent,
    /// Decides work items.
    Person,
    /// A person with the operator role: also cancels runs, sends events, and takes
    /// escalations.
    Operator,
}

impl IdentityKind {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Agent => "agent",
            IdentityKind::Person => "person",
            IdentityKind::Operator => "operator",
        }
    }

    /// The kind a stored name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "agent" => Some(IdentityKind::Agent),
            "person" => Some(IdentityKind::Person),
            "operator" => Some(IdentityKind::Operator),
            _ => None,
        }
    }
}

impl fmt::Display for IdentityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Someone who calls the server, in one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The organization.
    pub org: String,
    /// The identity's id, unique in the organization.
    pub id: String,
    /// Agent, person or operator.
    pub kind: IdentityKind,
    /// For people and operators: the person value (an email, lowercase).
    pub person: Option<String>,
    /// A display name.
    pub name: String,
    /// Ids of the groups the identity belongs to, sorted.
    pub groups: Vec<String>,
}

/// A published version as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    /// The process name.
    pub process: String,
    /// The version number, from 1.
    pub number: u32,
    /// The content hash.
    pub content_hash: String,
    /// The PROCESS.md exactly as published.
    pub source: String,
    /// Role bindings, a JSON object of role → group id.
    pub roles: String,
    /// When it was published.
    pub published_at: i64,
}

/// A version to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVersion {
    /// The process name.
    pub process: String,
    /// The content hash.
    pub content_hash: String,
    /// The PROCESS.md.
    pub source: String,
    /// The parsed frontmatter as JSON.
    pub frontmatter: String,
    /// The body.
    pub body: String,
    /// Role bindings, a JSON object of role → group id.
    pub roles: String,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// The run id.
    pub id: String,
    /// The engine's run as JSON.
    pub doc: String,
}

/// A run to write, with what the indexes need, derived by the caller from the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    /// The run id.
    pub id: String,
    /// The process name.
    pub process: String,
    /// The version number.
    pub version: u32,
    /// `live` or `test`.
    pub mode: String,
    /// The run state as `get_run` shows it.
    pub state: String,
    /// When the run started.
    pub started_at: i64,
    /// When it last changed.
    pub updated_at: i64,
    /// The engine's run as JSON.
    pub doc: String,
    /// Per input field: its name and the SHA-256 of its value's RFC 8785 JSON.
    pub inputs: Vec<(String, String)>,
    /// `get_work` entries that are new or changed since the run was last written.
    pub work: Vec<WorkRow>,
    /// Steps whose `get_work` entry is gone since the run was last written.
    pub gone: Vec<String>,
}

/// Which list of `get_work` a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// An agent step that is ready or claimed.
    Agent,
    /// An open work item.
    Item,
}

impl WorkKind {
    fn as_str(self) -> &'static str {
        match self {
            WorkKind::Agent => "agent",
            WorkKind::Item => "item",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "agent" => Some(WorkKind::Agent),
            "item" => Some(WorkKind::Item),
            _ => None,
        }
    }
}

impl fmt::Display for WorkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `get_work` entry of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkRow {
    /// The run.
    pub run_id: String,
    /// The step.
    pub step_id: String,
    /// Agent step or work item.
    pub kind: WorkKind,
    /// The process name, for the `process` filter.
    pub process: String,
    /// Ready since (agent) or opened at (item): the order of `get_work`.
    pub since: i64,
    /// For a claimed agent step: when its lease ends.
    pub lease_until: Option<i64>,
    /// For an item assigned to a group: the group id.
    pub group: Option<String>,
    /// For an item assigned to a person: the person value, lowercase.
    pub person: Option<String>,
    /// For a ready agent step: its `get_work` item as JSON, so the list needs no run.
    pub item: Option<String>,
}

/// A position in a list ordered by time, then id: the last row of the previous page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    /// The time column.
    pub at: i64,
    /// The id columns, joined by a space.
    pub id: String,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The rows.
    pub items: Vec<T>,
    /// Where the next page starts, when there may be one.
    pub next: Option<Keyset>,
}

/// `list_runs` filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this process.
    pub process: Option<String>,
    /// Only runs in this state.
    pub state: Option<String>,
    /// Only runs whose input field has this value hash (see [`RunRow::inputs`]).
    pub inputs: Vec<(String, String)>,
    /// Start after this position.
    pub after: Option<Keyset>,
    /// At most this many.
    pub limit: u32,
}

/// `get_work` for an agent or a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkQuery {
    /// Agent steps or work items.
    pub kind: WorkKind,
    /// Now, for leases that ended.
    pub now: i64,
    /// For items: the groups that include the caller.
    pub groups: Vec<String>,
    /// For items: the caller's person value.
    pub person: Option<String>,
    /// Only this process.
    pub process: Option<String>,
    /// Start after this position.
    pub after: Option<Keyset>,
    /// At most this many.
    pub limit: u32,
}

/// A write's result as recorded under its `requestId`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRequest {
    /// The tool that was called.
    pub tool: String,
    /// The hash of its arguments.
    pub args_hash: String,
    /// The result it returned.
    pub result: String,
}

/// A write's result to record under its `requestId`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewRequest<'a> {
    /// The client's `requestId`.
    pub request_id: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The hash of its arguments.
    pub args_hash: &'a str,
    /// The result returned.
    pub result: &'a str,
    /// When.
    pub at: i64,
}

/// An upload as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// `f_…`.
    pub id: String,
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
    /// The content type given.
    pub content_type: String,
    /// The file name given.
    pub file_name: String,
    /// Where the bytes are in blob storage.
    pub storage_key: String,
}

/// An upload to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpload {
    /// The upload.
    pub upload: Upload,
    /// Who uploaded it.
    pub uploaded_by: String,
    /// When.
    pub created_at: i64,
}

/// A timer row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerRow {
    /// The organization.
    pub org: String,
    /// The run.
    pub run_id: String,
    /// The engine's timer id.
    pub timer_id: String,
    /// When it fires.
    pub fire_at: i64,
}
