//! The clients people use to reach `/mcp` with their own sign-in: registered by the
//! client (RFC 7591), made by an organization's admin, or named by a metadata
//! document URL. Whatever made it, the authorization and token endpoints see one
//! [`PeopleClient`].

use agentprocess_store::{GrantsTx as _, OAuthApp, Store, StoreTx};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::clients::{CLIENT_SECRET_PREFIX, GrantError, GrantErrorOr};
use crate::error::refuse_if_any;
use crate::idempotency::{Idempotent, remember};
use crate::metadata_documents::{self, MetadataDocuments};
use crate::secrets::{new_id, new_token, sha256_hex};
use crate::{Auth, Error, millis, redirects};
use agentprocess_store::Grants;

/// How the id of a client an admin made begins.
pub const APP_PREFIX: &str = "apa_";
/// How the id of a client that registered itself begins.
pub const REGISTERED_PREFIX: &str = "apd_";

/// The scopes a person's token may hold through any client.
pub const PERSON_SCOPES: [&str; 3] = ["process:work", "process:start", "process:operate"];
/// The scope only clients operated by people may carry.
pub const DECIDE_SCOPE: &str = "process:decide";

/// A registered client never used is removed after this long (milliseconds).
pub const UNUSED_REGISTRATION_MILLIS: i64 = 24 * 3_600_000;

/// What made a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeopleClientKind {
    /// It registered itself (RFC 7591).
    Registered,
    /// An organization's admin made it.
    Admin,
    /// Its `client_id` is the URL of its metadata document.
    MetadataDocument,
}

/// A client people use, as the authorization and token endpoints see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeopleClient {
    /// `client_id`.
    pub id: String,
    /// Its name, when it gave one.
    pub name: Option<String>,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// The only organization whose people may use it (an admin-made client).
    pub org: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub auth_method: String,
    /// SHA-256 hex of a confidential client's secret.
    pub secret_hash: Option<String>,
    /// Whether people, not agents, operate it (only then may it decide).
    pub people_operated: bool,
    /// What made it.
    pub kind: PeopleClientKind,
}

impl PeopleClient {
    /// The scopes a person may grant this client.
    pub fn grantable(&self) -> Vec<&'static str> {
        let mut scopes = PERSON_SCOPES.to_vec();
        if self.people_operated {
            scopes.insert(2, DECIDE_SCOPE);
        }
        scopes
    }

    fn of_app(app: OAuthApp) -> Self {
        let kind = if app.org.is_some() {
            PeopleClientKind::Admin
        } else {
            PeopleClientKind::Registered
        };
        Self {
            id: app.id,
            name: app.name,
            redirect_uris: app.redirect_uris,
            org: app.org,
            auth_method: app.auth_method,
            secret_hash: app.secret_hash,
            people_operated: app.people_operated,
            kind,
        }
    }
}

/// A registration request (RFC 7591 §2); other metadata is accepted and not kept.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Registration {
    /// `redirect_uris`.
    pub redirect_uris: Option<Vec<String>>,
    /// `token_endpoint_auth_method`: `none` (the default here), `client_secret_basic`
    /// or `client_secret_post`.
    pub token_endpoint_auth_method: Option<String>,
    /// `grant_types`: `authorization_code` and `refresh_token` only.
    pub grant_types: Option<Vec<String>>,
    /// `response_types`: `code` only.
    pub response_types: Option<Vec<String>>,
    /// `client_name`.
    pub client_name: Option<String>,
    /// `application_type` (OpenID Connect Registration): `web` or `native`.
    pub application_type: Option<String>,
    /// `scope`: what the client will ask for.
    pub scope: Option<String>,
}

/// A client registered: what the registration response says.
#[derive(Debug, Clone, Serialize)]
pub struct Registered {
    /// `client_id`.
    pub client_id: String,
    /// `client_id_issued_at`, seconds.
    pub client_id_issued_at: i64,
    /// `client_secret` of a confidential client, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_expires_at`: 0, it does not expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<i64>,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
    /// `token_endpoint_auth_method`.
    pub token_endpoint_auth_method: String,
    /// `grant_types`.
    pub grant_types: Vec<&'static str>,
    /// `response_types`.
    pub response_types: Vec<&'static str>,
    /// `application_type`.
    pub application_type: &'static str,
    /// `client_name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    /// `scope`: what it may be granted.
    pub scope: String,
}

