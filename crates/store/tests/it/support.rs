//! Rows for the store's tests; the database per test comes from agentprocess-testkit.

use agentprocess_engine::{Mode, RunState};
use agentprocess_store::{RunRow, WorkKind, WorkRow};

pub(crate) use agentprocess_testkit::{TestDb, on_both};

/// A run row with the given times and inputs, no work.
pub(crate) fn run_row(id: &str, process: &str, state: RunState, started_at: i64, inputs: &[(&str, &str)]) -> RunRow {
    RunRow {
        id: id.to_owned(),
        process: process.to_owned(),
        version: 1,
        mode: Mode::Live,
        state,
        started_at,
        updated_at: started_at,
        doc: format!("{{\"id\":\"{id}\"}}"),
        pieces: Vec::new(),
        inputs: inputs.iter().map(|(f, v)| ((*f).to_owned(), (*v).to_owned())).collect(),
        work: Vec::new(),
        gone: Vec::new(),
    }
}

/// A work row of `run` for `step`.
pub(crate) fn work_row(run: &str, step: &str, kind: WorkKind, since: i64) -> WorkRow {
    WorkRow {
        run_id: run.to_owned(),
        step_id: step.to_owned(),
        kind,
        process: "p".to_owned(),
        since,
        lease_until: None,
        group: None,
        person: None,
        item: None,
        due_at: None,
        bound_to: None,
    }
}

pub(crate) fn person(
    org: &str,
    id: &str,
    role: agentprocess_store::Role,
    groups: &[&str],
) -> agentprocess_store::Identity {
    agentprocess_store::Identity {
        org: org.to_owned(),
        id: id.to_owned(),
        kind: agentprocess_store::IdentityKind::Person,
        role: Some(role),
        person: Some(format!("{id}@example.com")),
        name: id.to_owned(),
        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
        deactivated_at: None,
    }
}

pub(crate) fn mcp_token(org: &str, identity: &str, hash: &str) -> agentprocess_store::TokenRow {
    agentprocess_store::TokenRow {
        id: format!("tok-{hash}"),
        org: org.to_owned(),
        identity: identity.to_owned(),
        token_hash: hash.to_owned(),
        audience: agentprocess_store::Audience::Mcp,
        scope: None,
        name: None,
        expires_at: None,
        created_by: None,
        created_at: 1,
        revoked_at: None,
    }
}

/// Writes `rows` (SQL statements) straight into the test's database, so a test reads
/// exactly what the store makes of them.
pub(crate) async fn seed(db: &TestDb, rows: &str) {
    sqlx::any::install_default_drivers();
    let mut connection = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .expect("connect");
    sqlx::raw_sql(rows).execute(&mut connection).await.expect("rows");
}
