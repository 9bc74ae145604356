//! The endpoints a client calls with its own authentication: the token endpoint,
//! revocation (RFC 7009) and introspection (RFC 7662).

use std::sync::Arc;

use agentprocess_auth::assertion::JWT_BEARER;
use agentprocess_auth::authorization::CodeExchange;
use agentprocess_auth::client_auth::{Client, Presented};
use agentprocess_auth::clients::{ClientCredentials, GrantError, Issued};
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

use super::{grant_failure, issuer, mcp_resource, no_store, refused};
use agentprocess_web::session::{ClientAddress, Web};

/// How a client authenticates, as any of these endpoints' forms carry it.
#[derive(Debug, Default, Deserialize)]
struct ClientFields {
    client_id: Option<String>,
    client_secret: Option<String>,
    client_assertion: Option<String>,
    client_assertion_type: Option<String>,
}

/// The token request's form (RFC 6749 §4.1.3, §4.4.2, §6; RFC 7636; RFC 8707).
#[derive(Debug, Deserialize)]
pub(super) struct TokenForm {
    grant_type: Option<String>,
    #[serde(flatten)]
    client: ClientFields,
    scope: Option<String>,
    resource: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
}

/// The revocation and introspection requests' form.
#[derive(Debug, Deserialize)]
pub(super) struct TokenAbout {
    token: Option<String>,
    // Accepted and not needed: the token itself says what it is.
    #[serde(rename = "token_type_hint")]
    _hint: Option<String>,
    #[serde(flatten)]
    client: ClientFields,
}

fn unreadable() -> Response {
    refused(&GrantError::new(
        "invalid_request",
        "send the request as application/x-www-form-urlencoded, each parameter once",
    ))
}

/// Authenticates the client of a request to `endpoint` (its path): the request's
/// form and headers, read once.
async fn client_of(web: &Web, headers: &HeaderMap, fields: &ClientFields, endpoint: &str) -> Result<Client, Response> {
    let presented = presented(headers, fields).map_err(|error| refused(&error))?;
    let issuer = issuer(&web.service.settings().public_url);
    let audiences = [issuer.to_owned(), format!("{issuer}{endpoint}")];
    web.auth
        .authenticate(&presented, &audiences, web.service.now())
        .await
        .map_err(grant_failure)
}

/// What the request presents to authenticate its client: HTTP Basic
/// (`client_secret_basic`), a secret in the form (`client_secret_post`), a JWT
/// (`private_key_jwt`), or only a `client_id` (a public client). One way only (RFC
/// 6749 §2.3).
fn presented(headers: &HeaderMap, fields: &ClientFields) -> Result<Presented, GrantError> {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Basic "))
        .map(basic_credentials);
    let ways = usize::from(basic.is_some())
        + usize::from(fields.client_secret.is_some())
        + usize::from(fields.client_assertion.is_some());
    if ways > 1 {
        return Err(GrantError::new(
            "invalid_request",
            "authenticate the client one way only: HTTP Basic, client_secret in the form, or client_assertion",
        ));
    }
    if let Some(basic) = basic {
        let Some((client_id, secret)) = basic else {
            return Err(GrantError::new(
                "invalid_client",
                "the Basic credentials are not client_id:client_secret",
            ));
        };
        if fields.client_id.as_ref().is_some_and(|id| *id != client_id) {
            return Err(GrantError::new(
                "invalid_request",
                "client_id in the form differs from the one of HTTP Basic",
            ));
        }
        return Ok(Presented::Secret {
            client_id,
            secret,
            basic: true,
        });
    }
    if let Some(assertion) = &fields.client_assertion {
        if fields.client_assertion_type.as_deref() != Some(JWT_BEARER) {
            return Err(GrantError::new(
                "invalid_request",
                format!("client_assertion_type must be {JWT_BEARER}"),
            ));
        }
        return Ok(Presented::Assertion {
            client_id: fields.client_id.clone(),
            assertion: assertion.clone(),
        });
    }
    match (&fields.client_id, &fields.client_secret) {
        (Some(client_id), Some(secret)) => Ok(Presented::Secret {
            client_id: client_id.clone(),
            secret: secret.clone(),
            basic: false,
        }),
        (Some(client_id), None) => Ok(Presented::Public {
            client_id: client_id.clone(),
        }),
        (None, _) => Err(GrantError::new(
            "invalid_client",
            "name the client: HTTP Basic (client_secret_basic), client_id and client_secret in the form \
             (client_secret_post), client_assertion (private_key_jwt), or client_id alone for a public client",
        )),
    }
}

