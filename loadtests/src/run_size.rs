//! `run-size`: the cost of one agent cycle (`get_work`, `claim`, `submit`) against the
//! size of the run it writes to, from a kilobyte up to the cap (`runDataBytes`, 1 MiB
//! by default). Each run of `long-run` first takes notes of the size asked (one
//! submission, random text, so that PostgreSQL's compression cannot hide the size), then does twenty small steps, each a measured cycle. The server's CPU
//! per cycle is read from `/proc` when its pid is given; with the database's URL,
//! PostgreSQL's CPU per cycle (every `postgres` process) and the write-ahead log it
//! wrote per cycle, which is what a write changed on disk.
//!
//! It prints one row per size, and a RESULT line for scripts.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;
use serde_json::{Value, json};

use agentprocess_loadtests::client::{Mcp, data};
use agentprocess_loadtests::machine::{CpuSource, CpuWindow};
use agentprocess_loadtests::{RequestIds, Rng, micros_since, nanos_now, summarize};

/// Measures agent cycles against run size.
#[derive(Debug, Parser)]
#[command(name = "run-size", version)]
struct Cli {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: String,
    /// An agent's bearer token (it also starts the runs).
    #[arg(long)]
    agent_token: String,
    /// The size of the notes of each row, in bytes.
    #[arg(long, value_delimiter = ',', default_value = "1000,16000,64000,256000,1000000")]
    sizes: Vec<usize>,
    /// Runs per size (twenty measured cycles each).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The server's process id, to read its CPU time per cycle.
    #[arg(long)]
    server_pid: Option<u32>,
    /// The PostgreSQL database the server writes to (postgres://…), to read the
    /// write-ahead log and PostgreSQL's CPU per cycle. Nothing else should write to that
    /// PostgreSQL server meanwhile.
    #[arg(long)]
    database_url: Option<String>,
}

/// Where PostgreSQL's write-ahead log stands, in bytes.
async fn wal_position(connection: &mut sqlx::PgConnection) -> anyhow::Result<i64> {
    let (position,): (i64,) = sqlx::query_as("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint")
        .fetch_one(connection)
        .await?;
    Ok(position)
}

