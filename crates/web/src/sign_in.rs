//! Sign-up and sign-in pages: plain HTML forms, server-rendered, every value escaped.

use std::fmt::Write as _;
use std::sync::Arc;

use agentprocess_auth::oidc::Callback;
use agentprocess_auth::signin::{PendingSignIn, Purpose, SignupForm};
use agentprocess_auth::{Identity, SignupPolicy};
use axum::Router;
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use tower_sessions::Session;

use crate::errors::ApiError;
use crate::session::{
    ClientAddress, Web, address, check_csrf, check_form_csrf, form_token, sign_in_session, signed_in,
};

/// The largest form the sign-up, sign-in and account pages read.
const FORM_BYTES: usize = 16 * 1024;

/// The session key of a sign-in on its way through the provider.
const PENDING: &str = "pendingSignIn";

pub(crate) fn routes(web: Arc<Web>) -> Router {
    Router::new()
        .route("/signup", get(signup_form).post(signup))
        .route("/login", get(login).post(login_submit))
        .route("/auth/callback", get(callback))
        .route("/logout", axum::routing::post(logout))
        .route("/dev/sign-in", get(dev_form).post(dev_sign_in))
        // A few short fields each: nothing a stranger sends here is read past this.
        .layer(axum::extract::DefaultBodyLimit::max(FORM_BYTES))
        .with_state(web)
}

/// Escapes text for HTML.
pub(crate) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(character),
        }
    }
    escaped
}

/// A sign-in page, on the app's narrow layout.
pub(crate) fn page(status: StatusCode, title: &str, body: &str) -> Response {
    crate::app::layout::narrow_page(status, title, maud::PreEscaped(body.to_owned()))
}

/// A refusal on a sign-in page. Its message is the sentence: what sign-in refuses is
/// written for the person signing in (`… is not a member of Acme: ask an admin to
/// invite you`), and the page has no other context to say it in.
pub(crate) fn problems(error: &ApiError) -> String {
    let sentence = crate::app::refusals::sentence(error.message());
    crate::app::refusals::shown_as(error.tool_error(), &sentence).into_string()
}

fn field(label: &str, name: &str, value: &str, kind: &str, hint: &str) -> String {
    format!(
        "<label for=\"{name}\">{label}</label>{hint}<input id=\"{name}\" name=\"{name}\" type=\"{kind}\" value=\"{value}\">",
        label = escape(label),
        value = escape(value),
        hint = if hint.is_empty() {
            String::new()
        } else {
            format!("<small>{}</small>", escape(&crate::app::refusals::sentence(hint)))
        }
    )
}

#[derive(Debug, Default, Deserialize)]
struct SignupFields {
    #[serde(flatten)]
    form: SignupForm,
    #[serde(default)]
    csrf: String,
}

async fn signup_page(
    web: &Web,
    session: &Session,
    headers: &HeaderMap,
    fields: &SignupForm,
    error: Option<&ApiError>,
) -> Response {
    let policy = web.auth.settings().signup;
    if policy == SignupPolicy::Closed {
        return page(
            StatusCode::FORBIDDEN,
            "Sign-up is closed",
            "<p>Organizations on this server are created by its operators.</p>",
        );
    }
    let form = match form_token(web, session, headers).await {
        Ok(form) => form,
        Err(error) => return error.into_response(),
    };
    let csrf = form.token.clone();
    let redirect = web.auth.oidc().redirect_uri();
    let mut body = error.map(problems).unwrap_or_default();
    let _ = write!(
        body,
        "<p>Register this server as a web application at your identity provider, with the \
         redirect URI <code>{redirect}</code>, the scopes <code>openid email profile</code>, and \
         authorization code with PKCE. You become the organization's first admin when your sign-in \
         there succeeds; nothing is created before.</p><form method=\"post\" action=\"/signup\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{name}{slug}{issuer}{client}{secret}{code}\
         <button type=\"submit\" class=\"primary\">Sign up and sign in</button></form>",
        redirect = escape(redirect),
        csrf = escape(&csrf),
        name = field("Organization name", "name", &fields.name, "text", ""),
        slug = field(
            "Slug",
            "slug",
            &fields.slug,
            "text",
            "lowercase letters, digits and dashes; people sign in with it"
        ),
        issuer = field(
            "Issuer URL",
            "issuer",
            &fields.issuer,
            "url",
            "for example https://yourcompany.okta.com"
        ),
        client = field("Client ID", "clientId", &fields.client_id, "text", ""),
        secret = field(
            "Client secret",
            "clientSecret",
            "",
            "password",
            "leave empty for a public client (PKCE only); stored encrypted, never shown again"
        ),
        code = if policy == SignupPolicy::Invite {
            field(
                "Sign-up code",
                "code",
                "",
                "password",
                "sign-up on this server is by invitation",
            )
        } else {
            String::new()
        },
    );
    let status = if error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    form.set_on(page(status, "Sign up your organization", &body))
}

