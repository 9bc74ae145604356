//! `start_run`, `get_run`, `list_runs`, `cancel` and `send_event`.

use std::sync::Arc;

use agentprocess_engine::{HeldEvent, Mode, ProcessVersion, Run, RunState, StartRun, TimerId};
use agentprocess_store::{RunFilter, Store, StoredRun};
use agentprocess_views::{EventResult, Page, RunListItem, RunView};
use serde_json::{Map, Value, json};

use crate::ids::{RunIds, random_id};
use crate::index::value_hash;
use crate::stored::Change;
use crate::write::{Locked, Target, Write, fresh, no_run, on_run};
use crate::{Caller, Error, Limit, Service, Tool, cursor, retry};
use agentprocess_auth::audit::AuditEvent;

/// The arguments of `start_run` after decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct StartRunArgs {
    /// The process name.
    pub process: String,
    /// A version number; the latest when `None`.
    pub version: Option<u32>,
    /// The inputs.
    pub inputs: Map<String, Value>,
    /// `live` or `test`.
    pub mode: Mode,
}

/// The arguments of `list_runs` after decoding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListRuns {
    /// Only runs of this process.
    pub process: Option<String>,
    /// Only runs in this state.
    pub state: Option<RunState>,
    /// Only runs whose inputs have these values.
    pub inputs: Map<String, Value>,
    /// Page size.
    pub limit: u32,
    /// Where to go on from.
    pub cursor: Option<String>,
    /// Beyond `list_runs` (the pages' filters): only runs in this mode.
    pub mode: Option<Mode>,
    /// Only runs started at or after this time.
    pub started_from: Option<jiff::Timestamp>,
    /// Only runs started before this time.
    pub started_before: Option<jiff::Timestamp>,
    /// Newest first, where `list_runs` lists oldest first.
    pub newest_first: bool,
}

/// A run as its page shows it: the run view, and what the view leaves out.
#[derive(Debug, Clone)]
pub struct RunDetails {
    /// The run view, as `get_run` answers it.
    pub view: RunView,
    /// Events delivered and not yet consumed by a `wait_for`, oldest first.
    pub held: Vec<HeldEvent>,
    /// The timers the run waits on, earliest first.
    pub timers: Vec<PendingTimer>,
    /// The version the run is pinned to.
    pub version: Arc<ProcessVersion>,
}

/// A timer a run waits on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTimer {
    /// Which step's timer, and for what.
    pub id: TimerId,
    /// When it fires.
    pub at: jiff::Timestamp,
}

impl Service {
    /// The run view of `get_run`, with the run's held events, its pending timers and
    /// the version it runs on, for the run page.
    pub async fn run_details(&self, caller: &Caller, run_id: &str) -> Result<RunDetails, Error> {
        let (mut run, version) = self.loaded_run(caller, run_id).await?;
        let rows = self.store.run_timers(caller.org(), run_id).await.map_err(retry)?;
        let timers = rows
            .into_iter()
            .filter_map(|row| {
                // A row whose id this server cannot read is not one of its timers.
                let id: TimerId = row.timer_id.parse().ok()?;
                Some(PendingTimer {
                    id,
                    at: jiff::Timestamp::from_millisecond(row.fire_at).ok()?,
                })
            })
            .collect();
        let view = self.present(caller.org(), RunView::of(&run, &version, self.now()));
        let held = std::mem::take(&mut run.events);
        Ok(RunDetails {
            view,
            held,
            timers,
            version,
        })
    }

