//! People's sign-in from MCP clients: the authorization code grant with PKCE S256
//! (OAuth 2.1), consent, refresh tokens that rotate on every use, revocation (RFC
//! 7009) and introspection (RFC 7662).
//!
//! A person's consent is a grant. Its authorization code, every refresh token and
//! every access token belong to it (the access tokens name it in `created_by`), so
//! when anything is replayed (a used code, a refresh token used past the grace window)
//! the grant is revoked and all of them stop working.

use agentprocess_store::{
    DirectoryTx as _, Grant, GrantsTx as _, Identity, IdentityKind, RefreshToken, Store, StoreTx, Taken,
};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::client_auth::Client;
use crate::clients::{GrantError, GrantErrorOr, Issued, check_resource, granted_scope, issue_access_token};
use crate::people_clients::{DECIDE_SCOPE, PeopleClient, serves};
use crate::secrets::{new_id, new_token, same, sha256_hex};
use crate::{Auth, Error, millis, redirects};
use agentprocess_store::Directory;
use agentprocess_store::Grants;
use agentprocess_store::SqlTx;

/// How an authorization code begins.
pub const CODE_PREFIX: &str = "apac_";
/// How a refresh token begins.
pub const REFRESH_TOKEN_PREFIX: &str = "aprt_";
/// How long an authorization code may wait to be exchanged (milliseconds).
pub const CODE_MILLIS: i64 = 60_000;
/// How long a refresh token lives unused (milliseconds): 30 days.
pub const REFRESH_TOKEN_MILLIS: i64 = 30 * 86_400_000;
/// A refresh token used again within this long after its first use is refused
/// without ending the grant: a client that lost the answer to its refresh, or that
/// refreshed twice at once, is not signed out (milliseconds).
pub const REFRESH_REUSE_GRACE_MILLIS: i64 = 10_000;

/// The authorization request's parameters (RFC 6749 §4.1.1, RFC 7636, RFC 8707).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuthorizationRequest {
    /// `response_type`: `code`.
    pub response_type: Option<String>,
    /// `client_id`.
    pub client_id: Option<String>,
    /// `redirect_uri`.
    pub redirect_uri: Option<String>,
    /// `state`, handed back.
    pub state: Option<String>,
    /// `code_challenge`.
    pub code_challenge: Option<String>,
    /// `code_challenge_method`: `S256`.
    pub code_challenge_method: Option<String>,
    /// `scope`.
    pub scope: Option<String>,
    /// `resource`.
    pub resource: Option<String>,
}

/// What an `authorization_code` token request sends.
#[derive(Debug, Clone, Copy)]
pub struct CodeExchange<'a> {
    /// `code`.
    pub code: &'a str,
    /// `redirect_uri`.
    pub redirect_uri: Option<&'a str>,
    /// `code_verifier`.
    pub code_verifier: Option<&'a str>,
    /// `resource`.
    pub resource: Option<&'a str>,
}

/// A checked authorization request, waiting for the person's answer (kept in their
/// session between the consent page and its form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consentable {
    /// `client_id`.
    pub client_id: String,
    /// The client's name, when it gave one.
    pub client_name: Option<String>,
    /// Where the answer goes.
    pub redirect_uri: String,
    /// Whether the request named `redirect_uri` (the code exchange must then name it
    /// too, RFC 6749 §4.1.3) rather than leaving it to the one registered.
    #[serde(default = "named")]
    pub redirect_uri_named: bool,
    /// `state`.
    pub state: Option<String>,
    /// The PKCE S256 challenge.
    pub code_challenge: String,
    /// The scopes to grant, space-separated.
    pub scope: String,
    /// Scopes asked for that this client can never hold (`process:decide`).
    pub withheld: Vec<String>,
    /// The resource.
    pub resource: String,
    /// Whether every redirect of the client is on the person's own machine.
    pub only_loopback: bool,
}

/// A consent kept before the field existed named its redirect URI, as far as anyone
/// can tell: the exchange must name it.
fn named() -> bool {
    true
}

