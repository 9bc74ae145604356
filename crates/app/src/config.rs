//! One typed configuration per binary, read once at start from flags, the
//! environment and defaults (see [`crate::flags`]), and checked there: a wrong value
//! stops the process before it touches anything.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agentprocess_auth::metadata_documents::{MetadataDocumentSettings, MetadataDocuments};
use agentprocess_auth::{Auth, AuthSettings, Oidc, OidcSettings};
use agentprocess_service::SweepSettings;
use agentprocess_timers::{RedisQueue, RedisSettings, TimerQueue};

use crate::{Background, Storage};

/// A value that is never shown: its `Debug` says only that it is there.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The value itself, for the one place that uses it.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> std::fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<hidden>)")
    }
}

/// The database a process keeps its records in.
#[derive(Debug, Clone)]
pub struct Database {
    /// `postgres://user:password@host/database` or `sqlite://path`: it may carry a
    /// password.
    pub url: Secret<String>,
    /// Connections in the pool.
    pub max_connections: u32,
    /// Apply migrations before serving.
    pub migrate: bool,
}

/// What the HTTP surfaces need beyond the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Host names (without port) that `Host` may carry.
    pub allowed_hosts: Vec<String>,
    /// Origins (`https://app.example`) a browser may call `/mcp` from.
    pub allowed_origins: Vec<String>,
    /// The organization whose people `/dev/sign-in` lets anyone sign in as, with no
    /// identity provider. Only for development servers.
    pub dev_sign_in_org: Option<String>,
    /// Whether plain stateless `tools/call` requests are answered without building an
    /// rmcp service for each; off, rmcp serves every request.
    pub direct_tool_calls: bool,
    /// The proxies whose `X-Forwarded-For` names the client (the ingress); none: the
    /// connection's peer is the client.
    pub trusted_proxies: agentprocess_auth::forwarded::TrustedProxies,
}

/// Identity: the operator's rules, and how identity providers and client metadata
/// documents are reached.
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    /// Sign-up, sessions, tokens and the limits of anonymous callers.
    pub settings: AuthSettings,
    /// Let identity providers on private addresses or plain http be used (development).
    pub allow_private_issuers: bool,
    /// Hosts a provider may be on although their address is private.
    pub oidc_allow_hosts: Vec<String>,
    /// PEM bundles trusted beside the public roots when talking to providers.
    pub oidc_extra_roots_pem: Vec<Vec<u8>>,
    /// How long one request to a provider may take.
    pub oidc_timeout: Duration,
    /// How client metadata documents are fetched; `None`: clients may not name
    /// themselves by one.
    pub metadata_documents: Option<MetadataDocumentSettings>,
}

impl Default for IdentityConfig {
    /// The flags' defaults (a test holds the two together).
    fn default() -> Self {
        Self {
            settings: AuthSettings::default(),
            allow_private_issuers: false,
            oidc_allow_hosts: Vec::new(),
            oidc_extra_roots_pem: Vec::new(),
            oidc_timeout: Duration::from_secs(10),
            metadata_documents: Some(MetadataDocumentSettings::default()),
        }
    }
}

impl IdentityConfig {
    /// Identity over `store` for a server at `public_url`, sealing with `key` (the
    /// service seals with the same one).
    pub fn auth(
        &self,
        store: agentprocess_store::SqlStore,
        public_url: &str,
        key: agentprocess_auth::SecretKey,
    ) -> anyhow::Result<Auth> {
        let oidc = Oidc::new(OidcSettings {
            redirect_uri: format!("{}/auth/callback", public_url.trim_end_matches('/')),
            allow_private_issuers: self.allow_private_issuers,
            allow_hosts: self.oidc_allow_hosts.clone(),
            extra_roots_pem: self.oidc_extra_roots_pem.clone(),
            timeout: self.oidc_timeout,
        })
        .map_err(|error| anyhow::anyhow!("identity provider client: {error}"))?;
        if self.allow_private_issuers {
            tracing::warn!(
                "identity providers on private addresses and plain http are allowed; never on a public server"
            );
        }
        let auth = Auth::new(store, key, oidc, self.settings.clone());
        let Some(settings) = &self.metadata_documents else {
            return Ok(auth);
        };
        let documents = MetadataDocuments::new(settings.clone())
            .map_err(|error| anyhow::anyhow!("client metadata document fetcher: {error}"))?;
        Ok(auth.with_metadata_documents(documents))
    }
}

