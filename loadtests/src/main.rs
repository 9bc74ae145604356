//! `agent-cycles`: how many agent cycles (get_work → claim → submit) per second one
//! agentprocess API server sustains with N concurrent agents.
//!
//! Before timing starts it starts `--runs` runs of a one-step process (see
//! `loadtests/processes/one-step`) with `start_run`, concurrently. Then N agent tasks
//! loop for `--seconds`: `get_work` (limit 20), pick one item at random, `claim` it
//! (a conflict with another agent is counted and the agent loops), `submit` an output.
//! Each successful submit is one cycle. At the end it prints the rate, the claim
//! conflicts, p50/p99 latencies of each call and of a whole cycle, and one
//! machine-readable `RESULT …` line.

mod client;
mod stats;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use clap::Parser;
use serde_json::{Value, json};

use crate::client::{Answer, Mcp};
use agentprocess_loadtests::{Summary, summarize};

use crate::stats::{Stats, micros_since};

/// Measures agent cycles per second (get_work → claim → submit) against an
/// agentprocess API server.
///
/// Pre-starts --runs runs of --process with the starter's token (concurrently, before
/// timing), then runs --agents agent tasks for --seconds. Each task loops: get_work
/// (limit --limit, filtered to --process), pick an item at random, claim it (a
/// conflict is counted and the task loops), submit {result: "ok"} with a summary. A
/// task stops at the deadline or when get_work finds no work left.
///
/// Prints cycles, cycles/s, claim conflicts, other errors (with examples), p50/p99/max
/// latency of each call and of a whole cycle, and a final `RESULT key=value …` line.
/// Exits 2 when any call failed other than by a claim conflict.
#[derive(Debug, Parser)]
#[command(name = "agent-cycles", version)]
struct Cli {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp ("/mcp" is added when the URL has no path).
    #[arg(long)]
    url: String,
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
}

/// What every task shares.
struct Bench {
    mcp: Mcp,
    cli: Cli,
    /// Makes request ids unique across invocations of this program.
    tag: String,
    next_request: AtomicU64,
}

impl Bench {
    /// A new requestId.
    fn request_id(&self, kind: &str) -> String {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        format!("lt-{}-{kind}-{n}", self.tag)
    }
}

/// splitmix64: enough randomness to spread agents over the listed items.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // n is at most the page size; the modulo bias is irrelevant here.
        usize::try_from(z % u64::try_from(n).unwrap_or(1)).unwrap_or(0)
    }
}

fn nanos_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(0))
        .unwrap_or(0)
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
    let url = if cli.url.trim_end_matches('/').matches('/').count() <= 2 {
        format!("{}/mcp", cli.url.trim_end_matches('/'))
    } else {
        cli.url.clone()
    };
    let bench = Arc::new(Bench {
        mcp: Mcp::new(&url, cli.agents.max(cli.start_concurrency))?,
        tag: format!("{}-{:x}", std::process::id(), nanos_now()),
        next_request: AtomicU64::new(0),
        cli,
    });
    let cli = &bench.cli;
    println!(
        "agent-cycles: {url}, {} agents ({} identities), {} s, process {}",
        cli.agents,
        cli.token.len(),
        cli.seconds,
        cli.process
    );

    let started = prestart(&bench).await?;
    if started == 0 {
        bail!("no run could be started");
    }

    let start = Instant::now();
    let deadline = start + Duration::from_secs(cli.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..cli.agents {
        let bench = Arc::clone(&bench);
        let seed = nanos_now() ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
        tasks.spawn(async move { agent(&bench, index, Rng(seed), deadline).await });
    }
    let mut stats = Stats::default();
    while let Some(result) = tasks.join_next().await {
        stats.merge(result.context("an agent task panicked")?);
    }
    let elapsed = start.elapsed().as_secs_f64();
    report(&bench, &mut stats, started, elapsed);
    Ok(if stats.error_count() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
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
                    "requestId": bench.request_id("start"),
                });
                match bench.mcp.call(&bench.cli.starter_token, "start_run", arguments).await {
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
    let cli = &bench.cli;
    let token = cli.token[index % cli.token.len()].as_str();
    let mut stats = Stats::default();
    while Instant::now() < deadline {
        let cycle_start = Instant::now();
        let arguments = json!({ "limit": cli.limit, "process": cli.process });
        let answer = bench.mcp.call(token, "get_work", arguments).await;
        stats.get_work_us.push(micros_since(cycle_start));
        let Some(data) = settle(&mut stats, "get_work", answer).await else {
            continue;
        };
        let items = data["items"].as_array().map(Vec::as_slice).unwrap_or_default();
        if items.is_empty() {
            if data["nextCursor"].is_null() {
                // Claimed steps are not listed and nothing starts new runs: no work is left.
                stats.ran_out += 1;
                break;
            }
            // Every listed step was claimed by another agent between the server's listing
            // and its reading of the runs: the page is empty, yet more work follows.
            stats.empty_pages += 1;
            continue;
        }
        let item = &items[rng.below(items.len())];
        let target = &item["claim"]["arguments"];
        let (Some(run_id), Some(step_id)) = (target["runId"].as_str(), target["stepId"].as_str()) else {
            stats.error("get_work: malformed item".to_owned(), item.to_string());
            continue;
        };

        let arguments = json!({ "runId": run_id, "stepId": step_id, "requestId": bench.request_id("claim") });
        let claim_start = Instant::now();
        let answer = bench.mcp.call(token, "claim", arguments).await;
        stats.claim_us.push(micros_since(claim_start));
        let answer = match answer {
            Ok(Answer::Refused { code, issues, .. }) if code == "conflict" => {
                stats.conflicts += 1;
                let issue = issues.first().cloned().unwrap_or_else(|| "(none)".to_owned());
                *stats.conflict_issues.entry(issue).or_default() += 1;
                continue;
            }
            other => other,
        };
        let Some(claimed) = settle(&mut stats, "claim", answer).await else {
            continue;
        };
        let Some(claim_token) = claimed["token"].as_str() else {
            stats.error("claim: no token".to_owned(), claimed.to_string());
            continue;
        };

        let arguments = json!({
            "token": claim_token,
            "output": { "result": "ok" },
            "summary": format!("Load test: agent {index} did the work."),
            "requestId": bench.request_id("submit"),
        });
        let submit_start = Instant::now();
        let answer = bench.mcp.call(token, "submit", arguments).await;
        stats.submit_us.push(micros_since(submit_start));
        if settle(&mut stats, "submit", answer).await.is_some() {
            stats.cycles += 1;
            stats.cycle_us.push(micros_since(cycle_start));
        }
    }
    stats
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

fn report(bench: &Bench, stats: &mut Stats, started: usize, elapsed: f64) {
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
    let ran_out = stats.ran_out > 0;
    if ran_out {
        println!(
            "WORK RAN OUT: {} of {} agents found no work left before {} s ({started} runs pre-started); \
             the rate covers {elapsed:.1} s; pass a larger --runs",
            stats.ran_out, cli.agents, cli.seconds
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
         cycles={} conflicts={} empty_pages={} errors={} ran_out={} agents={} seconds={elapsed:.2}",
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
