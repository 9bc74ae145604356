//! Purges by age: old rows go, a batch at a time; young ones, pending deliveries and
//! notifications still delivering, or not yet handed to people, stay.

use agentprocess_store::{Error, Purge, Store as _};

use crate::support::{TestDb, on_both, seed};

/// Rows of every purged table, old (at 10) and young (at 1000), written as raw SQL so
/// the test reads exactly what each purge keeps.
const ROWS: &str = "
INSERT INTO organizations (id, name, created_at) VALUES ('p', 'P', 1), ('o', 'O', 1);
INSERT INTO idempotency (org_id, request_id, tool, args_hash, result, created_at) VALUES
  ('o', 'old-1', 'claim', 'h', '{}', 10), ('p', 'old-2', 'claim', 'h', '{}', 11),
  ('o', 'old-3', 'claim', 'h', '{}', 12), ('o', 'young', 'claim', 'h', '{}', 1000);
INSERT INTO notifications (org_id, id, run_id, event, body, created_at, handed_at) VALUES
  ('o', 'n_delivered', 'r', 'run.ended', '{}', 10, 10), ('o', 'n_pending', 'r', 'run.ended', '{}', 10, 10),
  ('o', 'n_none', 'r', 'run.ended', '{}', 10, 10), ('o', 'n_young', 'r', 'run.ended', '{}', 1000, 1000),
  ('o', 'n_unhanded', 'r', 'run.ended', '{}', 10, NULL), ('o', 'n_messaging', 'r', 'run.ended', '{}', 10, 10);
INSERT INTO messages (org_id, notification_id, channel, recipient, kind, status, digest, attempts, sent, next_at,
  updated_at) VALUES
  ('o', 'n_delivered', 'email', 'ann', 'ended', 'sent', 0, 1, 1, 0, 20),
  ('o', 'n_messaging', 'email', 'ann', 'overdue', 'pending', 0, 0, 1, 0, 20);
INSERT INTO deliveries (org_id, notification_id, webhook_id, status, attempts, next_at, updated_at) VALUES
  ('o', 'n_delivered', 'w', 'delivered', 1, 0, 20), ('o', 'n_pending', 'w', 'pending', 3, 0, 20),
  ('o', 'n_young', 'w', 'failed', 8, 0, 1000);
INSERT INTO sessions (id_hash, data, expires_at) VALUES ('s_old', '{}', 10), ('s_young', '{}', 1000);
INSERT INTO access_tokens (token_hash, org_id, identity_id, created_at, revoked_at, id, expires_at) VALUES
  ('t_expired', 'o', 'ann', 1, NULL, 'tok_1', 10), ('t_revoked', 'o', 'ann', 1, 10, 'tok_2', NULL),
  ('t_live', 'o', 'ann', 1, NULL, 'tok_3', NULL), ('t_young', 'o', 'ann', 1, NULL, 'tok_4', 1000);
INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES
  ('c_old', 'g', 'https://x/cb', 'c', 10), ('c_young', 'g', 'https://x/cb', 'c', 1000);
INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at, expires_at) VALUES
  ('rt_old', 'g', 1, 10), ('rt_young', 'g', 1, 1000);
INSERT INTO oauth_assertions (client_id, jti_hash, expires_at) VALUES ('cl', 'j_old', 10), ('cl', 'j_young', 1000);
";

async fn keys(db: &TestDb, sql: &str) -> Vec<String> {
    let mut connection = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
        .await
        .expect("connect");
    let rows: Vec<(String,)> = sqlx::query_as(sql).fetch_all(&mut connection).await.expect(sql);
    let mut keys: Vec<String> = rows.into_iter().map(|(key,)| key).collect();
    keys.sort();
    keys
}

