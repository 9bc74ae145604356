//! Agent steps bound to agents, over REST and MCP: an admin binds every agent step of a
//! draft to one agent and one step to a group of agents, every wrong binding refused
//! at once in words; the version keeps the bindings; `get_work` offers each step only
//! to the agents it names, and a `claim` by any other agent is `forbidden` and changes
//! nothing. A group bound to an agent step stays; a binding removed lets any agent
//! claim again. The draft's admin page binds with a box ticked per agent and group.

use agentprocess_auth::Role;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::admin_pages::{base, with};
use crate::harness::{TestApp, on_both};
use crate::people_oauth::Browser;

const VENDOR_RECORDS: &str = "---
name: vendor-records
description: Documents collected, then the vendor written to the ERP.
steps:
  - id: collect_documents
    agent: Collect the vendor's tax form and bank letter.
  - id: write_erp
    agent: Write the vendor record in the ERP.
  - id: done
    finish: recorded
---
The collector never writes the ERP record.
";

/// The step ids `get_work` offers `token`.
async fn offered(app: &TestApp, token: &str) -> Vec<String> {
    let work = app.call(token, "get_work", json!({})).await;
    assert_eq!(work["ok"], true, "{work}");
    work["data"]["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["stepId"].as_str().expect("a step").to_owned())
        .collect()
}

async fn claim(app: &TestApp, token: &str, run: &str, step: &str, request: &str) -> Value {
    app.call(
        token,
        "claim",
        json!({ "requestId": request, "runId": run, "stepId": step }),
    )
    .await
}

/// The draft's agent steps as (step, agents, groups, boundBy).
fn steps_of(draft: &Value) -> Vec<(String, Value, Value, String)> {
    draft["agentSteps"]
        .as_array()
        .expect("agentSteps")
        .iter()
        .map(|step| {
            (
                step["step"].as_str().unwrap_or_default().to_owned(),
                step["agents"].clone(),
                step["groups"].clone(),
                step["boundBy"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

on_both!(
    agent_steps_bound_to_agents_are_offered_to_and_claimed_by_those_agents_alone,
    bound
);
async fn bound(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["staff"])
        .await
        .with_member("max", Role::Member, &["staff"])
        .await
        .with_agent("collector")
        .await
        .with_agent_in("writer", &["erp"])
        .await
        .with_agent("stranger")
        .await;
    let admin = app.api_token("ann", "admin").await;
    let (status, draft) = app
        .import(&admin, "vendor-records/PROCESS.md", VENDOR_RECORDS.as_bytes())
        .await;
    assert_eq!(status, StatusCode::CREATED, "{draft}");
    let unbound = |step: &str| (step.to_owned(), json!([]), json!([]), "none".to_owned());
    assert_eq!(steps_of(&draft), [unbound("collect_documents"), unbound("write_erp")]);
    assert_eq!(draft["allAgentSteps"], Value::Null);

    // Every wrong binding is refused at once, in words, and binds nothing.
    let wrong = json!({ "agents": ["nobody", "max"], "groups": ["staff", "missing"] });
    let (status, refused) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-records/draft/agent-steps/done",
            Some(wrong),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    let issues: Vec<&str> = refused["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        issues,
        [
            "step \"done\": not an agent step of vendor-records (its agent steps: collect_documents, write_erp; \
             or * for every one)",
            "agent \"nobody\": the organization has no such agent",
            "agent \"max\": is a person; only agents claim agent steps",
            "group \"staff\": has no active agents, so the steps bound to it would wait for none; \
             add agents first, or bind with force",
            "group \"missing\": the organization has no such group (it has: erp, staff)",
        ]
    );
    let (status, empty) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-records/draft/agent-steps/write_erp",
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{empty}");
    let (_, draft) = app
        .rest(&admin, Method::GET, "/processes/vendor-records/draft", None)
        .await;
    assert_eq!(draft["agentSteps"][1]["boundBy"], "none", "a refusal binds nothing");

    // Only an admin binds.
    let reader = app.api_token("max", "read").await;
    let (status, _) = app
        .rest(
            &reader,
            Method::PUT,
            "/processes/vendor-records/draft/agent-steps/write_erp",
            Some(json!({ "groups": ["erp"] })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Every agent step to the collector; the ERP step to the erp group's agents.
    let (status, _) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-records/draft/agent-steps/*",
            Some(json!({ "agents": ["collector"] })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, draft) = app
        .rest(
            &admin,
            Method::PUT,
            "/processes/vendor-records/draft/agent-steps/write_erp",
            Some(json!({ "groups": ["erp"] })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{draft}");
    assert_eq!(
        steps_of(&draft),
        [
            (
                "collect_documents".to_owned(),
                json!(["collector"]),
                json!([]),
                "all".to_owned()
            ),
            ("write_erp".to_owned(), json!([]), json!(["erp"]), "step".to_owned()),
        ]
    );
    assert_eq!(draft["allAgentSteps"], json!({ "agents": ["collector"], "groups": [] }));
    let (status, published) = app
        .rest(&admin, Method::POST, "/processes/vendor-records/publish", None)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{published}");
    let (_, version) = app
        .rest(&admin, Method::GET, "/processes/vendor-records/versions/1", None)
        .await;
    assert_eq!(
        version["agents"],
        json!({ "*": { "agents": ["collector"], "groups": [] }, "write_erp": { "agents": [], "groups": ["erp"] } })
    );

    // The run: each step offered to and claimed by its own agents alone.
    let (collector, writer, stranger) = (
        app.mcp_token("collector").await,
        app.mcp_token("writer").await,
        app.mcp_token("stranger").await,
    );
    let max = app.mcp_token("max").await;
    let started = app
        .call(
            &max,
            "start_run",
            json!({ "requestId": "s1", "process": "vendor-records", "inputs": {} }),
        )
        .await;
    assert_eq!(started["ok"], true, "{started}");
    let run = started["data"]["run"]["id"].as_str().expect("run").to_owned();
    assert_eq!(offered(&app, &collector).await, ["collect_documents"]);
    assert!(offered(&app, &writer).await.is_empty());
    assert!(offered(&app, &stranger).await.is_empty());
    // A row written without its binding, as by an older server during a rolling
    // update, still offers the step to its own agents alone.
    {
        use sqlx::Connection as _;
        let mut connection = sqlx::AnyConnection::connect(app.database_url()).await.expect("connect");
        sqlx::query("UPDATE work_index SET bound_to = NULL")
            .execute(&mut connection)
            .await
            .expect("unbound rows");
    }
    assert!(offered(&app, &stranger).await.is_empty(), "left out by its version");
    assert_eq!(offered(&app, &collector).await, ["collect_documents"]);
    let refused = claim(&app, &stranger, &run, "collect_documents", "c-stranger").await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    assert_eq!(
        refused["error"]["issues"],
        json!([
            "stepId: the organization binds collect_documents of vendor-records to the agent collector; \
             agent stranger is not among them"
        ])
    );
    assert_eq!(
        offered(&app, &collector).await,
        ["collect_documents"],
        "a refused claim changed nothing"
    );
    let claimed = claim(&app, &collector, &run, "collect_documents", "c-collector").await;
    assert_eq!(claimed["ok"], true, "{claimed}");
    let token = claimed["data"]["token"].as_str().expect("token").to_owned();
    let submission = json!({ "requestId": "sub-1", "token": token, "output": {}, "evidence": [],
                             "summary": "Collected the tax form and the bank letter." });
    let submitted = app.call(&collector, "submit", submission).await;
    assert_eq!(submitted["ok"], true, "{submitted}");
    assert!(offered(&app, &collector).await.is_empty());
    assert_eq!(offered(&app, &writer).await, ["write_erp"]);
    let refused = claim(&app, &collector, &run, "write_erp", "w-collector").await;
    assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    let claimed = claim(&app, &writer, &run, "write_erp", "w-writer").await;
    assert_eq!(claimed["ok"], true, "{claimed}");

    // A group an agent step is bound to stays.
    let (status, kept) = app.rest(&admin, Method::DELETE, "/groups/erp", None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{kept}");
    assert!(
        kept["issues"].as_array().expect("issues").contains(&json!(
            "vendor-records (version 1): agent step write_erp is bound to erp"
        )),
        "{kept}"
    );

    // Bindings are kept by the draft as roles are; removed, any agent may claim.
    let (status, draft) = app
        .rest(
            &admin,
            Method::DELETE,
            "/processes/vendor-records/draft/agent-steps/*",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{draft}");
    assert_eq!(draft["agentSteps"][0]["boundBy"], "none");
    assert_eq!(draft["agentSteps"][1]["boundBy"], "step");
    let (status, _) = app
        .rest(
            &admin,
            Method::DELETE,
            "/processes/vendor-records/draft/agent-steps/nope",
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, republished) = app
        .rest(&admin, Method::POST, "/processes/vendor-records/publish", None)
        .await;
    assert_eq!(
        (status, &republished["number"]),
        (StatusCode::CREATED, &json!(2)),
        "a changed binding is a new version: {republished}"
    );
    let audit = app
        .rest(&admin, Method::GET, "/audit?kind=process.agents_bound", None)
        .await;
    assert_eq!(audit.0, StatusCode::OK, "{}", audit.1);
    assert_eq!(audit.1["items"].as_array().map(Vec::len), Some(2), "{}", audit.1);
    app
}

on_both!(an_admin_binds_agent_steps_on_the_draft_page, bound_on_the_page);
async fn bound_on_the_page(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &["staff"])
        .await
        .with_agent("collector")
        .await
        .with_agent_in("writer", &["erp"])
        .await
        .with_dev_sign_in();
    let admin = app.api_token("ann", "admin").await;
    let (status, _) = app
        .import(&admin, "vendor-records/PROCESS.md", VENDOR_RECORDS.as_bytes())
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let mut ann = Browser::signed_in(&app, "ann").await;
    let back = "/admin/processes/vendor-records";
    let page = ann.get(&app, back).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("Agent steps"), "{}", page.text);
    assert!(
        page.text.contains("Any agent of the organization may claim it."),
        "{}",
        page.text
    );
    // Two boxes ticked under one name: both are bound.
    let ticked = [
        ("process", "vendor-records"),
        ("step", "write_erp"),
        ("agent", "writer"),
        ("group", "erp"),
    ];
    let bound = ann
        .post_pairs(&app, "/admin/do/bind-agents", &with(base(&page, back), &ticked))
        .await;
    assert_eq!(bound.location, back, "{}", bound.text);
    let (_, draft) = app
        .rest(&admin, Method::GET, "/processes/vendor-records/draft", None)
        .await;
    assert_eq!(
        steps_of(&draft)[1],
        (
            "write_erp".to_owned(),
            json!(["writer"]),
            json!(["erp"]),
            "step".to_owned()
        )
    );
    let page = ann.get(&app, back).await;
    assert!(
        page.text
            .contains("Only the agent writer, the agents of group erp may claim it."),
        "{}",
        page.text
    );
    // Nothing ticked is refused in words, and the binding stays.
    let nothing = [("process", "vendor-records"), ("step", "write_erp")];
    let refused = ann
        .post_pairs(&app, "/admin/do/bind-agents", &with(base(&page, back), &nothing))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(
        refused.text.contains("name at least one agent or group"),
        "{}",
        refused.text
    );
    let removed = ann
        .post_pairs(&app, "/admin/do/unbind-agents", &with(base(&page, back), &nothing))
        .await;
    assert_eq!(removed.location, back, "{}", removed.text);
    let (_, draft) = app
        .rest(&admin, Method::GET, "/processes/vendor-records/draft", None)
        .await;
    assert_eq!(draft["agentSteps"][1]["boundBy"], "none");
    app
}
