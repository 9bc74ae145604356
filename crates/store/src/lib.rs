#![doc = include_str!("../README.md")]

mod admin;
mod clients;
mod directory;
mod grants;
mod health;
pub mod keepalive;
mod lent;
mod limits;
mod messages;
mod model;
mod open_versions;
mod outbox;
mod retention;
mod runs;
mod sql;
mod timers;
mod write;

use std::future::Future;

pub use clients::{ClientSecret, Credential, OAuthClient};
pub use directory::{
    Audience, AuditFilter, AuditRow, Bindings, Directory, DirectoryTx, Domain, Group, Organization, Provider,
    SessionRow, TokenRow,
};
pub use grants::{AuthorizationCode, Grant, Grants, GrantsTx, OAuthApp, RefreshToken, Taken};
pub use limits::{Limit, LimitLayer, LimitValues, Limits, LimitsTx, OrgLimits};
pub use messages::{
    Channel, ChatHook, MessageOutcome, MessageRecord, Messages, MessagesTx, NewMessage, TakenMessage, Unhanded,
};
pub use model::{
    AttemptResult, Delivery, DeliveryRecord, DeliveryStatus, Identity, IdentityKind, Keyset, NewNotification,
    NewRequest, NewUpload, NewVersion, Page, Piece, Role, RunFilter, RunRow, RunWrite, StoredDraft, StoredRequest,
    StoredRun, StoredVersion, TakenTimer, TimerRow, Upload, Webhook, WorkKind, WorkLevels, WorkQuery, WorkRow,
    WriteOutcome,
};
pub use open_versions::{KeptOpen, OpenVersions, OpenVersionsTx, Openings, Standing};
pub use retention::Purge;
pub use sql::{Dialect, SqlStore, SqlTx, Writes};

/// What can go wrong in the store. The service turns every one into `retry` for the
/// caller and logs the cause.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database refused or could not be reached.
    #[error("database: {0}")]
    Database(#[source] sqlx::Error),
    /// The migrations could not be applied.
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A row holds what no write of ours produces.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// A call the method's contract does not allow (a bug in the caller).
    #[error("store misuse: {0}")]
    Misuse(String),
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        // A connection lost under a statement: its neighbours may be too
        // (crate::health).
        if health::is_lost_connection(&error) {
            health::connection_lost();
        }
        Error::Database(error)
    }
}

impl Error {
    /// Whether the database refused a row because a unique key holds it already.
    pub fn is_unique_violation(&self) -> bool {
        matches!(self, Error::Database(sqlx::Error::Database(error)) if error.is_unique_violation())
    }
}

/// Shorthand for the store's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reads, and the start of every write. Implemented for PostgreSQL and SQLite by
/// [`SqlStore`]; every method filters by organization.
pub trait Store: Directory + Grants + Limits {
    /// A write transaction.
    type Tx: StoreTx;

    /// Whether the database answers.
    fn ping(&self) -> impl Future<Output = Result<()>> + Send;

    /// Work holding connections was dropped unfinished (past its deadline, or its
    /// caller went away): for a while, connections coming back to the pool are
    /// checked with a time limit, and one that does not answer is closed.
    fn suspect_connections(&self);

    /// The versions of this build's migrations the database has not applied (a
    /// database ahead of this build, during an upgrade, is current for it).
    fn pending_migrations(&self) -> impl Future<Output = Result<Vec<i64>>> + Send;

    /// How much work waits at `now`, across organizations (for the gauges).
    fn work_levels(&self, now: i64) -> impl Future<Output = Result<WorkLevels>> + Send;

    /// Starts a write transaction.
    fn begin(&self) -> impl Future<Output = Result<Self::Tx>> + Send;

    /// The active identity holding the MCP bearer token with this SHA-256, unless the
    /// token is revoked or expired at `now`.
    fn identity_by_token(&self, token_hash: &str, now: i64) -> impl Future<Output = Result<Option<Identity>>> + Send;

    /// One identity with its groups.
    fn identity(&self, org: &str, id: &str) -> impl Future<Output = Result<Option<Identity>>> + Send;

    /// Every identity of an organization with its groups, by id.
    fn identities(&self, org: &str) -> impl Future<Output = Result<Vec<Identity>>> + Send;

    /// A published version: `number`, or the latest when `None`.
    fn version(
        &self,
        org: &str,
        process: &str,
        number: Option<u32>,
    ) -> impl Future<Output = Result<Option<StoredVersion>>> + Send;

