#![doc = include_str!("../README.md")]

pub mod admin;
mod agent;
mod check;
mod claimants;
mod clock;
mod cursor;
mod deadline;
mod error;
mod fair;
mod files;
mod hook_urls;
mod ids;
mod index;
mod limits;
mod messages;
mod notify;
mod observe;
mod open_versions;
mod overdue;
mod people;
mod policies;
mod processes;
mod recorded;
mod retention;
mod runs;
mod scheduler;
mod stored;
mod versions;
mod webhooks;
mod work;
mod write;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use agentprocess_blobs::ServerBlobs;
use agentprocess_engine::{Actor, Code, Context, ToolError};
use agentprocess_store::Directory;
use agentprocess_store::SqlStore;
use agentprocess_store::{Identity, IdentityKind, Role};
use agentprocess_timers::TimerQueue;
use tokio::sync::Notify;

pub use admin::Admin;
pub use clock::{Clock, SystemClock, TestClock};
pub use deadline::DeadlinePassed;
pub use error::{Cause, Error, RETRY_MESSAGE};
pub use files::FileDownload;
pub use hook_urls::PlainHttpHooks;
pub use ids::{random_id, sha256_hex, token_run};
pub use limits::{Admission, Limit, LimitValues, LimitsReport, OrgLimits, OverLimit};
pub use messages::{
    ChatHookView, ChatKind, Choice, Choices, LONGEST_REMINDER_HOURS, MailSettings, MessageKind, OrgMessageSettings,
};
pub use open_versions::MAX_KEEP_OPEN_REASON_CHARS;
pub use overdue::{OVERDUE_SHOWN, Overdue, WaitsOn};
pub use policies::{Kept, POLICY_ISSUE, Policies, WorkDone};
pub use retention::{Retention, SweepSettings};
pub use runs::{ListRuns, PendingTimer, RunDetails, StartRunArgs};
pub use scheduler::SchedulerSettings;
pub use webhooks::{WebhookSettings, sign_webhook};
pub use work::RunFacts;
pub use write::Write;

/// A tool of the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `describe`.
    Describe,
    /// `list_processes`.
    ListProcesses,
    /// `start_run`.
    StartRun,
    /// `get_run`.
    GetRun,
    /// `get_work`.
    GetWork,
    /// `claim`.
    Claim,
    /// `renew`.
    Renew,
    /// `upload`.
    Upload,
    /// `submit`.
    Submit,
    /// `escalate`.
    Escalate,
    /// `decide`.
    Decide,
    /// `cancel`.
    Cancel,
    /// `send_event`.
    SendEvent,
    /// `list_runs`.
    ListRuns,
}

impl Tool {
    /// Every tool the server offers, in the order `describe` lists them.
    pub const ALL: [Tool; 14] = [
        Tool::Describe,
        Tool::ListProcesses,
        Tool::StartRun,
        Tool::GetRun,
        Tool::GetWork,
        Tool::Claim,
        Tool::Renew,
        Tool::Upload,
        Tool::Submit,
        Tool::Escalate,
        Tool::Decide,
        Tool::Cancel,
        Tool::SendEvent,
        Tool::ListRuns,
    ];

    /// The tool's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Describe => "describe",
            Tool::ListProcesses => "list_processes",
            Tool::StartRun => "start_run",
            Tool::GetRun => "get_run",
            Tool::GetWork => "get_work",
            Tool::Claim => "claim",
            Tool::Renew => "renew",
            Tool::Upload => "upload",
            Tool::Submit => "submit",
            Tool::Escalate => "escalate",
            Tool::Decide => "decide",
            Tool::Cancel => "cancel",
            Tool::SendEvent => "send_event",
            Tool::ListRuns => "list_runs",
        }
    }

    /// The tool a name stands for.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }

    /// The OAuth scope a token needs to call it.
    pub fn scope(self) -> Scope {
        match self {
            Tool::StartRun => Scope::Start,
            Tool::Decide => Scope::Decide,
            Tool::Cancel | Tool::SendEvent => Scope::Operate,
            Tool::Describe
            | Tool::ListProcesses
            | Tool::GetRun
            | Tool::GetWork
            | Tool::Claim
            | Tool::Renew
            | Tool::Upload
            | Tool::Submit
            | Tool::Escalate
            | Tool::ListRuns => Scope::Work,
        }
    }

    /// Whether a call may change something (so it counts against the writes limit).
    pub fn writes(self) -> bool {
        !matches!(
            self,
            Tool::Describe | Tool::ListProcesses | Tool::GetRun | Tool::GetWork | Tool::ListRuns
        )
    }
}

