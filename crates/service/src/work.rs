//! `get_work`: ready agent steps for an agent, open work items for a person, oldest
//! first across runs, read from the store's work index.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_blobs::Blobs;
use agentprocess_engine::{Actor, ProcessVersion, Run, ToolError, work_items};
use agentprocess_store::{Store, WorkKind, WorkQuery};
use serde_json::{Value, json};

use crate::{Caller, Service, cursor, millis};

impl<S: Store, B: Blobs> Service<S, B> {
    /// `get_work`.
    pub async fn get_work(
        &self,
        caller: &Caller,
        limit: u32,
        cursor: Option<&str>,
        process: Option<String>,
    ) -> Result<Value, ToolError> {
        let now = self.now();
        let actor = caller.actor();
        let (kind, groups, person) = match &actor {
            Actor::Agent { .. } => (WorkKind::Agent, Vec::new(), None),
            Actor::Person {
                person,
                groups,
                operator,
            } => {
                let mut groups = groups.clone();
                if *operator {
                    groups.push(self.settings.engine.escalation_group.clone());
                }
                (WorkKind::Item, groups, Some(person.to_lowercase()))
            }
        };
        let query = WorkQuery {
            kind,
            now: millis(now),
            groups,
            person,
            process,
            after: cursor.map(cursor::decode).transpose()?,
            limit,
        };
        let page = self.store.work(caller.org(), &query).await.map_err(crate::retry)?;
        let mut runs: HashMap<String, Option<(Run, Arc<ProcessVersion>)>> = HashMap::new();
        let mut items = Vec::with_capacity(page.items.len());
        for row in page.items {
            // A ready agent step's row carries its item; only a step whose lease ended
            // needs its run (the item then hands on the claim's progress).
            if let Some(item) = row
                .item
                .as_deref()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
            {
                items.push(item);
                continue;
            }
            if !runs.contains_key(&row.run_id) {
                // Rows and runs are written together, so a missing run is only one
                // that went between the two reads; a failing store is `retry`.
                let loaded = match self.read_run(caller.org(), &row.run_id).await {
                    Ok(found) => Some(found),
                    Err(error) if error.code == agentprocess_engine::Code::NotFound => None,
                    Err(error) => return Err(error),
                };
                runs.insert(row.run_id.clone(), loaded);
            }
            let Some(Some((run, version))) = runs.get(&row.run_id) else {
                continue;
            };
            let step_of = |item: &Value| match kind {
                WorkKind::Agent => item["stepId"].as_str().map(str::to_owned),
                WorkKind::Item => item["workItem"]["stepId"].as_str().map(str::to_owned),
            };
            let found = work_items(run, version, &actor, &self.settings.engine, now)
                .into_iter()
                .find(|item| step_of(item).as_deref() == Some(row.step_id.as_str()));
            items.extend(found);
        }
        Ok(json!({ "items": items, "nextCursor": page.next.as_ref().map(cursor::encode) }))
    }
}
