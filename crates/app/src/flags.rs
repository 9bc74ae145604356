//! The flags of the server binaries, each with its `AGENTPROCESS_*` environment
//! variable, so every binary reads them alike; `from_args` turns them into the typed
//! configuration of [`crate::config`], checking every value once, at start.

use std::net::SocketAddr;
use std::time::Duration;

use agentprocess_service::{DEFAULT_LIMITS, SchedulerSettings, WebhookSettings};
use agentprocess_timers::RedisSettings;

use crate::config::{
    ApiConfig, Database, EvaluatorConfig, HttpSettings, IdentityConfig, ProcessConfig, SchedulerConfig, Secret,
};
use crate::{Background, Storage};

/// The check-1 profile: the evaluator that answers check questions, and the limits
/// `describe` publishes.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The evaluator of check-1: the base URL, up to `/v1`, of an OpenAI-compatible
    /// chat-completions API that returns logprobs (OpenAI, Azure OpenAI, vLLM,
    /// llama.cpp's server, Ollama, LiteLLM). Without it check-1 is not offered and a
    /// process with `check:` is refused at publication. Its API key, if it needs one,
    /// comes from AGENTPROCESS_EVALUATOR_API_KEY or --evaluator-api-key-file, never a flag.
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_URL", requires = "evaluator_model")]
    pub evaluator_url: Option<String>,
    /// The model to ask; every verdict records it as `model`.
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_MODEL", requires = "evaluator_url")]
    pub evaluator_model: Option<String>,
    /// A file holding the evaluator's API key (a mounted secret).
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_API_KEY_FILE", value_name = "FILE")]
    pub evaluator_api_key_file: Option<std::path::PathBuf>,
    /// The longest one question may take, in seconds.
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_TIMEOUT_SECONDS", default_value = "30", value_parser = seconds)]
    pub evaluator_timeout_seconds: Seconds,
    /// Questions in flight at once, per process.
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_CONCURRENCY", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub evaluator_concurrency: u16,
    /// How often the evaluator is probed, in seconds: `describe` offers check-1 only
    /// while it answers.
    #[arg(long, env = "AGENTPROCESS_EVALUATOR_PROBE_SECONDS", default_value = "30", value_parser = seconds)]
    pub evaluator_probe_seconds: Seconds,
    /// `limits.checkPass`: the yes-probability at or above which a yes/no answer
    /// passes, where a question sets none.
    #[arg(long, env = "AGENTPROCESS_CHECK_PASS", default_value_t = agentprocess_engine::CheckLimits::DEFAULT.pass, value_parser = fraction)]
    pub check_pass: f64,
    /// `limits.checkFail`: the yes-probability below which a yes/no answer fails, where
    /// a question sets none; between it and the pass threshold the answer is unsure.
    /// None by default: below the pass threshold fails.
    #[arg(long, env = "AGENTPROCESS_CHECK_FAIL", value_parser = fraction)]
    pub check_fail: Option<f64>,
    /// `limits.checkConfidence`: the confidence below which a choice or rubric answer
    /// is unsure, where a question sets none.
    #[arg(long, env = "AGENTPROCESS_CHECK_CONFIDENCE", default_value_t = agentprocess_engine::CheckLimits::DEFAULT.confidence, value_parser = fraction)]
    pub check_confidence: f64,
    /// `limits.checkStateBytes`: how much run data the evaluator is shown, in bytes of
    /// JSON; steps are left out, oldest first, to fit.
    #[arg(long, env = "AGENTPROCESS_CHECK_STATE_BYTES", default_value_t = agentprocess_engine::CheckLimits::DEFAULT.state_bytes)]
    pub check_state_bytes: usize,
}

impl CheckArgs {
    /// The limits `describe` publishes and checks use.
    pub fn limits(&self) -> agentprocess_engine::CheckLimits {
        agentprocess_engine::CheckLimits {
            pass: self.check_pass,
            fail: self.check_fail,
            confidence: self.check_confidence,
            state_bytes: self.check_state_bytes,
        }
    }

    /// The evaluator, when one is configured; its API key read from its file or
    /// `AGENTPROCESS_EVALUATOR_API_KEY`.
    pub fn evaluator(&self) -> anyhow::Result<Option<EvaluatorConfig>> {
        use anyhow::Context as _;
        let (Some(url), Some(model)) = (&self.evaluator_url, &self.evaluator_model) else {
            return Ok(None);
        };
        let api_key = match &self.evaluator_api_key_file {
            Some(file) => Some(
                std::fs::read_to_string(file)
                    .with_context(|| format!("cannot read the evaluator's API key from {}", file.display()))?
                    .trim()
                    .to_owned(),
            ),
            None => std::env::var("AGENTPROCESS_EVALUATOR_API_KEY").ok(),
        }
        .filter(|key| !key.is_empty());
        Ok(Some(EvaluatorConfig {
            settings: agentprocess_evaluator::OpenAiSettings {
                base_url: url.clone(),
                model: model.clone(),
                api_key,
                timeout: self.evaluator_timeout_seconds.0,
                concurrency: usize::from(self.evaluator_concurrency),
                top_logprobs: 10,
            },
            probe_every: self.evaluator_probe_seconds.0,
        }))
    }
}

/// A probability or confidence: 0 to 1.
fn fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        _ => Err(format!("{text:?}: must be a number from 0 to 1")),
    }
}

/// Where timers are queued.
#[derive(Debug, Clone, clap::Args)]
pub struct QueueArgs {
    /// Redis holding the timer queue (redis://host:port/db). Without it, timers are
    /// fired from the database rows by a process that runs the scheduler. With
    /// --redis-cluster, one or more of the cluster's nodes, comma-separated.
    #[arg(long, env = "AGENTPROCESS_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// The Redis URL names nodes of a Redis Cluster: the partitions' keys carry hash
    /// tags (`<prefix>:{<partition>}`) and spread over the cluster's nodes. Give every
    /// process of a deployment the same setting.
    #[arg(long, env = "AGENTPROCESS_REDIS_CLUSTER")]
    pub redis_cluster: bool,
    /// Prefix of the timer queue's Redis keys (`<prefix>:<partition>`).
    #[arg(long, env = "AGENTPROCESS_REDIS_PREFIX", default_value = "agentprocess:timers")]
    pub redis_prefix: String,
    /// Sorted sets the timers are spread over, by organization (for Redis Cluster).
    /// Every process of a deployment needs the same value.
    #[arg(long, env = "AGENTPROCESS_REDIS_PARTITIONS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub redis_partitions: u16,
    /// The longest a Redis call may take, in seconds.
    #[arg(long, env = "AGENTPROCESS_REDIS_TIMEOUT_SECONDS", default_value = "2", value_parser = seconds)]
    pub redis_timeout_seconds: Seconds,
}

impl QueueArgs {
    /// The Redis queue's settings, if a URL is given.
    pub fn settings(&self) -> Option<RedisSettings> {
        let url = self.redis_url.as_ref()?;
        Some(RedisSettings {
            cluster: self.redis_cluster,
            prefix: self.redis_prefix.clone(),
            partitions: self.redis_partitions,
            timeout: self.redis_timeout_seconds.0,
            ..RedisSettings::new(url.clone())
        })
    }
}

