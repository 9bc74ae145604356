//! Published versions as the engine needs them, parsed once per process and kept:
//! a published version never changes, so the cache needs no invalidation.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use agentprocess_engine::ProcessVersion;
use agentprocess_format::Options;
use agentprocess_store::{Store, StoreTx, StoredVersion};

use crate::{Error, PUBLISHED, Service, not_found, retry};
use agentprocess_store::SqlTx;

type Key = (String, String, u32);

/// Parsed versions by organization, process and number.
#[derive(Default)]
pub(crate) struct Cache {
    parsed: Mutex<HashMap<Key, Arc<ProcessVersion>>>,
}

impl Service {
    /// Version `number` of `process` of the caller's organization (the latest when
    /// `None`), for pages that draw it.
    pub async fn version_for(
        &self,
        caller: &crate::Caller,
        process: &str,
        number: Option<u32>,
    ) -> Result<Arc<ProcessVersion>, Error> {
        self.process_version(caller.org(), process, number).await
    }

    /// Version `number` of `process`, or the latest; `not_found` when there is none.
    pub(crate) async fn process_version(
        &self,
        org: &str,
        process: &str,
        number: Option<u32>,
    ) -> Result<Arc<ProcessVersion>, Error> {
        if let Some(found) = number.and_then(|number| self.cached(org, process, number)) {
            return Ok(found);
        }
        let stored = self.store.version(org, process, number).await.map_err(retry)?;
        self.found(org, process, number, stored)
    }

    /// As [`Self::process_version`], read inside a write's transaction.
    pub(crate) async fn process_version_in(
        &self,
        tx: &mut SqlTx,
        org: &str,
        process: &str,
        number: Option<u32>,
    ) -> Result<Arc<ProcessVersion>, Error> {
        if let Some(found) = number.and_then(|number| self.cached(org, process, number)) {
            return Ok(found);
        }
        let stored = tx.version(org, process, number).await.map_err(retry)?;
        self.found(org, process, number, stored)
    }

    fn found(
        &self,
        org: &str,
        process: &str,
        number: Option<u32>,
        stored: Option<StoredVersion>,
    ) -> Result<Arc<ProcessVersion>, Error> {
        let Some(stored) = stored else {
            return Err(match number {
                Some(number) => not_found(format!("process {process:?} has no version {number}")),
                None => not_found(format!("no process {process:?} is published in this organization")),
            });
        };
        self.parse(org, &stored)
    }

    fn cached(&self, org: &str, process: &str, number: u32) -> Option<Arc<ProcessVersion>> {
        let key = (org.to_owned(), process.to_owned(), number);
        self.versions.parsed.lock().ok()?.get(&key).cloned()
    }

    /// The engine's view of a stored version, parsed at most once.
    pub(crate) fn parse(&self, org: &str, stored: &StoredVersion) -> Result<Arc<ProcessVersion>, Error> {
        if let Some(found) = self.cached(org, &stored.process, stored.number) {
            return Ok(found);
        }
        let version = Arc::new(parsed(stored)?);
        if let Ok(mut parsed) = self.versions.parsed.lock() {
            parsed.insert(
                (org.to_owned(), stored.process.clone(), stored.number),
                Arc::clone(&version),
            );
        }
        Ok(version)
    }
}

/// The engine's view of a stored version, parsed anew.
pub(crate) fn parsed(stored: &StoredVersion) -> Result<ProcessVersion, Error> {
    let options = Options {
        capabilities: PUBLISHED,
        folder: None,
    };
    let process = agentprocess_format::validate(stored.source.as_bytes(), &options).map_err(|refusal| {
        retry(format!(
            "published {} v{} no longer validates: {refusal}",
            stored.process, stored.number
        ))
    })?;
    let roles: BTreeMap<String, String> = serde_json::from_str(&stored.roles).map_err(|error| {
        retry(format!(
            "role bindings of {} v{}: {error}",
            stored.process, stored.number
        ))
    })?;
    let agents = serde_json::from_str(&stored.agents).map_err(|error| {
        retry(format!(
            "agent bindings of {} v{}: {error}",
            stored.process, stored.number
        ))
    })?;
    Ok(ProcessVersion {
        number: stored.number,
        process,
        roles,
        agents,
    })
}
