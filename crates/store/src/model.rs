//! The rows the store reads and writes. Times are milliseconds since the Unix epoch.

use std::fmt;

use agentprocess_engine::{Mode, RunState};

/// What an identity is to the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IdentityKind {
    /// Claims and submits agent steps.
    Agent,
    /// Decides work items; what else a person may do follows from their [`Role`].
    Person,
}

impl IdentityKind {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Agent => "agent",
            IdentityKind::Person => "person",
        }
    }

    /// The kind a stored name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "agent" => Some(IdentityKind::Agent),
            "person" => Some(IdentityKind::Person),
            _ => None,
        }
    }
}

impl fmt::Display for IdentityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A person's role in an organization. Each role can do what the ones before it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// Decides the work items of their groups and starts runs.
    Member,
    /// Also cancels runs, sends events and decides escalations.
    Operator,
    /// Also manages members, groups, agents, tokens, sign-in, processes and webhooks.
    Admin,
}

impl Role {
    /// Every role, from least to most.
    pub const ALL: [Role; 3] = [Role::Member, Role::Operator, Role::Admin];

    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// The role a name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == text)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Someone who calls the server, in one organization.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    /// The organization.
    pub org: String,
    /// The identity's id, unique in the organization.
    pub id: String,
    /// Agent or person.
    pub kind: IdentityKind,
    /// For people: their role. `None` for agents.
    pub role: Option<Role>,
    /// For people: the person value (an email, lowercase).
    pub person: Option<String>,
    /// A display name.
    pub name: String,
    /// Ids of the groups the identity belongs to, sorted.
    pub groups: Vec<String>,
    /// When the identity was deactivated; it can then do nothing.
    pub deactivated_at: Option<i64>,
}

impl Identity {
    /// Whether the identity is a person with at least `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.deactivated_at.is_none() && self.role.is_some_and(|held| held >= role)
    }
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
    /// Agent bindings, a JSON object of step id (or `*`) → the agents and groups that
    /// may claim it.
    pub agents: String,
    /// When it was published.
    pub published_at: i64,
}

/// A draft as stored: a process being prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDraft {
    /// The PROCESS.md.
    pub source: String,
    /// Role bindings, a JSON object of role → group id.
    pub roles: String,
    /// Agent bindings as JSON, as [`StoredVersion::agents`].
    pub agents: String,
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
    /// Agent bindings as JSON, as [`StoredVersion::agents`].
    pub agents: String,
    /// The same agent bindings as rows for `get_work` to filter by: the step id (or
    /// `*`), then `agent` or `group`, then the agent's or group's id.
    pub claimants: Vec<(String, &'static str, String)>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// The run id.
    pub id: String,
    /// The run as JSON, without the parts kept apart in [`StoredRun::pieces`].
    pub doc: String,
    /// The run's pieces, by number.
    pub pieces: Vec<Piece>,
    /// How many times the row was written since it was made: a write made on what was
    /// read names it ([`RunWrite::revision`]).
    pub revision: i64,
}

/// A part of a run kept apart from its row: written once, never changed, read with the
/// run. What a piece holds and how the document refers to it is the writer's business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its number, unique within the run.
    pub number: i64,
    /// Its JSON.
    pub body: String,
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
    pub mode: Mode,
    /// The run state as `get_run` shows it.
    pub state: RunState,
    /// When the run started.
    pub started_at: i64,
    /// When it last changed.
    pub updated_at: i64,
    /// The run as JSON, without its pieces.
    pub doc: String,
    /// Pieces new since the run was last written (every piece, for a new run).
    pub pieces: Vec<Piece>,
    /// Per input field: its name and the SHA-256 of its value's RFC 8785 JSON.
    pub inputs: Vec<(String, String)>,
    /// `get_work` entries that are new or changed since the run was last written.
    pub work: Vec<WorkRow>,
    /// Steps whose `get_work` entry is gone since the run was last written.
    pub gone: Vec<String>,
}

/// One write of a run and of what goes with it, made at once: in one statement on
/// PostgreSQL, in the caller's transaction on SQLite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunWrite<'a> {
    /// The run's new row.
    pub row: &'a RunRow,
    /// The revision the run had when it was read: the write happens only if it still
    /// has it. `None`: a new run.
    pub revision: Option<i64>,
    /// Timers to add or move. No timer is both here and in [`RunWrite::cancelled`].
    pub timers: Vec<TimerRow>,
    /// Timers to remove, by id.
    pub cancelled: Vec<String>,
    /// Notifications for the outbox, each with a delivery per webhook endpoint.
    pub notifications: Vec<NewNotification<'a>>,
    /// Entries for the audit log.
    pub audit: Vec<crate::AuditRow>,
    /// The result to record under the call's `requestId`.
    pub request: Option<NewRequest<'a>>,
}

impl<'a> RunWrite<'a> {
    /// A write of `row` alone, at `revision` (`None`: a new run); the rest is added.
    pub fn new(row: &'a RunRow, revision: Option<i64>) -> Self {
        Self {
            row,
            revision,
            timers: Vec::new(),
            cancelled: Vec::new(),
            notifications: Vec::new(),
            audit: Vec::new(),
            request: None,
        }
    }

