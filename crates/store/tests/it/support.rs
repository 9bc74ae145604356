//! Rows for the store's tests; the database per test comes from agentprocess-testkit.

use agentprocess_engine::{Mode, RunState};
use agentprocess_store::{NewRequest, RunRow, RunWrite, SqlTx, StoreTx, WorkKind, WorkRow, WriteOutcome};

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

/// A write of `row` alone, with `request` (the revision and the rest empty).
pub(crate) fn bare<'a>(row: &'a RunRow, revision: Option<i64>, request: Option<NewRequest<'a>>) -> RunWrite<'a> {
    RunWrite {
        request,
        ..RunWrite::new(row, revision)
    }
}

/// Writing a run row in a test transaction, as the service does: a new run, or one
/// replaced at the revision it has now.
pub(crate) trait PutRun {
    /// Writes `row` (with `request`); whether the request was recorded (always, with
    /// none).
    async fn put_run(
        &mut self,
        org: &str,
        row: &RunRow,
        new: bool,
        request: Option<&NewRequest<'_>>,
    ) -> agentprocess_store::Result<bool>;
}

impl PutRun for SqlTx {
    async fn put_run(
        &mut self,
        org: &str,
        row: &RunRow,
        new: bool,
        request: Option<&NewRequest<'_>>,
    ) -> agentprocess_store::Result<bool> {
        let revision = if new {
            None
        } else {
            let (run, _) = self.lock_run(org, &row.id, None).await?.expect("the run to replace");
            Some(run.revision)
        };
        match self.write_run(org, &bare(row, revision, request.cloned())).await? {
            WriteOutcome::Written { .. } => Ok(true),
            WriteOutcome::AlreadyRecorded => Ok(false),
            WriteOutcome::RunChanged => panic!("the run changed under its lock"),
        }
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