/// How timers are fired and webhooks delivered.
#[derive(Debug, Clone, clap::Args)]
pub struct BackgroundArgs {
    /// Timers taken per scheduler pass.
    #[arg(long, env = "AGENTPROCESS_TIMER_BATCH", default_value_t = 256)]
    pub timer_batch: usize,
    /// Transactions applying timers at once.
    #[arg(long, env = "AGENTPROCESS_TIMER_CONCURRENCY", default_value_t = 8)]
    pub timer_concurrency: usize,
    /// Timers applied in one transaction (each under its run's lock).
    #[arg(long, env = "AGENTPROCESS_TIMERS_PER_TRANSACTION", default_value_t = 8)]
    pub timers_per_transaction: usize,
    /// How long a taken timer is hidden from other schedulers, in seconds; if its
    /// scheduler dies, the timer is due again after this.
    #[arg(long, env = "AGENTPROCESS_TIMER_HOLD_SECONDS", default_value_t = Seconds(SchedulerSettings::default().hold), value_parser = seconds)]
    pub timer_hold_seconds: Seconds,
    /// The longest pause between scheduler passes, in seconds.
    #[arg(long, env = "AGENTPROCESS_TIMER_POLL_SECONDS", default_value_t = Seconds(SchedulerSettings::default().poll), value_parser = seconds)]
    pub timer_poll_seconds: Seconds,
    /// How often unfired timer rows are re-added to the queue, in seconds: the most a
    /// lost queue entry delays its timer.
    #[arg(long, env = "AGENTPROCESS_RECONCILE_SECONDS", default_value_t = Seconds(SchedulerSettings::default().reconcile), value_parser = seconds)]
    pub reconcile_seconds: Seconds,
    /// How long one webhook attempt or chat post may take, answer included, in
    /// seconds. Short on purpose: the endpoints are the tenants' own, and a post that
    /// times out is retried later (email has --smtp-timeout-seconds).
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_TIMEOUT_SECONDS", default_value_t = Seconds(WebhookSettings::default().timeout), value_parser = seconds)]
    pub webhook_timeout_seconds: Seconds,
    /// How long connecting for one webhook attempt or chat post may take, in seconds
    /// (at most --webhook-timeout-seconds).
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_CONNECT_TIMEOUT_SECONDS", default_value_t = Seconds(WebhookSettings::default().connect_timeout), value_parser = seconds)]
    pub webhook_connect_timeout_seconds: Seconds,
    /// The wait before a webhook's second attempt, in seconds; it doubles after each.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_RETRY_SECONDS", default_value_t = Seconds(WebhookSettings::default().retry_base), value_parser = seconds)]
    pub webhook_retry_seconds: Seconds,
    /// The longest wait between webhook attempts, in seconds.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_RETRY_MAX_SECONDS", default_value_t = Seconds(WebhookSettings::default().retry_max), value_parser = seconds)]
    pub webhook_retry_max_seconds: Seconds,
    /// Attempts before a webhook delivery is given up.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_MAX_ATTEMPTS", default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..))]
    pub webhook_max_attempts: u32,
    /// Webhook deliveries posted at once; as many messages to people sent at once.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_CONCURRENCY", default_value_t = WebhookSettings::default().concurrency)]
    pub webhook_concurrency: usize,
    /// Of those, how many one organization may have under way: an organization whose
    /// endpoint is slow or never answers holds this many, and the rest stay for the
    /// others.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_CONCURRENCY_PER_ORGANIZATION", default_value_t = WebhookSettings::default().per_organization, value_parser = at_least_one)]
    pub webhook_concurrency_per_organization: usize,
    /// The longest pause between webhook passes, in seconds.
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_POLL_SECONDS", default_value_t = Seconds(WebhookSettings::default().poll), value_parser = seconds)]
    pub webhook_poll_seconds: Seconds,
    /// Let webhooks go to loopback, private and link-local addresses (refused by
    /// default, so an endpoint cannot reach into the service's own network).
    #[arg(long, env = "AGENTPROCESS_WEBHOOK_ALLOW_PRIVATE_NETWORKS")]
    pub webhook_allow_private_networks: bool,
    /// Let webhooks and chat hooks be plain http:// URLs; only https:// otherwise, since
    /// a hook's URL is a credential (a chat hook's URL is its secret, a delivery carries
    /// its signature and run data) that plain http shows to anyone on the way. Apart
    /// from --webhook-allow-private-networks, which says where hooks may go, not how:
    /// an internal receiver can still have TLS. Give it to the API processes (which
    /// check URLs when they are set) and the schedulers (which check them again before
    /// each post, so a plain http hook kept from before is not posted to). For
    /// development and tests on loopback (`agentprocess dev` allows it).
    #[arg(long, env = "AGENTPROCESS_ALLOW_PLAIN_HTTP_HOOKS")]
    pub allow_plain_http_hooks: bool,
    /// How email to people is sent.
    #[command(flatten)]
    pub mail: MailArgs,
}

/// How email to people is sent (work waiting, overdue, escalations, runs ended).
#[derive(Debug, Clone, clap::Args)]
pub struct MailArgs {
    /// The SMTP server: `smtps://host:465` (TLS), `smtp://host:587?tls=required`
    /// (STARTTLS), or `smtp://host:25` (unencrypted: a trusted network only); a user name
    /// may be given (`smtps://user@host`). Without it no email is sent.
    #[arg(long, env = "AGENTPROCESS_SMTP_URL", hide_env_values = true, requires = "mail_from")]
    pub smtp_url: Option<String>,
    /// A file holding the SMTP user's password (a mounted secret).
    #[arg(long, env = "AGENTPROCESS_SMTP_PASSWORD_FILE", requires = "smtp_url")]
    pub smtp_password_file: Option<std::path::PathBuf>,
    /// The sender of email, such as `Processes <processes@example.com>`.
    #[arg(long, env = "AGENTPROCESS_MAIL_FROM", requires = "smtp_url")]
    pub mail_from: Option<String>,
    /// How long connecting to the SMTP server, and each of its answers, may take, in
    /// seconds. Longer than a chat post's: the SMTP server is the operator's own.
    #[arg(long, env = "AGENTPROCESS_SMTP_TIMEOUT_SECONDS", default_value_t = Seconds(agentprocess_service::MailSettings::DEFAULT_TIMEOUT), value_parser = seconds)]
    pub smtp_timeout_seconds: Seconds,
}

impl MailArgs {
    /// The settings these flags give, checked; `None` without `--smtp-url`.
    pub fn settings(&self) -> anyhow::Result<Option<agentprocess_service::MailSettings>> {
        let (Some(url), Some(from)) = (&self.smtp_url, &self.mail_from) else {
            return Ok(None);
        };
        let password = self
            .smtp_password_file
            .as_ref()
            .map(|path| {
                std::fs::read_to_string(path)
                    .map(|text| text.trim_end_matches(['\r', '\n']).to_owned())
                    .map_err(|error| anyhow::anyhow!("--smtp-password-file {}: {error}", path.display()))
            })
            .transpose()?;
        let settings = agentprocess_service::MailSettings {
            url: url.clone(),
            password,
            from: from.clone(),
            timeout: self.smtp_timeout_seconds.0,
        };
        let issues = settings.issues();
        anyhow::ensure!(issues.is_empty(), "{}", issues.join("; "));
        Ok(Some(settings))
    }
}

impl BackgroundArgs {
    /// Whether hooks may post over plain http, and the warning that says so.
    pub fn plain_http_hooks(&self) -> (agentprocess_service::PlainHttpHooks, Option<String>) {
        let warning = self.allow_plain_http_hooks.then(|| {
            "--allow-plain-http-hooks: webhooks and chat hooks may be plain http://, so their URLs and what is \
             posted cross the network readable; never on a public server"
                .to_owned()
        });
        (
            agentprocess_service::PlainHttpHooks::allowed_if(self.allow_plain_http_hooks),
            warning,
        )
    }

