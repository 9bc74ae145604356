//! `get_work`: ready agent steps for an agent, open work items for a person, oldest
//! first across runs, read from the store's work index.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_engine::{Actor, AgentBindings, ProcessVersion, Run, StepState, Work, work_items};
use agentprocess_store::{Store, WorkKind, WorkQuery, WorkRow};
use agentprocess_views::{Page, PersonWork, WorkEntry};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::{Caller, Error, Service, cursor, millis};

/// What the runs a page of work came from hold, by run id.
type Facts = HashMap<String, RunFacts>;

/// What a run holds, for a list that says what each item is about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFacts {
    /// The run's inputs.
    pub inputs: Map<String, Value>,
    /// The latest output of each field its done steps handed in: where two steps hand
    /// in a field of one name, the one completed last.
    pub outputs: Map<String, Value>,
}

impl RunFacts {
    pub(crate) fn of(run: Run) -> Self {
        let mut done: Vec<_> = run
            .steps
            .into_iter()
            // A step reached again (a rework) holds an earlier attempt, not a fact.
            .filter(|step| step.state == Some(StepState::Done))
            .filter_map(|step| Some((step.completed?, step.record?.output?)))
            .collect();
        done.sort_by_key(|(order, _)| *order);
        let mut outputs = Map::new();
        for (_, output) in done {
            outputs.extend(output);
        }
        Self {
            inputs: run.inputs,
            outputs,
        }
    }
}

impl Service {
    /// `get_work`, each entry as the JSON it is answered with: a ready agent step's
    /// item as its row stores it, without being parsed and printed again.
    pub async fn get_work(
        &self,
        caller: &Caller,
        limit: u32,
        cursor: Option<&str>,
        process: Option<String>,
    ) -> Result<Page<Box<RawValue>>, Error> {
        let (page, _) = self.work_and_inputs(caller, limit, cursor, process).await?;
        let items = page
            .items
            .into_iter()
            .map(|entry| match entry {
                Entry::Stored(item) => Ok(item.json),
                Entry::Built(entry) => serde_json::value::to_raw_value(&entry).map_err(Error::internal),
            })
            .collect::<Result<_, _>>()?;
        Ok(Page {
            items,
            next_cursor: page.next_cursor,
        })
    }

    /// A person's inbox: their first `limit` work items, each with its run's inputs
    /// and latest outputs (read with the runs the items are built from).
    pub async fn inbox(
        &self,
        caller: &Caller,
        limit: u32,
        process: Option<String>,
    ) -> Result<Vec<(PersonWork, RunFacts)>, Error> {
        let (page, facts) = self.work_and_inputs(caller, limit, None, process).await?;
        Ok(page
            .items
            .into_iter()
            .filter_map(|entry| match entry {
                Entry::Built(WorkEntry::Person(item)) => {
                    let of_run = facts.get(&item.run_id).cloned().unwrap_or_default();
                    Some((item, of_run))
                }
                Entry::Built(WorkEntry::Agent(_)) | Entry::Stored(_) => None,
            })
            .collect())
    }

