//! `agentprocess-scheduler`: fires timers and delivers webhooks. Run any number of
//! replicas against one database and one Redis: they take timers atomically, and a
//! timer is applied only by removing its row under the run's lock.

use std::net::SocketAddr;
use std::sync::Arc;

use agentprocess_blobs::NoBlobs;
use agentprocess_service::{Service, Settings};
use agentprocess_store::SqlStore;
use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use clap::{Parser, Subcommand};

/// The agentprocess scheduler: fires due timers (due, wait, wait_until, wait_for
/// timeouts) from the Redis timer queue, re-adds timers missing from the queue, and
/// delivers webhook notifications. Serves /healthz and /readyz (and /metrics on its own
/// address when asked).
///
/// Traces and metrics go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set. SIGTERM
/// stops taking timers and finishes the ones under way within
/// --shutdown-grace-seconds; a second signal exits at once.
///
/// Every setting can also come from its AGENTPROCESS_* environment variable; a flag
/// wins over the variable.
#[derive(Debug, Parser)]
#[command(name = "agentprocess-scheduler", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fire timers and deliver webhooks until SIGTERM.
    Serve(Box<Serve>),
}

#[derive(Debug, clap::Args)]
struct Serve {
    /// postgres://user:password@host/database (or sqlite://path).
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    database_url: String,
    /// Address of /healthz and /readyz.
    #[arg(long, env = "AGENTPROCESS_SCHEDULER_LISTEN", default_value = "0.0.0.0:8081")]
    listen: SocketAddr,
    /// Database connections.
    #[arg(long, env = "AGENTPROCESS_MAX_CONNECTIONS", default_value_t = 20)]
    max_connections: u32,
    #[command(flatten)]
    queue: agentprocess_http::config::QueueArgs,
    #[command(flatten)]
    background: agentprocess_http::config::BackgroundArgs,
    #[command(flatten)]
    process: agentprocess_http::config::ProcessArgs,
    /// The API processes' key, which opens the webhook signing secrets they sealed.
    #[command(flatten)]
    seal: agentprocess_http::config::SealArgs,
    /// The API processes' --url-secret, when they derive their key from it (no
    /// --secret-key).
    #[arg(long, env = "AGENTPROCESS_URL_SECRET", hide_env_values = true)]
    url_secret: Option<String>,
}

// glibc's allocator spends a large share of a busy server's time; mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type SchedulerService = Service<SqlStore, NoBlobs>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve(serve) => run(*serve).await,
    }
}

async fn run(serve: Serve) -> anyhow::Result<()> {
    let telemetry = serve.process.telemetry("agentprocess-scheduler")?;
    let store = SqlStore::connect(&serve.database_url, serve.max_connections)
        .await
        .context("cannot reach the database")?;
    agentprocess_http::observe_pool(&store);
    let (clock, test_clock) = agentprocess_http::clock(serve.process.test_clock);
    // The scheduler presents no files, so it needs no public URL or URL key.
    let settings = Settings {
        call_deadline: serve.process.call_deadline_seconds,
        seal_key: serve.seal.key_of_the_api(serve.url_secret.as_deref())?,
        ..Settings::new("", Vec::new())
    };
    let mut service = Service::new(store, NoBlobs, clock, settings);
    match serve.queue.queue()? {
        Some(queue) => service = service.with_timer_queue(queue),
        None => tracing::warn!("no --redis-url: firing timers from the database rows"),
    }
    let service = Arc::new(service);
    let listener = tokio::net::TcpListener::bind(serve.listen)
        .await
        .with_context(|| format!("cannot listen on {}", serve.listen))?;
    tracing::info!(address = %listener.local_addr()?, "scheduler running; /healthz and /readyz served");
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(Arc::clone(&service));
    let router = agentprocess_http::with_test_clock(router, &service, test_clock);
    // Uploads are swept by the API processes, which hold the evidence store.
    let process = serve.process.settings(&telemetry);
    let served = agentprocess_http::serve(
        service,
        listener,
        router,
        Some(serve.background.background()),
        None,
        &process,
    )
    .await;
    tracing::info!("scheduler stopped");
    telemetry.shutdown();
    served
}

/// Ready when the database answers with every migration applied and the timer queue
/// answers.
async fn ready(
    State(service): State<Arc<SchedulerService>>,
    draining: Option<axum::Extension<agentprocess_http::Draining>>,
) -> Response {
    agentprocess_http::readiness(
        service.store(),
        service.timer_queue().map(|queue| &**queue),
        draining.as_deref(),
    )
    .await
}
