//! The admin pages, over HTTP with a browser's session: an admin invites a member,
//! makes a group and puts them in it, adds an agent and issues its token (shown once),
//! imports a process with mistakes and sees each with its line and column, imports it
//! fixed, binds its role and publishes it, adds a webhook, reads the audit log by
//! target; a member is refused every change, and nothing changes for them.

use agentprocess_auth::Role;
use axum::http::StatusCode;
use serde_json::json;

use crate::harness::{TestApp, on_both};
use crate::people_oauth::{Browser, Page, csrf_of};

const FIXED: &str = "---
name: admin-sign-off
description: A manager signs off. Start it when something needs a signature.
steps:
  - id: sign
    person: manager
    approve: Sign it off.
  - id: done
    finish: signed
---
A manager signs it off.
";

/// The form fields every admin form carries, from the page it is on.
pub(crate) fn base(page: &Page, back: &str) -> Vec<(String, String)> {
    vec![
        ("csrf".to_owned(), csrf_of(&page.text)),
        ("back".to_owned(), back.to_owned()),
        ("requestId".to_owned(), format!("web_{}", rand_suffix(&page.text))),
    ]
}

/// A request id unique enough for one test: the page's length and a counter.
fn rand_suffix(page: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{}-{}", page.len(), NEXT.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn with(mut fields: Vec<(String, String)>, more: &[(&str, &str)]) -> Vec<(String, String)> {
    fields.extend(more.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())));
    fields
}

