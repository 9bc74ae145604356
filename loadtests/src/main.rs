//! `agent-cycles`: how many agent cycles (get_work → claim → submit) per second one
//! agentprocess API server sustains with N concurrent agents.
//!
//! Before timing starts it starts `--runs` runs of a one-step process (see
//! `loadtests/processes/one-step`) with `start_run`, concurrently. Then N agent tasks
//! loop for `--seconds`: `get_work` (limit 20), pick one item at random, `claim` it
//! (a conflict with another agent is counted and the agent loops), `submit` an output.
//! Each successful submit is one cycle. With `--rate` the load is open-loop instead: a
//! new cycle starts every 1/rate seconds whatever the earlier ones are doing, and its
//! latency counts from when it was due to start, so queueing in the server is not
//! hidden by the load waiting for it (coordinated omission). At the end it prints the
//! rate, the claim conflicts, p50/p99 latencies of each call and of a whole cycle, the
//! CPU each watched process used per cycle, and one machine-readable `RESULT …` line.

mod stats;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use serde_json::{Value, json};

use agentprocess_loadtests::client::{Answer, Mcp};
use agentprocess_loadtests::machine::{CpuSource, CpuWindow, rss_kib};
use agentprocess_loadtests::{RequestIds, Rng, Summary, micros_since, nanos_now, summarize};

use crate::stats::Stats;

/// Measures agent cycles per second (get_work → claim → submit) against an
/// agentprocess API server.
///
/// Pre-starts --runs runs of --process with the starter's token (concurrently, before
/// timing), then runs --agents agent tasks for --seconds. Each task loops: get_work
/// (limit --limit, filtered to --process), pick an item at random, claim it (a
/// conflict is counted and the task loops), submit {result: "ok"} with a summary. A
/// task stops at the deadline or when get_work finds no work left.
///
/// With --rate R the agents are replaced by an open-loop generator: a cycle is due every
/// 1/R s, each runs on its own (retrying get_work after a lost claim), and its latency
/// counts from when it was due.
///
/// Prints cycles, cycles/s, claim conflicts, other errors (with examples), p50/p99/max
/// latency of each call and of a whole cycle, the CPU of each --cpu-pid and --cpu-named
/// process per cycle, the peak memory of each --memory-pid, and a final
/// `RESULT key=value …` line. Exits 2 when any call failed other than by a claim
/// conflict.
#[derive(Debug, Parser)]
#[command(name = "agent-cycles", version)]
struct Cli {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp ("/mcp" is added when the URL has
    /// no path); repeat or comma-separate to spread the agents over several servers
    /// (agent i uses URL i mod count).
    #[arg(long, value_delimiter = ',', required = true)]
    url: Vec<String>,
    /// Agent bearer token(s); repeat or comma-separate to give agents different identities
    /// (agent i uses token i mod count).
    #[arg(long, value_delimiter = ',', required = true)]
    token: Vec<String>,
    /// Bearer token of an identity allowed to start runs of --process.
    #[arg(long)]
    starter_token: String,
    /// Concurrent agent tasks.
    #[arg(long, default_value_t = 8)]
    agents: usize,
    /// Runs to start before timing; each gives one cycle. Too few and the agents run out
    /// of work early (reported).
    #[arg(long, default_value_t = 5000)]
    runs: usize,
    /// How long the agents run, in seconds.
    #[arg(long, default_value_t = 20)]
    seconds: u64,
    /// Concurrent start_run calls while pre-starting.
    #[arg(long, default_value_t = 16)]
    start_concurrency: usize,
    /// The process to start and work on (one agent step, then a finish).
    #[arg(long, default_value = "one-step")]
    process: String,
    /// get_work's limit (1..100): how many items each agent picks from.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100))]
    limit: u32,
    /// Open-loop load: start this many cycles per second, each on its own, instead of
    /// --agents agents looping.
    #[arg(long)]
    rate: Option<f64>,
    /// The most cycles in flight at once under --rate; a cycle due beyond it waits
    /// (and its wait counts in its latency).
    #[arg(long, default_value_t = 512)]
    max_in_flight: usize,
    /// The floor: each cycle is three `describe` calls instead of get_work, claim and
    /// submit. The same HTTP, bearer token, JSON-RPC and MCP path with no database work,
    /// so its rate is the most cycles/s any database could let this server and client
    /// reach on this machine. Starts no runs; the rows of the latency table are the
    /// first, second and third call.
    #[arg(long, conflicts_with = "rate")]
    floor: bool,
    /// A process whose CPU to report per cycle, as LABEL=PID (repeatable).
    #[arg(long, value_parser = labelled::<u32>)]
    cpu_pid: Vec<(String, u32)>,
    /// Processes whose CPU to report per cycle, summed, as LABEL=COMMAND: every process
    /// whose command is COMMAND, e.g. postgres=postgres (repeatable).
    #[arg(long, value_parser = labelled::<String>)]
    cpu_named: Vec<(String, String)>,
    /// After pre-starting, run ANALYZE on this database (postgres://…), as autovacuum
    /// would within a minute or so on a live server: tables that grew from empty in the
    /// last seconds have no statistics, and PostgreSQL then plans get_work as a scan
    /// of every ready step.
    #[arg(long)]
    analyze: Option<String>,
    /// A process whose resident memory to sample during the timed part, as LABEL=PID
    /// (repeatable).
    #[arg(long, value_parser = labelled::<u32>)]
    memory_pid: Vec<(String, u32)>,
}

/// `LABEL=VALUE`.
fn labelled<T: std::str::FromStr>(text: &str) -> Result<(String, T), String> {
    let (label, value) = text.split_once('=').ok_or("expected LABEL=VALUE")?;
    if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("LABEL must be letters, digits and _".to_owned());
    }
    let value = value.parse().map_err(|_| format!("cannot read {value:?}"))?;
    Ok((label.to_owned(), value))
}

