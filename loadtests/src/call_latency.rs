//! `call-latency`: the latency of single calls, one at a time, against whatever the
//! database holds: an agent's `get_work` (filtered by process and not), a person's
//! `get_work`, `list_runs` with an input filter, and `claim` and `submit` of a ready
//! step. `loadtests/run-flat-with-size` runs it with a thousand ready steps and runs,
//! then with a million spread over a thousand organizations, then with a million in
//! one, to see whether each call stays flat with size.
//!
//! With `--start N` it first starts N runs of `one-step` and N of `one-approval`
//! (inputs `ref: flat-<i>`). Each `claim` sample takes a ready step for good (it is
//! submitted), so give it enough of them for `--claims`.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Parser;
use serde_json::{Value, json};

use agentprocess_loadtests::client::{Mcp, data};
use agentprocess_loadtests::{RequestIds, micros_since, summarize};

/// Measures single calls one at a time.
#[derive(Debug, Parser)]
#[command(name = "call-latency", version)]
struct Cli {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: String,
    /// An agent's bearer token.
    #[arg(long)]
    agent_token: String,
    /// A person's bearer token: starts the runs and lists the approvals assigned to them.
    #[arg(long)]
    person_token: String,
    /// Runs of each process to start first.
    #[arg(long, default_value_t = 0)]
    start: usize,
    /// Samples of each read (the get_work lists and list_runs).
    #[arg(long, default_value_t = 1000)]
    samples: usize,
    /// Samples of claim and submit (each takes a ready step for good), at most
    /// --samples.
    #[arg(long, default_value_t = 200)]
    claims: usize,
    /// `list_runs` asks for `ref` values `flat-0` … `flat-<refs - 1>` in turn (the
    /// runs an earlier `--start refs` made).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    refs: u64,
    /// A label for the RESULT line (the layout measured).
    #[arg(long, default_value = "run")]
    label: String,
}

/// The calls measured, in the order they are printed.
const CALLS: [&str; 6] = [
    "get_work agent by process",
    "get_work agent",
    "get_work person",
    "list_runs by input",
    "claim",
    "submit",
];

#[tokio::main]
async fn main() -> ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("call-latency: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let mcp = Mcp::new(&cli.url, 2)?;
    let request_ids = RequestIds::new();
    for n in 0..cli.start {
        for process in ["one-step", "one-approval"] {
            let arguments = json!({
                "process": process,
                "inputs": { "ref": format!("flat-{n}") },
                "requestId": request_ids.next("start"),
            });
            data(mcp.call(&cli.person_token, "start_run", arguments).await, "start_run")?;
        }
    }

    let mut samples: Vec<Vec<u64>> = vec![Vec::with_capacity(cli.samples); CALLS.len()];
    for n in 0..cli.samples {
        let reads = [
            (
                &cli.agent_token,
                "get_work",
                json!({ "limit": 20, "process": "one-step" }),
            ),
            (&cli.agent_token, "get_work", json!({ "limit": 20 })),
            (&cli.person_token, "get_work", json!({ "limit": 20 })),
            (
                &cli.person_token,
                "list_runs",
                json!({ "process": "one-step", "inputs": { "ref": format!("flat-{}", n as u64 % cli.refs) } }),
            ),
        ];
        let mut listed = Value::Null;
        for (index, (token, tool, arguments)) in reads.into_iter().enumerate() {
            let started = Instant::now();
            let answer = data(mcp.call(token, tool, arguments).await, tool)?;
            samples[index].push(micros_since(started));
            if index == 0 {
                listed = answer;
            }
        }
        if n >= cli.claims {
            continue;
        }
        let Some(item) = listed["items"].get(0) else {
            bail!("no ready one-step step left after {n} samples: start more runs");
        };
        let mut claim = item["claim"]["arguments"].clone();
        claim["requestId"] = json!(request_ids.next("claim"));
        let started = Instant::now();
        let claimed = data(mcp.call(&cli.agent_token, "claim", claim).await, "claim")?;
        samples[4].push(micros_since(started));
        let submit = json!({
            "token": claimed["token"],
            "output": { "result": "ok" },
            "evidence": [],
            "summary": "Measured.",
            "requestId": request_ids.next("submit"),
        });
        let started = Instant::now();
        data(mcp.call(&cli.agent_token, "submit", submit).await, "submit")?;
        samples[5].push(micros_since(started));
    }

    println!("call                          n     p50 ms   p99 ms   max ms");
    let mut result = format!("RESULT layout={}", cli.label);
    for (name, mut measured) in CALLS.into_iter().zip(samples) {
        let summary = summarize(&mut measured);
        println!(
            "{name:<26} {:>5} {:>9.2} {:>8.2} {:>8.2}",
            summary.count, summary.p50_ms, summary.p99_ms, summary.max_ms
        );
        let key = name.replace(' ', "_");
        result.push_str(&format!(
            " {key}_p50={:.3} {key}_p99={:.3}",
            summary.p50_ms, summary.p99_ms
        ));
    }
    println!("{result}");
    Ok(())
}
