//! [`SqlStore`]: the one adapter, PostgreSQL or SQLite through sqlx's `Any` driver.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};
use tracing::Instrument as _;

use crate::clients::{self, ClientSecret, Credential, OAuthClient};
use crate::directory::{
    self, Audience, AuditFilter, AuditRow, Directory, DirectoryTx, Domain, Group, OrgKey, Organization, Provider,
    SessionRow, TokenRow,
};
use crate::health::Health;
use crate::lent::{Lent, LentTx, Spare};
use crate::model::Role;
use crate::model::{
    AttemptResult, Delivery, DeliveryRecord, Identity, NewNotification, NewRequest, NewUpload, NewVersion, Page,
    RunFilter, RunWrite, StoredDraft, StoredRequest, StoredRun, StoredVersion, TakenTimer, TimerRow, Upload, Webhook,
    WorkLevels, WorkQuery, WorkRow, WriteOutcome,
};
use crate::{Result, Store, StoreTx, admin, keepalive, outbox, runs, timers, write};

/// Which database is behind the pool: the SQL differs only in row locking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL: `SELECT … FOR UPDATE` locks a run.
    Postgres,
    /// SQLite: one connection, so transactions never overlap.
    Sqlite,
}

impl Dialect {
    /// The database's `db.system.name` in OpenTelemetry's terms.
    pub fn system_name(self) -> &'static str {
        match self {
            Self::Postgres => "postgresql",
            Self::Sqlite => "sqlite",
        }
    }
}

/// How a run's write reaches the database (`write.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writes {
    /// One statement, its own transaction: plain PostgreSQL.
    OneStatement,
    /// Statement by statement in a transaction: SQLite, and Citus. Citus routes a
    /// statement with an `INSERT` in a `WITH` part to no single shard: it runs each
    /// part from the coordinator in turn, over two connections to the worker, and
    /// commits them in two phases, where a transaction of single-shard statements
    /// goes to the worker as it is and commits in one.
    InSteps,
}

/// The store over a sqlx pool.
#[derive(Debug, Clone)]
pub struct SqlStore {
    /// In an `Arc` so that the pool's health checks can hold it weakly.
    pub(crate) pool: Arc<AnyPool>,
    dialect: Dialect,
    writes: Writes,
    health: Health,
    /// Connections kept between loans, given back to the pool only when something was
    /// left unfinished on them (crate::lent).
    pub(crate) spare: Arc<Spare>,
}

