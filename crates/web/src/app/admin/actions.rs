//! The admin forms as the organization's operations: each action names the form
//! fields that say what it changes and the fields its command takes, read by the same
//! rules as the REST surface's JSON body. A change goes back to the page it came from;
//! a refusal draws that page again with every issue; a secret made this once (a
//! token, a webhook's signing secret) is shown on a page of its own that no cache
//! keeps.

use std::sync::Arc;

use agentprocess_auth::Role;
use agentprocess_operations::processes::unpack;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::pages::render;
use super::{Caller, refuse_nul};
use crate::app::forms::sent;
use crate::app::layout::page;
use crate::errors::ApiError;
use crate::session::{Web, check_csrf};

/// The largest import the page takes: what `/api/v1` takes, a request body of 2 MiB.
pub(super) const MAX_IMPORT: usize = 2 << 20;

/// How a form field becomes a value of the command.
#[derive(Clone, Copy)]
enum Kind {
    /// As sent; left out when blank.
    Text,
    /// `true` for `true` or `on`, `false` otherwise; left out when not sent.
    Flag,
    /// A number; kept as text when it is not one, so the refusal names it.
    Number,
    /// Comma-separated, each trimmed, blanks dropped; an empty field is an empty list.
    List,
    /// Every value sent under the name (a set of checkboxes), blanks dropped.
    Each,
}

/// One admin action.
struct Action {
    name: &'static str,
    /// The form fields that name what it changes, in order.
    names: &'static [&'static str],
    /// The command's fields: its name, the form's name, kind.
    fields: &'static [(&'static str, &'static str, Kind)],
}

const ACTIONS: &[Action] = &[
    Action {
        name: "invite",
        names: &[],
        fields: &[
            ("email", "email", Kind::Text),
            ("name", "name", Kind::Text),
            ("role", "role", Kind::Text),
            ("groups", "groups", Kind::List),
        ],
    },
    Action {
        name: "change-member",
        names: &["member"],
        fields: &[("role", "role", Kind::Text), ("active", "active", Kind::Flag)],
    },
    Action {
        name: "create-group",
        names: &[],
        fields: &[("id", "group", Kind::Text), ("name", "name", Kind::Text)],
    },
    Action {
        name: "join-group",
        names: &["group", "member"],
        fields: &[],
    },
    Action {
        name: "leave-group",
        names: &["group", "member"],
        fields: &[],
    },
    Action {
        name: "create-agent",
        names: &[],
        fields: &[("id", "agent", Kind::Text), ("name", "name", Kind::Text)],
    },
    Action {
        name: "change-agent",
        names: &["agent"],
        fields: &[("enabled", "enabled", Kind::Flag)],
    },
    Action {
        name: "issue-token",
        names: &["agent"],
        fields: &[("expiresInDays", "days", Kind::Number)],
    },
    Action {
        name: "revoke-token",
        names: &["agent", "token"],
        fields: &[],
    },
    Action {
        name: "create-client",
        names: &["agent"],
        fields: &[("name", "name", Kind::Text)],
    },
    Action {
        name: "add-client-secret",
        names: &["agent", "client"],
        fields: &[],
    },
    Action {
        name: "revoke-client",
        names: &["agent", "client"],
        fields: &[],
    },
    Action {
        name: "set-claim-values",
        names: &["group"],
        fields: &[("values", "values", Kind::List)],
    },
    Action {
        name: "bind-role",
        names: &["process", "role"],
        fields: &[("group", "group", Kind::Text), ("force", "force", Kind::Flag)],
    },
    Action {
        name: "bind-agents",
        names: &["process", "step"],
        fields: &[
            ("agents", "agent", Kind::Each),
            ("groups", "group", Kind::Each),
            ("force", "force", Kind::Flag),
        ],
    },
    Action {
        name: "unbind-agents",
        names: &["process", "step"],
        fields: &[],
    },
    Action {
        name: "publish",
        names: &["process"],
        fields: &[],
    },
    Action {
        name: "keep-version-open",
        names: &["process", "version"],
        fields: &[("reason", "reason", Kind::Text)],
    },
    Action {
        name: "close-version",
        names: &["process", "version"],
        fields: &[],
    },
    Action {
        name: "add-webhook",
        names: &[],
        fields: &[("url", "url", Kind::Text)],
    },
    Action {
        name: "set-messages",
        names: &[],
        fields: &[
            ("remindEveryHours", "remindEveryHours", Kind::Number),
            ("digestHourUtc", "digestHourUtc", Kind::Number),
        ],
    },
    Action {
        name: "set-policies",
        names: &[],
        fields: &[
            ("initiatorDoesNotDecide", "initiatorDoesNotDecide", Kind::Flag),
            ("fourEyes", "fourEyes", Kind::Flag),
        ],
    },
    Action {
        name: "set-chat-hook",
        names: &[],
        fields: &[
            ("group", "group", Kind::Text),
            ("url", "url", Kind::Text),
            ("kind", "kind", Kind::Text),
        ],
    },
    Action {
        name: "remove-chat-hook",
        names: &["group"],
        fields: &[],
    },
    Action {
        name: "remove-webhook",
        names: &["webhook"],
        fields: &[],
    },
    Action {
        name: "redeliver",
        names: &["webhook", "notification"],
        fields: &[],
    },
    Action {
        name: "change-organization",
        names: &[],
        fields: &[
            ("name", "name", Kind::Text),
            ("groupsClaim", "groupsClaim", Kind::Text),
            ("autoProvision", "autoProvision", Kind::Flag),
        ],
    },
    Action {
        name: "set-sign-in",
        names: &[],
        fields: &[
            ("issuer", "issuer", Kind::Text),
            ("clientId", "clientId", Kind::Text),
            ("clientSecret", "clientSecret", Kind::Text),
        ],
    },
    Action {
        name: "add-domain",
        names: &[],
        fields: &[("domain", "domain", Kind::Text)],
    },
    Action {
        name: "verify-domain",
        names: &["domain"],
        fields: &[],
    },
    Action {
        name: "remove-domain",
        names: &["domain"],
        fields: &[],
    },
];

