//! The audit log: who did what, when, from where. Append-only: the store offers no
//! way to change or remove an entry.

use std::sync::atomic::{AtomicU64, Ordering};

use agentprocess_store::{AuditFilter, AuditRow, Directory, DirectoryTx};
use serde_json::{Map, Value};

use crate::secrets::random_bytes;

/// Who acts, and from which address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The identity id, or `anonymous` for someone not signed in.
    pub id: String,
    /// The caller's network address, when known.
    pub address: Option<String>,
}

impl Actor {
    /// Someone not (yet) signed in.
    pub fn anonymous(address: Option<String>) -> Self {
        Self {
            id: "anonymous".to_owned(),
            address,
        }
    }
}

/// Orders the entries one process appends within one millisecond.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// An entry to append.
pub fn entry(actor: &Actor, kind: &str, target: Option<&str>, detail: Map<String, Value>, at: i64) -> AuditRow {
    let suffix: String = random_bytes::<4>().iter().map(|byte| format!("{byte:02x}")).collect();
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed) % 1_000_000_000_000;
    AuditRow {
        // Zero-padded milliseconds first, so ids sort by time; then this process's
        // sequence, so entries of one transaction keep their order; then a random part,
        // so two processes never make the same id.
        id: format!("{at:015}-{sequence:012}-{suffix}"),
        at,
        actor: actor.id.clone(),
        kind: kind.to_owned(),
        target: target.map(str::to_owned),
        detail: Value::Object(detail).to_string(),
        address: actor.address.clone(),
    }
}

/// Appends one entry inside a transaction.
pub(crate) async fn append(
    tx: &mut impl DirectoryTx,
    org: &str,
    actor: &Actor,
    kind: &str,
    target: Option<&str>,
    detail: Map<String, Value>,
    at: i64,
) -> Result<(), agentprocess_store::Error> {
    tx.append_audit(org, &entry(actor, kind, target, detail, at)).await
}

/// A JSON object from pairs, for an entry's detail.
pub fn detail<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
}

impl crate::Auth {
    /// Records an action taken elsewhere (publishing, webhooks, cancelling a run), in
    /// a transaction of its own, after that action committed.
    pub async fn record(
        &self,
        org: &str,
        actor: &Actor,
        kind: &str,
        target: Option<&str>,
        detail: Map<String, Value>,
        now: jiff::Timestamp,
    ) -> Result<(), crate::Error> {
        let mut tx = agentprocess_store::Store::begin(&self.store).await?;
        append(&mut tx, org, actor, kind, target, detail, crate::millis(now)).await?;
        agentprocess_store::StoreTx::commit(tx).await?;
        Ok(())
    }
}

impl crate::Auth {
    /// Entries of an organization's log, in order, and whether more follow.
    pub async fn audit(&self, org: &str, filter: &AuditFilter) -> Result<(Vec<AuditRow>, bool), crate::Error> {
        Ok(self.store.audit(org, filter).await?)
    }
}
