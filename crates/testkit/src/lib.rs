//! Test support: a fresh database per test, a temporary SQLite file or a new
//! PostgreSQL database (dropped at the end) on the server named by
//! `AGENTPROCESS_TEST_PG`, and [`on_both!`] to run one test body on each; and the
//! test-double evaluator of the check-1 profile ([`evaluator`]). The PostgreSQL
//! databases can be on a Citus cluster instead (`citus`).

mod citus;
pub mod evaluator;

pub use agentprocess_store::Dialect;
use agentprocess_store::SqlStore;

/// The PostgreSQL server for tests (trust auth, user postgres).
pub fn pg_server() -> String {
    std::env::var("AGENTPROCESS_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

/// `prefix` and 12 random hex digits.
pub fn random_name(prefix: &str) -> String {
    let mut bytes = [0u8; 6];
    #[allow(clippy::expect_used)]
    getrandom::fill(&mut bytes).expect("random");
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{suffix}")
}

/// Runs one statement on the server's `postgres` database.
async fn pg_admin(sql: &str) {
    use sqlx::Connection as _;
    #[allow(clippy::expect_used)]
    let mut connection = sqlx::PgConnection::connect(&format!("{}/postgres", pg_server()))
        .await
        .expect("postgres answers");
    #[allow(clippy::expect_used)]
    sqlx::raw_sql(sql).execute(&mut connection).await.expect(sql);
}

/// A migrated store on its own database.
pub struct TestDb {
    /// The store.
    pub store: SqlStore,
    /// Its URL, for another connection (a service over the same database).
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    File(std::path::PathBuf),
    Database(String),
}

impl TestDb {
    /// A fresh, migrated database of `dialect`.
    #[allow(clippy::expect_used)]
    pub async fn new(dialect: Dialect) -> Self {
        let (url, cleanup) = match dialect {
            Dialect::Sqlite => {
                let path = std::env::temp_dir().join(format!("{}.db", random_name("agentprocess-test-")));
                (format!("sqlite://{}?mode=rwc", path.display()), Cleanup::File(path))
            }
            Dialect::Postgres => {
                let name = random_name("test_");
                pg_admin(&format!("CREATE DATABASE {name}")).await;
                citus::step("prepare", &name).await;
                (format!("{}/{name}", pg_server()), Cleanup::Database(name))
            }
        };
        let store = SqlStore::connect(&url, 8).await.expect("connect");
        store.migrate().await.expect("migrate");
        if let Cleanup::Database(name) = &cleanup {
            citus::step("distribute", name).await;
        }
        Self { store, url, cleanup }
    }

    /// Closes the store and removes the database.
    pub async fn drop_database(self) {
        self.store.close().await;
        match self.cleanup {
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Database(name) => {
                pg_admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
                citus::step("drop", &name).await;
            }
        }
    }
}

/// Waits until exactly `count` backends of the PostgreSQL database at `url` wait on a
/// lock (on a Citus cluster, where the wait happens on a worker, `citus_lock_waits`
/// rows); panics after 5 s.
#[allow(clippy::expect_used)]
pub async fn lock_waits_reach(url: &str, count: i64) {
    use sqlx::Connection as _;
    let mut connection = sqlx::PgConnection::connect(url).await.expect("connect");
    let citus: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_extension WHERE extname = 'citus'")
        .fetch_one(&mut connection)
        .await
        .expect("pg_extension");
    let waits = if citus > 0 {
        "SELECT count(*) FROM citus_lock_waits"
    } else {
        "SELECT count(DISTINCT l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
         WHERE NOT l.granted AND a.datname = current_database()"
    };
    let mut seen = -1;
    for _ in 0..500 {
        seen = sqlx::query_scalar(waits)
            .fetch_one(&mut connection)
            .await
            .expect("lock waits");
        if seen == count {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("{seen} backends waited on a lock, never {count}");
}

/// Defines `name::sqlite` and `name::postgres`, each running `body(&TestDb)` on a fresh
/// database of its kind.
#[macro_export]
macro_rules! on_both {
    ($name:ident, $body:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = $crate::TestDb::new($crate::Dialect::Sqlite).await;
                super::$body(&db).await;
                db.drop_database().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let db = $crate::TestDb::new($crate::Dialect::Postgres).await;
                super::$body(&db).await;
                db.drop_database().await;
            }
        }
    };
}
