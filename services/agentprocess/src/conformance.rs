//! `agentprocess conformance`: the portable conformance runner, against any server.

use std::path::PathBuf;
use std::process::ExitCode;

use agentprocess_conformance::{Credentials, ExpectedFailures, Options};
use anyhow::Context as _;

/// Options of `agentprocess conformance`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "Examples:\n  \
    agentprocess dev --processes ../shared/agentprocess/conformance/fixtures --details dev.json\n  \
    agentprocess conformance --credentials dev.json\n  \
    agentprocess conformance --url https://mcp.example.com/mcp --credentials tokens.json \\\n      \
      --expected-failures known.yaml --junit conformance.xml --only 'errors/*'\n\n\
    Exit status: 0 when every case that ran passed (or failed as listed in --expected-failures),\n\
    1 when any did not or --only matched no case, 2 when the runner could not start (unreadable\n\
    files, no session).")]
pub(crate) struct Conformance {
    /// The server's MCP endpoint. Repeat it for several processes of one server: the
    /// sessions are spread over them. By default, the `url` in the credentials file.
    #[arg(long = "url", value_name = "URL")]
    urls: Vec<String>,
    /// JSON with the bearer tokens of two agents, two people (with their `person`
    /// values) and an operator: `{ "identities": { NAME: { "kind": "agent" | "person" |
    /// "operator", "token": "…", "person": "…" } } }`, the shape `agentprocess dev
    /// --details` writes. The two people should share a group the fixtures' roles are
    /// bound to.
    #[arg(long, value_name = "FILE")]
    credentials: PathBuf,
    /// The official core-2 JSON Schemas folder (holding index.json and tools/).
    #[arg(long, value_name = "DIR", default_value_os_t = agentprocess_contract::default_dir())]
    schemas: PathBuf,
    /// The conformance fixtures folder: one folder per process, each with a PROCESS.md.
    /// The runner walks those the server publishes as written.
    #[arg(long, value_name = "DIR", default_value_os_t = default_fixtures())]
    fixtures: PathBuf,
    /// A YAML list of `{ case, reason }` for cases known to fail on this server. A
    /// listed case that passes fails the run, so the list stays true.
    #[arg(long, value_name = "FILE")]
    expected_failures: Option<PathBuf>,
    /// Also write the report as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Run only the cases whose names contain this text, or match it with `*` as a
    /// wildcard (`walk/*`, `errors/stale*`).
    #[arg(long, value_name = "PATTERN")]
    only: Option<String>,
    /// An endpoint that moves the server's clock (`POST {"advanceSeconds": N}`), as an
    /// agentprocess server started with its test clock has at `/test/clock`. Repeat for
    /// every process. Without it, walks that must wait for a timer are skipped.
    #[arg(long = "test-clock", value_name = "URL")]
    clocks: Vec<String>,
}

fn default_fixtures() -> PathBuf {
    std::env::var_os("AGENTPROCESS_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agentprocess/conformance/fixtures"),
        PathBuf::from,
    )
}

pub(crate) fn run(options: Conformance) -> anyhow::Result<ExitCode> {
    let credentials = Credentials::read(&options.credentials).map_err(anyhow::Error::msg)?;
    let expected = match &options.expected_failures {
        Some(path) => ExpectedFailures::read(path).map_err(anyhow::Error::msg)?,
        None => ExpectedFailures::default(),
    };
    let mut urls = options.urls;
    if urls.is_empty() {
        urls.extend(credentials.url.clone());
    }
    anyhow::ensure!(!urls.is_empty(), "no --url given, and the credentials file names none");
    let runner = Options {
        urls,
        credentials,
        schemas: options.schemas,
        fixtures: options.fixtures,
        clocks: options.clocks,
        only: options.only.clone(),
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(agentprocess_conformance::run(&runner))?;
    print!("{}", report.text(&expected));
    if let Some(path) = &options.junit {
        std::fs::write(path, report.junit(&expected)).with_context(|| format!("cannot write {}", path.display()))?;
    }
    // A run that checked nothing did not pass: a mistyped pattern must not look green.
    if let (Some(pattern), true) = (&options.only, report.cases.is_empty()) {
        eprintln!("agentprocess conformance: no case matches --only {pattern:?}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(if report.succeeded(&expected) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
