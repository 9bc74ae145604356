//! The admin pages, each drawn from what the organization's operations answer, with
//! its forms.

use std::sync::Arc;

use agentprocess_auth::Role;
use agentprocess_engine::{Claimants, EVERY_AGENT_STEP};
use agentprocess_operations::audit::AuditQuery;
use agentprocess_service::ChatKind;
use agentprocess_service::admin::Draft;
use agentprocess_store::{Group, Identity};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use super::{Caller, refuse_nul};
use crate::app::facts::{label, value_of};
use crate::app::forms::sent;
use crate::app::layout::page;
use crate::app::message_choices;
use crate::app::refusals;
use crate::app::time::{at_millis, day_start};
use crate::errors::ApiError;
use crate::session::{Web, csrf_token};

/// The admin pages, by the part of the path after `/admin/`.
const PAGES: [(&str, &str); 8] = [
    ("people", "Members and groups"),
    ("agents", "Agents"),
    ("processes", "Processes"),
    ("messages", "Messages to people"),
    ("policies", "Who decides"),
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

/// A path segment made from what a form sent, so no value can leave its segment.
pub(super) fn segment(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
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

pub(super) async fn show(State(web): State<Arc<Web>>, caller: Caller) -> Response {
    render(&web, &caller, "/admin", None).await
}

/// The audit log's filters: the names an audit query takes, with their labels and
/// the kind of field.
const FILTERS: [(&str, &str, &str); 5] = [
    ("since", "From day", "date"),
    ("until", "Until day (included)", "date"),
    ("actor", "Actor (identity id)", "text"),
    ("kind", "Kind, such as run.decided", "text"),
    ("target", "Target, such as a run id", "text"),
];

pub(super) async fn show_page(
    State(web): State<Arc<Web>>,
    caller: Caller,
    Path(name): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if name == "audit" {
        return audit(&web, &caller, &query).await;
    }
    render(&web, &caller, &format!("/admin/{name}"), None).await
}

pub(super) async fn show_draft(State(web): State<Arc<Web>>, caller: Caller, Path(name): Path<String>) -> Response {
    render(&web, &caller, &format!("/admin/processes/{}", segment(&name)), None).await
}

/// The admin page at `path`, with a refused change's `notice` above it.
pub(super) async fn render(web: &Web, caller: &Caller, path: &str, notice: Option<ApiError>) -> Response {
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
        "" => home(web, caller).await,
        "people" => people(web, caller, &form).await,
        "agents" => agents(web, caller, &form).await,
        "processes" => processes(web, caller, &form).await,
        "webhooks" => webhooks(web, caller, &form).await,
        "messages" => messages(web, caller, &form).await,
        "policies" => policies(web, caller, &form).await,
        "sign-in" => sign_in(web, caller, &form).await,
        "audit" => return audit(web, caller, &[]).await,
        other => match other.strip_prefix("processes/") {
            Some(process) => match refuse_nul([process]) {
                Ok(()) => draft(web, caller, &form, process).await,
                Err(refusal) => Err(refusal),
            },
            None => Err(ApiError::not_found("there is no such admin page")),
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
        Err(refusal) => (refusal.status(), refusals::shown(refusal.tool_error())),
    };
    let (status, top) = match notice {
        None => (status, html! {}),
        Some(refusal) => (refusal.status(), refusals::shown(refusal.tool_error())),
    };
    let body = html! {
        (menu(name))
        (top)
        (content)
    };
    page(status, &title, Some(&caller.visitor), body)
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

type Drawn = Result<Markup, ApiError>;

async fn home(web: &Web, caller: &Caller) -> Drawn {
    let operations = &web.operations;
    let state = operations.organization(&caller.acting).await?;
    let members = operations.members(&caller.acting).await?;
    let agents = operations.agents(&caller.acting).await?;
    let processes = operations.latest_versions(&caller.acting).await?;
    let issuer = state.provider.as_ref().map(|provider| provider.issuer.as_str());
    Ok(html! {
        dl {
            dt { "Organization" } dd { (state.organization.name) " (" code { (state.organization.slug) } ")" }
            dt { "Sign-in" } dd { (issuer.unwrap_or("not set up")) }
            dt { "Members" } dd { (members.len()) }
            dt { "Agents" } dd { (agents.len()) }
            dt { "Published processes" } dd { (processes.len()) }
        }
        @if !caller.is_admin() { p { "Only admins change what these pages show." } }
    })
}

async fn people(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let members = web.operations.members(&caller.acting).await?;
    let groups = web.operations.groups(&caller.acting).await?;
    let roles = ["member", "operator", "admin"];
    Ok(html! {
        h2 { "Members" }
        table {
            thead { tr { th scope="col" { "Person" } th scope="col" { "Role" } th scope="col" { "Groups" } th scope="col" { "Status" } } }
            tbody {
                @for member in &members {
                    @let id = member.id.as_str();
                    @let active = member.deactivated_at.is_none();
                    tr {
                        td data-label="Person" { (member.name) br; small { (member.person.as_deref().unwrap_or(id)) } }
                        td data-label="Role" {
                            form method="post" action="/admin/do/change-member" class="inline-form" {
                                (form.hidden())
                                input type="hidden" name="member" value=(id);
                                label for=(format!("role-{id}")) class="visually-hidden" { "Role of " (member.name) }
                                select id=(format!("role-{id}")) name="role" {
                                    @for role in roles { option value=(role) selected[member.role.map(Role::as_str) == Some(role)] { (role) } }
                                }
                                button type="submit" { "Change" }
                            }
                        }
                        td data-label="Groups" { (member.groups.join(", ")) }
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
        @for group in &groups {
            @let id = group.id.as_str();
            section class="section" aria-label=(format!("Group {id}")) {
                h3 { code { (id) } @if let Some(name) = &group.name { " " (name) } }
                ul {
                    @for member in &group.members {
                        li { (member) " " (form.button("leave-group", &format!("Remove {member}"), &[("group", id), ("member", member)])) }
                    }
                }
                form method="post" action="/admin/do/set-claim-values" {
                    (form.hidden())
                    input type="hidden" name="group" value=(id);
                    (field(&format!("claims-{id}"), "values", &format!("Provider group values that mean {id} (comma-separated)"),
                        &group.claim_values.join(", ")))
                    button type="submit" { "Save the values" }
                }
                form method="post" action="/admin/do/join-group" {
                    (form.hidden())
                    input type="hidden" name="group" value=(id);
                    div class="field" {
                        label for=(format!("join-{id}")) { "Add a member to " (id) }
                        select id=(format!("join-{id}")) name="member" {
                            @for member in &members { option value=(member.id) { (member.name) } }
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

async fn agents(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let operations = &web.operations;
    let agents = operations.agents(&caller.acting).await?;
    let mut credentials = Vec::new();
    for agent in &agents {
        let tokens = operations.agent_tokens(&caller.acting, &agent.id).await?;
        let clients = operations.agent_clients(&caller.acting, &agent.id).await?;
        credentials.push((tokens, clients));
    }
    Ok(html! {
        @for (agent, (tokens, clients)) in agents.iter().zip(&credentials) {
            @let id = agent.id.as_str();
            @let enabled = agent.deactivated_at.is_none();
            section class="section" aria-label=(format!("Agent {id}")) {
                h2 { code { (id) } " " (agent.name) @if !enabled { " " span class="badge overdue" { "disabled" } } }
                (form.button("change-agent", if enabled { "Disable" } else { "Enable" }, &[("agent", id), ("enabled", if enabled { "false" } else { "true" })]))
                table {
                    thead { tr { th scope="col" { "Token" } th scope="col" { "Made" } th scope="col" { "Expires" } th scope="col" { "" } } }
                    tbody {
                        @for token in tokens {
                            tr {
                                td data-label="Token" { code { (token.id) } }
                                td data-label="Made" { (at_millis(&caller.visitor.zone, token.created_at)) }
                                td data-label="Expires" { @match token.expires_at { Some(expires) => (at_millis(&caller.visitor.zone, expires)), None => "never" } }
                                td {
                                    @if let Some(revoked) = token.revoked_at { "revoked " (at_millis(&caller.visitor.zone, revoked)) }
                                    @else { (form.button("revoke-token", "Revoke", &[("agent", id), ("token", &token.id)])) }
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
                    @for (client, secrets) in clients {
                        @let client_id = client.id.as_str();
                        li {
                            code { (client_id) } " " (client.name.as_deref().unwrap_or(""))
                            " · " (secrets.len()) " live secrets · " (if client.jwks.is_some() { "private_key_jwt" } else { "client_secret" })
                            @if let Some(revoked) = client.revoked_at { " · revoked " (at_millis(&caller.visitor.zone, revoked)) }
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

async fn processes(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let published = web.operations.latest_versions(&caller.acting).await?;
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
        @if published.is_empty() { p { "Nothing is published yet." } }
        ul {
            @for version in &published {
                @let name = version.process.as_str();
                li {
                    a href=(format!("/processes/{}", segment(name))) { (name) } " v" (version.number)
                    " · " a href=(format!("/admin/processes/{}", segment(name))) { "draft and roles" }
                }
            }
        }
    })
}

async fn draft(web: &Web, caller: &Caller, form: &Form<'_>, name: &str) -> Drawn {
    let process = url::form_urlencoded::parse(format!("p={name}").as_bytes())
        .next()
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default();
    let draft = web.operations.draft(&caller.acting, &process).await?;
    let groups = web.operations.groups(&caller.acting).await?;
    let agents = web.operations.agents(&caller.acting).await?;
    let publishable = draft.roles.iter().all(|role| draft.bindings.contains_key(role));
    // Groups filled from the provider's claim are bound while empty; groups kept by
    // hand need members, or a binding that says it may wait.
    let claim = web.auth.organization(caller.acting.org()).await?.groups_claim;
    let empty = |id: &str| groups.iter().any(|group| group.id == id && group.members.is_empty());
    let new_runs = new_runs(web, caller, form, &process).await?;
    Ok(html! {
        @if !draft.systems.is_empty() { p { "Needs: " @for system in &draft.systems { span class="system" { (system) } " " } } }
        h2 { "Roles" }
        @if draft.roles.is_empty() { p { "No step names a role." } }
        @for role_name in &draft.roles {
            @let bound = draft.bindings.get(role_name);
            form method="post" action="/admin/do/bind-role" {
                (form.hidden())
                input type="hidden" name="process" value=(process);
                input type="hidden" name="role" value=(role_name);
                div class="field" {
                    label for=(format!("bind-{role_name}")) { "Group for the role " code { (role_name) } }
                    select id=(format!("bind-{role_name}")) name="group" {
                        @if bound.is_none() { option value="" { "(choose)" } }
                        @for group in &groups {
                            option value=(group.id) selected[bound == Some(&group.id)] { (group.id) }
                        }
                    }
                }
                @if claim.is_none() {
                    div {
                        input id=(format!("force-{role_name}")) type="checkbox" name="force" value="true";
                        label class="inline" for=(format!("force-{role_name}")) { "Bind even if the group has no members yet" }
                    }
                }
                button type="submit" { "Bind" }
                @if let Some(group) = bound.filter(|group| empty(group)) {
                    p class="quiet" {
                        @match &claim {
                            Some(claim) => { "The group " code { (group) } " has no members yet: the identity provider's “" (claim) "” claim fills it as its people sign in." }
                            None => { "The group " code { (group) } " has no members: the work of this role waits until it has." }
                        }
                    }
                }
            }
        }
        (agent_steps(form, &process, &draft, &agents, &groups))
        h2 { "Publish" }
        @if publishable {
            (form.button("publish", &format!("Publish {process}"), &[("process", &process)]))
        } @else {
            p { "Bind every role to a group first." }
        }
        (new_runs)
    })
}

/// Which published versions new runs start on, and the forms that keep an older one
/// open or close it again.
async fn new_runs(web: &Web, caller: &Caller, form: &Form<'_>, process: &str) -> Drawn {
    let versions = web.service.admin().versions(caller.acting.org(), process).await?;
    if versions.is_empty() {
        return Ok(html! {});
    }
    let openings = web.operations.openings(&caller.acting, process).await?;
    let zone = &caller.visitor.zone;
    Ok(html! {
        h2 { "Versions new runs start on" }
        p { "New runs start on the latest version. An older version takes new runs only while an admin keeps it open, so that naming it does not get around an agent binding, a role's group or a check that a newer version added. Runs already started keep their version." }
        table {
            thead { tr { th scope="col" { "Version" } th scope="col" { "Published" } th scope="col" { "New runs" } th scope="col" { "Change" } } }
            tbody {
                @for version in versions.iter().rev() {
                    @let number = version.number.to_string();
                    @let kept = openings.kept(version.number);
                    tr {
                        td data-label="Version" { a href=(format!("/processes/{}/versions/{number}", segment(process))) { "v" (number) } }
                        td data-label="Published" { (at_millis(zone, version.published_at)) }
                        td data-label="New runs" { (crate::app::processes::standing_words(&openings, version.number, zone)) }
                        td data-label="Change" {
                            @if kept.is_some() {
                                (form.button("close-version", &format!("Close v{number} to new runs"), &[("process", process), ("version", &number)]))
                            } @else {
                                form method="post" action="/admin/do/keep-version-open" class="inline-form" {
                                    (form.hidden())
                                    input type="hidden" name="process" value=(process);
                                    input type="hidden" name="version" value=(number);
                                    label for=(format!("reason-{number}")) { "Why keep v" (number) " open" }
                                    input id=(format!("reason-{number}")) type="text" name="reason" required
                                        maxlength=(agentprocess_service::MAX_KEEP_OPEN_REASON_CHARS);
                                    button type="submit" {
                                        @if version.number == openings.latest { "Keep open after the next version" }
                                        @else { "Keep v" (number) " open" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// Who may claim the draft's agent steps: one form for every agent step at once, then
/// one per step, each ticking the agents and groups that may.
fn agent_steps(form: &Form<'_>, process: &str, draft: &Draft, agents: &[Identity], groups: &[Group]) -> Markup {
    let every = draft.agents.0.get(EVERY_AGENT_STEP);
    // Numbered, not named: ids of steps, agents and groups may run into each other.
    let one = |number: usize, key: &str, title: Markup, bound: Option<&Claimants>, follows: Option<&Claimants>| {
        // A bound agent keeps its box after it is deactivated, so saving the form
        // does not drop it unseen.
        let offered: Vec<&Identity> = agents
            .iter()
            .filter(|agent| {
                agent.deactivated_at.is_none() || bound.is_some_and(|claimants| claimants.agents.contains(&agent.id))
            })
            .collect();
        html! {
            form method="post" action="/admin/do/bind-agents" class="agent-step" {
                (form.hidden())
                input type="hidden" name="process" value=(process);
                input type="hidden" name="step" value=(key);
                fieldset {
                    legend { (title) }
                    @match (bound, follows) {
                        (Some(claimants), _) => p { "Only " (claimants.described()) " may claim it." },
                        (None, Some(claimants)) => p class="quiet" { "As every agent step: only " (claimants.described()) "." },
                        (None, None) => p class="quiet" { "Any agent of the organization may claim it." },
                    }
                    @if offered.is_empty() && groups.is_empty() { p { "The organization has no agents or groups yet." } }
                    @for (index, agent) in offered.iter().enumerate() {
                        @let checked = bound.is_some_and(|claimants| claimants.agents.contains(&agent.id));
                        @let id = format!("step-{number}-agent-{index}");
                        div {
                            input id=(id) type="checkbox" name="agent" value=(agent.id) checked[checked];
                            label class="inline" for=(id) {
                                "agent " code { (agent.id) }
                                @if agent.deactivated_at.is_some() { " (deactivated)" }
                            }
                        }
                    }
                    @for (index, group) in groups.iter().enumerate() {
                        @let checked = bound.is_some_and(|claimants| claimants.groups.contains(&group.id));
                        @let id = format!("step-{number}-group-{index}");
                        div {
                            input id=(id) type="checkbox" name="group" value=(group.id) checked[checked];
                            label class="inline" for=(id) { "the agents of group " code { (group.id) } }
                        }
                    }
                }
                @if !groups.is_empty() {
                    div {
                        input id=(format!("step-{number}-force")) type="checkbox" name="force" value="true";
                        label class="inline" for=(format!("step-{number}-force")) { "Bind even to a group with no agents yet" }
                    }
                }
                button type="submit" { "Bind" }
            }
            @if bound.is_some() {
                (form.button("unbind-agents", "Remove this binding", &[("process", process), ("step", key)]))
            }
        }
    };
    html! {
        h2 { "Agent steps" }
        @if draft.agent_steps.is_empty() {
            p { "The process has no agent steps." }
        } @else {
            p { "Unbound, any agent of the organization may claim an agent step. Bound, only the agents ticked, and the agents of the groups ticked, are offered it and may claim it." }
            (one(0, EVERY_AGENT_STEP, html! { "Every agent step without a binding of its own" }, every, None))
            @for (index, step) in draft.agent_steps.iter().enumerate() {
                (one(index + 1, step, html! { "Agent step " code { (step) } }, draft.agents.0.get(step), every))
            }
        }
    }
}

async fn webhooks(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let hooks = web.operations.webhooks(&caller.acting).await?;
    let deliveries = web.operations.deliveries(&caller.acting, 50).await?;
    Ok(html! {
        h2 { "Endpoints" }
        ul {
            @for hook in &hooks {
                li { code { (hook.url) } " (" (hook.id) ") "
                     (form.button("remove-webhook", "Remove", &[("webhook", &hook.id)])) }
            }
        }
        (form.fields("add-webhook", &[("webhook-url", "url", "URL deliveries are posted to (https)")], "Add the endpoint"))
        h2 { "Recent deliveries" }
        table {
            thead { tr { th scope="col" { "Event" } th scope="col" { "Run" } th scope="col" { "Status" } th scope="col" { "Attempts" } th scope="col" { "" } } }
            tbody {
                @for delivery in &deliveries {
                    tr {
                        td data-label="Event" { (delivery.event) br; small { (at_millis(&caller.visitor.zone, delivery.updated_at)) } }
                        td data-label="Run" { a href=(format!("/runs/{}", delivery.run_id)) { (delivery.run_id) } }
                        td data-label="Status" { (delivery.status.as_str())
                            @if let Some(code) = delivery.last_status_code { " (HTTP " (code) ")" }
                            @if let Some(error) = &delivery.last_error { br; small { (error) } } }
                        td data-label="Attempts" { (delivery.attempts) }
                        td { (form.button("redeliver", "Send again", &[("webhook", &delivery.webhook_id), ("notification", &delivery.notification_id)])) }
                    }
                }
            }
        }
    })
}

async fn messages(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let (settings, _) = web.operations.message_settings(&caller.acting).await?;
    let hooks = web.operations.chat_hooks(&caller.acting).await?;
    let sent = web.operations.messages(&caller.acting, 50).await?;
    Ok(html! {
        h2 { "What people hear of unless they choose" }
        p { "Each person may choose otherwise on their account page. " (message_choices::cadence(&settings)) }
        form method="post" action="/admin/do/set-messages" {
            (form.hidden())
            (message_choices::selects(&settings.defaults, None))
            (field("remind-every", "remindEveryHours", "Hours between reminders while an item stays overdue (0 sends none)", &settings.remind_every_hours.to_string()))
            (field("digest-hour", "digestHourUtc", "Hour of the daily digest (UTC, 0 to 23)", &settings.digest_hour_utc.to_string()))
            button type="submit" { "Save" }
        }
        h2 { "Chat hooks" }
        p { "A group's Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat) gets the messages its members get; "
            code { "operators" } " gets the escalations and overdue steps. The URL is kept sealed and not shown again. "
            "What a run holds is escaped for the chat's markup, so none of it pings the channel or makes a link." }
        ul {
            @for hook in &hooks {
                li { (hook.group) " → " (hook.host) " (" (hook.kind.as_str()) ") " (form.button("remove-chat-hook", &format!("Remove the hook of {}", hook.group), &[("group", &hook.group)])) }
            }
        }
        form method="post" action="/admin/do/set-chat-hook" {
            (form.hidden())
            (field("hook-group", "group", "Group", ""))
            (field("hook-url", "url", "Incoming-webhook URL (https)", ""))
            div class="field" {
                label for="hook-kind" { "The chat's markup" }
                select id="hook-kind" name="kind" {
                    option value="" { "As the URL says (Slack's hosts: Slack; any other: Markdown)" }
                    option value=(ChatKind::Slack.as_str()) { "Slack" }
                    option value=(ChatKind::Markdown.as_str()) { "Markdown (Mattermost, Rocket.Chat)" }
                }
            }
            button type="submit" { "Set the hook" }
        }
        h2 { "Recent messages" }
        @if sent.is_empty() { p class="quiet" { "No messages yet: email needs the server's SMTP settings, chat a hook." } }
        @else { table {
            thead { tr { th scope="col" { "What" } th scope="col" { "To" } th scope="col" { "Run" } th scope="col" { "Status" } } }
            tbody {
                @for message in &sent {
                    tr {
                        td data-label="What" { (message.kind) @if message.sent > 1 { " (" (message.sent - 1) " reminders)" } br; small { (at_millis(&caller.visitor.zone, message.updated_at)) } }
                        td data-label="To" { (message.channel.as_str()) ": " (message.recipient) @if message.digest { " (daily digest)" } }
                        td data-label="Run" { a href=(format!("/runs/{}", message.run_id)) { (message.run_id) } }
                        td data-label="Status" { (message.status) @if let Some(error) = &message.last_error { br; small { (error) } } }
                    }
                }
            }
        } }
    })
}

async fn policies(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let policies = web.operations.policies(&caller.acting).await?;
    Ok(html! {
        p { "The protocol leaves segregation of duties to the server. These are this server's policies, off until turned on: "
            "while one is on, a person it keeps from an item is not offered it nor told it waits for them, a decision from them is refused saying why, "
            "and the audit log records the policies in force at each decision." }
        form method="post" action="/admin/do/set-policies" {
            (form.hidden())
            div {
                input id="initiator-does-not-decide" type="checkbox" name="initiatorDoesNotDecide" value="true" checked[policies.initiator_does_not_decide];
                label for="initiator-does-not-decide" class="inline" { "The person who started a run does not decide its approvals and tasks" }
            }
            div {
                input id="four-eyes" type="checkbox" name="fourEyes" value="true" checked[policies.four_eyes];
                label for="four-eyes" class="inline" { "Four eyes: nobody approves work they did in the same run (a task they completed, an approval they decided)" }
            }
            button type="submit" { "Save the policies" }
        }
        h2 { "Which agents claim which steps" }
        p { "Any agent of the organization may claim any agent step unless the process binds it to some agents: on each "
            a href="/admin/processes" { "process's draft page" } ", under Agent steps, before it is published." }
    })
}

async fn sign_in(web: &Web, caller: &Caller, form: &Form<'_>) -> Drawn {
    let state = web.operations.organization(&caller.acting).await?;
    let organization = &state.organization;
    let provider = state.provider.as_ref();
    Ok(html! {
        h2 { "Identity provider" }
        @if let Some(provider) = provider { p { "Register this redirect URI at the provider: " code { (provider.redirect_uri) } } }
        form method="post" action="/admin/do/set-sign-in" {
            (form.hidden())
            (field("issuer", "issuer", "Issuer URL (required)", provider.map_or("", |provider| &provider.issuer)))
            (field("client-id", "clientId", "Client id (required)", provider.map_or("", |provider| &provider.client_id)))
            div class="field" {
                label for="client-secret" { "Client secret" @if provider.is_some_and(|provider| provider.has_client_secret) { " (one is set; leave empty to keep it)" } }
                input id="client-secret" name="clientSecret" type="password" autocomplete="off";
            }
            button type="submit" { "Save the provider" }
        }
        h2 { "Organization" }
        form method="post" action="/admin/do/change-organization" {
            (form.hidden())
            (field("org-name", "name", "Name", &organization.name))
            (field("groups-claim", "groupsClaim", "The ID token's claim that lists a person's groups", organization.groups_claim.as_deref().unwrap_or("")))
            input type="hidden" name="autoProvision" value="false";
            div {
                input id="auto-provision" type="checkbox" name="autoProvision" value="true" checked[organization.auto_provision];
                label for="auto-provision" class="inline" { "People of a verified domain become members when they first sign in" }
            }
            button type="submit" { "Save" }
        }
        h2 { "Email domains" }
        table {
            thead { tr { th scope="col" { "Domain" } th scope="col" { "TXT record that proves it" } th scope="col" { "" } } }
            tbody {
                @for domain in &state.domains {
                    @let name = domain.domain.as_str();
                    tr {
                        td data-label="Domain" { (name) @if domain.verified_at.is_some() { " " span class="badge test" { "verified" } } }
                        td data-label="TXT record" { code { "_agentprocess." (name) } " " code { (domain.token) } }
                        td {
                            @if domain.verified_at.is_none() { (form.button("verify-domain", &format!("Verify {name}"), &[("domain", name)])) }
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
async fn audit(web: &Web, caller: &Caller, query: &[(String, String)]) -> Response {
    // Built in a block: the serializer is not `Send`, so it must not live across an await.
    let filter = {
        let mut filter = url::form_urlencoded::Serializer::new(String::new());
        for (name, _, _) in FILTERS {
            if let Some(value) = sent(query, name) {
                filter.append_pair(name, value);
            }
        }
        filter.finish()
    };
    let wanted = |name: &str| sent(query, name).map(str::to_owned);
    // A day is read in the person's zone, the day until included; a time in RFC 3339
    // is taken as it is.
    let zone = &caller.visitor.zone;
    let day = |name: &str, after: i64| {
        wanted(name).map(|sent| {
            day_start(zone, &sent)
                .and_then(|start| start.checked_add(jiff::SignedDuration::from_hours(after)).ok())
                .map_or(sent, |at| at.to_string())
        })
    };
    let asked = AuditQuery {
        since: day("since", 0),
        until: day("until", 24),
        actor: wanted("actor"),
        kind: wanted("kind"),
        target: wanted("target"),
        cursor: wanted("cursor"),
        limit: Some(100),
    };
    let answer = match refuse_nul(query.iter().map(|(_, value)| value.as_str())) {
        Ok(()) => web
            .operations
            .audit(&caller.acting, asked)
            .await
            .map_err(ApiError::from),
        Err(refusal) => Err(refusal),
    };
    let body = html! {
        (menu("audit"))
        form method="get" action="/admin/audit" {
            @for (name, label, kind) in FILTERS {
                div class="field" {
                    label for=(name) { (label) }
                    input id=(name) name=(name) type=(kind) value=(sent(query, name).unwrap_or(""));
                }
            }
            button type="submit" { "Filter" }
        }
        @match &answer {
            Err(refusal) => { (refusals::shown(refusal.tool_error())) }
            Ok(entries) => {
                table {
                    thead { tr { th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "What" } th scope="col" { "About" } th scope="col" { "Detail" } } }
                    tbody {
                        @for entry in &entries.entries {
                            tr {
                                td data-label="When" { (at_millis(&caller.visitor.zone, entry.at)) }
                                td data-label="Who" { (entry.actor) @if let Some(address) = &entry.address { br; small { (address) } } }
                                td data-label="What" { code { (entry.kind) } }
                                td data-label="About" { (entry.target.as_deref().unwrap_or("")) }
                                td data-label="Detail" { (detail(&entry.detail, &caller.visitor.zone)) }
                            }
                        }
                    }
                }
                @if let Some(next) = &entries.next_cursor {
                    p { a href=(format!("/admin/audit?{filter}&cursor={}", segment(next))) { "More entries" } }
                }
            }
        }
    };
    let status = answer
        .as_ref()
        .map_or_else(|refusal| refusal.status(), |_| StatusCode::OK);
    page(status, "Audit log", Some(&caller.visitor), body)
}

/// An audit entry's detail: each field under its label, written for its type.
fn detail(stored: &str, zone: &jiff::tz::TimeZone) -> Markup {
    match serde_json::from_str::<serde_json::Value>(stored) {
        Ok(serde_json::Value::Object(fields)) => html! {
            @if !fields.is_empty() {
                dl class="summary nested" {
                    @for (name, value) in &fields { div { dt { (label(name)) } dd { (value_of(None, value, zone)) } } }
                }
            }
        },
        _ => html! { code { (stored) } },
    }
}
