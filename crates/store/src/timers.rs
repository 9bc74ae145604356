//! Timer rows: the source of truth for every timer queue.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::Result;
use crate::model::{StoredRun, TakenTimer, TimerRow};

pub(crate) const TIMER_INSERT: &str = "INSERT INTO timers (org_id, run_id, timer_id, fire_at, trace_parent)";

/// A timer set again moves.
pub(crate) const TIMER_UPSERT: &str = "ON CONFLICT (org_id, run_id, timer_id) DO UPDATE SET fire_at = excluded.fire_at, \
    trace_parent = excluded.trace_parent";

pub(crate) async fn schedule_timer(connection: &mut AnyConnection, timer: &TimerRow) -> Result<()> {
    sqlx::query(&format!("{TIMER_INSERT} VALUES ($1, $2, $3, $4, $5) {TIMER_UPSERT}"))
        .bind(&timer.org)
        .bind(&timer.run_id)
        .bind(&timer.timer_id)
        .bind(timer.fire_at)
        .bind(timer.trace_parent.as_deref())
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn remove_timer(
    connection: &mut AnyConnection,
    org: &str,
    run_id: &str,
    timer_id: &str,
) -> Result<bool> {
    let removed = sqlx::query("DELETE FROM timers WHERE org_id = $1 AND run_id = $2 AND timer_id = $3")
        .bind(org)
        .bind(run_id)
        .bind(timer_id)
        .execute(connection)
        .await?;
    Ok(removed.rows_affected() == 1)
}

pub(crate) async fn take_due_timer(
    connection: &mut AnyConnection,
    org: &str,
    run_id: &str,
    timer_id: &str,
    now: i64,
) -> Result<Option<TakenTimer>> {
    let row = fetch_for_timer(
        connection,
        "DELETE FROM timers WHERE org_id = $1 AND run_id = $2 AND timer_id = $3 AND fire_at <= $4 \
         RETURNING fire_at, trace_parent",
        [org, run_id, timer_id],
        now,
    )
    .await?;
    row.as_ref().map(taken).transpose().map(Option::flatten)
}

/// The taken timer in a row with `fire_at` and `trace_parent` (`fire_at` NULL: none).
fn taken(row: &AnyRow) -> Result<Option<TakenTimer>> {
    let due_at: Option<i64> = row.try_get("fire_at")?;
    Ok(match due_at {
        Some(due_at) => Some(TakenTimer {
            due_at,
            trace_parent: row.try_get("trace_parent")?,
        }),
        None => None,
    })
}

/// Runs `sql` with `$1`–`$3` = organization, run and timer ids and `$4` = now.
async fn fetch_for_timer(
    connection: &mut AnyConnection,
    sql: &str,
    [org, run_id, timer_id]: [&str; 3],
    now: i64,
) -> Result<Option<AnyRow>> {
    Ok(sqlx::query(sql)
        .bind(org)
        .bind(run_id)
        .bind(timer_id)
        .bind(now)
        .fetch_optional(connection)
        .await?)
}

/// PostgreSQL: locks the run and, in the same statement, removes the timer row if it is
/// due. The uncorrelated `EXISTS` runs first, so the run is locked before the timer
/// row, the order every write uses. `None` when there is no such run.
pub(crate) async fn lock_run_taking_timer(
    connection: &mut AnyConnection,
    org: &str,
    run_id: &str,
    timer_id: &str,
    now: i64,
) -> Result<Option<(Option<StoredRun>, Option<TakenTimer>)>> {
    let row = fetch_for_timer(
        &mut *connection,
        "WITH r AS (SELECT id, doc, pieces, revision FROM runs WHERE org_id = $1 AND id = $2 FOR UPDATE), \
         t AS (DELETE FROM timers WHERE org_id = $1 AND run_id = $2 AND timer_id = $3 AND fire_at <= $4 \
               AND EXISTS (SELECT 1 FROM r) RETURNING fire_at, trace_parent) \
         SELECT r.id, r.doc, r.pieces, r.revision, t.fire_at, t.trace_parent FROM r LEFT JOIN t ON TRUE",
        [org, run_id, timer_id],
        now,
    )
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let taken = taken(&row)?;
    let run = crate::runs::with_pieces(connection, org, vec![crate::runs::stored_run(&row)?]).await?;
    Ok(Some((run.into_iter().next(), taken)))
}

pub(crate) async fn timers_before(
    connection: &mut AnyConnection,
    before: i64,
    after: Option<&TimerRow>,
    limit: u32,
) -> Result<Vec<TimerRow>> {
    let order = "ORDER BY fire_at, org_id, run_id, timer_id LIMIT";
    // Each timer found is then fired in its own run's transaction, by organization.
    let sweep = "/* all organizations: due timers are found across organizations */";
    let rows = match after {
        None => {
            sqlx::query(&format!(
                "{sweep} SELECT org_id, run_id, timer_id, fire_at FROM timers WHERE fire_at <= $1 {order} $2"
            ))
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(connection)
            .await?
        }
        Some(after) => {
            sqlx::query(&format!(
                "{sweep} SELECT org_id, run_id, timer_id, fire_at FROM timers WHERE fire_at <= $1 \
                 AND (fire_at, org_id, run_id, timer_id) > ($2, $3, $4, $5) {order} $6"
            ))
            .bind(before)
            .bind(after.fire_at)
            .bind(&after.org)
            .bind(&after.run_id)
            .bind(&after.timer_id)
            .bind(i64::from(limit))
            .fetch_all(connection)
            .await?
        }
    };
    rows.iter().map(timer_row).collect()
}

pub(crate) async fn run_timers(connection: &mut AnyConnection, org: &str, run_id: &str) -> Result<Vec<TimerRow>> {
    let rows = sqlx::query(
        "SELECT org_id, run_id, timer_id, fire_at FROM timers WHERE org_id = $1 AND run_id = $2 \
         ORDER BY fire_at, timer_id",
    )
    .bind(org)
    .bind(run_id)
    .fetch_all(connection)
    .await?;
    rows.iter().map(timer_row).collect()
}

fn timer_row(row: &AnyRow) -> Result<TimerRow> {
    Ok(TimerRow {
        org: row.try_get("org_id")?,
        run_id: row.try_get("run_id")?,
        timer_id: row.try_get("timer_id")?,
        fire_at: row.try_get("fire_at")?,
        trace_parent: None,
    })
}

pub(crate) async fn next_timer_at(connection: &mut AnyConnection) -> Result<Option<i64>> {
    let row = sqlx::query(
        "/* all organizations: the scheduler sleeps until the earliest timer */ SELECT MIN(fire_at) AS t FROM timers",
    )
    .fetch_one(connection)
    .await?;
    Ok(row.try_get::<Option<i64>, _>("t")?)
}
