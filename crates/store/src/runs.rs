//! Runs, their index rows, idempotency records and uploads.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::model::{
    Keyset, NewRequest, NewUpload, Page, Piece, RunFilter, StoredRequest, StoredRun, Upload, WorkKind, WorkLevels,
    WorkQuery, WorkRow,
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

pub(crate) const REQUEST_INSERT: &str =
    "INSERT INTO idempotency (org_id, request_id, tool, args_hash, result, created_at)";

/// A request's record, in `REQUEST_INSERT`'s column order.
pub(crate) fn request_values(query: &mut Query, org_bind: &str, request: &NewRequest<'_>) -> Vec<String> {
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
    let limit = page_limit(filter.limit);
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

/// A page's `LIMIT`, one row past the page (whether there is a next one), written into
/// the statement rather than bound. PostgreSQL plans a bound `LIMIT` of a prepared
/// statement generically as a tenth of the rows, which costs such a plan so far above
/// the one planned for each call's values that it plans every call anew: 0.18 ms of
/// planning on each `get_work` (`pg_stat_statements` with `track_planning`), more than
/// the read itself. With the number in the text, the plan is made once per connection.
fn page_limit(limit: u32) -> String {
    (u64::from(limit) + 1).to_string()
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
    let limit = page_limit(work.limit);
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
