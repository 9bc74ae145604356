//! The admin pages, each drawn from what the REST surface answers, with its forms.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use super::{Admin, Answer, Caller, segment};
use crate::app::forms::sent;
use crate::app::layout::{page, problems};
use crate::session::csrf_token;

/// What the page says above its content.
pub(super) enum Notice {
    None,
    /// A change was refused: its status, message and every issue.
    Refused {
        status: StatusCode,
        message: String,
        issues: Vec<String>,
    },
}

/// The admin pages, by the part of the path after `/admin/`.
const PAGES: [(&str, &str); 6] = [
    ("people", "Members and groups"),
    ("agents", "Agents"),
    ("processes", "Processes"),
    ("webhooks", "Webhooks"),
    ("audit", "Audit log"),
    ("sign-in", "Sign-in"),
];

/// What every form of a page carries: the CSRF token, the page to come back to, and a
/// request id made when the page was drawn (the `Idempotency-Key` of a creating call).
struct Form<'a> {
    csrf: &'a str,
    back: &'a str,
}

impl Form<'_> {
    fn hidden(&self) -> Markup {
        html! {
            input type="hidden" name="csrf" value=(self.csrf);
            input type="hidden" name="back" value=(self.back);
            input type="hidden" name="requestId" value=(agentprocess_auth::secrets::new_id("web_"));
        }
    }

    /// A form for `action` of labelled text fields (id, name, label) and a button.
    fn fields(&self, action: &str, fields: &[(&str, &str, &str)], submit: &str) -> Markup {
        html! {
            form method="post" action=(format!("/admin/do/{action}")) {
                (self.hidden())
                @for (id, name, label) in fields { (field(id, name, label, "")) }
                button type="submit" { (submit) }
            }
        }
    }

    /// A one-button form for `action`, with `values` as hidden fields.
    fn button(&self, action: &str, label: &str, values: &[(&str, &str)]) -> Markup {
        html! {
            form method="post" action=(format!("/admin/do/{action}")) class="inline-form" {
                (self.hidden())
                @for (name, value) in values { input type="hidden" name=(name) value=(value); }
                button type="submit" { (label) }
            }
        }
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

fn items(value: &Value) -> &[Value] {
    value["items"].as_array().map_or(&[], Vec::as_slice)
}

/// A labelled text field.
fn field(id: &str, name: &str, label: &str, value: &str) -> Markup {
    html! {
        div class="field" {
            label for=(id) { (label) }
            input id=(id) name=(name) type="text" value=(value);
        }
    }
}

pub(super) async fn show(State(admin): State<Arc<Admin>>, caller: Caller) -> Response {
    render(&admin, &caller, "/admin", Notice::None).await
}

/// The audit log's filters: the names `GET /api/v1/audit` takes, with their labels.
const FILTERS: [(&str, &str); 5] = [
    ("since", "Since (RFC 3339)"),
    ("until", "Until (RFC 3339)"),
    ("actor", "Actor (identity id)"),
    ("kind", "Kind, such as run.decided"),
    ("target", "Target, such as a run id"),
];

pub(super) async fn show_page(
    State(admin): State<Arc<Admin>>,
    caller: Caller,
    Path(name): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if name == "audit" {
        return audit(&admin, &caller, &query).await;
    }
    render(&admin, &caller, &format!("/admin/{name}"), Notice::None).await
}

pub(super) async fn show_draft(State(admin): State<Arc<Admin>>, caller: Caller, Path(name): Path<String>) -> Response {
    render(
        &admin,
        &caller,
        &format!("/admin/processes/{}", segment(&name)),
        Notice::None,
    )
    .await
}

/// The admin page at `path`, with `notice` above it.
pub(super) async fn render(admin: &Admin, caller: &Caller, path: &str, notice: Notice) -> Response {
    let csrf = match csrf_token(&caller.session).await {
        Ok(token) => token,
        Err(error) => return axum::response::IntoResponse::into_response(error),
    };
    let form = Form {
        csrf: &csrf,
        back: path,
    };
    let name = path.strip_prefix("/admin").unwrap_or("").trim_start_matches('/');
    let drawn = match name {
        "" => home(admin, caller).await,
        "people" => people(admin, caller, &form).await,
        "agents" => agents(admin, caller, &form).await,
        "processes" => processes(admin, caller, &form).await,
        "webhooks" => webhooks(admin, caller, &form).await,
        "sign-in" => sign_in(admin, caller, &form).await,
        "audit" => return audit(admin, caller, &[]).await,
        other => match other.strip_prefix("processes/") {
            Some(process) => draft(admin, caller, &form, process).await,
            None => Err(Answer {
                status: StatusCode::NOT_FOUND,
                body: serde_json::json!({ "message": "there is no such admin page" }),
            }),
        },
    };
    let title = PAGES.iter().find(|(page, _)| *page == name).map_or_else(
        || {
            if name.is_empty() {
                "Administration".to_owned()
            } else {
                format!("Process {}", name.trim_start_matches("processes/"))
            }
        },
        |(_, title)| (*title).to_owned(),
    );
    let (status, content) = match drawn {
        Ok(content) => (StatusCode::OK, content),
        Err(answer) => {
            let (message, issues) = answer.refusal();
            (answer.status, problems(&message, &issues))
        }
    };
    let (status, top) = match notice {
        Notice::None => (status, html! {}),
        Notice::Refused {
            status,
            message,
            issues,
        } => (status, problems(&message, &issues)),
    };
    let body = html! {
        (menu(name))
        (top)
        (content)
    };
    page(status, &title, Some(&caller.visitor.who), body)
}

/// The admin pages' own navigation.
fn menu(current: &str) -> Markup {
    html! {
        nav aria-label="Administration" class="sub" {
            a href="/admin" aria-current=[current.is_empty().then_some("page")] { "Overview" }
            @for (page, title) in PAGES {
                a href=(format!("/admin/{page}")) aria-current=[(current == page).then_some("page")] { (title) }
            }
        }
    }
}

type Drawn = Result<Markup, Answer>;

async fn home(admin: &Admin, caller: &Caller) -> Drawn {
    let organization = admin.read(caller, "/organization").await?;
    let members = admin.read(caller, "/members").await?;
    let agents = admin.read(caller, "/agents").await?;
    let processes = admin.read(caller, "/processes").await?;
    Ok(html! {
        dl {
            dt { "Organization" } dd { (text(&organization["name"])) " (" code { (text(&organization["slug"])) } ")" }
            dt { "Sign-in" } dd { (organization["signIn"]["issuer"].as_str().unwrap_or("not set up")) }
            dt { "Members" } dd { (items(&members).len()) }
            dt { "Agents" } dd { (items(&agents).len()) }
            dt { "Published processes" } dd { (items(&processes).len()) }
        }
        @if !caller.is_admin() { p { "Only admins change what these pages show." } }
    })
}

async fn people(admin: &Admin, caller: &Caller, form: &Form<'_>) -> Drawn {
    let members = admin.read(caller, "/members").await?;
    let groups = admin.read(caller, "/groups").await?;
    let roles = ["member", "operator", "admin"];
    Ok(html! {
        h2 { "Members" }
        table {
            thead { tr { th scope="col" { "Person" } th scope="col" { "Role" } th scope="col" { "Groups" } th scope="col" { "Status" } } }
            tbody {
                @for member in items(&members) {
                    @let id = text(&member["id"]);
                    @let active = member["active"].as_bool() == Some(true);
                    tr {
                        td data-label="Person" { (text(&member["name"])) br; small { (member["email"].as_str().unwrap_or(id)) } }
                        td data-label="Role" {
                            form method="post" action="/admin/do/change-member" class="inline-form" {
                                (form.hidden())
                                input type="hidden" name="member" value=(id);
                                label for=(format!("role-{id}")) class="inline" { "Role of " (text(&member["name"])) }
                                select id=(format!("role-{id}")) name="role" {
                                    @for role in roles { option value=(role) selected[member["role"] == role] { (role) } }
                                }
                                button type="submit" { "Change" }
                            }
                        }
                        td data-label="Groups" { (member["groups"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")) }
                        td data-label="Status" {
                            @if active {
                                "active " (form.button("change-member", "Deactivate", &[("member", id), ("active", "false")]))
                            } @else {
                                "deactivated " (form.button("change-member", "Reactivate", &[("member", id), ("active", "true")]))
                            }
                        }
                    }
                }
            }
        }
        h2 { "Invite a person" }
        form method="post" action="/admin/do/invite" {
            (form.hidden())
            (field("invite-email", "email", "Email address (required)", ""))
            (field("invite-name", "name", "Name", ""))
            div class="field" {
                label for="invite-role" { "Role" }
                select id="invite-role" name="role" { @for role in roles { option value=(role) { (role) } } }
            }
            (field("invite-groups", "groups", "Groups (ids, comma-separated)", ""))
            button type="submit" { "Invite" }
        }
        h2 { "Groups" }
        @for group in items(&groups) {
            @let id = text(&group["id"]);
            section class="section" aria-label=(format!("Group {id}")) {
                h3 { code { (id) } @if let Some(name) = group["name"].as_str() { " " (name) } }
                ul {
                    @for member in group["members"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                        li { (member) " " (form.button("leave-group", &format!("Remove {member}"), &[("group", id), ("member", member)])) }
                    }
                }
                form method="post" action="/admin/do/set-claim-values" {
                    (form.hidden())
                    input type="hidden" name="group" value=(id);
                    (field(&format!("claims-{id}"), "values", &format!("Provider group values that mean {id} (comma-separated)"),
                        &group["claimValues"].as_array().into_iter().flatten().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")))
                    button type="submit" { "Save the values" }
                }
                form method="post" action="/admin/do/join-group" {
                    (form.hidden())
                    input type="hidden" name="group" value=(id);
                    div class="field" {
                        label for=(format!("join-{id}")) { "Add a member to " (id) }
                        select id=(format!("join-{id}")) name="member" {
                            @for member in items(&members) { option value=(text(&member["id"])) { (text(&member["name"])) } }
                        }
                    }
                    button type="submit" { "Add" }
                }
            }
        }
        h2 { "Create a group" }
        (form.fields(
            "create-group",
            &[("group-id", "group", "Id (required), such as finance"), ("group-name", "name", "Name")],
            "Create the group",
        ))
    })
}

async fn agents(admin: &Admin, caller: &Caller, form: &Form<'_>) -> Drawn {
    let agents = admin.read(caller, "/agents").await?;
    let mut credentials = Vec::new();
    for agent in items(&agents) {
        let id = segment(text(&agent["id"]));
        let tokens = admin.read(caller, &format!("/agents/{id}/tokens")).await?;
        let clients = admin.read(caller, &format!("/agents/{id}/clients")).await?;
        credentials.push((tokens, clients));
    }
    Ok(html! {
        @for (agent, (tokens, clients)) in items(&agents).iter().zip(&credentials) {
            @let id = text(&agent["id"]);
            @let enabled = agent["enabled"].as_bool() == Some(true);
            section class="section" aria-label=(format!("Agent {id}")) {
                h2 { code { (id) } " " (text(&agent["name"])) @if !enabled { " " span class="badge overdue" { "disabled" } } }
                (form.button("change-agent", if enabled { "Disable" } else { "Enable" }, &[("agent", id), ("enabled", if enabled { "false" } else { "true" })]))
                table {
                    thead { tr { th scope="col" { "Token" } th scope="col" { "Made" } th scope="col" { "Expires" } th scope="col" { "" } } }
                    tbody {
                        @for token in items(tokens) {
                            tr {
                                td data-label="Token" { code { (text(&token["id"])) } }
                                td data-label="Made" { (text(&token["createdAt"])) }
                                td data-label="Expires" { (token["expiresAt"].as_str().unwrap_or("never")) }
                                td {
                                    @if let Some(revoked) = token["revokedAt"].as_str() { "revoked " (revoked) }
                                    @else { (form.button("revoke-token", "Revoke", &[("agent", id), ("token", text(&token["id"]))])) }
                                }
                            }
                        }
                    }
                }
                form method="post" action="/admin/do/issue-token" {
                    (form.hidden())
                    input type="hidden" name="agent" value=(id);
                    div class="field" {
                        label for=(format!("days-{id}")) { "Days until the new token expires (empty: until revoked)" }
                        input id=(format!("days-{id}")) name="days" type="text" inputmode="numeric";
                    }
                    button type="submit" { "Issue a token for " (id) }
                }
                h3 { "OAuth clients (client_credentials)" }
                ul {
                    @for client in items(clients) {
                        @let client_id = text(&client["clientId"]);
                        li {
                            code { (client_id) } " " (client["name"].as_str().unwrap_or(""))
                            " · " (client["secrets"].as_array().map_or(0, Vec::len)) " live secrets · " (text(&client["authentication"]))
                            @if let Some(revoked) = client["revokedAt"].as_str() { " · revoked " (revoked) }
                            @else {
                                " " (form.button("add-client-secret", "Add a secret", &[("agent", id), ("client", client_id)]))
                                (form.button("revoke-client", "Revoke", &[("agent", id), ("client", client_id)]))
                            }
                        }
                    }
                }
                form method="post" action="/admin/do/create-client" {
                    (form.hidden())
                    input type="hidden" name="agent" value=(id);
                    (field(&format!("client-{id}"), "name", &format!("Name of a new OAuth client for {id}"), ""))
                    button type="submit" { "Make the client" }
                }
            }
        }
        h2 { "Add an agent" }
        (form.fields(
            "create-agent",
            &[("agent-id", "agent", "Id (required), such as invoice-bot"), ("agent-name", "name", "Name")],
            "Add the agent",
        ))
    })
}

async fn processes(admin: &Admin, caller: &Caller, form: &Form<'_>) -> Drawn {
    let published = admin.read(caller, "/processes").await?;
    Ok(html! {
        h2 { "Import a process" }
        p { "A PROCESS.md, or its folder as a tar, tar.gz or zip archive. Every issue is listed with its line and column; fix them all and import again." }
        form method="post" action="/admin/import" enctype="multipart/form-data" {
            input type="hidden" name="csrf" value=(form.csrf);
            div class="field" {
                label for="import-file" { "File" }
                input id="import-file" name="file" type="file" accept=".md,.tar,.gz,.tgz,.zip";
            }
            button type="submit" { "Import" }
        }
        h2 { "Published" }
        @if items(&published).is_empty() { p { "Nothing is published yet." } }
        ul {
            @for version in items(&published) {
                @let name = text(&version["process"]);
                li {
                    a href=(format!("/processes/{}", segment(name))) { (name) } " v" (version["number"])
                    " · " a href=(format!("/admin/processes/{}", segment(name))) { "draft and roles" }
                }
            }
        }
    })
}

async fn draft(admin: &Admin, caller: &Caller, form: &Form<'_>, name: &str) -> Drawn {
    let process = url::form_urlencoded::parse(format!("p={name}").as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    let draft = admin
        .read(caller, &format!("/processes/{}/draft", segment(&process)))
        .await?;
    let groups = admin.read(caller, "/groups").await?;
    let systems: Vec<&str> = draft["requiresSystems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Ok(html! {
        @if !systems.is_empty() { p { "Needs: " @for system in &systems { span class="system" { (system) } " " } } }
        h2 { "Roles" }
        @let roles = draft["roles"].as_array().map_or(&[][..], Vec::as_slice);
        @if roles.is_empty() { p { "No step names a role." } }
        @for role in roles {
            @let role_name = text(&role["role"]);
            form method="post" action="/admin/do/bind-role" {
                (form.hidden())
                input type="hidden" name="process" value=(process);
                input type="hidden" name="role" value=(role_name);
                div class="field" {
                    label for=(format!("bind-{role_name}")) { "Group for the role " code { (role_name) } }
                    select id=(format!("bind-{role_name}")) name="group" {
                        @if role["group"].is_null() { option value="" { "(choose)" } }
                        @for group in items(&groups) {
                            @let id = text(&group["id"]);
                            option value=(id) selected[role["group"] == id] { (id) }
                        }
                    }
                }
                button type="submit" { "Bind" }
            }
        }
        h2 { "Publish" }
        @if draft["publishable"].as_bool() == Some(true) {
            (form.button("publish", &format!("Publish {process}"), &[("process", &process)]))
        } @else {
            p { "Bind every role to a group first." }
        }
    })
}

async fn webhooks(admin: &Admin, caller: &Caller, form: &Form<'_>) -> Drawn {
    let hooks = admin.read(caller, "/webhooks").await?;
    let deliveries = admin.read(caller, "/webhooks/deliveries?limit=50").await?;
    Ok(html! {
        h2 { "Endpoints" }
        ul {
            @for hook in items(&hooks) {
                li { code { (text(&hook["url"])) } " (" (text(&hook["id"])) ") "
                     (form.button("remove-webhook", "Remove", &[("webhook", text(&hook["id"]))])) }
            }
        }
        (form.fields("add-webhook", &[("webhook-url", "url", "URL deliveries are posted to (https)")], "Add the endpoint"))
        h2 { "Recent deliveries" }
        table {
            thead { tr { th scope="col" { "Event" } th scope="col" { "Run" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "" } } }
            tbody {
                @for delivery in items(&deliveries) {
                    tr {
                        td data-label="Event" { (text(&delivery["event"])) br; small { (text(&delivery["updatedAt"])) } }
                        td data-label="Run" { a href=(format!("/runs/{}", text(&delivery["runId"]))) { (text(&delivery["runId"])) } }
                        td data-label="Status" { (text(&delivery["status"]))
                            @if let Some(code) = delivery["lastStatusCode"].as_u64() { " (HTTP " (code) ")" }
                            @if let Some(error) = delivery["lastError"].as_str() { br; small { (error) } } }
                        td data-label="Attempts" { (delivery["attempts"]) }
                        td { (form.button("redeliver", "Send again", &[("webhook", text(&delivery["webhook"])), ("notification", text(&delivery["notification"]))])) }
                    }
                }
            }
        }
    })
}

async fn sign_in(admin: &Admin, caller: &Caller, form: &Form<'_>) -> Drawn {
    let organization = admin.read(caller, "/organization").await?;
    let provider = &organization["signIn"];
    Ok(html! {
        h2 { "Identity provider" }
        @if let Some(uri) = provider["redirectUri"].as_str() { p { "Register this redirect URI at the provider: " code { (uri) } } }
        form method="post" action="/admin/do/set-sign-in" {
            (form.hidden())
            (field("issuer", "issuer", "Issuer URL (required)", text(&provider["issuer"])))
            (field("client-id", "clientId", "Client id (required)", text(&provider["clientId"])))
            div class="field" {
                label for="client-secret" { "Client secret" @if provider["hasClientSecret"].as_bool() == Some(true) { " (one is set; leave empty to keep it)" } }
                input id="client-secret" name="clientSecret" type="password" autocomplete="off";
            }
            button type="submit" { "Save the provider" }
        }
        h2 { "Organization" }
        form method="post" action="/admin/do/change-organization" {
            (form.hidden())
            (field("org-name", "name", "Name", text(&organization["name"])))
            (field("groups-claim", "groupsClaim", "The ID token's claim that lists a person's groups", text(&organization["groupsClaim"])))
            input type="hidden" name="autoProvision" value="false";
            div {
                input id="auto-provision" type="checkbox" name="autoProvision" value="true" checked[organization["autoProvision"].as_bool() == Some(true)];
                label for="auto-provision" class="inline" { "People of a verified domain become members when they first sign in" }
            }
            button type="submit" { "Save" }
        }
        h2 { "Email domains" }
        table {
            thead { tr { th scope="col" { "Domain" } th scope="col" { "TXT record that proves it" } th scope="col" { "" } } }
            tbody {
                @for domain in organization["domains"].as_array().into_iter().flatten() {
                    @let name = text(&domain["domain"]);
                    tr {
                        td data-label="Domain" { (name) @if domain["verified"].as_bool() == Some(true) { " " span class="badge test" { "verified" } } }
                        td data-label="TXT record" { code { (text(&domain["txtRecord"]["name"])) } " " code { (text(&domain["txtRecord"]["value"])) } }
                        td {
                            @if domain["verified"].as_bool() != Some(true) { (form.button("verify-domain", &format!("Verify {name}"), &[("domain", name)])) }
                            (form.button("remove-domain", &format!("Remove {name}"), &[("domain", name)]))
                        }
                    }
                }
            }
        }
        (form.fields("add-domain", &[("domain", "domain", "Domain, such as acme.com")], "Add the domain"))
    })
}

/// The audit log, filtered, a page at a time.
async fn audit(admin: &Admin, caller: &Caller, query: &[(String, String)]) -> Response {
    // Built in a block: the serializer is not `Send`, so it must not live across an await.
    let filter = {
        let mut filter = url::form_urlencoded::Serializer::new(String::new());
        for (name, _) in FILTERS {
            if let Some(value) = sent(query, name) {
                filter.append_pair(name, value);
            }
        }
        filter.finish()
    };
    let cursor = sent(query, "cursor")
        .map(|cursor| format!("&cursor={}", segment(cursor)))
        .unwrap_or_default();
    let answer = admin.read(caller, &format!("/audit?limit=100&{filter}{cursor}")).await;
    let body = html! {
        (menu("audit"))
        form method="get" action="/admin/audit" {
            @for (name, label) in FILTERS { (field(name, name, label, sent(query, name).unwrap_or(""))) }
            button type="submit" { "Filter" }
        }
        @match &answer {
            Err(answer) => { @let (message, issues) = answer.refusal(); (problems(&message, &issues)) }
            Ok(entries) => {
                table {
                    thead { tr { th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "What" } th scope="col" { "About" } th scope="col" { "Detail" } } }
                    tbody {
                        @for entry in items(entries) {
                            tr {
                                td data-label="When" { (text(&entry["at"])) }
                                td data-label="Who" { (text(&entry["actor"])) @if let Some(address) = entry["address"].as_str() { br; small { (address) } } }
                                td data-label="What" { code { (text(&entry["kind"])) } }
                                td data-label="About" { (entry["target"].as_str().unwrap_or("")) }
                                td data-label="Detail" { code { (entry["detail"].to_string()) } }
                            }
                        }
                    }
                }
                @if let Some(next) = entries["nextCursor"].as_str() {
                    p { a href=(format!("/admin/audit?{filter}&cursor={}", segment(next))) { "More entries" } }
                }
            }
        }
    };
    let status = answer.as_ref().map_or_else(|answer| answer.status, |_| StatusCode::OK);
    page(status, "Audit log", Some(&caller.visitor.who), body)
}
