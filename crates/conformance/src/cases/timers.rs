//! `due`: a step whose due time passes with its work open is marked `overdue`, and its
//! work stays open.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Env, Runner, start};
use crate::report::{Failure, Outcome, ensure};
use crate::session::Context;

/// Further than any `due` of the fixtures (the longest is 30 days).
const PAST_EVERY_DUE_SECONDS: u64 = 31 * 24 * 3600;

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case(
            "timers/a-due-step-turns-overdue-and-stays-open",
            "specification §2.4, §3.5; tools.md, get_run",
            async {
                let fixture = env
                    .published
                    .iter()
                    .find(|fixture| fixture.frontmatter["steps"][0].get("due").is_some())
                    .ok_or_else(|| Failure::skip("no published fixture has a due time on its first step"))?;
                let step = fixture.frontmatter["steps"][0]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let run = start(cx, env, fixture).await?;
                let before = step_view(cx, &run, &step).await?;
                ensure!(before["overdue"] == false, "{step} is overdue at start: {before}");
                ensure!(before["due"].is_string(), "{step} shows no due time: {before}");
                if !cx.advance(PAST_EVERY_DUE_SECONDS).await? {
                    return Err(Failure::skip(
                        "the due time is days away; give --test-clock to move the server's clock",
                    ));
                }
                for _ in 0..200 {
                    let now = step_view(cx, &run, &step).await?;
                    if now["overdue"] == true {
                        ensure!(
                            now["state"] == before["state"],
                            "{step} changed state when it turned overdue: {now}"
                        );
                        return Ok(Outcome::Passed);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(Failure::new(format!(
                    "{step} never turned overdue after its due time passed"
                )))
            },
        )
        .await;
}

/// The step's entry in the run view's `steps`.
async fn step_view(cx: &Context, run: &str, step: &str) -> Result<Value, Failure> {
    let view = cx.people[0].ok("get_run", json!({ "runId": run })).await?;
    view["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["id"] == step)
        .cloned()
        .ok_or_else(|| Failure::new(format!("{step} is not in the run view")))
}
