//! Which versions new runs may start on: the latest version of a process, or an older
//! one an admin keeps open. A control a newer version adds (an agent step bound to
//! certain agents, a role bound to another group, a check) then cannot be walked
//! around by naming the version before it in `start_run`. Runs already started keep
//! the version they pinned, as the protocol says.

use agentprocess_engine::{Code, ToolError};
use agentprocess_store::{KeptOpen, OpenVersions as _, OpenVersionsTx as _, Openings, Store as _, StoreTx as _};

use crate::admin::{Admin, refuse};
use crate::{Error, Service, millis, not_found, retry};

/// The longest reason an admin may give for keeping a version open.
pub const MAX_KEEP_OPEN_REASON_CHARS: usize = 500;

impl Service {
    /// Refuses a new run on version `number` of `process` unless it is the latest or
    /// an admin keeps it open (what `start_run` refuses, for a page to say first).
    pub async fn refuse_closed_version(&self, org: &str, process: &str, number: u32) -> Result<(), Error> {
        let standing = self.store.standing(org, process, number).await.map_err(retry)?;
        match standing {
            Some(standing) if !standing.open_to_new_runs(number) => {
                let latest = standing.latest;
                Err(ToolError::new(
                    Code::Forbidden,
                    format!(
                        "version {number} of {process} is closed to new runs: version {latest} is the latest, \
                         and no admin of this organization keeps version {number} open"
                    ),
                    vec![format!(
                        "version: {number} is closed to new runs; leave version out to start on the latest \
                         ({latest}), or ask an admin to keep version {number} open"
                    )],
                )
                .into())
            }
            // The latest, kept open, or no such version (refused as `not_found` by the
            // version's own read).
            _ => Ok(()),
        }
    }
}

impl Admin {
    /// Which versions of `process` new runs may start on; `not_found` when none is
    /// published.
    pub async fn openings(&self, org: &str, process: &str) -> Result<Openings, Error> {
        self.store
            .openings(org, process)
            .await?
            .ok_or_else(|| not_found(format!("there is no published process {process:?}")))
    }

    /// Keeps version `number` of `process` open to new runs once newer versions are
    /// published, for `reason`, by identity `by`; the latest may be kept open ahead of
    /// the next publication.
    pub async fn keep_open(
        &self,
        org: &str,
        (process, number): (&str, u32),
        by: &str,
        reason: &str,
    ) -> Result<KeptOpen, Error> {
        let reason = reason.trim();
        let mut issues = Vec::new();
        if reason.is_empty() {
            issues.push("reason: required: say why runs may still start on this version".to_owned());
        } else if reason.chars().count() > MAX_KEEP_OPEN_REASON_CHARS {
            issues.push(format!("reason: at most {MAX_KEEP_OPEN_REASON_CHARS} characters"));
        }
        self.published(org, (process, number)).await?;
        refuse(issues)?;
        let kept = KeptOpen {
            process: process.to_owned(),
            number,
            by: by.to_owned(),
            reason: reason.to_owned(),
            at: millis(self.now()),
        };
        let mut tx = self.store.begin().await?;
        tx.keep_open(org, &kept).await?;
        tx.commit().await?;
        Ok(kept)
    }

    /// Closes version `number` of `process` to new runs unless it is the latest;
    /// whether an admin had kept it open.
    pub async fn close_version(&self, org: &str, (process, number): (&str, u32)) -> Result<bool, Error> {
        self.published(org, (process, number)).await?;
        let mut tx = self.store.begin().await?;
        let closed = tx.close_version(org, process, number).await?;
        tx.commit().await?;
        Ok(closed)
    }

    /// `not_found` unless the organization published version `number` of `process`.
    async fn published(&self, org: &str, (process, number): (&str, u32)) -> Result<(), Error> {
        let standing = self.store.standing(org, process, number).await?;
        if standing.is_none_or(|standing| number == 0 || number > standing.latest) {
            return Err(not_found(format!("{process} has no version {number}")));
        }
        Ok(())
    }
}