    /// The latest version of each published process, by name, after `after`.
    fn latest_versions(
        &self,
        org: &str,
        after: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<StoredVersion>>> + Send;

    /// Every version of one process, oldest first.
    fn versions(&self, org: &str, process: &str) -> impl Future<Output = Result<Vec<StoredVersion>>> + Send;

    /// A draft: its PROCESS.md, role and agent bindings.
    fn draft(&self, org: &str, process: &str) -> impl Future<Output = Result<Option<StoredDraft>>> + Send;

    /// What is recorded under a `requestId`.
    fn request(&self, org: &str, request_id: &str) -> impl Future<Output = Result<Option<StoredRequest>>> + Send;

    /// A run as last committed, without locking it, with what is recorded under
    /// `request_id`, in one round trip (two when the run has pieces): what a write
    /// made with [`Store::write_run`] starts from.
    fn run_for_write(
        &self,
        org: &str,
        id: &str,
        request_id: &str,
    ) -> impl Future<Output = Result<Option<(StoredRun, Option<StoredRequest>)>>> + Send;

    /// Writes a run and what goes with it at once, if the run still has the revision
    /// the write names: on PostgreSQL in one statement that is its own transaction
    /// (one round trip), on SQLite in a transaction of its own.
    fn write_run(&self, org: &str, write: &RunWrite<'_>) -> impl Future<Output = Result<WriteOutcome>> + Send;

    /// A run as last committed, without locking it.
    fn run(&self, org: &str, id: &str) -> impl Future<Output = Result<Option<StoredRun>>> + Send;

    /// Several runs as last committed, in one query; missing ones are left out.
    fn runs(&self, org: &str, ids: &[String]) -> impl Future<Output = Result<Vec<StoredRun>>> + Send;

    /// Runs matching `filter`, oldest first.
    fn list_runs(&self, org: &str, filter: &RunFilter) -> impl Future<Output = Result<Page<StoredRun>>> + Send;

    /// Index rows of `get_work`, oldest first: for an agent, agent steps ready or with
    /// a lease ended by `now`; for a person, open items assigned to them.
    fn work(&self, org: &str, query: &WorkQuery) -> impl Future<Output = Result<Page<WorkRow>>> + Send;

    /// The organization's open work due before `now`, longest overdue first, at most
    /// `limit`.
    fn overdue(&self, org: &str, now: i64, limit: u32) -> impl Future<Output = Result<Vec<WorkRow>>> + Send;

    /// An upload's record.
    fn upload(&self, org: &str, id: &str) -> impl Future<Output = Result<Option<Upload>>> + Send;

    /// Uploads no submission or decision ever cited, made before `before`, across
    /// organizations, oldest first: (organization, id).
    fn uncited_uploads(&self, before: i64, limit: u32) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;

    /// Removes up to `limit` rows of `what` older than `before` (milliseconds), in one
    /// short statement; how many. `org` names the organization for the kinds that are
    /// [per organization](Purge::per_organization), and is `None` for the others.
    fn purge(
        &self,
        what: Purge,
        org: Option<&str>,
        before: i64,
        limit: u32,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Organization ids after `after` in id order, up to `limit`: for the sweeps that
    /// visit each organization.
    fn organization_ids(&self, after: Option<&str>, limit: u32) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Timers due at or before `before` (milliseconds), across organizations, earliest
    /// first, starting after `after` (for paging).
    fn timers_before(
        &self,
        before: i64,
        after: Option<&TimerRow>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<TimerRow>>> + Send;

    /// The timers one run waits on, earliest first.
    fn run_timers(&self, org: &str, run_id: &str) -> impl Future<Output = Result<Vec<TimerRow>>> + Send;

    /// When the earliest timer is due, if any.
    fn next_timer_at(&self) -> impl Future<Output = Result<Option<i64>>> + Send;

    /// An organization's webhook endpoints, oldest first.
    fn webhooks(&self, org: &str) -> impl Future<Output = Result<Vec<Webhook>>> + Send;

    /// The organizations with deliveries due at `now`, the one whose oldest due
    /// delivery has waited longest first, at most `limit`: a sweep across
    /// organizations, so a pass can share its attempts between them.
    fn due_delivery_organizations(&self, now: i64, limit: u32) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Takes up to `limit` of `org`'s pending deliveries due at `now`, oldest first,
    /// for an attempt: each counts one more attempt and is not taken again before
    /// `hold_until` unless its attempt is recorded. Concurrent callers never take the
    /// same delivery.
    fn take_deliveries(
        &self,
        org: &str,
        now: i64,
        hold_until: i64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<Delivery>>> + Send;

    /// Records how an attempt ended.
    fn record_attempt(&self, delivery: &Delivery, result: &AttemptResult) -> impl Future<Output = Result<()>> + Send;

    /// An organization's latest deliveries, newest first.
    fn deliveries(&self, org: &str, limit: u32) -> impl Future<Output = Result<Vec<DeliveryRecord>>> + Send;
}

/// One write transaction. Nothing is visible to others until [`StoreTx::commit`];
/// dropping it rolls everything back. Reads a write needs go through it: on SQLite
/// the transaction holds the only connection.
pub trait StoreTx: DirectoryTx + GrantsTx + LimitsTx {
    /// Records the result of this write under `(org, request_id)`. Returns `false`,
    /// recording nothing, when the id is already recorded: then another write with the
    /// same id committed first (a concurrent one is waited for), and the caller must
    /// roll back and answer with [`Store::request`].
    fn record_request(&mut self, org: &str, request: &NewRequest<'_>) -> impl Future<Output = Result<bool>> + Send;

    /// A published version, read inside the transaction (see [`Store::version`]).
    fn version(
        &mut self,
        org: &str,
        process: &str,
        number: Option<u32>,
    ) -> impl Future<Output = Result<Option<StoredVersion>>> + Send;

    /// An upload's record, marked cited at `now` unless it was before; its row is
    /// locked until the transaction ends.
    fn cite_upload(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<Option<Upload>>> + Send;

    /// Removes an upload's record if no submission or decision ever cited it; returns
    /// its storage key (the caller removes the bytes after commit).
    fn remove_uncited_upload(&mut self, org: &str, id: &str) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Reads a run and holds its lock until the transaction ends; with `request_id`,
    /// also what is recorded under it, in the same round trip.
    fn lock_run(
        &mut self,
        org: &str,
        id: &str,
        request_id: Option<&str>,
    ) -> impl Future<Output = Result<Option<(StoredRun, Option<StoredRequest>)>>> + Send;

    /// Writes a new run or replaces one, with its input and work index rows, timers,
    /// notifications, audit entries and the request's record, in this transaction (on
    /// PostgreSQL, in one statement). Unless it answers
    /// [`Written`](WriteOutcome::Written), the caller rolls back.
    fn write_run(&mut self, org: &str, write: &RunWrite<'_>) -> impl Future<Output = Result<WriteOutcome>> + Send;

    /// Adds or moves a timer.
    fn schedule_timer(&mut self, timer: &TimerRow) -> impl Future<Output = Result<()>> + Send;

    /// Removes a timer; says whether it was there.
    fn remove_timer(&mut self, org: &str, run_id: &str, timer_id: &str) -> impl Future<Output = Result<bool>> + Send;

    /// For firing a timer: locks the run (as [`StoreTx::lock_run`]) and removes the
    /// timer's row if it is due at `now`, returning the run (`None` if there is no such
    /// run) and the timer taken (`None` when its row is gone, fired or
    /// cancelled, or not due yet because it moved). Removing the row under the run's
    /// lock decides which of several schedulers applies a timer. On PostgreSQL, one
    /// statement.
    fn lock_run_for_timer(
        &mut self,
        org: &str,
        run_id: &str,
        timer_id: &str,
        now: i64,
    ) -> impl Future<Output = Result<(Option<StoredRun>, Option<TakenTimer>)>> + Send;

    /// Puts a notification in the outbox, with a pending delivery for each of the
    /// organization's webhook endpoints; returns how many deliveries that made. On
    /// PostgreSQL, one statement.
    fn add_notification(
        &mut self,
        org: &str,
        notification: &NewNotification<'_>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Adds a webhook endpoint.
    fn add_webhook(&mut self, org: &str, webhook: &Webhook) -> impl Future<Output = Result<()>> + Send;

    /// Removes a webhook endpoint and gives up its pending deliveries; says whether it
    /// was there.
    fn remove_webhook(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<bool>> + Send;

    /// Replaces a webhook endpoint's kept signing secret (sealed again).
    fn set_webhook_secret(&mut self, org: &str, id: &str, secret: &str) -> impl Future<Output = Result<()>> + Send;

    /// Makes a delivery of a notification to a webhook that still exists due again at
    /// `now`, whatever became of it: one more attempt, with the notification's `id`
    /// unchanged so the endpoint can tell it from a new one. Says whether there was
    /// such a delivery.
    fn redeliver(
        &mut self,
        org: &str,
        notification_id: &str,
        webhook_id: &str,
        now: i64,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Records an upload.
    fn put_upload(&mut self, org: &str, upload: &NewUpload) -> impl Future<Output = Result<()>> + Send;

    /// Creates an organization.
    fn create_org(&mut self, id: &str, slug: &str, name: &str, now: i64) -> impl Future<Output = Result<()>> + Send;

    /// Creates a group, if it does not exist.
    fn create_group(&mut self, org: &str, id: &str, now: i64) -> impl Future<Output = Result<()>> + Send;

    /// Creates an identity.
    fn create_identity(&mut self, identity: &Identity, now: i64) -> impl Future<Output = Result<()>> + Send;

    /// Adds an identity to a group.
    fn add_member(&mut self, org: &str, group: &str, identity: &str) -> impl Future<Output = Result<()>> + Send;

    /// Revokes every live bearer token of an identity; returns how many.
    fn revoke_tokens(&mut self, org: &str, identity: &str, now: i64) -> impl Future<Output = Result<u64>> + Send;

    /// A draft, read inside the transaction.
    fn draft(&mut self, org: &str, process: &str) -> impl Future<Output = Result<Option<StoredDraft>>> + Send;

    /// Writes a draft.
    fn put_draft(
        &mut self,
        org: &str,
        process: &str,
        draft: &StoredDraft,
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Publishes a version with the next number and returns that number.
    fn publish(&mut self, org: &str, version: &NewVersion, now: i64) -> impl Future<Output = Result<u32>> + Send;

    /// Makes every change visible.
    fn commit(self) -> impl Future<Output = Result<()>> + Send;

    /// Undoes every change and lets every lock go now, not when the connection is
    /// next used.
    fn rollback(self) -> impl Future<Output = Result<()>> + Send;
}
