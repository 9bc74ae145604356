//! A run's write with everything that goes with it ([`RunWrite`]): on PostgreSQL one
//! statement, a compare-and-set on the run's revision; on SQLite the same parts one
//! after another in the caller's transaction.

use sqlx::{AnyConnection, Row};

use crate::model::{Piece, RunRow, RunWrite, WorkRow, WriteOutcome};
use crate::runs::{Query, REQUEST_INSERT, record_request, request_values};
use crate::{Error, Result};

/// How many pieces a write adds, as the `runs.pieces` increment.
fn piece_count(run: &RunRow) -> i64 {
    i64::try_from(run.pieces.len()).unwrap_or(i64::MAX)
}

/// The tuples of a run's new pieces; `None` when it has none.
fn pieces_values(query: &mut Query, org_bind: &str, run_bind: &str, pieces: &[Piece]) -> Option<String> {
    if pieces.is_empty() {
        return None;
    }
    Some(tuples(pieces.iter().map(|piece| {
        vec![
            org_bind.to_owned(),
            run_bind.to_owned(),
            query.int(piece.number),
            query.text(&piece.body),
        ]
    })))
}

/// The tuples of a new run's input hashes; `None` when it has no inputs.
fn inputs_values(query: &mut Query, org_bind: &str, run_bind: &str, run: &RunRow) -> Option<String> {
    if run.inputs.is_empty() {
        return None;
    }
    let started = query.int(run.started_at);
    Some(tuples(run.inputs.iter().map(|(field, value_hash)| {
        vec![
            org_bind.to_owned(),
            run_bind.to_owned(),
            query.text(field),
            query.text(value_hash),
            started.clone(),
        ]
    })))
}

