//! Traces, metrics and logs for every agentprocess binary.
//!
//! [`init`] installs one `tracing` subscriber (log lines on stderr, JSON with trace and
//! span ids when asked) and, when the standard `OTEL_*` environment names an OTLP
//! endpoint, exporters for traces and metrics. With no endpoint nothing is exported
//! and nothing is retried: telemetry is off, not failing. [`Telemetry`] is the guard
//! that flushes both on shutdown.
//!
//! Instruments live in [`metrics()`]; trace context crosses processes through
//! [`context`].

pub mod context;
pub mod labels;
mod logs;
mod metrics;
mod otlp;
pub mod spans;

use std::sync::Mutex;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use opentelemetry::KeyValue;

pub use metrics::{Gauges, Metrics, gauges, metrics, observe_dead_connections, observe_pool};
pub use otlp::{Protocol, Signal, protocol};

/// What a binary tells [`init`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'a> {
    /// `service.name` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` give one.
    pub service_name: &'a str,
    /// Log lines as JSON (one object a line, with `trace_id` and `span_id`).
    pub log_json: bool,
    /// Also keep metrics for a Prometheus scrape ([`Telemetry::prometheus_text`]).
    pub prometheus: bool,
    /// The organizations (by id) metrics name; every other one is `other`
    /// ([`labels`]).
    pub watched_organizations: &'a [String],
}

/// The installed telemetry. Dropping it (or [`Telemetry::shutdown`]) exports what is
/// still buffered.
#[derive(Debug)]
pub struct Telemetry {
    providers: Mutex<Option<Providers>>,
    registry: Option<prometheus::Registry>,
}

#[derive(Debug)]
struct Providers {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

/// Installs logging, tracing and metrics for this process. Call once, first thing in
/// `main`, inside the Tokio runtime (the gRPC exporter needs it).
pub fn init(options: &Options<'_>) -> anyhow::Result<Telemetry> {
    labels::watch(options.watched_organizations)?;
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let resource = otlp::resource(options.service_name);
    let mut exporting = Vec::new();

    let tracer = match otlp::span_exporter()? {
        Some(exporter) => {
            exporting.push(Signal::Traces);
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource.clone())
                    .build(),
            )
        }
        None => None,
    };

    let registry = options.prometheus.then(prometheus::Registry::new);
    let mut meter_builder = SdkMeterProvider::builder().with_resource(resource);
    if let Some(exporter) = otlp::metric_exporter()? {
        exporting.push(Signal::Metrics);
        meter_builder = meter_builder.with_periodic_exporter(exporter);
    }
    if let Some(registry) = &registry {
        let exporter = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()?;
        meter_builder = meter_builder.with_reader(exporter);
    }
    let read = exporting.contains(&Signal::Metrics) || registry.is_some();
    let meter = read.then(|| meter_builder.build());
    if let Some(meter) = &meter {
        opentelemetry::global::set_meter_provider(meter.clone());
    }

    let otel_layer = tracer.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("agentprocess"))
            .with_tracked_inactivity(false)
    });
    let filter = tracing_subscriber::EnvFilter::try_from_env("AGENTPROCESS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(logs::DEFAULT_FILTER));
    let fmt_layer = if options.log_json {
        tracing_subscriber::fmt::layer()
            .event_format(logs::JsonLines)
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer().with_writer(std::io::stderr).boxed()
    };
    tracing_subscriber::registry()
        .with(otel_layer)
        .with(fmt_layer)
        .with(filter)
        .try_init()?;
    if !exporting.is_empty() {
        tracing::info!(signals = ?exporting, "exporting telemetry over OTLP");
    }
    Ok(Telemetry {
        providers: Mutex::new(Some(Providers { tracer, meter })),
        registry,
    })
}

impl Telemetry {
    /// Every metric in the Prometheus text format, when [`Options::prometheus`] was set.
    pub fn prometheus_text(&self) -> Option<String> {
        let registry = self.registry.as_ref()?;
        prometheus::TextEncoder::new().encode_to_string(&registry.gather()).ok()
    }

    /// Exports what is buffered and stops the exporters. Later calls do nothing.
    pub fn shutdown(&self) {
        let providers = match self.providers.lock() {
            Ok(mut providers) => providers.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let Some(providers) = providers else {
            return;
        };
        if let Some(tracer) = providers.tracer
            && let Err(error) = tracer.shutdown()
        {
            eprintln!("traces not flushed: {error}");
        }
        if let Some(meter) = providers.meter
            && let Err(error) = meter.shutdown()
        {
            eprintln!("metrics not flushed: {error}");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.shutdown();
    }
}
