//! `agentprocess`: the command line for process authors and operators.

mod admin;
mod agreement;
mod catalog;
mod conformance;
mod dev;
mod folders;
mod publish;
mod validate;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Work with Agent Process files (PROCESS.md, protocol core-2), run a dev server, and
/// administer a server's database.
///
/// A process is one PROCESS.md: YAML frontmatter between two `---` lines naming the
/// process, its inputs and its steps, then a plain-language body. `validate` and `hash`
/// check a file the way a process server does before it publishes it; `dev` runs the
/// whole server on this machine; `admin` sets up organizations, identities and
/// processes in a server's database.
#[derive(Debug, Parser)]
#[command(
    name = "agentprocess",
    version,
    propagate_version = true,
    after_long_help = "Examples:\n  \
        agentprocess validate processes/supplier-onboarding\n  \
        agentprocess validate --json processes/*/\n  \
        agentprocess validate --without check-1 PROCESS.md\n  \
        agentprocess hash processes/supplier-onboarding"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check PROCESS.md files against every publication rule.
    ///
    /// Each PATH is a PROCESS.md, a folder holding one, or a folder of such folders
    /// (as `dev --processes` takes); in a folder, the process `name` must equal the
    /// folder's name. Every issue in every file is printed as
    /// `FILE:LINE:COLUMN: PATH: MESSAGE`, with the closest known name for a misspelt
    /// step, input or field. Exits 0 when every file would publish, 1 when any is
    /// refused, 2 when a file or folder cannot be read.
    Validate {
        /// PROCESS.md files, folders holding one, or folders of process folders.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Print one JSON object instead of lines of text.
        #[arg(long)]
        json: bool,
        /// Validate as a server that does not offer this profile or optional tool
        /// (repeat for several). By default everything is offered.
        #[arg(long, value_enum, value_name = "CAPABILITY")]
        without: Vec<Capability>,
    },
    /// Print the content hash of a PROCESS.md (the file must validate).
    ///
    /// SHA-256 over the RFC 8785 canonical JSON of the parsed frontmatter, one
    /// newline, then the body exactly as written; lowercase hex. The same hash a
    /// server records when it publishes the file.
    Hash {
        /// A PROCESS.md or a folder holding one.
        #[arg(value_name = "PATH")]
        path: PathBuf,
    },
    /// Run the whole server on this machine: SQLite and files in a data directory,
    /// timers in process, a dev organization with two agents, two people and an
    /// operator (their tokens are printed), and the example processes published.
    ///
    /// The examples (the repository's examples/processes) are built into the binary,
    /// so this works the same from any directory; `--processes DIR` publishes your own
    /// processes instead. Every role of every process is bound to the group of the two
    /// people; the welcome text lists what was published.
    Dev(Box<dev::Dev>),
    /// Administer organizations, identities, tokens and processes in a database, as the
    /// platform's operator (for bootstrapping, and what only the platform grants;
    /// everything else goes through the REST surface). Each command is the operation
    /// the REST surface calls, with its checks, and every change is in the
    /// organization's audit log under the actor `agentprocess-admin`.
    Admin(admin::AdminArgs),
    /// Import a process folder on a server, bind its roles and publish it, through the
    /// REST surface with an admin API token: prints the version and its content hash,
    /// or every issue (with line and column).
    ///
    /// Example: `agentprocess publish processes/purchase-order --bind approver=finance
    /// --url https://process.example.com --token "$AGENTPROCESS_TOKEN"`
    Publish(publish::Publish),
    /// Test any Agent Process server over MCP against the protocol (core-2).
    ///
    /// Publishes nothing: reads describe and the catalog, walks every conformance
    /// fixture the server publishes along every route, provokes every error code,
    /// replays and races writes, and validates every result against the official JSON
    /// Schemas. Prints one line per case and `conformance: P passed, F failed, S
    /// skipped`. What each case checks: docs/conformance.md.
    Conformance(conformance::Conformance),
}

/// A profile or optional tool that a server may leave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Capability {
    /// The parallel-1 profile (`parallel:` steps).
    #[value(name = "parallel-1")]
    Parallel,
    /// The check-1 profile (`check:` on agent and task steps).
    #[value(name = "check-1")]
    Check,
    /// The upload tool (needed by `evidence: [file]`).
    #[value(name = "upload")]
    Upload,
    /// The send_event tool (needed by `wait_for`).
    #[value(name = "send_event")]
    SendEvent,
}

// glibc's allocator spends a large share of a busy server's time; mimalloc does not.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Validate { paths, json, without } => validate::run(&paths, json, &without),
        Command::Hash { path } => validate::hash(&path),
        Command::Dev(options) => dev::run(*options).map(|()| ExitCode::SUCCESS),
        Command::Admin(options) => admin::run(options).map(|()| ExitCode::SUCCESS),
        Command::Conformance(options) => conformance::run(options),
        Command::Publish(options) => publish::run(options),
    };
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("agentprocess: {error:#}");
            ExitCode::from(2)
        }
    }
}
