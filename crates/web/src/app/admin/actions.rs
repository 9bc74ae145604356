//! The admin forms as REST requests: each action names its method, its path (with
//! `{field}` taken from the form, one segment each) and the JSON fields its body takes
//! from the form. A change goes back to the page it came from; a refusal draws that
//! page again with every issue; a secret made this once (a token, a webhook's signing
//! secret) is shown on a page of its own that no cache keeps.

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde_json::{Map, Value, json};

use super::pages::{Notice, render};
use super::{Admin, Caller, Payload, segment};
use crate::app::Visitor;
use crate::app::forms::sent;
use crate::app::layout::page;
use crate::errors::ApiError;
use crate::session::check_csrf;

/// How a form field becomes a JSON value.
#[derive(Clone, Copy)]
enum Kind {
    /// As sent; left out when blank.
    Text,
    /// `true` for `true` or `on`, `false` otherwise; left out when not sent.
    Flag,
    /// A number; sent as text when it is not one, so the refusal names it.
    Number,
    /// Comma-separated, each trimmed, blanks dropped; an empty field is an empty list.
    List,
}

/// One admin action.
struct Action {
    name: &'static str,
    method: Method,
    /// Under `/api/v1`, with `{field}` for path segments from the form.
    path: &'static str,
    /// The body's fields: JSON name, form name, kind. No body when empty (and not `json`).
    fields: &'static [(&'static str, &'static str, Kind)],
    /// What of the answer is shown this once (a secret, and what goes with it): labels
    /// and JSON pointers. Empty for an answer that holds no secret.
    secret: &'static [(&'static str, &'static str)],
}

const ACTIONS: &[Action] = &[
    Action {
        name: "invite",
        method: Method::POST,
        path: "/members",
        fields: &[
            ("email", "email", Kind::Text),
            ("name", "name", Kind::Text),
            ("role", "role", Kind::Text),
            ("groups", "groups", Kind::List),
        ],
        secret: &[],
    },
    Action {
        name: "change-member",
        method: Method::PATCH,
        path: "/members/{member}",
        fields: &[("role", "role", Kind::Text), ("active", "active", Kind::Flag)],
        secret: &[],
    },
    Action {
        name: "create-group",
        method: Method::POST,
        path: "/groups",
        fields: &[("id", "group", Kind::Text), ("name", "name", Kind::Text)],
        secret: &[],
    },
    Action {
        name: "join-group",
        method: Method::PUT,
        path: "/groups/{group}/members/{member}",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "leave-group",
        method: Method::DELETE,
        path: "/groups/{group}/members/{member}",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "create-agent",
        method: Method::POST,
        path: "/agents",
        fields: &[("id", "agent", Kind::Text), ("name", "name", Kind::Text)],
        secret: &[],
    },
    Action {
        name: "change-agent",
        method: Method::PATCH,
        path: "/agents/{agent}",
        fields: &[("enabled", "enabled", Kind::Flag)],
        secret: &[],
    },
    Action {
        name: "issue-token",
        method: Method::POST,
        path: "/agents/{agent}/tokens",
        fields: &[("expiresInDays", "days", Kind::Number)],
        secret: &[("Token", "/token")],
    },
    Action {
        name: "revoke-token",
        method: Method::DELETE,
        path: "/agents/{agent}/tokens/{token}",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "create-client",
        method: Method::POST,
        path: "/agents/{agent}/clients",
        fields: &[("name", "name", Kind::Text)],
        secret: &[
            ("Client id", "/clientId"),
            ("Client secret", "/secrets/0/secret"),
            ("Token endpoint", "/tokenEndpoint"),
        ],
    },
    Action {
        name: "add-client-secret",
        method: Method::POST,
        path: "/agents/{agent}/clients/{client}/secrets",
        fields: &[],
        secret: &[("New client secret", "/secret")],
    },
    Action {
        name: "revoke-client",
        method: Method::DELETE,
        path: "/agents/{agent}/clients/{client}",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "set-claim-values",
        method: Method::PUT,
        path: "/groups/{group}/claim-values",
        fields: &[("values", "values", Kind::List)],
        secret: &[],
    },
    Action {
        name: "bind-role",
        method: Method::PUT,
        path: "/processes/{process}/draft/roles/{role}",
        fields: &[("group", "group", Kind::Text), ("force", "force", Kind::Flag)],
        secret: &[],
    },
    Action {
        name: "publish",
        method: Method::POST,
        path: "/processes/{process}/publish",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "add-webhook",
        method: Method::POST,
        path: "/webhooks",
        fields: &[("url", "url", Kind::Text)],
        secret: &[("Signing secret", "/secret")],
    },
    Action {
        name: "remove-webhook",
        method: Method::DELETE,
        path: "/webhooks/{webhook}",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "redeliver",
        method: Method::POST,
        path: "/webhooks/{webhook}/deliveries/{notification}/redeliver",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "change-organization",
        method: Method::PATCH,
        path: "/organization",
        fields: &[
            ("name", "name", Kind::Text),
            ("groupsClaim", "groupsClaim", Kind::Text),
            ("autoProvision", "autoProvision", Kind::Flag),
        ],
        secret: &[],
    },
    Action {
        name: "set-sign-in",
        method: Method::PUT,
        path: "/organization/sign-in",
        fields: &[
            ("issuer", "issuer", Kind::Text),
            ("clientId", "clientId", Kind::Text),
            ("clientSecret", "clientSecret", Kind::Text),
        ],
        secret: &[],
    },
    Action {
        name: "add-domain",
        method: Method::POST,
        path: "/organization/domains",
        fields: &[("domain", "domain", Kind::Text)],
        secret: &[],
    },
    Action {
        name: "verify-domain",
        method: Method::POST,
        path: "/organization/domains/{domain}/verify",
        fields: &[],
        secret: &[],
    },
    Action {
        name: "remove-domain",
        method: Method::DELETE,
        path: "/organization/domains/{domain}",
        fields: &[],
        secret: &[],
    },
];

