//! A run's write with everything that goes with it, made at once: all of it when the
//! run is still at the revision read, none of it when another write changed the run
//! or recorded the `requestId` first.

use agentprocess_engine::RunState;
use agentprocess_store::{
    AuditFilter, AuditRow, Directory as _, NewNotification, NewRequest, RunWrite, Store, StoreTx, TimerRow, Webhook,
    WorkKind, WriteOutcome,
};

use crate::support::{TestDb, bare, on_both, run_row, work_row};

fn timer(id: &str, fire_at: i64) -> TimerRow {
    TimerRow {
        org: "o".to_owned(),
        run_id: "r_1".to_owned(),
        timer_id: id.to_owned(),
        fire_at,
        trace_parent: None,
    }
}

fn notification(id: &str) -> NewNotification<'_> {
    NewNotification {
        id,
        run_id: "r_1",
        event: "run.ended",
        body: "{}",
        created_at: 7,
        trace_parent: None,
    }
}

fn entry(id: &str) -> AuditRow {
    AuditRow {
        id: id.to_owned(),
        at: 7,
        actor: "agent-1".to_owned(),
        kind: "run.cancelled".to_owned(),
        target: Some("r_1".to_owned()),
        detail: "{}".to_owned(),
        address: None,
    }
}

fn request<'a>(id: &'a str, result: &'a str) -> NewRequest<'a> {
    NewRequest {
        request_id: id,
        tool: "cancel",
        args_hash: "h",
        result,
        at: 7,
    }
}

/// Everything `write` could have left: the run's doc and revision, its timers, work
/// rows, audit entries, deliveries and the two requests' records.
async fn state(db: &TestDb) -> (String, i64, Vec<String>, usize, usize, usize, [bool; 2]) {
    let store = &db.store;
    let (run, _) = store.run_for_write("o", "r_1", "q").await.expect("read").expect("run");
    let timers = store.run_timers("o", "r_1").await.expect("timers");
    let work = store.overdue("o", i64::MAX, 100).await.expect("work").len();
    let filter = AuditFilter {
        limit: 100,
        ..AuditFilter::default()
    };
    let audit = store.audit("o", &filter).await.expect("audit").0.len();
    let deliveries = store.deliveries("o", 100).await.expect("deliveries").len();
    let recorded = [
        store.request("o", "q1").await.expect("q1").is_some(),
        store.request("o", "q2").await.expect("q2").is_some(),
    ];
    (
        run.doc,
        run.revision,
        timers.into_iter().map(|timer| timer.timer_id).collect(),
        work,
        audit,
        deliveries,
        recorded,
    )
}

on_both!(a_write_is_made_whole_or_not_at_all, whole_or_nothing);

