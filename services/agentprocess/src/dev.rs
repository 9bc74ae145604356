//! `agentprocess dev`: the whole server in one process on SQLite and local files,
//! with a ready-made organization, identities and published processes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentprocess_engine::PersonFormat;
use agentprocess_service::{Admin, SystemClock, random_id};
use agentprocess_store::Role;
use anyhow::Context as _;
use serde_json::{Value, json};

use crate::catalog::{self, Entry, Origin};

/// The organization dev mode makes.
pub(crate) const ORG: &str = "dev";

/// The group every role of every published process is bound to.
const PEOPLE: &str = "people";

/// One identity of the dev organization: id, role (none for an agent), person value,
/// groups.
type DevIdentity = (
    &'static str,
    Option<Role>,
    Option<&'static str>,
    &'static [&'static str],
);

const IDENTITIES: [DevIdentity; 6] = [
    ("agent-1", None, None, &[]),
    ("agent-2", None, None, &[]),
    ("alice", Some(Role::Member), Some("alice@example.com"), &[PEOPLE]),
    ("bob", Some(Role::Member), Some("bob@example.com"), &[PEOPLE]),
    ("ops", Some(Role::Operator), Some("ops@example.com"), &[]),
    ("admin", Some(Role::Admin), Some("admin@example.com"), &[]),
];

/// Options of `agentprocess dev`.
#[derive(Debug, clap::Args)]
pub(crate) struct Dev {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Where the SQLite database, uploaded files and the URL key live.
    #[arg(long, default_value = ".agentprocess")]
    data_dir: PathBuf,
    /// Publish the processes in DIR instead of the built-in examples.
    ///
    /// DIR is a folder of process folders, each named after its process and holding a
    /// PROCESS.md, or one process folder itself. Without this flag the examples built
    /// into this binary are published, whatever the working directory. A DIR that is
    /// missing or holds no process folder is refused, and the server does not start.
    #[arg(long, value_name = "DIR")]
    processes: Option<PathBuf>,
    /// A browser origin allowed to call /mcp, as `scheme://host[:port]`, such as
    /// `http://localhost:5173` (repeat or comma-separate for several).
    ///
    /// Without one, only pages served from the dev server's own origin may call it:
    /// every other request that carries an Origin header (every browser's) is refused.
    /// Agents and curl send none and are not affected.
    #[arg(long, value_name = "ORIGIN", value_delimiter = ',')]
    allowed_origin: Vec<String>,
    /// Also write the URL and every identity's token as JSON to this file.
    #[arg(long, value_name = "FILE")]
    details: Option<PathBuf>,
    /// Let `POST /test/clock` move this server's clock forward, for end-to-end tests of
    /// waits and timeouts. Never in production.
    #[arg(long, hide = true)]
    test_clock: bool,
    /// Claim lease length, in seconds.
    #[arg(long, default_value_t = 600)]
    lease_seconds: u32,
    #[command(flatten)]
    check: agentprocess_app::flags::CheckArgs,
    #[command(flatten)]
    limits: agentprocess_app::flags::LimitArgs,
    #[command(flatten)]
    mail: agentprocess_app::flags::MailArgs,
    /// Turn off the development sign-in (`/dev/sign-in`, which lets anyone sign in as
    /// any person of the dev organization with no identity provider).
    #[arg(long)]
    no_dev_sign_in: bool,
    /// A DNS server (`ip:port`) to check organizations' domain ownership against,
    /// instead of the system's.
    #[arg(long = "dns-nameserver", value_name = "ADDRESS")]
    dns_nameservers: Vec<SocketAddr>,
    /// Sign the dev organization's people in through this OpenID provider (its issuer
    /// URL), to try real SSO: register `<this server>/auth/callback` there, then open
    /// `/login?org=dev`. People of an `--oidc-domain` become members at first sign-in.
    #[arg(long, value_name = "URL", requires = "oidc_client_id")]
    oidc_issuer: Option<String>,
    /// The client id registered at `--oidc-issuer`.
    #[arg(long, value_name = "ID", requires = "oidc_issuer")]
    oidc_client_id: Option<String>,
    /// The client secret (from the environment); absent for a public client.
    #[arg(long, env = "AGENTPROCESS_IDP_CLIENT_SECRET", hide_env_values = true)]
    oidc_client_secret: Option<String>,
    /// An email domain whose people become members of the dev organization at their
    /// first sign-in through `--oidc-issuer` (repeat for several).
    #[arg(long, value_name = "DOMAIN", requires = "oidc_issuer")]
    oidc_domain: Vec<String>,
}

