//! Per-organization limits as stored (what the platform granted, what the
//! organization's admins chose), and the two sums that capped limits count.

use std::future::Future;

use serde::{Deserialize, Serialize};
use sqlx::{AnyConnection, Row};

use crate::{Error, Result};

/// One kind of limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limit {
    /// Tool calls and REST requests of the organization per second, in one API process.
    CallsPerSecond,
    /// Calls of each one of its identities per second, in one API process.
    IdentityCallsPerSecond,
    /// Writes (tool calls that change something) per second, in one API process.
    WritesPerSecond,
    /// Calls of the organization in progress at once, in one API process.
    ConcurrentCalls,
    /// Runs not yet ended or cancelled.
    OpenRuns,
    /// Bytes of uploaded files kept.
    StoredBytes,
}

impl Limit {
    /// Every limit, in the order they are documented.
    pub const ALL: [Limit; 6] = [
        Limit::CallsPerSecond,
        Limit::IdentityCallsPerSecond,
        Limit::WritesPerSecond,
        Limit::ConcurrentCalls,
        Limit::OpenRuns,
        Limit::StoredBytes,
    ];

    /// The name in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Limit::CallsPerSecond => "callsPerSecond",
            Limit::IdentityCallsPerSecond => "identityCallsPerSecond",
            Limit::WritesPerSecond => "writesPerSecond",
            Limit::ConcurrentCalls => "concurrentCalls",
            Limit::OpenRuns => "openRuns",
            Limit::StoredBytes => "storedBytes",
        }
    }
}

/// A value for some limits. What `None` means is the holder's to say: not set (an
/// override), or no limit (a resolved set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitValues {
    /// [`Limit::CallsPerSecond`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_second: Option<u64>,
    /// [`Limit::IdentityCallsPerSecond`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_calls_per_second: Option<u64>,
    /// [`Limit::WritesPerSecond`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes_per_second: Option<u64>,
    /// [`Limit::ConcurrentCalls`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent_calls: Option<u64>,
    /// [`Limit::OpenRuns`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_runs: Option<u64>,
    /// [`Limit::StoredBytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
}

impl LimitValues {
    /// The value of `limit`.
    pub fn get(&self, limit: Limit) -> Option<u64> {
        *self.slot(limit)
    }

    /// Sets the value of `limit`.
    pub fn set(&mut self, limit: Limit, value: Option<u64>) {
        *self.slot_mut(limit) = value;
    }

    /// Whether no limit has a value.
    pub fn is_empty(&self) -> bool {
        Limit::ALL.iter().all(|limit| self.get(*limit).is_none())
    }

    fn slot(&self, limit: Limit) -> &Option<u64> {
        match limit {
            Limit::CallsPerSecond => &self.calls_per_second,
            Limit::IdentityCallsPerSecond => &self.identity_calls_per_second,
            Limit::WritesPerSecond => &self.writes_per_second,
            Limit::ConcurrentCalls => &self.concurrent_calls,
            Limit::OpenRuns => &self.open_runs,
            Limit::StoredBytes => &self.stored_bytes,
        }
    }

    fn slot_mut(&mut self, limit: Limit) -> &mut Option<u64> {
        match limit {
            Limit::CallsPerSecond => &mut self.calls_per_second,
            Limit::IdentityCallsPerSecond => &mut self.identity_calls_per_second,
            Limit::WritesPerSecond => &mut self.writes_per_second,
            Limit::ConcurrentCalls => &mut self.concurrent_calls,
            Limit::OpenRuns => &mut self.open_runs,
            Limit::StoredBytes => &mut self.stored_bytes,
        }
    }
}

/// Who set an organization's override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitLayer {
    /// The platform's operators (the admin CLI): replaces the server's default, up or
    /// down; 0 means no limit.
    Granted,
    /// The organization's admins (the REST surface): at most what is granted.
    Chosen,
}

/// One organization's overrides; empty when none were set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrgLimits {
    /// What the platform granted.
    pub granted: LimitValues,
    /// What the organization's admins chose.
    pub chosen: LimitValues,
    /// When either last changed.
    pub updated_at: Option<i64>,
}

/// Reads of the limits and of what they cap.
pub trait Limits {
    /// The organization's overrides.
    fn org_limits(&self, org: &str) -> impl Future<Output = Result<OrgLimits>> + Send;