async fn signup_form(State(web): State<Arc<Web>>, session: Session, headers: HeaderMap) -> Response {
    signup_page(&web, &session, &headers, &SignupForm::default(), None).await
}

async fn signup(
    State(web): State<Arc<Web>>,
    session: Session,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(fields): Form<SignupFields>,
) -> Response {
    if let Err(error) = check_form_csrf(&web, &headers, &session, &fields.csrf).await {
        return signup_page(&web, &session, &headers, &fields.form, Some(&error)).await;
    }
    // A sign-up always tries its provider first: that is how its form reports a
    // provider that refuses it. Only the per-address limit holds it back.
    if let Err(error) = started_from(&web, address.as_deref()) {
        let page = signup_page(&web, &session, &headers, &fields.form, Some(&error)).await;
        return error.with_retry_after(page);
    }
    match web.auth.begin_signup(&fields.form).await {
        Ok((url, pending)) => to_provider(&session, &url, pending, web.now()).await,
        Err(error) => signup_page(&web, &session, &headers, &fields.form, Some(&ApiError::from(error))).await,
    }
}

async fn to_provider(session: &Session, url: &str, mut pending: PendingSignIn, now: jiff::Timestamp) -> Response {
    pending.started_at = now.as_millisecond();
    match session.insert(PENDING, &pending).await {
        Ok(()) => Redirect::to(url).into_response(),
        Err(error) => ApiError::session(error).into_response(),
    }
}

#[derive(Debug, Default, Deserialize)]
struct LoginQuery {
    /// An organization's slug, filled in for the person.
    org: Option<String>,
    /// Present when the person must sign in again at the provider (a decision needs
    /// a recent sign-in).
    fresh: Option<String>,
}

/// The sign-in form as sent (or as a link fills it in).
#[derive(Debug, Default, Deserialize)]
struct LoginFields {
    #[serde(default)]
    who: String,
    #[serde(default)]
    csrf: String,
    /// `1` for a sign-in that must be fresh at the provider.
    #[serde(default)]
    fresh: String,
    /// `1` once the person confirmed that this sign-in ends the one they are in.
    #[serde(default)]
    switch: String,
}

/// What the sign-in page says above its form.
enum LoginNotice<'a> {
    None,
    Refused(&'a ApiError),
    /// The person is signed in to another organization; continuing ends that session.
    Switching {
        current: &'a str,
    },
}

/// The sign-in page. A GET only shows it (a link may fill in the organization);
/// nothing starts until the person presses the button, which carries the page's
/// CSRF token.
async fn login_page(
    web: &Web,
    session: &Session,
    headers: &HeaderMap,
    fields: &LoginFields,
    notice: LoginNotice<'_>,
) -> Response {
    let form = match form_token(web, session, headers).await {
        Ok(form) => form,
        Err(error) => return error.into_response(),
    };
    let csrf = form.token.clone();
    let fresh = fields.fresh == "1";
    let mut body = match &notice {
        LoginNotice::None => String::new(),
        LoginNotice::Refused(error) => problems(error),
        LoginNotice::Switching { current } => format!(
            "<div class=\"notice\" role=\"alert\"><p>You are signed in to <strong>{current}</strong>. Signing \
             in to <strong>{who}</strong> signs you out of it first. If you did not mean to sign in to \
             {who}, close this page.</p></div>",
            current = escape(current),
            who = escape(fields.who.trim()),
        ),
    };
    if fresh {
        body.push_str("<p>Sign in again at your identity provider to go on: a decision needs a recent sign-in.</p>");
    }
    let switching = matches!(notice, LoginNotice::Switching { .. });
    let _ = write!(
        body,
        "<form method=\"post\" action=\"/login\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{who}{fresh}{switch}\
         <button type=\"submit\" class=\"primary\">{button}</button></form>\
         <p><a href=\"/signup\">Sign up an organization</a></p>",
        csrf = escape(&csrf),
        who = field(
            "Organization or work email",
            "who",
            &fields.who,
            "text",
            "your organization's slug, or an email of a domain it has verified"
        ),
        fresh = if fresh {
            "<input type=\"hidden\" name=\"fresh\" value=\"1\">"
        } else {
            ""
        },
        switch = if switching {
            "<input type=\"hidden\" name=\"switch\" value=\"1\">"
        } else {
            ""
        },
        button = if switching {
            "Sign out and continue to the identity provider"
        } else {
            "Continue to your identity provider"
        },
    );
    if web.dev_org.is_some() {
        body.push_str("<p class=\"dev\"><a href=\"/dev/sign-in\">Development sign-in</a> (no identity provider; never on a real deployment)</p>");
    }
    let status = match notice {
        // A refusal of the form is 400 whatever its code, as the sign-up page's; too
        // many sign-ins is 429.
        LoginNotice::Refused(error) if error.status() == StatusCode::TOO_MANY_REQUESTS => error.status(),
        LoginNotice::Refused(_) => StatusCode::BAD_REQUEST,
        LoginNotice::Switching { .. } => StatusCode::CONFLICT,
        LoginNotice::None => StatusCode::OK,
    };
    form.set_on(page(status, "Sign in", &body))
}

