//! check-1 through the whole router, with the test-double evaluator (not a model: it
//! answers by the fixed rules of `agentprocess_testkit::evaluator`, steered by the
//! submission's summary): `describe`, publication, and `vendor-check` walked along
//! every verdict on both databases.

use std::time::{Duration, Instant};

use agentprocess_auth::Role;
use axum::http::StatusCode;
use base64::Engine as _;
use serde_json::{Value, json};

use crate::harness::{TestApp, on_both};

/// The official `vendor-check` fixture.
fn vendor_check() -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/agentprocess/conformance/fixtures/vendor-check/PROCESS.md"),
    )
    .expect("the fixture")
}

fn code(result: &Value) -> &str {
    result["error"]["code"].as_str().unwrap_or("ok")
}

async fn people(app: TestApp) -> TestApp {
    app.with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("fay", Role::Member, &["finance"])
        .await
        .with_member("ops", Role::Operator, &["operators"])
        .await
        .with_agent("bot")
        .await
}

async fn vendor_app(app: TestApp) -> TestApp {
    let app = people(app).await;
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "vendor-check", &vendor_check(), "finance").await;
    app
}

/// A run of vendor-check with the screening claimed: `(run id, token, upload id)`.
async fn claimed(app: &TestApp, bot: &str, request: &str) -> (String, String, String) {
    let started = app
        .call(
            bot,
            "start_run",
            json!({ "requestId": format!("{request}-start"), "process": "vendor-check",
                    "inputs": { "vendorName": "Globex", "amount": 12000 } }),
        )
        .await;
    let run = started["data"]["run"]["id"].as_str().expect("a run").to_owned();
    let claim = app
        .call(
            bot,
            "claim",
            json!({ "requestId": format!("{request}-claim"), "runId": run, "stepId": "check_vendor" }),
        )
        .await;
    let token = claim["data"]["token"].as_str().expect("a token").to_owned();
    let upload = app
        .call(
            bot,
            "upload",
            json!({ "requestId": format!("{request}-upload"), "fileName": "report.txt", "contentType": "text/plain",
                    "contentBase64": base64::engine::general_purpose::STANDARD.encode("OFAC: no hits. EU: no hits.") }),
        )
        .await;
    let upload = upload["data"]["id"].as_str().expect("an upload").to_owned();
    (run, token, upload)
}

fn submission(request: &str, token: &str, upload: &str, summary: &str) -> Value {
    json!({
        "requestId": request, "token": token,
        "output": { "cleared": true, "summary": "Cleared against OFAC and EU." },
        "evidence": [{ "kind": "file", "ref": upload }],
        "summary": summary, "next": "approve", "reason": "Cleared.",
    })
}

on_both!(describe_offers_check_1_while_an_evaluator_answers, offered, checking);
async fn offered(app: TestApp) -> TestApp {
    let app = people(app).await;
    let bot = app.mcp_token("bot").await;
    let described = app.call(&bot, "describe", json!({})).await;
    assert_eq!(
        described["data"]["profiles"],
        json!(["parallel-1", "check-1"]),
        "{described}"
    );
    let limits = &described["data"]["limits"];
    assert_eq!(
        (
            &limits["checkPass"],
            &limits["checkFail"],
            &limits["checkConfidence"],
            &limits["checkStateBytes"]
        ),
        (&json!(0.9), &Value::Null, &json!(0.8), &json!(65536))
    );
    // An evaluator that stops answering takes check-1 out of describe until it answers.
    let double = app.evaluator.as_ref().expect("a test evaluator");
    double.set_down(true);
    assert!(app.service.probe_evaluator().await.is_err());
    let described = app.call(&bot, "describe", json!({})).await;
    assert_eq!(described["data"]["profiles"], json!(["parallel-1"]));
    double.set_down(false);
    app.service.probe_evaluator().await.expect("answers again");
    let described = app.call(&bot, "describe", json!({})).await;
    assert_eq!(described["data"]["profiles"], json!(["parallel-1", "check-1"]));
    app
}

