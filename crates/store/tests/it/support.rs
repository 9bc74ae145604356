//! A fresh database per test: a temporary SQLite file, or a new PostgreSQL database
//! (dropped at the end) on the server named by `AGENTPROCESS_TEST_PG`.

use agentprocess_store::{Dialect, RunRow, SqlStore, WorkKind, WorkRow};

/// The PostgreSQL server for tests (trust auth, user postgres).
pub(crate) fn pg_server() -> String {
    std::env::var("AGENTPROCESS_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

fn random_name(prefix: &str) -> String {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).expect("random");
    let suffix: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{suffix}")
}

/// Runs one statement on the server's `postgres` database.
async fn pg_admin(sql: &str) {
    use sqlx::Connection as _;
    let mut connection = sqlx::PgConnection::connect(&format!("{}/postgres", pg_server()))
        .await
        .expect("postgres answers");
    sqlx::raw_sql(sql).execute(&mut connection).await.expect(sql);
}

/// A migrated store on its own database.
pub(crate) struct TestDb {
    pub(crate) store: SqlStore,
    pub(crate) url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    File(std::path::PathBuf),
    Database(String),
}

impl TestDb {
    pub(crate) async fn new(dialect: Dialect) -> Self {
        let (url, cleanup) = match dialect {
            Dialect::Sqlite => {
                let path = std::env::temp_dir().join(format!("{}.db", random_name("agentprocess-store-")));
                (format!("sqlite://{}?mode=rwc", path.display()), Cleanup::File(path))
            }
            Dialect::Postgres => {
                let name = random_name("store_");
                pg_admin(&format!("CREATE DATABASE {name}")).await;
                (format!("{}/{name}", pg_server()), Cleanup::Database(name))
            }
        };
        let store = SqlStore::connect(&url, 8).await.expect("connect");
        store.migrate().await.expect("migrate");
        Self { store, url, cleanup }
    }

    pub(crate) async fn drop_database(self) {
        self.store.close().await;
        match self.cleanup {
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Database(name) => pg_admin(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await,
        }
    }
}

/// Defines `name::sqlite` and `name::postgres`, each running `body(store)`.
macro_rules! on_both {
    ($name:ident, $body:ident) => {
        mod $name {
            use agentprocess_store::Dialect;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = crate::support::TestDb::new(Dialect::Sqlite).await;
                super::$body(&db).await;
                db.drop_database().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let db = crate::support::TestDb::new(Dialect::Postgres).await;
                super::$body(&db).await;
                db.drop_database().await;
            }
        }
    };
}
pub(crate) use on_both;

/// A run row with the given times and inputs, no work.
pub(crate) fn run_row(id: &str, process: &str, state: &str, started_at: i64, inputs: &[(&str, &str)]) -> RunRow {
    RunRow {
        id: id.to_owned(),
        process: process.to_owned(),
        version: 1,
        mode: "live".to_owned(),
        state: state.to_owned(),
        started_at,
        updated_at: started_at,
        doc: format!("{{\"id\":\"{id}\"}}"),
        inputs: inputs.iter().map(|(f, v)| ((*f).to_owned(), (*v).to_owned())).collect(),
        work: Vec::new(),
        gone: Vec::new(),
    }
}

/// A work row of `run` for `step`.
pub(crate) fn work_row(run: &str, step: &str, kind: WorkKind, since: i64) -> WorkRow {
    WorkRow {
        run_id: run.to_owned(),
        step_id: step.to_owned(),
        kind,
        process: "p".to_owned(),
        since,
        lease_until: None,
        group: None,
        person: None,
        item: None,
    }
}

pub(crate) fn person(
    org: &str,
    id: &str,
    role: agentprocess_store::Role,
    groups: &[&str],
) -> agentprocess_store::Identity {
    agentprocess_store::Identity {
        org: org.to_owned(),
        id: id.to_owned(),
        kind: agentprocess_store::IdentityKind::Person,
        role: Some(role),
        person: Some(format!("{id}@example.com")),
        name: id.to_owned(),
        groups: groups.iter().map(|group| (*group).to_owned()).collect(),
        deactivated_at: None,
    }
}

pub(crate) fn mcp_token(org: &str, identity: &str, hash: &str) -> agentprocess_store::TokenRow {
    agentprocess_store::TokenRow {
        id: format!("tok-{hash}"),
        org: org.to_owned(),
        identity: identity.to_owned(),
        token_hash: hash.to_owned(),
        audience: agentprocess_store::Audience::Mcp,
        scope: None,
        name: None,
        expires_at: None,
        created_by: None,
        created_at: 1,
        revoked_at: None,
    }
}