/// What an OAuth access token for `/mcp` may do. A token an admin issued carries no
/// scopes: it may do whatever its identity may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `process:work`: the agent loop, and reading.
    Work,
    /// `process:start`: starting runs.
    Start,
    /// `process:decide`: deciding work items (people only).
    Decide,
    /// `process:operate`: cancelling runs and sending events.
    Operate,
}

impl Scope {
    /// Every scope, in the order they are documented.
    pub const ALL: [Scope; 4] = [Scope::Work, Scope::Start, Scope::Decide, Scope::Operate];

    /// The scope's name.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Work => "process:work",
            Scope::Start => "process:start",
            Scope::Decide => "process:decide",
            Scope::Operate => "process:operate",
        }
    }

    /// The scopes a space-separated list names; unknown names are left out.
    pub fn parse_list(text: &str) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = text
            .split_ascii_whitespace()
            .filter_map(|name| Scope::ALL.into_iter().find(|scope| scope.name() == name))
            .collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }
}

/// What a process may use on this server without an evaluator: `parallel-1`, `upload`
/// and `send_event`. With an evaluator configured, `check-1` too
/// ([`Service::capabilities`]).
pub const CAPABILITIES: agentprocess_format::Capabilities = agentprocess_format::Capabilities {
    parallel: true,
    check: false,
    upload: true,
    send_event: true,
};

/// What a version published earlier may use: everything this server has ever offered.
/// It validated at publication; a version with `check:` published while an evaluator
/// was configured still runs (its checks answer `retry` until one is configured again).
pub(crate) const PUBLISHED: agentprocess_format::Capabilities = agentprocess_format::Capabilities {
    check: true,
    ..CAPABILITIES
};

/// The largest `limit` of a paged list.
pub const MAX_PAGE: u32 = 100;

/// Settings of the service layer.
#[derive(Clone)]
pub struct Settings {
    /// What the engine needs: lease length, run data cap, person format, escalation group.
    pub engine: agentprocess_engine::Settings,
    /// The largest upload, in bytes.
    pub max_upload_bytes: usize,
    /// The server's address as callers reach it, for file URLs (`http://host:port`).
    pub public_url: String,
    /// The key that signs file URLs; every API process of a deployment shares it.
    pub url_secret: Vec<u8>,
    /// How long a file URL lives, at least.
    pub url_seconds: u32,
    /// How long a bearer token's identity is remembered between calls, so most calls
    /// need no lookup. A revoked token or changed group stays in effect this long.
    pub identity_cache_seconds: u32,
    /// The key that seals the claim tokens kept in recorded results; every API process
    /// of a deployment shares it.
    pub seal_key: agentprocess_auth::SecretKey,
    /// The longest a call, or one pass of a background loop, may take; past it the
    /// work is dropped and a call is answered `retry`.
    pub call_deadline: std::time::Duration,
    /// The limits of every organization unless the platform granted it others
    /// (`None`: no limit). [`DEFAULT_LIMITS`] in a server; none by default here.
    pub limits: LimitValues,
    /// Whether webhooks and chat hooks may post over plain http: checked when a URL is
    /// set (the API) and before each post (the scheduler), so both need it.
    pub plain_http_hooks: PlainHttpHooks,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("engine", &self.engine)
            .field("max_upload_bytes", &self.max_upload_bytes)
            .field("public_url", &self.public_url)
            .field("url_secret", &"<secret>")
            .field("url_seconds", &self.url_seconds)
            .field("identity_cache_seconds", &self.identity_cache_seconds)
            .field("seal_key", &self.seal_key)
            .field("call_deadline", &self.call_deadline)
            .field("limits", &self.limits)
            .field("plain_http_hooks", &self.plain_http_hooks)
            .finish()
    }
}

