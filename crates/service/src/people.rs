//! `decide`: a person acts on a work item.

use agentprocess_engine::Decide;
use agentprocess_store::{AuditFilter, Store};
use agentprocess_views::RunView;

use crate::check::{CHECK_ROUNDS, Concluded, kept_changing};
use crate::ids::RunIds;
use crate::write::{Locked, Opened, Target, Write, on_run};
use crate::{Caller, Error, Service, Tool};
use agentprocess_store::Directory;

impl Service {
    /// `decide`. The engine refuses agents, in the order tools.md gives. A person
    /// completing a task with a check is checked as an agent is (see [`Service::submit`]).
    pub async fn decide(&self, caller: &Caller, run_id: &str, decide: Decide, write: &Write) -> Result<RunView, Error> {
        let policies = self.policies(caller.org()).await?;
        let mut audited = serde_json::Map::from_iter([
            ("workItem".to_owned(), serde_json::json!(decide.work_item)),
            ("decision".to_owned(), serde_json::json!(decide.decision.as_str())),
            ("note".to_owned(), serde_json::json!(decide.note)),
        ]);
        if !policies.all_off() {
            // The policies in force when it was decided.
            audited.insert("policies".to_owned(), serde_json::json!(policies));
        }
        let mut checked = None;
        for _ in 0..CHECK_ROUNDS {
            let concluded = on_run!(|lock| {
                let opened = self
                    .open_run(caller, write, Tool::Decide, Target::Run(run_id), lock)
                    .await?;
                let Locked { mut tx, run, version } = match opened {
                    Opened::Fresh(locked) => locked,
                    Opened::Replay(view) => return Ok(Concluded::Done(Box::new(view))),
                };
                Self::permitted(
                    &policies,
                    &run,
                    &version,
                    &decide.work_item,
                    caller.identity.person.as_deref(),
                )?;
                let mut decide = decide.clone();
                let file_issues = self
                    .verify_files(&mut tx, caller.org(), &mut decide.submission.evidence)
                    .await?;
                let actor = caller.actor();
                let mut ids = RunIds { run: run.id.clone() };
                let now = self.now();
                let mut context = self.context(now, &actor, &mut ids);
                let submitted =
                    agentprocess_engine::decide(&run, &version, decide, file_issues, checked.as_ref(), &mut context)?;
                let audited = Some((agentprocess_auth::audit::AuditEvent::RunDecided, audited.clone()));
                self.conclude(
                    tx,
                    caller,
                    write,
                    Tool::Decide,
                    (&run, &version, now),
                    submitted,
                    audited,
                )
                .await
            })?;
            match concluded {
                Concluded::Done(view) => return Ok(*view),
                Concluded::Ask(material) => checked = Some(self.ask(&material).await),
            }
        }
        Err(kept_changing())
    }

    /// Who decided work item `item` of run `run_id` (their person value, or their
    /// identity id when they are gone), and when (milliseconds), from the audit log;
    /// `None` when it holds no decision of the item.
    pub async fn decision_of(&self, caller: &Caller, run_id: &str, item: &str) -> Result<Option<(String, i64)>, Error> {
        let mut filter = AuditFilter {
            kind: Some(agentprocess_auth::audit::AuditEvent::RunDecided.as_str().to_owned()),
            target: Some(run_id.to_owned()),
            limit: 200,
            ..AuditFilter::default()
        };
        loop {
            let (rows, more) = self.store.audit(caller.org(), &filter).await.map_err(crate::retry)?;
            let found = rows.iter().find(|row| {
                serde_json::from_str::<serde_json::Value>(&row.detail).is_ok_and(|detail| detail["workItem"] == item)
            });
            if let Some(row) = found {
                let identity = self
                    .store
                    .identity(caller.org(), &row.actor)
                    .await
                    .map_err(crate::retry)?;
                let who = identity
                    .and_then(|identity| identity.person)
                    .unwrap_or_else(|| row.actor.clone());
                return Ok(Some((who, row.at)));
            }
            if !more {
                return Ok(None);
            }
            filter.after = rows.last().map(|row| row.id.clone());
        }
    }
}
