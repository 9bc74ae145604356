//! The instruments. Names and attributes follow the OpenTelemetry semantic
//! conventions where one exists (`mcp.server.operation.duration`,
//! `http.server.request.duration`, `db.client.connection.count`); the rest are
//! `agentprocess.*`. Made from the global meter on first use, so [`crate::init`] comes
//! first; without a meter provider every instrument does nothing.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableCounter, ObservableGauge, ObservableUpDownCounter};

/// Bucket bounds of request durations, in seconds (the HTTP semantic conventions').
const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Run lock waits are mostly far below a millisecond.
const LOCK_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];
/// Timer lateness: milliseconds when healthy, up to the hold period and beyond when not.
const LATENESS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Every instrument this service records to.
#[derive(Debug)]
pub struct Metrics {
    /// `mcp.server.operation.duration` (s): `mcp.method.name`, `gen_ai.tool.name`,
    /// `agentprocess.organization` ([`crate::labels`]), `error.type` on failures.
    pub tool_duration: Histogram<f64>,
    /// `agentprocess.tool.calls`: `gen_ai.tool.name`, `agentprocess.outcome` (`ok` or
    /// the error code), `agentprocess.organization`.
    pub tool_calls: Counter<u64>,
    /// `http.server.request.duration` (s): `http.request.method`, `http.route`,
    /// `http.response.status_code`.
    pub http_duration: Histogram<f64>,
    /// `agentprocess.run.lock.wait` (s): from asking for a run's lock to holding it.
    pub lock_wait: Histogram<f64>,
    /// `agentprocess.runs.started`: `agentprocess.organization`.
    pub runs_started: Counter<u64>,
    /// `agentprocess.runs.ended`: `agentprocess.organization`, `agentprocess.run.state`
    /// (`ended`, `cancelled`).
    pub runs_ended: Counter<u64>,
    /// `agentprocess.steps.overdue`: steps whose `due` passed while still open.
    pub steps_overdue: Counter<u64>,
    /// `agentprocess.timers.scheduled`: `agentprocess.timer.kind`.
    pub timers_scheduled: Counter<u64>,
    /// `agentprocess.timers.fired`: `agentprocess.timer.kind`.
    pub timers_fired: Counter<u64>,
    /// `agentprocess.timers.lateness` (s): from due to applied, `agentprocess.timer.kind`.
    pub timer_lateness: Histogram<f64>,
    /// `agentprocess.webhook.deliveries`: attempts by `agentprocess.delivery.status`
    /// (`delivered`, `retry`, `failed`).
    pub webhook_deliveries: Counter<u64>,
    /// `agentprocess.messages`: messages to people by `agentprocess.message.channel`
    /// (`email`, `chat`) and `agentprocess.message.status` (`sent`, `retry`, `failed`,
    /// `dropped`).
    pub messages: Counter<u64>,
    _gauges: [ObservableGauge<i64>; 3],
}

/// Sampled levels of the whole deployment, reported as gauges by the process that
/// samples them (a scheduler, or an API that fires its own timers). Unsampled levels
/// are not reported at all rather than as zero.
#[derive(Debug)]
pub struct Gauges {
    /// Agent steps ready to be claimed.
    pub ready_steps: AtomicI64,
    /// Open work items of people.
    pub open_work_items: AtomicI64,
    /// Timers in the Redis queue.
    pub queued_timers: AtomicI64,
}

const UNSAMPLED: i64 = -1;

static GAUGES: Gauges = Gauges {
    ready_steps: AtomicI64::new(UNSAMPLED),
    open_work_items: AtomicI64::new(UNSAMPLED),
    queued_timers: AtomicI64::new(UNSAMPLED),
};

/// The sampled levels; store with `Ordering::Relaxed`.
pub fn gauges() -> &'static Gauges {
    &GAUGES
}

fn meter() -> Meter {
    opentelemetry::global::meter("agentprocess")
}

fn histogram(meter: &Meter, name: &'static str, description: &'static str, buckets: &[f64]) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(buckets.to_vec())
        .build()
}

fn counter(meter: &Meter, name: &'static str, unit: &'static str, description: &'static str) -> Counter<u64> {
    meter
        .u64_counter(name)
        .with_unit(unit)
        .with_description(description)
        .build()
}

fn gauge(
    meter: &Meter,
    name: &'static str,
    unit: &'static str,
    description: &'static str,
    level: fn(&Gauges) -> &AtomicI64,
) -> ObservableGauge<i64> {
    meter
        .i64_observable_gauge(name)
        .with_unit(unit)
        .with_description(description)
        .with_callback(move |observer| {
            let value = level(&GAUGES).load(Ordering::Relaxed);
            if value != UNSAMPLED {
                observer.observe(value, &[]);
            }
        })
        .build()
}

