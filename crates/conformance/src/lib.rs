#![doc = include_str!("../README.md")]

mod aim;
mod cases;
mod credentials;
mod fixtures;
mod report;
mod sample;
mod session;
mod verdict;
mod walk;

use std::path::PathBuf;
use std::sync::Arc;

pub use credentials::Credentials;
pub use report::{Case, ExpectedFailures, Outcome, Report};

/// What one run of the runner needs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The server's MCP endpoints; sessions are spread over them in turn.
    pub urls: Vec<String>,
    /// Tokens of two agents, two people and an operator.
    pub credentials: Credentials,
    /// The official `core-2` schemas folder.
    pub schemas: PathBuf,
    /// The conformance fixtures folder (one folder per process).
    pub fixtures: PathBuf,
    /// Endpoints that move the server's clock (`POST {advanceSeconds}`), if it has any.
    pub clocks: Vec<String>,
    /// Run only the cases whose names match this pattern (`*` matches any text).
    pub only: Option<String>,
}

/// What stops the runner before any case runs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The schemas could not be loaded.
    #[error(transparent)]
    Contract(#[from] agentprocess_contract::Error),
    /// The fixtures could not be read.
    #[error("{0}")]
    Fixtures(String),
    /// A session could not be opened.
    #[error("cannot open an MCP session for {identity} at {url}: {problem}")]
    Connect {
        /// Whose session.
        identity: String,
        /// Where.
        url: String,
        /// Why.
        problem: String,
    },
}

/// Runs every case against the server and returns the report.
pub async fn run(options: &Options) -> Result<Report, Error> {
    let contract = Arc::new(agentprocess_contract::Contract::load(&options.schemas)?);
    let fixtures = fixtures::load(&options.fixtures).map_err(Error::Fixtures)?;
    let context = session::Context::open(options, Arc::clone(&contract)).await?;
    let mut report = Report::default();
    cases::all(&context, &fixtures, options.only.as_deref(), &mut report).await;
    context.close().await;
    Ok(report)
}