impl SqlStore {
    /// Connects to `url` (`postgres://…` or `sqlite://…`). `max_connections` applies
    /// to PostgreSQL; SQLite always gets one connection, in WAL mode.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self> {
        sqlx::any::install_default_drivers();
        let options = AnyConnectOptions::from_str(url)?;
        let dialect = if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else {
            Dialect::Postgres
        };
        let health = Health::new();
        let pool = match dialect {
            Dialect::Postgres => {
                let address = options
                    .database_url
                    .host_str()
                    .map(|host| (host.to_owned(), options.database_url.port().unwrap_or(5432)));
                // A ping before every acquire costs a round trip on every call; only
                // connections idle for a while are checked first (crate::health).
                AnyPoolOptions::new()
                    .max_connections(max_connections.max(1))
                    .test_before_acquire(false)
                    .after_connect(move |connection, _| {
                        let address = address.clone();
                        Box::pin(async move {
                            keepalive::apply_here(address).await;
                            // Without arguments, one simple query: every SET in one round trip.
                            if let Err(error) = connection.execute(keepalive::server_settings().as_str()).await {
                                tracing::warn!(%error, "the database connection's keepalive was not set on the server");
                            }
                            Ok(())
                        })
                    })
                    .before_acquire({
                        let health = health.clone();
                        move |connection, meta| {
                            let health = health.clone();
                            Box::pin(async move {
                                health.before_use(connection, meta.idle_for).await?;
                                Ok(true)
                            })
                        }
                    })
                    .after_release({
                        let health = health.clone();
                        move |connection, _| {
                            let health = health.clone();
                            Box::pin(async move {
                                if health.suspected() {
                                    health.check(connection).await?;
                                }
                                Ok(true)
                            })
                        }
                    })
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options)
                    .await?
            }
            Dialect::Sqlite => {
                AnyPoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .after_connect(|connection, _| {
                        Box::pin(async move {
                            connection
                            .execute(
                                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000",
                            )
                            .await?;
                            Ok(())
                        })
                    })
                    .connect_with(options)
                    .await?
            }
        };
        let pool = Arc::new(pool);
        health.watch(&pool);
        let spare = Spare::new(health.clone(), dialect == Dialect::Postgres);
        let mut store = Self {
            pool,
            dialect,
            writes: Writes::InSteps,
            health,
            spare,
        };
        if dialect == Dialect::Postgres {
            store.writes = if store.on_citus().await? {
                tracing::info!("the database is a Citus cluster's: runs are written statement by statement");
                Writes::InSteps
            } else {
                Writes::OneStatement
            };
        }
        Ok(store)
    }

    /// Whether the database has the Citus extension, whose tables may be distributed.
    async fn on_citus(&self) -> Result<bool> {
        let mut connection = self.lend().await?;
        let citus: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_extension WHERE extname = 'citus'")
            .fetch_one(&mut *connection)
            .await?;
        Ok(citus > 0)
    }

    /// How runs are written here: chosen at connect, by the database.
    pub fn writes(&self) -> Writes {
        self.writes
    }

    /// The same store, writing runs as `writes` says (tests hold both shapes on
    /// PostgreSQL); SQLite writes statement by statement whatever is asked.
    #[must_use]
    pub fn with_writes(mut self, writes: Writes) -> Self {
        if self.dialect == Dialect::Postgres {
            self.writes = writes;
        }
        self
    }

    /// How many migrations this build has.
    pub fn migration_count() -> usize {
        MIGRATOR
            .iter()
            .filter(|migration| !migration.migration_type.is_down_migration())
            .count()
    }

    /// Applies every migration in `migrations/` not yet applied, then (on PostgreSQL)
    /// the storage settings of the queue tables.
    pub async fn migrate(&self) -> Result<()> {
        let mut connection = self.lend().await?;
        MIGRATOR.run(&mut *connection).await?;
        if self.dialect == Dialect::Postgres {
            for statement in POSTGRES_TABLE_SETTINGS {
                sqlx::query(statement).execute(&mut *connection).await?;
            }
        }
        Ok(())
    }

    /// Connections open and, of those, idle.
    pub fn pool_stats(&self) -> (u64, u64) {
        let idle = self.pool.num_idle().saturating_add(self.spare.len());
        (u64::from(self.pool.size()), u64::try_from(idle).unwrap_or(u64::MAX))
    }

    /// Connections found dead and replaced since the pool was made (PostgreSQL).
    pub fn connections_found_dead(&self) -> u64 {
        self.health.found_dead_count()
    }

    /// The span of a transaction, a child of the current one.
    fn transaction_span(&self) -> tracing::Span {
        tracing::info_span!(
            "db.transaction",
            otel.kind = "client",
            db.system.name = self.dialect.system_name(),
        )
    }

    /// A connection for one piece of work, given back when dropped.
    pub(crate) async fn lend(&self) -> Result<Lent> {
        Ok(self.spare.lend(&self.pool).await?)
    }

    /// A transaction on a lent connection.
    pub(crate) async fn lent_tx(&self) -> Result<LentTx> {
        Ok(LentTx::begin(self.lend().await?).await?)
    }

    /// Which database this is.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.spare.close();
        self.pool.close().await;
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// `work_index` and `timers` are queues: every cycle adds, changes and removes rows.
/// The defaults (vacuum at 20 % dead rows, analyze at 10 % changed) leave a freshly
/// grown table without statistics, where the planner reads every ready step to list
/// twenty, and leave dead entries at the head of the queue that every listing steps
/// over. These settings vacuum and analyze them after about a thousand changes, or 1
/// to 2 % of the table. PostgreSQL only, so they are not a migration (the migrations
/// are shared with SQLite); applying them again changes nothing.
///
/// `runs` keeps 30 % of each page free: a claim, a renew or any write that leaves the
/// run's state as it was then rewrites the row in its own page (a HOT update, no new
/// entries in the run's four indexes). Packed full, as runs started in a burst are,
/// every such write moved the row to another page and added an entry to each index
/// (measured in the agent loop: HOT updates 31 % → 49 % of run writes, PostgreSQL CPU
/// per cycle −5 %). It applies to pages written from then on.
const POSTGRES_TABLE_SETTINGS: [&str; 3] = [
    "ALTER TABLE runs SET (fillfactor = 70)",
    "ALTER TABLE work_index SET (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0.02, \
     autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0.02, \
     autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0.01)",
    "ALTER TABLE timers SET (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0.02, \
     autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0.02, \
     autovacuum_analyze_threshold = 1000, autovacuum_analyze_scale_factor = 0.01)",
];

