//! The OTLP exporters and the resource, read from the standard `OTEL_*` environment.
//!
//! An exporter is built only when an endpoint is set for its signal
//! (`OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`), the
//! signal's exporter is not `none` (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`)
//! and `OTEL_SDK_DISABLED` is not `true`. Headers, timeouts, TLS, the sampler
//! (`OTEL_TRACES_SAMPLER[_ARG]`) and the export interval (`OTEL_METRIC_EXPORT_INTERVAL`)
//! are read by the SDK itself.

use opentelemetry::KeyValue;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;

/// A telemetry signal this process can export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Spans.
    Traces,
    /// Metrics.
    Metrics,
}

impl Signal {
    fn env_name(self) -> &'static str {
        match self {
            Self::Traces => "TRACES",
            Self::Metrics => "METRICS",
        }
    }
}

/// How OTLP is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `grpc`.
    Grpc,
    /// `http/protobuf`, the specification's default.
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
}

/// The protocol for `signal`: `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, then
/// `OTEL_EXPORTER_OTLP_PROTOCOL`, then `http/protobuf`. An unknown value is an error,
/// so a typo does not silently send nothing.
pub fn protocol(signal: Signal, env: impl Fn(&str) -> Option<String>) -> anyhow::Result<Protocol> {
    let specific = format!("OTEL_EXPORTER_OTLP_{}_PROTOCOL", signal.env_name());
    let (name, value) = match env(&specific) {
        Some(value) => (specific, value),
        None => match env("OTEL_EXPORTER_OTLP_PROTOCOL") {
            Some(value) => ("OTEL_EXPORTER_OTLP_PROTOCOL".to_owned(), value),
            None => return Ok(Protocol::HttpProtobuf),
        },
    };
    match value.trim() {
        "grpc" => Ok(Protocol::Grpc),
        "http/protobuf" => Ok(Protocol::HttpProtobuf),
        "http/json" => Ok(Protocol::HttpJson),
        other => anyhow::bail!("{name}={other:?}: expected grpc, http/protobuf or http/json"),
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

/// Whether `signal` is to be exported at all.
fn wanted(signal: Signal) -> bool {
    if env("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        return false;
    }
    if env(&format!("OTEL_{}_EXPORTER", signal.env_name())).is_some_and(|value| value.trim() == "none") {
        return false;
    }
    env(&format!("OTEL_EXPORTER_OTLP_{}_ENDPOINT", signal.env_name())).is_some()
        || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
}

fn sdk_protocol(protocol: Protocol) -> opentelemetry_otlp::Protocol {
    match protocol {
        Protocol::Grpc => opentelemetry_otlp::Protocol::Grpc,
        Protocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
    }
}

pub(crate) fn span_exporter() -> anyhow::Result<Option<SpanExporter>> {
    if !wanted(Signal::Traces) {
        return Ok(None);
    }
    let builder = SpanExporter::builder();
    let exporter = match protocol(Signal::Traces, env)? {
        Protocol::Grpc => builder.with_tonic().build()?,
        http => builder.with_http().with_protocol(sdk_protocol(http)).build()?,
    };
    Ok(Some(exporter))
}

pub(crate) fn metric_exporter() -> anyhow::Result<Option<MetricExporter>> {
    if !wanted(Signal::Metrics) {
        return Ok(None);
    }
    let builder = MetricExporter::builder();
    let exporter = match protocol(Signal::Metrics, env)? {
        Protocol::Grpc => builder.with_tonic().build()?,
        http => builder.with_http().with_protocol(sdk_protocol(http)).build()?,
    };
    Ok(Some(exporter))
}

/// The resource: the SDK's detectors (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`)
/// first, then `service.name` = `service_name` when neither gave one, and
/// `service.version` = this build's version when not given.
pub(crate) fn resource(service_name: &str) -> Resource {
    let detected = Resource::builder().build();
    let has = |key: &'static str| {
        detected
            .get(&opentelemetry::Key::from_static_str(key))
            .is_some_and(|value| !value.as_str().starts_with("unknown_service"))
    };
    let mut builder = Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() && !has("service.name") {
        builder = builder.with_service_name(service_name.to_owned());
    }
    if !has("service.version") {
        builder = builder.with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn protocol_defaults_to_http_protobuf() {
        assert_eq!(protocol(Signal::Traces, from(&[])).ok(), Some(Protocol::HttpProtobuf));
    }

    #[test]
    fn the_signal_specific_protocol_wins() {
        let env = from(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"),
        ]);
        assert_eq!(protocol(Signal::Metrics, &env).ok(), Some(Protocol::HttpJson));
        assert_eq!(protocol(Signal::Traces, &env).ok(), Some(Protocol::Grpc));
    }

    #[test]
    fn an_unknown_protocol_is_refused_by_name() {
        let error = protocol(Signal::Traces, from(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "udp")]))
            .err()
            .map(|error| error.to_string());
        assert_eq!(
            error.as_deref(),
            Some("OTEL_EXPORTER_OTLP_PROTOCOL=\"udp\": expected grpc, http/protobuf or http/json")
        );
    }
}