/// The same on PostgreSQL written statement by statement, as on Citus.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_steps_on_postgresql_is_made_whole_or_not_at_all() {
    let mut db = TestDb::new(agentprocess_store::Dialect::Postgres).await;
    db.store = db.store.clone().with_writes(agentprocess_store::Writes::InSteps);
    whole_or_nothing(&db).await;
    db.drop_database().await;
}
async fn whole_or_nothing(db: &TestDb) {
    let store = &db.store;
    let mut tx = store.begin().await.expect("begin");
    let webhook = Webhook {
        id: "wh_1".to_owned(),
        url: "http://127.0.0.1:9/".to_owned(),
        secret: "whsec_a2V5".to_owned(),
        created_at: 1,
    };
    tx.add_webhook("o", &webhook).await.expect("webhook");
    tx.commit().await.expect("commit");

    // A new run, with a timer and a work row that is due.
    let mut new = run_row("r_1", "p", RunState::Active, 1, &[("vendor", "h")]);
    let mut due = work_row("r_1", "s", WorkKind::Agent, 1);
    due.due_at = Some(5);
    new.work = vec![due];
    let mut write = bare(&new, None, None);
    write.schedule(timer("t0", 100));
    assert_eq!(
        store.write_run("o", &write).await.expect("write"),
        WriteOutcome::Written { deliveries: 0 }
    );
    let made = state(db).await;
    assert_eq!(
        made,
        (new.doc.clone(), 0, vec!["t0".to_owned()], 1, 0, 0, [false, false])
    );

    // Replaced at the revision read: the row, its work, timers (t0 cancelled, t1 set),
    // a notification with its delivery, an audit entry and the request, at once.
    let mut changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    changed.doc = "{\"v\":1}".to_owned();
    changed.gone = vec!["s".to_owned()];
    let mut write = bare(&changed, Some(0), Some(request("q1", "one")));
    write.schedule(timer("t1", 200));
    write.cancel("t0");
    write.notifications.push(notification("n_1"));
    write.audit.push(entry("a_1"));
    assert_eq!(
        store.write_run("o", &write).await.expect("write"),
        WriteOutcome::Written { deliveries: 1 }
    );
    let written = ("{\"v\":1}".to_owned(), 1, vec!["t1".to_owned()], 0, 1, 1, [true, false]);
    assert_eq!(state(db).await, written);

    // At a revision the run no longer has: nothing of it is written.
    let mut stale_row = run_row("r_1", "p", RunState::Ended, 1, &[]);
    stale_row.doc = "{\"v\":\"stale\"}".to_owned();
    stale_row.work = vec![work_row("r_1", "t", WorkKind::Item, 1)];
    let mut stale = bare(&stale_row, Some(0), Some(request("q2", "two")));
    stale.schedule(timer("t2", 300));
    stale.cancel("t1");
    stale.notifications.push(notification("n_2"));
    stale.audit.push(entry("a_2"));
    assert_eq!(
        store.write_run("o", &stale).await.expect("write"),
        WriteOutcome::RunChanged
    );
    assert_eq!(state(db).await, written);
    // The same in a transaction that holds the run's lock.
    let mut tx = store.begin().await.expect("begin");
    tx.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    assert_eq!(
        tx.write_run("o", &stale).await.expect("write"),
        WriteOutcome::RunChanged
    );
    drop(tx);
    assert_eq!(state(db).await, written);

    // At the right revision, but with a requestId recorded already: nothing either.
    let mut replayed = bare(&stale_row, Some(1), Some(request("q1", "again")));
    replayed.notifications.push(notification("n_3"));
    replayed.audit.push(entry("a_3"));
    assert_eq!(
        store.write_run("o", &replayed).await.expect("write"),
        WriteOutcome::AlreadyRecorded
    );
    assert_eq!(state(db).await, written);
    assert_eq!(
        store
            .request("o", "q1")
            .await
            .expect("q1")
            .map(|recorded| recorded.result),
        Some("one".to_owned())
    );

    // Another organization's run of the same id is another run.
    let theirs = run_row("r_1", "p", RunState::Active, 1, &[]);
    let foreign = bare(&theirs, Some(1), None);
    assert_eq!(
        store.write_run("x", &foreign).await.expect("write"),
        WriteOutcome::RunChanged
    );
    assert_eq!(state(db).await, written);
}

#[test]
fn a_timer_set_and_removed_in_one_write_ends_as_the_last_said() {
    let row = run_row("r_1", "p", RunState::Active, 1, &[]);
    let mut write: RunWrite<'_> = bare(&row, None, None);
    write.schedule(timer("a", 1));
    write.cancel("a");
    write.cancel("b");
    write.schedule(timer("b", 2));
    write.schedule(timer("b", 3));
    write.cancel("c");
    write.cancel("c");
    assert_eq!(write.cancelled, vec!["a".to_owned(), "c".to_owned()]);
    assert_eq!(
        write
            .timers
            .iter()
            .map(|timer| (timer.timer_id.as_str(), timer.fire_at))
            .collect::<Vec<_>>(),
        vec![("b", 3)]
    );
}