/// Why an authorization request is not answered with a code.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or its redirect URI cannot be trusted: the person is told, and
    /// nothing is sent to the redirect URI (RFC 6749 §4.1.2.1).
    Shown(String),
    /// Sent back to the client at its redirect URI.
    Redirected {
        /// The verified redirect URI.
        redirect_uri: String,
        /// The request's `state`.
        state: Option<String>,
        /// The error.
        error: GrantError,
    },
    /// The server failed.
    Failed(Error),
}

impl From<agentprocess_store::Error> for AuthorizeError {
    fn from(error: agentprocess_store::Error) -> Self {
        Self::Failed(error.into())
    }
}

fn failed(error: agentprocess_store::Error) -> GrantErrorOr {
    GrantErrorOr::Failed(error.into())
}

/// What introspection tells about a token (RFC 7662 §2.2).
pub type Introspection = Value;

impl Auth {
    /// Checks an authorization request: the client and redirect URI first (problems
    /// there are shown, never redirected), then the rest (sent back to the client).
    pub async fn check_authorization(
        &self,
        asked: &AuthorizationRequest,
        mcp_resource: &str,
        now: jiff::Timestamp,
    ) -> Result<Consentable, AuthorizeError> {
        let Some(client_id) = asked.client_id.as_deref().filter(|id| !id.is_empty()) else {
            return Err(AuthorizeError::Shown(
                "the request names no client (client_id)".to_owned(),
            ));
        };
        let client = match self.people_client(client_id, now).await {
            Ok(Some(client)) => client,
            Ok(None) => {
                return Err(AuthorizeError::Shown(format!(
                    "the client {client_id:?} is not known here (registrations that were never used expire after a day)"
                )));
            }
            Err(GrantErrorOr::Refused(error)) => return Err(AuthorizeError::Shown(error.description)),
            Err(GrantErrorOr::Failed(error)) => return Err(AuthorizeError::Failed(error)),
        };
        let redirect_uri =
            redirects::matching(&client.redirect_uris, asked.redirect_uri.as_deref()).map_err(AuthorizeError::Shown)?;
        let refuse = |error: &'static str, description: String| AuthorizeError::Redirected {
            redirect_uri: redirect_uri.clone(),
            state: asked.state.clone(),
            error: GrantError::new(error, description),
        };
        match asked.response_type.as_deref() {
            Some("code") => {}
            Some(other) => {
                return Err(refuse(
                    "unsupported_response_type",
                    format!("response_type {other:?} is not served; use code"),
                ));
            }
            None => return Err(refuse("invalid_request", "response_type is required (code)".to_owned())),
        }
        let Some(challenge) = asked.code_challenge.as_deref() else {
            return Err(refuse(
                "invalid_request",
                "code_challenge is required: PKCE with S256".to_owned(),
            ));
        };
        match asked.code_challenge_method.as_deref() {
            Some("S256") => {}
            Some(other) => {
                return Err(refuse(
                    "invalid_request",
                    format!("code_challenge_method {other:?} is not accepted; use S256"),
                ));
            }
            None => {
                return Err(refuse(
                    "invalid_request",
                    "code_challenge_method is required and must be S256 (plain is not accepted)".to_owned(),
                ));
            }
        }
        if challenge.len() != 43 || !challenge.bytes().all(is_base64url) {
            return Err(refuse(
                "invalid_request",
                "code_challenge must be the 43-character base64url SHA-256 of the verifier".to_owned(),
            ));
        }
        if let Err(error) = check_resource(asked.resource.as_deref(), mcp_resource) {
            return Err(refuse(error.error, error.description));
        }
        let grantable = client.grantable();
        let withheld: Vec<String> = asked
            .scope
            .iter()
            .flat_map(|scope| scope.split_ascii_whitespace())
            .filter(|name| *name == DECIDE_SCOPE && !grantable.contains(name))
            .map(str::to_owned)
            .collect();
        let requested: Option<String> = asked.scope.as_deref().map(|scope| {
            scope
                .split_ascii_whitespace()
                .filter(|name| *name != DECIDE_SCOPE || grantable.contains(name))
                .collect::<Vec<_>>()
                .join(" ")
        });
        let scope = granted_scope(requested.as_deref(), &grantable, "a person's token through this client")
            .map_err(|error| refuse(error.error, error.description))?;
        Ok(Consentable {
            client_id: client.id.clone(),
            client_name: client.name.clone(),
            redirect_uri: redirect_uri.clone(),
            redirect_uri_named: asked.redirect_uri.is_some(),
            state: asked.state.clone(),
            code_challenge: challenge.to_owned(),
            scope,
            withheld,
            resource: mcp_resource.to_owned(),
            only_loopback: redirects::all_loopback(&client.redirect_uris),
        })
    }

    /// The person said yes: a grant, and the authorization code that opens it.
    pub async fn consent(
        &self,
        consentable: &Consentable,
        person: &Identity,
        actor: &Actor,
        now: jiff::Timestamp,
    ) -> Result<String, AuthorizeError> {
        let client = match self.people_client(&consentable.client_id, now).await {
            Ok(Some(client)) => client,
            Ok(None) => return Err(AuthorizeError::Shown("the client is no longer known here".to_owned())),
            Err(GrantErrorOr::Refused(error)) => return Err(AuthorizeError::Shown(error.description)),
            Err(GrantErrorOr::Failed(error)) => return Err(AuthorizeError::Failed(error)),
        };
        if person.kind != IdentityKind::Person || !serves(&client, &person.org) {
            return Err(AuthorizeError::Redirected {
                redirect_uri: consentable.redirect_uri.clone(),
                state: consentable.state.clone(),
                error: GrantError::new(
                    "access_denied",
                    "this client belongs to another organization and cannot act for you",
                ),
            });
        }
        let at = millis(now);
        let grant = Grant {
            id: new_id("grt_"),
            org: person.org.clone(),
            identity: person.id.clone(),
            client_id: client.id.clone(),
            scope: consentable.scope.clone(),
            resource: consentable.resource.clone(),
            created_at: at,
            revoked_at: None,
        };
        let code = new_token(CODE_PREFIX);
        let mut tx = self.store.begin().await?;
        tx.add_grant(&grant).await?;
        tx.add_code(&agentprocess_store::AuthorizationCode {
            code_hash: sha256_hex(code.as_bytes()),
            grant_id: grant.id.clone(),
            // Empty when the request left it to the one registered: then the exchange
            // need not name it.
            redirect_uri: if consentable.redirect_uri_named {
                consentable.redirect_uri.clone()
            } else {
                String::new()
            },
            code_challenge: consentable.code_challenge.clone(),
            expires_at: at.saturating_add(CODE_MILLIS),
            used_at: None,
        })
        .await?;
        audit::append(
            &mut tx,
            &person.org,
            actor,
            AuditEvent::OauthConsented,
            Some(&client.id),
            detail([
                ("grant", json!(grant.id)),
                ("scope", json!(grant.scope)),
                ("redirectHost", json!(redirects::host_of(&consentable.redirect_uri))),
            ]),
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(code)
    }

    /// The `authorization_code` grant: the code, once, with the verifier of its
    /// challenge, gives an access token and the grant's first refresh token.
    pub async fn exchange_code(
        &self,
        client: &PeopleClient,
        asked: CodeExchange<'_>,
        lifetime: u64,
        now: jiff::Timestamp,
    ) -> Result<Issued, GrantErrorOr> {
        let CodeExchange {
            code,
            redirect_uri,
            code_verifier: verifier,
            resource,
        } = asked;
        let at = millis(now);
        let mut tx = self.store.begin().await.map_err(failed)?;
        let code = match tx.take_code(&sha256_hex(code.as_bytes()), at).await.map_err(failed)? {
            Taken::Fresh(code) => code,
            Taken::Used(code) => {
                // A code is used once; a second use means it leaked, so what the first
                // use gave stops working too (RFC 6749 §4.1.2).
                tx.revoke_grant(&code.grant_id, at).await.map_err(failed)?;
                tx.commit().await.map_err(failed)?;
                return Err(GrantError::new(
                    "invalid_grant",
                    "the authorization code was used already; every token it gave is revoked",
                )
                .into());
            }
            Taken::Unknown => {
                return Err(GrantError::new("invalid_grant", "the authorization code is not known").into());
            }
        };
        let grant = tx.grant_in_tx(&code.grant_id).await.map_err(failed)?;
        let mut issues = Vec::new();
        let grant = match grant {
            Some(grant) if grant.revoked_at.is_none() && grant.client_id == client.id => grant,
            _ => {
                return Err(
                    GrantError::new("invalid_grant", "the authorization code was not issued to this client").into(),
                );
            }
        };
        if code.expires_at <= at {
            issues.push("the authorization code has expired; sign in again".to_owned());
        }
        match (code.redirect_uri.as_str(), redirect_uri) {
            ("", Some(uri)) if !client.redirect_uris.iter().any(|known| known == uri) => {
                issues.push("redirect_uri is not one the client registered".to_owned());
            }
            ("", _) => {}
            (_, None) => issues
                .push("redirect_uri is required: the authorization request named one (RFC 6749 §4.1.3)".to_owned()),
            (named, Some(uri)) if uri != named => {
                issues.push("redirect_uri differs from the authorization request's".to_owned());
            }
            _ => {}
        }
        match verifier {
            None => issues.push("code_verifier is required (PKCE)".to_owned()),
            Some(verifier) if !(43..=128).contains(&verifier.len()) || !verifier.bytes().all(is_unreserved) => {
                issues.push("code_verifier must be 43 to 128 unreserved characters".to_owned());
            }
            Some(verifier) if !same(&s256(verifier), &code.code_challenge) => {
                issues.push("code_verifier does not match the code_challenge".to_owned());
            }
            Some(_) => {}
        }
        if resource.is_some_and(|resource| resource.trim_end_matches('/') != grant.resource) {
            return Err(GrantError::new(
                "invalid_target",
                format!("the grant is for {}; ask for that resource", grant.resource),
            )
            .into());
        }
        if !issues.is_empty() {
            return Err(GrantError::new("invalid_grant", issues.join("; ")).into());
        }
        let issued = self
            .issue_for_grant(&mut tx, &grant, &grant.scope, lifetime, at)
            .await?;
        tx.mark_app_used(&client.id, at).await.map_err(failed)?;
        audit_issued(&mut tx, &grant, "authorization_code", at)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(issued)
    }

    /// The `refresh_token` grant: the token is used once and replaced; a token used
    /// again past the grace window ends the whole grant.
    pub async fn refresh(
        &self,
        client: &PeopleClient,
        refresh_token: &str,
        scope: Option<&str>,
        resource: Option<&str>,
        lifetime: u64,
        now: jiff::Timestamp,
    ) -> Result<Issued, GrantErrorOr> {
        let at = millis(now);
        let mut tx = self.store.begin().await.map_err(failed)?;
        let token = match tx
            .take_refresh_token(&sha256_hex(refresh_token.as_bytes()), at)
            .await
            .map_err(failed)?
        {
            Taken::Fresh(token) => token,
            Taken::Used(token) => return Err(self.reused(tx, &token, at).await),
            Taken::Unknown => return Err(GrantError::new("invalid_grant", "the refresh token is not known").into()),
        };
        let grant = match tx.grant_in_tx(&token.grant_id).await.map_err(failed)? {
            Some(grant) if grant.client_id == client.id => grant,
            _ => {
                return Err(GrantError::new("invalid_grant", "the refresh token was not issued to this client").into());
            }
        };
        if grant.revoked_at.is_some() {
            return Err(GrantError::new("invalid_grant", "the grant was revoked; sign in again").into());
        }
        if token.expires_at <= at {
            return Err(GrantError::new("invalid_grant", "the refresh token has expired; sign in again").into());
        }
        if resource.is_some_and(|resource| resource.trim_end_matches('/') != grant.resource) {
            return Err(GrantError::new(
                "invalid_target",
                format!(
                    "the grant is for {}; a refresh keeps the grant's resource",
                    grant.resource
                ),
            )
            .into());
        }
        let grantable: Vec<&str> = grant.scope.split_ascii_whitespace().collect();
        let scope = granted_scope(scope, &grantable, "a refresh of this grant").map_err(GrantErrorOr::Refused)?;
        let issued = self.issue_for_grant(&mut tx, &grant, &scope, lifetime, at).await?;
        audit_issued(&mut tx, &grant, "refresh_token", at)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        Ok(issued)
    }

    /// A used refresh token came back: within the grace window it is only refused;
    /// later, the grant and everything of it is revoked.
    async fn reused(&self, mut tx: SqlTx, token: &RefreshToken, at: i64) -> GrantErrorOr {
        if at.saturating_sub(token.used_at.unwrap_or(at)) <= REFRESH_REUSE_GRACE_MILLIS {
            return GrantError::new(
                "invalid_grant",
                "the refresh token was used a moment ago; use the refresh token that answer gave",
            )
            .into();
        }
        let revoke = async {
            tx.revoke_grant(&token.grant_id, at).await?;
            tx.commit().await
        };
        if let Err(error) = revoke.await {
            return failed(error);
        }
        GrantError::new(
            "invalid_grant",
            "the refresh token was used already; every token of this sign-in is revoked: sign in again",
        )
        .into()
    }

    async fn issue_for_grant(
        &self,
        tx: &mut SqlTx,
        grant: &Grant,
        scope: &str,
        lifetime: u64,
        at: i64,
    ) -> Result<Issued, GrantErrorOr> {
        let person = tx
            .identity(&grant.org, &grant.identity)
            .await
            .map_err(failed)?
            .filter(|identity| identity.deactivated_at.is_none())
            .ok_or_else(|| GrantError::new("invalid_grant", "the person who signed in is deactivated"))?;
        let access_token = issue_access_token(tx, &person, scope, &grant.id, lifetime, at)
            .await
            .map_err(failed)?;
        let refresh_token = new_token(REFRESH_TOKEN_PREFIX);
        tx.add_refresh_token(&RefreshToken {
            token_hash: sha256_hex(refresh_token.as_bytes()),
            grant_id: grant.id.clone(),
            created_at: at,
            expires_at: at.saturating_add(REFRESH_TOKEN_MILLIS),
            used_at: None,
        })
        .await
        .map_err(failed)?;
        Ok(Issued {
            access_token,
            expires_in: lifetime,
            scope: scope.to_owned(),
            refresh_token: Some(refresh_token),
        })
    }

    /// Token revocation (RFC 7009): the authenticated client's own access token stops
    /// working, or, for a refresh token, the whole grant. A token that is unknown,
    /// revoked already or another client's is left as it is, and the answer is the
    /// same, so nothing is learnt about other tokens.
    pub async fn revoke(&self, client: &Client, token: &str, now: jiff::Timestamp) -> Result<(), GrantErrorOr> {
        let at = millis(now);
        let hash = sha256_hex(token.as_bytes());
        let revoked = if let Some(refresh) = self.store.refresh_token(&hash).await.map_err(failed)? {
            match self.store.grant(&refresh.grant_id).await.map_err(failed)? {
                Some(grant) if grant.client_id == client.id() => {
                    let mut tx = self.store.begin().await.map_err(failed)?;
                    tx.revoke_grant(&grant.id, at).await.map_err(failed)?;
                    Some((tx, grant.org, grant.identity, grant.id))
                }
                _ => None,
            }
        } else if let Some(row) = self.store.token_by_hash(&hash).await.map_err(failed)? {
            let owner = self.token_client(row.created_by.as_deref()).await?;
            if row.revoked_at.is_none() && owner.as_deref() == Some(client.id()) {
                let mut tx = self.store.begin().await.map_err(failed)?;
                tx.revoke_token(&row.org, &row.id, at).await.map_err(failed)?;
                Some((tx, row.org, row.identity, row.id))
            } else {
                None
            }
        } else {
            None
        };
        let Some((mut tx, org, identity, what)) = revoked else {
            return Ok(());
        };
        let actor = Actor {
            id: identity,
            address: None,
        };
        audit::append(
            &mut tx,
            &org,
            &actor,
            AuditEvent::OauthTokenRevoked,
            Some(client.id()),
            detail([("token", json!(what))]),
            at,
        )
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }

    /// The client an OAuth access token was issued to: its `created_by` is the agent
    /// client itself, or the grant of a people's client.
    async fn token_client(&self, created_by: Option<&str>) -> Result<Option<String>, GrantErrorOr> {
        match created_by {
            Some(grant) if grant.starts_with("grt_") => Ok(self
                .store
                .grant(grant)
                .await
                .map_err(failed)?
                .map(|grant| grant.client_id)),
            other => Ok(other.map(str::to_owned)),
        }
    }

    /// Token introspection (RFC 7662): what a token of the authenticated client is;
    /// `{"active": false}` for any other, unknown, expired or revoked one.
    pub async fn introspect(
        &self,
        client: &Client,
        token: &str,
        issuer: &str,
        now: jiff::Timestamp,
    ) -> Result<Introspection, GrantErrorOr> {
        let at = millis(now);
        let inactive = json!({ "active": false });
        let hash = sha256_hex(token.as_bytes());
        if let Some(refresh) = self.store.refresh_token(&hash).await.map_err(failed)? {
            let Some(grant) = self.store.grant(&refresh.grant_id).await.map_err(failed)? else {
                return Ok(inactive);
            };
            let live = grant.revoked_at.is_none() && refresh.used_at.is_none() && refresh.expires_at > at;
            if !live || grant.client_id != client.id() || !self.active(&grant.org, &grant.identity).await? {
                return Ok(inactive);
            }
            return Ok(json!({
                "active": true,
                "token_type": "refresh_token",
                "scope": grant.scope,
                "client_id": grant.client_id,
                "sub": grant.identity,
                "aud": grant.resource,
                "iss": issuer,
                "iat": refresh.created_at / 1000,
                "exp": refresh.expires_at / 1000,
            }));
        }
        let Some(row) = self.store.token_by_hash(&hash).await.map_err(failed)? else {
            return Ok(inactive);
        };
        let live = row.audience == agentprocess_store::Audience::Mcp
            && row.revoked_at.is_none()
            && row.expires_at.is_none_or(|expires| expires > at);
        let owner = self.token_client(row.created_by.as_deref()).await?;
        if !live || owner.as_deref() != Some(client.id()) || !self.active(&row.org, &row.identity).await? {
            return Ok(inactive);
        }
        Ok(json!({
            "active": true,
            "token_type": "Bearer",
            "scope": row.scope,
            "client_id": owner,
            "sub": row.identity,
            "aud": format!("{issuer}/mcp"),
            "iss": issuer,
            "iat": row.created_at / 1000,
            "exp": row.expires_at.map(|expires| expires / 1000),
        }))
    }

    async fn active(&self, org: &str, identity: &str) -> Result<bool, GrantErrorOr> {
        Ok(self
            .store
            .identity(org, identity)
            .await
            .map_err(failed)?
            .is_some_and(|identity| identity.deactivated_at.is_none()))
    }
}

async fn audit_issued<T: StoreTx>(
    tx: &mut T,
    grant: &Grant,
    how: &str,
    at: i64,
) -> Result<(), agentprocess_store::Error> {
    let actor = Actor {
        id: grant.identity.clone(),
        address: None,
    };
    audit::append(
        tx,
        &grant.org,
        &actor,
        AuditEvent::OauthTokenIssued,
        Some(&grant.client_id),
        detail([("scope", json!(grant.scope)), ("grant", json!(how))]),
        at,
    )
    .await
}

/// BASE64URL(SHA-256(verifier)), the S256 challenge (RFC 7636 §4.2).
pub fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn is_base64url(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_')
}

/// RFC 3986 unreserved characters, of which a PKCE verifier is made.
fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_is_rfc_7636s() {
        // RFC 7636 Appendix B.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