pub(crate) fn run(dev: Dev) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(serve(dev))
}

async fn serve(dev: Dev) -> anyhow::Result<()> {
    let telemetry = Arc::new(agentprocess_telemetry::init(&agentprocess_telemetry::Options {
        service_name: "agentprocess-dev",
        log_json: false,
        prometheus: false,
        watched_organizations: &[],
    })?);
    // Read before anything is made, so a wrong --processes leaves nothing behind.
    let (origin, processes) = match &dev.processes {
        Some(folder) => (Origin::Folder(folder.clone()), catalog::read(folder)?),
        None => (Origin::BuiltIn, catalog::built_in()),
    };
    std::fs::create_dir_all(&dev.data_dir).with_context(|| format!("cannot create {}", dev.data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(dev.listen)
        .await
        .with_context(|| format!("cannot listen on {}", dev.listen))?;
    let address = listener.local_addr()?;
    let public_url = format!("http://{address}");
    let mut settings = agentprocess_service::Settings::new(public_url.clone(), url_secret(&dev.data_dir)?);
    settings.engine.lease_seconds = dev.lease_seconds;
    settings.engine.check = dev.check.limits();
    settings.limits = dev.limits.limits(1);
    // Webhook and chat receivers on one's own machine listen on plain http.
    settings.plain_http_hooks = agentprocess_service::PlainHttpHooks::Allowed;
    if dev.limits.org_concurrent_calls.is_none() {
        // One SQLite connection serves every call in turn anyway; bounded at one, a
        // second caller would be refused after a second instead of waiting its turn.
        settings.limits.concurrent_calls = None;
    }
    let database = format!("sqlite://{}?mode=rwc", dev.data_dir.join("agentprocess.db").display());
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    hosts.extend(agentprocess_app::flags::host_of(&public_url));
    // On one's own machine a webhook receiver is usually on localhost too.
    let mut background = agentprocess_app::Background::default();
    background.webhooks.allow_private_networks = true;
    background.mail = dev.mail.settings()?;
    let config = agentprocess_app::ApiConfig {
        database: agentprocess_app::Database {
            url: agentprocess_app::Secret::new(database),
            max_connections: 1,
            migrate: true,
        },
        listen: address,
        service: settings,
        storage: agentprocess_app::Storage::Dir(dev.data_dir.join("files")),
        sweep: agentprocess_service::SweepSettings::default(),
        queue: None,
        evaluator: dev.check.evaluator()?,
        background: Some(background),
        process: agentprocess_app::config::ProcessConfig {
            log_json: false,
            metrics_listen: None,
            metrics_organizations: Vec::new(),
            shutdown_grace: std::time::Duration::from_secs(10),
            shutdown_delay: std::time::Duration::ZERO,
            test_clock: dev.test_clock,
        },
        identity: identity(&dev),
        http: agentprocess_app::HttpSettings {
            allowed_hosts: hosts,
            allowed_origins: dev.allowed_origin.clone(),
            dev_sign_in_org: (!dev.no_dev_sign_in).then(|| ORG.to_owned()),
            direct_tool_calls: true,
            // On one's own machine nothing stands in front of the server.
            trusted_proxies: agentprocess_auth::forwarded::TrustedProxies::default(),
        },
        warnings: Vec::new(),
    };
    let api = agentprocess_app::Api::start(&config, Some(listener)).await?;
    let admin = Admin::new(api.service.store().clone(), Arc::new(SystemClock), PersonFormat::Email)
        .with_capabilities(api.service.capabilities());
    let mut identities = identities(&admin).await?;
    identities["admin"]["apiToken"] = json!(admin_api_token(&api).await?);
    let published = publish_all(&admin, &processes).await?;
    let sign_in = if dev.no_dev_sign_in {
        format!("/login?org={ORG}")
    } else {
        "/dev/sign-in".to_owned()
    };
    let details = json!({
        "url": format!("{public_url}/mcp"),
        "web": format!("{public_url}{sign_in}"),
        "api": format!("{public_url}/api/v1"),
        "organization": ORG,
        "identities": identities,
    });
    // The file first: whoever reads the welcome text can read the file too.
    if let Some(path) = &dev.details {
        std::fs::write(path, serde_json::to_vec_pretty(&details)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    print_welcome(&details, &origin, &published);
    if let (Some(issuer), Some(client_id)) = (&dev.oidc_issuer, &dev.oidc_client_id) {
        sso(&api.auth, &dev, issuer, client_id).await?;
    }
    let router = agentprocess_http::router(Arc::clone(&api.service), Arc::clone(&api.auth), &config.http);
    let served = api.serve(&config, router, &telemetry).await;
    telemetry.shutdown();
    served
}

/// Identity on one person's machine: anyone may sign up an organization against an
/// identity provider of their own, on this machine too (secrets are sealed with a key
/// derived from the data folder's).
fn identity(dev: &Dev) -> agentprocess_app::IdentityConfig {
    let mut identity = agentprocess_app::IdentityConfig {
        allow_private_issuers: true,
        ..agentprocess_app::IdentityConfig::default()
    };
    identity.settings.signup = agentprocess_auth::SignupPolicy::Open;
    identity.settings.dns_nameservers = dev.dns_nameservers.clone();
    // The limits that shield a public server from strangers would only get in the way
    // of trying sign-in over and over.
    identity.settings.anonymous = agentprocess_auth::AnonymousLimits {
        sign_ins_per_address: 10_000,
        sign_ins_per_organization: 10_000,
        token_failures_per_address: 10_000,
        token_failures_per_client: 10_000,
    };
    identity
}

/// Signs the dev organization in through the developer's own OpenID provider.
async fn sso(auth: &agentprocess_auth::Auth, dev: &Dev, issuer: &str, client_id: &str) -> anyhow::Result<()> {
    let actor = actor();
    let now = jiff::Timestamp::now();
    auth.set_provider(&actor, ORG, issuer, client_id, dev.oidc_client_secret.as_deref(), now)
        .await
        .map_err(refused)?;
    for domain in &dev.oidc_domain {
        auth.add_domain(&actor, ORG, domain, now, None).await.map_err(refused)?;
    }
    println!("The dev organization signs in through {issuer}: /login?org={ORG}");
    Ok(())
}

/// The URL-signing key, made once per data directory so URLs outlive a restart.
fn url_secret(data_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = data_dir.join("url-secret");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        return Ok(existing.trim().as_bytes().to_vec());
    }
    let secret = random_id("", 32);
    std::fs::write(&path, &secret).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(secret.into_bytes())
}

/// Makes the dev organization on first start; issues a fresh token for every
/// identity on each start (only hashes are kept, so old ones cannot be shown again).
async fn identities(admin: &Admin) -> anyhow::Result<Value> {
    if admin.identities(ORG).await?.is_empty() {
        admin.create_org(ORG, "Development").await?;
        for (id, kind, person, groups) in IDENTITIES {
            let groups: Vec<String> = groups.iter().map(|group| (*group).to_owned()).collect();
            admin.create_identity(ORG, kind, id, id, person, &groups).await?;
        }
    }
    let mut found = serde_json::Map::new();
    for (id, kind, person, _) in IDENTITIES {
        let token = admin.issue_token(ORG, id).await?;
        // `person` for members, as the tokens file has always said.
        let kind = match kind {
            None => "agent",
            Some(Role::Member) => "person",
            Some(role) => role.as_str(),
        };
        let mut entry = json!({ "kind": kind, "token": token });
        if let Some(person) = person {
            entry["person"] = json!(person);
        }
        found.insert(id.to_owned(), entry);
    }
    Ok(Value::Object(found))
}

/// A fresh API token for the dev admin, for `/api/v1` and `agentprocess publish`
/// (MCP tokens are for `/mcp` only). Each start makes one, like the MCP tokens; they
/// expire after 90 days and are listed on the admin's `/account`.
async fn admin_api_token(api: &agentprocess_app::Api) -> anyhow::Result<String> {
    use agentprocess_store::Store as _;

    let admin = api
        .service
        .store()
        .identity(ORG, "admin")
        .await?
        .context("the dev organization has no admin")?;
    let new = agentprocess_auth::tokens::NewToken {
        name: "agentprocess dev".to_owned(),
        scope: agentprocess_auth::tokens::Scope::Admin,
        expires_in_days: None,
    };
    let (_, token) = api
        .auth
        .create_token(&actor(), &admin, &new, jiff::Timestamp::now(), None)
        .await
        .map_err(refused)?;
    Ok(token)
}

/// Who the audit log says set up the dev organization's identity.
fn actor() -> agentprocess_auth::audit::Actor {
    agentprocess_auth::audit::Actor {
        id: "agentprocess-dev".to_owned(),
        address: None,
    }
}

/// An identity refusal, in the words the tools would answer it with.
fn refused(error: agentprocess_auth::Error) -> anyhow::Error {
    anyhow::anyhow!("{}", error.to_tool_error())
}

/// Publishes every process, binding every role to the people group. Returns each
/// process folder's outcome.
async fn publish_all(admin: &Admin, processes: &[Entry]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut outcomes = BTreeMap::new();
    for process in processes {
        let outcome = match publish_one(admin, &process.source, &process.folder).await {
            Ok(text) => text,
            Err(agentprocess_service::Error::Refused(refusal)) => {
                format!("not published:\n      {}", refusal.issues.join("\n      "))
            }
            Err(other) => return Err(other.into()),
        };
        outcomes.insert(process.folder.clone(), outcome);
    }
    Ok(outcomes)
}

async fn publish_one(admin: &Admin, source: &[u8], folder: &str) -> Result<String, agentprocess_service::Error> {
    let draft = admin.import_draft(ORG, source, Some(folder), None).await?;
    for role in &draft.roles {
        admin.bind_role(ORG, &draft.process, role, PEOPLE, false).await?;
    }
    let published = admin.publish(ORG, &draft.process, None).await?;
    Ok(format!("version {}", published.number))
}

fn print_welcome(details: &Value, origin: &Origin, published: &BTreeMap<String, String>) {
    println!("agentprocess dev server (protocol core-2)\n");
    let text = |key: &str| details[key].as_str().unwrap_or_default().to_owned();
    println!("  MCP endpoint: {}   (agents: an MCP token below)", text("url"));
    println!("  web app:      {}   (sign in as any person below)", text("web"));
    println!("  REST API:     {}   (admin's API token below)", text("api"));
    println!("  organization: {ORG}\n");
    if let Some(identities) = details["identities"].as_object() {
        for (id, entry) in identities {
            let person = entry["person"].as_str().map(|p| format!(" ({p})")).unwrap_or_default();
            println!(
                "  {:<8} {:<8}{person}\n           Authorization: Bearer {}   (/mcp)",
                id,
                entry["kind"].as_str().unwrap_or_default(),
                entry["token"].as_str().unwrap_or_default()
            );
            if let Some(api) = entry["apiToken"].as_str() {
                println!("           Authorization: Bearer {api}   (/api/v1)");
            }
        }
    }
    println!("\n  processes from {origin} (every role bound to group {PEOPLE:?}: alice and bob):");
    for (name, outcome) in published {
        println!("    {name}: {outcome}");
    }
    println!("\n  ctrl-c stops the server; the data stays in the data directory.");
}