/// A client an admin makes for the organization's people.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewApp {
    /// What people see on the consent page.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// Where it may send people back (exactly; a loopback one on any port).
    pub redirect_uris: Vec<String>,
    /// Whether it keeps a secret (a server-side app); public clients use PKCE alone.
    #[serde(default)]
    pub confidential: bool,
    /// Whether people, not agents, operate it: only then may its tokens decide.
    #[serde(default)]
    pub people_operated: bool,
    /// `web` or `native`; read from the redirect URIs when absent.
    #[serde(default)]
    pub application_type: Option<String>,
}

fn registration_error(error: &'static str, issues: &[String]) -> GrantError {
    GrantError::new(error, issues.join("; "))
}

impl Auth {
    /// The client `client_id` names, if it is one people may use; a metadata document
    /// that cannot be used is refused with the reason.
    pub async fn people_client(
        &self,
        client_id: &str,
        now: jiff::Timestamp,
    ) -> Result<Option<PeopleClient>, GrantErrorOr> {
        if metadata_documents::is_document_url(client_id) {
            let Some(documents) = self.documents() else {
                return Err(
                    GrantError::new("invalid_client", "this server does not fetch client metadata documents").into(),
                );
            };
            let document = documents
                .fetch(client_id)
                .await
                .map_err(|reason| GrantError::new("invalid_client", reason))?;
            return Ok(Some(PeopleClient {
                id: document.client_id,
                name: document.name,
                redirect_uris: document.redirect_uris,
                org: None,
                auth_method: "none".to_owned(),
                secret_hash: None,
                people_operated: false,
                kind: PeopleClientKind::MetadataDocument,
            }));
        }
        let app = self
            .store
            .oauth_app(client_id)
            .await
            .map_err(|error| GrantErrorOr::Failed(error.into()))?;
        let expired = |app: &OAuthApp| {
            app.org.is_none()
                && app.used_at.is_none()
                && millis(now).saturating_sub(app.created_at) > UNUSED_REGISTRATION_MILLIS
        };
        Ok(app.filter(|app| !expired(app)).map(PeopleClient::of_app))
    }

    fn documents(&self) -> Option<&MetadataDocuments> {
        self.documents.as_ref()
    }

