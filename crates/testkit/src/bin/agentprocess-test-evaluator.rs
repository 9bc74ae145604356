//! `agentprocess-test-evaluator`: the test-double evaluator on its own, for the
//! end-to-end tests. Not a model: it answers by the fixed rules of
//! `agentprocess_testkit::evaluator` and prints its base URL on the first line.

use std::net::SocketAddr;

/// The test-double evaluator (OpenAI-compatible chat completions with logprobs,
/// answering by fixed rules on the submission's summary). Prints its base URL.
#[derive(clap::Parser)]
struct Cli {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Answer without logprobs, as a provider that cannot give them.
    #[arg(long)]
    no_logprobs: bool,
    /// Answer every question as `pass`, `fail` or `unsure`, whatever the submission says.
    #[arg(long)]
    always: Option<agentprocess_testkit::evaluator::Mode>,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cli = <Cli as clap::Parser>::parse();
    agentprocess_testkit::evaluator::serve(cli.listen, !cli.no_logprobs, cli.always).await
}
