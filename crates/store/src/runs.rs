//! Runs, their index rows, idempotency records and uploads.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::model::{
    Keyset, NewRequest, NewUpload, Page, Piece, RunFilter, RunRow, RunWrite, StoredRequest, StoredRun, Upload,
    WorkKind, WorkLevels, WorkQuery, WorkRow, WriteOutcome,
};
use crate::{Error, Result};

pub(crate) async fn run(connection: &mut AnyConnection, org: &str, id: &str) -> Result<Option<StoredRun>> {
    let row = sqlx::query("SELECT id, doc, pieces, revision FROM runs WHERE org_id = $1 AND id = $2")
        .bind(org)
        .bind(id)
        .fetch_optional(&mut *connection)
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(with_pieces(connection, org, vec![stored_run(&row)?]).await?.pop())
}

pub(crate) async fn runs(connection: &mut AnyConnection, org: &str, ids: &[String]) -> Result<Vec<StoredRun>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut query = Query::new("");
    let org_bind = query.text(org);
    let binds: Vec<String> = ids.iter().map(|id| query.text(id)).collect();
    query.push(&format!(
        "SELECT id, doc, pieces, revision FROM runs WHERE org_id = {org_bind} AND id IN ({})",
        binds.join(", ")
    ));
    let found = query
        .fetch(&mut *connection)
        .await?
        .iter()
        .map(stored_run)
        .collect::<Result<_>>()?;
    with_pieces(connection, org, found).await
}

/// The run, locked (`FOR UPDATE` on PostgreSQL; SQLite's one connection needs no
/// lock), with what is recorded under `request_id`, in one round trip (two when the
/// run has pieces).
pub(crate) async fn lock_run(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    request_id: Option<&str>,
    lock: &str,
) -> Result<Option<(StoredRun, Option<StoredRequest>)>> {
    let row = sqlx::query(&format!(
        "SELECT r.id, r.doc, r.pieces, r.revision, i.tool, i.args_hash, i.result FROM runs r \
         LEFT JOIN idempotency i ON i.org_id = r.org_id AND i.request_id = $3 \
         WHERE r.org_id = $1 AND r.id = $2{lock}"
    ))
    .bind(org)
    .bind(id)
    .bind(request_id.unwrap_or(""))
    .fetch_optional(&mut *connection)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let request = match row.try_get::<Option<String>, _>("result")? {
        Some(result) => Some(StoredRequest {
            tool: row.try_get("tool")?,
            args_hash: row.try_get("args_hash")?,
            result,
        }),
        None => None,
    };
    // A replay answers from the request's record; the run itself is not needed.
    let (run, count) = stored_run(&row)?;
    let run = match request {
        Some(_) => run,
        None => with_pieces(connection, org, vec![(run, count)]).await?.remove(0),
    };
    Ok(Some((run, request)))
}

/// A run's row as read, with its piece count; its pieces are read by [`with_pieces`].
pub(crate) fn stored_run(row: &AnyRow) -> Result<(StoredRun, i64)> {
    let run = StoredRun {
        id: row.try_get("id")?,
        doc: row.try_get("doc")?,
        pieces: Vec::new(),
        revision: row.try_get("revision")?,
    };
    Ok((run, row.try_get("pieces")?))
}

/// Fills in the pieces of the runs that have any, in one query. Pieces are written
/// once and never change, so reading them after the row (outside its lock, too) finds
/// every piece the row's document names.
pub(crate) async fn with_pieces(
    connection: &mut AnyConnection,
    org: &str,
    mut runs: Vec<(StoredRun, i64)>,
) -> Result<Vec<StoredRun>> {
    let apart: Vec<&str> = runs
        .iter()
        .filter(|(_, count)| *count > 0)
        .map(|(run, _)| run.id.as_str())
        .collect();
    if !apart.is_empty() {
        let mut query = Query::new("");
        let org_bind = query.text(org);
        let binds: Vec<String> = apart.iter().map(|id| query.text(id)).collect();
        query.push(&format!(
            "SELECT run_id, piece, body FROM run_pieces WHERE org_id = {org_bind} AND run_id IN ({}) \
             ORDER BY run_id, piece",
            binds.join(", ")
        ));
        for row in query.fetch(connection).await? {
            let run_id: String = row.try_get("run_id")?;
            let piece = Piece {
                number: row.try_get("piece")?,
                body: row.try_get("body")?,
            };
            if let Some((run, _)) = runs.iter_mut().find(|(run, _)| run.id == run_id) {
                run.pieces.push(piece);
            }
        }
    }
    Ok(runs.into_iter().map(|(run, _)| run).collect())
}

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