    /// The settings these flags give.
    pub fn background(&self) -> anyhow::Result<Background> {
        Ok(Background {
            scheduler: SchedulerSettings {
                batch: self.timer_batch.max(1),
                concurrency: self.timer_concurrency.max(1),
                per_transaction: self.timers_per_transaction.max(1),
                hold: self.timer_hold_seconds.0,
                poll: self.timer_poll_seconds.0,
                reconcile: self.reconcile_seconds.0,
            },
            webhooks: WebhookSettings {
                batch: WebhookSettings::default().batch,
                concurrency: self.webhook_concurrency.max(1),
                per_organization: self.webhook_concurrency_per_organization.max(1),
                timeout: self.webhook_timeout_seconds.0,
                connect_timeout: self.webhook_connect_timeout_seconds.0,
                retry_base: self.webhook_retry_seconds.0,
                retry_max: self.webhook_retry_max_seconds.0,
                max_attempts: self.webhook_max_attempts,
                poll: self.webhook_poll_seconds.0,
                allow_private_networks: self.webhook_allow_private_networks,
            },
            mail: self.mail.settings()?,
        })
    }
}

/// Where uploaded evidence is kept: a directory, or an S3 bucket.
#[derive(Debug, Clone, clap::Args)]
pub struct StorageArgs {
    /// Directory for uploaded evidence files (shared by every API process). Give this
    /// or --s3-bucket.
    #[arg(
        long,
        env = "AGENTPROCESS_BLOB_DIR",
        required_unless_present = "s3_bucket",
        conflicts_with = "s3_bucket"
    )]
    pub blob_dir: Option<std::path::PathBuf>,
    /// S3 bucket for uploaded evidence.
    #[arg(long, env = "AGENTPROCESS_S3_BUCKET")]
    pub s3_bucket: Option<String>,
    /// Prefix of every object key (`<prefix><organization>/<file id>`).
    #[arg(long, env = "AGENTPROCESS_S3_PREFIX", default_value = "evidence/")]
    pub s3_prefix: String,
    /// The bucket's region.
    #[arg(long, env = "AGENTPROCESS_S3_REGION", default_value = "us-east-1")]
    pub s3_region: String,
    /// An S3-compatible endpoint (http://host:port); AWS's own when absent.
    #[arg(long, env = "AGENTPROCESS_S3_ENDPOINT")]
    pub s3_endpoint: Option<String>,
    /// Path-style addressing (endpoint/bucket/key), for S3-compatible stores.
    #[arg(long, env = "AGENTPROCESS_S3_PATH_STYLE")]
    pub s3_path_style: bool,
    /// Access key id for the bucket. Without keys, credentials come from AWS's default
    /// chain (AWS_* environment, EKS web identity, ECS task role, instance profile).
    #[arg(long, env = "AGENTPROCESS_S3_ACCESS_KEY_ID", hide_env_values = true)]
    pub s3_access_key_id: Option<String>,
    /// Secret access key for the bucket.
    #[arg(long, env = "AGENTPROCESS_S3_SECRET_ACCESS_KEY", hide_env_values = true)]
    pub s3_secret_access_key: Option<String>,
    /// Send checksums only where S3 requires them (for stores that refuse the SDK's
    /// default checksum headers).
    #[arg(long, env = "AGENTPROCESS_S3_CHECKSUMS_WHEN_REQUIRED")]
    pub s3_checksums_when_required: bool,
    /// The longest one S3 call may take, in seconds, retries included.
    #[arg(long, env = "AGENTPROCESS_S3_TIMEOUT_SECONDS", default_value = "10", value_parser = seconds)]
    pub s3_timeout_seconds: Seconds,
    /// Create the bucket at start if it does not exist (for development and tests).
    #[arg(long, env = "AGENTPROCESS_S3_CREATE_BUCKET")]
    pub s3_create_bucket: bool,
    /// Uploads no submission or decision cited are removed once this old, in seconds
    /// (default 7 days).
    #[arg(long, env = "AGENTPROCESS_UNCITED_UPLOAD_SECONDS", default_value_t = Seconds(agentprocess_service::SweepSettings::default().uncited_uploads), value_parser = seconds)]
    pub uncited_upload_seconds: Seconds,
    /// How often to sweep: remove uncited uploads and purge what is past its
    /// retention, in seconds.
    #[arg(long, env = "AGENTPROCESS_UPLOAD_SWEEP_SECONDS", default_value_t = Seconds(agentprocess_service::SweepSettings::default().interval), value_parser = seconds)]
    pub upload_sweep_seconds: Seconds,
    /// The replay window: how long a write's requestId is remembered with its result,
    /// in seconds (default a day). A requestId older than this is a new request.
    #[arg(long, env = "AGENTPROCESS_REQUEST_RETENTION_SECONDS", default_value_t = Seconds(agentprocess_service::SweepSettings::default().retention.requests), value_parser = seconds)]
    pub request_retention_seconds: Seconds,
    /// How long a delivered or abandoned webhook delivery and its notification are
    /// kept, in seconds (default 7 days).
    #[arg(long, env = "AGENTPROCESS_NOTIFICATION_RETENTION_SECONDS", default_value_t = Seconds(agentprocess_service::SweepSettings::default().retention.notifications), value_parser = seconds)]
    pub notification_retention_seconds: Seconds,
}

impl StorageArgs {
    /// What the sweeper removes, and when.
    pub fn sweep(&self) -> agentprocess_service::SweepSettings {
        agentprocess_service::SweepSettings {
            uncited_uploads: self.uncited_upload_seconds.0,
            retention: agentprocess_service::Retention {
                requests: self.request_retention_seconds.0,
                notifications: self.notification_retention_seconds.0,
            },
            interval: self.upload_sweep_seconds.0,
        }
    }

    /// The store these flags name.
    pub fn storage(&self) -> anyhow::Result<Storage> {
        if let Some(bucket) = &self.s3_bucket {
            let keys = match (&self.s3_access_key_id, &self.s3_secret_access_key) {
                (Some(access_key_id), Some(secret_access_key)) => Some(agentprocess_blobs::S3Keys {
                    access_key_id: access_key_id.clone(),
                    secret_access_key: secret_access_key.clone(),
                }),
                (None, None) => None,
                _ => anyhow::bail!("give both --s3-access-key-id and --s3-secret-access-key, or neither"),
            };
            return Ok(Storage::S3 {
                settings: agentprocess_blobs::S3Settings {
                    bucket: bucket.clone(),
                    prefix: self.s3_prefix.clone(),
                    region: self.s3_region.clone(),
                    endpoint: self.s3_endpoint.clone(),
                    path_style: self.s3_path_style,
                    keys,
                    checksums_when_required: self.s3_checksums_when_required,
                    timeout: self.s3_timeout_seconds.0,
                },
                create_bucket: self.s3_create_bucket,
            });
        }
        match &self.blob_dir {
            Some(dir) => Ok(Storage::Dir(dir.clone())),
            None => anyhow::bail!("give --blob-dir or --s3-bucket"),
        }
    }
}

