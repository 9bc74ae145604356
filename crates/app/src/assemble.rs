//! The service over its database and evidence store.

use std::sync::Arc;

use agentprocess_service::Service;
use agentprocess_store::Store as _;

/// Where uploaded evidence is kept.
#[derive(Debug, Clone)]
pub enum Storage {
    /// Files under a directory.
    Dir(std::path::PathBuf),
    /// Objects in an S3 bucket.
    S3 {
        /// How to reach it.
        settings: agentprocess_blobs::S3Settings,
        /// Create the bucket if it does not exist.
        create_bucket: bool,
    },
    /// None: a process that never reads or writes evidence (the scheduler).
    None,
}

impl Storage {
    /// The store, ready for use.
    pub async fn open(&self) -> Result<agentprocess_blobs::ServerBlobs, agentprocess_blobs::Error> {
        Ok(match self {
            Storage::Dir(dir) => agentprocess_blobs::ServerBlobs::Local(agentprocess_blobs::LocalBlobs::new(dir)?),
            Storage::S3 {
                settings,
                create_bucket,
            } => {
                let s3 = agentprocess_blobs::S3Blobs::new(settings).await;
                if *create_bucket {
                    s3.create_bucket().await?;
                }
                agentprocess_blobs::ServerBlobs::S3(s3)
            }
            Storage::None => agentprocess_blobs::ServerBlobs::None(agentprocess_blobs::NoBlobs),
        })
    }
}

/// Connects to the database, applies migrations when it says so, and builds the
/// service over it with evidence in `storage`.
pub async fn assemble(
    database: &crate::Database,
    storage: &Storage,
    settings: agentprocess_service::Settings,
    clock: Arc<dyn agentprocess_service::Clock>,
    extras: Extras,
) -> Result<Arc<Service>, AssembleError> {
    let store = agentprocess_store::SqlStore::connect(database.url.expose(), database.max_connections).await?;
    if database.migrate {
        store.migrate().await?;
    } else {
        let pending = store.pending_migrations().await?;
        if !pending.is_empty() {
            return Err(AssembleError::Unmigrated(Unmigrated {
                pending,
                known: agentprocess_store::SqlStore::migration_count(),
            }));
        }
    }
    observe_pool(&store);
    let blobs = storage.open().await?;
    let mut service = Service::new(store, blobs, clock, settings);
    if let Some(queue) = extras.queue {
        service = service.with_timer_queue(queue);
    }
    if let Some(evaluator) = extras.evaluator {
        service = service.with_evaluator(evaluator);
    }
    if extras.publishes_check {
        service = service.publishing_check();
    }
    Ok(Arc::new(service))
}

/// Reports the store's connections as `db.client.connection.count`.
pub fn observe_pool(store: &agentprocess_store::SqlStore) {
    let sampled = store.clone();
    agentprocess_telemetry::observe_pool("agentprocess", move || sampled.pool_stats());
    let store = store.clone();
    agentprocess_telemetry::observe_dead_connections("agentprocess", move || store.connections_found_dead());
}

/// What a service may use besides its database and evidence store.
#[derive(Default)]
pub struct Extras {
    /// Where timers are mirrored for a separate scheduler; `None` fires them in process.
    pub queue: Option<Arc<dyn agentprocess_timers::TimerQueue>>,
    /// The check-1 evaluator; `None` leaves check-1 unoffered.
    pub evaluator: Option<Arc<dyn agentprocess_evaluator::Evaluator>>,
    /// Publish processes with `check:` without an evaluator here: the API processes
    /// of this database run one (`agentprocess admin --with-check`).
    pub publishes_check: bool,
}

/// Why the service could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The database could not be reached or migrated.
    #[error(transparent)]
    Store(#[from] agentprocess_store::Error),
    /// The evidence store could not be opened.
    #[error(transparent)]
    Blobs(#[from] agentprocess_blobs::Error),
    /// The database lacks some of this build's migrations, and the process was not told
    /// to apply them. Serving would fail every call on a missing table or column.
    #[error(transparent)]
    Unmigrated(Unmigrated),
}

/// The migrations a database lacks, said in one line with what applies them.
#[derive(Debug, thiserror::Error)]
pub struct Unmigrated {
    /// The versions not applied, oldest first.
    pub pending: Vec<i64>,
    /// How many migrations this build has.
    pub known: usize,
}

impl std::fmt::Display for Unmigrated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pending.len() == self.known {
            write!(f, "the database has none of this build's {} migrations", self.known)?;
        } else {
            let versions: Vec<String> = self.pending.iter().map(i64::to_string).collect();
            write!(
                f,
                "the database lacks {} of this build's {} migrations ({})",
                self.pending.len(),
                self.known,
                versions.join(", ")
            )?;
        }
        f.write_str(": apply them with `agentprocess-api migrate`, or start `agentprocess-api serve` with --migrate")
    }
}
