//! Paged and filtered reads: `get_work` oldest first with its cursor, `list_runs` by
//! process, state and inputs.

use serde_json::{Value, json};

use super::{Env, Runner, agent_run, no_agent_first, start_arguments};
use crate::report::{Failure, Outcome, ensure};
use crate::session::{Context, Session, request_id};

/// Pages the runner reads at most before it calls a listing endless.
const MOST_PAGES: usize = 500;

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "lists/get-work-pages-oldest-first-with-its-cursor",
            "specification §4.1; tools.md, get_work",
            async {
                let (fixture, first, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let mut started = vec![first];
                for _ in 0..2 {
                    let view = cx.people[0].ok("start_run", start_arguments(cx, env, fixture)).await?;
                    started.push(view["run"]["id"].as_str().unwrap_or_default().to_owned());
                }
                let items = every_page(
                    &cx.agents[1],
                    "get_work",
                    json!({ "process": fixture.name, "limit": 1 }),
                )
                .await?;
                let ours: Vec<&str> = items
                    .iter()
                    .filter_map(|item| item["runId"].as_str())
                    .filter(|run| started.iter().any(|started| started == run))
                    .collect();
                ensure!(
                    ours == started,
                    "get_work gave the runs in the order {ours:?}, they started as {started:?}"
                );
                let mut keys: Vec<(String, String)> = items
                    .iter()
                    .map(|item| (item["runId"].to_string(), item["stepId"].to_string()))
                    .collect();
                let all = keys.len();
                keys.sort();
                keys.dedup();
                ensure!(keys.len() == all, "an item came twice across the pages");
                Ok(Outcome::Passed)
            },
        )
        .await;
    runner
        .case(
            "lists/list-runs-filters-by-process-state-and-inputs",
            "specification §4.2; tools.md, list_runs",
            async {
                let (fixture, _, _) = agent_run(cx, env).await?.ok_or_else(no_agent_first)?;
                let arguments = start_arguments(cx, env, fixture);
                let inputs = arguments["inputs"].clone();
                let view = cx.people[0].ok("start_run", arguments).await?;
                let run = view["run"]["id"].clone();
                cx.operator
                    .ok(
                        "cancel",
                        json!({ "runId": run, "reason": "Conformance: listed.", "requestId": request_id() }),
                    )
                    .await?;
                let session = &cx.people[0];
                let cancelled = json!({ "process": fixture.name, "state": "cancelled", "limit": 100 });
                ensure!(
                    lists(session, cancelled, &run).await?,
                    "a cancelled run is missing from state: cancelled"
                );
                let active = json!({ "process": fixture.name, "state": "active", "limit": 100 });
                ensure!(
                    !lists(session, active, &run).await?,
                    "a cancelled run is listed under state: active"
                );
                let by_inputs = json!({ "process": fixture.name, "inputs": inputs, "limit": 100 });
                ensure!(
                    lists(session, by_inputs, &run).await?,
                    "the run is missing from a filter on its own inputs"
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
}

/// Whether `list_runs` with `filter` lists `run`, over every page.
async fn lists(session: &Session, filter: Value, run: &Value) -> Result<bool, Failure> {
    let runs = every_page(session, "list_runs", filter).await?;
    Ok(runs.iter().any(|item| item["id"] == *run))
}

/// Every item of a paged listing, following `nextCursor` to its end.
async fn every_page(session: &Session, tool: &str, mut arguments: Value) -> Result<Vec<Value>, Failure> {
    let mut items = Vec::new();
    for _ in 0..MOST_PAGES {
        let page = session.ok(tool, arguments.clone()).await?;
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(cursor) => arguments["cursor"] = json!(cursor),
            None => return Ok(items),
        }
    }
    Err(Failure::new(format!("{tool} gave more than {MOST_PAGES} pages")))
}