    async fn work_and_inputs(
        &self,
        caller: &Caller,
        limit: u32,
        cursor: Option<&str>,
        process: Option<String>,
    ) -> Result<(Page<Entry>, Facts), Error> {
        let now = self.now();
        let actor = caller.actor();
        let (kind, groups, person, agent) = match &actor {
            Actor::Agent { id, groups } => (WorkKind::Agent, groups.clone(), None, Some(id.clone())),
            Actor::Person {
                person,
                groups,
                operator,
            } => {
                let mut groups = groups.clone();
                if *operator {
                    groups.push(self.settings.engine.escalation_group.clone());
                }
                (WorkKind::Item, groups, Some(person.to_lowercase()), None)
            }
        };
        let query = WorkQuery {
            kind,
            now: millis(now),
            groups,
            person,
            agent,
            process,
            after: cursor.map(cursor::decode).transpose()?,
            limit,
        };
        let page = self.store.work(caller.org(), &query).await.map_err(crate::retry)?;
        let next_cursor = page.next.as_ref().map(cursor::encode);
        // A ready agent step's row carries its item; a person's item (its snapshot is
        // of now) and a step whose lease ended (its item hands on the claim's
        // progress) are built from their runs, read in one query.
        let rows: Vec<(WorkRow, Option<StoredItem>)> = page
            .items
            .into_iter()
            .map(|mut row| {
                let stored = row.item.take().and_then(StoredItem::read);
                (row, stored)
            })
            .collect();
        let mut wanted: Vec<String> = rows
            .iter()
            .filter(|(_, stored)| stored.is_none())
            .map(|(row, _)| row.run_id.clone())
            .collect();
        wanted.sort();
        wanted.dedup();
        let policies = match &actor {
            Actor::Person { .. } => self.policies(caller.org()).await?,
            Actor::Agent { .. } => crate::Policies::default(),
        };
        let mut runs: HashMap<String, (Run, Arc<ProcessVersion>)> = HashMap::new();
        for stored in self.store.runs(caller.org(), &wanted).await.map_err(crate::retry)? {
            let loaded = self.with_version(caller.org(), &stored).await?;
            runs.insert(stored.id, loaded);
        }
        let mut items = Vec::with_capacity(rows.len());
        for (row, stored) in rows {
            if let Some(item) = stored {
                if self.admits(caller.org(), &actor, &item).await? {
                    items.push(Entry::Stored(item));
                }
                continue;
            }
            // Rows and runs are written together: a run missing here went between the
            // two reads, and its rows with it.
            let Some((run, version)) = runs.get(&row.run_id) else {
                continue;
            };
            let found = work_items(run, version, &actor, &self.settings.engine, now)
                .into_iter()
                .find(|work| step_id(run, work) == row.step_id)
                .and_then(|work| WorkEntry::of(run, version, work));
            // An item a policy keeps from the caller is not offered to them, nor an
            // agent step its binding keeps from the calling agent.
            let kept_from_them = match &found {
                Some(WorkEntry::Agent(item)) => !admitted(&version.agents, &actor, &item.step_id),
                Some(WorkEntry::Person(item)) => caller
                    .identity
                    .person
                    .as_deref()
                    .is_some_and(|person| policies.keeps(run, version, &item.work_item.id, person).is_some()),
                _ => false,
            };
            if !kept_from_them {
                items.extend(found.map(Entry::Built));
            }
        }
        let facts = runs.into_iter().map(|(id, (run, _))| (id, RunFacts::of(run))).collect();
        Ok((Page { items, next_cursor }, facts))
    }
}

/// An entry of a page of work: built now from its run, or an agent's item as stored.
#[expect(
    clippy::large_enum_variant,
    reason = "made per item of one page and answered at once; a box would only add an allocation"
)]
enum Entry {
    Built(WorkEntry),
    Stored(StoredItem),
}

/// A ready agent step's item as its row holds it ([`agentprocess_views::AgentWork`] printed when the run
/// was written), with the names the binding check reads.
struct StoredItem {
    json: Box<RawValue>,
    process: String,
    version: u32,
    step_id: String,
}

impl StoredItem {
    /// The item in `text`; `None` if it is not one (its step's item is then built
    /// from the run).
    fn read(text: String) -> Option<Self> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Names {
            process: String,
            version: u32,
            step_id: String,
        }
        let json = RawValue::from_string(text).ok()?;
        let names: Names = serde_json::from_str(json.get()).ok()?;
        Some(Self {
            json,
            process: names.process,
            version: names.version,
            step_id: names.step_id,
        })
    }
}

impl Service {
    /// Whether the calling agent may claim the step of `item`, by its version's
    /// binding. The store's filter already holds this; a row written without its
    /// binding (by a server older than agent bindings, during a rolling update) must
    /// not offer the step to an agent whose claim would be refused.
    async fn admits(&self, org: &str, actor: &Actor, item: &StoredItem) -> Result<bool, Error> {
        let version = self.process_version(org, &item.process, Some(item.version)).await?;
        Ok(admitted(&version.agents, actor, &item.step_id))
    }
}

fn admitted(agents: &AgentBindings, actor: &Actor, step: &str) -> bool {
    match actor {
        Actor::Agent { id, groups } => agents.admits(step, id, groups),
        Actor::Person { .. } => true,
    }
}

/// The id of the step `work` is on.
pub(crate) fn step_id<'a>(run: &'a Run, work: &Work) -> &'a str {
    let (Work::Claimable { step, .. } | Work::Decidable { step }) = work;
    &run.steps[*step].id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_item_is_answered_as_stored_and_one_that_is_not_an_item_is_built_again() {
        let text = r#"{"runId":"r1","stepId":"collect","process":"p","version":3,"amount":1.20E3}"#;
        let item = StoredItem::read(text.to_owned()).expect("an item");
        assert_eq!(item.json.get(), text);
        assert_eq!(
            (item.process.as_str(), item.version, item.step_id.as_str()),
            ("p", 3, "collect")
        );
        for not_an_item in [
            r#"{"runId":"r1"}"#,
            "not json",
            r#"{"stepId":"s","process":"p","version":-1}"#,
        ] {
            assert!(StoredItem::read(not_an_item.to_owned()).is_none(), "{not_an_item}");
        }
    }
}