/// The limits of every organization, so one cannot take what the others need (0: no
/// limit). The platform's operators grant one organization others with `agentprocess
/// admin set-limits`; its admins may lower them (`PUT /api/v1/organization/limits`).
/// Rates and calls in progress hold in each API process; open runs and stored bytes
/// over the organization.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// Tool calls and REST requests per second of one organization. A bucket holds two
    /// seconds' worth, so bursts pass.
    #[arg(long, env = "AGENTPROCESS_ORG_CALLS_PER_SECOND", default_value_t = DEFAULT_LIMITS.calls_per_second.unwrap_or(0))]
    pub org_calls_per_second: u64,
    /// Calls per second of each identity (agent or person) of an organization.
    #[arg(long, env = "AGENTPROCESS_IDENTITY_CALLS_PER_SECOND", default_value_t = DEFAULT_LIMITS.identity_calls_per_second.unwrap_or(0))]
    pub identity_calls_per_second: u64,
    /// Writes (start_run, claim, submit, upload and the other tools that change
    /// something; unsafe REST requests) per second of one organization.
    #[arg(long, env = "AGENTPROCESS_ORG_WRITES_PER_SECOND", default_value_t = DEFAULT_LIMITS.writes_per_second.unwrap_or(0))]
    pub org_writes_per_second: u64,
    /// Calls of one organization in progress at once; a call waits up to two seconds for
    /// a place. Default: 3, and at most three quarters of --max-connections, so one
    /// organization's transactions cannot take the database's CPUs (or every
    /// connection) from the others. Raise it where one organization has the server to
    /// itself.
    #[arg(long, env = "AGENTPROCESS_ORG_CONCURRENT_CALLS")]
    pub org_concurrent_calls: Option<u64>,
    /// Runs of one organization not yet ended or cancelled; `start_run` past it
    /// answers `retry`.
    #[arg(long, env = "AGENTPROCESS_ORG_OPEN_RUNS", default_value_t = DEFAULT_LIMITS.open_runs.unwrap_or(0))]
    pub org_open_runs: u64,
    /// Bytes of uploaded files one organization keeps; an upload past it answers
    /// `retry`.
    #[arg(long, env = "AGENTPROCESS_ORG_STORED_BYTES", default_value_t = DEFAULT_LIMITS.stored_bytes.unwrap_or(0))]
    pub org_stored_bytes: u64,
}

impl LimitArgs {
    /// The limits, for a process with `max_connections` database connections.
    pub fn limits(&self, max_connections: u32) -> agentprocess_service::LimitValues {
        let limit = |value: u64| (value > 0).then_some(value);
        let concurrent = self.org_concurrent_calls.unwrap_or_else(|| {
            let pool = (u64::from(max_connections) * 3 / 4).max(1);
            DEFAULT_LIMITS
                .concurrent_calls
                .map_or(pool, |default| default.min(pool))
        });
        agentprocess_service::LimitValues {
            calls_per_second: limit(self.org_calls_per_second),
            identity_calls_per_second: limit(self.identity_calls_per_second),
            writes_per_second: limit(self.org_writes_per_second),
            concurrent_calls: limit(concurrent),
            open_runs: limit(self.org_open_runs),
            stored_bytes: limit(self.org_stored_bytes),
        }
    }
}

/// Flags every server process takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ProcessArgs {
    /// Let `POST /test/clock` move this process's clock forward, for end-to-end tests
    /// of waits and timeouts. Never in production.
    #[arg(long, hide = true)]
    pub test_clock: bool,
    /// Log lines as JSON, with trace and span ids.
    #[arg(long, env = "AGENTPROCESS_LOG_JSON")]
    pub log_json: bool,
    /// Serve metrics in the Prometheus text format at /metrics on this address
    /// (0.0.0.0:9464, say); off by default. OTLP export is set by the OTEL_*
    /// environment variables.
    #[arg(long, env = "AGENTPROCESS_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Organizations (by id, comma-separated, at most 50) that metrics name in
    /// `agentprocess.organization`; every other organization is counted as `other`,
    /// so the number of series stays bounded however many sign up. Traces name every
    /// organization.
    #[arg(long, env = "AGENTPROCESS_METRICS_ORGANIZATIONS", value_delimiter = ',')]
    pub metrics_organizations: Vec<String>,
    /// After SIGTERM and the shutdown delay, how long calls in flight may take to
    /// finish before the process exits anyway, in seconds. A second signal exits at once.
    #[arg(long, env = "AGENTPROCESS_SHUTDOWN_GRACE_SECONDS", default_value = "25", value_parser = seconds)]
    pub shutdown_grace_seconds: Seconds,
    /// After SIGTERM, how long to go on serving while /readyz answers 503, in seconds,
    /// so load balancers stop sending calls before the listener closes.
    #[arg(long, env = "AGENTPROCESS_SHUTDOWN_DELAY_SECONDS", default_value = "0", value_parser = seconds_or_zero)]
    pub shutdown_delay_seconds: Seconds,
    /// The longest a call, or one pass of a background loop, may take, in seconds; past
    /// it the work is dropped and a tool call is answered `retry` (other requests 503),
    /// so no caller waits for ever on a database that stopped answering. Keep it above
    /// --evaluator-timeout-seconds.
    #[arg(long, env = "AGENTPROCESS_CALL_DEADLINE_SECONDS", default_value = "60", value_parser = seconds)]
    pub call_deadline_seconds: Seconds,
}

impl ProcessArgs {
    /// The process's configuration.
    pub fn config(&self) -> ProcessConfig {
        ProcessConfig {
            log_json: self.log_json,
            metrics_listen: self.metrics_listen,
            metrics_organizations: self.metrics_organizations.clone(),
            shutdown_grace: self.shutdown_grace_seconds.0,
            shutdown_delay: self.shutdown_delay_seconds.0,
            test_clock: self.test_clock,
        }
    }
}

/// A duration as a flag spells it: a number of seconds, fractions allowed. It is
/// written back the same way, so a flag's default can be the settings' own value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seconds(pub Duration);

impl std::fmt::Display for Seconds {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}", self.0.as_secs_f64())
    }
}

/// A count of one or more.
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(count) => Ok(count),
        Err(_) => Err(format!("{text:?} is not a whole number")),
    }
}

/// A number of seconds, zero allowed.
fn seconds_or_zero(text: &str) -> Result<Seconds, String> {
    if text.trim().parse::<f64>() == Ok(0.0) {
        return Ok(Seconds(Duration::ZERO));
    }
    seconds(text)
}

/// An access token's lifetime: 60 to 3600 seconds.
fn access_token_seconds(text: &str) -> Result<Seconds, String> {
    let lifetime = seconds(text)?;
    if (60..=3600).contains(&lifetime.0.as_secs()) {
        Ok(lifetime)
    } else {
        Err("use 60 to 3600 seconds: access tokens live at most an hour".to_owned())
    }
}

/// A positive number of seconds, fractions allowed.
fn seconds(text: &str) -> Result<Seconds, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(value > 0.0 && value <= 86_400.0 * 365.0) {
        return Err(format!("{text:?}: must be above 0 and at most a year"));
    }
    Ok(Seconds(Duration::from_secs_f64(value)))
}

/// The key that seals secrets kept in the database, and the keys it replaced.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SealArgs {
    /// Key (base64, at least 32 bytes) that seals secrets kept in the database:
    /// organizations' IdP client secrets, webhook signing secrets, and the claim tokens
    /// recorded for replays. Every API process and scheduler shares it. Without it, the
    /// API uses a key derived from --url-secret (and changing that secret then makes
    /// sealed secrets unreadable).
    #[arg(long, env = "AGENTPROCESS_SECRET_KEY", hide_env_values = true)]
    pub secret_key: Option<String>,
    /// A key --secret-key replaced (base64; repeat, or separate with commas): what it
    /// sealed still opens, and `agentprocess admin reseal` seals it again with the
    /// current key, after which the old key can be dropped.
    #[arg(
        long = "previous-secret-key",
        env = "AGENTPROCESS_PREVIOUS_SECRET_KEYS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub previous_secret_keys: Vec<String>,
}