/// The admin page a form goes back to: one of ours, or the admin home.
fn back_of(form: &[(String, String)]) -> String {
    sent(form, "back")
        .filter(|back| back.starts_with("/admin") && !back.contains("//") && !back.contains(['\\', '\r', '\n']))
        .unwrap_or("/admin")
        .to_owned()
}

/// The path of `action`, its `{field}`s filled from the form; the fields it lacks.
fn path_of(action: &Action, form: &[(String, String)]) -> (String, Vec<String>) {
    let mut path = String::new();
    let mut missing = Vec::new();
    let mut rest = action.path;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}').unwrap_or(rest.len() - open - 1);
        path.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        match sent(form, name) {
            Some(value) => path.push_str(&segment(value.trim())),
            None => missing.push(format!("{name}: required")),
        }
        rest = &rest[close + 1..];
    }
    path.push_str(rest);
    (path, missing)
}

/// The JSON body of `action` from the form.
fn body_of(action: &Action, form: &[(String, String)]) -> Map<String, Value> {
    let mut body = Map::new();
    for (key, name, kind) in action.fields {
        let raw = form
            .iter()
            .find(|(sent, _)| sent == name)
            .map(|(_, value)| value.trim());
        let value = match (kind, raw) {
            (Kind::Flag, Some(value)) => json!(value == "true" || value == "on"),
            (_, None) => continue,
            // An empty list is sent: it clears what was there.
            (Kind::List, Some("")) => json!([]),
            (_, Some("")) => continue,
            (Kind::Text, Some(value)) => json!(value),
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
        body.insert((*key).to_owned(), value);
    }
    body
}

impl FromRequestParts<Arc<Admin>> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, admin: &Arc<Admin>) -> Result<Self, Response> {
        let visitor = Visitor::from_request_parts(parts, &admin.web).await?;
        let session = tower_sessions::Session::from_request_parts(parts, &admin.web)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Caller {
            visitor,
            session,
            address: parts.extensions.get().copied(),
        })
    }
}

