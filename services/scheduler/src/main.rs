//! `agentprocess-scheduler`: fires timers and delivers webhooks. Run any number of
//! replicas against one database and one Redis: they take timers atomically, and a
//! timer is applied only by removing its row under the run's lock.

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
    Serve(Box<agentprocess_app::flags::SchedulerArgs>),
}

// glibc's allocator spends a large share of a busy server's time; mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve(serve) => run(*serve).await,
    }
}

async fn run(args: agentprocess_app::flags::SchedulerArgs) -> anyhow::Result<()> {
    let config = agentprocess_app::SchedulerConfig::from_args(args)?;
    let telemetry = config.process.telemetry("agentprocess-scheduler")?;
    let served = agentprocess_app::run_scheduler(&config, &telemetry).await;
    tracing::info!("scheduler stopped");
    telemetry.shutdown();
    served
}