impl SealArgs {
    /// The key that seals secrets at rest: `--secret-key`, else `fallback_key` (the
    /// embedded mode keeps one in its data folder; the API derives one from
    /// `--url-secret`); without either, an error. It opens what the previous keys sealed.
    pub fn key(&self, fallback_key: Option<&[u8]>) -> anyhow::Result<agentprocess_auth::SecretKey> {
        let material = match (&self.secret_key, fallback_key) {
            (Some(text), _) => decode_key(text, "--secret-key")?,
            (None, Some(key)) => key.to_vec(),
            (None, None) => {
                anyhow::bail!("give --secret-key (base64, at least 32 bytes): it seals secrets kept in the database")
            }
        };
        let previous = self
            .previous_secret_keys
            .iter()
            .map(|text| {
                let material = decode_key(text, "--previous-secret-key")?;
                agentprocess_auth::SecretKey::new(&material)
                    .map_err(|error| anyhow::anyhow!("--previous-secret-key: {error}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let key =
            agentprocess_auth::SecretKey::new(&material).map_err(|error| anyhow::anyhow!("--secret-key: {error}"))?;
        Ok(key.with_previous(previous))
    }

    /// The API's key: `--secret-key`, else one derived from its URL-signing secret
    /// (the two uses never share the key itself).
    pub fn key_or_derived_from(&self, url_secret: &[u8]) -> anyhow::Result<agentprocess_auth::SecretKey> {
        self.key(Some(&agentprocess_auth::secrets::derived_key_material(url_secret)))
    }

    /// For a process beside the API (the scheduler): the API's key, given as
    /// `--secret-key` or, where the API derives its key, as the API's `url_secret`
    /// (base64). Without either, a throwaway key: what the API sealed does not open,
    /// and webhook deliveries fail, recorded as such, until one is given.
    pub fn key_of_the_api(&self, url_secret: Option<&str>) -> anyhow::Result<agentprocess_auth::SecretKey> {
        match url_secret {
            Some(text) => self.key_or_derived_from(&decode_key(text, "--url-secret")?),
            None if self.secret_key.is_some() => self.key(None),
            None => self.key(Some(&agentprocess_auth::secrets::random_bytes::<32>())),
        }
    }
}

fn decode_key(text: &str, flag: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|_| anyhow::anyhow!("{flag} must be base64"))
}

/// Identity: who may sign up, how long sessions last, the key that seals secrets.
#[derive(Debug, Clone, clap::Args)]
pub struct AuthArgs {
    /// The key that seals secrets kept in the database.
    #[command(flatten)]
    pub seal: SealArgs,
    /// Who may sign up an organization: `open`, `invite` (with a sign-up code) or
    /// `closed` (`agentprocess admin create-org` only).
    #[arg(long, env = "AGENTPROCESS_SIGNUP", default_value = "closed")]
    pub signup: agentprocess_auth::SignupPolicy,
    /// A sign-up code accepted when sign-up is `invite` (repeat, or separate with commas).
    #[arg(
        long = "signup-code",
        env = "AGENTPROCESS_SIGNUP_CODES",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub signup_codes: Vec<String>,
    /// A browser session unused this long ends.
    #[arg(long, env = "AGENTPROCESS_SESSION_IDLE_SECONDS", default_value_t = Seconds(agentprocess_auth::AuthSettings::default().session_idle), value_parser = seconds)]
    pub session_idle_seconds: Seconds,
    /// A browser session ends this long after sign-in, used or not.
    #[arg(long, env = "AGENTPROCESS_SESSION_ABSOLUTE_SECONDS", default_value_t = Seconds(agentprocess_auth::AuthSettings::default().session_absolute), value_parser = seconds)]
    pub session_absolute_seconds: Seconds,
    /// A person decides in the browser only this long after signing in; later, their
    /// identity provider signs them in again first (`max_age=0`).
    #[arg(long, env = "AGENTPROCESS_DECIDE_SIGN_IN_SECONDS", default_value_t = Seconds(agentprocess_auth::AuthSettings::default().decide_sign_in_within), value_parser = seconds)]
    pub decide_sign_in_seconds: Seconds,
    /// How long an OAuth access token for `/mcp` lives (at most an hour).
    #[arg(long, env = "AGENTPROCESS_ACCESS_TOKEN_SECONDS", default_value_t = Seconds(agentprocess_auth::AuthSettings::default().access_token_lifetime), value_parser = access_token_seconds)]
    pub access_token_seconds: Seconds,
    /// Let identity providers on loopback or private addresses, or on plain http, be
    /// used. For development and tests only: otherwise a sign-up form could aim the
    /// server at its own network.
    #[arg(long, env = "AGENTPROCESS_OIDC_ALLOW_PRIVATE_ISSUERS")]
    pub oidc_allow_private_issuers: bool,
    /// A host (`host` or `host:port`) an identity provider may be on although its
    /// address is private, such as a provider inside your own network (repeat, or
    /// comma-separate). Still https only; every other provider must be public.
    #[arg(
        long = "oidc-allow-host",
        env = "AGENTPROCESS_OIDC_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub oidc_allow_hosts: Vec<String>,
    /// A PEM file of root certificates trusted, beside the public ones, when talking to
    /// identity providers (for a private CA).
    #[arg(long, env = "AGENTPROCESS_OIDC_CA_FILE")]
    pub oidc_ca_file: Option<std::path::PathBuf>,
    /// How long one request to an identity provider may take.
    #[arg(long, env = "AGENTPROCESS_OIDC_TIMEOUT_SECONDS", default_value = "10", value_parser = seconds)]
    pub oidc_timeout_seconds: Seconds,
    /// A DNS server (`ip:port`) to check domain ownership against, instead of the
    /// system's (repeat, or comma-separate).
    #[arg(long = "dns-nameserver", env = "AGENTPROCESS_DNS_NAMESERVERS", value_delimiter = ',')]
    pub dns_nameservers: Vec<std::net::SocketAddr>,
    /// Do not let MCP clients name themselves by the URL of a client metadata document
    /// (they then register, or use a client an admin made).
    #[arg(long, env = "AGENTPROCESS_NO_CLIENT_METADATA_DOCUMENTS")]
    pub no_client_metadata_documents: bool,
    /// A host (`host` or `host:port`) whose client metadata documents may be fetched
    /// from a private or loopback address (repeat, or comma-separate). Others must
    /// resolve to public addresses.
    #[arg(
        long = "client-metadata-allow-host",
        env = "AGENTPROCESS_CLIENT_METADATA_ALLOW_HOSTS",
        value_delimiter = ','
    )]
    pub client_metadata_allow_hosts: Vec<String>,
    /// A PEM file of root certificates trusted, beside the public ones, when fetching
    /// client metadata documents (for a private CA).
    #[arg(long, env = "AGENTPROCESS_CLIENT_METADATA_CA_FILE")]
    pub client_metadata_ca_file: Option<std::path::PathBuf>,
    /// How many clients one network address may register (RFC 7591) per hour on each
    /// API process; fifty times as many from everyone. Behind a proxy, name it with
    /// --trusted-proxies, or every client has the proxy's address.
    #[arg(long, env = "AGENTPROCESS_CLIENT_REGISTRATIONS_PER_HOUR", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub client_registrations_per_hour: u32,
    /// What anyone may do without an account.
    #[command(flatten)]
    pub anonymous: AnonymousLimitArgs,
    /// How long fetching one client metadata document may take.
    #[arg(long, env = "AGENTPROCESS_CLIENT_METADATA_TIMEOUT_SECONDS", default_value = "5", value_parser = seconds)]
    pub client_metadata_timeout_seconds: Seconds,
}

/// What anyone may do without an account, per ten minutes on each API process. Behind
/// a proxy, name it with --trusted-proxies, or every client has the proxy's address.
#[derive(Debug, Clone, clap::Args)]
pub struct AnonymousLimitArgs {
    /// Sign-ins one network address may start per ten minutes (each sends the server
    /// to an identity provider).
    #[arg(long, env = "AGENTPROCESS_SIGN_INS_PER_ADDRESS", default_value_t = agentprocess_auth::AnonymousLimits::default().sign_ins_per_address, value_parser = clap::value_parser!(u32).range(1..))]
    pub sign_ins_per_address: u32,
    /// Sign-ins of one organization the server tries at its provider first, per ten
    /// minutes; past it, sign-ins go straight to the provider (nobody can lock an
    /// organization out by spending this).
    #[arg(long, env = "AGENTPROCESS_SIGN_INS_PER_ORGANIZATION", default_value_t = agentprocess_auth::AnonymousLimits::default().sign_ins_per_organization, value_parser = clap::value_parser!(u32).range(1..))]
    pub sign_ins_per_organization: u32,
    /// Failed token requests one network address may make per ten minutes; then 429.
    #[arg(long, env = "AGENTPROCESS_TOKEN_FAILURES_PER_ADDRESS", default_value_t = agentprocess_auth::AnonymousLimits::default().token_failures_per_address, value_parser = clap::value_parser!(u32).range(1..))]
    pub token_failures_per_address: u32,
    /// Failed token requests for one client id from one address per ten minutes; then
    /// 429 (for that address: nobody locks a client out for others).
    #[arg(long, env = "AGENTPROCESS_TOKEN_FAILURES_PER_CLIENT", default_value_t = agentprocess_auth::AnonymousLimits::default().token_failures_per_client, value_parser = clap::value_parser!(u32).range(1..))]
    pub token_failures_per_client: u32,
}

impl AnonymousLimitArgs {
    fn limits(&self) -> agentprocess_auth::AnonymousLimits {
        agentprocess_auth::AnonymousLimits {
            sign_ins_per_address: self.sign_ins_per_address,
            sign_ins_per_organization: self.sign_ins_per_organization,
            token_failures_per_address: self.token_failures_per_address,
            token_failures_per_client: self.token_failures_per_client,
        }
    }
}

/// The PEM bundle a `flag` names, as the list of bundles the outbound clients take.
fn pem_file(flag: &str, path: Option<&std::path::Path>) -> anyhow::Result<Vec<Vec<u8>>> {
    path.map(|path| std::fs::read(path).map_err(|error| anyhow::anyhow!("{flag} {}: {error}", path.display())))
        .into_iter()
        .collect()
}

impl AuthArgs {
    /// Identity's configuration; refused when `--signup invite` has no code or a
    /// certificate file cannot be read.
    pub fn identity(&self) -> anyhow::Result<IdentityConfig> {
        if self.signup == agentprocess_auth::SignupPolicy::Invite && self.signup_codes.is_empty() {
            anyhow::bail!("--signup invite needs at least one --signup-code");
        }
        let metadata_documents = if self.no_client_metadata_documents {
            None
        } else {
            let mut settings = agentprocess_auth::metadata_documents::MetadataDocumentSettings::default();
            settings.fetch.allow_hosts = self.client_metadata_allow_hosts.clone();
            settings.fetch.extra_roots_pem =
                pem_file("--client-metadata-ca-file", self.client_metadata_ca_file.as_deref())?;
            settings.fetch.timeout = self.client_metadata_timeout_seconds.0;
            Some(settings)
        };
        Ok(IdentityConfig {
            settings: agentprocess_auth::AuthSettings {
                signup: self.signup,
                signup_code_hashes: self
                    .signup_codes
                    .iter()
                    .map(|code| agentprocess_auth::secrets::sha256_hex(code.trim().as_bytes()))
                    .collect(),
                session_idle: self.session_idle_seconds.0,
                session_absolute: self.session_absolute_seconds.0,
                dns_nameservers: self.dns_nameservers.clone(),
                access_token_lifetime: self.access_token_seconds.0,
                client_registrations_per_hour: self.client_registrations_per_hour,
                anonymous: self.anonymous.limits(),
                decide_sign_in_within: self.decide_sign_in_seconds.0,
            },
            allow_private_issuers: self.oidc_allow_private_issuers,
            oidc_allow_hosts: self.oidc_allow_hosts.clone(),
            oidc_extra_roots_pem: pem_file("--oidc-ca-file", self.oidc_ca_file.as_deref())?,
            oidc_timeout: self.oidc_timeout_seconds.0,
            metadata_documents,
        })
    }
}

/// The flags of an API process.
#[derive(Debug, clap::Args)]
pub struct ApiArgs {
    /// postgres://user:password@host/database (or sqlite://path?mode=rwc).
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Address to listen on.
    #[arg(long, env = "AGENTPROCESS_LISTEN", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// The address callers use to reach this server, for file URLs (http://host:port).
    #[arg(long, env = "AGENTPROCESS_PUBLIC_URL")]
    pub public_url: String,
    /// Key that signs file URLs, base64; every API process of a deployment needs the same one.
    #[arg(long, env = "AGENTPROCESS_URL_SECRET", hide_env_values = true)]
    pub url_secret: String,
    /// Where uploaded evidence is kept.
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Apply migrations before serving.
    #[arg(long, env = "AGENTPROCESS_MIGRATE")]
    pub migrate: bool,
    /// Database connections per process.
    #[arg(long, env = "AGENTPROCESS_MAX_CONNECTIONS", default_value_t = 20)]
    pub max_connections: u32,
    /// Host names callers may use, besides the public URL's (repeat or comma-separate).
    #[arg(long, env = "AGENTPROCESS_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_host: Vec<String>,
    /// Browser origins allowed to call /mcp (repeat or comma-separate); none by default.
    #[arg(long, env = "AGENTPROCESS_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origin: Vec<String>,
    /// The reverse proxies in front of this server (an ingress, a load balancer), as
    /// comma-separated networks (10.244.0.0/16,fd00::/8) or addresses. For a connection
    /// from one of them, the client is the rightmost X-Forwarded-For hop that is not
    /// itself a trusted proxy, and that address is what the per-address limits count and
    /// the audit log records. Without it X-Forwarded-For is ignored and every client
    /// behind a proxy has the proxy's address. Name only the proxies' own networks: a
    /// trusted address can claim to forward for anyone.
    #[arg(long, env = "AGENTPROCESS_TRUSTED_PROXIES", value_name = "NETWORKS")]
    pub trusted_proxies: Option<String>,
    /// Serve every /mcp request through the MCP SDK's own request handling, including
    /// plain tool calls, which are otherwise answered directly (the same answers, with
    /// less work per call). For comparing the two.
    #[arg(long, env = "AGENTPROCESS_NO_DIRECT_TOOL_CALLS")]
    pub no_direct_tool_calls: bool,
    /// Lease length of a claim, in seconds.
    #[arg(long, env = "AGENTPROCESS_LEASE_SECONDS", default_value_t = 600)]
    pub lease_seconds: u32,
    /// Largest upload, in bytes.
    #[arg(long, env = "AGENTPROCESS_MAX_UPLOAD_BYTES", default_value_t = 10 << 20)]
    pub max_upload_bytes: usize,
    /// Largest run data of one run, in bytes.
    #[arg(long, env = "AGENTPROCESS_RUN_DATA_BYTES", default_value_t = 1 << 20)]
    pub run_data_bytes: usize,
    /// Do not fire timers or deliver webhooks in this process (a separate scheduler
    /// does). Implied by --redis-url: then timers go to the queue and
    /// agentprocess-scheduler fires them.
    #[arg(long, env = "AGENTPROCESS_NO_TIMERS")]
    pub no_timers: bool,
    /// Where timers are queued.
    #[command(flatten)]
    pub queue: QueueArgs,
    /// How timers are fired and webhooks delivered.
    #[command(flatten)]
    pub background: BackgroundArgs,
    /// Logs, metrics and shutdown.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// Sign-up, sign-in and OAuth.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The check-1 profile.
    #[command(flatten)]
    pub check: CheckArgs,
    /// The limits of every organization.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Offer `/dev/sign-in` for this organization: anyone may sign in as any of its
    /// people with no identity provider. Only for development and tests.
    #[arg(long, env = "AGENTPROCESS_DANGEROUSLY_ALLOW_DEV_SIGN_IN", value_name = "ORG")]
    pub dangerously_allow_dev_sign_in: Option<String>,
}

impl ApiConfig {
    /// The configuration `args` give, every value checked.
    pub fn from_args(args: ApiArgs) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        use base64::Engine as _;
        let secret = base64::engine::general_purpose::STANDARD
            .decode(args.url_secret.trim())
            .context("--url-secret must be base64")?;
        anyhow::ensure!(secret.len() >= 32, "--url-secret must hold at least 32 bytes");
        let mut service = agentprocess_service::Settings::new(args.public_url.clone(), secret);
        // Identity and the service seal with one key: --secret-key, or the one derived
        // from --url-secret.
        service.seal_key = args.auth.seal.key_or_derived_from(&service.url_secret)?;
        service.call_deadline = args.process.call_deadline_seconds.0;
        service.engine.lease_seconds = args.lease_seconds;
        service.engine.run_data_bytes = args.run_data_bytes;
        service.max_upload_bytes = args.max_upload_bytes;
        service.engine.check = args.check.limits();
        service.limits = args.limits.limits(args.max_connections);
        let mut allowed_hosts = args.allowed_host.clone();
        allowed_hosts.extend(host_of(&args.public_url));
        let mut warnings = Vec::new();
        let (plain_http_hooks, warning) = args.background.plain_http_hooks();
        service.plain_http_hooks = plain_http_hooks;
        warnings.extend(warning);
        if args.auth.seal.secret_key.is_none() {
            warnings.push(
                "no --secret-key: secrets are sealed with a key derived from --url-secret, so changing that \
                 secret makes them unreadable"
                    .to_owned(),
            );
        }
        if let Some(org) = &args.dangerously_allow_dev_sign_in {
            warnings.push(format!(
                "development sign-in on: anyone can sign in as organization {org}'s people"
            ));
        }
        let trusted_proxies = args
            .trusted_proxies
            .as_deref()
            .unwrap_or_default()
            .parse()
            .map_err(|error| anyhow::anyhow!("--trusted-proxies (AGENTPROCESS_TRUSTED_PROXIES): {error}"))?;
        let queue = args.queue.settings();
        let background = (!args.no_timers && queue.is_none())
            .then(|| args.background.background())
            .transpose()?;
        Ok(Self {
            database: Database {
                url: Secret::new(args.database_url),
                max_connections: args.max_connections,
                migrate: args.migrate,
            },
            listen: args.listen,
            service,
            storage: args.storage.storage()?,
            sweep: args.storage.sweep(),
            queue,
            evaluator: args.check.evaluator()?,
            background,
            process: args.process.config(),
            identity: args.auth.identity()?,
            http: HttpSettings {
                allowed_hosts,
                allowed_origins: args.allowed_origin,
                dev_sign_in_org: args.dangerously_allow_dev_sign_in,
                direct_tool_calls: !args.no_direct_tool_calls,
                trusted_proxies,
            },
            warnings,
        })
    }
}