/// The answer to a change: back to the page, the page again with the refusal, or the
/// secret made this once.
async fn answered(
    admin: &Admin,
    caller: &Caller,
    back: &str,
    secret: &[(&str, &str)],
    answer: super::Answer,
) -> Response {
    if !answer.ok() {
        let (message, issues) = answer.refusal();
        let status = answer.status;
        return render(
            admin,
            caller,
            back,
            Notice::Refused {
                status,
                message,
                issues,
            },
        )
        .await;
    }
    let shown: Vec<(&str, &str)> = secret
        .iter()
        .filter_map(|(label, pointer)| Some((*label, answer.body.pointer(pointer)?.as_str()?)))
        .collect();
    if !shown.is_empty() {
        let body = html! {
            div class="notice" role="status" {
                p { "Copy it now: the secret is shown this once, and the server keeps only its hash." }
                dl {
                    @for (label, value) in &shown { dt { (label) } dd { code class="secret" { (value) } } }
                }
                p { a href=(back) { "Done" } }
            }
        };
        return page(StatusCode::CREATED, "Made this once", Some(&caller.visitor.who), body);
    }
    Redirect::to(back).into_response()
}

pub(super) async fn act(
    State(admin): State<Arc<Admin>>,
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
    if let Err(error) = check_csrf(&headers, &admin.web.origin, &caller.session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let back = back_of(&form);
    let Some(action) = ACTIONS.iter().find(|known| known.name == action) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let (path, missing) = path_of(action, &form);
    if !missing.is_empty() {
        let error = ApiError::invalid("the form is missing what the change needs; nothing changed", missing);
        let notice = Notice::Refused {
            status: StatusCode::BAD_REQUEST,
            message: error.message().to_owned(),
            issues: error.issues().to_vec(),
        };
        return render(&admin, &caller, &back, notice).await;
    }
    let body = if action.fields.is_empty() {
        Payload::None
    } else {
        Payload::Json(Value::Object(body_of(action, &form)))
    };
    let key = sent(&form, "requestId");
    let answer = admin.call(&caller, (action.method.clone(), &path), body, key).await;
    answered(&admin, &caller, &back, action.secret, answer).await
}

/// Importing a process: the form's file goes to `POST /api/v1/processes` as a
/// multipart body of its own; its draft's page comes next.
pub(super) async fn import(State(admin): State<Arc<Admin>>, caller: Caller, request: Request) -> Response {
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
                let name = part.file_name().unwrap_or("PROCESS.md").to_owned();
                file = part.bytes().await.ok().map(|bytes| (name, bytes.to_vec()));
            }
            _ => {}
        }
    }
    if let Err(error) = check_csrf(&headers, &admin.web.origin, &caller.session, csrf.as_deref()).await {
        return error.into_response();
    }
    let Some((name, bytes)) = file.filter(|(_, bytes)| !bytes.is_empty()) else {
        let notice = Notice::Refused {
            status: StatusCode::BAD_REQUEST,
            message: "choose a PROCESS.md, or its folder as a tar, tar.gz or zip archive; nothing changed".to_owned(),
            issues: vec!["file: required".to_owned()],
        };
        return render(&admin, &caller, "/admin/processes", notice).await;
    };
    const BOUNDARY: &str = "agentprocess-admin-import";
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n",
        name.replace(['"', '\\', '\r', '\n'], "_")
    )
    .into_bytes();
    body.extend_from_slice(&bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    let content_type = HeaderValue::from_static("multipart/form-data; boundary=agentprocess-admin-import");
    let answer = admin
        .call(
            &caller,
            (Method::POST, "/processes"),
            Payload::Raw(content_type, body),
            None,
        )
        .await;
    match answer.body["process"].as_str().filter(|_| answer.ok()) {
        Some(name) => Redirect::to(&format!("/admin/processes/{}", segment(name))).into_response(),
        None => answered(&admin, &caller, "/admin/processes", &[], answer).await,
    }
}
