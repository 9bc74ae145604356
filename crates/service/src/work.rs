//! `get_work`: ready agent steps for an agent, open work items for a person, oldest
//! first across runs, read from the store's work index.

use std::collections::HashMap;
use std::sync::Arc;

use agentprocess_engine::{Actor, AgentBindings, ProcessVersion, Run, StepState, Work, work_items};
use agentprocess_store::{Store, WorkKind, WorkQuery, WorkRow};
use agentprocess_views::{AgentWork, Page, PersonWork, WorkEntry};
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
    /// `get_work`.
    pub async fn get_work(
        &self,
        caller: &Caller,
        limit: u32,
        cursor: Option<&str>,
        process: Option<String>,
    ) -> Result<Page<WorkEntry>, Error> {
        Ok(self.work_and_inputs(caller, limit, cursor, process).await?.0)
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
                WorkEntry::Person(item) => {
                    let of_run = facts.get(&item.run_id).cloned().unwrap_or_default();
                    Some((item, of_run))
                }
                WorkEntry::Agent(_) => None,
            })
            .collect())
    }

    async fn work_and_inputs(
        &self,
        caller: &Caller,
        limit: u32,
        cursor: Option<&str>,
        process: Option<String>,
    ) -> Result<(Page<WorkEntry>, Facts), Error> {
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
        // A ready agent step's row carries its item; a person's item (its snapshot is
        // of now) and a step whose lease ended (its item hands on the claim's
        // progress) are built from their runs, read in one query.
        let stored_item = |row: &WorkRow| {
            row.item
                .as_deref()
                .and_then(|text| serde_json::from_str::<AgentWork>(text).ok())
        };
        let mut wanted: Vec<String> = page
            .items
            .iter()
            .filter(|row| stored_item(row).is_none())
            .map(|row| row.run_id.clone())
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
        let mut items = Vec::with_capacity(page.items.len());
        for row in &page.items {
            if let Some(item) = stored_item(row) {
                if self.admits(caller.org(), &actor, &item).await? {
                    items.push(WorkEntry::Agent(item));
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
                Some(WorkEntry::Person(item)) => Self::permitted(
                    &policies,
                    run,
                    version,
                    &item.work_item.id,
                    caller.identity.person.as_deref(),
                )
                .is_err(),
                _ => false,
            };
            if !kept_from_them {
                items.extend(found);
            }
        }
        let facts = runs.into_iter().map(|(id, (run, _))| (id, RunFacts::of(run))).collect();
        let page = Page {
            items,
            next_cursor: page.next.as_ref().map(cursor::encode),
        };
        Ok((page, facts))
    }
}

impl Service {
    /// Whether the calling agent may claim the step of `item`, by its version's
    /// binding. The store's filter already holds this; a row written without its
    /// binding (by a server older than agent bindings, during a rolling update) must
    /// not offer the step to an agent whose claim would be refused.
    async fn admits(&self, org: &str, actor: &Actor, item: &AgentWork) -> Result<bool, Error> {
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