/// Writes `write` statement by statement, inside the caller's transaction (SQLite, and
/// Citus: [`crate::Writes::InSteps`]). The run's row is updated first, so the rest waits
/// for its lock.
pub(crate) async fn write_in_steps(
    connection: &mut AnyConnection,
    org: &str,
    write: &RunWrite<'_>,
) -> Result<WriteOutcome> {
    let run = write.row;
    match write.revision {
        None => {
            sqlx::query(
                "INSERT INTO runs (org_id, id, process, version, mode, state, started_at, updated_at, doc, pieces) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(org)
            .bind(&run.id)
            .bind(&run.process)
            .bind(i64::from(run.version))
            .bind(run.mode.as_str())
            .bind(run.state.as_str())
            .bind(run.started_at)
            .bind(run.updated_at)
            .bind(&run.doc)
            .bind(piece_count(run))
            .execute(&mut *connection)
            .await?;
            let mut query = Query::new("");
            let (org_bind, run_bind) = (query.text(org), query.text(&run.id));
            if let Some(values) = inputs_values(&mut query, &org_bind, &run_bind, run) {
                query.push(&format!("{INPUTS_INSERT} VALUES {values}"));
                query.fetch(&mut *connection).await?;
            }
        }
        Some(revision) => {
            let updated = sqlx::query(
                "UPDATE runs SET state = $3, updated_at = $4, doc = $5, pieces = pieces + $6, revision = revision + 1 \
                 WHERE org_id = $1 AND id = $2 AND revision = $7",
            )
            .bind(org)
            .bind(&run.id)
            .bind(run.state.as_str())
            .bind(run.updated_at)
            .bind(&run.doc)
            .bind(piece_count(run))
            .bind(revision)
            .execute(&mut *connection)
            .await?;
            if updated.rows_affected() != 1 {
                return Ok(WriteOutcome::RunChanged);
            }
        }
    }
    let mut query = Query::new("");
    let (org_bind, run_bind) = (query.text(org), query.text(&run.id));
    if let Some(values) = pieces_values(&mut query, &org_bind, &run_bind, &run.pieces) {
        query.push(&format!("{PIECES_INSERT} VALUES {values}"));
        query.fetch(&mut *connection).await?;
    }
    put_work(connection, org, run).await?;
    for timer_id in &write.cancelled {
        crate::timers::remove_timer(connection, org, &run.id, timer_id).await?;
    }
    for timer in &write.timers {
        crate::timers::schedule_timer(connection, timer).await?;
    }
    let mut deliveries = 0;
    for notification in &write.notifications {
        deliveries += crate::outbox::add_notification(connection, org, notification).await?;
    }
    for entry in &write.audit {
        crate::directory::append_audit(connection, org, entry).await?;
    }
    if let Some(request) = &write.request
        && !record_request(connection, org, request).await?
    {
        return Ok(WriteOutcome::AlreadyRecorded);
    }
    Ok(WriteOutcome::Written { deliveries })
}

/// PostgreSQL: `write` as one statement, which is its own transaction when no other is
/// open. The run's row comes first (`changed`): inserted, or updated only if its
/// revision is still the one read, which takes the run's row lock for the rest of the
/// statement. Every other part reads `changed`, so when the revision moved on nothing
/// at all is written. The `requestId`'s record is a plain insert: a concurrent write
/// with the same id makes it wait, and then fail the whole statement if that write
/// committed.
pub(crate) async fn write_in_one_statement(
    connection: &mut AnyConnection,
    org: &str,
    write: &RunWrite<'_>,
) -> Result<WriteOutcome> {
    let mut statement = Statement::new(org, write);
    statement.index_rows(write);
    statement.effects(write);
    let deliveries = statement.notifications(write);
    let Statement { mut query, parts, .. } = statement;
    query.push(&format!(
        "WITH {} SELECT (SELECT count(*) FROM changed) AS changed, {deliveries} AS deliveries",
        parts.join(", ")
    ));
    let rows = match query.fetch(connection).await {
        Ok(rows) => rows,
        Err(Error::Database(sqlx::Error::Database(error)))
            if request_taken(error.code().as_deref(), error.constraint(), error.message()) =>
        {
            return Ok(WriteOutcome::AlreadyRecorded);
        }
        // lock_not_available: another transaction holds the run's row.
        Err(Error::Database(sqlx::Error::Database(error))) if error.code().as_deref() == Some("55P03") => {
            return Ok(WriteOutcome::RunChanged);
        }
        Err(error) => return Err(error),
    };
    let row = rows
        .first()
        .ok_or_else(|| Error::Corrupt("a run's write answered no row".to_owned()))?;
    if row.try_get::<i64, _>("changed")? == 0 {
        return Ok(WriteOutcome::RunChanged);
    }
    let deliveries: i64 = row.try_get("deliveries")?;
    Ok(WriteOutcome::Written {
        deliveries: u64::try_from(deliveries).unwrap_or(0),
    })
}

/// Whether a write failed on its `requestId`'s record, taken by another write: a
/// unique violation of the idempotency table's primary key.
///
/// On Citus the constraint is a shard's, named with the shard's number
/// (`idempotency_pkey_102186`), and an `INSERT … SELECT` that the coordinator runs by
/// pulling its rows and copying them to the worker re-raises the worker's error
/// without its SQLSTATE (`XX000`) or constraint: only its words name them.
fn request_taken(code: Option<&str>, constraint: Option<&str>, message: &str) -> bool {
    const VIOLATES: &str = "duplicate key value violates unique constraint \"";
    let named = || message.strip_prefix(VIOLATES)?.split('"').next();
    let constraint = match code {
        Some("23505") => constraint.or_else(named),
        Some("XX000") => named(),
        _ => None,
    };
    constraint.is_some_and(|name| {
        name.strip_prefix("idempotency_pkey").is_some_and(|shard| {
            shard.is_empty()
                || shard
                    .strip_prefix('_')
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

/// The one statement of a write, built part by part: `WITH changed AS (…), …`.
struct Statement {
    query: Query,
    /// The binds of the organization and the run.
    org: String,
    run: String,
    parts: Vec<String>,
}

impl Statement {
    /// Starts with the run's row (`changed`): inserted, or updated at the revision read.
    fn new(org: &str, write: &RunWrite<'_>) -> Self {
        let run = write.row;
        let mut query = Query::new("");
        let (org, run_bind) = (query.text(org), query.text(&run.id));
        let state = query.text(run.state.as_str());
        let updated_at = query.int(run.updated_at);
        let doc = query.text(&run.doc);
        let added = query.int(piece_count(run));
        let changed = match write.revision {
            None => {
                let (process, version, mode, started_at) = (
                    query.text(&run.process),
                    query.int(i64::from(run.version)),
                    query.text(run.mode.as_str()),
                    query.int(run.started_at),
                );
                format!(
                    "changed AS (INSERT INTO runs (org_id, id, process, version, mode, state, started_at, \
                     updated_at, doc, pieces) VALUES ({org}, {run_bind}, {process}, {version}, {mode}, {state}, \
                     {started_at}, {updated_at}, {doc}, {added}) RETURNING 1)"
                )
            }
            // The row is locked without waiting: a statement that waited for a lock
            // could go on to commit after its caller gave up on it, and a call must
            // change nothing once it is answered `retry`. A locked row reads as
            // changed, and the write is made again, at last in a transaction of its
            // own, which ends with the call.
            Some(revision) => {
                let revision = query.int(revision);
                format!(
                    "locked AS (SELECT 1 FROM runs WHERE org_id = {org} AND id = {run_bind} \
                     AND revision = {revision} FOR UPDATE NOWAIT), \
                     changed AS (UPDATE runs SET state = {state}, updated_at = {updated_at}, doc = {doc}, \
                     pieces = pieces + {added}, revision = revision + 1 \
                     WHERE org_id = {org} AND id = {run_bind} AND revision = {revision} \
                     AND EXISTS (SELECT 1 FROM locked) RETURNING 1)"
                )
            }
        };
        Self {
            query,
            org,
            run: run_bind,
            parts: vec![changed],
        }
    }

    /// `name AS (insert rows…)`: the rows are inserted only if the run's row was written.
    /// Each of `values` has `width` columns, the organization first; the organization
    /// is selected as the bind itself, so that the statement names it for the row.
    fn insert(&mut self, name: &str, (insert, width): (&str, usize), values: &str, rest: &str) {
        let columns: Vec<String> = (2..=width).map(|column| format!("v.column{column}")).collect();
        self.parts.push(format!(
            "{name} AS ({insert} SELECT {}, {} FROM changed, (VALUES {values}) AS v {rest})",
            self.org,
            columns.join(", ")
        ));
    }

    /// The run's rows of `table` whose `column` is one of `ids`, removed only if the
    /// run's row was written.
    fn remove(&mut self, name: &str, table: &str, column: &str, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        let ids: Vec<String> = ids.iter().map(|id| self.query.text(id)).collect();
        self.parts.push(format!(
            "{name} AS (DELETE FROM {table} WHERE org_id = {} AND run_id = {} \
             AND {column} IN ({}) AND EXISTS (SELECT 1 FROM changed))",
            self.org,
            self.run,
            ids.join(", ")
        ));
    }

    /// A new run's input hashes, new pieces, and the work rows gone, new or changed.
    fn index_rows(&mut self, write: &RunWrite<'_>) {
        let run = write.row;
        let (org, run_bind) = (self.org.clone(), self.run.clone());
        if write.revision.is_none()
            && let Some(values) = inputs_values(&mut self.query, &org, &run_bind, run)
        {
            self.insert("inputs", (INPUTS_INSERT, 5), &values, "");
        }
        if let Some(values) = pieces_values(&mut self.query, &org, &run_bind, &run.pieces) {
            self.insert("apart", (PIECES_INSERT, 4), &values, "");
        }
        self.remove("gone", "work_index", "step_id", &run.gone);
        if !run.work.is_empty() {
            let values = work_values(&mut self.query, &org, &run.work);
            self.insert("work", (WORK_INSERT, 12), &values, WORK_UPSERT);
        }
    }

    /// Timers cancelled and set, audit entries, and the request's record.
    fn effects(&mut self, write: &RunWrite<'_>) {
        let (org, run_bind) = (self.org.clone(), self.run.clone());
        self.remove("unset", "timers", "timer_id", &write.cancelled);
        if !write.timers.is_empty() {
            let query = &mut self.query;
            let values = tuples(write.timers.iter().map(|timer| {
                vec![
                    org.clone(),
                    run_bind.clone(),
                    query.text(&timer.timer_id),
                    query.int(timer.fire_at),
                    query.optional_text(timer.trace_parent.as_deref()),
                ]
            }));
            self.insert(
                "timed",
                (crate::timers::TIMER_INSERT, 5),
                &values,
                crate::timers::TIMER_UPSERT,
            );
        }
        if !write.audit.is_empty() {
            let query = &mut self.query;
            let values = tuples(write.audit.iter().map(|entry| {
                vec![
                    org.clone(),
                    query.text(&entry.id),
                    query.int(entry.at),
                    query.text(&entry.actor),
                    query.text(&entry.kind),
                    query.optional_text(entry.target.as_deref()),
                    query.text(&entry.detail),
                    query.optional_text(entry.address.as_deref()),
                ]
            }));
            self.insert("audited", (crate::directory::AUDIT_INSERT, 8), &values, "");
        }
        if let Some(request) = &write.request {
            let values = format!("({})", request_values(&mut self.query, &org, request).join(", "));
            self.insert("recorded", (REQUEST_INSERT, 6), &values, "");
        }
    }

    /// The notifications and a delivery of each per webhook endpoint; the expression
    /// that counts the deliveries.
    fn notifications(&mut self, write: &RunWrite<'_>) -> &'static str {
        if write.notifications.is_empty() {
            return "0";
        }
        let org = self.org.clone();
        let query = &mut self.query;
        let values = tuples(write.notifications.iter().map(|notification| {
            vec![
                org.clone(),
                query.text(notification.id),
                query.text(notification.run_id),
                query.text(notification.event),
                query.text(notification.body),
                query.int(notification.created_at),
                query.optional_text(notification.trace_parent),
            ]
        }));
        self.insert(
            "noticed",
            (crate::outbox::NOTIFICATION_INSERT, 7),
            &values,
            "RETURNING id, created_at",
        );
        self.parts.push(format!(
            "delivered AS ({} SELECT {org}, n.id, w.id, 'pending', 0, n.created_at, n.created_at \
             FROM noticed n JOIN webhooks w ON w.org_id = {org} RETURNING 1)",
            crate::outbox::DELIVERY_INSERT
        ));
        "(SELECT count(*) FROM delivered)"
    }
}

const INPUTS_INSERT: &str = "INSERT INTO run_inputs (org_id, run_id, field, value_hash, started_at)";

const PIECES_INSERT: &str = "INSERT INTO run_pieces (org_id, run_id, piece, body)";

/// `(…), (…)`: one parenthesised tuple per row.
fn tuples(rows: impl IntoIterator<Item = Vec<String>>) -> String {
    rows.into_iter()
        .map(|row| format!("({})", row.join(", ")))
        .collect::<Vec<_>>()
        .join(", ")
}

const WORK_INSERT: &str = "INSERT INTO work_index (org_id, run_id, step_id, kind, process, since, lease_until, \
    assignee_group, assignee_person, item, due_at, bound_to)";

const WORK_UPSERT: &str = "ON CONFLICT (org_id, run_id, step_id) DO UPDATE SET kind = excluded.kind, \
    since = excluded.since, lease_until = excluded.lease_until, assignee_group = excluded.assignee_group, \
    assignee_person = excluded.assignee_person, item = excluded.item, due_at = excluded.due_at, \
    bound_to = excluded.bound_to";

/// Deletes the run's work rows that are gone, and writes the new and changed ones in
/// one statement.
async fn put_work(connection: &mut AnyConnection, org: &str, run: &RunRow) -> Result<()> {
    for step in &run.gone {
        sqlx::query("DELETE FROM work_index WHERE org_id = $1 AND run_id = $2 AND step_id = $3")
            .bind(org)
            .bind(&run.id)
            .bind(step)
            .execute(&mut *connection)
            .await?;
    }
    if run.work.is_empty() {
        return Ok(());
    }
    let mut query = Query::new("");
    let org_bind = query.text(org);
    let values = work_values(&mut query, &org_bind, &run.work);
    query.push(&format!("{WORK_INSERT} VALUES {values} {WORK_UPSERT}"));
    query.fetch(connection).await?;
    Ok(())
}

/// The `VALUES` tuples of work rows, in `WORK_INSERT`'s column order.
fn work_values(query: &mut Query, org_bind: &str, rows: &[WorkRow]) -> String {
    let tuples: Vec<String> = rows
        .iter()
        .map(|work| {
            let values = [
                org_bind.to_owned(),
                query.text(&work.run_id),
                query.text(&work.step_id),
                query.text(&work.kind.to_string()),
                query.text(&work.process),
                query.int(work.since),
                query.optional_int(work.lease_until),
                query.optional_text(work.group.as_deref()),
                query.optional_text(work.person.as_deref()),
                query.optional_text(work.item.as_deref()),
                query.optional_int(work.due_at),
                query.optional_text(work.bound_to.as_deref()),
            ];
            format!("({})", values.join(", "))
        })
        .collect();
    tuples.join(", ")
}

#[cfg(test)]
mod tests {
    use super::request_taken;

    #[test]
    fn the_request_ids_record_taken_is_known_on_postgresql_and_on_citus() {
        let words = |name: &str| format!("duplicate key value violates unique constraint \"{name}\"");
        // PostgreSQL.
        assert!(request_taken(
            Some("23505"),
            Some("idempotency_pkey"),
            &words("idempotency_pkey")
        ));
        // Citus, a statement routed to the shard: the shard's constraint.
        assert!(request_taken(
            Some("23505"),
            Some("idempotency_pkey_102186"),
            &words("idempotency_pkey_102186")
        ));
        assert!(request_taken(Some("23505"), None, &words("idempotency_pkey_102186")));
        // Citus, an INSERT … SELECT copied through the coordinator: only the words.
        assert!(request_taken(Some("XX000"), None, &words("idempotency_pkey_102186")));
        // Other constraints, other errors.
        assert!(!request_taken(
            Some("23505"),
            Some("timers_pkey"),
            &words("timers_pkey")
        ));
        assert!(!request_taken(
            Some("23505"),
            Some("idempotency_pkeyx"),
            &words("idempotency_pkeyx")
        ));
        assert!(!request_taken(
            Some("23505"),
            Some("idempotency_pkey_"),
            &words("idempotency_pkey_")
        ));
        assert!(!request_taken(Some("XX000"), None, "could not connect to worker"));
        assert!(!request_taken(Some("XX000"), None, &words("work_index_pkey_102300")));
        assert!(!request_taken(Some("40001"), None, &words("idempotency_pkey")));
    }
}
