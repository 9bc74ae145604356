//! `timer-firing`: schedules N timers due across a spread (100,000 across one minute
//! by default) and measures how the scheduler fires them: throughput and lateness
//! (p50, p99, max), read back from the run records.
//!
//! Each timer is a real run of the `publish-at` process (one `wait_until: inputs.at`
//! step, then `finish`), started through the service, so each has its timer row in
//! PostgreSQL and its entry in Redis, pushed by the service after commit as the API
//! does. The scheduler is the service's own loop over the Redis queue, with the
//! reconciler running beside it, as in `agentprocess-scheduler`.
//!
//! Starting 100,000 runs takes longer than a minute here, so the runs are started
//! with their `at` an hour ahead and then the service's clock is moved forward once,
//! to two seconds before the first is due; from then on it runs at real speed, so
//! lateness in the record (`end.at - inputs.at`) is real lateness.
//!
//! With `--scheduler`, this process only starts the runs and moves the clocks: the
//! timers are fired by a real `agentprocess-scheduler` (started `--test-clock`),
//! whose memory the script reads meanwhile.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentprocess_blobs::{NoBlobs, ServerBlobs};
use agentprocess_engine::{Mode, PersonFormat};
use agentprocess_service::{
    Admin, Caller, Clock as _, SchedulerSettings, Service, Settings, StartRunArgs, TestClock, Write,
};
use agentprocess_store::{SqlStore, Store as _};
use agentprocess_timers::{RedisQueue, RedisSettings, TimerQueue as _};
use anyhow::{Context as _, bail};
use clap::Parser;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use agentprocess_loadtests::summarize;

const PROCESS: &str = include_str!("../../tests/e2e/processes/publish-at/PROCESS.md");
const ORG: &str = "bench";

/// Schedules timers and measures their firing.
#[derive(Debug, Parser)]
#[command(name = "timer-firing")]
struct Args {
    /// A migrated or empty PostgreSQL database of the benchmark's own.
    #[arg(long)]
    database_url: String,
    /// The Redis holding the timer queue (keys under a fresh prefix).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    redis_url: String,
    /// How many timers.
    #[arg(long, default_value_t = 100_000)]
    timers: usize,
    /// The timers fall due evenly across this many seconds.
    #[arg(long, default_value_t = 60)]
    spread_seconds: u64,
    /// Runs started at once while scheduling.
    #[arg(long, default_value_t = 16)]
    start_concurrency: usize,
    /// Transactions the scheduler applies timers in at once.
    #[arg(long, default_value_t = 8)]
    fire_concurrency: usize,
    /// Timers per transaction.
    #[arg(long, default_value_t = 8)]
    per_transaction: usize,
    /// Timers the scheduler takes per pass.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Database connections.
    #[arg(long, default_value_t = 32)]
    connections: u32,
    /// Fire with a running `agentprocess-scheduler` instead of the service's loop in
    /// this process: its base URL. It must run with `--test-clock` on the same
    /// database and Redis prefix; its clock is moved with this process's.
    #[arg(long, requires = "redis_prefix")]
    scheduler: Option<String>,
    /// The Redis key prefix of the timer queue (default: a fresh one).
    #[arg(long)]
    redis_prefix: Option<String>,
}

