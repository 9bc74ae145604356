//! `agentprocess admin`: organizations, identities, tokens and processes, straight
//! against the database (until the REST admin surface exists).

use std::path::PathBuf;
use std::sync::Arc;

use agentprocess_app::flags::SealArgs;
use agentprocess_engine::PersonFormat;
use agentprocess_service::{Admin, SystemClock};
use agentprocess_store::{Role, SqlStore, Store as _};
use anyhow::Context as _;
use clap::{Subcommand, ValueEnum};

/// Options of `agentprocess admin`.
#[derive(Debug, clap::Args)]
pub(crate) struct AdminArgs {
    /// postgres://… or sqlite://path?mode=rwc
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    database_url: String,
    /// The API processes of this database run a check-1 evaluator (--evaluator-url):
    /// processes with `check:` may be imported and published. Without it they are
    /// refused, as those servers would refuse them.
    #[arg(long)]
    with_check: bool,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Apply database migrations.
    Migrate,
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
        /// The API processes' --secret-key, which seals the client secret.
        #[arg(long, env = "AGENTPROCESS_SECRET_KEY", hide_env_values = true)]
        secret_key: String,
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
    /// Create a group.
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
    /// Issue a bearer token for an identity and print it (it is shown only once).
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
    /// Import a PROCESS.md (or a folder holding one) as a draft.
    Import {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The file or folder.
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
    /// (--secret-key is required) and never shown again. Prints the group and the host.
    ChatHook {
        /// The organization.
        #[arg(long)]
        org: String,
        /// The group (`operators` for the operators' escalations and overdue steps).
        #[arg(long)]
        group: String,
        /// The incoming-webhook URL: an https:// URL.
        url: String,
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
        /// How many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

/// Identity kinds.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kind {
    /// Claims and submits agent steps.
    Agent,
    /// Decides work items.
    Person,
    /// A person who also cancels runs, sends events and takes escalations.
    Operator,
    /// A person who also manages the organization.
    Admin,
}

/// Whether a hook set here may be a plain http URL: as the servers of this database
/// allow, so the command accepts no URL they would refuse to post to.
#[derive(Debug, Clone, Copy, clap::Args)]
struct PlainHttpArgs {
    /// Accept a plain http:// URL, as servers given the same flag do (development and
    /// tests); only https:// otherwise.
    #[arg(long, env = "AGENTPROCESS_ALLOW_PLAIN_HTTP_HOOKS")]
    allow_plain_http_hooks: bool,
}

impl PlainHttpArgs {
    fn policy(self) -> agentprocess_service::PlainHttpHooks {
        agentprocess_service::PlainHttpHooks::allowed_if(self.allow_plain_http_hooks)
    }
}

/// Identity's operations over `store`, sealing with `seal`'s key (a throwaway key when
/// none is given: then nothing sealed can be read or written usefully).
fn identity(
    store: SqlStore,
    seal: Option<SealArgs>,
    allow_private_issuers: bool,
) -> anyhow::Result<agentprocess_auth::Auth> {
    let throwaway = agentprocess_auth::secrets::random_bytes::<32>();
    let key = seal.unwrap_or_default().key(Some(&throwaway))?;
    // Only organizations, providers and clients are administered here: no client
    // metadata document is ever fetched.
    let identity = agentprocess_app::IdentityConfig {
        allow_private_issuers,
        metadata_documents: None,
        ..agentprocess_app::IdentityConfig::default()
    };
    identity.auth(store, "http://localhost", key)
}

pub(crate) fn run(args: AdminArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(act(args))
}

async fn act(args: AdminArgs) -> anyhow::Result<()> {
    let store = SqlStore::connect(&args.database_url, 1).await?;
    if let Action::Migrate = args.action {
        store.migrate().await?;
        println!("migrations applied");
        return Ok(());
    }
    let admin = Admin::new(store.clone(), Arc::new(SystemClock), PersonFormat::Email).with_capabilities(
        agentprocess_format::Capabilities {
            check: args.with_check,
            ..agentprocess_service::CAPABILITIES
        },
    );
    match args.action {
        Action::Migrate => {}
        Action::SetProvider {
            org,
            issuer,
            client_id,
            client_secret,
            secret_key,
            allow_private_issuers,
        } => {
            let seal = SealArgs {
                secret_key: Some(secret_key),
                previous_secret_keys: Vec::new(),
            };
            let auth = identity(store.clone(), Some(seal), allow_private_issuers)?;
            let actor = agentprocess_auth::audit::Actor {
                id: "agentprocess-admin".to_owned(),
                address: None,
            };
            auth.set_provider(
                &actor,
                &org,
                &issuer,
                &client_id,
                client_secret.as_deref(),
                jiff::Timestamp::now(),
            )
            .await
            .map_err(|error| anyhow::anyhow!("{}", error.to_tool_error()))?;
            println!("{org} signs in through {issuer}; its people sign in at /login?org=<its slug>");
        }
        Action::CreateOrg { id, name } => {
            admin.create_org(&id, name.as_deref().unwrap_or(&id)).await?;
            println!("organization {id} created");
        }
        Action::CreateGroup { org, id } => {
            admin.create_group(&org, &id).await?;
            println!("group {id} created");
        }
        Action::CreateIdentity {
            org,
            kind,
            id,
            name,
            person,
            groups,
        } => {
            let role = match kind {
                Kind::Agent => None,
                Kind::Person => Some(Role::Member),
                Kind::Operator => Some(Role::Operator),
                Kind::Admin => Some(Role::Admin),
            };
            let name = name.unwrap_or_else(|| id.clone());
            admin
                .create_identity(&org, role, &id, &name, person.as_deref(), &groups)
                .await?;
            println!("{} {id} created", role.map_or("agent", Role::as_str));
        }
        Action::CreateClient { org, agent, name } => {
            // Nothing of an agent client is sealed, so any key does.
            let auth = identity(store.clone(), None, false)?;
            let actor = agentprocess_auth::audit::Actor {
                id: "agentprocess-admin".to_owned(),
                address: None,
            };
            let new = agentprocess_auth::clients::NewAgentClient {
                name: name.as_deref(),
                jwks: None,
            };
            let (client, secret) = auth
                .create_agent_client(&actor, &org, &agent, new, jiff::Timestamp::now(), None)
                .await
                .map_err(|error| anyhow::anyhow!("{}", error.to_tool_error()))?;
            let secret = secret.map(|(_, plain)| plain);
            println!("{}", serde_json::json!({ "clientId": client.id, "secret": secret }));
        }
        Action::IssueToken { org, identity } => println!("{}", admin.issue_token(&org, &identity).await?),
        Action::RevokeTokens { org, identity } => {
            let revoked = admin.revoke_tokens(&org, &identity).await?;
            println!("{revoked} token(s) of {identity} revoked");
        }
        Action::Identities { org } => {
            for identity in admin.identities(&org).await? {
                let person = identity.person.as_deref().unwrap_or("-");
                println!(
                    "{}\t{}\t{}\t{person}\t{}",
                    identity.id,
                    identity.kind,
                    identity.role.map_or("-", Role::as_str),
                    identity.groups.join(",")
                );
            }
        }
        Action::Import { org, path } => {
            let (file, folder) = if path.is_dir() {
                let folder = path.file_name().map(|name| name.to_string_lossy().into_owned());
                (path.join("PROCESS.md"), folder)
            } else {
                (path.clone(), None)
            };
            let source = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let draft = admin.import_draft(&org, &source, folder.as_deref(), None).await?;
            println!("draft of {} imported", draft.process);
            for role in &draft.roles {
                match draft.bindings.get(role) {
                    Some(group) => println!("  role {role} → group {group}"),
                    None => println!(
                        "  role {role}: not bound yet (agentprocess admin bind --org {org} {} {role} GROUP)",
                        draft.process
                    ),
                }
            }
        }
        Action::Bind {
            org,
            process,
            role,
            group,
            force,
        } => {
            let draft = admin.bind_role(&org, &process, &role, &group, force).await?;
            println!("role {role} of {process} bound to group {group}");
            for note in &draft.notes {
                println!("  {note}");
            }
        }
        Action::BindAgents {
            org,
            process,
            step,
            agents,
            groups,
            force,
        } => {
            let claimants = agentprocess_engine::Claimants { agents, groups };
            let draft = admin.bind_agents(&org, &process, &step, &claimants, force).await?;
            println!("agent step {step} of {process} bound to {}", claimants.described());
            for note in &draft.notes {
                println!("  {note}");
            }
        }
        Action::Publish { org, process } => {
            let published = admin.publish(&org, &process, None).await?;
            let note = if published.unchanged { " (unchanged)" } else { "" };
            println!(
                "{process} version {}{note}: {}",
                published.number, published.content_hash
            );
        }
        Action::Versions { org, process } => {
            for version in admin.versions(&org, &process).await? {
                println!(
                    "{}\t{}\t{}",
                    version.number,
                    version.content_hash,
                    time(version.published_at)
                );
            }
        }
        Action::CheckAgreement {
            org,
            process,
            from_version,
            to_version,
            since,
            until,
            target,
            json,
        } => {
            let query = agentprocess_views::agreement::AgreementQuery::parse(
                from_version,
                to_version,
                since.as_deref(),
                until.as_deref(),
                Some(target),
            )
            .map_err(|issues| anyhow::anyhow!("{}", issues.join("\n")))?;
            let report = admin.check_agreement(&org, &process, &query).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", crate::agreement::text(&report));
            }
        }
        Action::AddWebhook { org, url, seal, hooks } => {
            let webhook = admin
                .with_seal_key(seal.key(None)?)
                .with_plain_http_hooks(hooks.policy())
                .add_webhook(&org, &url, None)
                .await?;
            let added = serde_json::json!({ "id": webhook.id, "url": webhook.url, "secret": webhook.secret });
            println!("{added}");
        }
        Action::ChatHook {
            org,
            group,
            url,
            seal,
            hooks,
        } => {
            let hook = admin
                .with_seal_key(seal.key(None)?)
                .with_plain_http_hooks(hooks.policy())
                .set_chat_hook(&org, &group, &url)
                .await?;
            println!("{}", serde_json::json!({ "group": hook.group, "host": hook.host }));
        }
        Action::RemoveChatHook { org, group } => {
            admin.remove_chat_hook(&org, &group).await?;
            println!("removed the chat hook of {group}");
        }
        Action::Reseal { seal } => {
            let key = seal.key(None)?;
            let auth = identity(store.clone(), Some(seal), false)?;
            let admin = admin.with_seal_key(key);
            let (mut webhooks, mut providers, mut hooks) = (0, 0, 0);
            let mut after: Option<String> = None;
            loop {
                let orgs = store.organization_ids(after.as_deref(), 100).await?;
                for org in &orgs {
                    webhooks += admin.reseal_webhooks(org).await?;
                    hooks += admin.reseal_chat_hooks(org).await?;
                    providers += usize::from(auth.reseal_provider(org, jiff::Timestamp::now()).await?);
                }
                match orgs.last() {
                    Some(last) if orgs.len() == 100 => after = Some(last.clone()),
                    _ => break,
                }
            }
            println!(
                "resealed {webhooks} webhook secret(s), {hooks} chat hook URL(s) and {providers} identity provider \
                 secret(s)"
            );
        }
        Action::SetLimits { org, limits, reset } => {
            let limits = admin.grant_limits(&org, &limits.values(), reset).await?;
            println!("{}", limits_json(&limits));
        }
        Action::Limits { org } => {
            println!("{}", limits_json(&admin.org_limits(&org).await?));
        }
        Action::RemoveWebhook { org, id } => {
            admin.remove_webhook(&org, &id).await?;
            println!("webhook {id} removed");
        }
        Action::Webhooks { org } => {
            for webhook in admin.webhooks(&org).await? {
                println!("{}\t{}\t{}", webhook.id, webhook.url, time(webhook.created_at));
            }
        }
        Action::Deliveries { org, limit } => {
            for delivery in admin.deliveries(&org, limit).await? {
                let code = delivery.last_status_code.map(|code| code.to_string());
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{} attempt(s)\t{}\t{}",
                    delivery.notification_id,
                    delivery.event,
                    delivery.run_id,
                    delivery.webhook_id,
                    delivery.status.as_str(),
                    delivery.attempts,
                    code.as_deref().unwrap_or("-"),
                    delivery.last_error.as_deref().unwrap_or("-"),
                );
            }
        }
    }
    Ok(())
}

fn time(millis: i64) -> String {
    jiff::Timestamp::from_millisecond(millis)
        .map(|at| at.to_string())
        .unwrap_or_default()
}

/// Limits to grant an organization (0: no limit).
#[derive(Debug, clap::Args)]
struct LimitFlags {
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
    fn values(&self) -> agentprocess_store::LimitValues {
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

fn limits_json(limits: &agentprocess_store::OrgLimits) -> serde_json::Value {
    serde_json::json!({
        "granted": limits.granted,
        "chosen": limits.chosen,
        "updatedAt": limits.updated_at.map(time),
    })
}
