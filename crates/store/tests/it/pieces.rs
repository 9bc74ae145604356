//! A run's pieces: written once with the write that made them, read back with the run
//! through every way a run is read, and kept by each organization apart.

use agentprocess_engine::RunState;
use agentprocess_store::{Piece, RunFilter, Store, StoreTx};

use crate::support::{PutRun as _, TestDb, on_both, run_row};

fn piece(number: i64, body: &str) -> Piece {
    Piece {
        number,
        body: body.to_owned(),
    }
}

on_both!(pieces_are_added_by_writes_and_read_with_the_run, pieces);
async fn pieces(db: &TestDb) {
    let store = &db.store;
    let mut new = run_row("r_1", "p", RunState::Active, 1, &[]);
    new.pieces = vec![piece(0, "{\"inputs\":1}")];
    let mut tx = store.begin().await.expect("begin");
    tx.put_run("o", &new, true, None).await.expect("put");
    // Another organization's run of the same id has pieces of its own.
    let mut foreign = run_row("r_1", "p", RunState::Active, 1, &[]);
    foreign.pieces = vec![piece(0, "{\"foreign\":true}")];
    tx.put_run("x", &foreign, true, None).await.expect("put");
    tx.commit().await.expect("commit");

    // A write adds its new pieces (here with a request, the one-statement path on
    // PostgreSQL), and one that adds none keeps them all.
    let mut changed = run_row("r_1", "p", RunState::Waiting, 1, &[]);
    changed.pieces = vec![piece(1, "{\"record\":\"big\"}"), piece(2, "[\"more\"]")];
    let mut tx = store.begin().await.expect("begin");
    tx.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    let request = agentprocess_store::NewRequest {
        request_id: "q1",
        tool: "submit",
        args_hash: "h",
        result: "{}",
        at: 2,
    };
    assert!(tx.put_run("o", &changed, false, Some(&request)).await.expect("put"));
    tx.commit().await.expect("commit");
    let mut tx = store.begin().await.expect("begin");
    tx.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    tx.put_run("o", &run_row("r_1", "p", RunState::Waiting, 1, &[]), false, None)
        .await
        .expect("put");
    tx.commit().await.expect("commit");

    let expected = vec![
        piece(0, "{\"inputs\":1}"),
        piece(1, "{\"record\":\"big\"}"),
        piece(2, "[\"more\"]"),
    ];
    let read = store.run("o", "r_1").await.expect("run").expect("found");
    assert_eq!(read.pieces, expected);
    let listed = store.runs("o", &["r_1".to_owned()]).await.expect("runs");
    assert_eq!(listed[0].pieces, expected);
    let page = store
        .list_runs(
            "o",
            &RunFilter {
                limit: 10,
                ..RunFilter::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(page.items[0].pieces, expected);
    let mut tx = store.begin().await.expect("begin");
    let (locked, _) = tx.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    assert_eq!(locked.pieces, expected);
    let (for_timer, _) = tx.lock_run_for_timer("o", "r_1", "t", 5).await.expect("lock");
    assert_eq!(for_timer.expect("run").pieces, expected);
    drop(tx);

    let theirs = store.run("x", "r_1").await.expect("run").expect("found");
    assert_eq!(theirs.pieces, vec![piece(0, "{\"foreign\":true}")]);

    // A piece is written once: a second write of the same number fails, and the
    // failed write changes nothing.
    let mut again = run_row("r_1", "p", RunState::Ended, 1, &[]);
    again.pieces = vec![piece(1, "{\"other\":1}")];
    let mut tx = store.begin().await.expect("begin");
    tx.lock_run("o", "r_1", None).await.expect("lock").expect("run");
    assert!(tx.put_run("o", &again, false, None).await.is_err());
    drop(tx);
    assert_eq!(
        store.run("o", "r_1").await.expect("run").expect("found").pieces,
        expected
    );
}