// As in agentprocess-scheduler, whose loop this runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("timer-firing: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<bool> {
    let store = SqlStore::connect(&args.database_url, args.connections).await?;
    store.migrate().await?;
    let caller = seed(&store).await?;
    let clock = Arc::new(TestClock::default());
    let prefix = args
        .redis_prefix
        .clone()
        .unwrap_or_else(|| format!("agentprocess-bench:{}", agentprocess_service::random_id("", 6)));
    let queue = Arc::new(RedisQueue::new(&RedisSettings {
        prefix: prefix.clone(),
        max_connections: 32,
        ..RedisSettings::new(args.redis_url.clone())
    })?);
    let settings = Settings::new("http://127.0.0.1", vec![0; 32]);
    let service = Arc::new(
        Service::new(store.clone(), ServerBlobs::None(NoBlobs), clock.clone(), settings)
            .with_timer_queue(queue.clone()),
    );

    let first_due = clock.now().as_millisecond() + 3_600_000;
    let spread_ms = i64::try_from(args.spread_seconds * 1000)?;
    let count = i64::try_from(args.timers)?;
    println!(
        "scheduling {} timers due across {} s …",
        args.timers, args.spread_seconds
    );
    let scheduling = Instant::now();
    start_runs(&service, &caller, &args, first_due, spread_ms, count).await?;
    let started_in = scheduling.elapsed();
    // The pushes to Redis run after each commit, in the background.
    let deadline = Instant::now() + Duration::from_secs(60);
    while queue.count().await? < u64::try_from(args.timers)? {
        if Instant::now() > deadline {
            bail!("the queue holds {} of {} timers", queue.count().await?, args.timers);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "  {} runs started in {:.1} s ({:.0}/s); {} queue entries",
        args.timers,
        started_in.as_secs_f64(),
        args.timers as f64 / started_in.as_secs_f64(),
        queue.count().await?
    );

    let stop = CancellationToken::new();
    let scheduler = SchedulerSettings {
        batch: args.batch,
        concurrency: args.fire_concurrency,
        per_transaction: args.per_transaction,
        ..SchedulerSettings::default()
    };
    let tasks = if args.scheduler.is_some() {
        Vec::new()
    } else {
        vec![
            tokio::spawn(Arc::clone(&service).run_scheduler(scheduler.clone(), stop.clone())),
            tokio::spawn(Arc::clone(&service).run_reconciler(scheduler, stop.clone())),
        ]
    };
    // Two seconds before the first timer is due, at real speed from here on.
    let jump = (first_due - 2_000 - clock.now().as_millisecond()) / 1000;
    clock.advance(jump);
    if let Some(base) = &args.scheduler {
        reqwest::Client::new()
            .post(format!("{base}/test/clock"))
            .json(&json!({ "advanceSeconds": jump }))
            .send()
            .await?
            .error_for_status()
            .context("moving the scheduler's clock")?;
    }
    let firing = Instant::now();
    let patience = Duration::from_secs(args.spread_seconds + 180);
    loop {
        let left = store.next_timer_at().await?.is_some();
        if !left {
            break;
        }
        if firing.elapsed() > patience {
            println!("  gave up waiting after {} s", patience.as_secs());
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.cancel();
    for task in tasks {
        task.await?;
    }
    report(&args, first_due).await
}

/// Every run document of the benchmark's organization.
async fn run_documents(url: &str) -> anyhow::Result<Vec<String>> {
    use sqlx::Connection as _;
    let mut connection = sqlx::PgConnection::connect(url).await?;
    let rows: Vec<(String,)> = sqlx::query_as("SELECT doc FROM runs WHERE org_id = $1")
        .bind(ORG)
        .fetch_all(&mut connection)
        .await?;
    Ok(rows.into_iter().map(|(doc,)| doc).collect())
}

/// The organization, the agent that starts runs, and the published process.
async fn seed(store: &SqlStore) -> anyhow::Result<Caller> {
    let admin = Admin::new(
        store.clone(),
        Arc::new(agentprocess_service::SystemClock),
        PersonFormat::Email,
    );
    admin.create_org(ORG, "Benchmark").await?;
    let identity = admin
        .create_identity(ORG, None, "starter", "starter", None, &[])
        .await?;
    admin
        .import_draft(ORG, PROCESS.as_bytes(), Some("publish-at"), None)
        .await?;
    admin.publish(ORG, "publish-at", None).await?;
    Ok(Caller::issued(identity, None))
}

async fn start_runs(
    service: &Arc<Service>,
    caller: &Caller,
    args: &Args,
    first_due: i64,
    spread_ms: i64,
    count: i64,
) -> anyhow::Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..args.start_concurrency.max(1) {
        let (service, caller, next) = (Arc::clone(service), caller.clone(), Arc::clone(&next));
        let total = args.timers;
        workers.push(tokio::spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                let offset = i64::try_from(index)? * spread_ms / count;
                let at = jiff::Timestamp::from_millisecond(first_due + offset)?;
                let mut inputs = Map::new();
                inputs.insert("at".to_owned(), json!(format!("{at:.3}")));
                let mut arguments = Map::new();
                arguments.insert("process".to_owned(), json!("publish-at"));
                arguments.insert("inputs".to_owned(), Value::Object(inputs.clone()));
                let write = Write::from_arguments(format!("start-{index}"), &arguments);
                let start = StartRunArgs {
                    process: "publish-at".to_owned(),
                    version: None,
                    inputs,
                    mode: Mode::Live,
                };
                if let Err(error) = service.start_run(&caller, start, &write).await {
                    bail!("start_run {index}: {error:?}");
                }
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

/// Lateness of every fired timer from the record (`end.at` − `inputs.at`), and
/// throughput from the first due time to the last firing.
async fn report(args: &Args, first_due: i64) -> anyhow::Result<bool> {
    let mut lateness_us = Vec::with_capacity(args.timers);
    let mut last_fired = first_due;
    let mut unfired = 0_usize;
    let rows = run_documents(&args.database_url).await?;
    for doc in &rows {
        let doc: Value = serde_json::from_str(doc).context("run document")?;
        // The row holds `{apart, run}` (the benchmark's runs are small: nothing apart).
        let run = doc.get("run").unwrap_or(&doc);
        let due: jiff::Timestamp = run["inputs"]["at"].as_str().context("inputs.at")?.parse()?;
        match run["end"]["at"].as_str() {
            Some(ended) => {
                let ended: jiff::Timestamp = ended.parse()?;
                let late = ended.as_millisecond() - due.as_millisecond();
                last_fired = last_fired.max(ended.as_millisecond());
                lateness_us.push(u64::try_from(late.max(0))? * 1000);
            }
            None => unfired += 1,
        }
    }
    let fired = lateness_us.len();
    let window_s = (last_fired - first_due) as f64 / 1000.0;
    let lateness = summarize(&mut lateness_us);
    println!("timers: {} scheduled, {fired} fired, {unfired} unfired", args.timers);
    println!(
        "firing: {:.0} timers/s over {window_s:.1} s (first due to last fired; due rate {:.0}/s)",
        fired as f64 / window_s.max(0.001),
        args.timers as f64 / args.spread_seconds as f64
    );
    println!(
        "lateness: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        lateness.p50_ms, lateness.p99_ms, lateness.max_ms
    );
    let met = unfired == 0 && fired == args.timers && lateness.p99_ms < 1000.0;
    println!(
        "target (every timer fired, p99 lateness < 1 s): {}",
        if met { "met" } else { "NOT met" }
    );
    Ok(met)
}
