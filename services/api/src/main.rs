//! `agentprocess-api`: the API process. Stateless: run as many as needed against one
//! PostgreSQL database.

use std::sync::Arc;

use clap::{Parser, Subcommand};

/// The agentprocess API server (protocol core-2, with parallel-1 and check-1), one of
/// any number of stateless processes over one PostgreSQL database. It serves, on one
/// address:
///
/// - /mcp: the Agent Process tools over MCP (Streamable HTTP), for agents and for
///   people's MCP clients, with bearer tokens or OAuth 2.1;
/// - OAuth 2.1: /.well-known/oauth-protected-resource and
///   /.well-known/oauth-authorization-server, /oauth/authorize, /oauth/token,
///   /oauth/register, /oauth/revoke, /oauth/introspect;
/// - the people's web app: / (the inbox), /runs, /processes, /overdue, /account and
///   the admin pages under /admin, signed in through each organization's OpenID
///   provider (/login, /auth/callback);
/// - /signup: a new organization signs up through its OpenID provider;
/// - /api/v1: the REST admin surface, with API tokens (its OpenAPI document at
///   /api/v1/openapi.json);
/// - /v1/uploads (evidence uploads) and /files (signed file URLs);
/// - /healthz and /readyz (and /metrics on its own address when asked).
///
/// `serve` refuses a database that lacks any of this build's migrations: apply them
/// first with `migrate`, or pass --migrate.
///
/// Traces and metrics go over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (and the
/// other standard OTEL_* variables); see docs/operations.md. SIGTERM drains: /readyz
/// turns 503, the listener closes after --shutdown-delay-seconds, calls in flight get
/// --shutdown-grace-seconds; a second signal exits at once.
///
/// Every setting can also come from its AGENTPROCESS_* environment variable; a flag
/// wins over the variable.
#[derive(Debug, Parser)]
#[command(name = "agentprocess-api", version, propagate_version = true, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve /mcp, OAuth, the web app, /signup, /api/v1 and uploads (see above).
    Serve(Box<agentprocess_app::flags::ApiArgs>),
    /// Apply database migrations, then exit.
    Migrate {
        /// postgres://user:password@host/database (or sqlite://path?mode=rwc).
        #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
        database_url: String,
    },
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

async fn run(args: agentprocess_app::flags::ApiArgs) -> anyhow::Result<()> {
    let config = agentprocess_app::ApiConfig::from_args(args)?;
    let telemetry = config.process.telemetry("agentprocess-api")?;
    let api = agentprocess_app::Api::start(&config, None).await?;
    tracing::info!(address = %api.local_addr()?, "serving /mcp, the web app and /api/v1");
    let router = agentprocess_http::router(Arc::clone(&api.service), Arc::clone(&api.auth), &config.http);
    let served = api.serve(&config, router, &telemetry).await;
    tracing::info!("stopped");
    telemetry.shutdown();
    served
}
