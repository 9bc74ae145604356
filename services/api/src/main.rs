//! `agentprocess-api`: the API process. Stateless: run as many as needed against one
//! PostgreSQL database.

use std::net::SocketAddr;

use anyhow::Context as _;
use base64::Engine as _;
use clap::{Parser, Subcommand};

/// The agentprocess API server (protocol core-2): the MCP endpoint at /mcp, uploads at
/// /v1/uploads, signed file URLs, /healthz and /readyz (and /metrics on its own address
/// when asked).
///
/// Traces and metrics go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (and the
/// other standard OTEL_* variables); see docs/operations.md. SIGTERM drains: /readyz
/// turns 503, the listener closes after --shutdown-delay-seconds, calls in flight get
/// --shutdown-grace-seconds; a second signal exits at once.
///
/// Every setting can also come from its AGENTPROCESS_* environment variable; a flag
/// wins over the variable.
#[derive(Debug, Parser)]
#[command(name = "agentprocess-api", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API.
    Serve(Box<Serve>),
    /// Apply database migrations, then exit.
    Migrate {
        /// postgres://user:password@host/database (or sqlite://path?mode=rwc).
        #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
        database_url: String,
    },
}

#[derive(Debug, clap::Args)]
struct Serve {
    /// postgres://user:password@host/database (or sqlite://path?mode=rwc).
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    database_url: String,
    /// Address to listen on.
    #[arg(long, env = "AGENTPROCESS_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
    /// The address callers use to reach this server, for file URLs (http://host:port).
    #[arg(long, env = "AGENTPROCESS_PUBLIC_URL")]
    public_url: String,
    /// Key that signs file URLs, base64; every API process of a deployment needs the same one.
    #[arg(long, env = "AGENTPROCESS_URL_SECRET", hide_env_values = true)]
    url_secret: String,
    #[command(flatten)]
    storage: agentprocess_http::config::StorageArgs,
    /// Apply migrations before serving.
    #[arg(long, env = "AGENTPROCESS_MIGRATE")]
    migrate: bool,
    /// Database connections per process.
    #[arg(long, env = "AGENTPROCESS_MAX_CONNECTIONS", default_value_t = 20)]
    max_connections: u32,
    /// Host names callers may use, besides the public URL's (repeat or comma-separate).
    #[arg(long, env = "AGENTPROCESS_ALLOWED_HOSTS", value_delimiter = ',')]
    allowed_host: Vec<String>,
    /// Browser origins allowed to call /mcp (repeat or comma-separate); none by default.
    #[arg(long, env = "AGENTPROCESS_ALLOWED_ORIGINS", value_delimiter = ',')]
    allowed_origin: Vec<String>,
    /// Serve every /mcp request through the MCP SDK's own request handling, including
    /// plain tool calls, which are otherwise answered directly (the same answers, with
    /// less work per call). For comparing the two.
    #[arg(long, env = "AGENTPROCESS_NO_DIRECT_TOOL_CALLS")]
    no_direct_tool_calls: bool,
    /// Lease length of a claim, in seconds.
    #[arg(long, env = "AGENTPROCESS_LEASE_SECONDS", default_value_t = 600)]
    lease_seconds: u32,
    /// Largest upload, in bytes.
    #[arg(long, env = "AGENTPROCESS_MAX_UPLOAD_BYTES", default_value_t = 10 << 20)]
    max_upload_bytes: usize,
    /// Largest run data of one run, in bytes.
    #[arg(long, env = "AGENTPROCESS_RUN_DATA_BYTES", default_value_t = 1 << 20)]
    run_data_bytes: usize,
    /// Do not fire timers or deliver webhooks in this process (a separate scheduler
    /// does). Implied by --redis-url: then timers go to the queue and
    /// agentprocess-scheduler fires them.
    #[arg(long, env = "AGENTPROCESS_NO_TIMERS")]
    no_timers: bool,
    #[command(flatten)]
    queue: agentprocess_http::config::QueueArgs,
    #[command(flatten)]
    background: agentprocess_http::config::BackgroundArgs,
    #[command(flatten)]
    process: agentprocess_http::config::ProcessArgs,
    #[command(flatten)]
    auth: agentprocess_http::config::AuthArgs,
    #[command(flatten)]
    check: agentprocess_http::config::CheckArgs,
    #[command(flatten)]
    limits: agentprocess_http::config::LimitArgs,
    /// Offer `/dev/sign-in` for this organization: anyone may sign in as any of its
    /// people with no identity provider. Only for development and tests.
    #[arg(long, env = "AGENTPROCESS_DANGEROUSLY_ALLOW_DEV_SIGN_IN", value_name = "ORG")]
    dangerously_allow_dev_sign_in: Option<String>,
}