on_both!(an_admin_runs_the_organization_from_the_admin_pages, administers);
async fn administers(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_member("max", Role::Member, &[])
        .await
        .with_dev_sign_in();
    let mut ann = Browser::signed_in(&app, "ann").await;
    let home = ann.get(&app, "/admin").await;
    assert_eq!(home.status, StatusCode::OK, "{}", home.text);
    assert!(home.text.contains("Published processes"), "{}", home.text);

    // Invite a member; make a group; put them in it.
    let people = ann.get(&app, "/admin/people").await;
    let invited = ann
        .post_pairs(
            &app,
            "/admin/do/invite",
            &with(
                base(&people, "/admin/people"),
                &[("email", "lee@acme.test"), ("name", "Lee"), ("role", "operator")],
            ),
        )
        .await;
    assert_eq!(
        (invited.status, invited.location.as_str()),
        (StatusCode::SEE_OTHER, "/admin/people"),
        "{}",
        invited.text
    );
    // A refusal is drawn on the page with every issue, and nothing changes.
    let people = ann.get(&app, "/admin/people").await;
    let refused = ann
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&people, "/admin/people"), &[("group", "Not An Id!")]),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(
        refused.text.contains("class=\"problems\"") && refused.text.contains("<li>"),
        "{}",
        refused.text
    );
    // No field may hold a NUL character: refused in the words of `/api/v1`.
    let nul = ann
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&people, "/admin/people"), &[("group", "nul\0group")]),
        )
        .await;
    assert_eq!(nul.status, StatusCode::BAD_REQUEST, "{}", nul.text);
    assert!(nul.text.contains("NUL character"), "{}", nul.text);
    let created = ann
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&people, "/admin/people"), &[("group", "managers")]),
        )
        .await;
    assert_eq!(created.location, "/admin/people", "{}", created.text);
    let people = ann.get(&app, "/admin/people").await;
    assert!(
        people.text.contains("Lee") && people.text.contains("<code>managers</code>"),
        "{}",
        people.text
    );
    let lee = people
        .text
        .split("name=\"member\" value=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').expect("end")])
        .find(|id| people.text.contains(&format!("role-{id}")) && *id != "ann" && *id != "max")
        .expect("Lee's id")
        .to_owned();
    let joined = ann
        .post_pairs(
            &app,
            "/admin/do/join-group",
            &with(
                base(&people, "/admin/people"),
                &[("group", "managers"), ("member", &lee)],
            ),
        )
        .await;
    assert_eq!(joined.location, "/admin/people", "{}", joined.text);

    // An agent and its token, shown this once and kept by no cache.
    let agents = ann.get(&app, "/admin/agents").await;
    ann.post_pairs(
        &app,
        "/admin/do/create-agent",
        &with(base(&agents, "/admin/agents"), &[("agent", "signer")]),
    )
    .await;
    let agents = ann.get(&app, "/admin/agents").await;
    let issued = ann
        .post_pairs(
            &app,
            "/admin/do/issue-token",
            &with(base(&agents, "/admin/agents"), &[("agent", "signer"), ("days", "30")]),
        )
        .await;
    assert_eq!(issued.status, StatusCode::CREATED, "{}", issued.text);
    assert_eq!(issued.headers["cache-control"], "no-store");
    let token = issued
        .text
        .split("<code class=\"secret\">")
        .nth(1)
        .expect("the token")
        .split('<')
        .next()
        .expect("end")
        .to_owned();
    let described = app.call(&token, "describe", json!({})).await;
    assert!(described["data"].is_object(), "the token works: {described}");

    // An OAuth client for the agent: its id and secret shown once, and they work.
    let agents = ann.get(&app, "/admin/agents").await;
    let made = ann
        .post_pairs(
            &app,
            "/admin/do/create-client",
            &with(
                base(&agents, "/admin/agents"),
                &[("agent", "signer"), ("name", "the signer")],
            ),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    let shown: Vec<String> = made
        .text
        .split("<code class=\"secret\">")
        .skip(1)
        .map(|rest| rest.split('<').next().expect("end").to_owned())
        .collect();
    assert_eq!(shown.len(), 3, "client id, secret, token endpoint: {}", made.text);
    assert!(ann.get(&app, "/admin/agents").await.text.contains(&shown[0]));
    // The provider's group values that mean a group.
    let people = ann.get(&app, "/admin/people").await;
    let set = ann
        .post_pairs(
            &app,
            "/admin/do/set-claim-values",
            &with(
                base(&people, "/admin/people"),
                &[("group", "managers"), ("values", "Managers, mgmt")],
            ),
        )
        .await;
    assert_eq!(set.location, "/admin/people", "{}", set.text);
    assert!(
        ann.get(&app, "/admin/people")
            .await
            .text
            .contains("value=\"Managers, mgmt\"")
    );

    // Import with mistakes: every issue, each with its line and column.
    let broken = FIXED.replace("approve: Sign it off.", "approve: Sign it off.\n    on_reject: nowhere");
    let processes = ann.get(&app, "/admin/processes").await;
    let csrf = csrf_of(&processes.text);
    let refused = ann
        .post_multipart(
            &app,
            "/admin/import",
            &[("csrf".to_owned(), csrf.clone())],
            &[("file", "PROCESS.md", "text/markdown", broken.as_bytes())],
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(
        refused.text.contains("8:5: steps[0] (sign).on_reject"),
        "line and column: {}",
        refused.text
    );
    let imported = ann
        .post_multipart(
            &app,
            "/admin/import",
            &[("csrf".to_owned(), csrf)],
            &[("file", "PROCESS.md", "text/markdown", FIXED.as_bytes())],
        )
        .await;
    assert_eq!(
        imported.location, "/admin/processes/admin-sign-off",
        "{}",
        imported.text
    );
    let draft = ann.get(&app, &imported.location).await;
    assert!(
        draft.text.contains("Bind every role to a group first."),
        "{}",
        draft.text
    );
    let back = "/admin/processes/admin-sign-off";
    // A group without members is bound only when the form says it may wait, and the
    // draft says so.
    let people = ann.get(&app, "/admin/people").await;
    let made = ann
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&people, "/admin/people"), &[("group", "temps")]),
        )
        .await;
    assert_eq!(made.location, "/admin/people", "{}", made.text);
    let to_temps = [("process", "admin-sign-off"), ("role", "manager"), ("group", "temps")];
    let refused = ann
        .post_pairs(&app, "/admin/do/bind-role", &with(base(&draft, back), &to_temps))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.text.contains("add members first"), "{}", refused.text);
    assert!(refused.text.contains("name=\"force\""), "{}", refused.text);
    let forced = ann
        .post_pairs(
            &app,
            "/admin/do/bind-role",
            &with(
                base(&draft, back),
                &[to_temps.as_slice(), &[("force", "true")]].concat(),
            ),
        )
        .await;
    assert_eq!(forced.location, back, "{}", forced.text);
    let draft = ann.get(&app, back).await;
    assert!(
        draft
            .text
            .contains("has no members: the work of this role waits until it has."),
        "{}",
        draft.text
    );
    let bound = ann
        .post_pairs(
            &app,
            "/admin/do/bind-role",
            &with(
                base(&draft, back),
                &[
                    ("process", "admin-sign-off"),
                    ("role", "manager"),
                    ("group", "managers"),
                ],
            ),
        )
        .await;
    assert_eq!(bound.location, back, "{}", bound.text);
    let draft = ann.get(&app, back).await;
    let published = ann
        .post_pairs(
            &app,
            "/admin/do/publish",
            &with(base(&draft, back), &[("process", "admin-sign-off")]),
        )
        .await;
    assert_eq!(published.location, back, "{}", published.text);
    let started = app
        .call(
            &token,
            "start_run",
            json!({ "requestId": "a1", "process": "admin-sign-off", "inputs": {} }),
        )
        .await;
    let run = started["data"]["run"]["id"]
        .as_str()
        .expect("published and running")
        .to_owned();

    // A webhook's signing secret is shown once; the audit log is read by target.
    let hooks = ann.get(&app, "/admin/webhooks").await;
    let added = ann
        .post_pairs(
            &app,
            "/admin/do/add-webhook",
            &with(
                base(&hooks, "/admin/webhooks"),
                &[("url", "https://hooks.acme.test/in")],
            ),
        )
        .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text);
    assert!(added.text.contains("<code class=\"secret\">"), "{}", added.text);
    let log = ann.get(&app, "/admin/audit?kind=process.published").await;
    assert!(
        log.text.contains("process.published") && !log.text.contains("member.invited"),
        "{}",
        log.text
    );
    let about_run = ann.get(&app, &format!("/admin/audit?target={run}")).await;
    assert!(!about_run.text.contains("process.published"), "{}", about_run.text);
    let bad = ann.get(&app, "/admin/audit?since=yesterday").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    assert!(bad.text.contains("since"), "{}", bad.text);

    // A member sees the pages refuse, and changes nothing.
    let mut max = Browser::signed_in(&app, "max").await;
    let page = max.get(&app, "/admin/people").await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "{}", page.text);
    // The refusal has no forms; the session's token is on any page that has one.
    let page = max.get(&app, "/dev/sign-in").await;
    let tried = max
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&page, "/admin/people"), &[("group", "mine")]),
        )
        .await;
    assert_eq!(tried.status, StatusCode::FORBIDDEN, "{}", tried.text);
    // The role is refused before anything sent is read: a member learns nothing of
    // what the change takes, on the pages as over REST.
    let tried = max
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &with(base(&page, "/admin/people"), &[("group", "Not An Id!")]),
        )
        .await;
    assert_eq!(tried.status, StatusCode::FORBIDDEN, "{}", tried.text);
    let member = app.api_token("max", "read").await;
    let (status, body) = app
        .rest(&member, axum::http::Method::POST, "/groups", Some(json!({ "id": 7 })))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let admin = app.api_token("ann", "admin").await;
    let (_, groups) = app.rest(&admin, axum::http::Method::GET, "/groups", None).await;
    assert!(!groups.to_string().contains("\"mine\""), "{groups}");
    // Without the session's CSRF token, nothing is done.
    let forged = ann
        .post_pairs(
            &app,
            "/admin/do/create-group",
            &[("group".to_owned(), "forged".to_owned())],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    app
}