impl Store for SqlStore {
    type Tx = SqlTx;

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&mut *self.lend().await?).await?;
        Ok(())
    }

    fn suspect_connections(&self) {
        self.health.suspect();
    }

    async fn pending_migrations(&self) -> Result<Vec<i64>> {
        // A database never migrated has no table of migrations yet.
        let exists = match self.dialect {
            Dialect::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_name = '_sqlx_migrations' AND table_schema = current_schema()"
            }
            Dialect::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
        };
        let mut connection = self.lend().await?;
        let tables: i64 = sqlx::query_scalar(exists).fetch_one(&mut *connection).await?;
        let applied: Vec<i64> = if tables == 0 {
            Vec::new()
        } else {
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(&mut *connection)
                .await?
        };
        Ok(MIGRATOR
            .iter()
            .filter(|migration| !migration.migration_type.is_down_migration())
            .map(|migration| migration.version)
            .filter(|version| !applied.contains(version))
            .collect())
    }

    async fn work_levels(&self, now: i64) -> Result<WorkLevels> {
        let mut connection = self.lend().await?;
        runs::work_levels(&mut connection, now).await
    }

    async fn begin(&self) -> Result<SqlTx> {
        // The span lasts as long as the transaction: it ends at commit or rollback.
        let span = self.transaction_span();
        let tx = self.lent_tx().instrument(span.clone()).await?;
        Ok(SqlTx {
            tx,
            dialect: self.dialect,
            writes: self.writes,
            _span: span,
        })
    }

    async fn identity_by_token(&self, token_hash: &str, now: i64) -> Result<Option<Identity>> {
        let mut connection = self.lend().await?;
        clients::identity_by_token(&mut connection, token_hash, now).await
    }

    async fn identity(&self, org: &str, id: &str) -> Result<Option<Identity>> {
        let mut connection = self.lend().await?;
        admin::identity(&mut connection, org, id).await
    }

    async fn identities(&self, org: &str) -> Result<Vec<Identity>> {
        let mut connection = self.lend().await?;
        admin::identities(&mut connection, org).await
    }

    async fn version(&self, org: &str, process: &str, number: Option<u32>) -> Result<Option<StoredVersion>> {
        let mut connection = self.lend().await?;
        admin::version(&mut connection, org, process, number).await
    }

    async fn latest_versions(&self, org: &str, after: Option<&str>, limit: u32) -> Result<Vec<StoredVersion>> {
        let mut connection = self.lend().await?;
        admin::latest_versions(&mut connection, org, after, limit).await
    }

    async fn versions(&self, org: &str, process: &str) -> Result<Vec<StoredVersion>> {
        let mut connection = self.lend().await?;
        admin::versions(&mut connection, org, process).await
    }

    async fn draft(&self, org: &str, process: &str) -> Result<Option<StoredDraft>> {
        let mut connection = self.lend().await?;
        admin::draft(&mut connection, org, process).await
    }

    async fn request(&self, org: &str, request_id: &str) -> Result<Option<StoredRequest>> {
        let mut connection = self.lend().await?;
        runs::request(&mut connection, org, request_id).await
    }

    async fn run_for_write(
        &self,
        org: &str,
        id: &str,
        request_id: &str,
    ) -> Result<Option<(StoredRun, Option<StoredRequest>)>> {
        let mut connection = self.lend().await?;
        runs::lock_run(&mut connection, org, id, Some(request_id), "").await
    }

    async fn write_run(&self, org: &str, write: &RunWrite<'_>) -> Result<WriteOutcome> {
        if self.writes == Writes::OneStatement {
            // One statement, its own transaction.
            let written = async {
                let mut connection = self.lend().await?;
                write::write_in_one_statement(&mut connection, org, write).await
            };
            return written.instrument(self.transaction_span()).await;
        }
        let mut tx = self.begin().await?;
        let outcome = tx.write_run(org, write).await?;
        match outcome {
            WriteOutcome::Written { .. } => tx.commit().await?,
            WriteOutcome::RunChanged | WriteOutcome::AlreadyRecorded => tx.rollback().await?,
        }
        Ok(outcome)
    }

    async fn run(&self, org: &str, id: &str) -> Result<Option<StoredRun>> {
        let mut connection = self.lend().await?;
        runs::run(&mut connection, org, id).await
    }

    async fn runs(&self, org: &str, ids: &[String]) -> Result<Vec<StoredRun>> {
        let mut connection = self.lend().await?;
        runs::runs(&mut connection, org, ids).await
    }

    async fn list_runs(&self, org: &str, filter: &RunFilter) -> Result<Page<StoredRun>> {
        let mut connection = self.lend().await?;
        runs::list_runs(&mut connection, org, filter).await
    }

    async fn work(&self, org: &str, query: &WorkQuery) -> Result<Page<WorkRow>> {
        let mut connection = self.lend().await?;
        runs::work(&mut connection, org, query).await
    }

    async fn uncited_uploads(&self, before: i64, limit: u32) -> Result<Vec<(String, String)>> {
        let mut connection = self.lend().await?;
        runs::uncited_uploads(&mut connection, before, limit).await
    }

    async fn purge(&self, what: crate::Purge, org: Option<&str>, before: i64, limit: u32) -> Result<u64> {
        let mut connection = self.lend().await?;
        crate::retention::purge(&mut connection, what, org, before, limit).await
    }

    async fn organization_ids(&self, after: Option<&str>, limit: u32) -> Result<Vec<String>> {
        let mut connection = self.lend().await?;
        crate::directory::organization_ids(&mut connection, after, limit).await
    }

    async fn upload(&self, org: &str, id: &str) -> Result<Option<Upload>> {
        let mut connection = self.lend().await?;
        runs::upload(&mut connection, org, id).await
    }

    async fn timers_before(&self, before: i64, after: Option<&TimerRow>, limit: u32) -> Result<Vec<TimerRow>> {
        let mut connection = self.lend().await?;
        timers::timers_before(&mut connection, before, after, limit).await
    }

    async fn run_timers(&self, org: &str, run_id: &str) -> Result<Vec<TimerRow>> {
        let mut connection = self.lend().await?;
        timers::run_timers(&mut connection, org, run_id).await
    }

    async fn next_timer_at(&self) -> Result<Option<i64>> {
        let mut connection = self.lend().await?;
        timers::next_timer_at(&mut connection).await
    }

    async fn overdue(&self, org: &str, now: i64, limit: u32) -> Result<Vec<WorkRow>> {
        let mut connection = self.lend().await?;
        runs::overdue(&mut connection, org, now, limit).await
    }

    async fn webhooks(&self, org: &str) -> Result<Vec<Webhook>> {
        let mut connection = self.lend().await?;
        outbox::webhooks(&mut connection, org).await
    }

    async fn due_delivery_organizations(&self, now: i64, limit: u32) -> Result<Vec<String>> {
        let mut connection = self.lend().await?;
        outbox::due_delivery_organizations(&mut connection, now, limit).await
    }

    async fn take_deliveries(&self, org: &str, now: i64, hold_until: i64, limit: u32) -> Result<Vec<Delivery>> {
        let mut connection = self.lend().await?;
        outbox::take_deliveries(&mut connection, org, now, hold_until, limit).await
    }

    async fn record_attempt(&self, delivery: &Delivery, result: &AttemptResult) -> Result<()> {
        let mut connection = self.lend().await?;
        outbox::record_attempt(&mut connection, delivery, result).await
    }

    async fn deliveries(&self, org: &str, limit: u32) -> Result<Vec<DeliveryRecord>> {
        let mut connection = self.lend().await?;
        outbox::deliveries(&mut connection, org, limit).await
    }
}