/// The call deadline unless configured: longer than the slowest work a call may wait
/// on by design (a check-1 evaluator answers within 30 s by default), so only a stuck
/// dependency reaches it.
pub const DEFAULT_CALL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

impl Settings {
    /// Defaults around a public URL and a URL secret (the sealing key derived from it).
    pub fn new(public_url: impl Into<String>, url_secret: Vec<u8>) -> Self {
        Self {
            seal_key: agentprocess_auth::SecretKey::derived_from_url_secret(&url_secret),
            engine: agentprocess_engine::Settings::default(),
            max_upload_bytes: 10 << 20,
            public_url: public_url.into(),
            url_secret,
            url_seconds: 300,
            identity_cache_seconds: 10,
            call_deadline: DEFAULT_CALL_DEADLINE,
            limits: LimitValues::default(),
            plain_http_hooks: PlainHttpHooks::Refused,
        }
    }
}

/// The limits a server sets for every organization unless told otherwise. Calls in
/// progress are few because the database's CPUs are what organizations share: more
/// transactions of one at once than it has cores, and every other waits
/// (`loadtests/run-noisy-neighbour`); a small pool lowers the bound further.
pub const DEFAULT_LIMITS: LimitValues = LimitValues {
    calls_per_second: Some(1000),
    identity_calls_per_second: Some(300),
    writes_per_second: Some(500),
    concurrent_calls: Some(3),
    open_runs: Some(100_000),
    stored_bytes: Some(100 << 30),
};

/// Who is calling: an identity of one organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The identity, with its organization and groups.
    pub identity: Identity,
    /// The network address the call came from, for the audit log.
    pub address: Option<String>,
    /// The scopes of an OAuth access token; `None` for a token an admin issued (or a
    /// session), which may do whatever the identity may.
    pub scopes: Option<Vec<Scope>>,
    /// When the person of a browser session signed in (milliseconds): the audit log
    /// records it with every write of the session.
    pub signed_in_at: Option<i64>,
}

impl Caller {
    /// `identity` calling from `address` with a credential an admin issued.
    pub fn issued(identity: Identity, address: Option<String>) -> Self {
        Self {
            identity,
            address,
            scopes: None,
            signed_in_at: None,
        }
    }

    /// A person at the browser, in a session they signed in to at `signed_in_at`.
    pub fn session(identity: Identity, address: Option<String>, signed_in_at: i64) -> Self {
        Self {
            signed_in_at: Some(signed_in_at),
            ..Self::issued(identity, address)
        }
    }

    /// Whether the credential allows `tool` (the identity's own rights are the engine's
    /// to check).
    pub fn may_call(&self, tool: Tool) -> bool {
        self.scopes.as_ref().is_none_or(|scopes| scopes.contains(&tool.scope()))
    }

    /// Whether a token of this caller could ever be granted `scope`: an agent's
    /// client is granted the agent scopes alone (`process:work`, `process:start`), so
    /// asking again for more is no use; a person's client may be granted the rest
    /// (`process:decide` only when an admin marks it as operated by people).
    pub fn could_be_granted(&self, scope: Scope) -> bool {
        match self.identity.kind {
            IdentityKind::Agent => agentprocess_auth::clients::AGENT_SCOPES.contains(&scope.name()),
            IdentityKind::Person => true,
        }
    }

