//! `run-size`: the cost of one agent cycle (`get_work`, `claim`, `submit`) against the
//! size of the run it writes to, from a kilobyte up to the cap (`runDataBytes`, 1 MiB
//! by default). Each run of `long-run` first takes notes of the size asked (one
//! submission), then does twenty small steps, each a measured cycle; the server's CPU
//! per cycle is read from `/proc` when its pid is given.
//!
//! It prints one row per size, and a RESULT line for scripts.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;
use serde_json::{Value, json};

use agentprocess_loadtests::client::{Mcp, data};
use agentprocess_loadtests::machine::cpu_seconds;
use agentprocess_loadtests::{micros_since, summarize};

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
    let tag = jiff::Timestamp::now().as_millisecond();
    let mut request = 0_u64;
    let mut request_id = move |what: &str| {
        request += 1;
        format!("{what}-{tag}-{request}")
    };
    let token = cli.agent_token.as_str();
    println!("notes bytes  run bytes  cycles  get_work p50  claim p50 / p99  submit p50 / p99  server CPU ms/cycle");
    let mut result = String::from("RESULT");
    for &size in &cli.sizes {
        let notes = size.min(CAP - ROOM);
        let mut timings: [Vec<u64>; 3] = Default::default();
        let mut cpu_ms = 0.0;
        let mut run_bytes = 0;
        for n in 0..cli.runs {
            let started = data(
                mcp.call(
                    token,
                    "start_run",
                    json!({
                        "process": PROCESS,
                        "inputs": { "ref": format!("size-{size}-{n}") },
                        "requestId": request_id("start"),
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
                json!({ "notes": "n".repeat(notes) }),
                &mut request_id,
                None,
            )
            .await?;
            let cpu_before = cli.server_pid.and_then(cpu_seconds);
            for _ in 0..20 {
                cycle(
                    &mcp,
                    token,
                    &run_id,
                    json!({ "result": "ok" }),
                    &mut request_id,
                    Some(&mut timings),
                )
                .await?;
            }
            if let (Some(before), Some(after)) = (cpu_before, cli.server_pid.and_then(cpu_seconds)) {
                cpu_ms += (after - before) * 1000.0;
            }
            let view = data(mcp.call(token, "get_run", json!({ "runId": run_id })).await, "get_run")?;
            run_bytes = serde_json::to_vec(&view)?.len();
        }
        let cycles = timings[0].len();
        let [get_work, claim, submit] = timings.map(|mut samples| summarize(&mut samples));
        let per_cycle = if cli.server_pid.is_some() {
            format!("{:.3}", cpu_ms / cycles as f64)
        } else {
            "-".into()
        };
        println!(
            "{notes:>11} {run_bytes:>10} {cycles:>7} {:>13.2} {:>9.2} / {:<6.2} {:>10.2} / {:<6.2} {per_cycle:>10}",
            get_work.p50_ms, claim.p50_ms, claim.p99_ms, submit.p50_ms, submit.p99_ms
        );
        result.push_str(&format!(
            " bytes{run_bytes}_claim_p50={:.3} bytes{run_bytes}_submit_p50={:.3} bytes{run_bytes}_cpu_ms={per_cycle}",
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
    request_id: &mut impl FnMut(&str) -> String,
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
    claim["requestId"] = json!(request_id("claim"));
    let started = Instant::now();
    let claimed = data(mcp.call(token, "claim", claim).await, "claim")?;
    time(1, started);
    let submit = json!({
        "token": claimed["token"],
        "output": output,
        "evidence": [],
        "summary": "Measured.",
        "requestId": request_id("submit"),
    });
    let started = Instant::now();
    data(mcp.call(token, "submit", submit).await, "submit")?;
    time(2, started);
    Ok(())
}