/// A transaction of [`SqlStore`].
#[derive(Debug)]
pub struct SqlTx {
    tx: LentTx,
    dialect: Dialect,
    writes: Writes,
    _span: tracing::Span,
}

impl SqlTx {
    pub(crate) fn connection(&mut self) -> &mut sqlx::AnyConnection {
        &mut self.tx
    }
}

impl StoreTx for SqlTx {
    async fn record_request(&mut self, org: &str, request: &NewRequest<'_>) -> Result<bool> {
        runs::record_request(&mut self.tx, org, request).await
    }

    async fn version(&mut self, org: &str, process: &str, number: Option<u32>) -> Result<Option<StoredVersion>> {
        admin::version(&mut self.tx, org, process, number).await
    }

    async fn cite_upload(&mut self, org: &str, id: &str, now: i64) -> Result<Option<Upload>> {
        runs::cite_upload(&mut self.tx, org, id, now).await
    }

    async fn remove_uncited_upload(&mut self, org: &str, id: &str) -> Result<Option<String>> {
        runs::remove_uncited_upload(&mut self.tx, org, id).await
    }

    async fn lock_run(
        &mut self,
        org: &str,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<Option<(StoredRun, Option<StoredRequest>)>> {
        let lock = match self.dialect {
            Dialect::Postgres => " FOR UPDATE OF r",
            Dialect::Sqlite => "",
        };
        runs::lock_run(&mut self.tx, org, id, request_id, lock).await
    }

    async fn write_run(&mut self, org: &str, write: &RunWrite<'_>) -> Result<WriteOutcome> {
        match self.writes {
            Writes::OneStatement => write::write_in_one_statement(&mut self.tx, org, write).await,
            Writes::InSteps => write::write_in_steps(&mut self.tx, org, write).await,
        }
    }

    async fn schedule_timer(&mut self, timer: &TimerRow) -> Result<()> {
        timers::schedule_timer(&mut self.tx, timer).await
    }

    async fn remove_timer(&mut self, org: &str, run_id: &str, timer_id: &str) -> Result<bool> {
        timers::remove_timer(&mut self.tx, org, run_id, timer_id).await
    }

    async fn lock_run_for_timer(
        &mut self,
        org: &str,
        run_id: &str,
        timer_id: &str,
        now: i64,
    ) -> Result<(Option<StoredRun>, Option<TakenTimer>)> {
        if self.dialect == Dialect::Postgres
            && let Some(found) = timers::lock_run_taking_timer(&mut self.tx, org, run_id, timer_id, now).await?
        {
            return Ok(found);
        }
        // SQLite, or no such run: two statements.
        let run = self.lock_run(org, run_id, None).await?.map(|(run, _)| run);
        let taken = timers::take_due_timer(&mut self.tx, org, run_id, timer_id, now).await?;
        Ok((run, taken))
    }

    async fn add_notification(&mut self, org: &str, notification: &NewNotification<'_>) -> Result<u64> {
        outbox::add_notification(&mut self.tx, org, notification).await
    }

    async fn add_webhook(&mut self, org: &str, webhook: &Webhook) -> Result<()> {
        outbox::add_webhook(&mut self.tx, org, webhook).await
    }

    async fn remove_webhook(&mut self, org: &str, id: &str, now: i64) -> Result<bool> {
        outbox::remove_webhook(&mut self.tx, org, id, now).await
    }

    async fn set_webhook_secret(&mut self, org: &str, id: &str, secret: &str) -> Result<()> {
        outbox::set_webhook_secret(&mut self.tx, org, id, secret).await
    }

    async fn redeliver(&mut self, org: &str, notification_id: &str, webhook_id: &str, now: i64) -> Result<bool> {
        outbox::redeliver(&mut self.tx, org, notification_id, webhook_id, now).await
    }

    async fn put_upload(&mut self, org: &str, upload: &NewUpload) -> Result<()> {
        runs::put_upload(&mut self.tx, org, upload).await
    }

    async fn create_org(&mut self, id: &str, slug: &str, name: &str, now: i64) -> Result<()> {
        admin::create_org(&mut self.tx, id, slug, name, now).await
    }

    async fn create_group(&mut self, org: &str, id: &str, now: i64) -> Result<()> {
        admin::create_group(&mut self.tx, org, id, now).await
    }

    async fn create_identity(&mut self, identity: &Identity, now: i64) -> Result<()> {
        admin::create_identity(&mut self.tx, identity, now).await
    }

    async fn add_member(&mut self, org: &str, group: &str, identity: &str) -> Result<()> {
        admin::add_member(&mut self.tx, org, group, identity).await
    }

    async fn revoke_tokens(&mut self, org: &str, identity: &str, now: i64) -> Result<u64> {
        admin::revoke_tokens(&mut self.tx, org, identity, now).await
    }

    async fn draft(&mut self, org: &str, process: &str) -> Result<Option<StoredDraft>> {
        admin::draft(&mut self.tx, org, process).await
    }

    async fn put_draft(&mut self, org: &str, process: &str, draft: &StoredDraft, now: i64) -> Result<()> {
        admin::put_draft(&mut self.tx, org, process, draft, now).await
    }

    async fn publish(&mut self, org: &str, version: &NewVersion, now: i64) -> Result<u32> {
        admin::publish(&mut self.tx, org, version, now).await
    }

    async fn commit(self) -> Result<()> {
        self.tx.commit().await?;
        Ok(())
    }

    async fn rollback(self) -> Result<()> {
        self.tx.rollback().await?;
        Ok(())
    }
}

impl Directory for SqlStore {
    async fn organization(&self, org: &str) -> Result<Option<Organization>> {
        let mut connection = self.lend().await?;
        directory::organization(&mut connection, OrgKey::Id, org).await
    }