on_both!(purges_remove_only_what_is_old_and_settled, purges);
async fn purges(db: &TestDb) {
    seed(db, ROWS).await;
    let store = &db.store;

    // A batch is at most `limit` rows of one organization, oldest first.
    assert_eq!(store.purge(Purge::Requests, Some("o"), 500, 1).await.expect("purge"), 1);
    assert_eq!(
        keys(db, "SELECT request_id FROM idempotency").await,
        ["old-2", "old-3", "young"]
    );
    assert_eq!(
        store.purge(Purge::Requests, Some("o"), 500, 100).await.expect("purge"),
        1
    );
    assert_eq!(
        keys(db, "SELECT request_id FROM idempotency").await,
        ["old-2", "young"],
        "p's is kept"
    );
    // The kind decides whether an organization is named: a mismatch is refused.
    for what in Purge::ALL {
        let wrong = if what.per_organization() { None } else { Some("o") };
        assert!(
            matches!(store.purge(what, wrong, 500, 100).await, Err(Error::Misuse(_))),
            "{}",
            what.name()
        );
    }
    // The sweep visits organizations in id order, a page at a time.
    let first = store.organization_ids(None, 1).await.expect("organizations");
    assert_eq!(first, ["o"]);
    assert_eq!(
        store.organization_ids(Some("o"), 1).await.expect("organizations"),
        ["p"]
    );
    assert!(
        store
            .organization_ids(Some("p"), 1)
            .await
            .expect("organizations")
            .is_empty()
    );
    let orgs = ["o", "p"];
    for what in Purge::ALL {
        for org in orgs {
            store
                .purge(what, what.per_organization().then_some(org), 500, 100)
                .await
                .expect("purge");
        }
    }
    let expect = [
        ("SELECT request_id FROM idempotency", vec!["young"]),
        // A pending delivery is kept however old, and so is its notification.
        ("SELECT notification_id FROM deliveries", vec!["n_pending", "n_young"]),
        // So is a pending message, and a notification not yet handed to people.
        ("SELECT notification_id FROM messages", vec!["n_messaging"]),
        (
            "SELECT id FROM notifications",
            vec!["n_messaging", "n_pending", "n_unhanded", "n_young"],
        ),
        ("SELECT id_hash FROM sessions", vec!["s_young"]),
        ("SELECT token_hash FROM access_tokens", vec!["t_live", "t_young"]),
        ("SELECT code_hash FROM oauth_codes", vec!["c_young"]),
        ("SELECT token_hash FROM oauth_refresh_tokens", vec!["rt_young"]),
        ("SELECT jti_hash FROM oauth_assertions", vec!["j_young"]),
    ];
    for (sql, kept) in expect {
        assert_eq!(keys(db, sql).await, kept, "{sql}");
    }
    for what in Purge::ALL {
        for org in orgs {
            let org = what.per_organization().then_some(org);
            assert_eq!(
                store.purge(what, org, 500, 100).await.expect("purge"),
                0,
                "{}",
                what.name()
            );
        }
    }
}

/// On PostgreSQL the queue tables are vacuumed and analyzed after about a thousand
/// changes, not at PostgreSQL's 10–20 % of the table, and runs leave room in each page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_tables_are_vacuumed_and_analyzed_early_on_postgres() {
    sqlx::any::install_default_drivers();
    let db = TestDb::new(agentprocess_store::Dialect::Postgres).await;
    db.store.migrate().await.expect("migrating again changes nothing");
    for table in ["work_index", "timers"] {
        let options = keys(
            &db,
            &format!("SELECT unnest(reloptions) FROM pg_class WHERE relname = '{table}'"),
        )
        .await;
        for wanted in [
            "autovacuum_analyze_threshold=1000",
            "autovacuum_vacuum_scale_factor=0.02",
        ] {
            assert!(options.iter().any(|option| option == wanted), "{table}: {options:?}");
        }
    }
    // Room in each page of runs, so a write that keeps the run's state is a HOT update.
    let options = keys(&db, "SELECT unnest(reloptions) FROM pg_class WHERE relname = 'runs'").await;
    assert_eq!(options, ["fillfactor=70"]);
    db.drop_database().await;
}
