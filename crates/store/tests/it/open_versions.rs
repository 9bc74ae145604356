//! Versions kept open to new runs: where a version stands (the latest, or kept open by
//! an admin), kept and closed per organization.

use agentprocess_store::{
    KeptOpen, OpenVersions as _, OpenVersionsTx as _, Openings, Standing, Store as _, StoreTx as _,
};

use crate::support::{TestDb, on_both, seed};

const ROWS: &str = "
INSERT INTO organizations (id, name, created_at) VALUES ('o', 'O', 1), ('p', 'P', 1);
INSERT INTO process_versions (org_id, process, number, content_hash, source, frontmatter, body, roles, agents, published_at) VALUES
  ('o', 'pay', 1, 'h1', 's', '{}', '', '{}', '{}', 1), ('o', 'pay', 2, 'h2', 's', '{}', '', '{}', '{}', 2),
  ('o', 'pay', 3, 'h3', 's', '{}', '', '{}', '{}', 3), ('p', 'pay', 1, 'h1', 's', '{}', '', '{}', '{}', 1);
";

on_both!(a_version_is_open_when_latest_or_kept_open_in_its_organization, standing);
async fn standing(db: &TestDb) {
    seed(db, ROWS).await;
    let store = &db.store;
    let closed = Standing {
        latest: 3,
        kept_open: false,
    };
    assert_eq!(store.standing("o", "pay", 1).await.expect("read"), Some(closed));
    assert!(!closed.open_to_new_runs(1) && closed.open_to_new_runs(3));
    assert_eq!(store.standing("o", "other", 1).await.expect("read"), None);

    let kept = KeptOpen {
        process: "pay".to_owned(),
        number: 1,
        by: "admin".to_owned(),
        reason: "the partner's integration names v1".to_owned(),
        at: 10,
    };
    let mut tx = store.begin().await.expect("begin");
    tx.keep_open("o", &kept).await.expect("keep");
    // Kept again: who, why and when are replaced, not added.
    tx.keep_open("o", &KeptOpen { at: 20, ..kept.clone() })
        .await
        .expect("keep again");
    tx.commit().await.expect("commit");
    let open = store.standing("o", "pay", 1).await.expect("read").expect("published");
    assert!(open.kept_open && open.open_to_new_runs(1));
    assert!(
        !store
            .standing("o", "pay", 2)
            .await
            .expect("read")
            .expect("published")
            .kept_open
    );
    let openings = store.openings("o", "pay").await.expect("read").expect("published");
    assert_eq!(
        openings,
        Openings {
            latest: 3,
            kept: vec![KeptOpen { at: 20, ..kept.clone() }]
        }
    );
    assert_eq!(openings.standing(1), open);
    assert_eq!(openings.standing(2), closed);
    let elsewhere = store.openings("p", "pay").await.expect("read").expect("published");
    assert!(elsewhere.kept.is_empty(), "p's are its own");
    assert_eq!(store.openings("o", "other").await.expect("read"), None);
    assert_eq!(
        store.standing("p", "pay", 1).await.expect("read"),
        Some(Standing {
            latest: 1,
            kept_open: false
        })
    );

    let mut tx = store.begin().await.expect("begin");
    assert!(tx.close_version("o", "pay", 1).await.expect("close"));
    assert!(!tx.close_version("o", "pay", 1).await.expect("close again"));
    tx.commit().await.expect("commit");
    assert_eq!(store.standing("o", "pay", 1).await.expect("read"), Some(closed));
}
