//! How a server process runs and stops.
//!
//! On the first SIGTERM (or ctrl-c) `/readyz` turns 503 at once, so load balancers
//! stop sending new calls; after the shutdown delay the listener closes, and calls in
//! flight and the background loops' work under way get the grace period to finish.
//! Then the process exits 0; past the grace period it exits with an error. A second
//! signal exits at once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agentprocess_service::Service;
use agentprocess_telemetry::Telemetry;
use axum::Router;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::IntoResponse;
use tokio_util::sync::CancellationToken;

use crate::{Background, observe};

/// How a process stops, and where it shows its metrics.
#[derive(Debug, Clone)]
pub struct ProcessSettings {
    /// After the listener closes, how long calls in flight may take to finish.
    pub shutdown_grace: Duration,
    /// After the first signal, how long to go on serving (while `/readyz` says 503).
    pub shutdown_delay: Duration,
    /// The telemetry of the process (flushed by its owner after [`serve`] returns).
    pub telemetry: Arc<Telemetry>,
    /// Where to serve `/metrics` in the Prometheus text format, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
}

/// Whether the process is shutting down: `/readyz` answers 503 from the first signal.
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    /// Whether a shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn start(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Serves `router` on `listener` with the background work beside it when given (and
/// the sweeper of uploads no run cites, in a process that holds the evidence store),
/// until a signal; see the module's documentation for the order of a shutdown.
pub async fn serve(
    service: Arc<Service>,
    listener: tokio::net::TcpListener,
    router: Router,
    background: Option<Background>,
    sweep: Option<agentprocess_service::SweepSettings>,
    process: &ProcessSettings,
) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    let mut tasks = background
        .map(|background| crate::spawn_background(&service, &background, &stop))
        .unwrap_or_default();
    if let Some(sweep) = sweep {
        tasks.spawn(Arc::clone(&service).run_sweeper(sweep, stop.clone()));
    }
    if let Some(address) = process.metrics_listen {
        let metrics = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| anyhow::anyhow!("cannot listen on {address} for /metrics: {error}"))?;
        tracing::info!(address = %metrics.local_addr()?, "serving /metrics");
        tasks.spawn(serve_metrics(metrics, Arc::clone(&process.telemetry), stop.clone()));
    }
    let draining = Draining::default();
    let router = router
        .layer(middleware::from_fn(observe::request))
        .layer(axum::Extension(draining.clone()));
    tokio::spawn(on_signals(draining, process.shutdown_delay, stop.clone()));

    let server = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(stop.clone().cancelled_owned());
    let grace = process.shutdown_grace;
    let finished = async {
        let served = server.await;
        while tasks.join_next().await.is_some() {}
        served
    };
    tokio::pin!(finished);
    tokio::select! {
        served = &mut finished => Ok(served?),
        () = async { stop.cancelled().await; tokio::time::sleep(grace).await } => {
            anyhow::bail!("calls still in flight after the {grace:?} grace period; exiting anyway")
        }
    }
}

/// Waits for the first signal, drains, stops the listener and the loops after the
/// delay; exits the process on a second signal.
async fn on_signals(draining: Draining, delay: Duration, stop: CancellationToken) {
    let mut signals = match Signals::new() {
        Ok(signals) => signals,
        Err(error) => {
            tracing::error!(%error, "cannot listen for signals; stop the process with SIGKILL");
            return;
        }
    };
    signals.next().await;
    draining.start();
    tracing::info!(
        delay_seconds = delay.as_secs_f64(),
        "shutting down: no longer ready; finishing work in flight"
    );
    tokio::select! {
        () = tokio::time::sleep(delay) => {}
        () = signals.next() => exit_now(),
    }
    stop.cancel();
    signals.next().await;
    exit_now();
}

fn exit_now() {
    tracing::warn!("second signal: exiting at once");
    std::process::exit(1);
}

/// SIGTERM and SIGINT, listened to once for the life of the process so that none is
/// missed between two waits.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    #[cfg(not(unix))]
    fn new() -> std::io::Result<Self> {
        Ok(Self {})
    }

    #[cfg(unix)]
    async fn next(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn serve_metrics(listener: tokio::net::TcpListener, telemetry: Arc<Telemetry>, stop: CancellationToken) {
    let router = Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let telemetry = Arc::clone(&telemetry);
            async move {
                match telemetry.prometheus_text() {
                    Some(text) => (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        text,
                    )
                        .into_response(),
                    None => StatusCode::NOT_FOUND.into_response(),
                }
            }
        }),
    );
    if let Err(error) = axum::serve(listener, router)
        .with_graceful_shutdown(stop.cancelled_owned())
        .await
    {
        tracing::warn!(%error, "/metrics stopped");
    }
}
