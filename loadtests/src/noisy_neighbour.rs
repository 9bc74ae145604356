//! `noisy-neighbour`: how one organization's latency holds while another floods the
//! same server. The quiet organization runs the agent loop at a steady pace (a cycle
//! is `start_run`, `claim` and `submit` of `one-step`); its call latencies are taken
//! alone, then while the flooding organization runs the same loop from many tasks as
//! fast as the server lets it. A flooding task told `retry` waits `--backoff-ms`
//! before its next call, as a client that honours the answer but keeps pushing.
//!
//! Prints the quiet organization's p50 and p99 alone and under the flood, their ratio
//! (the target: at most 1.5), and what the flood got done and was refused.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use agentprocess_loadtests::client::{Answer, Mcp};
use agentprocess_loadtests::{RequestIds, Summary, micros_since, summarize};

/// Measures one organization's latency while another floods the server.
#[derive(Debug, Parser)]
#[command(name = "noisy-neighbour", version)]
struct Cli {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: String,
    /// The quiet organization's person who starts runs.
    #[arg(long)]
    quiet_starter: String,
    /// The quiet organization's agent.
    #[arg(long)]
    quiet_agent: String,
    /// The flooding organization's person who starts runs.
    #[arg(long)]
    flood_starter: String,
    /// The flooding organization's agents (comma-separated tokens).
    #[arg(long, value_delimiter = ',')]
    flood_agents: Vec<String>,
    /// The quiet organization's cycles per second.
    #[arg(long, default_value_t = 20)]
    quiet_rate: u32,
    /// Concurrent tasks of the flooding organization.
    #[arg(long, default_value_t = 64)]
    flood_tasks: usize,
    /// How long a flooding task waits after `retry`.
    #[arg(long, default_value_t = 100)]
    backoff_ms: u64,
    /// Seconds of each phase (alone, then under the flood).
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    /// A label for the RESULT line.
    #[arg(long, default_value = "run")]
    label: String,
}

/// What a loop measured.
#[derive(Debug, Default)]
struct Tally {
    call_us: Vec<u64>,
    cycles: u64,
    /// Refusals and failures, by `tool: code` (with the limit named, for `retry`).
    refused: BTreeMap<String, u64>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.call_us.extend(other.call_us);
        self.cycles += other.cycles;
        for (kind, count) in other.refused {
            *self.refused.entry(kind).or_default() += count;
        }
    }
}

/// The call's data, or `None` when it was refused or failed (counted in `tally`).
async fn call(mcp: &Mcp, token: &str, tool: &str, arguments: Value, tally: &mut Tally) -> Option<Value> {
    let sent = Instant::now();
    let answer = mcp.call(token, tool, arguments).await;
    tally.call_us.push(micros_since(sent));
    let outcome = match answer {
        Ok(Answer::Ok(data)) => return Some(data),
        Ok(Answer::Refused { code, issues, .. }) => {
            let limit = issues
                .first()
                .and_then(|issue| issue.split(':').next())
                .filter(|_| code == "retry")
                .map(|limit| format!(" ({limit})"))
                .unwrap_or_default();
            format!("{tool}: {code}{limit}")
        }
        Err(error) => format!("{tool}: {}", error.root_cause()),
    };
    *tally.refused.entry(outcome).or_default() += 1;
    None
}

/// One cycle: start a run, claim its step, submit. Returns whether it completed.
async fn cycle(mcp: &Mcp, ids: &RequestIds, starter: &str, agent: &str, tally: &mut Tally) -> bool {
    let start = json!({ "process": "one-step", "inputs": { "ref": "noisy" }, "requestId": ids.next("start") });
    let Some(view) = call(mcp, starter, "start_run", start, tally).await else {
        return false;
    };
    let Some(run) = view["run"]["id"].as_str().map(str::to_owned) else {
        return false;
    };
    let claim = json!({ "runId": run, "stepId": "work", "requestId": ids.next("claim") });
    let Some(claimed) = call(mcp, agent, "claim", claim, tally).await else {
        return false;
    };
    let Some(token) = claimed["token"].as_str().map(str::to_owned) else {
        return false;
    };
    let submit = json!({ "token": token, "output": { "result": "ok" }, "summary": "Done.",
                         "requestId": ids.next("submit") });
    let done = call(mcp, agent, "submit", submit, tally).await.is_some();
    tally.cycles += u64::from(done);
    done
}

