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

on_both!(
    an_operator_completes_an_unsure_step_with_the_held_submission_in_the_browser,
    in_the_browser,
    checking
);
async fn in_the_browser(app: TestApp) -> TestApp {
    let app = vendor_app(app).await.with_dev_sign_in();
    let bot = app.mcp_token("bot").await;
    let (run, token, upload) = claimed(&app, &bot, "w").await;
    let submitted = app
        .call(&bot, "submit", submission("w-1", &token, &upload, "[unsure]"))
        .await;
    let item = submitted["data"]["workItems"][0]["id"]
        .as_str()
        .expect("an item")
        .to_owned();
    let mut browser = crate::people_oauth::Browser::signed_in(&app, "ops").await;
    let path = format!("/runs/{run}/items/{item}");
    let page = browser.get(&app, &path).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    for shown in [
        "The step's check was unsure",
        "The cleared verdict matches what the attached report says.",
        "The held submission",
        "Cleared against OFAC and EU.",
        "Complete with the held submission",
        "Return to the agent",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    let field = |name: &str| crate::web::hidden(&page.text, name);
    let (csrf, snapshot, request, seen) = (field("csrf"), field("snapshot"), field("requestId"), field("seen"));
    let sent = browser
        .post_form(
            &app,
            &path,
            &[
                ("csrf", &csrf),
                ("snapshot", &snapshot),
                ("requestId", &request),
                ("seen", &seen),
                ("held", "1"),
                ("decision", "completed"),
            ],
        )
        .await;
    assert_eq!(sent.location, "/inbox?decided=completed", "{}", sent.text);
    let view = app.call(&bot, "get_run", json!({ "runId": run })).await;
    let record = &view["data"]["data"]["steps"]["check_vendor"];
    assert_eq!(record["summary"], "[unsure]");
    assert_eq!(record["by"], "ops@acme.test");
    assert_eq!(record["check"]["verdict"], "unsure");
    app
}

const ADVISORY: &str = "---
name: advisory-screen
description: Screen a vendor with an advisory check, then finance approves.
steps:
  - id: screen
    agent: Screen the vendor.
    output: { cleared: boolean }
    check:
      - ask: The screening is complete.
        pass: 0.9
        fail: 0.5
    advisory: true
    next: approve
  - id: approve
    person: finance-approver
    approve: Approve the screening.
    on_reject: screen
  - id: done
    finish: done
---
";

/// One screening of `run` with `summary` (which steers the test double), then the
/// approver's decision.
async fn screened_and_decided(app: &TestApp, bot: &str, fay: &str, run: &str, summary: &str, approved: bool) {
    let claim = app
        .call(
            bot,
            "claim",
            json!({ "requestId": format!("{run}-{summary}-c-{approved}"), "runId": run, "stepId": "screen" }),
        )
        .await;
    let token = claim["data"]["token"].as_str().expect("a token");
    let submitted = app
        .call(
            bot,
            "submit",
            json!({ "requestId": format!("{run}-{summary}-s-{approved}"), "token": token,
                    "output": { "cleared": true }, "summary": summary }),
        )
        .await;
    assert_eq!(submitted["ok"], true, "advisory never blocks: {submitted}");
    let item = &submitted["data"]["workItems"][0];
    let decision = if approved {
        json!({ "decision": "approved" })
    } else {
        json!({ "decision": "rejected", "note": "Redo it." })
    };
    let mut arguments = json!({ "requestId": format!("{run}-{summary}-d-{approved}"), "runId": run,
                                "workItemId": item["id"], "snapshot": item["snapshot"] });
    arguments
        .as_object_mut()
        .expect("object")
        .extend(decision.as_object().cloned().unwrap_or_default());
    let decided = app.call(fay, "decide", arguments).await;
    assert_eq!(decided["ok"], true, "{decided}");
}

on_both!(
    the_agreement_report_counts_advisory_verdicts_against_approvers,
    agreement,
    checking
);
async fn agreement(app: TestApp) -> TestApp {
    let app = people(app).await.with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    app.publish(&admin, "advisory-screen", ADVISORY.as_bytes(), "finance")
        .await;
    let (bot, fay) = (app.mcp_token("bot").await, app.mcp_token("fay").await);
    // verdict, decision: pass ✓, pass ✓, pass ✗ then unsure ✓ (rework), fail ✗, unsure ✗.
    let history: [&[(&str, bool)]; 5] = [
        &[("ok", true)],
        &[("ok", true)],
        &[("ok", false), ("[unsure]", true)],
        &[("[fail]", false)],
        &[("[unsure]", false)],
    ];
    for (index, screenings) in history.iter().enumerate() {
        let started = app
            .call(
                &bot,
                "start_run",
                json!({ "requestId": format!("a{index}"), "process": "advisory-screen", "inputs": {} }),
            )
            .await;
        let run = started["data"]["run"]["id"].as_str().expect("a run").to_owned();
        for (summary, approved) in screenings.iter() {
            screened_and_decided(&app, &bot, &fay, &run, summary, *approved).await;
        }
    }
    let ops = app.api_token("ops", "read").await;
    let (status, report) = app
        .rest(
            &ops,
            axum::http::Method::GET,
            "/processes/advisory-screen/check-agreement?target=0.35",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["runs"], 5);
    let step = &report["steps"][0];
    assert_eq!(
        (&step["step"], &step["approval"], &step["pairs"]),
        (&json!("screen"), &json!("approve"), &json!(6))
    );
    assert_eq!(
        step["matrix"],
        json!([
            { "verdict": "pass", "approved": 2, "rejected": 1 },
            { "verdict": "fail", "approved": 0, "rejected": 1 },
            { "verdict": "unsure", "approved": 1, "rejected": 1 },
            { "verdict": "error", "approved": 0, "rejected": 0 },
        ])
    );
    assert_eq!(step["passRate"], json!(0.5));
    assert_eq!(step["falsePassRate"], json!(0.3333));
    assert_eq!(step["falseFailRate"], json!(0.0));
    assert_eq!(step["unsureRate"], json!(0.3333));
    // From 0.5 to 0.7 five pass and two of those were rejected; from 0.71 to 0.97,
    // three and one; above, none.
    let at = |threshold: f64| {
        step["curve"]
            .as_array()
            .expect("curve")
            .iter()
            .find(|point| point["pass"].as_f64() == Some(threshold))
            .cloned()
            .expect("a point")
    };
    assert_eq!(
        at(0.7),
        json!({ "pass": 0.7, "passRate": 0.8333, "falsePassRate": 0.4 })
    );
    assert_eq!(
        at(0.9),
        json!({ "pass": 0.9, "passRate": 0.5, "falsePassRate": 0.3333 })
    );
    assert_eq!(
        at(0.98),
        json!({ "pass": 0.98, "passRate": 0.0, "falsePassRate": null })
    );
    assert_eq!(
        step["threshold"],
        json!({ "pass": 0.71, "fail": 0.71, "falsePassRate": 0.3333, "passRate": 0.5 })
    );
    // A stricter target no threshold meets; a window with no verdicts has no pairs.
    let (_, strict) = app
        .rest(
            &ops,
            axum::http::Method::GET,
            "/processes/advisory-screen/check-agreement",
            None,
        )
        .await;
    assert_eq!(strict["target"], json!(0.05));
    assert_eq!(strict["steps"][0]["threshold"], Value::Null);
    let (_, later) = app
        .rest(
            &ops,
            axum::http::Method::GET,
            "/processes/advisory-screen/check-agreement?since=2999-01-01T00:00:00Z",
            None,
        )
        .await;
    assert_eq!(later["steps"][0]["pairs"], 0);
    let (status, wrong) = app
        .rest(
            &ops,
            axum::http::Method::GET,
            "/processes/advisory-screen/check-agreement?target=2&since=soon",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{wrong}");
    assert_eq!(
        wrong["issues"],
        json!([
            "since: \"soon\" is not an RFC 3339 time",
            "target: 2 is not between 0 and 1"
        ])
    );
    let member = app.api_token("fay", "read").await;
    let (status, _) = app
        .rest(
            &member,
            axum::http::Method::GET,
            "/processes/advisory-screen/check-agreement",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The same report as a page, with its chart.
    let mut browser = crate::people_oauth::Browser::signed_in(&app, "ops").await;
    let page = browser
        .get(&app, "/processes/advisory-screen/check-agreement?target=0.35")
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    for shown in [
        "screen → approve",
        "33.3%",
        "<svg class=\"chart\"",
        "pass: <strong>0.71</strong>",
    ] {
        assert!(page.text.contains(shown), "{shown}: {}", page.text);
    }
    app
}