    async fn organization_by_slug(&self, slug: &str) -> Result<Option<Organization>> {
        let mut connection = self.lend().await?;
        directory::organization(&mut connection, OrgKey::Slug, slug).await
    }

    async fn org_of_verified_domain(&self, domain: &str) -> Result<Option<String>> {
        let mut connection = self.lend().await?;
        directory::org_of_verified_domain(&mut connection, domain).await
    }

    async fn provider(&self, org: &str) -> Result<Option<Provider>> {
        let mut connection = self.lend().await?;
        directory::provider(&mut connection, org).await
    }

    async fn login(&self, org: &str, issuer: &str, subject: &str) -> Result<Option<Identity>> {
        let mut connection = self.lend().await?;
        directory::login(&mut connection, org, issuer, subject).await
    }

    async fn identity_by_person(&self, org: &str, person: &str) -> Result<Option<Identity>> {
        let mut connection = self.lend().await?;
        directory::identity_by_person(&mut connection, org, person).await
    }

    async fn groups(&self, org: &str) -> Result<Vec<String>> {
        let mut connection = self.lend().await?;
        directory::groups(&mut connection, org).await
    }

    async fn domains(&self, org: &str) -> Result<Vec<Domain>> {
        let mut connection = self.lend().await?;
        directory::domains(&mut connection, org).await
    }