async fn login(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    let fields = LoginFields {
        who: query.org.unwrap_or_default(),
        fresh: if query.fresh.is_some() { "1" } else { "" }.to_owned(),
        ..LoginFields::default()
    };
    login_page(&web, &session, &headers, &fields, LoginNotice::None).await
}

/// A sign-in's (or sign-up's) start from `address`, refused when that address started
/// too many lately: each sends the server to a provider.
fn started_from(web: &Web, address: Option<&str>) -> Result<(), ApiError> {
    web.limits
        .sign_ins_by_address
        .admit(address.unwrap_or_default())
        .map_err(|seconds| {
            ApiError::too_many(
                format!("too many sign-ins were started from here; try again in {seconds} s"),
                seconds,
            )
        })
}

/// Whether the server may try a sign-in's authorization request itself first (its
/// pre-flight), within the organization's budget of them. Past that budget the person
/// still goes on to the provider: nobody can lock an organization out of signing in by
/// spending its budget; the provider just hears no more from the server.
fn may_preflight(web: &Web, who: &str) -> bool {
    let who = agentprocess_auth::secrets::sha256_hex(who.trim().to_ascii_lowercase().as_bytes());
    web.limits.sign_ins_by_org.admit(&who).is_ok()
}

async fn login_submit(
    State(web): State<Arc<Web>>,
    session: Session,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(fields): Form<LoginFields>,
) -> Response {
    if let Err(error) = check_form_csrf(&web, &headers, &session, &fields.csrf).await {
        return login_page(&web, &session, &headers, &fields, LoginNotice::Refused(&error)).await;
    }
    if let Err(error) = started_from(&web, address.as_deref()) {
        let page = login_page(&web, &session, &headers, &fields, LoginNotice::Refused(&error)).await;
        return error.with_retry_after(page);
    }
    let preflight = may_preflight(&web, &fields.who);
    let current = match signed_in(&web, &session).await {
        Ok(current) => current,
        Err(error) => return error.into_response(),
    };
    let (url, pending) = match web.auth.begin_signin(&fields.who, fields.fresh == "1", preflight).await {
        Ok(started) => started,
        Err(error) => {
            return login_page(
                &web,
                &session,
                &headers,
                &fields,
                LoginNotice::Refused(&ApiError::from(error)),
            )
            .await;
        }
    };
    // A session is never swapped for another organization's behind the person's back.
    if let Some(current) = current
        && fields.switch != "1"
        && !matches!(&pending.purpose, Purpose::SignIn { org } if *org == current.org)
    {
        let name = match web.auth.organization(&current.org).await {
            Ok(organization) => organization.name,
            Err(_) => current.org.clone(),
        };
        return login_page(
            &web,
            &session,
            &headers,
            &fields,
            LoginNotice::Switching { current: &name },
        )
        .await;
    }
    to_provider(&session, &url, pending, web.now()).await
}

