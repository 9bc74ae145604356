//! A person's account: the organization they are signed in to, as whom, their role and
//! groups, what they hear of by email, their own API tokens (made, listed and revoked here; a token is shown the
//! once it is made), and signing out; in the app's own look, with its navigation.

use std::sync::Arc;

use agentprocess_auth::Role;
use agentprocess_auth::tokens::{MAX_TOKEN_DAYS, NewToken, Scope};
use agentprocess_store::TokenRow;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};

use super::admin::Caller;
use super::forms::sent;
use super::layout::page;
use super::refusals;
use super::time::at_millis;
use crate::errors::ApiError;
use crate::session::{Web, check_csrf, csrf_token};

/// How long a new token may live, as the form offers it; 90 days is chosen first.
const LIFETIMES: [u32; 5] = [7, 30, 90, 180, MAX_TOKEN_DAYS];

pub(super) async fn account(State(web): State<Arc<Web>>, caller: Caller) -> Response {
    drawn(&web, &caller, None).await
}

/// The account page, with a refused change's `notice` above the tokens.
async fn drawn(web: &Web, caller: &Caller, notice: Option<ApiError>) -> Response {
    let visitor = &caller.visitor;
    let organization = match web.auth.organization(visitor.caller.org()).await {
        Ok(organization) => organization,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let csrf = match csrf_token(&caller.session).await {
        Ok(token) => token,
        Err(error) => return error.into_response(),
    };
    // An admin's listing holds everyone's tokens; this page is about one's own.
    let tokens = match web.operations.tokens(&caller.acting).await {
        Ok(tokens) => tokens
            .into_iter()
            .filter(|token| token.identity == caller.acting.identity.id)
            .collect::<Vec<_>>(),
        Err(error) => return ApiError::from(error).into_response(),
    };
    let (defaults, own) = match web.operations.message_settings(&caller.acting).await {
        Ok(settings) => settings,
        Err(error) => return ApiError::from(error).into_response(),
    };
    let identity = &visitor.caller.identity;
    let now = web.service.now().as_millisecond();
    let body = html! {
        dl class="summary" {
            div { dt { "Organization" } dd { (organization.name) " " code { (organization.slug) } } }
            div { dt { "Signed in as" } dd { (visitor.who) } }
            div { dt { "Role" } dd { (identity.role.map_or("none", Role::as_str)) } }
            div { dt { "Groups" } dd { @if identity.groups.is_empty() { "None" } @else { (identity.groups.join(", ")) } } }
        }
        @if let Some(refusal) = &notice { (refusals::shown(refusal.tool_error())) }
        p { a href="/inbox" { "Your inbox" } ": the work items waiting for you." }
        section aria-labelledby="messages" {
            h2 id="messages" { "What you hear of" }
            p { "Email to " (identity.person.as_deref().unwrap_or("you")) " when work waits for you, goes overdue or is escalated, and when a run you started ends." }
            (super::message_choices::form(&defaults, &own, &csrf))
        }
        section aria-labelledby="tokens" {
            h2 id="tokens" { "Your API tokens" }
            p { "A token lets a program act as you on " code { "/api/v1" }
                " (the command line's " code { "agentprocess publish" } ", a script), sent as "
                code { "Authorization: Bearer …" } ". It can do no more than your role allows." }
            (listed(&tokens, &csrf, now, visitor))
            (new_token_form(&csrf, identity.has_role(Role::Admin)))
        }
        form method="post" action="/logout" class="sign-out" {
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Sign out" }
        }
    };
    let status = notice.as_ref().map_or(StatusCode::OK, ApiError::status);
    page(status, "Your account", Some(visitor), body)
}

/// One's tokens, newest first, each with what it may do, until when, and a way to
/// revoke it while it works.
fn listed(tokens: &[TokenRow], csrf: &str, now: i64, visitor: &super::Visitor) -> Markup {
    let mut tokens: Vec<&TokenRow> = tokens.iter().collect();
    tokens.sort_by_key(|token| std::cmp::Reverse(token.created_at));
    let at = |millis: i64| at_millis(&visitor.zone, millis);
    html! {
        @if tokens.is_empty() {
            p class="quiet" { "You have no API tokens." }
        } @else {
            table {
                caption { "Your tokens" }
                thead { tr { th { "Name" } th { "May" } th { "Made" } th { "Works until" } th { "State" } } }
                tbody {
                    @for token in tokens {
                        @let name = token.name.as_deref().unwrap_or(&token.id);
                        @let expired = token.expires_at.is_some_and(|expires| expires <= now);
                        tr {
                            td data-label="Name" { (name) }
                            td data-label="May" { (may(token.scope.as_deref())) }
                            td data-label="Made" { (at(token.created_at)) }
                            td data-label="Works until" { @if let Some(expires) = token.expires_at { (at(expires)) } }
                            td data-label="State" {
                                @if let Some(revoked) = token.revoked_at { "Revoked " (at(revoked)) }
                                @else if expired { "Expired" }
                                @else {
                                    form method="post" action=(format!("/account/tokens/{}/revoke", token.id)) class="inline-form" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        button type="submit" class="warning" aria-label=(format!("Revoke {name}")) { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What a token's scope lets it do, in words.
fn may(scope: Option<&str>) -> &'static str {
    match scope {
        Some("read") => "Read only",
        _ => "Everything you may do",
    }
}

fn new_token_form(csrf: &str, admin: bool) -> Markup {
    html! {
        form method="post" action="/account/tokens" {
            h3 { "Make a token" }
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="requestId" value=(agentprocess_auth::secrets::new_id("web_"));
            div class="field" {
                label for="token-name" { "Name (required)" }
                small { "What it is for, so you know which to revoke later: “publishing from CI”." }
                input id="token-name" name="name" type="text" maxlength="200" required;
            }
            @if admin {
                fieldset {
                    legend { "It may" }
                    div { input id="scope-read" type="radio" name="scope" value="read" checked; label class="inline" for="scope-read" { "Read only" } }
                    div { input id="scope-admin" type="radio" name="scope" value="admin"; label class="inline" for="scope-admin" { "Do everything you may do, as an admin" } }
                }
            } @else {
                input type="hidden" name="scope" value="read";
                p { "It may read only: tokens that change things are made by admins." }
            }
            div class="field" {
                label for="token-days" { "Works for" }
                select id="token-days" name="days" {
                    @for days in LIFETIMES { option value=(days) selected[days == 90] { (days) " days" } }
                }
            }
            button type="submit" class="primary" { "Make the token" }
        }
    }
}

/// Makes a token of the person's own and shows it this once.
pub(super) async fn make_token(
    State(web): State<Arc<Web>>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &caller.session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let scope = match sent(&form, "scope") {
        Some("admin") => Scope::Admin,
        _ => Scope::Read,
    };
    let new = NewToken {
        name: sent(&form, "name").unwrap_or_default().to_owned(),
        scope,
        expires_in_days: sent(&form, "days").and_then(|days| days.parse().ok()),
    };
    let key = sent(&form, "requestId");
    let made = web.operations.create_token(&caller.acting, &new, key).await;
    match made {
        Ok((row, token)) => {
            let body = html! {
                div class="notice" role="status" {
                    p { "Copy it now: the token is shown this once, and the server keeps only its hash." }
                    dl {
                        dt { "Name" } dd { (row.name.as_deref().unwrap_or_default()) }
                        dt { "Token" } dd { code class="secret" { (token) } }
                    }
                    p { a href="/account#tokens" { "Done" } }
                }
            };
            page(StatusCode::CREATED, "Your new API token", Some(&caller.visitor), body)
        }
        Err(error) => drawn(&web, &caller, Some(error.into())).await,
    }
}

/// Revokes one of the person's tokens.
pub(super) async fn revoke_token(
    State(web): State<Arc<Web>>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &caller.session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    // One's own only, here, even for an admin, who revokes others' on `/api/v1`.
    let own = match web.operations.tokens(&caller.acting).await {
        Ok(tokens) => tokens
            .iter()
            .any(|token| token.id == id && token.identity == caller.acting.identity.id),
        Err(error) => return drawn(&web, &caller, Some(error.into())).await,
    };
    if !own {
        let refusal = ApiError::not_found(format!("you have no token {id:?}"));
        return drawn(&web, &caller, Some(refusal)).await;
    }
    match web.operations.revoke_token(&caller.acting, &id).await {
        Ok(()) => Redirect::to("/account#tokens").into_response(),
        Err(error) => drawn(&web, &caller, Some(error.into())).await,
    }
}

/// Saves what the person chose to hear of.
pub(super) async fn choose_messages(
    State(web): State<Arc<Web>>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &caller.session, sent(&form, "csrf")).await {
        return error.into_response();
    }
    let choices = match super::message_choices::chosen(&form) {
        Ok(choices) => choices,
        Err(issues) => {
            let refusal = ApiError::invalid("what you hear of was not saved", issues);
            return drawn(&web, &caller, Some(refusal)).await;
        }
    };
    match web.operations.choose_messages(&caller.acting, &choices).await {
        Ok(()) => Redirect::to("/account#messages").into_response(),
        Err(error) => drawn(&web, &caller, Some(error.into())).await,
    }
}