    async fn group_list(&self, org: &str) -> Result<Vec<Group>> {
        let mut connection = self.lend().await?;
        directory::group_list(&mut connection, org).await
    }

    async fn session(&self, id_hash: &str, now: i64) -> Result<Option<SessionRow>> {
        let mut connection = self.lend().await?;
        directory::session(&mut connection, id_hash, now).await
    }

    async fn token_by_hash(&self, token_hash: &str) -> Result<Option<TokenRow>> {
        let mut connection = self.lend().await?;
        directory::token_by_hash(&mut connection, token_hash).await
    }

    async fn tokens(&self, org: &str, audience: Audience) -> Result<Vec<TokenRow>> {
        let mut connection = self.lend().await?;
        directory::tokens(&mut connection, org, audience).await
    }

    async fn audit(&self, org: &str, filter: &AuditFilter) -> Result<(Vec<AuditRow>, bool)> {
        let mut connection = self.lend().await?;
        directory::audit(&mut connection, org, filter).await
    }

    async fn credential(&self, token_hash: &str, now: i64) -> Result<Option<Credential>> {
        let mut connection = self.lend().await?;
        clients::credential(&mut connection, token_hash, now).await
    }

    async fn oauth_client(&self, id: &str) -> Result<Option<(OAuthClient, Vec<ClientSecret>)>> {
        clients::client(&mut *self.lend().await?, id).await
    }

    async fn oauth_clients(&self, org: &str, identity: &str) -> Result<Vec<(OAuthClient, Vec<ClientSecret>)>> {
        clients::clients_of(&mut *self.lend().await?, org, identity).await
    }
}

impl DirectoryTx for SqlTx {
    async fn add_oauth_client(&mut self, client: &OAuthClient) -> Result<()> {
        clients::add_client(&mut self.tx, client).await
    }

    async fn add_client_secret(&mut self, secret: &ClientSecret) -> Result<()> {
        clients::add_secret(&mut self.tx, secret).await
    }

    async fn revoke_client_secret(&mut self, client_id: &str, id: &str, now: i64) -> Result<bool> {
        clients::revoke_secret(&mut self.tx, client_id, id, now).await
    }

    async fn revoke_oauth_client(&mut self, org: &str, id: &str, now: i64) -> Result<bool> {
        clients::revoke_client(&mut self.tx, org, id, now).await
    }

