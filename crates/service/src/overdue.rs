//! The operators' queue of overdue work: every open work item and agent step of the
//! organization past its `due`, longest overdue first, with who it waits on.

use std::sync::Arc;

use agentprocess_engine::ProcessVersion;
use agentprocess_store::{Role, Store as _, WorkKind};
use jiff::Timestamp;

use crate::{Caller, Error, Service, forbidden, millis, retry};

/// Who an overdue step waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitsOn {
    /// The members of a group.
    Group(String),
    /// One person.
    Person(String),
    /// An agent: any, or the one holding its claim until then.
    Agent {
        /// When the claim's lease ends, if it is claimed.
        claimed_until: Option<Timestamp>,
    },
}

/// One overdue step.
#[derive(Debug, Clone)]
pub struct Overdue {
    /// Its run.
    pub run_id: String,
    /// The step.
    pub step_id: String,
    /// When it was due.
    pub due_at: Timestamp,
    /// Who it waits on.
    pub waits_on: WaitsOn,
    /// The version its run is on.
    pub version: Arc<ProcessVersion>,
}

/// The most overdue steps one listing shows.
pub const OVERDUE_SHOWN: u32 = 200;

impl Service {
    /// The organization's overdue work, longest overdue first, at most `limit`; for
    /// operators.
    pub async fn overdue(&self, caller: &Caller, limit: u32) -> Result<Vec<Overdue>, Error> {
        let org = caller.org();
        let rows = self.overdue_rows(caller, limit).await?;
        let ids: Vec<String> = rows.iter().map(|row| row.run_id.clone()).collect();
        let mut versions = std::collections::HashMap::new();
        for stored in self.store.runs(org, &ids).await.map_err(retry)? {
            let (_, version) = self.with_version(org, &stored).await?;
            versions.insert(stored.id.clone(), version);
        }
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let waits_on = match (row.kind, row.group, row.person) {
                    (WorkKind::Agent, _, _) => WaitsOn::Agent {
                        claimed_until: row.lease_until.and_then(|at| Timestamp::from_millisecond(at).ok()),
                    },
                    (WorkKind::Item, Some(group), _) => WaitsOn::Group(group),
                    (WorkKind::Item, None, person) => WaitsOn::Person(person.unwrap_or_default()),
                };
                Some(Overdue {
                    version: Arc::clone(versions.get(&row.run_id)?),
                    due_at: Timestamp::from_millisecond(row.due_at?).ok()?,
                    run_id: row.run_id,
                    step_id: row.step_id,
                    waits_on,
                })
            })
            .collect())
    }

    /// How many steps the queue would list (at most [`OVERDUE_SHOWN`]), from the index
    /// alone: no run is read.
    pub async fn overdue_count(&self, caller: &Caller) -> Result<usize, Error> {
        Ok(self.overdue_rows(caller, OVERDUE_SHOWN).await?.len())
    }

    async fn overdue_rows(&self, caller: &Caller, limit: u32) -> Result<Vec<agentprocess_store::WorkRow>, Error> {
        if !caller.identity.has_role(Role::Operator) {
            return Err(forbidden("the queue of overdue work is for operators"));
        }
        self.store
            .overdue(caller.org(), millis(self.now()), limit.clamp(1, OVERDUE_SHOWN))
            .await
            .map_err(retry)
    }
}