/// The flags of a scheduler process.
#[derive(Debug, clap::Args)]
pub struct SchedulerArgs {
    /// postgres://user:password@host/database (or sqlite://path).
    #[arg(long, env = "AGENTPROCESS_DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Address of /healthz and /readyz.
    #[arg(long, env = "AGENTPROCESS_SCHEDULER_LISTEN", default_value = "0.0.0.0:8081")]
    pub listen: SocketAddr,
    /// Database connections.
    #[arg(long, env = "AGENTPROCESS_MAX_CONNECTIONS", default_value_t = 20)]
    pub max_connections: u32,
    /// Where timers are queued.
    #[command(flatten)]
    pub queue: QueueArgs,
    /// How timers are fired and webhooks delivered.
    #[command(flatten)]
    pub background: BackgroundArgs,
    /// Logs, metrics and shutdown.
    #[command(flatten)]
    pub process: ProcessArgs,
    /// The API processes' key, which opens the webhook signing secrets they sealed.
    #[command(flatten)]
    pub seal: SealArgs,
    /// The API processes' --url-secret, when they derive their key from it (no
    /// --secret-key).
    #[arg(long, env = "AGENTPROCESS_URL_SECRET", hide_env_values = true)]
    pub url_secret: Option<String>,
    /// The API's address as people reach it (`https://process.example.com`), for the
    /// links in email and chat messages. Needed with --smtp-url.
    #[arg(long, env = "AGENTPROCESS_PUBLIC_URL")]
    pub public_url: Option<String>,
}