on_both!(a_ticked_checkbox_wins_over_the_hidden_false_before_it, checkboxes);
async fn checkboxes(app: TestApp) -> TestApp {
    let app = app
        .with_org("acme")
        .await
        .with_member("ann", Role::Admin, &[])
        .await
        .with_dev_sign_in();
    let mut ann = Browser::signed_in(&app, "ann").await;
    let ticked = r#"name="autoProvision" value="true" checked"#;
    for (sent, expected) in [(&["false", "true"][..], true), (&["false"][..], false)] {
        let page = ann.get(&app, "/admin/sign-in").await;
        let mut fields = with(base(&page, "/admin/sign-in"), &[("name", "Acme")]);
        fields.extend(
            sent.iter()
                .map(|value| ("autoProvision".to_owned(), (*value).to_owned())),
        );
        let changed = ann.post_pairs(&app, "/admin/do/change-organization", &fields).await;
        assert_eq!(changed.status, StatusCode::SEE_OTHER, "{}", changed.text);
        let page = ann.get(&app, "/admin/sign-in").await;
        assert_eq!(page.text.contains(ticked), expected, "{sent:?}: {}", page.text);
    }
    let admin = app.api_token("ann", "admin").await;
    let page = ann.get(&app, "/admin/policies").await;
    let fields = with(base(&page, "/admin/policies"), &[("fourEyes", "true")]);
    let saved = ann.post_pairs(&app, "/admin/do/set-policies", &fields).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.text);
    let (_, policies) = app
        .rest(&admin, axum::http::Method::GET, "/organization/policies", None)
        .await;
    assert_eq!(policies, json!({ "initiatorDoesNotDecide": false, "fourEyes": true }));
    app
}
