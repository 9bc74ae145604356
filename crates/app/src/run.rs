//! Starting a process from its configuration, and running it until a signal.

use std::sync::Arc;

use agentprocess_auth::Auth;
use agentprocess_service::{Service, TestClock};
use agentprocess_telemetry::Telemetry;
use anyhow::Context as _;
use axum::Router;
use tokio::net::TcpListener;

use crate::config::{self, ApiConfig, SchedulerConfig};
use crate::{AssembleError, Extras, Storage};

/// An API process: its service assembled and its identity built, listening, not yet
/// serving. The surfaces are built over `service` and `auth`, then handed to
/// [`Api::serve`].
pub struct Api {
    /// The service.
    pub service: Arc<Service>,
    /// Identity over the same store, sealing with the service's key.
    pub auth: Arc<Auth>,
    listener: TcpListener,
    test_clock: Option<Arc<TestClock>>,
}

impl Api {
    /// Assembles what `config` describes: the service over its database and evidence
    /// store (and timer queue and evaluator), identity beside it, and the listener
    /// (`listener` when given, else one on `config.listen`). An evaluator that
    /// answers without logprobs is refused; one that does not answer yet is watched.
    pub async fn start(config: &ApiConfig, listener: Option<TcpListener>) -> anyhow::Result<Self> {
        config::log_warnings(&config.warnings);
        let (clock, test_clock) = crate::clock(config.process.test_clock);
        let evaluator = config
            .evaluator
            .as_ref()
            .map(config::EvaluatorConfig::evaluator)
            .transpose()?;
        let extras = Extras {
            queue: config::queue(config.queue.as_ref())?,
            evaluator,
            publishes_check: false,
        };
        let service = crate::assemble(&config.database, &config.storage, config.service.clone(), clock, extras).await?;
        if let Some(evaluator) = &config.evaluator {
            watch_evaluator(&service, evaluator.probe_every).await?;
        }
        let listener = match listener {
            Some(listener) => listener,
            None => bind(config.listen).await?,
        };
        let auth = config.identity.auth(
            service.store().clone(),
            &config.service.public_url,
            service.settings().seal_key.clone(),
        )?;
        Ok(Self {
            service,
            auth: Arc::new(auth),
            listener,
            test_clock,
        })
    }

    /// The address the process listens on.
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `router` (with `/test/clock` when the configuration turns it on), with
    /// the background work and the sweeper beside it, until a signal.
    pub async fn serve(self, config: &ApiConfig, router: Router, telemetry: &Arc<Telemetry>) -> anyhow::Result<()> {
        let router = crate::with_test_clock(router, &self.service, self.test_clock);
        if config.background.is_none() {
            tracing::info!("timers and webhooks are left to agentprocess-scheduler");
        }
        crate::serve(
            self.service,
            self.listener,
            router,
            config.background.clone(),
            Some(config.sweep.clone()),
            &config.process.settings(telemetry),
        )
        .await
    }
}

/// Probes the service's evaluator once, then every `every` in the background. An
/// evaluator that answers without logprobs is a configuration error; one that does
/// not answer yet is only logged.
async fn watch_evaluator(service: &Arc<Service>, every: std::time::Duration) -> anyhow::Result<()> {
    match service.probe_evaluator().await {
        Err(error) if error.unusable => anyhow::bail!("the check-1 evaluator cannot be used: {error}"),
        Err(error) => {
            tracing::warn!(error = %error.message, "the evaluator does not answer yet; check-1 is offered once it does")
        }
        Ok(()) => tracing::info!("the evaluator answers; check-1 is offered"),
    }
    tokio::spawn(Arc::clone(service).watch_evaluator(every));
    Ok(())
}

/// Runs a scheduler: fires timers and delivers webhooks, serving `/healthz` and
/// `/readyz` (ready while the database and the timer queue answer), until a signal.
pub async fn run_scheduler(config: &SchedulerConfig, telemetry: &Arc<Telemetry>) -> anyhow::Result<()> {
    config::log_warnings(&config.warnings);
    let (clock, test_clock) = crate::clock(config.process.test_clock);
    let extras = Extras {
        queue: config::queue(config.queue.as_ref())?,
        evaluator: None,
        publishes_check: false,
    };
    // Uploads are swept by the API processes, which hold the evidence store.
    let service = match crate::assemble(&config.database, &Storage::None, config.service.clone(), clock, extras).await {
        Ok(service) => service,
        Err(unmigrated @ AssembleError::Unmigrated(_)) => return Err(unmigrated.into()),
        Err(error) => return Err(anyhow::Error::from(error).context("cannot reach the database")),
    };
    let listener = bind(config.listen).await?;
    tracing::info!(address = %listener.local_addr()?, "scheduler running; /healthz and /readyz served");
    let router = crate::health::routes(Arc::clone(&service));
    let router = crate::with_test_clock(router, &service, test_clock);
    crate::serve(
        service,
        listener,
        router,
        Some(config.background.clone()),
        None,
        &config.process.settings(telemetry),
    )
    .await
}

/// A listener on `address`, or an error naming it.
async fn bind(address: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))
}