impl SchedulerConfig {
    /// The configuration `args` give, every value checked.
    pub fn from_args(args: SchedulerArgs) -> anyhow::Result<Self> {
        let mut warnings = Vec::new();
        if args.url_secret.is_none() && args.seal.secret_key.is_none() {
            warnings.push(
                "neither --secret-key nor --url-secret: the webhook signing secrets the API processes sealed \
                 cannot be opened, and deliveries fail until the key is given"
                    .to_owned(),
            );
        }
        let queue = args.queue.settings();
        if queue.is_none() {
            warnings.push("no --redis-url: firing timers from the database rows".to_owned());
        }
        let background = args.background.background()?;
        let (plain_http_hooks, warning) = args.background.plain_http_hooks();
        warnings.extend(warning);
        anyhow::ensure!(
            background.mail.is_none() || args.public_url.is_some(),
            "--smtp-url needs --public-url: email links to the pages where people act"
        );
        // The scheduler presents no files, so it needs no URL key; its public URL is
        // only for the links in messages.
        let service = agentprocess_service::Settings {
            call_deadline: args.process.call_deadline_seconds.0,
            seal_key: args.seal.key_of_the_api(args.url_secret.as_deref())?,
            plain_http_hooks,
            ..agentprocess_service::Settings::new(args.public_url.unwrap_or_default(), Vec::new())
        };
        Ok(Self {
            database: Database {
                url: Secret::new(args.database_url),
                max_connections: args.max_connections,
                migrate: false,
            },
            listen: args.listen,
            service,
            queue,
            background,
            process: args.process.config(),
            warnings,
        })
    }
}

