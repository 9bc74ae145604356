//! Versions kept open to new runs. A new run starts on the latest version of its
//! process, or on an older version an admin keeps open (with who did it, when and
//! why), so that naming an older version does not walk around the controls a newer
//! one added.

use std::future::Future;

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::{Error, Result};

/// An admin's keeping of a version open to new runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptOpen {
    /// The process.
    pub process: String,
    /// The version number.
    pub number: u32,
    /// Who kept it open (an identity id).
    pub by: String,
    /// Why, in the admin's words.
    pub reason: String,
    /// When.
    pub at: i64,
}

/// Where a version stands for new runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// The number of the process's latest version.
    pub latest: u32,
    /// Whether an admin keeps the version open.
    pub kept_open: bool,
}

impl Standing {
    /// Whether a new run may start on version `number`: the latest, or kept open.
    pub fn open_to_new_runs(&self, number: u32) -> bool {
        number == self.latest || self.kept_open
    }
}

/// Which versions of a process new runs may start on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Openings {
    /// The number of the process's latest version.
    pub latest: u32,
    /// The versions an admin keeps open, oldest first.
    pub kept: Vec<KeptOpen>,
}

impl Openings {
    /// The admin's keeping of version `number` open, if any.
    pub fn kept(&self, number: u32) -> Option<&KeptOpen> {
        self.kept.iter().find(|kept| kept.number == number)
    }

    /// Where version `number` stands for new runs.
    pub fn standing(&self, number: u32) -> Standing {
        Standing {
            latest: self.latest,
            kept_open: self.kept(number).is_some(),
        }
    }
}

/// Reads of the versions kept open.
pub trait OpenVersions {
    /// Which versions of `process` new runs may start on; `None` when the process has
    /// no published version.
    fn openings(&self, org: &str, process: &str) -> impl Future<Output = Result<Option<Openings>>> + Send;

    /// Where version `number` of `process` stands for new runs; `None` when the
    /// process has no published version.
    fn standing(&self, org: &str, process: &str, number: u32) -> impl Future<Output = Result<Option<Standing>>> + Send;
}

/// Keeping versions open and closing them.
pub trait OpenVersionsTx {
    /// Keeps a version open, replacing who, why and when if it was already.
    fn keep_open(&mut self, org: &str, kept: &KeptOpen) -> impl Future<Output = Result<()>> + Send;

    /// Closes a version kept open; whether it was.
    fn close_version(&mut self, org: &str, process: &str, number: u32) -> impl Future<Output = Result<bool>> + Send;
}

pub(crate) async fn openings(connection: &mut AnyConnection, org: &str, process: &str) -> Result<Option<Openings>> {
    let latest: Option<i64> =
        sqlx::query_scalar("SELECT MAX(number) FROM process_versions WHERE org_id = $1 AND process = $2")
            .bind(org)
            .bind(process)
            .fetch_one(&mut *connection)
            .await?;
    let Some(latest) = latest else {
        return Ok(None);
    };
    let rows = sqlx::query(
        "SELECT process, number, kept_by, reason, kept_at FROM open_versions \
         WHERE org_id = $1 AND process = $2 ORDER BY number",
    )
    .bind(org)
    .bind(process)
    .fetch_all(connection)
    .await?;
    Ok(Some(Openings {
        latest: number(latest)?,
        kept: rows.iter().map(kept_row).collect::<Result<_>>()?,
    }))
}

fn kept_row(row: &AnyRow) -> Result<KeptOpen> {
    Ok(KeptOpen {
        process: row.try_get("process")?,
        number: number(row.try_get("number")?)?,
        by: row.try_get("kept_by")?,
        reason: row.try_get("reason")?,
        at: row.try_get("kept_at")?,
    })
}

fn number(stored: i64) -> Result<u32> {
    u32::try_from(stored).map_err(|_| Error::Corrupt(format!("version number {stored}")))
}

pub(crate) async fn standing(
    connection: &mut AnyConnection,
    org: &str,
    process: &str,
    version: u32,
) -> Result<Option<Standing>> {
    let row = sqlx::query(
        "SELECT MAX(v.number) AS latest, \
         (SELECT COUNT(*) FROM open_versions o WHERE o.org_id = $1 AND o.process = $2 AND o.number = $3) AS kept \
         FROM process_versions v WHERE v.org_id = $1 AND v.process = $2",
    )
    .bind(org)
    .bind(process)
    .bind(i64::from(version))
    .fetch_one(connection)
    .await?;
    let latest: Option<i64> = row.try_get("latest")?;
    let kept: i64 = row.try_get("kept")?;
    latest
        .map(|latest| {
            Ok(Standing {
                latest: number(latest)?,
                kept_open: kept > 0,
            })
        })
        .transpose()
}

pub(crate) async fn keep_open(connection: &mut AnyConnection, org: &str, kept: &KeptOpen) -> Result<()> {
    sqlx::query(
        "INSERT INTO open_versions (org_id, process, number, kept_by, reason, kept_at) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (org_id, process, number) DO UPDATE SET kept_by = excluded.kept_by, \
         reason = excluded.reason, kept_at = excluded.kept_at",
    )
    .bind(org)
    .bind(&kept.process)
    .bind(i64::from(kept.number))
    .bind(&kept.by)
    .bind(&kept.reason)
    .bind(kept.at)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn close_version(
    connection: &mut AnyConnection,
    org: &str,
    process: &str,
    version: u32,
) -> Result<bool> {
    let closed = sqlx::query("DELETE FROM open_versions WHERE org_id = $1 AND process = $2 AND number = $3")
        .bind(org)
        .bind(process)
        .bind(i64::from(version))
        .execute(connection)
        .await?;
    Ok(closed.rows_affected() == 1)
}

impl OpenVersions for crate::SqlStore {
    async fn openings(&self, org: &str, process: &str) -> Result<Option<Openings>> {
        openings(&mut *self.lend().await?, org, process).await
    }

    async fn standing(&self, org: &str, process: &str, number: u32) -> Result<Option<Standing>> {
        standing(&mut *self.lend().await?, org, process, number).await
    }
}

impl OpenVersionsTx for crate::SqlTx {
    async fn keep_open(&mut self, org: &str, kept: &KeptOpen) -> Result<()> {
        keep_open(self.connection(), org, kept).await
    }

    async fn close_version(&mut self, org: &str, process: &str, number: u32) -> Result<bool> {
        close_version(self.connection(), org, process, number).await
    }
}