/// The check-1 evaluator and how often it is probed.
#[derive(Debug, Clone)]
pub struct EvaluatorConfig {
    /// How to reach it.
    pub settings: agentprocess_evaluator::OpenAiSettings,
    /// How often it is probed: `describe` offers check-1 only while it answers.
    pub probe_every: Duration,
}

impl EvaluatorConfig {
    /// The evaluator.
    pub fn evaluator(&self) -> anyhow::Result<Arc<dyn agentprocess_evaluator::Evaluator>> {
        let evaluator = agentprocess_evaluator::OpenAiEvaluator::new(self.settings.clone())
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        Ok(Arc::new(evaluator))
    }
}

/// How a process logs, shows its metrics and stops.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// Log lines as JSON.
    pub log_json: bool,
    /// Where to serve `/metrics`, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Organizations metrics name; the others are counted as `other`.
    pub metrics_organizations: Vec<String>,
    /// After the listener closes, how long calls in flight may take to finish.
    pub shutdown_grace: Duration,
    /// After the first signal, how long to go on serving (while `/readyz` says 503).
    pub shutdown_delay: Duration,
    /// Let `POST /test/clock` move this process's clock (end-to-end tests only).
    pub test_clock: bool,
}

impl ProcessConfig {
    /// Starts telemetry (logs, and traces and metrics per the OTEL_* environment) for
    /// a process named `service_name`.
    pub fn telemetry(&self, service_name: &str) -> anyhow::Result<Arc<agentprocess_telemetry::Telemetry>> {
        Ok(Arc::new(agentprocess_telemetry::init(
            &agentprocess_telemetry::Options {
                service_name,
                log_json: self.log_json,
                prometheus: self.metrics_listen.is_some(),
                watched_organizations: &self.metrics_organizations,
            },
        )?))
    }

    /// How the process stops and shows its metrics.
    pub fn settings(&self, telemetry: &Arc<agentprocess_telemetry::Telemetry>) -> crate::ProcessSettings {
        crate::ProcessSettings {
            shutdown_grace: self.shutdown_grace,
            shutdown_delay: self.shutdown_delay,
            telemetry: Arc::clone(telemetry),
            metrics_listen: self.metrics_listen,
        }
    }
}

/// The Redis timer queue, when one is configured.
pub fn queue(settings: Option<&RedisSettings>) -> anyhow::Result<Option<Arc<dyn TimerQueue>>> {
    settings
        .map(|settings| Ok(Arc::new(RedisQueue::new(settings)?) as Arc<dyn TimerQueue>))
        .transpose()
}

/// Everything an API process (`agentprocess-api serve`, `agentprocess dev`) runs with.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Where runs are kept.
    pub database: Database,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The service's settings (public URL, keys, engine settings, limits).
    pub service: agentprocess_service::Settings,
    /// Where uploaded evidence is kept.
    pub storage: Storage,
    /// What the sweeper removes, and when.
    pub sweep: SweepSettings,
    /// The Redis timer queue; without it timers fire from the database rows.
    pub queue: Option<RedisSettings>,
    /// The check-1 evaluator, when one is configured.
    pub evaluator: Option<EvaluatorConfig>,
    /// Timers and webhooks, when this process runs them (no separate scheduler).
    pub background: Option<Background>,
    /// Logs, metrics, shutdown.
    pub process: ProcessConfig,
    /// Sign-up, sign-in and OAuth.
    pub identity: IdentityConfig,
    /// The HTTP surfaces.
    pub http: HttpSettings,
    /// What an operator should know about this configuration, logged at start.
    pub warnings: Vec<String>,
}

/// Everything `agentprocess-scheduler serve` runs with.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Where runs are kept.
    pub database: Database,
    /// Where `/healthz` and `/readyz` are served.
    pub listen: SocketAddr,
    /// The service's settings: the API's sealing key and the call deadline.
    pub service: agentprocess_service::Settings,
    /// The Redis timer queue; without it timers fire from the database rows.
    pub queue: Option<RedisSettings>,
    /// How timers are fired and webhooks delivered.
    pub background: Background,
    /// Logs, metrics, shutdown.
    pub process: ProcessConfig,
    /// What an operator should know about this configuration, logged at start.
    pub warnings: Vec<String>,
}

/// Logs each of `warnings` once.
pub fn log_warnings(warnings: &[String]) {
    for warning in warnings {
        tracing::warn!("{warning}");
    }
}
