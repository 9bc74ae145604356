//! PostgreSQL under concurrent writers: a second write recording the same requestId
//! waits for the first and then records nothing (or records, if the first rolled
//! back), and a second lock of a run waits for the first transaction and sees what it
//! wrote; concurrent delivery loops never take one webhook delivery twice.
//! (SQLite has one connection, so its transactions never overlap.)

use std::time::Duration;

use agentprocess_engine::RunState;
use agentprocess_store::{Dialect, NewRequest, SqlTx, Store, StoreTx, Writes};
use tokio::task::JoinHandle;

use crate::support::{PutRun as _, TestDb, run_row};

fn request(result: &str) -> NewRequest<'_> {
    NewRequest {
        request_id: "q",
        tool: "claim",
        args_hash: "h",
        result,
        at: 1,
    }
}

/// A transaction that recorded requestId `q`, and a second one already waiting to
/// record it too; the second says whether it could.
async fn racing_records(db: &TestDb) -> (SqlTx, JoinHandle<bool>) {
    let mut first = db.store.begin().await.expect("begin");
    assert!(first.record_request("o", &request("first")).await.expect("record"));
    let store = db.store.clone();
    let second = tokio::spawn(async move {
        let mut tx = store.begin().await.expect("begin");
        let recorded = tx.record_request("o", &request("second")).await.expect("record");
        tx.commit().await.expect("commit");
        recorded
    });
    agentprocess_testkit::lock_waits_reach(&db.url, 1).await;
    assert!(!second.is_finished());
    (first, second)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_request_id_waits_and_records_nothing_once_the_first_commits() {
    let db = TestDb::new(Dialect::Postgres).await;
    let (first, second) = racing_records(&db).await;
    first.commit().await.expect("commit");
    assert!(!second.await.expect("joined"));
    let recorded = db.store.request("o", "q").await.expect("read").expect("recorded");
    assert_eq!(recorded.result, "first");
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_request_id_is_recorded_when_the_first_rolls_back() {
    let db = TestDb::new(Dialect::Postgres).await;
    let (first, second) = racing_records(&db).await;
    drop(first);
    assert!(second.await.expect("joined"));
    let recorded = db.store.request("o", "q").await.expect("read").expect("recorded");
    assert_eq!(recorded.result, "second");
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_lock_of_a_run_waits_and_sees_the_first_write() {
    let (db, mut first) = a_run_locked().await;
    let store = db.store.clone();
    let second = tokio::spawn(async move {
        let mut tx = store.begin().await.expect("begin");
        tx.lock_run("o", "r_1", None).await.expect("lock").expect("run").0.doc
    });
    agentprocess_testkit::lock_waits_reach(&db.url, 1).await;
    let mut changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    changed.doc = "{\"changed\":true}".to_owned();
    first.put_run("o", &changed, false, None).await.expect("put");
    first.commit().await.expect("commit");
    assert_eq!(second.await.expect("joined"), "{\"changed\":true}");
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_delivery_loops_never_take_one_delivery_twice() {
    let db = TestDb::new(Dialect::Postgres).await;
    let mut tx = db.store.begin().await.expect("begin");
    for org in ["o", "p"] {
        for id in ["wh_a", "wh_b"] {
            let webhook = agentprocess_store::Webhook {
                id: id.to_owned(),
                url: "http://127.0.0.1:9/".to_owned(),
                secret: "whsec_a2V5".to_owned(),
                created_at: 1,
            };
            tx.add_webhook(org, &webhook).await.expect("webhook");
        }
    }
    let ids: Vec<String> = (0..150).map(|i| format!("n_{i}")).collect();
    for (index, id) in ids.iter().enumerate() {
        let notification = agentprocess_store::NewNotification {
            id,
            run_id: "r_1",
            event: "run.ended",
            body: "{}",
            created_at: 1,
            trace_parent: None,
        };
        let org = if index % 3 == 0 { "p" } else { "o" };
        tx.add_notification(org, &notification).await.expect("notify");
    }
    tx.commit().await.expect("commit");
    // Each loop does what a replica's delivery loop does: find the organizations with
    // work due, then take a share of each.
    let mut loops = Vec::new();
    for _ in 0..4 {
        let store = db.store.clone();
        loops.push(tokio::spawn(async move {
            let mut taken = Vec::new();
            loop {
                let organizations = store.due_delivery_organizations(10, 10).await.expect("due");
                if organizations.is_empty() {
                    return taken;
                }
                for org in organizations {
                    let batch = store.take_deliveries(&org, 10, 1_000, 7).await.expect("take");
                    assert!(batch.iter().all(|delivery| delivery.org == org), "only {org}'s");
                    taken.extend(batch.into_iter().map(|d| (d.org, d.notification_id, d.webhook_id)));
                }
            }
        }));
    }
    let mut all = Vec::new();
    for handle in loops {
        all.extend(handle.await.expect("loop"));
    }
    let total = all.len();
    all.sort();
    all.dedup();
    assert_eq!(
        (total, all.len()),
        (300, 300),
        "each of 150 × 2 deliveries taken exactly once"
    );
    db.drop_database().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_finds_a_run_locked_elsewhere_changed_at_once_and_writes_nothing() {
    // Another transaction holds the run's row. A statement that waited for it could
    // commit after its caller was answered; the write says the run changed instead.
    let (db, holder) = a_run_locked().await;
    let mut changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    changed.doc = "{\"changed\":true}".to_owned();
    let write = crate::support::bare(&changed, Some(0), None);
    let store = db.store.clone().with_writes(Writes::OneStatement);
    let outcome = tokio::time::timeout(Duration::from_secs(2), store.write_run("o", &write))
        .await
        .expect("answered without waiting for the lock")
        .expect("write");
    assert_eq!(outcome, agentprocess_store::WriteOutcome::RunChanged);
    drop(holder);
    assert_unchanged(&db).await;
    db.drop_database().await;
}

/// Written statement by statement (as on Citus), a write waits for the run's lock, in
/// a transaction of its own: given up while it waits, it changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_steps_given_up_while_it_waits_for_the_run_writes_nothing() {
    let (db, holder) = a_run_locked().await;
    let changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    let write = crate::support::bare(&changed, Some(0), None);
    let store = db.store.clone().with_writes(Writes::InSteps);
    let waiting = tokio::time::timeout(Duration::from_millis(500), store.write_run("o", &write)).await;
    assert!(waiting.is_err(), "the write waits for the run's lock");
    drop(holder);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_unchanged(&db).await;
    db.drop_database().await;
}

/// A database with run `r_1`, and a transaction holding its lock.
async fn a_run_locked() -> (TestDb, SqlTx) {
    let db = TestDb::new(Dialect::Postgres).await;
    let mut setup = db.store.begin().await.expect("begin");
    setup
        .put_run("o", &run_row("r_1", "p", RunState::Active, 1, &[]), true, None)
        .await
        .expect("put");
    setup.commit().await.expect("commit");
    let mut holder = db.store.begin().await.expect("begin");
    holder.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    (db, holder)
}

/// The run `r_1` as it was made: revision 0, its first document.
async fn assert_unchanged(db: &TestDb) {
    let (run, _) = db
        .store
        .run_for_write("o", "r_1", "q")
        .await
        .expect("read")
        .expect("run");
    assert_eq!((run.revision, run.doc.as_str()), (0, "{\"id\":\"r_1\"}"));
}