    async fn lock_org(&mut self, org: &str) -> Result<Option<i64>> {
        directory::lock_org(&mut self.tx, self.dialect, org).await
    }

    async fn organization(&mut self, org: &str) -> Result<Option<Organization>> {
        directory::organization(&mut self.tx, OrgKey::Id, org).await
    }

    async fn update_org(&mut self, organization: &Organization) -> Result<()> {
        directory::update_org(&mut self.tx, organization).await
    }

    async fn put_provider(&mut self, provider: &Provider, now: i64) -> Result<()> {
        directory::put_provider(&mut self.tx, provider, now).await
    }

    async fn add_login(&mut self, org: &str, issuer: &str, subject: &str, identity: &str, now: i64) -> Result<()> {
        directory::add_login(&mut self.tx, org, issuer, subject, identity, now).await
    }

    async fn has_login(&mut self, org: &str, identity: &str, issuer: &str) -> Result<bool> {
        directory::has_login(&mut self.tx, org, identity, issuer).await
    }

    async fn identity(&mut self, org: &str, id: &str) -> Result<Option<Identity>> {
        admin::identity(&mut self.tx, org, id).await
    }

    async fn identity_by_person(&mut self, org: &str, person: &str) -> Result<Option<Identity>> {
        directory::identity_by_person(&mut self.tx, org, person).await
    }

    async fn set_person(&mut self, org: &str, id: &str, role: Option<Role>, deactivated_at: Option<i64>) -> Result<()> {
        directory::set_person(&mut self.tx, org, id, role, deactivated_at).await
    }

    async fn active_admins(&mut self, org: &str) -> Result<i64> {
        directory::active_admins(&mut self.tx, org).await
    }

    async fn groups(&mut self, org: &str) -> Result<Vec<String>> {
        directory::groups(&mut self.tx, org).await
    }

    async fn rename_group(&mut self, org: &str, id: &str, name: Option<&str>) -> Result<bool> {
        directory::rename_group(&mut self.tx, org, id, name).await
    }

    async fn set_claim_values(&mut self, org: &str, id: &str, values: &[String]) -> Result<bool> {
        directory::set_claim_values(&mut self.tx, org, id, values).await
    }

    async fn group_list(&mut self, org: &str) -> Result<Vec<Group>> {
        directory::group_list(&mut self.tx, org).await
    }

    async fn delete_group(&mut self, org: &str, id: &str) -> Result<bool> {
        directory::delete_group(&mut self.tx, org, id).await
    }

    async fn bindings(&mut self, org: &str) -> Result<Vec<directory::Bindings>> {
        directory::bindings(&mut self.tx, org).await
    }

    async fn remove_member(&mut self, org: &str, group: &str, identity: &str) -> Result<()> {
        directory::remove_member(&mut self.tx, org, group, identity).await
    }

    async fn put_domain(&mut self, org: &str, domain: &Domain, now: i64) -> Result<()> {
        directory::put_domain(&mut self.tx, org, domain, now).await
    }

    async fn remove_domain(&mut self, org: &str, domain: &str) -> Result<bool> {
        directory::remove_domain(&mut self.tx, org, domain).await
    }

    async fn put_session(&mut self, session: &SessionRow, only_new: bool) -> Result<bool> {
        directory::put_session(&mut self.tx, session, only_new).await
    }

    async fn delete_session(&mut self, id_hash: &str) -> Result<()> {
        directory::delete_session(&mut self.tx, id_hash).await
    }

    async fn delete_sessions_of(&mut self, org: &str, identity: &str) -> Result<u64> {
        directory::delete_sessions_of(&mut self.tx, org, identity).await
    }

    async fn add_token(&mut self, token: &TokenRow) -> Result<()> {
        directory::add_token(&mut self.tx, token).await
    }

    async fn set_token_expiry(&mut self, org: &str, id: &str, expires_at: i64) -> Result<bool> {
        directory::set_token_expiry(&mut self.tx, org, id, expires_at).await
    }

    async fn revoke_token(&mut self, org: &str, id: &str, now: i64) -> Result<bool> {
        directory::revoke_token(&mut self.tx, org, id, now).await
    }

    async fn append_audit(&mut self, org: &str, entry: &AuditRow) -> Result<()> {
        directory::append_audit(&mut self.tx, org, entry).await
    }
}