/// The host name of a URL, without scheme, port or path.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next()?;
    let host = if let Some(bracketed) = authority.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        authority.rsplit_once(':').map_or(authority, |(host, _)| host)
    };
    (!host.is_empty()).then(|| host.to_owned())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Api {
        #[command(flatten)]
        args: ApiArgs,
    }

    #[derive(clap::Parser)]
    struct Scheduler {
        #[command(flatten)]
        args: SchedulerArgs,
    }

    const URL_SECRET: &str = "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=";

    fn api(extra: &[&str]) -> anyhow::Result<ApiConfig> {
        let mut argv = vec![
            "api",
            "--database-url",
            "postgres://agentprocess:hunter2@db/agentprocess",
            "--public-url",
            "https://process.example",
        ];
        if !extra.contains(&"--url-secret") {
            argv.extend(["--url-secret", URL_SECRET]);
        }
        if !extra.contains(&"--s3-bucket") {
            argv.extend(["--blob-dir", "/var/lib/agentprocess"]);
        }
        argv.extend_from_slice(extra);
        ApiConfig::from_args(Api::try_parse_from(argv)?.args)
    }

    #[test]
    fn a_duration_s_default_is_written_as_the_seconds_a_person_would_type() {
        let help = <Api as clap::CommandFactory>::command().render_long_help().to_string();
        for (flag, default) in [
            ("--timer-poll-seconds", "0.1"),
            ("--session-idle-seconds", "28800"),
            ("--notification-retention-seconds", "604800"),
            ("--shutdown-delay-seconds", "0"),
        ] {
            let at = help.find(flag).unwrap_or_else(|| panic!("{flag} in the help"));
            // Up to the next flag of the help: this flag's text alone.
            let next = help[at..].find("\n      --").map_or(help.len(), |end| at + end);
            assert!(
                help[at..next].contains(&format!("[default: {default}]")),
                "{flag}: {}",
                &help[at..next]
            );
        }
    }

    #[test]
    fn the_flags_defaults_are_the_settings_defaults() {
        let config = api(&[]).expect("a configuration");
        // Debug output stands for equality: the settings hold keys and clients that
        // have no `PartialEq`.
        assert_eq!(
            format!("{:?}", config.identity),
            format!("{:?}", IdentityConfig::default())
        );
        assert_eq!(
            format!("{:?}", config.background),
            format!("{:?}", Some(Background::default()))
        );
        assert_eq!(
            format!("{:?}", config.sweep),
            format!("{:?}", agentprocess_service::SweepSettings::default())
        );
        assert_eq!(config.http.allowed_hosts, ["process.example"]);
        assert!(config.http.direct_tool_calls);
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    }

    #[test]
    fn secrets_are_not_in_the_configuration_s_debug_output() {
        let config = api(&[
            "--secret-key",
            URL_SECRET,
            "--redis-url",
            "redis://:redis-password@cache:6379",
        ])
        .expect("a configuration");
        let shown = format!("{config:?}");
        // The URL secret decodes to these bytes; `Debug` of a byte vector lists them.
        let url_secret_bytes = format!("{:?}", b"01234567890123456789012345678901".to_vec());
        for secret in ["hunter2", "redis-password", URL_SECRET, url_secret_bytes.as_str()] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        let scheduler = SchedulerConfig::from_args(
            Scheduler::try_parse_from([
                "scheduler",
                "--database-url",
                "postgres://agentprocess:hunter2@db/agentprocess",
                "--url-secret",
                URL_SECRET,
                "--redis-url",
                "redis://:redis-password@cache:6379",
            ])
            .expect("flags")
            .args,
        )
        .expect("a configuration");
        let shown = format!("{scheduler:?}");
        for secret in ["hunter2", "redis-password", url_secret_bytes.as_str()] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
    }

    #[test]
    fn the_development_sign_in_warning_names_its_organization() {
        let config = api(&["--dangerously-allow-dev-sign-in", "acme"]).expect("a configuration");
        assert!(
            config
                .warnings
                .iter()
                .any(|warning| warning.contains("organization acme")),
            "{:?}",
            config.warnings
        );
    }

    #[test]
    fn wrong_values_are_refused_at_start() {
        for (flags, refusal) in [
            (&["--url-secret", "not base64!"][..], "--url-secret must be base64"),
            (
                &["--url-secret", "c2hvcnQ="][..],
                "--url-secret must hold at least 32 bytes",
            ),
            (
                &["--signup", "invite"][..],
                "--signup invite needs at least one --signup-code",
            ),
            (&["--secret-key", "c2hvcnQ="][..], "--secret-key"),
            (
                &["--oidc-ca-file", "/nonexistent/ca.pem"][..],
                "--oidc-ca-file /nonexistent/ca.pem",
            ),
            (
                &["--s3-bucket", "b", "--s3-access-key-id", "k"][..],
                "give both --s3-access-key-id",
            ),
            (
                &["--trusted-proxies", "10.0.0.0/8,10.0.0.0/33,ingress"][..],
                r#"--trusted-proxies (AGENTPROCESS_TRUSTED_PROXIES): "10.0.0.0/33", "ingress" are not networks"#,
            ),
        ] {
            let error = api(flags).expect_err("refused");
            assert!(format!("{error:#}").contains(refusal), "{flags:?}: {error:#}");
        }
    }

    #[test]
    fn plain_http_hooks_are_refused_unless_allowed_on_the_api_and_the_scheduler() {
        use agentprocess_service::PlainHttpHooks;
        assert_eq!(
            api(&[]).expect("a configuration").service.plain_http_hooks,
            PlainHttpHooks::Refused
        );
        let allowed = api(&["--allow-plain-http-hooks"]).expect("a configuration");
        assert_eq!(allowed.service.plain_http_hooks, PlainHttpHooks::Allowed);
        assert!(
            allowed.warnings.iter().any(|warning| warning.contains("plain http://")),
            "{:?}",
            allowed.warnings
        );
        let scheduler = |extra: &[&str]| {
            let mut argv = vec!["scheduler", "--database-url", "sqlite://x"];
            argv.extend_from_slice(extra);
            SchedulerConfig::from_args(Scheduler::try_parse_from(argv).expect("flags").args)
                .expect("a configuration")
                .service
                .plain_http_hooks
        };
        assert_eq!(scheduler(&[]), PlainHttpHooks::Refused);
        assert_eq!(scheduler(&["--allow-plain-http-hooks"]), PlainHttpHooks::Allowed);
    }

    #[test]
    fn trusted_proxies_are_a_typed_list_of_networks_and_none_by_default() {
        assert!(api(&[]).expect("a configuration").http.trusted_proxies.is_empty());
        let config = api(&["--trusted-proxies", "10.244.0.0/16, fd00::/8"]).expect("a configuration");
        assert_eq!(config.http.trusted_proxies.to_string(), "10.244.0.0/16,fd00::/8");
        assert!(config.http.trusted_proxies.trusts("10.244.3.4".parse().expect("ip")));
        assert!(!config.http.trusted_proxies.trusts("10.245.0.1".parse().expect("ip")));
    }

    #[test]
    fn timers_go_to_the_scheduler_when_a_queue_is_named() {
        assert!(
            api(&["--redis-url", "redis://127.0.0.1:6379"])
                .expect("a configuration")
                .background
                .is_none()
        );
        assert!(api(&["--no-timers"]).expect("a configuration").background.is_none());
    }

    #[test]
    fn a_scheduler_without_the_api_s_key_is_warned() {
        let config = SchedulerConfig::from_args(
            Scheduler::try_parse_from(["scheduler", "--database-url", "sqlite://x"])
                .expect("flags")
                .args,
        )
        .expect("a configuration");
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        let config = SchedulerConfig::from_args(
            Scheduler::try_parse_from([
                "scheduler",
                "--database-url",
                "sqlite://x",
                "--url-secret",
                URL_SECRET,
                "--redis-url",
                "redis://127.0.0.1:6379",
            ])
            .expect("flags")
            .args,
        )
        .expect("a configuration");
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    }
}
