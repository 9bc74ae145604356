//! Organizations' limits as stored (two layers, each replaced whole), and the counts
//! capped limits read: open runs, counted only so far, and stored bytes.

use agentprocess_store::{LimitLayer, LimitValues, Limits as _, LimitsTx as _, Store as _, StoreTx as _};

use crate::support::{TestDb, on_both, seed};

const ROWS: &str = "
INSERT INTO organizations (id, name, created_at) VALUES ('o', 'O', 1), ('p', 'P', 1);
INSERT INTO runs (org_id, id, process, version, mode, state, started_at, updated_at, doc) VALUES
  ('o', 'r1', 'x', 1, 'live', 'active', 1, 1, '{}'), ('o', 'r2', 'x', 1, 'live', 'waiting', 1, 1, '{}'),
  ('o', 'r3', 'x', 1, 'live', 'waiting', 1, 1, '{}'), ('o', 'r4', 'x', 1, 'live', 'ended', 1, 1, '{}'),
  ('o', 'r5', 'x', 1, 'live', 'cancelled', 1, 1, '{}'), ('p', 'r6', 'x', 1, 'live', 'active', 1, 1, '{}');
INSERT INTO uploads (org_id, id, sha256, bytes, content_type, file_name, storage_key, uploaded_by, created_at) VALUES
  ('o', 'f1', 'h', 3000000000, 't', 'n', 'k1', 'a', 1), ('o', 'f2', 'h', 5, 't', 'n', 'k2', 'a', 1),
  ('p', 'f3', 'h', 7, 't', 'n', 'k3', 'a', 1);
";

on_both!(
    limits_are_kept_in_two_layers_and_counts_stay_within_the_organization,
    limits
);
async fn limits(db: &TestDb) {
    seed(db, ROWS).await;
    let store = &db.store;

    let none = store.org_limits("o").await.expect("read");
    assert!(none.granted.is_empty() && none.chosen.is_empty() && none.updated_at.is_none());

    let granted = LimitValues {
        calls_per_second: Some(2000),
        open_runs: Some(0),
        ..LimitValues::default()
    };
    let chosen = LimitValues {
        writes_per_second: Some(10),
        ..LimitValues::default()
    };
    let mut tx = store.begin().await.expect("begin");
    tx.put_org_limits("o", LimitLayer::Granted, &granted, 10)
        .await
        .expect("grant");
    tx.put_org_limits("o", LimitLayer::Chosen, &chosen, 20)
        .await
        .expect("choose");
    tx.commit().await.expect("commit");
    let read = store.org_limits("o").await.expect("read");
    assert_eq!(
        (read.granted, read.chosen, read.updated_at),
        (granted, chosen, Some(20))
    );
    assert!(
        store.org_limits("p").await.expect("read").granted.is_empty(),
        "p's are its own"
    );

    // Each layer is replaced whole, and leaves the other alone.
    let mut tx = store.begin().await.expect("begin");
    tx.put_org_limits("o", LimitLayer::Granted, &LimitValues::default(), 30)
        .await
        .expect("reset");
    tx.commit().await.expect("commit");
    let read = store.org_limits("o").await.expect("read");
    assert_eq!((read.granted, read.chosen), (LimitValues::default(), chosen));

    assert_eq!(store.open_runs("o", 100).await.expect("count"), 3, "active and waiting");
    assert_eq!(store.open_runs("o", 2).await.expect("count"), 2, "counted only so far");
    assert_eq!(store.open_runs("p", 100).await.expect("count"), 1);
    assert_eq!(store.stored_bytes("o").await.expect("sum"), 3_000_000_005);
    assert_eq!(store.stored_bytes("q").await.expect("sum"), 0);
}
