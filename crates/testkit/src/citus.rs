//! The PostgreSQL tests on a Citus cluster, when `AGENTPROCESS_TEST_CITUS_WORKERS`
//! names the workers (`host:port`, comma-separated) of the coordinator
//! `AGENTPROCESS_TEST_PG` names: each test's database is made a cluster's and, once
//! migrated, distributed by `deploy/citus/cluster-database`, as `docs/operations.md`
//! has an operator do. Unset (as in CI, which has no Citus), nothing here runs.

/// The workers named by `AGENTPROCESS_TEST_CITUS_WORKERS`.
fn workers() -> Vec<String> {
    std::env::var("AGENTPROCESS_TEST_CITUS_WORKERS")
        .unwrap_or_default()
        .split(',')
        .filter(|worker| !worker.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Runs `deploy/citus/cluster-database <step>` for the database `name`: `prepare`
/// (once it is made on the coordinator), `distribute` (once migrated) or `drop`.
/// Without workers named, nothing.
#[allow(clippy::expect_used)]
pub(crate) async fn step(step: &'static str, name: &str) {
    let workers = workers();
    if workers.is_empty() {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/citus/cluster-database");
    let status = tokio::process::Command::new(script)
        .args([step, &crate::pg_server(), name])
        .args(workers)
        .status()
        .await
        .expect("deploy/citus/cluster-database runs");
    assert!(status.success(), "cluster-database {step} {name}: {status}");
}