const PROCESS: &str = "long-run";
/// Room the rest of the run takes beside the notes: the inputs, twenty small outputs,
/// the step records. Notes of the cap's size are cut by this much.
const ROOM: usize = 24_000;
const CAP: usize = 1 << 20;

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("run-size: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let mcp = Mcp::new(&cli.url, 2)?;
    let request_ids = RequestIds::new();
    let mut rng = Rng(nanos_now());
    let token = cli.agent_token.as_str();
    let mut database = match &cli.database_url {
        Some(url) => Some(<sqlx::PgConnection as sqlx::Connection>::connect(url).await?),
        None => None,
    };
    let mut sources = Vec::new();
    if let Some(pid) = cli.server_pid {
        sources.push(CpuSource::Pid("server".to_owned(), pid));
    }
    if database.is_some() {
        sources.push(CpuSource::Named("postgres".to_owned(), "postgres".to_owned()));
    }
    println!(
        "notes bytes  run bytes  cycles  get_work p50  claim p50 / p99  submit p50 / p99  \
         server / PostgreSQL CPU ms/cycle  WAL bytes/cycle"
    );
    let mut result = String::from("RESULT");
    for &size in &cli.sizes {
        let notes = size.min(CAP - ROOM);
        let mut timings: [Vec<u64>; 3] = Default::default();
        let mut cpu_ms = vec![0.0; sources.len()];
        let mut wal_bytes = 0;
        let mut run_bytes = 0;
        for n in 0..cli.runs {
            let started = data(
                mcp.call(
                    token,
                    "start_run",
                    json!({
                        "process": PROCESS,
                        "inputs": { "ref": format!("size-{size}-{n}") },
                        "requestId": request_ids.next("start"),
                    }),
                )
                .await,
                "start_run",
            )?;
            let run_id = started["run"]["id"].as_str().context("start_run: run.id")?.to_owned();
            cycle(
                &mcp,
                token,
                &run_id,
                json!({ "notes": rng.text(notes) }),
                &request_ids,
                None,
            )
            .await?;
            let window = CpuWindow::start(sources.clone());
            let wal_before = match database.as_mut() {
                Some(connection) => Some(wal_position(connection).await?),
                None => None,
            };
            for _ in 0..20 {
                cycle(
                    &mcp,
                    token,
                    &run_id,
                    json!({ "result": "ok" }),
                    &request_ids,
                    Some(&mut timings),
                )
                .await?;
            }
            for (total, (_, used)) in cpu_ms.iter_mut().zip(window.used()) {
                *total += used * 1000.0;
            }
            if let (Some(before), Some(connection)) = (wal_before, database.as_mut()) {
                wal_bytes += wal_position(connection).await? - before;
            }
            let view = data(mcp.call(token, "get_run", json!({ "runId": run_id })).await, "get_run")?;
            run_bytes = serde_json::to_vec(&view)?.len();
        }
        let cycles = timings[0].len();
        let [get_work, claim, submit] = timings.map(|mut samples| summarize(&mut samples));
        let per_cycle = |label: &str| {
            sources
                .iter()
                .zip(&cpu_ms)
                .find(|(source, _)| matches!(source, CpuSource::Pid(name, _) | CpuSource::Named(name, _) if name == label))
                .map_or_else(|| "-".to_owned(), |(_, total)| format!("{:.3}", total / cycles as f64))
        };
        let (server_cpu, postgres_cpu) = (per_cycle("server"), per_cycle("postgres"));
        let wal = match database {
            Some(_) => format!("{}", wal_bytes / i64::try_from(cycles.max(1))?),
            None => "-".to_owned(),
        };
        println!(
            "{notes:>11} {run_bytes:>10} {cycles:>7} {:>13.2} {:>9.2} / {:<6.2} {:>10.2} / {:<6.2} {:>14} / {:<8} {wal:>15}",
            get_work.p50_ms, claim.p50_ms, claim.p99_ms, submit.p50_ms, submit.p99_ms, server_cpu, postgres_cpu
        );
        result.push_str(&format!(
            " bytes{run_bytes}_claim_p50={:.3} bytes{run_bytes}_submit_p50={:.3} bytes{run_bytes}_cpu_ms={server_cpu} \
             bytes{run_bytes}_postgres_cpu_ms={postgres_cpu} bytes{run_bytes}_wal_bytes={wal}",
            claim.p50_ms, submit.p50_ms
        ));
    }
    println!("{result}");
    Ok(())
}

/// One cycle on the run's ready step: get_work, claim, submit `output`; each call
/// timed into `timings` when given.
async fn cycle(
    mcp: &Mcp,
    token: &str,
    run_id: &str,
    output: Value,
    request_ids: &RequestIds,
    mut timings: Option<&mut [Vec<u64>; 3]>,
) -> anyhow::Result<()> {
    let mut time = |index: usize, started: Instant| {
        if let Some(timings) = timings.as_deref_mut() {
            timings[index].push(micros_since(started));
        }
    };
    let started = Instant::now();
    let listed = data(
        mcp.call(token, "get_work", json!({ "process": PROCESS, "limit": 20 }))
            .await,
        "get_work",
    )?;
    time(0, started);
    let items = listed["items"].as_array().context("get_work: items")?;
    let Some(item) = items.iter().find(|item| item["claim"]["arguments"]["runId"] == run_id) else {
        bail!("get_work lists no ready step of {run_id}");
    };
    let mut claim = item["claim"]["arguments"].clone();
    claim["requestId"] = json!(request_ids.next("claim"));
    let started = Instant::now();
    let claimed = data(mcp.call(token, "claim", claim).await, "claim")?;
    time(1, started);
    let submit = json!({
        "token": claimed["token"],
        "output": output,
        "evidence": [],
        "summary": "Measured.",
        "requestId": request_ids.next("submit"),
    });
    let started = Instant::now();
    data(mcp.call(token, "submit", submit).await, "submit")?;
    time(2, started);
    Ok(())
}