/// What every task shares.
struct Bench {
    /// One client per --url.
    mcp: Vec<Mcp>,
    cli: Cli,
    request_ids: RequestIds,
}

impl Bench {
    /// Agent `index`'s server and token.
    fn agent(&self, index: usize) -> (&Mcp, &str) {
        (
            &self.mcp[index % self.mcp.len()],
            self.cli.token[index % self.cli.token.len()].as_str(),
        )
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("agent-cycles: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if cli.agents == 0 {
        bail!("--agents must be at least 1");
    }
    let urls: Vec<String> = cli
        .url
        .iter()
        .map(|url| {
            if url.trim_end_matches('/').matches('/').count() <= 2 {
                format!("{}/mcp", url.trim_end_matches('/'))
            } else {
                url.clone()
            }
        })
        .collect();
    let connections = cli.agents.max(cli.start_concurrency).max(64);
    let mcp = urls
        .iter()
        .map(|url| Mcp::new(url, connections))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bench = Arc::new(Bench {
        mcp,
        request_ids: RequestIds::new(),
        cli,
    });
    let cli = &bench.cli;
    let load = match cli.rate {
        Some(rate) => format!("open loop at {rate} cycles/s"),
        None => format!("{} agents", cli.agents),
    };
    println!(
        "agent-cycles: {}, {load} ({} identities), {} s, process {}",
        urls.join(" "),
        cli.token.len(),
        cli.seconds,
        cli.process
    );

    let started = if cli.floor {
        println!("floor: every call is describe (no database work)");
        0
    } else {
        match prestart(&bench).await? {
            0 => bail!("no run could be started"),
            started => started,
        }
    };
    if let Some(url) = &cli.analyze {
        use sqlx::Connection as _;
        let mut connection = sqlx::PgConnection::connect(url)
            .await
            .context("cannot connect to --analyze's database")?;
        sqlx::query("ANALYZE")
            .execute(&mut connection)
            .await
            .context("ANALYZE failed")?;
        connection.close().await.ok();
        println!("analyzed the database");
    }

    let mut sources: Vec<CpuSource> = cli
        .cpu_pid
        .iter()
        .map(|(label, pid)| CpuSource::Pid(label.clone(), *pid))
        .collect();
    sources.extend(
        cli.cpu_named
            .iter()
            .map(|(label, name)| CpuSource::Named(label.clone(), name.clone())),
    );
    sources.push(CpuSource::Me("load".to_owned()));
    let cpu = CpuWindow::start(sources);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(cli.seconds);
    let memory = tokio::spawn(sample_memory(cli.memory_pid.clone(), deadline));
    let mut stats = match cli.rate {
        Some(rate) => open_loop(&bench, rate, deadline).await?,
        None => closed_loop(&bench, deadline).await?,
    };
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu.used();
    let memory = memory.await.context("the memory sampler panicked")?;
    report(&bench, &mut stats, started, elapsed, &cpu, &memory);
    Ok(if stats.error_count() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// `--agents` agents, each looping cycles until `deadline`.
async fn closed_loop(bench: &Arc<Bench>, deadline: Instant) -> anyhow::Result<Stats> {
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..bench.cli.agents {
        let bench = Arc::clone(bench);
        let seed = nanos_now() ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
        tasks.spawn(async move { agent(&bench, index, Rng(seed), deadline).await });
    }
    let mut stats = Stats::default();
    while let Some(result) = tasks.join_next().await {
        stats.merge(result.context("an agent task panicked")?);
    }
    Ok(stats)
}

/// Starts a cycle every `1 / rate` seconds until `deadline`, each on its own task; a
/// cycle's latency counts from when it was due.
async fn open_loop(bench: &Arc<Bench>, rate: f64, deadline: Instant) -> anyhow::Result<Stats> {
    if !(rate.is_finite() && rate > 0.0) {
        bail!("--rate must be a positive number");
    }
    let interval = Duration::from_secs_f64(1.0 / rate);
    let in_flight = Arc::new(tokio::sync::Semaphore::new(bench.cli.max_in_flight.max(1)));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut stats = Stats::default();
    for n in 0_u32.. {
        let due = start + interval * n;
        if due >= deadline {
            break;
        }
        tokio::time::sleep_until(due.into()).await;
        let permit = Arc::clone(&in_flight)
            .acquire_owned()
            .await
            .context("the semaphore closed")?;
        let bench = Arc::clone(bench);
        let seed = nanos_now() ^ u64::from(n).wrapping_mul(0x2545_F491_4F6C_DD1D);
        tasks.spawn(async move {
            let mut stats = Stats::default();
            let (mcp, token) = bench.agent(n as usize);
            // A lost claim is retried with a new listing: the cycle is one run completed.
            let mut rng = Rng(seed);
            for _ in 0..MAX_CLAIM_ATTEMPTS {
                match cycle(&bench, mcp, token, n as usize, &mut rng, &mut stats).await {
                    Cycle::Lost => continue,
                    Cycle::Done => {
                        stats.cycles += 1;
                        stats.cycle_us.push(micros_since(due));
                    }
                    Cycle::Failed | Cycle::RanOut => {}
                }
                break;
            }
            drop(permit);
            stats
        });
        // Fold finished cycles in as we go so memory stays flat on long runs.
        while let Some(result) = tasks.try_join_next() {
            stats.merge(result.context("a cycle task panicked")?);
        }
    }
    while let Some(result) = tasks.join_next().await {
        stats.merge(result.context("a cycle task panicked")?);
    }
    Ok(stats)
}

/// How often an open-loop cycle lists and claims again after losing a claim.
const MAX_CLAIM_ATTEMPTS: usize = 20;

/// The largest resident set of each process, sampled every 100 ms until `deadline`, in
/// KiB (a peak shorter than that can be missed; the process's own high-water mark is
/// not used, since it would count the pre-start too).
async fn sample_memory(pids: Vec<(String, u32)>, deadline: Instant) -> Vec<(String, u64)> {
    let mut peaks: Vec<(String, u64)> = pids.iter().map(|(label, _)| (label.clone(), 0)).collect();
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    while Instant::now() < deadline {
        ticks.tick().await;
        for ((_, pid), (_, peak)) in pids.iter().zip(peaks.iter_mut()) {
            if let Some(rss) = rss_kib(*pid) {
                *peak = (*peak).max(rss);
            }
        }
    }
    peaks
}

/// Starts `--runs` runs with `--start-concurrency` concurrent calls; returns how many started.
async fn prestart(bench: &Arc<Bench>) -> anyhow::Result<usize> {
    let cli = &bench.cli;
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cli.start_concurrency.clamp(1, cli.runs.max(1)) {
        let bench = Arc::clone(bench);
        let next = Arc::clone(&next);
        tasks.spawn(async move {
            let mut started = 0_usize;
            let mut failures = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= bench.cli.runs {
                    break;
                }
                let arguments = json!({
                    "process": bench.cli.process,
                    "inputs": { "ref": format!("bench-{n}") },
                    "requestId": bench.request_ids.next("start"),
                });
                match bench.mcp[n % bench.mcp.len()]
                    .call(&bench.cli.starter_token, "start_run", arguments)
                    .await
                {
                    Ok(Answer::Ok(_)) => started += 1,
                    Ok(Answer::Refused { code, message, issues }) => {
                        failures.push(format!("start_run refused: {code}: {message} {issues:?}"));
                    }
                    Err(error) => failures.push(format!("{error:#}")),
                }
                if failures.len() >= 3 {
                    break;
                }
            }
            (started, failures)
        });
    }
    let mut started = 0;
    let mut failures = Vec::new();
    while let Some(result) = tasks.join_next().await {
        let (count, errors) = result.context("a start task panicked")?;
        started += count;
        failures.extend(errors);
    }
    let seconds = start.elapsed().as_secs_f64();
    let rate = started as f64 / seconds.max(1e-9);
    println!(
        "pre-started {started} of {} runs in {seconds:.1} s ({rate:.0} start_run/s)",
        cli.runs
    );
    if !failures.is_empty() {
        for failure in failures.iter().take(5) {
            eprintln!("  start_run failed: {failure}");
        }
        bail!("{} start_run calls failed", failures.len());
    }
    Ok(started)
}

/// One agent: loops get_work → claim → submit until `deadline` or no work is left.
async fn agent(bench: &Bench, index: usize, mut rng: Rng, deadline: Instant) -> Stats {
    let (mcp, token) = bench.agent(index);
    let mut stats = Stats::default();
    while Instant::now() < deadline {
        let cycle_start = Instant::now();
        let ended = if bench.cli.floor {
            floor_cycle(mcp, token, &mut stats).await
        } else {
            cycle(bench, mcp, token, index, &mut rng, &mut stats).await
        };
        match ended {
            Cycle::Done => {
                stats.cycles += 1;
                stats.cycle_us.push(micros_since(cycle_start));
            }
            Cycle::RanOut => break,
            Cycle::Lost | Cycle::Failed => {}
        }
    }
    stats
}

/// How one try at a cycle ended.
enum Cycle {
    /// Submitted: a run completed.
    Done,
    /// Another agent claimed the step first.
    Lost,
    /// No work is left.
    RanOut,
    /// A call failed (counted in the stats).
    Failed,
}

/// get_work, claim one listed item at random, submit; each call timed into `stats`.
async fn cycle(bench: &Bench, mcp: &Mcp, token: &str, index: usize, rng: &mut Rng, stats: &mut Stats) -> Cycle {
    let cli = &bench.cli;
    let listing_start = Instant::now();
    let arguments = json!({ "limit": cli.limit, "process": cli.process });
    let answer = mcp.call(token, "get_work", arguments).await;
    stats.get_work_us.push(micros_since(listing_start));
    let Some(data) = settle(stats, "get_work", answer).await else {
        return Cycle::Failed;
    };
    let items = data["items"].as_array().map(Vec::as_slice).unwrap_or_default();
    if items.is_empty() {
        if data["nextCursor"].is_null() {
            // Claimed steps are not listed and nothing starts new runs: no work is left.
            stats.ran_out += 1;
            return Cycle::RanOut;
        }
        // Every listed step was claimed by another agent between the server's listing
        // and its reading of the runs: the page is empty, yet more work follows.
        stats.empty_pages += 1;
        return Cycle::Lost;
    }
    let item = &items[rng.below(items.len())];
    let target = &item["claim"]["arguments"];
    let (Some(run_id), Some(step_id)) = (target["runId"].as_str(), target["stepId"].as_str()) else {
        stats.error("get_work: malformed item".to_owned(), item.to_string());
        return Cycle::Failed;
    };

    let arguments = json!({ "runId": run_id, "stepId": step_id, "requestId": bench.request_ids.next("claim") });
    let claim_start = Instant::now();
    let answer = mcp.call(token, "claim", arguments).await;
    stats.claim_us.push(micros_since(claim_start));
    let answer = match answer {
        Ok(Answer::Refused { code, issues, .. }) if code == "conflict" => {
            stats.conflicts += 1;
            let issue = issues.first().cloned().unwrap_or_else(|| "(none)".to_owned());
            *stats.conflict_issues.entry(issue).or_default() += 1;
            return Cycle::Lost;
        }
        other => other,
    };
    let Some(claimed) = settle(stats, "claim", answer).await else {
        return Cycle::Failed;
    };
    let Some(claim_token) = claimed["token"].as_str() else {
        stats.error("claim: no token".to_owned(), claimed.to_string());
        return Cycle::Failed;
    };

    let arguments = json!({
        "token": claim_token,
        "output": { "result": "ok" },
        "summary": format!("Load test: agent {index} did the work."),
        "requestId": bench.request_ids.next("submit"),
    });
    let submit_start = Instant::now();
    let answer = mcp.call(token, "submit", arguments).await;
    stats.submit_us.push(micros_since(submit_start));
    match settle(stats, "submit", answer).await {
        Some(_) => Cycle::Done,
        None => Cycle::Failed,
    }
}

/// Three `describe` calls, timed into the three latency rows: the cost of a cycle's
/// calls without the database.
async fn floor_cycle(mcp: &Mcp, token: &str, stats: &mut Stats) -> Cycle {
    for call in 0..3 {
        let start = Instant::now();
        let answer = mcp.call(token, "describe", json!({})).await;
        let row = match call {
            0 => &mut stats.get_work_us,
            1 => &mut stats.claim_us,
            _ => &mut stats.submit_us,
        };
        row.push(micros_since(start));
        if settle(stats, "describe", answer).await.is_none() {
            return Cycle::Failed;
        }
    }
    Cycle::Done
}

/// The data of a successful call; otherwise counts the error (and pauses briefly after a
/// transport error so a failing server is not hammered) and gives `None`.
async fn settle(stats: &mut Stats, tool: &str, answer: anyhow::Result<Answer>) -> Option<Value> {
    match answer {
        Ok(Answer::Ok(data)) => Some(data),
        Ok(Answer::Refused { code, message, issues }) => {
            stats.error(format!("{tool}: {code}"), format!("{message} {issues:?}"));
            None
        }
        Err(error) => {
            stats.error(format!("{tool}: transport"), format!("{error:#}"));
            tokio::time::sleep(Duration::from_millis(50)).await;
            None
        }
    }
}

fn report(
    bench: &Bench,
    stats: &mut Stats,
    started: usize,
    elapsed: f64,
    cpu: &[(String, f64)],
    memory: &[(String, u64)],
) {
    let cli = &bench.cli;
    let rate = stats.cycles as f64 / elapsed.max(1e-9);
    let claims = stats.claim_us.len();
    let conflict_share = 100.0 * stats.conflicts as f64 / claims.max(1) as f64;
    let get_work = summarize(&mut stats.get_work_us);
    let claim = summarize(&mut stats.claim_us);
    let submit = summarize(&mut stats.submit_us);
    let cycle = summarize(&mut stats.cycle_us);

    println!();
    println!("cycles            {}", stats.cycles);
    println!("elapsed           {elapsed:.2} s");
    println!("cycles/s          {rate:.1}");
    let issues: Vec<String> = stats
        .conflict_issues
        .iter()
        .map(|(issue, count)| format!("{issue} {count}"))
        .collect();
    println!(
        "claim conflicts   {} ({conflict_share:.1}% of {} claims){}",
        stats.conflicts,
        claims,
        if issues.is_empty() {
            String::new()
        } else {
            format!(": {}", issues.join(", "))
        }
    );
    if stats.empty_pages > 0 {
        println!(
            "empty pages       {} (get_work gave no items but a nextCursor: its steps were claimed meanwhile)",
            stats.empty_pages
        );
    }
    if stats.errors.is_empty() {
        println!("other errors      none");
    } else {
        println!("other errors      {}", stats.error_count());
        for (kind, count) in &stats.errors {
            println!("  {kind}: {count}");
            for sample in stats.samples.get(kind).into_iter().flatten() {
                println!("    e.g. {sample}");
            }
        }
    }
    println!("latency (ms)        count      p50      p99      max");
    let line = |name: &str, summary: &Summary| {
        println!(
            "  {name:<12} {:>10} {:>8.2} {:>8.2} {:>8.2}",
            summary.count, summary.p50_ms, summary.p99_ms, summary.max_ms
        );
    };
    line("get_work", &get_work);
    line("claim", &claim);
    line("submit", &submit);
    line("cycle", &cycle);
    // CPU per cycle in milliseconds, and the share of one core it kept busy.
    let mut extra = String::new();
    if !cpu.is_empty() {
        println!("cpu                 seconds  cores  ms/cycle");
    }
    for (label, seconds) in cpu {
        let per_cycle = 1000.0 * seconds / (stats.cycles.max(1) as f64);
        println!(
            "  {label:<16} {seconds:>8.2} {:>6.2} {per_cycle:>9.3}",
            seconds / elapsed.max(1e-9)
        );
        extra.push_str(&format!(" cpu_{label}_ms_per_cycle={per_cycle:.3}"));
    }
    for (label, kib) in memory {
        println!("memory {label:<12} peak resident {:.1} MiB", *kib as f64 / 1024.0);
        extra.push_str(&format!(" rss_peak_{label}_kib={kib}"));
    }
    let ran_out = stats.ran_out > 0;
    if ran_out {
        println!(
            "WORK RAN OUT: {} listings found no work left before {} s ({started} runs pre-started); \
             the rate covers {elapsed:.1} s; pass a larger --runs",
            stats.ran_out, cli.seconds
        );
    } else {
        println!(
            "work ran out: no (work was still listed at the end; {} cycles, {started} runs pre-started)",
            stats.cycles
        );
    }
    println!(
        "RESULT agent_cycles_per_sec={rate:.1} p50_ms={:.2} p99_ms={:.2} get_work_p50_ms={:.2} \
         get_work_p99_ms={:.2} claim_p50_ms={:.2} claim_p99_ms={:.2} submit_p50_ms={:.2} submit_p99_ms={:.2} \
         cycles={} conflicts={} empty_pages={} errors={} ran_out={} agents={} seconds={elapsed:.2}{extra}",
        cycle.p50_ms,
        cycle.p99_ms,
        get_work.p50_ms,
        get_work.p99_ms,
        claim.p50_ms,
        claim.p99_ms,
        submit.p50_ms,
        submit.p99_ms,
        stats.cycles,
        stats.conflicts,
        stats.empty_pages,
        stats.error_count(),
        ran_out,
        cli.agents,
    );
}