    /// Refuses a tool this caller's token was not granted, as the tool's own answer
    /// (`forbidden`) when asking for the scope again would not help, saying who may
    /// call it instead. A scope the client could still be granted is the transport's
    /// to challenge for (403 `insufficient_scope`), before the tool is reached; here
    /// it is refused in the same words for surfaces without one.
    pub fn permit(&self, tool: Tool, public_url: &str) -> Result<(), ToolError> {
        if self.may_call(tool) {
            return Ok(());
        }
        let scope = tool.scope().name();
        if tool == Tool::Decide {
            return Err(ToolError::new(
                Code::Forbidden,
                format!(
                    "only a person decides, and this token came through a client that an agent may be holding; \
                     decide signed in to {} in the browser, or with a client your organization's admin marks as \
                     operated by people",
                    public_url.trim_end_matches('/')
                ),
                vec!["scope: process:decide is granted only to clients operated by people".to_owned()],
            ));
        }
        if !self.could_be_granted(tool.scope()) {
            return Err(ToolError::new(
                Code::Forbidden,
                format!(
                    "{} needs {scope}, which an agent's OAuth client is never granted: the organization's \
                     operators call it, signed in to {} or through a client they use",
                    tool.name(),
                    public_url.trim_end_matches('/')
                ),
                vec![format!("scope: {scope} is not granted to agents' clients")],
            ));
        }
        Err(ToolError::new(
            Code::Forbidden,
            format!(
                "this token was not granted {scope}, which {} needs; ask for it when the token is requested",
                tool.name()
            ),
            vec![format!("scope: {scope} required")],
        ))
    }

    /// The organization.
    pub fn org(&self) -> &str {
        &self.identity.org
    }

    /// The identity as the engine sees it.
    pub fn actor(&self) -> Actor {
        let identity = &self.identity;
        match identity.kind {
            IdentityKind::Agent => Actor::Agent {
                id: identity.id.clone(),
                groups: identity.groups.clone(),
            },
            IdentityKind::Person => Actor::Person {
                person: identity.person.clone().unwrap_or_else(|| identity.id.clone()),
                groups: identity.groups.clone(),
                operator: identity.has_role(Role::Operator),
            },
        }
    }
}

/// The service: a store, blob storage, a clock and settings. Holds nothing of a run
/// between calls, so any number of API processes can share one database.
pub struct Service {
    store: SqlStore,
    blobs: ServerBlobs,
    clock: Arc<dyn Clock>,
    settings: Settings,
    versions: versions::Cache,
    callers: Mutex<HashMap<String, (jiff::Timestamp, Caller)>>,
    /// Where timers are mirrored for a separate scheduler; `None` when timers are
    /// fired in process, straight from the rows.
    queue: Option<Arc<dyn TimerQueue>>,
    /// Wakes the in-process timer loop.
    wake: Notify,
    /// Wakes the webhook loop.
    deliveries_wake: Notify,
    /// Wakes the loop of messages to people.
    messages_wake: Notify,
    /// Answers check questions (check-1); `None` when none is configured.
    evaluator: Option<Arc<dyn agentprocess_evaluator::Evaluator>>,
    /// Whether the evaluator answered its last probe or question.
    evaluator_answering: AtomicBool,
    /// Processes with `check:` publish although this process has no evaluator: the
    /// API processes of its database run one (`agentprocess admin --with-check`).
    publishes_check: bool,
    /// Every organization's limits, and what each used.
    gate: limits::Gate,
}

/// The most identities remembered at once; past it the memory starts afresh.
const CALLERS_KEPT: usize = 10_000;

impl Service {
    /// A service over `store` and `blobs`.
    pub fn new(store: SqlStore, blobs: ServerBlobs, clock: Arc<dyn Clock>, settings: Settings) -> Self {
        let gate = limits::Gate::new(
            settings.limits,
            std::time::Duration::from_secs(u64::from(settings.identity_cache_seconds)),
        );
        Self {
            gate,
            store,
            blobs,
            clock,
            settings,
            versions: versions::Cache::default(),
            callers: Mutex::new(HashMap::new()),
            queue: None,
            wake: Notify::new(),
            deliveries_wake: Notify::new(),
            messages_wake: Notify::new(),
            evaluator: None,
            evaluator_answering: AtomicBool::new(false),
            publishes_check: false,
        }
    }

