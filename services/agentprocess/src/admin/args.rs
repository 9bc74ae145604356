//! The options and subcommands of `agentprocess admin`, as clap reads them.

use std::path::PathBuf;

use agentprocess_app::flags::SealArgs;
use agentprocess_store::Role;
use clap::{Subcommand, ValueEnum};

/// Options of `agentprocess admin`.
#[derive(Debug, clap::Args)]
pub(crate) struct AdminArgs {
    /// postgres://… or sqlite://path?mode=rwc
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    pub(super) database_url: String,
    /// The API processes of this database run a check-1 evaluator (--evaluator-url):
    /// processes with `check:` may be imported and published. Without it they are
    /// refused, as those servers would refuse them.
    #[arg(long)]
    pub(super) with_check: bool,
    #[command(subcommand)]
    pub(super) action: Action,
}

#[derive(Debug, Subcommand)]
pub(super) enum Action {
    /// Apply database migrations.
    Migrate,
    #[command(flatten)]
    Call(Call),
}

/// The subcommands that are each one of the organization's operations.
#[derive(Debug, Subcommand)]
pub(super) enum Call {
    /// Set an organization's OpenID provider (discovery must succeed), so its people can
    /// sign in; for bootstrapping when sign-up is closed.
    SetProvider {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The provider's issuer URL.
        #[arg(long)]
        issuer: String,
        /// The client id registered there.
        #[arg(long)]
        client_id: String,
        /// The client secret (from the environment, so it stays out of shell history);
        /// absent for a public client.
        #[arg(long, env = "AGENTPROCESS_IDP_CLIENT_SECRET", hide_env_values = true)]
        client_secret: Option<String>,
        /// The API processes' key, which seals the client secret (--secret-key is
        /// required).
        #[command(flatten)]
        seal: SealArgs,
        /// Allow an issuer on a private address or plain http (development only).
        #[arg(long)]
        allow_private_issuers: bool,
    },
    /// Create an organization.
    CreateOrg {
        /// Its id (a-z, 0-9, '_', '-', '.').
        id: String,
        /// A display name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Create a group (refused when it exists).
    CreateGroup {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The group's id.
        id: String,
    },
    /// Create an agent, person or operator.
    CreateIdentity {
        /// The organization.
        #[arg(long)]
        org: String,
        /// What it is.
        #[arg(long, value_enum)]
        kind: Kind,
        /// Its id.
        id: String,
        /// A display name (the id by default).
        #[arg(long)]
        name: Option<String>,
        /// For people and operators: their email.
        #[arg(long)]
        person: Option<String>,
        /// Groups to join (repeat for several; created when missing).
        #[arg(long = "group")]
        groups: Vec<String>,
    },
    /// Make an OAuth client for an agent, which gets its own short-lived tokens with
    /// `client_credentials` at /oauth/token. Prints its id and first secret (shown only
    /// now) as JSON.
    CreateClient {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The agent.
        agent: String,
        /// A display name, such as the host the agent runs on.
        #[arg(long)]
        name: Option<String>,
    },
    /// Issue a static bearer token for /mcp to an agent or a person and print it (it
    /// is shown only once). People otherwise get their credentials by signing in: only
    /// this command line issues one for a person.
    IssueToken {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The identity.
        identity: String,
    },
    /// Revoke every bearer token of an identity (API processes stop accepting them
    /// within 10 seconds).
    RevokeTokens {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The identity.
        identity: String,
    },
    /// List an organization's identities and their groups.
    Identities {
        /// The organization.
        #[arg(long)]
        org: String,
    },
    /// Import a PROCESS.md (or a folder holding one, or a tar, tar.gz or zip archive of
    /// its folder) as a draft.
    Import {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The file, folder or archive.
        path: PathBuf,
    },
    /// Bind a role of a draft to a group.
    Bind {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The process.
        process: String,
        /// The role.
        role: String,
        /// The group.
        group: String,
        /// Bind even though the group has no members yet.
        #[arg(long)]
        force: bool,
    },
    /// Bind an agent step of a draft (or `*`, every agent step without its own binding)
    /// to the agents that alone may claim it; unbound, any agent may.
    BindAgents {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The process.
        process: String,
        /// The agent step's id, or `*`.
        step: String,
        /// An agent that may claim it (repeat for each).
        #[arg(long = "agent")]
        agents: Vec<String>,
        /// A group whose agents may claim it (repeat for each).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Bind even to a group that has no agents yet.
        #[arg(long)]
        force: bool,
    },
    /// Publish a draft as the next version.
    Publish {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The process.
        process: String,
    },
    /// List the published versions of a process.
    Versions {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The process.
        process: String,
    },
    /// Compare a process's advisory check verdicts with the decisions of the approval
    /// after each checked step: counts, the confusion matrix, false-pass and unsure
    /// rates, and the pass threshold that would have met --target. JSON with --json.
    CheckAgreement {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The process.
        process: String,
        /// The first version included.
        #[arg(long)]
        from_version: Option<u32>,
        /// The last version included.
        #[arg(long)]
        to_version: Option<u32>,
        /// Only verdicts made at or after this time (RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// Only verdicts made before this time (RFC 3339).
        #[arg(long)]
        until: Option<String>,
        /// The false-pass rate to stay at or under, 0–1.
        #[arg(long, default_value_t = agentprocess_views::agreement::DEFAULT_TARGET)]
        target: f64,
        /// Print the report as JSON (the REST surface's shape).
        #[arg(long)]
        json: bool,
    },
    /// Add a webhook endpoint: it receives every notification of the organization
    /// (work item created, escalation waiting, step overdue, run ended), signed.
    /// Prints the id and the signing secret (shown only now) as JSON.
    AddWebhook {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The endpoint: an https:// URL.
        url: String,
        /// The servers' key, which seals the signing secret (--secret-key is required).
        #[command(flatten)]
        seal: SealArgs,
        /// Whether the servers allow plain http hooks.
        #[command(flatten)]
        hooks: PlainHttpArgs,
    },
    /// Point a group at a Slack-compatible incoming webhook (Slack, Mattermost,
    /// Rocket.Chat): the messages its members get by email (work waiting, overdue,
    /// escalations for the operators group) are posted there too. The URL is sealed
    /// (--secret-key is required) and never shown again. Prints the group, the host and
    /// the kind.
    ChatHook {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The group (`operators` for the operators' escalations and overdue steps).
        #[arg(long)]
        group: String,
        /// The incoming-webhook URL: an https:// URL.
        url: String,
        /// The markup the chat reads posts in: `slack`, or `markdown` (Mattermost,
        /// Rocket.Chat); values from runs are escaped for it. Left out, Slack's own
        /// hosts are slack and any other markdown.
        #[arg(long, value_parser = chat_kind)]
        kind: Option<agentprocess_service::ChatKind>,
        /// The servers' key, which seals the URL.
        #[command(flatten)]
        seal: SealArgs,
        /// Whether the servers allow plain http hooks.
        #[command(flatten)]
        hooks: PlainHttpArgs,
    },
    /// Remove a group's chat hook; its messages not yet posted are dropped.
    RemoveChatHook {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The group.
        #[arg(long)]
        group: String,
    },
    /// Seal again with --secret-key every secret kept in the database that a
    /// --previous-secret-key sealed (identity providers' client secrets, webhook signing
    /// secrets, chat hook URLs), and seal webhook secrets kept in clear by earlier versions. Run it
    /// after rotating the key; the old key can be dropped once it has run and the
    /// replay window (--request-retention-seconds) has passed, since results recorded
    /// for replays keep what they sealed until they expire.
    Reseal {
        /// The current key and the keys it replaced.
        #[command(flatten)]
        seal: SealArgs,
    },
    /// Grant an organization limits in place of the API processes' defaults
    /// (--org-calls-per-second and the others): raise or lower any; 0 means no limit.
    /// Limits not named keep what was granted before. Its admins may lower them further
    /// (PUT /api/v1/organization/limits), never raise them. Each API process applies
    /// the change within 10 s. Prints what is granted and chosen, as JSON.
    SetLimits {
        /// The organization.
        #[arg(long)]
        org: String,
        #[command(flatten)]
        limits: LimitFlags,
        /// Drop what was granted before first (back to the defaults).
        #[arg(long)]
        reset: bool,
    },
    /// Show what an organization was granted and what its admins chose, as JSON (the
    /// limits in force are these over the API processes' defaults:
    /// GET /api/v1/organization/limits shows them).
    Limits {
        /// The organization.
        #[arg(long)]
        org: String,
    },
    /// Remove a webhook endpoint; its pending deliveries are given up.
    RemoveWebhook {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The endpoint's id.
        id: String,
    },
    /// List the webhook endpoints (id, URL, added).
    Webhooks {
        /// The organization.
        #[arg(long)]
        org: String,
    },
    /// List the latest webhook deliveries and where each stands.
    Deliveries {
        /// The organization.
        #[arg(long)]
        org: String,
        /// How many (at most 100).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

/// Identity kinds.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum Kind {
    /// Claims and submits agent steps.
    Agent,
    /// Decides work items.
    Person,
    /// A person who also cancels runs, sends events and takes escalations.
    Operator,
    /// A person who also manages the organization.
    Admin,
}

impl Kind {
    /// A person's role; an agent has none.
    pub(super) fn role(self) -> Option<Role> {
        match self {
            Kind::Agent => None,
            Kind::Person => Some(Role::Member),
            Kind::Operator => Some(Role::Operator),
            Kind::Admin => Some(Role::Admin),
        }
    }
}

/// Limits to grant an organization (0: no limit).
#[derive(Debug, clap::Args)]
pub(super) struct LimitFlags {
    /// Tool calls and REST requests per second, in each API process.
    #[arg(long)]
    calls_per_second: Option<u64>,
    /// Calls per second of each identity, in each API process.
    #[arg(long)]
    identity_calls_per_second: Option<u64>,
    /// Writes per second, in each API process.
    #[arg(long)]
    writes_per_second: Option<u64>,
    /// Calls in progress at once, in each API process.
    #[arg(long)]
    concurrent_calls: Option<u64>,
    /// Runs not yet ended or cancelled.
    #[arg(long)]
    open_runs: Option<u64>,
    /// Bytes of uploaded files kept.
    #[arg(long)]
    stored_bytes: Option<u64>,
}

impl LimitFlags {
    pub(super) fn values(&self) -> agentprocess_store::LimitValues {
        agentprocess_store::LimitValues {
            calls_per_second: self.calls_per_second,
            identity_calls_per_second: self.identity_calls_per_second,
            writes_per_second: self.writes_per_second,
            concurrent_calls: self.concurrent_calls,
            open_runs: self.open_runs,
            stored_bytes: self.stored_bytes,
        }
    }
}

/// Whether a hook set here may be a plain http URL: as the servers of this database
/// allow, so the command accepts no URL they would refuse to post to.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(super) struct PlainHttpArgs {
    /// Accept a plain http:// URL, as servers given the same flag do (development and
    /// tests); only https:// otherwise.
    #[arg(long, env = "AGENTPROCESS_ALLOW_PLAIN_HTTP_HOOKS")]
    allow_plain_http_hooks: bool,
}

impl PlainHttpArgs {
    /// The service's rule for hook URLs.
    pub(super) fn policy(self) -> agentprocess_service::PlainHttpHooks {
        agentprocess_service::PlainHttpHooks::allowed_if(self.allow_plain_http_hooks)
    }
}

/// A chat kind as `--kind` names it.
fn chat_kind(name: &str) -> Result<agentprocess_service::ChatKind, String> {
    agentprocess_service::ChatKind::parse(name).ok_or_else(|| format!("{name:?} is not slack or markdown"))
}