// glibc's allocator spends a large share of a busy server's time; mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Migrate { database_url } => {
            let _telemetry = agentprocess_telemetry::init(&agentprocess_telemetry::Options {
                service_name: "agentprocess-migrate",
                log_json: std::env::var("AGENTPROCESS_LOG_JSON").is_ok_and(|value| value == "true"),
                prometheus: false,
                watched_organizations: &[],
            })?;
            let store = agentprocess_store::SqlStore::connect(&database_url, 1).await?;
            store.migrate().await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Serve(serve) => run(*serve).await,
    }
}

async fn run(serve: Serve) -> anyhow::Result<()> {
    let telemetry = serve.process.telemetry("agentprocess-api")?;
    let secret = base64::engine::general_purpose::STANDARD
        .decode(serve.url_secret.trim())
        .context("--url-secret must be base64")?;
    anyhow::ensure!(secret.len() >= 32, "--url-secret must hold at least 32 bytes");
    let mut settings = agentprocess_service::Settings::new(serve.public_url.clone(), secret);
    // Identity and the service seal with one key: --secret-key, or the one derived
    // from --url-secret.
    settings.seal_key = serve.auth.seal.key_or_derived_from(&settings.url_secret)?;
    settings.call_deadline = serve.process.call_deadline_seconds;
    settings.engine.lease_seconds = serve.lease_seconds;
    settings.engine.run_data_bytes = serve.run_data_bytes;
    settings.max_upload_bytes = serve.max_upload_bytes;
    settings.engine.check = serve.check.limits();
    settings.limits = serve.limits.limits(serve.max_connections);
    let mut hosts = serve.allowed_host.clone();
    hosts.extend(agentprocess_http::host_of(&serve.public_url));
    let http = agentprocess_http::HttpSettings {
        allowed_hosts: hosts,
        allowed_origins: serve.allowed_origin.clone(),
        dev_sign_in_org: serve.dangerously_allow_dev_sign_in.clone(),
        direct_tool_calls: !serve.no_direct_tool_calls,
    };
    if serve.auth.seal.secret_key.is_none() {
        tracing::warn!(
            "no --secret-key: secrets are sealed with a key derived from --url-secret, so changing that \
             secret makes them unreadable"
        );
    }
    if let Some(org) = &serve.dangerously_allow_dev_sign_in {
        tracing::warn!(%org, "development sign-in on: anyone can sign in as this organization's people");
    }
    let (clock, test_clock) = agentprocess_http::clock(serve.process.test_clock);
    let service = agentprocess_http::assemble(
        &serve.database_url,
        serve.max_connections,
        serve.migrate,
        &serve.storage.storage()?,
        settings,
        clock,
        agentprocess_http::Extras {
            queue: serve.queue.queue()?,
            evaluator: serve.check.evaluator()?,
        },
    )
    .await?;
    serve.check.watch(&service).await?;
    let listener = tokio::net::TcpListener::bind(serve.listen)
        .await
        .with_context(|| format!("cannot listen on {}", serve.listen))?;
    tracing::info!(address = %listener.local_addr()?, "serving /mcp");
    let router = agentprocess_http::with_test_clock(
        agentprocess_http::router(
            std::sync::Arc::clone(&service),
            std::sync::Arc::new(serve.auth.auth(
                service.store().clone(),
                &serve.public_url,
                service.settings().seal_key.clone(),
            )?),
            &http,
        ),
        &service,
        test_clock,
    );
    let background = (!serve.no_timers && serve.queue.redis_url.is_none()).then(|| serve.background.background());
    if background.is_none() {
        tracing::info!("timers and webhooks are left to agentprocess-scheduler");
    }
    let process = serve.process.settings(&telemetry);
    let served = agentprocess_http::serve(
        service,
        listener,
        router,
        background,
        Some(serve.storage.sweep()),
        &process,
    )
    .await;
    tracing::info!("stopped");
    telemetry.shutdown();
    served
}