/// The instruments.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = meter();
        Metrics {
            tool_duration: histogram(
                &meter,
                "mcp.server.operation.duration",
                "MCP requests, from received to answered.",
                DURATION_BUCKETS,
            ),
            tool_calls: counter(
                &meter,
                "agentprocess.tool.calls",
                "{call}",
                "Tool calls by tool and outcome.",
            ),
            http_duration: histogram(
                &meter,
                "http.server.request.duration",
                "HTTP requests, from received to answered.",
                DURATION_BUCKETS,
            ),
            lock_wait: histogram(
                &meter,
                "agentprocess.run.lock.wait",
                "Waits for a run's lock.",
                LOCK_BUCKETS,
            ),
            runs_started: counter(&meter, "agentprocess.runs.started", "{run}", "Runs started."),
            runs_ended: counter(&meter, "agentprocess.runs.ended", "{run}", "Runs ended or cancelled."),
            steps_overdue: counter(
                &meter,
                "agentprocess.steps.overdue",
                "{step}",
                "Steps whose due time passed while they were open.",
            ),
            timers_scheduled: counter(&meter, "agentprocess.timers.scheduled", "{timer}", "Timers set."),
            timers_fired: counter(&meter, "agentprocess.timers.fired", "{timer}", "Timers applied."),
            timer_lateness: histogram(
                &meter,
                "agentprocess.timers.lateness",
                "How long after its time a timer was applied.",
                LATENESS_BUCKETS,
            ),
            webhook_deliveries: counter(
                &meter,
                "agentprocess.webhook.deliveries",
                "{attempt}",
                "Webhook delivery attempts by result.",
            ),
            messages: counter(
                &meter,
                "agentprocess.messages",
                "{message}",
                "Messages to people by channel and result.",
            ),
            _gauges: [
                gauge(
                    &meter,
                    "agentprocess.steps.ready",
                    "{step}",
                    "Agent steps ready to be claimed.",
                    |g| &g.ready_steps,
                ),
                gauge(
                    &meter,
                    "agentprocess.work_items.open",
                    "{item}",
                    "Open work items of people.",
                    |g| &g.open_work_items,
                ),
                gauge(
                    &meter,
                    "agentprocess.timers.queued",
                    "{timer}",
                    "Timers waiting in the Redis queue.",
                    |g| &g.queued_timers,
                ),
            ],
        }
    })
}

/// Reports `agentprocess.db.connections.dead`: the pool's connections found dead (a
/// check unanswered, or the connection lost under a statement) and replaced, ever.
/// `sample` returns the count.
pub fn observe_dead_connections(name: &'static str, sample: impl Fn() -> u64 + Send + Sync + 'static) {
    static COUNTERS: std::sync::Mutex<Vec<ObservableCounter<u64>>> = std::sync::Mutex::new(Vec::new());
    let counter = meter()
        .u64_observable_counter("agentprocess.db.connections.dead")
        .with_unit("{connection}")
        .with_description("Database connections found dead and replaced.")
        .with_callback(move |observer| {
            observer.observe(sample(), &[KeyValue::new("db.client.connection.pool.name", name)]);
        })
        .build();
    // The instrument is kept for the life of the process.
    if let Ok(mut counters) = COUNTERS.lock() {
        counters.push(counter);
    }
}

/// Reports a connection pool as `db.client.connection.count` by
/// `db.client.connection.state` (`used`, `idle`). `sample` returns (open, idle).
pub fn observe_pool(name: &'static str, sample: impl Fn() -> (u64, u64) + Send + Sync + 'static) {
    static POOLS: std::sync::Mutex<Vec<ObservableUpDownCounter<i64>>> = std::sync::Mutex::new(Vec::new());
    let counter = meter()
        .i64_observable_up_down_counter("db.client.connection.count")
        .with_unit("{connection}")
        .with_description("Database connections by state.")
        .with_callback(move |observer| {
            let (open, idle) = sample();
            let used = open.saturating_sub(idle);
            for (state, count) in [("used", used), ("idle", idle)] {
                observer.observe(
                    i64::try_from(count).unwrap_or(i64::MAX),
                    &[
                        KeyValue::new("db.client.connection.pool.name", name),
                        KeyValue::new("db.client.connection.state", state),
                    ],
                );
            }
        })
        .build();
    // The instrument is kept for the life of the process.
    if let Ok(mut pools) = POOLS.lock() {
        pools.push(counter);
    }
}