/// The admin page a form goes back to: one of ours, or the admin home.
fn back_of(form: &[(String, String)]) -> String {
    sent(form, "back")
        .filter(|back| back.starts_with("/admin") && !back.contains("//") && !back.contains(['\\', '\r', '\n']))
        .unwrap_or("/admin")
        .to_owned()
}

/// What `action` changes, as its form names it, or every name the form lacks.
fn names_of(action: &Action, form: &[(String, String)]) -> Result<Vec<String>, ApiError> {
    let mut names = Vec::new();
    let mut missing = Vec::new();
    for name in action.names {
        match sent(form, name) {
            Some(value) => names.push(value.trim().to_owned()),
            None => missing.push(format!("{name}: required")),
        }
    }
    if missing.is_empty() {
        Ok(names)
    } else {
        Err(ApiError::invalid(
            "the form is missing what the change needs; nothing changed",
            missing,
        ))
    }
}

/// The command of `action` from the form, read as the REST surface reads its JSON
/// body, in the same words.
fn command<T: DeserializeOwned>(action: &Action, form: &[(String, String)]) -> Result<T, ApiError> {
    let mut fields = Map::new();
    for (key, name, kind) in action.fields {
        // A checkbox follows a hidden `false` of the same name, so that leaving it
        // unticked still says so: its last value is the one that counts.
        let mut sent_values = form
            .iter()
            .filter(|(sent, _)| sent == name)
            .map(|(_, value)| value.trim());
        let raw = match kind {
            Kind::Flag => sent_values.next_back(),
            Kind::Each => {
                let each: Vec<&str> = sent_values.filter(|value| !value.is_empty()).collect();
                fields.insert((*key).to_owned(), json!(each));
                continue;
            }
            _ => sent_values.next(),
        };
        let value = match (kind, raw) {
            (Kind::Flag, Some(value)) => json!(value == "true" || value == "on"),
            (_, None) => continue,
            // An empty list is sent: it clears what was there.
            (Kind::List, Some("")) => json!([]),
            (_, Some("")) => continue,
            (Kind::Text | Kind::Each, Some(value)) => json!(value),
            (Kind::Number, Some(value)) => value
                .parse::<u64>()
                .map_or_else(|_| json!(value), |number| json!(number)),
            (Kind::List, Some(value)) => json!(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .collect::<Vec<_>>()
            ),
        };
        fields.insert((*key).to_owned(), value);
    }
    let text = Value::Object(fields).to_string();
    axum::Json::<T>::from_bytes(text.as_bytes())
        .map(|axum::Json(command)| command)
        .map_err(|rejection| ApiError::body(&rejection))
}

/// The version number a form names.
fn version_named(sent: &str) -> Result<u32, ApiError> {
    sent.parse().map_err(|_| {
        ApiError::invalid(
            "the form names no version; nothing changed",
            vec![format!("version: {sent:?} is not a version number")],
        )
    })
}

/// A group's chat hook as the form sends it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatHookForm {
    group: String,
    url: String,
    /// Left out: as the URL says.
    #[serde(default)]
    kind: Option<agentprocess_service::ChatKind>,
}