    /// Dynamic client registration (RFC 7591): a client for people's sign-in, with no
    /// organization, removed when it gets no token within a day.
    pub async fn register_client(
        &self,
        asked: &Registration,
        now: jiff::Timestamp,
    ) -> Result<Registered, GrantErrorOr> {
        let redirect_uris = asked.redirect_uris.clone().unwrap_or_default();
        let mut issues = Vec::new();
        let application_type = match redirects::application_type(asked.application_type.as_deref(), &redirect_uris) {
            Ok(kind) => kind,
            Err(issue) => {
                issues.push(issue);
                "web"
            }
        };
        let uri_issues = redirects::issues(&redirect_uris, application_type);
        if !uri_issues.is_empty() && issues.is_empty() {
            return Err(registration_error("invalid_redirect_uri", &uri_issues).into());
        }
        issues.extend(uri_issues);
        let method = asked.token_endpoint_auth_method.as_deref().unwrap_or("none");
        if !matches!(method, "none" | "client_secret_basic" | "client_secret_post") {
            issues.push(format!(
                "token_endpoint_auth_method: {method:?} is not served for registered clients; use none, client_secret_basic or client_secret_post"
            ));
        }
        for grant in asked.grant_types.iter().flatten() {
            if !matches!(grant.as_str(), "authorization_code" | "refresh_token") {
                issues.push(format!(
                    "grant_types: {grant:?} is not served to registered clients (agents get a client from their organization's admin)"
                ));
            }
        }
        for response in asked.response_types.iter().flatten() {
            if response != "code" {
                issues.push(format!("response_types: {response:?} is not served; use code"));
            }
        }
        let unknown: Vec<&str> = asked
            .scope
            .iter()
            .flat_map(|scope| scope.split_ascii_whitespace())
            .filter(|name| !PERSON_SCOPES.contains(name) && *name != DECIDE_SCOPE)
            .collect();
        if !unknown.is_empty() {
            issues.push(format!("scope: {} unknown here", unknown.join(", ")));
        }
        let name = asked
            .client_name
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty());
        if name.is_some_and(|name| name.chars().count() > 200) {
            issues.push("client_name: at most 200 characters".to_owned());
        }
        if !issues.is_empty() {
            return Err(registration_error("invalid_client_metadata", &issues).into());
        }
        let at = millis(now);
        let secret = (method != "none").then(|| new_token(CLIENT_SECRET_PREFIX));
        let app = OAuthApp {
            id: new_id(REGISTERED_PREFIX),
            org: None,
            name: name.map(str::to_owned),
            redirect_uris: redirect_uris.clone(),
            application_type: application_type.to_owned(),
            auth_method: method.to_owned(),
            secret_hash: secret.as_deref().map(|secret| sha256_hex(secret.as_bytes())),
            people_operated: false,
            created_at: at,
            used_at: None,
            revoked_at: None,
        };
        let write = async {
            let mut tx = self.store.begin().await?;
            tx.delete_unused_apps(at.saturating_sub(UNUSED_REGISTRATION_MILLIS), 100)
                .await?;
            tx.add_oauth_app(&app).await?;
            tx.commit().await
        };
        write.await.map_err(|error| GrantErrorOr::Failed(error.into()))?;
        Ok(Registered {
            client_id: app.id,
            client_id_issued_at: at / 1000,
            client_secret_expires_at: secret.as_ref().map(|_| 0),
            client_secret: secret,
            redirect_uris,
            token_endpoint_auth_method: method.to_owned(),
            grant_types: vec!["authorization_code", "refresh_token"],
            response_types: vec!["code"],
            application_type,
            client_name: app.name,
            scope: PERSON_SCOPES.join(" "),
        })
    }

    /// The clients the organization's admins made for its people.
    pub async fn apps(&self, org: &str) -> Result<Vec<OAuthApp>, Error> {
        Ok(self.store.oauth_apps(org).await?)
    }

    /// Makes a client for the organization's people; a confidential one's secret is
    /// returned this once.
    pub async fn create_app(
        &self,
        actor: &Actor,
        org: &str,
        new: &NewApp,
        now: jiff::Timestamp,
        request: Option<&Idempotent>,
    ) -> Result<(OAuthApp, Option<String>), Error> {
        let mut issues = Vec::new();
        let name = new.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            issues.push("name: give the client a name of at most 200 characters".to_owned());
        }
        let application_type = match redirects::application_type(new.application_type.as_deref(), &new.redirect_uris) {
            Ok(kind) => kind,
            Err(issue) => {
                issues.push(issue.replace("application_type", "applicationType"));
                "web"
            }
        };
        issues.extend(
            redirects::issues(&new.redirect_uris, application_type)
                .into_iter()
                .map(|issue| issue.replace("redirect_uris", "redirectUris")),
        );
        refuse_if_any("the client was not made", issues)?;
        let at = millis(now);
        let secret = new.confidential.then(|| new_token(CLIENT_SECRET_PREFIX));
        let app = OAuthApp {
            id: new_id(APP_PREFIX),
            org: Some(org.to_owned()),
            name: Some(name.to_owned()),
            redirect_uris: new.redirect_uris.clone(),
            application_type: application_type.to_owned(),
            auth_method: if new.confidential {
                "client_secret_basic".to_owned()
            } else {
                "none".to_owned()
            },
            secret_hash: secret.as_deref().map(|secret| sha256_hex(secret.as_bytes())),
            people_operated: new.people_operated,
            created_at: at,
            used_at: None,
            revoked_at: None,
        };
        let mut tx = self.store.begin().await?;
        tx.add_oauth_app(&app).await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::AppCreated,
            Some(&app.id),
            detail([
                ("name", json!(name)),
                ("peopleOperated", json!(new.people_operated)),
                ("confidential", json!(new.confidential)),
            ]),
            at,
        )
        .await?;
        let made = (app, secret);
        remember(request, &mut tx, org, &made, at).await?;
        tx.commit().await?;
        Ok(made)
    }

    /// Revokes a client of the organization's people, with every grant and token of it.
    pub async fn revoke_app(&self, actor: &Actor, org: &str, id: &str, now: jiff::Timestamp) -> Result<(), Error> {
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        if !tx.revoke_oauth_app(org, id, at).await? {
            return Err(Error::not_found(format!("there is no live client {id:?}")));
        }
        audit::append(&mut tx, org, actor, AuditEvent::AppRevoked, Some(id), detail([]), at).await?;
        Ok(tx.commit().await?)
    }
}

/// Whether `identity` may use `client`: an admin-made client serves its own organization only.
pub(crate) fn serves(client: &PeopleClient, org: &str) -> bool {
    client.org.as_deref().is_none_or(|own| own == org)
}