/// The token endpoint. Failed requests are counted per network address and per client
/// from each address, and past the limit refused with 429 before any credential is
/// checked, so nobody guesses secrets, codes or refresh tokens at speed.
pub(super) async fn token(
    State(web): State<Arc<Web>>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Response {
    let address = address.unwrap_or_default();
    let client = form
        .as_ref()
        .ok()
        .and_then(|Form(form)| match presented(&headers, &form.client) {
            Ok(Presented::Secret { client_id, .. }) => Some(client_id),
            _ => form.client.client_id.clone(),
        })
        // Counted per client from one address, so nobody locks a client out for others
        // by failing in its name; hashed, so a long id costs the count no memory.
        .map(|id| agentprocess_auth::secrets::sha256_hex(format!("{id}\0{address}").as_bytes()));
    let limits = &web.limits;
    let waited = limits.token_failures_by_address.within(&address).and_then(|()| {
        client
            .as_deref()
            .map_or(Ok(()), |client| limits.token_failures_by_client.within(client))
    });
    if let Err(seconds) = waited {
        let mut response = refused(&GrantError::new(
            "invalid_request",
            format!("too many failed token requests from this address or for this client; try again in {seconds} s"),
        ));
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
        return response;
    }
    let response = answer_token(&web, &headers, form).await;
    if response.status().is_client_error() {
        // Counted whether or not the limit of the other key was reached.
        let _ = limits.token_failures_by_address.admit(&address);
        if let Some(client) = &client {
            let _ = limits.token_failures_by_client.admit(client);
        }
    }
    response
}

async fn answer_token(web: &Arc<Web>, headers: &HeaderMap, form: Result<Form<TokenForm>, FormRejection>) -> Response {
    let (web, headers) = (web.as_ref(), headers);
    let Ok(Form(form)) = form else {
        return unreadable();
    };
    let Some(grant_type) = form.grant_type.as_deref() else {
        return refused(&GrantError::new("invalid_request", "grant_type is required"));
    };
    if !matches!(
        grant_type,
        "authorization_code" | "refresh_token" | "client_credentials"
    ) {
        return refused(&GrantError::new(
            "unsupported_grant_type",
            format!("{grant_type:?} is not served; use authorization_code, refresh_token or client_credentials"),
        ));
    }
    let client = match client_of(web, headers, &form.client, "/oauth/token").await {
        Ok(client) => client,
        Err(response) => return response,
    };
    let public_url = &web.service.settings().public_url;
    let resource = mcp_resource(public_url);
    let lifetime = web.auth.settings().access_token_lifetime.as_secs();
    let now = web.service.now();
    let issued = match (grant_type, &client) {
        ("client_credentials", Client::Agent(agent_client)) => {
            let asked = ClientCredentials {
                scope: form.scope.as_deref(),
                resource: form.resource.as_deref(),
            };
            web.auth
                .client_credentials(agent_client, asked, &resource, lifetime, now)
                .await
        }
        ("authorization_code", Client::People(people_client)) => {
            let Some(code) = form.code.as_deref() else {
                return refused(&GrantError::new("invalid_request", "code is required"));
            };
            web.auth
                .exchange_code(
                    people_client,
                    CodeExchange {
                        code,
                        redirect_uri: form.redirect_uri.as_deref(),
                        code_verifier: form.code_verifier.as_deref(),
                        resource: form.resource.as_deref(),
                    },
                    lifetime,
                    now,
                )
                .await
        }
        ("refresh_token", Client::People(people_client)) => {
            let Some(refresh_token) = form.refresh_token.as_deref() else {
                return refused(&GrantError::new("invalid_request", "refresh_token is required"));
            };
            web.auth
                .refresh(
                    people_client,
                    refresh_token,
                    form.scope.as_deref(),
                    form.resource.as_deref(),
                    lifetime,
                    now,
                )
                .await
        }
        ("client_credentials", Client::People(_)) => {
            return refused(&GrantError::new(
                "unauthorized_client",
                "client_credentials is for agent clients, which an organization admin makes; this client signs people in",
            ));
        }
        (_, Client::Agent(_)) => {
            return refused(&GrantError::new(
                "unauthorized_client",
                "an agent client uses client_credentials only (it gets no refresh token: ask for a new access token)",
            ));
        }
        _ => return refused(&GrantError::new("unsupported_grant_type", "not served")),
    };
    match issued {
        Ok(issued) => issued_response(&issued),
        Err(failure) => grant_failure(failure),
    }
}

fn issued_response(issued: &Issued) -> Response {
    let mut body = json!({
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "scope": issued.scope,
    });
    if let Some(refresh_token) = &issued.refresh_token {
        body["refresh_token"] = json!(refresh_token);
    }
    no_store((StatusCode::OK, Json(body)).into_response())
}

/// The authenticated client of a request about one token, at `endpoint`, and the token.
async fn about(
    web: &Web,
    headers: &HeaderMap,
    form: Result<Form<TokenAbout>, FormRejection>,
    endpoint: &str,
) -> Result<(Client, String), Response> {
    let Ok(Form(form)) = form else {
        return Err(unreadable());
    };
    let client = client_of(web, headers, &form.client, endpoint).await?;
    match form.token.filter(|token| !token.is_empty()) {
        Some(token) => Ok((client, token)),
        None => Err(refused(&GrantError::new("invalid_request", "token is required"))),
    }
}

/// Token revocation (RFC 7009): 200 whether or not the token was the client's.
pub(super) async fn revoke(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    form: Result<Form<TokenAbout>, FormRejection>,
) -> Response {
    let (client, token) = match about(&web, &headers, form, "/oauth/revoke").await {
        Ok(about) => about,
        Err(response) => return response,
    };
    match web.auth.revoke(&client, &token, web.service.now()).await {
        Ok(()) => no_store(StatusCode::OK.into_response()),
        Err(failure) => grant_failure(failure),
    }
}

/// Token introspection (RFC 7662), for confidential clients about their own tokens.
pub(super) async fn introspect(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    form: Result<Form<TokenAbout>, FormRejection>,
) -> Response {
    let (client, token) = match about(&web, &headers, form, "/oauth/introspect").await {
        Ok(about) => about,
        Err(response) => return response,
    };
    if let Client::People(people_client) = &client
        && people_client.secret_hash.is_none()
    {
        return refused(&GrantError::new(
            "invalid_client",
            "introspection is for clients that authenticate (a secret or a signed assertion), not public ones",
        ));
    }
    let issuer = issuer(&web.service.settings().public_url);
    match web.auth.introspect(&client, &token, issuer, web.service.now()).await {
        Ok(answer) => no_store((StatusCode::OK, Json(answer)).into_response()),
        Err(failure) => grant_failure(failure),
    }
}

/// `client_id:client_secret` of HTTP Basic, each form-urlencoded (RFC 6749 §2.3.1).
fn basic_credentials(encoded: &str) -> Option<(String, String)> {
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((form_decode(id)?, form_decode(secret)?))
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn form_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = tail.get(..2)?;
                bytes.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            other => bytes.push(other),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_decoded() {
        let encoded = base64::engine::general_purpose::STANDARD.encode("apc_1%3Ax:s+e%2Bcret");
        assert_eq!(
            basic_credentials(&encoded),
            Some(("apc_1:x".to_owned(), "s e+cret".to_owned()))
        );
        assert_eq!(basic_credentials("not base64!"), None);
        let no_colon = base64::engine::general_purpose::STANDARD.encode("justone");
        assert_eq!(basic_credentials(&no_colon), None);
    }

    #[test]
    fn a_client_authenticates_one_way_only() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("a:b"))
                .parse()
                .expect("header"),
        );
        let both = ClientFields {
            client_secret: Some("b".to_owned()),
            ..ClientFields::default()
        };
        assert_eq!(
            presented(&headers, &both).expect_err("refused").error,
            "invalid_request"
        );
        let public = ClientFields {
            client_id: Some("apd_1".to_owned()),
            ..ClientFields::default()
        };
        assert_eq!(
            presented(&HeaderMap::new(), &public),
            Ok(Presented::Public {
                client_id: "apd_1".to_owned()
            })
        );
        let wrong_type = ClientFields {
            client_assertion: Some("x.y.z".to_owned()),
            client_assertion_type: Some("saml".to_owned()),
            ..ClientFields::default()
        };
        assert_eq!(
            presented(&HeaderMap::new(), &wrong_type).expect_err("refused").error,
            "invalid_request"
        );
        assert_eq!(
            presented(&HeaderMap::new(), &ClientFields::default())
                .expect_err("refused")
                .error,
            "invalid_client"
        );
    }
}
