//! `decide`: a person acts on a work item.

use agentprocess_blobs::Blobs;
use agentprocess_engine::Decide;
use agentprocess_store::{AuditFilter, Store};
use agentprocess_views::RunView;

use crate::ids::RunIds;
use crate::write::{Change, Locked, Target, Write, fresh};
use crate::{Caller, Error, Service, Tool};

impl<S: Store, B: Blobs> Service<S, B> {
    /// `decide`. The engine refuses agents, in the order tools.md gives.
    pub async fn decide(
        &self,
        caller: &Caller,
        run_id: &str,
        mut decide: Decide,
        write: &Write,
    ) -> Result<RunView, Error> {
        let Locked { mut tx, run, version } =
            fresh!(self.open_run(caller, write, Tool::Decide, Target::Run(run_id)).await?);
        let file_issues = self
            .verify_files(&mut tx, caller.org(), &mut decide.submission.evidence)
            .await?;
        let now = self.now();
        let actor = caller.actor();
        let audited = serde_json::Map::from_iter([
            ("workItem".to_owned(), serde_json::json!(decide.work_item)),
            ("decision".to_owned(), serde_json::json!(decide.decision.as_str())),
            ("note".to_owned(), serde_json::json!(decide.note)),
        ]);
        let mut ids = RunIds { run: run.id.clone() };
        let mut context = self.context(now, &actor, &mut ids);
        let transition = agentprocess_engine::decide(&run, &version, decide, file_issues, &mut context)?;
        self.audit(&mut tx, caller, "run.decided", &run.id, audited).await?;
        let change = Change {
            before: Some(&run),
            transition: &transition,
            version: &version,
        };
        let view = RunView::of(&transition.run, &version, now);
        self.finish(tx, caller, write, Tool::Decide, Some(change), view).await
    }

    /// Who decided work item `item` of run `run_id` (their person value, or their
    /// identity id when they are gone), and when (milliseconds), from the audit log;
    /// `None` when it holds no decision of the item.
    pub async fn decision_of(&self, caller: &Caller, run_id: &str, item: &str) -> Result<Option<(String, i64)>, Error> {
        let mut filter = AuditFilter {
            kind: Some("run.decided".to_owned()),
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