    /// How many of the organization's runs are open, counting to `at_most` at most.
    fn open_runs(&self, org: &str, at_most: u64) -> impl Future<Output = Result<u64>> + Send;

    /// The bytes of the organization's uploads kept.
    fn stored_bytes(&self, org: &str) -> impl Future<Output = Result<u64>> + Send;
}

/// Writes of the limits.
pub trait LimitsTx {
    /// Replaces one layer of the organization's overrides.
    fn put_org_limits(
        &mut self,
        org: &str,
        layer: LimitLayer,
        values: &LimitValues,
        now: i64,
    ) -> impl Future<Output = Result<()>> + Send;
}

fn parse(org: &str, text: Option<String>) -> Result<LimitValues> {
    match text {
        None => Ok(LimitValues::default()),
        Some(text) => serde_json::from_str(&text)
            .map_err(|error| Error::Corrupt(format!("limits of organization {org}: {error}"))),
    }
}

pub(crate) async fn org_limits(connection: &mut AnyConnection, org: &str) -> Result<OrgLimits> {
    let row = sqlx::query("SELECT granted, chosen, updated_at FROM org_limits WHERE org_id = $1")
        .bind(org)
        .fetch_optional(connection)
        .await?;
    let Some(row) = row else {
        return Ok(OrgLimits::default());
    };
    Ok(OrgLimits {
        granted: parse(org, row.try_get("granted")?)?,
        chosen: parse(org, row.try_get("chosen")?)?,
        updated_at: Some(row.try_get("updated_at")?),
    })
}

pub(crate) async fn open_runs(connection: &mut AnyConnection, org: &str, at_most: u64) -> Result<u64> {
    let count: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT 1 FROM runs WHERE org_id = $1 AND state IN ('active', 'waiting') LIMIT $2) \
         AS open_runs",
    )
    .bind(org)
    .bind(i64::try_from(at_most).unwrap_or(i64::MAX))
    .fetch_one(connection)
    .await?;
    Ok(u64::try_from(count).unwrap_or(0))
}

pub(crate) async fn stored_bytes(connection: &mut AnyConnection, org: &str) -> Result<u64> {
    // PostgreSQL sums BIGINT as NUMERIC, which the portable driver cannot read.
    let bytes: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM uploads WHERE org_id = $1")
            .bind(org)
            .fetch_one(connection)
            .await?;
    Ok(u64::try_from(bytes).unwrap_or(0))
}

pub(crate) async fn put_org_limits(
    connection: &mut AnyConnection,
    org: &str,
    layer: LimitLayer,
    values: &LimitValues,
    now: i64,
) -> Result<()> {
    let text = (!values.is_empty())
        .then(|| serde_json::to_string(values))
        .transpose()
        .map_err(|error| Error::Misuse(format!("limits do not serialize: {error}")))?;
    let sql = match layer {
        LimitLayer::Granted => {
            "INSERT INTO org_limits (org_id, granted, chosen, updated_at) VALUES ($1, $2, NULL, $3) \
             ON CONFLICT (org_id) DO UPDATE SET granted = excluded.granted, updated_at = excluded.updated_at"
        }
        LimitLayer::Chosen => {
            "INSERT INTO org_limits (org_id, granted, chosen, updated_at) VALUES ($1, NULL, $2, $3) \
             ON CONFLICT (org_id) DO UPDATE SET chosen = excluded.chosen, updated_at = excluded.updated_at"
        }
    };
    sqlx::query(sql)
        .bind(org)
        .bind(text)
        .bind(now)
        .execute(connection)
        .await?;
    Ok(())
}

impl Limits for crate::SqlStore {
    async fn org_limits(&self, org: &str) -> Result<OrgLimits> {
        org_limits(&mut *self.lend().await?, org).await
    }

    async fn open_runs(&self, org: &str, at_most: u64) -> Result<u64> {
        open_runs(&mut *self.lend().await?, org, at_most).await
    }

    async fn stored_bytes(&self, org: &str) -> Result<u64> {
        stored_bytes(&mut *self.lend().await?, org).await
    }
}

impl LimitsTx for crate::SqlTx {
    async fn put_org_limits(&mut self, org: &str, layer: LimitLayer, values: &LimitValues, now: i64) -> Result<()> {
        put_org_limits(self.connection(), org, layer, values, now).await
    }
}