async fn callback(State(web): State<Arc<Web>>, session: Session, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let callback: Callback = Query::try_from_uri(&parts.uri)
        .map(|Query(query)| query)
        .unwrap_or_default();
    // Taken out before anything else: a callback is answered once, so a replayed one
    // (same code, state and nonce) finds nothing to finish.
    let pending = match session.remove::<PendingSignIn>(PENDING).await {
        Ok(pending) => pending,
        Err(error) => return ApiError::session(error).into_response(),
    };
    let Some(pending) = pending else {
        return failed(&ApiError::forbidden(
            "no sign-in is under way in this browser (it finished already, or it began elsewhere): start again",
        ));
    };
    if web.now().as_millisecond().saturating_sub(pending.started_at) > PENDING_MILLIS {
        return failed(&ApiError::forbidden(
            "the sign-in took longer than 10 minutes at the identity provider: start again",
        ));
    }
    match web.auth.finish(&pending, &callback, address(&parts), web.now()).await {
        Ok(person) => signed_in_to(&web, &session, &parts.headers, &person.identity).await,
        Err(error) => failed(&ApiError::from(error)),
    }
}

/// How long a sign-in may stay at the provider.
const PENDING_MILLIS: i64 = 10 * 60 * 1000;

/// Signs `identity` in with `session` and sends them on: back to the page that sent
/// them to sign in (its cookie then forgotten), or their inbox.
async fn signed_in_to(web: &Web, session: &Session, headers: &HeaderMap, identity: &Identity) -> Response {
    let back = web.visitors.returning_to(headers);
    match sign_in_session(session, identity, web.now(), back).await {
        Ok(next) => {
            let mut response = Redirect::to(&next).into_response();
            if let Some(forget) = web.visitors.returned() {
                response.headers_mut().append(header::SET_COOKIE, forget);
            }
            response
        }
        Err(error) => error.into_response(),
    }
}

fn failed(error: &ApiError) -> Response {
    let body = format!("{}<p><a href=\"/login\">Start again</a></p>", problems(error));
    page(StatusCode::FORBIDDEN, "Sign-in failed", &body)
}

#[derive(Debug, Deserialize)]
struct CsrfOnly {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    identity: String,
}

async fn logout(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    Form(fields): Form<CsrfOnly>,
) -> Response {
    if let Err(error) = check_csrf(&headers, &web.origin, &session, Some(&fields.csrf)).await {
        return error.into_response();
    }
    match session.flush().await {
        Ok(()) => Redirect::to("/login").into_response(),
        Err(error) => ApiError::session(error).into_response(),
    }
}

async fn dev_people(web: &Web) -> Result<Vec<Identity>, Response> {
    let Some(org) = &web.dev_org else {
        return Err(ApiError::not_found("the development sign-in is off").into_response());
    };
    web.auth
        .members(org)
        .await
        .map_err(|error| ApiError::from(error).into_response())
}

async fn dev_form(State(web): State<Arc<Web>>, session: Session, headers: HeaderMap) -> Response {
    let people = match dev_people(&web).await {
        Ok(people) => people,
        Err(response) => return response,
    };
    let form = match form_token(&web, &session, &headers).await {
        Ok(form) => form,
        Err(error) => return error.into_response(),
    };
    let csrf = form.token.clone();
    let mut body = String::from(
        "<p class=\"dev\">Development sign-in: no identity provider is asked. This page exists only \
         on servers started for development.</p>",
    );
    for person in people.iter().filter(|person| person.deactivated_at.is_none()) {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/dev/sign-in\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <input type=\"hidden\" name=\"identity\" value=\"{id}\"><button type=\"submit\">Sign in as {person} ({role})</button></form>",
            csrf = escape(&csrf),
            id = escape(&person.id),
            person = escape(person.person.as_deref().unwrap_or(&person.id)),
            role = person.role.map_or("agent", agentprocess_auth::Role::as_str),
        );
    }
    form.set_on(page(StatusCode::OK, "Development sign-in", &body))
}

async fn dev_sign_in(
    State(web): State<Arc<Web>>,
    session: Session,
    headers: HeaderMap,
    Form(fields): Form<CsrfOnly>,
) -> Response {
    let people = match dev_people(&web).await {
        Ok(people) => people,
        Err(response) => return response,
    };
    if let Err(error) = check_form_csrf(&web, &headers, &session, &fields.csrf).await {
        return error.into_response();
    }
    let Some(person) = people
        .into_iter()
        .find(|person| person.id == fields.identity && person.deactivated_at.is_none())
    else {
        return ApiError::not_found(format!("there is no development person {:?}", fields.identity)).into_response();
    };
    tracing::warn!(identity = %person.id, "development sign-in used");
    signed_in_to(&web, &session, &headers, &person).await
}