    /// `start_run`.
    pub async fn start_run(&self, caller: &Caller, args: StartRunArgs, write: &Write) -> Result<RunView, Error> {
        let version = self.process_version(caller.org(), &args.process, args.version).await?;
        let tx = fresh!(self.open(caller, write, Tool::StartRun, (Limit::OpenRuns, 1)).await?);
        if let Some(number) = args.version {
            self.refuse_closed_version(caller.org(), &args.process, number).await?;
        }
        let now = self.now();
        let actor = caller.actor();
        let run_id = random_id("r_", 10);
        let mut ids = RunIds { run: run_id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        let command = StartRun {
            id: run_id,
            inputs: args.inputs,
            mode: args.mode,
        };
        let transition = agentprocess_engine::start(&version, command, &mut context)?;
        let change = Change {
            before: None,
            transition: &transition,
            version: &version,
        };
        let view = RunView::of(&transition.run, &version, now);
        self.finish(tx, caller, write, Tool::StartRun, Some(change), view).await
    }

    /// `get_run`.
    pub async fn get_run(&self, caller: &Caller, run_id: &str) -> Result<RunView, Error> {
        let (run, version) = self.loaded_run(caller, run_id).await?;
        Ok(self.present(caller.org(), RunView::of(&run, &version, self.now())))
    }

    /// The caller's run `run_id`, parsed, with the version it runs on; `not_found` when
    /// there is none.
    async fn loaded_run(&self, caller: &Caller, run_id: &str) -> Result<(Run, Arc<ProcessVersion>), Error> {
        let stored = self.store.run(caller.org(), run_id).await.map_err(retry)?;
        self.with_version(caller.org(), &stored.ok_or_else(|| no_run(run_id))?)
            .await
    }

    /// A stored run, parsed, with the version it runs on.
    pub(crate) async fn with_version(
        &self,
        org: &str,
        stored: &StoredRun,
    ) -> Result<(Run, Arc<ProcessVersion>), Error> {
        let run = crate::stored::load(stored).map_err(retry)?.into_run();
        let version = self.process_version(org, &run.process, Some(run.version)).await?;
        Ok((run, version))
    }

    /// `list_runs`: oldest first, filtered through the store's indexes.
    pub async fn list_runs(&self, caller: &Caller, args: ListRuns) -> Result<Page<RunListItem>, Error> {
        let (stored, next_cursor) = self.listed(caller, args).await?;
        let now = self.now();
        let mut items = Vec::with_capacity(stored.len());
        for stored in stored {
            let run = crate::stored::load(&stored).map_err(retry)?.into_run();
            items.push(RunListItem::of(run, now));
        }
        Ok(Page { items, next_cursor })
    }

    /// The runs `list_runs` lists, each as its view (where it stands, what waits on
    /// whom): what the runs page shows.
    pub async fn run_views(&self, caller: &Caller, args: ListRuns) -> Result<Page<RunView>, Error> {
        let (stored, next_cursor) = self.listed(caller, args).await?;
        let now = self.now();
        let mut items = Vec::with_capacity(stored.len());
        for stored in stored {
            let (run, version) = self.with_version(caller.org(), &stored).await?;
            items.push(self.present(caller.org(), RunView::of(&run, &version, now)));
        }
        Ok(Page { items, next_cursor })
    }

    /// The stored runs of one page of `list_runs`, and the cursor of the next.
    async fn listed(&self, caller: &Caller, args: ListRuns) -> Result<(Vec<StoredRun>, Option<String>), Error> {
        let filter = RunFilter {
            process: args.process,
            state: args.state,
            inputs: args
                .inputs
                .iter()
                .map(|(field, value)| (field.clone(), value_hash(value)))
                .collect(),
            mode: args.mode,
            started_from: args.started_from.map(jiff::Timestamp::as_millisecond),
            started_before: args.started_before.map(jiff::Timestamp::as_millisecond),
            newest_first: args.newest_first,
            after: args.cursor.as_deref().map(cursor::decode).transpose()?,
            limit: args.limit,
        };
        let page = self.store.list_runs(caller.org(), &filter).await.map_err(retry)?;
        Ok((page.items, page.next.as_ref().map(cursor::encode)))
    }

    /// `cancel`.
    pub async fn cancel(&self, caller: &Caller, run_id: &str, reason: &str, write: &Write) -> Result<RunView, Error> {
        on_run!(|lock| {
            let Locked { mut tx, run, version } = fresh!(
                self.open_run(caller, write, Tool::Cancel, Target::Run(run_id), lock)
                    .await?
            );
            let now = self.now();
            let actor = caller.actor();
            let mut ids = RunIds { run: run.id.clone() };
            let mut context = self.context(now, &actor, &mut ids);
            let transition = agentprocess_engine::cancel(&run, &version, reason, &mut context)?;
            let audited = serde_json::Map::from_iter([("reason".to_owned(), json!(reason))]);
            self.audit(&mut tx, caller, AuditEvent::RunCancelled, &run.id, audited);
            let change = Change {
                before: Some(&run),
                transition: &transition,
                version: &version,
            };
            let view = RunView::of(&transition.run, &version, now);
            self.finish(tx, caller, write, Tool::Cancel, Some(change), view).await
        })
    }

    /// `send_event`: the engine takes it from an agent or an operator.
    pub async fn send_event(
        &self,
        caller: &Caller,
        run_id: &str,
        name: &str,
        data: Map<String, Value>,
        write: &Write,
    ) -> Result<EventResult, Error> {
        on_run!(|lock| {
            let Locked { tx, run, version } = fresh!(
                self.open_run(caller, write, Tool::SendEvent, Target::Run(run_id), lock)
                    .await?
            );
            let actor = caller.actor();
            let mut ids = RunIds { run: run.id.clone() };
            let mut context = self.context(self.now(), &actor, &mut ids);
            let (transition, consumed_by) =
                agentprocess_engine::send_event(&run, &version, name, data.clone(), &mut context)?;
            let change = Change {
                before: Some(&run),
                transition: &transition,
                version: &version,
            };
            self.finish(
                tx,
                caller,
                write,
                Tool::SendEvent,
                Some(change),
                EventResult { consumed_by },
            )
            .await
        })
    }
}