/// What a change answers: back to the page, or a secret made this once.
enum Done {
    Back,
    /// Labelled values, the secret among them.
    Shown(Vec<(&'static str, String)>),
}

/// Does `action` as the caller.
async fn perform(web: &Web, caller: &Caller, action: &Action, form: &[(String, String)]) -> Result<Done, ApiError> {
    let operations = &web.operations;
    let acting = &caller.acting;
    // Every action is an admin's change: refused before anything sent is read.
    acting.require(Role::Admin, true).map_err(ApiError::from)?;
    let key = sent(form, "requestId").filter(|key| !key.is_empty());
    let names = names_of(action, form)?;
    let fields = action.fields.iter().map(|(_, name, _)| *name);
    refuse_nul(
        action
            .names
            .iter()
            .copied()
            .chain(fields)
            .filter_map(|name| sent(form, name))
            .chain(key),
    )?;
    let name = |index: usize| names.get(index).map_or("", String::as_str);
    match action.name {
        "invite" => {
            operations.invite(acting, &command(action, form)?, key).await?;
        }
        "change-member" => {
            operations
                .change_member(acting, name(0), &command(action, form)?)
                .await?;
        }
        "create-group" => {
            operations.create_group(acting, &command(action, form)?, key).await?;
        }
        "join-group" | "leave-group" => {
            let inside = action.name == "join-group";
            operations.set_membership(acting, name(0), name(1), inside).await?;
        }
        "create-agent" => {
            operations.create_agent(acting, &command(action, form)?, key).await?;
        }
        "change-agent" => {
            operations
                .set_agent_enabled(acting, name(0), &command(action, form)?)
                .await?;
        }
        "issue-token" => {
            let (_, token) = operations
                .create_agent_token(acting, name(0), &command(action, form)?, key)
                .await?;
            return Ok(Done::Shown(vec![("Token", token)]));
        }
        "revoke-token" => operations.revoke_agent_token(acting, name(0), name(1)).await?,
        "create-client" => {
            let (client, secret) = operations
                .create_client(acting, name(0), &command(action, form)?, key)
                .await?;
            let mut shown = vec![("Client id", client.id)];
            shown.extend(secret.map(|(_, secret)| ("Client secret", secret)));
            shown.push(("Token endpoint", operations.token_endpoint()));
            return Ok(Done::Shown(shown));
        }
        "add-client-secret" => {
            let (_, secret) = operations.add_client_secret(acting, name(0), name(1), key).await?;
            return Ok(Done::Shown(vec![("New client secret", secret)]));
        }
        "revoke-client" => operations.revoke_client(acting, name(0), name(1)).await?,
        "set-claim-values" => {
            operations
                .set_claim_values(acting, name(0), &command(action, form)?)
                .await?;
        }
        "bind-role" => {
            operations
                .bind_role(acting, (name(0), name(1)), &command(action, form)?)
                .await?;
        }
        "bind-agents" => {
            operations
                .bind_agents(acting, (name(0), name(1)), &command(action, form)?)
                .await?;
        }
        "unbind-agents" => {
            operations.unbind_agents(acting, (name(0), name(1))).await?;
        }
        "publish" => {
            operations.publish(acting, name(0), key).await?;
        }
        "keep-version-open" => {
            let version = version_named(name(1))?;
            operations
                .keep_version_open(acting, (name(0), version), &command(action, form)?)
                .await?;
        }
        "close-version" => {
            operations
                .close_version(acting, (name(0), version_named(name(1))?))
                .await?
        }
        "add-webhook" => {
            let webhook = operations.add_webhook(acting, &command(action, form)?, key).await?;
            return Ok(Done::Shown(vec![("Signing secret", webhook.secret)]));
        }
        "remove-webhook" => operations.remove_webhook(acting, name(0)).await?,
        "set-messages" => {
            let defaults = crate::app::message_choices::chosen(form)
                .map_err(|issues| ApiError::invalid("the message settings were not saved", issues))?;
            let settings = agentprocess_service::OrgMessageSettings {
                defaults,
                ..command(action, form)?
            };
            operations.set_message_settings(acting, &settings).await?;
        }
        "set-policies" => operations.set_policies(acting, &command(action, form)?).await?,
        "set-chat-hook" => {
            let hook: ChatHookForm = command(action, form)?;
            operations
                .set_chat_hook(acting, &hook.group, &hook.url, hook.kind)
                .await?;
        }
        "remove-chat-hook" => operations.remove_chat_hook(acting, name(0)).await?,
        "redeliver" => operations.redeliver(acting, name(0), name(1)).await?,
        "change-organization" => {
            operations
                .change_organization(acting, &command(action, form)?, None)
                .await?;
        }
        "set-sign-in" => {
            operations.set_sign_in(acting, &command(action, form)?).await?;
        }
        "add-domain" => {
            operations.add_domain(acting, &command(action, form)?, key).await?;
        }
        "verify-domain" => {
            operations.verify_domain(acting, name(0)).await?;
        }
        "remove-domain" => operations.remove_domain(acting, name(0)).await?,
        _ => return Err(ApiError::not_found("there is no such admin action")),
    }
    Ok(Done::Back)
}

/// The answer to a change: back to the page, the page again with the refusal, or the
/// secret made this once.
async fn answered(web: &Web, caller: &Caller, back: &str, done: Result<Done, ApiError>) -> Response {
    match done {
        Err(refusal) => render(web, caller, back, Some(refusal)).await,
        Ok(Done::Back) => Redirect::to(back).into_response(),
        Ok(Done::Shown(shown)) => {
            let body = html! {
                div class="notice" role="status" {
                    p { "Copy it now: the secret is shown this once, and the server keeps only its hash." }
                    dl {
                        @for (label, value) in &shown { dt { (label) } dd { code class="secret" { (value) } } }
                    }
                    p { a href=(back) { "Done" } }
                }
            };
            // A page is never kept by a cache.
            page(StatusCode::CREATED, "Made this once", Some(&caller.visitor), body)
        }
    }
}

pub(super) async fn act(
    State(web): State<Arc<Web>>,
    caller: Caller,
    Path(action): Path<String>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let axum::extract::Form(form) = match axum::extract::Form::<Vec<(String, String)>>::from_request(request, &()).await
    {
        Ok(form) => form,
        Err(rejection) => return rejection.into_response(),
    };
    if let Err(error) = check_csrf(&headers, &web.origin, &caller.session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let back = back_of(&form);
    let Some(action) = ACTIONS.iter().find(|known| known.name == action) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let done = perform(&web, &caller, action, &form).await;
    answered(&web, &caller, &back, done).await
}

/// Importing a process: the form's file (a PROCESS.md, or its folder as an archive)
/// becomes a draft, whose page comes next.
pub(super) async fn import(State(web): State<Arc<Web>>, caller: Caller, request: Request) -> Response {
    let headers = request.headers().clone();
    let mut parts = match axum::extract::Multipart::from_request(request, &()).await {
        Ok(parts) => parts,
        Err(rejection) => return rejection.into_response(),
    };
    let (mut csrf, mut file) = (None, None);
    while let Ok(Some(part)) = parts.next_field().await {
        match part.name() {
            Some("csrf") => csrf = part.text().await.ok(),
            Some("file") => {
                // Named as a multipart body to `/api/v1` would name it.
                let name = part.file_name().map(|name| name.replace(['"', '\\', '\r', '\n'], "_"));
                let folder = name
                    .as_deref()
                    .and_then(|name| name.rsplit_once('/'))
                    .and_then(|(directory, _)| directory.rsplit('/').next())
                    .map(str::to_owned);
                file = part.bytes().await.ok().map(|bytes| (folder, bytes.to_vec()));
            }
            _ => {}
        }
    }
    if let Err(error) = check_csrf(&headers, &web.origin, &caller.session, csrf.as_deref()).await {
        return error.into_response();
    }
    let Some((folder, bytes)) = file.filter(|(_, bytes)| !bytes.is_empty()) else {
        let refusal = ApiError::invalid(
            "choose a PROCESS.md, or its folder as a tar, tar.gz or zip archive; nothing changed",
            vec!["file: required".to_owned()],
        );
        return render(&web, &caller, "/admin/processes", Some(refusal)).await;
    };
    // The role first, then what was sent, as every admin action.
    let allowed = caller.acting.require(Role::Admin, true).map_err(ApiError::from);
    if let Err(refusal) = allowed.and_then(|()| refuse_nul(folder.as_deref())) {
        return render(&web, &caller, "/admin/processes", Some(refusal)).await;
    }
    let imported = async {
        let source = unpack(bytes)?;
        let folder = folder.or(source.folder);
        web.operations
            .import(&caller.acting, &source.text, folder.as_deref(), None)
            .await
    };
    match imported.await {
        Ok(draft) => {
            Redirect::to(&format!("/admin/processes/{}", super::pages::segment(&draft.process))).into_response()
        }
        Err(error) => render(&web, &caller, "/admin/processes", Some(error.into())).await,
    }
}