    /// Adds or moves a timer (and keeps it if an earlier part of the write removed it).
    pub fn schedule(&mut self, timer: TimerRow) {
        self.cancelled.retain(|id| *id != timer.timer_id);
        self.timers.retain(|kept| kept.timer_id != timer.timer_id);
        self.timers.push(timer);
    }

    /// Removes a timer (and drops it if an earlier part of the write added it).
    pub fn cancel(&mut self, timer_id: &str) {
        self.timers.retain(|kept| kept.timer_id != timer_id);
        if !self.cancelled.iter().any(|id| id == timer_id) {
            self.cancelled.push(timer_id.to_owned());
        }
    }
}

/// How a [`RunWrite`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written, making this many webhook deliveries.
    Written {
        /// Deliveries its notifications made.
        deliveries: u64,
    },
    /// Nothing was written: another write changed the run since it was read.
    RunChanged,
    /// Nothing was written: a write with the same `requestId` was recorded first (the
    /// caller answers as a replay of it). In a transaction, the caller rolls back.
    AlreadyRecorded,
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
    /// When the step is due, if it has a `due`.
    pub due_at: Option<i64>,
    /// For an agent step bound to some agents: the binding, as `<version>/<step id or
    /// *>`; `None`: any agent may claim it.
    pub bound_to: Option<String>,
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
    pub state: Option<RunState>,
    /// Only runs whose input field has this value hash (see [`RunRow::inputs`]).
    pub inputs: Vec<(String, String)>,
    /// Only runs in this mode.
    pub mode: Option<Mode>,
    /// Only runs started at or after this time (epoch milliseconds).
    pub started_from: Option<i64>,
    /// Only runs started before this time.
    pub started_before: Option<i64>,
    /// Newest first; oldest first when false.
    pub newest_first: bool,
    /// Start after this position (in the listing's order).
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
    /// The groups that include the caller: for items, those assigned to them; for
    /// agent steps, those a binding may name.
    pub groups: Vec<String>,
    /// For items: the caller's person value.
    pub person: Option<String>,
    /// For agent steps: the calling agent's id. Agent steps bound to agents list only
    /// for an agent the binding names, by id or by one of `groups`.
    pub agent: Option<String>,
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
    /// The `traceparent` of the call that set it, when that call was traced.
    pub trace_parent: Option<String>,
}

/// A timer row taken for firing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenTimer {
    /// When it was due.
    pub due_at: i64,
    /// The `traceparent` of the call that set it.
    pub trace_parent: Option<String>,
}

/// How much work waits, across every organization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkLevels {
    /// Agent steps that can be claimed now.
    pub ready_agent_steps: i64,
    /// Open work items of people.
    pub open_work_items: i64,
}

/// A webhook endpoint of an organization.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Webhook {
    /// Its id.
    pub id: String,
    /// Where deliveries are posted.
    pub url: String,
    /// The key deliveries are signed with.
    pub secret: String,
    /// When it was added (milliseconds).
    pub created_at: i64,
}

/// A notification to put in the outbox, with a delivery for each of the
/// organization's webhooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification<'a> {
    /// Its id, unique in the organization.
    pub id: &'a str,
    /// The run it is about.
    pub run_id: &'a str,
    /// What happened (`work_item.created`, …).
    pub event: &'a str,
    /// The JSON posted to each endpoint.
    pub body: &'a str,
    /// When (milliseconds); the first attempt is due then.
    pub created_at: i64,
    /// The `traceparent` of the call that caused it, when that call was traced.
    pub trace_parent: Option<&'a str>,
}

/// A delivery taken for an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The organization.
    pub org: String,
    /// The notification.
    pub notification_id: String,
    /// The endpoint.
    pub webhook_id: String,
    /// The endpoint's URL.
    pub url: String,
    /// The endpoint's signing key.
    pub secret: String,
    /// The body to post.
    pub body: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
    /// The `traceparent` of the call that caused the notification.
    pub trace_parent: Option<String>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptResult {
    /// `delivered`, `pending` (tried again at `next_at`) or `failed`.
    pub status: DeliveryStatus,
    /// When to try again, for `pending`.
    pub next_at: i64,
    /// The endpoint's HTTP status, if it answered.
    pub status_code: Option<u16>,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// When the attempt ended.
    pub at: i64,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not delivered yet; will be tried (again).
    Pending,
    /// The endpoint answered 2xx.
    Delivered,
    /// Given up.
    Failed,
}

impl DeliveryStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

/// A delivery as recorded, for operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// The notification.
    pub notification_id: String,
    /// Its event.
    pub event: String,
    /// The run it is about.
    pub run_id: String,
    /// The endpoint.
    pub webhook_id: String,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts so far.
    pub attempts: u32,
    /// The endpoint's last HTTP status.
    pub last_status_code: Option<u16>,
    /// The last error.
    pub last_error: Option<String>,
    /// When the notification was made.
    pub created_at: i64,
    /// When the delivery last changed.
    pub updated_at: i64,
}

impl DeliveryRecord {
    pub(crate) fn status_from(text: &str) -> crate::Result<DeliveryStatus> {
        DeliveryStatus::parse(text).ok_or_else(|| crate::Error::Corrupt(format!("delivery status {text:?}")))
    }
}