/// The quiet organization's loop: a cycle due every 1/rate s, for `seconds`.
async fn quiet(mcp: Arc<Mcp>, ids: Arc<RequestIds>, cli: Arc<Cli>) -> Tally {
    let mut tally = Tally::default();
    let every = Duration::from_secs_f64(1.0 / f64::from(cli.quiet_rate.max(1)));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let until = Instant::now() + Duration::from_secs(cli.seconds);
    while Instant::now() < until {
        ticks.tick().await;
        cycle(&mcp, &ids, &cli.quiet_starter, &cli.quiet_agent, &mut tally).await;
    }
    tally
}

/// One flooding task: cycles back to back until stopped, waiting after `retry`.
async fn flood(mcp: Arc<Mcp>, ids: Arc<RequestIds>, cli: Arc<Cli>, agent: String, stop: CancellationToken) -> Tally {
    let mut tally = Tally::default();
    while !stop.is_cancelled() {
        let refused_before: u64 = tally.refused.values().sum();
        cycle(&mcp, &ids, &cli.flood_starter, &agent, &mut tally).await;
        if tally.refused.values().sum::<u64>() > refused_before {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(cli.backoff_ms)) => {}
                () = stop.cancelled() => {}
            }
        }
    }
    tally
}

fn line(name: &str, summary: Summary) -> String {
    format!(
        "{name}: {} calls, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        summary.count, summary.p50_ms, summary.p99_ms, summary.max_ms
    )
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let cli = Arc::new(Cli::parse());
    anyhow::ensure!(!cli.flood_agents.is_empty(), "--flood-agents: give at least one token");
    let mcp = Arc::new(Mcp::new(&cli.url, cli.flood_tasks + 8)?);
    let ids = Arc::new(RequestIds::new());

    let mut alone = quiet(Arc::clone(&mcp), Arc::clone(&ids), Arc::clone(&cli)).await;

    let stop = CancellationToken::new();
    let flooding: Vec<_> = (0..cli.flood_tasks)
        .map(|index| {
            let agent = cli.flood_agents[index % cli.flood_agents.len()].clone();
            tokio::spawn(flood(
                Arc::clone(&mcp),
                Arc::clone(&ids),
                Arc::clone(&cli),
                agent,
                stop.clone(),
            ))
        })
        .collect();
    // The flood at full pressure before the quiet organization is measured again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let flood_started = Instant::now();
    let mut flooded = quiet(Arc::clone(&mcp), Arc::clone(&ids), Arc::clone(&cli)).await;
    let flood_seconds = flood_started.elapsed().as_secs_f64();
    stop.cancel();
    let mut flood_tally = Tally::default();
    for task in flooding {
        flood_tally.merge(task.await?);
    }

    let alone_summary = summarize(&mut alone.call_us);
    let flooded_summary = summarize(&mut flooded.call_us);
    let flood_summary = summarize(&mut flood_tally.call_us);
    let ratio = |flooded: f64, alone: f64| if alone > 0.0 { flooded / alone } else { f64::NAN };
    let (p50_ratio, p99_ratio) = (
        ratio(flooded_summary.p50_ms, alone_summary.p50_ms),
        ratio(flooded_summary.p99_ms, alone_summary.p99_ms),
    );
    println!("== {}", cli.label);
    println!("{}", line("quiet organization alone", alone_summary));
    println!("{}", line("quiet organization under the flood", flooded_summary));
    println!("ratio under the flood / alone: p50 {p50_ratio:.2}, p99 {p99_ratio:.2} (target <= 1.5)");
    println!(
        "quiet cycles: {} alone, {} under the flood; refused or failed: {:?}",
        alone.cycles,
        flooded.cycles,
        flooded.refused.iter().chain(&alone.refused).collect::<Vec<_>>()
    );
    println!(
        "flood: {} tasks, {:.1} cycles/s, {}; refused: {:?}",
        cli.flood_tasks,
        flood_tally.cycles as f64 / flood_seconds.max(0.001),
        line("its calls", flood_summary),
        flood_tally.refused
    );
    println!(
        "RESULT label={} quiet_p50_ms={:.2} quiet_p99_ms={:.2} flooded_p50_ms={:.2} flooded_p99_ms={:.2} \
         p50_ratio={p50_ratio:.2} p99_ratio={p99_ratio:.2} flood_cycles_per_s={:.1}",
        cli.label,
        alone_summary.p50_ms,
        alone_summary.p99_ms,
        flooded_summary.p50_ms,
        flooded_summary.p99_ms,
        flood_tally.cycles as f64 / flood_seconds.max(0.001),
    );
    let quiet_failed = alone.refused.values().sum::<u64>() + flooded.refused.values().sum::<u64>();
    Ok(if quiet_failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
