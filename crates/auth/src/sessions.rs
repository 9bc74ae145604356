//! Browser sessions for tower-sessions, kept in the store (PostgreSQL, or SQLite in
//! the embedded mode), so any API process serves any session. Rows are keyed by the
//! SHA-256 of the session id: the table alone opens no session.

use agentprocess_store::{DirectoryTx, SessionRow, Store, StoreTx};
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};

use crate::secrets::sha256_hex;
use agentprocess_store::Directory;
use agentprocess_store::SqlStore;

/// The key under which a signed-in session holds who signed in.
pub const SIGNED_IN: &str = "signedIn";

/// Who signed in with a session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SignedIn {
    /// The organization.
    pub org: String,
    /// The identity.
    pub identity: String,
    /// When they signed in (milliseconds): the absolute timeout counts from here.
    pub at: i64,
}

/// tower-sessions' store over ours.
#[derive(Debug, Clone)]
pub struct Sessions {
    store: SqlStore,
}

impl Sessions {
    /// Sessions kept in `store`.
    pub fn new(store: SqlStore) -> Self {
        Self { store }
    }
}

fn backend(error: impl std::fmt::Display) -> session_store::Error {
    session_store::Error::Backend(error.to_string())
}

fn row(record: &Record) -> session_store::Result<SessionRow> {
    let signed_in = record
        .data
        .get(SIGNED_IN)
        .and_then(|value| serde_json::from_value::<SignedIn>(value.clone()).ok())
        .map(|signed_in| (signed_in.org, signed_in.identity));
    Ok(SessionRow {
        id_hash: sha256_hex(record.id.to_string().as_bytes()),
        signed_in,
        data: serde_json::to_string(&record.data).map_err(|error| session_store::Error::Encode(error.to_string()))?,
        expires_at: record.expiry_date.unix_timestamp().saturating_mul(1000),
    })
}

impl Sessions {
    async fn put(&self, record: &Record, only_new: bool) -> session_store::Result<bool> {
        let row = row(record)?;
        let mut tx = self.store.begin().await.map_err(backend)?;
        let written = tx.put_session(&row, only_new).await.map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(written)
    }
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        // A new id until one is free (a collision of 128 random bits is not expected).
        while !self.put(record, true).await? {
            record.id = Id::default();
        }
        Ok(())
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        self.put(record, false).await.map(|_| ())
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        let now = jiff::Timestamp::now().as_millisecond();
        let Some(row) = self
            .store
            .session(&sha256_hex(id.to_string().as_bytes()), now)
            .await
            .map_err(backend)?
        else {
            return Ok(None);
        };
        let data = serde_json::from_str(&row.data).map_err(|error| session_store::Error::Decode(error.to_string()))?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(row.expires_at / 1000)
            .map_err(|error| session_store::Error::Decode(error.to_string()))?;
        Ok(Some(Record {
            id: *id,
            data,
            expiry_date,
        }))
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let mut tx = self.store.begin().await.map_err(backend)?;
        tx.delete_session(&sha256_hex(id.to_string().as_bytes()))
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)
    }
}