on_both!(without_an_evaluator_check_is_refused_at_publication, refused);
async fn refused(app: TestApp) -> TestApp {
    let app = people(app).await;
    let bot = app.mcp_token("bot").await;
    let described = app.call(&bot, "describe", json!({})).await;
    assert_eq!(described["data"]["profiles"], json!(["parallel-1"]));
    assert_eq!(described["data"]["limits"]["checkPass"], json!(0.9), "always published");
    let admin = app.api_token("ann", "admin").await;
    let (status, answer) = app.import(&admin, "vendor-check/PROCESS.md", &vendor_check()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let issues = answer.to_string();
    assert!(
        issues.contains("needs the check-1 profile, which this server does not offer: it runs checks only with an evaluator configured"),
        "{answer}"
    );
    app
}

on_both!(vendor_check_passes_to_the_approver_with_the_verdict, passes, checking);
async fn passes(app: TestApp) -> TestApp {
    let app = vendor_app(app).await;
    let bot = app.mcp_token("bot").await;
    let (run, token, upload) = claimed(&app, &bot, "p").await;
    let submitted = app
        .call(
            &bot,
            "submit",
            submission("p-submit", &token, &upload, "Both lists, no hits."),
        )
        .await;
    assert_eq!(submitted["ok"], true, "{submitted}");
    let check = &submitted["data"]["data"]["steps"]["check_vendor"]["check"];
    assert_eq!(check["verdict"], "pass");
    assert_eq!(check["model"], agentprocess_testkit::evaluator::MODEL);
    // A replay answers from the record, without asking again.
    let asked = app.evaluator.as_ref().map_or(0, |double| double.requests().len());
    let replay = app
        .call(
            &bot,
            "submit",
            submission("p-submit", &token, &upload, "Both lists, no hits."),
        )
        .await;
    assert_eq!(replay, submitted);
    assert_eq!(
        app.evaluator.as_ref().map_or(0, |double| double.requests().len()),
        asked
    );
    assert_eq!(asked, 3, "three questions, each asked once");
    let fay = app.mcp_token("fay").await;
    let work = app.call(&fay, "get_work", json!({})).await;
    let item = &work["data"]["items"][0];
    assert_eq!(
        (&item["runId"], &item["workItem"]["stepId"]),
        (&json!(run), &json!("approve")),
        "{work}"
    );
    app
}

on_both!(
    vendor_check_fails_back_to_the_agent_with_the_verdict_in_the_handoff,
    fails,
    checking
);
async fn fails(app: TestApp) -> TestApp {
    let app = vendor_app(app).await;
    let bot = app.mcp_token("bot").await;
    let (run, token, upload) = claimed(&app, &bot, "f").await;
    let before = app.call(&bot, "get_run", json!({ "runId": run })).await;
    let refused = app
        .call(&bot, "submit", submission("f-1", &token, &upload, "[fail]"))
        .await;
    assert_eq!(code(&refused), "not_accepted", "{refused}");
    let issues = refused["error"]["issues"].as_array().expect("issues");
    assert_eq!(
        issues[0],
        "check: The cleared verdict matches what the attached report says. → no (0.1)"
    );
    assert_eq!(issues.len(), 3);
    let after = app.call(&bot, "get_run", json!({ "runId": run })).await;
    assert_eq!(
        after["data"]["snapshot"], before["data"]["snapshot"],
        "run data unchanged"
    );
    // The refusal recorded nothing under its requestId: the same id, fixed, is accepted.
    let fixed = app
        .call(&bot, "submit", submission("f-1", &token, &upload, "Both lists."))
        .await;
    assert_eq!(fixed["ok"], true, "{fixed}");
    app
}

on_both!(
    vendor_check_unsure_goes_to_an_operator_who_completes_with_the_candidate,
    unsure,
    checking
);
async fn unsure(app: TestApp) -> TestApp {
    let app = vendor_app(app).await;
    let bot = app.mcp_token("bot").await;
    let (run, token, upload) = claimed(&app, &bot, "u").await;
    let submitted = app
        .call(&bot, "submit", submission("u-1", &token, &upload, "[unsure]"))
        .await;
    assert_eq!(submitted["ok"], true, "{submitted}");
    let item = &submitted["data"]["workItems"][0];
    assert_eq!(item["assignedTo"], json!({ "group": "operators" }));
    assert_eq!(item["escalation"]["check"]["verdict"], "unsure");
    assert_eq!(item["escalation"]["candidate"]["evidence"][0]["ref"], upload);
    let ops = app.mcp_token("ops").await;
    let work = app.call(&ops, "get_work", json!({})).await;
    let listed = &work["data"]["items"][0]["workItem"];
    assert_eq!(listed["escalation"]["check"]["verdict"], "unsure", "{work}");
    let decided = app
        .call(
            &ops,
            "decide",
            json!({ "requestId": "u-decide", "runId": run, "workItemId": listed["id"],
                    "snapshot": listed["snapshot"], "decision": "completed" }),
        )
        .await;
    assert_eq!(decided["ok"], true, "{decided}");
    let data = &decided["data"]["data"]["steps"]["check_vendor"];
    assert_eq!(data["evidence"][0]["ref"], upload);
    assert_eq!(data["check"]["verdict"], "unsure");
    assert_eq!(decided["data"]["workItems"][0]["stepId"], "approve");
    app
}

on_both!(
    an_evaluator_away_is_retry_and_the_same_request_id_resubmits,
    away,
    checking
);
async fn away(app: TestApp) -> TestApp {
    let app = vendor_app(app).await;
    let bot = app.mcp_token("bot").await;
    let (run, token, upload) = claimed(&app, &bot, "a").await;
    let double = app.evaluator.as_ref().expect("a test evaluator");
    double.set_down(true);
    let before = app.call(&bot, "get_run", json!({ "runId": run })).await;
    let answer = app
        .call(&bot, "submit", submission("a-1", &token, &upload, "Both lists."))
        .await;
    assert_eq!(code(&answer), "retry", "{answer}");
    let after = app.call(&bot, "get_run", json!({ "runId": run })).await;
    assert_eq!(after, before, "nothing changed");
    double.set_down(false);
    let again = app
        .call(&bot, "submit", submission("a-1", &token, &upload, "Both lists."))
        .await;
    assert_eq!(again["ok"], true, "{again}");
    // A failure the one retry covers never reaches the agent.
    let (_, token, upload) = claimed(&app, &bot, "b").await;
    let flaky = app
        .call(&bot, "submit", submission("b-1", &token, &upload, "[flaky]"))
        .await;
    assert_eq!(flaky["ok"], true, "{flaky}");
    app
}

on_both!(a_slow_evaluator_holds_no_lock_on_the_run, unlocked, checking);
async fn unlocked(app: TestApp) -> TestApp {
    let app = vendor_app(app).await;
    let bot = app.mcp_token("bot").await;
    let (_, token, upload) = claimed(&app, &bot, "s").await;
    // The double takes 3 s on `[slow]`; the adapter gives up after 2 s, then asks once more.
    let slow = app.call(&bot, "submit", submission("s-1", &token, &upload, "[slow]"));
    let renew = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let renewed = app
            .call(&bot, "renew", json!({ "requestId": "s-renew", "token": token }))
            .await;
        (renewed, started.elapsed())
    };
    let (slow, (renewed, took)) = tokio::join!(slow, renew);
    assert_eq!(renewed["ok"], true, "{renewed}");
    assert!(took < Duration::from_secs(1), "renew waited {took:?} on the check");
    // The renewal replaced the token the slow submission held.
    assert!(matches!(code(&slow), "stale" | "retry"), "{slow}");
    app
}