/// Writes `write` statement by statement, inside the caller's transaction (SQLite).
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
    let run = write.row;
    let mut query = Query::new("");
    let org_bind = query.text(org);
    let run_bind = query.text(&run.id);
    let state = query.text(run.state.as_str());
    let updated_at = query.int(run.updated_at);
    let doc = query.text(&run.doc);
    let added = query.int(piece_count(run));
    let mut parts = vec![match write.revision {
        None => {
            let (process, version, mode, started_at) = (
                query.text(&run.process),
                query.int(i64::from(run.version)),
                query.text(run.mode.as_str()),
                query.int(run.started_at),
            );
            format!(
                "changed AS (INSERT INTO runs (org_id, id, process, version, mode, state, started_at, updated_at, \
                 doc, pieces) VALUES ({org_bind}, {run_bind}, {process}, {version}, {mode}, {state}, {started_at}, \
                 {updated_at}, {doc}, {added}) RETURNING 1)"
            )
        }
        Some(revision) => {
            let revision = query.int(revision);
            format!(
                "changed AS (UPDATE runs SET state = {state}, updated_at = {updated_at}, doc = {doc}, \
                 pieces = pieces + {added}, revision = revision + 1 \
                 WHERE org_id = {org_bind} AND id = {run_bind} AND revision = {revision} RETURNING 1)"
            )
        }
    }];
    // Rows to insert only if the run's row was written.
    let if_changed = |values: String| format!("SELECT v.* FROM changed, (VALUES {values}) AS v");
    if write.revision.is_none()
        && let Some(values) = inputs_values(&mut query, &org_bind, &run_bind, run)
    {
        parts.push(format!("inputs AS ({INPUTS_INSERT} {})", if_changed(values)));
    }
    if let Some(values) = pieces_values(&mut query, &org_bind, &run_bind, &run.pieces) {
        parts.push(format!("apart AS ({PIECES_INSERT} {})", if_changed(values)));
    }
    // The run's rows of `table` whose `column` is one of `ids`, removed only if the
    // run's row was written.
    let mut remove = |name: &str, table: &str, column: &str, ids: &[String]| {
        if ids.is_empty() {
            return;
        }
        let ids: Vec<String> = ids.iter().map(|id| query.text(id)).collect();
        parts.push(format!(
            "{name} AS (DELETE FROM {table} WHERE org_id = {org_bind} AND run_id = {run_bind} \
             AND {column} IN ({}) AND EXISTS (SELECT 1 FROM changed))",
            ids.join(", ")
        ));
    };
    remove("gone", "work_index", "step_id", &run.gone);
    remove("unset", "timers", "timer_id", &write.cancelled);
    if !run.work.is_empty() {
        let values = work_values(&mut query, &org_bind, &run.work);
        parts.push(format!("work AS ({WORK_INSERT} {} {WORK_UPSERT})", if_changed(values)));
    }
    if !write.timers.is_empty() {
        let values = tuples(write.timers.iter().map(|timer| {
            vec![
                org_bind.clone(),
                run_bind.clone(),
                query.text(&timer.timer_id),
                query.int(timer.fire_at),
                query.optional_text(timer.trace_parent.as_deref()),
            ]
        }));
        parts.push(format!(
            "timed AS ({} {} {})",
            crate::timers::TIMER_INSERT,
            if_changed(values),
            crate::timers::TIMER_UPSERT
        ));
    }
    let deliveries = if write.notifications.is_empty() {
        "0"
    } else {
        let values = tuples(write.notifications.iter().map(|notification| {
            vec![
                org_bind.clone(),
                query.text(notification.id),
                query.text(notification.run_id),
                query.text(notification.event),
                query.text(notification.body),
                query.int(notification.created_at),
                query.optional_text(notification.trace_parent),
            ]
        }));
        parts.push(format!(
            "noticed AS ({} {} RETURNING id, created_at)",
            crate::outbox::NOTIFICATION_INSERT,
            if_changed(values)
        ));
        parts.push(format!(
            "delivered AS ({} SELECT {org_bind}, n.id, w.id, 'pending', 0, n.created_at, n.created_at \
             FROM noticed n JOIN webhooks w ON w.org_id = {org_bind} RETURNING 1)",
            crate::outbox::DELIVERY_INSERT
        ));
        "(SELECT count(*) FROM delivered)"
    };
    if !write.audit.is_empty() {
        let values = tuples(write.audit.iter().map(|entry| {
            vec![
                org_bind.clone(),
                query.text(&entry.id),
                query.int(entry.at),
                query.text(&entry.actor),
                query.text(&entry.kind),
                query.optional_text(entry.target.as_deref()),
                query.text(&entry.detail),
                query.optional_text(entry.address.as_deref()),
            ]
        }));
        parts.push(format!(
            "audited AS ({} {})",
            crate::directory::AUDIT_INSERT,
            if_changed(values)
        ));
    }
    if let Some(request) = &write.request {
        let values = format!("({})", request_values(&mut query, &org_bind, request).join(", "));
        parts.push(format!("recorded AS ({REQUEST_INSERT} {})", if_changed(values)));
    }
    query.push(&format!(
        "WITH {} SELECT (SELECT count(*) FROM changed) AS changed, {deliveries} AS deliveries",
        parts.join(", ")
    ));
    let rows = match query.fetch(connection).await {
        Ok(rows) => rows,
        Err(Error::Database(sqlx::Error::Database(error)))
            if error.is_unique_violation() && error.constraint() == Some("idempotency_pkey") =>
        {
            return Ok(WriteOutcome::AlreadyRecorded);
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

const INPUTS_INSERT: &str = "INSERT INTO run_inputs (org_id, run_id, field, value_hash, started_at)";

const PIECES_INSERT: &str = "INSERT INTO run_pieces (org_id, run_id, piece, body)";

const REQUEST_INSERT: &str = "INSERT INTO idempotency (org_id, request_id, tool, args_hash, result, created_at)";

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

/// A request's record, in `REQUEST_INSERT`'s column order.
fn request_values(query: &mut Query, org_bind: &str, request: &NewRequest<'_>) -> Vec<String> {
    vec![
        org_bind.to_owned(),
        query.text(request.request_id),
        query.text(request.tool),
        query.text(request.args_hash),
        query.text(request.result),
        query.int(request.at),
    ]
}

/// SQL built piece by piece, with its binds numbered in order.
pub(crate) struct Query {
    sql: String,
    binds: Vec<Bind>,
}

enum Bind {
    Text(String),
    Int(i64),
    NullText(Option<String>),
    NullInt(Option<i64>),
}

impl Query {
    pub(crate) fn new(sql: &str) -> Self {
        Self {
            sql: sql.to_owned(),
            binds: Vec::new(),
        }
    }

    pub(crate) fn text(&mut self, value: &str) -> String {
        self.binds.push(Bind::Text(value.to_owned()));
        format!("${}", self.binds.len())
    }

    pub(crate) fn int(&mut self, value: i64) -> String {
        self.binds.push(Bind::Int(value));
        format!("${}", self.binds.len())
    }

    pub(crate) fn optional_text(&mut self, value: Option<&str>) -> String {
        self.binds.push(Bind::NullText(value.map(str::to_owned)));
        format!("${}", self.binds.len())
    }

    pub(crate) fn optional_int(&mut self, value: Option<i64>) -> String {
        self.binds.push(Bind::NullInt(value));
        format!("${}", self.binds.len())
    }

    /// `($n, $m, …), …`: each row's values bound as text, for a row-value `IN` list.
    pub(crate) fn text_rows<'a, R: IntoIterator<Item = &'a str>>(
        &mut self,
        rows: impl IntoIterator<Item = R>,
    ) -> String {
        rows.into_iter()
            .map(|row| {
                let values: Vec<String> = row.into_iter().map(|value| self.text(value)).collect();
                format!("({})", values.join(", "))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn push(&mut self, fragment: &str) {
        self.sql.push_str(fragment);
    }

    pub(crate) async fn fetch(self, connection: &mut AnyConnection) -> Result<Vec<AnyRow>> {
        let mut query = sqlx::query(&self.sql);
        for bind in self.binds {
            query = match bind {
                Bind::Text(text) => query.bind(text),
                Bind::Int(int) => query.bind(int),
                Bind::NullText(text) => query.bind(text),
                Bind::NullInt(int) => query.bind(int),
            };
        }
        Ok(query.fetch_all(connection).await?)
    }
}

pub(crate) async fn list_runs(
    connection: &mut AnyConnection,
    org: &str,
    filter: &RunFilter,
) -> Result<Page<StoredRun>> {
    let mut query = Query::new("");
    let org_bind = query.text(org);
    // With an input filter, the first one drives the lookup through run_inputs' index.
    let (time, id) = if let Some(((field, value), rest)) = filter.inputs.split_first() {
        let field = query.text(field);
        let value = query.text(value);
        query.push(&format!(
            "SELECT r.id, r.doc, r.pieces, r.revision, i.started_at AS t FROM run_inputs i JOIN runs r ON r.org_id = i.org_id AND r.id = i.run_id \
             WHERE i.org_id = {org_bind} AND i.field = {field} AND i.value_hash = {value}"
        ));
        for (field, value) in rest {
            let field = query.text(field);
            let value = query.text(value);
            query.push(&format!(
                " AND EXISTS (SELECT 1 FROM run_inputs o WHERE o.org_id = r.org_id AND o.run_id = r.id \
                 AND o.field = {field} AND o.value_hash = {value})"
            ));
        }
        ("i.started_at", "i.run_id")
    } else {
        query.push(&format!(
            "SELECT r.id, r.doc, r.pieces, r.revision, r.started_at AS t FROM runs r WHERE r.org_id = {org_bind}"
        ));
        ("r.started_at", "r.id")
    };
    if let Some(process) = &filter.process {
        let process = query.text(process);
        query.push(&format!(" AND r.process = {process}"));
    }
    if let Some(state) = filter.state {
        let state = query.text(state.as_str());
        query.push(&format!(" AND r.state = {state}"));
    }
    if let Some(mode) = filter.mode {
        let mode = query.text(mode.as_str());
        query.push(&format!(" AND r.mode = {mode}"));
    }
    if let Some(from) = filter.started_from {
        let from = query.int(from);
        query.push(&format!(" AND {time} >= {from}"));
    }
    if let Some(before) = filter.started_before {
        let before = query.int(before);
        query.push(&format!(" AND {time} < {before}"));
    }
    let (beyond, order) = if filter.newest_first { ("<", " DESC") } else { (">", "") };
    if let Some(after) = &filter.after {
        let at = query.int(after.at);
        let after_id = query.text(&after.id);
        query.push(&format!(
            " AND ({time} {beyond} {at} OR ({time} = {at} AND {id} {beyond} {after_id}))"
        ));
    }
    let limit = query.int(i64::from(filter.limit) + 1);
    query.push(&format!(" ORDER BY {time}{order}, {id}{order} LIMIT {limit}"));
    let rows = query.fetch(&mut *connection).await?;
    let mut items = Vec::with_capacity(rows.len());
    let mut keys = Vec::with_capacity(rows.len());
    for row in &rows {
        items.push(stored_run(row)?);
        keys.push(row.try_get::<i64, _>("t")?);
    }
    let found = page(items, filter.limit, |(run, _), index| Keyset {
        at: keys[index],
        id: run.id.clone(),
    });
    Ok(Page {
        items: with_pieces(connection, org, found.items).await?,
        next: found.next,
    })
}

/// Cuts one extra row off and, if there was one, says where the next page starts.
fn page<T>(mut items: Vec<T>, limit: u32, key: impl Fn(&T, usize) -> Keyset) -> Page<T> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if items.len() <= limit {
        return Page { items, next: None };
    }
    items.truncate(limit);
    let next = items.last().map(|last| key(last, limit - 1));
    Page { items, next }
}

const WORK_COLUMNS: &str =
    "run_id, step_id, kind, process, since, lease_until, assignee_group, assignee_person, item, due_at, bound_to";

pub(crate) async fn work(connection: &mut AnyConnection, org: &str, work: &WorkQuery) -> Result<Page<WorkRow>> {
    let mut query = Query::new("");
    let org = query.text(org);
    // What every list shares after its own condition: the process, the page's start,
    // the order and the limit.
    let process = work.process.as_deref().map(|process| query.text(process));
    let after = work.after.as_ref().map(|after| {
        let (run_id, step_id) = after.id.split_once(' ').unwrap_or((after.id.as_str(), ""));
        (query.int(after.at), query.text(run_id), query.text(step_id))
    });
    let limit = query.int(i64::from(work.limit) + 1);
    let rest = {
        let mut rest = String::new();
        if let Some(process) = &process {
            rest.push_str(&format!(" AND process = {process}"));
        }
        if let Some((at, run_id, step_id)) = &after {
            rest.push_str(&format!(
                " AND (since > {at} OR (since = {at} AND (run_id > {run_id} OR (run_id = {run_id} AND step_id > {step_id}))))"
            ));
        }
        rest.push_str(&format!(" ORDER BY since, run_id, step_id LIMIT {limit}"));
        rest
    };
    match work.kind {
        WorkKind::Agent => {
            // The literal lets the planner use the partial index `work_agent` (or
            // `work_agent_by_process`).
            let now = query.int(work.now);
            let bound = claimable_by(&mut query, &org, work);
            query.push(&format!(
                "SELECT {WORK_COLUMNS} FROM work_index WHERE org_id = {org} AND kind = 'agent' \
                 AND (lease_until IS NULL OR lease_until <= {now}) AND {bound}{rest}"
            ));
        }
        WorkKind::Item => {
            // One ordered list per group and one for the person, each read in order from
            // its index and cut at the limit, then merged: an OR of them would make the
            // database gather and sort every open item of every one of them.
            let mut whom = Vec::new();
            for group in &work.groups {
                whom.push(format!("assignee_group = {}", query.text(group)));
            }
            if let Some(person) = &work.person {
                whom.push(format!("assignee_person = {}", query.text(person)));
            }
            if whom.is_empty() {
                return Ok(Page {
                    items: Vec::new(),
                    next: None,
                });
            }
            let lists: Vec<String> = whom
                .iter()
                .map(|who| {
                    format!(
                        "SELECT * FROM (SELECT {WORK_COLUMNS} FROM work_index WHERE org_id = {org} \
                         AND kind = 'item' AND {who}{rest}) AS list"
                    )
                })
                .collect();
            query.push(&format!(
                "SELECT {WORK_COLUMNS} FROM ({}) AS lists ORDER BY since, run_id, step_id LIMIT {limit}",
                lists.join(" UNION ")
            ));
        }
    }
    let rows = query.fetch(connection).await?;
    let items = rows.iter().map(work_row).collect::<Result<Vec<_>>>()?;
    Ok(page(items, work.limit, |row, _| Keyset {
        at: row.since,
        id: format!("{} {}", row.run_id, row.step_id),
    }))
}

/// The condition that keeps the agent steps the calling agent may claim: those bound to
/// nobody, and those whose binding names the agent or one of its groups.
fn claimable_by(query: &mut Query, org_bind: &str, work: &WorkQuery) -> String {
    let mut whom = Vec::new();
    if let Some(agent) = &work.agent {
        whom.push(format!("(b.kind = 'agent' AND b.who = {})", query.text(agent)));
    }
    if !work.groups.is_empty() {
        let groups: Vec<String> = work.groups.iter().map(|group| query.text(group)).collect();
        whom.push(format!("(b.kind = 'group' AND b.who IN ({}))", groups.join(", ")));
    }
    if whom.is_empty() {
        return "bound_to IS NULL".to_owned();
    }
    format!(
        "(bound_to IS NULL OR EXISTS (SELECT 1 FROM agent_bindings b WHERE b.org_id = {org_bind} \
         AND b.process = work_index.process AND b.binding = work_index.bound_to AND ({})))",
        whom.join(" OR ")
    )
}

fn work_row(row: &AnyRow) -> Result<WorkRow> {
    let kind: String = row.try_get("kind")?;
    Ok(WorkRow {
        run_id: row.try_get("run_id")?,
        step_id: row.try_get("step_id")?,
        kind: WorkKind::parse(&kind).ok_or_else(|| Error::Corrupt(format!("work kind {kind:?}")))?,
        process: row.try_get("process")?,
        since: row.try_get("since")?,
        lease_until: row.try_get("lease_until")?,
        group: row.try_get("assignee_group")?,
        person: row.try_get("assignee_person")?,
        item: row.try_get("item")?,
        due_at: row.try_get("due_at")?,
        bound_to: row.try_get("bound_to")?,
    })
}

/// The organization's open work that was due before `now`, longest overdue first.
pub(crate) async fn overdue(connection: &mut AnyConnection, org: &str, now: i64, limit: u32) -> Result<Vec<WorkRow>> {
    let rows = sqlx::query(&format!(
        "SELECT {WORK_COLUMNS} FROM work_index WHERE org_id = $1 AND due_at IS NOT NULL AND due_at <= $2 \
         ORDER BY due_at, run_id, step_id LIMIT $3"
    ))
    .bind(org)
    .bind(now)
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter().map(work_row).collect()
}

pub(crate) async fn record_request(
    connection: &mut AnyConnection,
    org: &str,
    request: &NewRequest<'_>,
) -> Result<bool> {
    // A concurrent transaction inserting the same key makes this insert wait until it
    // commits (then nothing is inserted) or rolls back (then this one is recorded).
    let mut query = Query::new("");
    let org_bind = query.text(org);
    let values = request_values(&mut query, &org_bind, request).join(", ");
    query.push(&format!(
        "{REQUEST_INSERT} VALUES ({values}) ON CONFLICT (org_id, request_id) DO NOTHING RETURNING 1"
    ));
    Ok(!query.fetch(connection).await?.is_empty())
}

pub(crate) async fn request(
    connection: &mut AnyConnection,
    org: &str,
    request_id: &str,
) -> Result<Option<StoredRequest>> {
    let row = sqlx::query(
        "SELECT tool, args_hash, result FROM idempotency WHERE org_id = $1 AND request_id = $2 AND result IS NOT NULL",
    )
    .bind(org)
    .bind(request_id)
    .fetch_optional(connection)
    .await?;
    row.map(|row| {
        Ok(StoredRequest {
            tool: row.try_get("tool")?,
            args_hash: row.try_get("args_hash")?,
            result: row.try_get("result")?,
        })
    })
    .transpose()
}

pub(crate) async fn put_upload(connection: &mut AnyConnection, org: &str, new: &NewUpload) -> Result<()> {
    let upload = &new.upload;
    sqlx::query(
        "INSERT INTO uploads (org_id, id, sha256, bytes, content_type, file_name, storage_key, uploaded_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(org)
    .bind(&upload.id)
    .bind(&upload.sha256)
    .bind(i64::try_from(upload.bytes).map_err(|_| Error::Corrupt("upload size".to_owned()))?)
    .bind(&upload.content_type)
    .bind(&upload.file_name)
    .bind(&upload.storage_key)
    .bind(&new.uploaded_by)
    .bind(new.created_at)
    .execute(connection)
    .await?;
    Ok(())
}

const UPLOAD_COLUMNS: &str = "id, sha256, bytes, content_type, file_name, storage_key";

pub(crate) async fn upload(connection: &mut AnyConnection, org: &str, id: &str) -> Result<Option<Upload>> {
    let row = sqlx::query(&format!(
        "SELECT {UPLOAD_COLUMNS} FROM uploads WHERE org_id = $1 AND id = $2"
    ))
    .bind(org)
    .bind(id)
    .fetch_optional(connection)
    .await?;
    row.map(|row| upload_of(&row)).transpose()
}

/// Marks an upload cited (keeping the first time) and returns it; its row stays locked
/// until the transaction ends, so the sweeper cannot remove it meanwhile.
pub(crate) async fn cite_upload(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
    now: i64,
) -> Result<Option<Upload>> {
    let row = sqlx::query(&format!(
        "UPDATE uploads SET cited_at = COALESCE(cited_at, $3) WHERE org_id = $1 AND id = $2 \
         RETURNING {UPLOAD_COLUMNS}"
    ))
    .bind(org)
    .bind(id)
    .bind(now)
    .fetch_optional(connection)
    .await?;
    row.map(|row| upload_of(&row)).transpose()
}

fn upload_of(row: &AnyRow) -> Result<Upload> {
    let bytes: i64 = row.try_get("bytes")?;
    Ok(Upload {
        id: row.try_get("id")?,
        sha256: row.try_get("sha256")?,
        bytes: u64::try_from(bytes).map_err(|_| Error::Corrupt(format!("upload size {bytes}")))?,
        content_type: row.try_get("content_type")?,
        file_name: row.try_get("file_name")?,
        storage_key: row.try_get("storage_key")?,
    })
}

/// Uploads never cited and made before `before`, across organizations, oldest first.
pub(crate) async fn uncited_uploads(
    connection: &mut AnyConnection,
    before: i64,
    limit: u32,
) -> Result<Vec<(String, String)>> {
    let rows = sqlx::query(
        "/* all organizations: the upload sweep finds uncited uploads everywhere, then removes each by organization */ \
         SELECT org_id, id FROM uploads WHERE cited_at IS NULL AND created_at < $1 ORDER BY created_at LIMIT $2",
    )
    .bind(before)
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter()
        .map(|row| Ok((row.try_get("org_id")?, row.try_get("id")?)))
        .collect()
}

/// Removes an upload's record if it is still uncited; returns its storage key.
pub(crate) async fn remove_uncited_upload(
    connection: &mut AnyConnection,
    org: &str,
    id: &str,
) -> Result<Option<String>> {
    let row =
        sqlx::query("DELETE FROM uploads WHERE org_id = $1 AND id = $2 AND cited_at IS NULL RETURNING storage_key")
            .bind(org)
            .bind(id)
            .fetch_optional(connection)
            .await?;
    Ok(row.map(|row| row.try_get("storage_key")).transpose()?)
}

/// Agent steps claimable at `now` and open work items, across organizations.
pub(crate) async fn work_levels(connection: &mut AnyConnection, now: i64) -> Result<WorkLevels> {
    let row = sqlx::query(
        "/* all organizations: the queue gauges are the whole server's */ SELECT \
         (SELECT COUNT(*) FROM work_index WHERE kind = 'agent' AND (lease_until IS NULL OR lease_until <= $1)) AS ready, \
         (SELECT COUNT(*) FROM work_index WHERE kind = 'item') AS items",
    )
    .bind(now)
    .fetch_one(connection)
    .await?;
    Ok(WorkLevels {
        ready_agent_steps: row.try_get("ready")?,
        open_work_items: row.try_get("items")?,
    })
}