    /// Runs check-1 with `evaluator`: processes with `check:` publish, and `describe`
    /// offers the profile while the evaluator answers. It counts as answering until a
    /// probe or a question says otherwise.
    #[must_use]
    pub fn with_evaluator(mut self, evaluator: Arc<dyn agentprocess_evaluator::Evaluator>) -> Self {
        self.evaluator = Some(evaluator);
        self.evaluator_answering = AtomicBool::new(true);
        self
    }

    /// Publishes processes with `check:` without an evaluator of its own, for a
    /// process beside API processes that run one (`agentprocess admin --with-check`).
    #[must_use]
    pub fn publishing_check(mut self) -> Self {
        self.publishes_check = true;
        self
    }

    /// What a process may use when published here.
    pub fn capabilities(&self) -> agentprocess_format::Capabilities {
        agentprocess_format::Capabilities {
            check: self.evaluator.is_some() || self.publishes_check,
            ..CAPABILITIES
        }
    }

    /// Mirrors every timer in `queue` after commit, for a scheduler that takes them
    /// from there.
    #[must_use]
    pub fn with_timer_queue(mut self, queue: Arc<dyn TimerQueue>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// The timer queue, if timers are mirrored in one.
    pub fn timer_queue(&self) -> Option<&Arc<dyn TimerQueue>> {
        self.queue.as_ref()
    }

    /// The admin actions over this service's store and clock.
    pub fn admin(&self) -> Admin {
        Admin::new(self.store.clone(), Arc::clone(&self.clock), self.settings.engine.person)
            .with_capabilities(self.capabilities())
            .with_seal_key(self.settings.seal_key.clone())
            .with_plain_http_hooks(self.settings.plain_http_hooks)
    }

    /// The store.
    pub fn store(&self) -> &SqlStore {
        &self.store
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The identity holding a bearer token, if the token is known and not revoked.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>, Error> {
        let hash = ids::sha256_hex(token.as_bytes());
        let now = self.now();
        if let Ok(callers) = self.callers.lock()
            && let Some((until, caller)) = callers.get(&hash)
            && *until > now
        {
            return Ok(Some(caller.clone()));
        }
        let credential = self.store.credential(&hash, millis(now)).await.map_err(retry)?;
        let caller = credential.map(|credential| Caller {
            identity: credential.identity,
            address: None,
            scopes: credential.scope.as_deref().map(Scope::parse_list),
            signed_in_at: None,
        });
        if let Some(caller) = &caller
            && let Ok(mut callers) = self.callers.lock()
        {
            if callers.len() >= CALLERS_KEPT {
                callers.clear();
            }
            let keep = jiff::SignedDuration::from_secs(i64::from(self.settings.identity_cache_seconds));
            callers.insert(hash, (now.checked_add(keep).unwrap_or(now), caller.clone()));
        }
        Ok(caller)
    }

    /// The service's clock's time (a test clock's, when one is set).
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// Wakes the timer and webhook loops to look for due work now (after the clock
    /// moved).
    pub fn wake_timers(&self) {
        self.wake.notify_one();
        self.deliveries_wake.notify_one();
        self.messages_wake.notify_one();
    }

    /// The engine's context for one command.
    fn context<'a>(&'a self, now: jiff::Timestamp, actor: &'a Actor, ids: &'a mut ids::RunIds) -> Context<'a> {
        Context {
            now,
            actor,
            ids,
            settings: &self.settings.engine,
        }
    }
}

/// A store or blob failure: an internal error that keeps its cause (logged once, where
/// a surface answers `retry`).
pub(crate) fn retry(cause: impl Into<error::Cause>) -> Error {
    Error::internal(cause)
}

pub(crate) fn invalid(message: impl Into<String>, issues: Vec<String>) -> Error {
    ToolError::new(Code::Invalid, message, issues).into()
}

pub(crate) fn forbidden(message: impl Into<String>) -> Error {
    ToolError::new(Code::Forbidden, message, Vec::new()).into()
}

pub(crate) fn not_found(message: impl Into<String>) -> Error {
    ToolError::new(Code::NotFound, message, Vec::new()).into()
}

pub(crate) fn millis(at: jiff::Timestamp) -> i64 {
    at.as_millisecond()
}
