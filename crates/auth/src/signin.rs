//! Signing up an organization and signing people in, through the organization's
//! OpenID provider. Nothing is created until the provider's login succeeded and its
//! ID token passed every check.

use agentprocess_engine::Code;
use agentprocess_store::{DirectoryTx, Identity, IdentityKind, Organization, Provider, Role, Store, StoreTx};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::oidc::{Callback, Claims, ClientConfig, OidcError, Pending};
use crate::secrets::{new_id, same, sha256_hex};
use crate::{Auth, Error, SignupPolicy, millis};
use agentprocess_store::Directory;

/// What the sign-up form asks (its fields named as the form names them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignupForm {
    /// The organization's name.
    #[serde(default)]
    pub name: String,
    /// Its slug: lowercase letters, digits and dashes.
    #[serde(default)]
    pub slug: String,
    /// Its provider's issuer URL.
    #[serde(default)]
    pub issuer: String,
    /// The client id registered there.
    #[serde(default)]
    pub client_id: String,
    /// The client secret; empty for a public client.
    #[serde(default)]
    pub client_secret: String,
    /// A sign-up code, when sign-up is by invitation.
    #[serde(default)]
    pub code: String,
}

/// A sign-in on its way through the provider, kept in the browser's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSignIn {
    /// What the provider's answer must match.
    pub oidc: Pending,
    /// What the sign-in is for.
    pub purpose: Purpose,
    /// When it began (milliseconds since the epoch, by the server's clock), set by
    /// whoever keeps it until the callback, which refuses one too old.
    #[serde(default)]
    pub started_at: i64,
}

/// The longest issuer URL a sign-up takes; what it keeps until the callback is bounded.
const MAX_URL: usize = 2048;
/// The longest client id or client secret a sign-up takes.
const MAX_CLIENT_FIELD: usize = 1024;

/// Why someone went to the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Purpose {
    /// To sign up a new organization and become its first admin.
    SignUp {
        /// The slug asked for.
        slug: String,
        /// The name asked for.
        name: String,
        /// The client secret, sealed, for a confidential client.
        sealed_secret: Option<String>,
    },
    /// To sign in to an organization.
    SignIn {
        /// The organization.
        org: String,
    },
}

/// Someone who signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedInPerson {
    /// Their organization.
    pub organization: Organization,
    /// Who they are there.
    pub identity: Identity,
}

const PENDING_CONTEXT: &str = "pending-signup";

fn provider_context(org: &str) -> String {
    format!("idp-secret:{org}")
}

/// Every reason `slug` cannot name an organization.
pub fn slug_issues(slug: &str) -> Vec<String> {
    let mut issues = Vec::new();
    if !(3..=40).contains(&slug.len()) {
        issues.push(format!("slug: {slug:?} must have 3 to 40 characters"));
    }
    if !slug
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        || slug.starts_with('-')
        || slug.ends_with('-')
    {
        issues.push(format!(
            "slug: {slug:?} may hold only lowercase letters, digits and inner dashes"
        ));
    }
    issues
}

/// Whether `email` looks like an address: one `@`, something before it, a dotted
/// domain after it.
pub fn is_email(email: &str) -> bool {
    let mut parts = email.split('@');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(local), Some(domain), None) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !email.chars().any(char::is_whitespace)
        }
        _ => false,
    }
}

/// The domain of an email address, lowercase.
pub fn email_domain(email: &str) -> Option<String> {
    email.rsplit_once('@').map(|(_, domain)| domain.to_ascii_lowercase())
}

fn sign_in_failed(error: &OidcError) -> Error {
    Error::refused(Code::Forbidden, "the sign-in failed", vec![error.to_string()])
}

impl Auth {
    /// Checks a sign-up form, runs discovery and makes the authorization request:
    /// where to send the person, and what to keep until they come back. Nothing is
    /// stored.
    pub async fn begin_signup(&self, form: &SignupForm) -> Result<(String, PendingSignIn), Error> {
        let mut issues = Vec::new();
        match self.settings.signup {
            SignupPolicy::Closed => {
                return Err(Error::forbidden(
                    "sign-up is closed on this server; an operator creates organizations",
                ));
            }
            SignupPolicy::Invite => {
                let hash = sha256_hex(form.code.trim().as_bytes());
                if !self.settings.signup_code_hashes.iter().any(|known| same(known, &hash)) {
                    issues.push("code: not a valid sign-up code".to_owned());
                }
            }
            SignupPolicy::Open => {}
        }
        let name = form.name.trim();
        if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
            issues.push("name: give the organization's name (at most 200 characters)".to_owned());
        }
        let slug = form.slug.trim();
        let slug_problems = slug_issues(slug);
        let well_formed = slug_problems.is_empty();
        issues.extend(slug_problems);
        let issuer = form.issuer.trim();
        issues.extend(self.oidc.issuer_issues(issuer));
        if issuer.len() > MAX_URL {
            issues.push(format!("issuer: at most {MAX_URL} characters"));
        }
        let client_id = form.client_id.trim();
        if client_id.is_empty() || client_id.len() > MAX_CLIENT_FIELD || client_id.chars().any(char::is_control) {
            issues.push(format!(
                "clientId: give the client id registered at the identity provider (at most {MAX_CLIENT_FIELD} characters)"
            ));
        }
        if form.client_secret.trim().len() > MAX_CLIENT_FIELD {
            issues.push(format!("clientSecret: at most {MAX_CLIENT_FIELD} characters"));
        }
        if well_formed && self.store.organization_by_slug(slug).await?.is_some() {
            issues.push(format!("slug: {slug:?} is taken"));
        }
        refuse_if_any("the sign-up form has problems; nothing was created", issues)?;
        let secret = Some(form.client_secret.trim()).filter(|secret| !secret.is_empty());
        let config = ClientConfig {
            issuer,
            client_id,
            client_secret: secret,
        };
        let unusable = |error: crate::oidc::OidcError| {
            Error::invalid(
                "the identity provider cannot be used; nothing was created",
                vec![format!("issuer: {error}")],
            )
        };
        // Discovery afresh: whoever signs up sees the provider as it is now, not as the
        // server last fetched it.
        self.oidc.discover(issuer).await.map_err(unusable)?;
        let (url, pending) = self.oidc.begin(&config, false, true).await.map_err(unusable)?;
        Ok((
            url,
            PendingSignIn {
                started_at: 0,
                oidc: pending,
                purpose: Purpose::SignUp {
                    slug: slug.to_owned(),
                    name: name.to_owned(),
                    sealed_secret: secret.map(|secret| self.key.seal(secret, PENDING_CONTEXT)),
                },
            },
        ))
    }

    /// Starts a sign-in to the organization named by `who`: its slug, or an email
    /// whose domain an organization has verified. `fresh` makes the provider sign the
    /// person in again rather than reuse its own session.
    /// `preflight`: try the authorization request from the server first, so a provider
    /// refusing it is reported here (the caller turns it off past the organization's
    /// budget of such requests: the person then goes to the provider all the same).
    pub async fn begin_signin(
        &self,
        who: &str,
        fresh: bool,
        preflight: bool,
    ) -> Result<(String, PendingSignIn), Error> {
        let who = who.trim().to_ascii_lowercase();
        let organization = if who.contains('@') {
            let domain = email_domain(&who).unwrap_or_default();
            match self.store.org_of_verified_domain(&domain).await? {
                Some(org) => self.store.organization(&org).await?,
                None => None,
            }
        } else {
            self.store.organization_by_slug(&who).await?
        };
        let Some(organization) = organization else {
            return Err(Error::not_found(if who.contains('@') {
                format!("no organization signs in people of {who:?}: sign in with your organization's name instead")
            } else {
                format!("there is no organization {who:?}")
            }));
        };
        let Some(provider) = self.store.provider(&organization.id).await? else {
            return Err(Error::refused(
                Code::NotAccepted,
                format!("{} has no identity provider set up", organization.name),
                Vec::new(),
            ));
        };
        let secret = self.provider_secret(&provider)?;
        let config = ClientConfig {
            issuer: &provider.issuer,
            client_id: &provider.client_id,
            client_secret: secret.as_deref(),
        };
        let (url, pending) = self.oidc.begin(&config, fresh, preflight).await.map_err(|error| {
            Error::refused(
                Code::Retry,
                "the identity provider cannot be used right now",
                vec![error.to_string()],
            )
        })?;
        Ok((
            url,
            PendingSignIn {
                started_at: 0,
                oidc: pending,
                purpose: Purpose::SignIn { org: organization.id },
            },
        ))
    }

    /// Sets the organization's identity provider, after discovery at `issuer`
    /// succeeded. People keep their accounts: at their first sign-in through the new
    /// provider they are linked by their (verified) email.
    pub async fn set_provider(
        &self,
        actor: &Actor,
        org: &str,
        issuer: &str,
        client_id: &str,
        client_secret: Option<&str>,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        let issuer = issuer.trim();
        let client_id = client_id.trim();
        let mut issues = self.oidc.issuer_issues(issuer);
        if client_id.is_empty() {
            issues.push("clientId: give the client id registered at the identity provider".to_owned());
        }
        refuse_if_any("the sign-in settings were not changed", issues)?;
        self.oidc.discover(issuer).await.map_err(|error| {
            Error::invalid(
                "the sign-in settings were not changed",
                vec![format!("issuer: {error}")],
            )
        })?;
        let secret = client_secret.map(str::trim).filter(|secret| !secret.is_empty());
        let at = millis(now);
        let mut tx = self.store.begin().await?;
        tx.lock_org(org)
            .await?
            .ok_or_else(|| Error::not_found("there is no such organization"))?;
        tx.put_provider(
            &Provider {
                org: org.to_owned(),
                issuer: issuer.to_owned(),
                client_id: client_id.to_owned(),
                sealed_secret: secret.map(|secret| self.key.seal(secret, &provider_context(org))),
            },
            at,
        )
        .await?;
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::OrganizationSignInChanged,
            Some(org),
            detail([
                ("issuer", json!(issuer)),
                ("clientId", json!(client_id)),
                ("clientSecret", json!(secret.is_some())),
            ]),
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Seals `org`'s identity provider client secret again with the current key when
    /// a previous key sealed it; returns whether it did.
    pub async fn reseal_provider(&self, org: &str, now: jiff::Timestamp) -> Result<bool, Error> {
        let Some(mut provider) = self.store.provider(org).await? else {
            return Ok(false);
        };
        let Some(sealed) = provider.sealed_secret.as_deref() else {
            return Ok(false);
        };
        let context = provider_context(org);
        // It must open (with the current key or a previous one) before anything changes.
        let secret = self.key.open(sealed, &context)?;
        if !self.key.sealed_with_previous(sealed) {
            return Ok(false);
        }
        provider.sealed_secret = Some(self.key.seal(&secret, &context));
        let mut tx = self.store.begin().await?;
        if tx.lock_org(org).await?.is_none() {
            return Ok(false);
        }
        tx.put_provider(&provider, millis(now)).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The provider's answer, checked: the ID token's claims and the verified email.
    async fn verified_claims(
        &self,
        config: &ClientConfig<'_>,
        pending: &PendingSignIn,
        callback: &Callback,
    ) -> Result<(Claims, String), Error> {
        let claims = self
            .oidc
            .finish(config, &pending.oidc, callback)
            .await
            .map_err(|error| sign_in_failed(&error))?;
        let email = verified_email(&claims)?;
        Ok((claims, email))
    }

    fn provider_secret(&self, provider: &Provider) -> Result<Option<String>, Error> {
        provider
            .sealed_secret
            .as_deref()
            .map(|sealed| self.key.open(sealed, &provider_context(&provider.org)))
            .transpose()
            .map_err(Error::from)
    }

    /// Finishes a sign-up or sign-in when the provider sends the person back.
    pub async fn finish(
        &self,
        pending: &PendingSignIn,
        callback: &Callback,
        address: Option<String>,
        now: jiff::Timestamp,
    ) -> Result<SignedInPerson, Error> {
        match &pending.purpose {
            Purpose::SignUp {
                slug,
                name,
                sealed_secret,
            } => {
                let secret = sealed_secret
                    .as_deref()
                    .map(|sealed| self.key.open(sealed, PENDING_CONTEXT))
                    .transpose()?;
                let config = ClientConfig {
                    issuer: &pending.oidc.issuer,
                    client_id: &pending.oidc.client_id,
                    client_secret: secret.as_deref(),
                };
                let (claims, email) = self.verified_claims(&config, pending, callback).await?;
                self.create_organization(slug, name, &config, &claims, &email, address, now)
                    .await
            }
            Purpose::SignIn { org } => {
                let result = self.sign_in(org, pending, callback, address.clone(), now).await;
                if let Err(Error::Refused(refusal)) = &result {
                    let mut reasons = vec![json!(refusal.message)];
                    reasons.extend(refusal.issues.iter().map(|issue| json!(issue)));
                    let mut tx = self.store.begin().await?;
                    audit::append(
                        &mut tx,
                        org,
                        &Actor::anonymous(address),
                        AuditEvent::SigninFailed,
                        None,
                        detail([("reasons", json!(reasons))]),
                        millis(now),
                    )
                    .await?;
                    tx.commit().await?;
                }
                result
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn create_organization(
        &self,
        slug: &str,
        name: &str,
        config: &ClientConfig<'_>,
        claims: &Claims,
        email: &str,
        address: Option<String>,
        now: jiff::Timestamp,
    ) -> Result<SignedInPerson, Error> {
        let at = millis(now);
        let org = new_id("org_");
        let identity = new_person(&org, Role::Admin, claims, email);
        let taken = || {
            Error::conflict(format!(
                "the slug {slug:?} was taken while you signed in; nothing was created: sign up again with another"
            ))
        };
        if self.store.organization_by_slug(slug).await?.is_some() {
            return Err(taken());
        }
        let mut tx = self.store.begin().await?;
        match tx.create_org(&org, slug, name, at).await {
            Err(error) if error.is_unique_violation() => return Err(taken()),
            other => other?,
        }
        tx.put_provider(
            &Provider {
                org: org.clone(),
                issuer: config.issuer.to_owned(),
                client_id: config.client_id.to_owned(),
                sealed_secret: config
                    .client_secret
                    .map(|secret| self.key.seal(secret, &provider_context(&org))),
            },
            at,
        )
        .await?;
        tx.create_identity(&identity, at).await?;
        tx.add_login(&org, &claims.issuer, &claims.subject, &identity.id, at)
            .await?;
        let actor = Actor {
            id: identity.id.clone(),
            address,
        };
        audit::append(
            &mut tx,
            &org,
            &actor,
            AuditEvent::OrganizationCreated,
            Some(&org),
            detail([
                ("slug", json!(slug)),
                ("name", json!(name)),
                ("issuer", json!(config.issuer)),
            ]),
            at,
        )
        .await?;
        audit::append(
            &mut tx,
            &org,
            &actor,
            AuditEvent::SigninSucceeded,
            Some(&identity.id),
            detail([("email", json!(email))]),
            at,
        )
        .await?;
        tx.commit().await?;
        let organization = self
            .store
            .organization(&org)
            .await?
            .ok_or_else(|| Error::not_found("the organization just created is gone"))?;
        Ok(SignedInPerson { organization, identity })
    }

    async fn sign_in(
        &self,
        org: &str,
        pending: &PendingSignIn,
        callback: &Callback,
        address: Option<String>,
        now: jiff::Timestamp,
    ) -> Result<SignedInPerson, Error> {
        let (Some(organization), Some(provider)) =
            (self.store.organization(org).await?, self.store.provider(org).await?)
        else {
            return Err(Error::not_found("the organization is gone"));
        };
        if provider.issuer != pending.oidc.issuer || provider.client_id != pending.oidc.client_id {
            return Err(Error::forbidden(
                "the organization's sign-in settings changed meanwhile: sign in again",
            ));
        }
        let secret = self.provider_secret(&provider)?;
        let config = ClientConfig {
            issuer: &provider.issuer,
            client_id: &provider.client_id,
            client_secret: secret.as_deref(),
        };
        let (claims, email) = self.verified_claims(&config, pending, callback).await?;
        let at = millis(now);
        // Read before the transaction: the embedded mode's one connection is the
        // transaction's until it ends.
        let known = self.store.login(org, &claims.issuer, &claims.subject).await?;
        let domain = email_domain(&email).unwrap_or_default();
        let allowed = self
            .store
            .domains(org)
            .await?
            .iter()
            .any(|known| known.domain == domain);
        let mut tx = self.store.begin().await?;
        tx.lock_org(org).await?;
        let identity = match known {
            Some(identity) => identity,
            None => first_sign_in(&mut tx, &organization, &claims, &email, allowed, at).await?,
        };
        if identity.deactivated_at.is_some() {
            return Err(Error::forbidden(format!(
                "{email} is deactivated in {}: ask an admin",
                organization.name
            )));
        }
        let identity = match &organization.groups_claim {
            Some(claim) => sync_groups(&mut tx, identity, claimed_groups(&claims, claim)).await?,
            None => identity,
        };
        let actor = Actor {
            id: identity.id.clone(),
            address,
        };
        audit::append(
            &mut tx,
            org,
            &actor,
            AuditEvent::SigninSucceeded,
            Some(&identity.id),
            detail([("email", json!(email))]),
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(SignedInPerson { organization, identity })
    }
}

/// A person the organization has not seen at this provider: an invited person
/// is linked, someone of an allowed domain is provisioned as a member.
async fn first_sign_in(
    tx: &mut impl StoreTx,
    organization: &Organization,
    claims: &Claims,
    email: &str,
    allowed: bool,
    at: i64,
) -> Result<Identity, Error> {
    let org = &organization.id;
    if let Some(invited) = tx.identity_by_person(org, email).await? {
        if invited.kind != IdentityKind::Person || tx.has_login(org, &invited.id, &claims.issuer).await? {
            return Err(Error::forbidden(format!(
                "{email} already signs in to {} through another account",
                organization.name
            )));
        }
        tx.add_login(org, &claims.issuer, &claims.subject, &invited.id, at)
            .await?;
        return Ok(invited);
    }
    if !(organization.auto_provision && allowed) {
        return Err(Error::forbidden(format!(
            "{email} is not a member of {}: ask an admin to invite you",
            organization.name
        )));
    }
    let identity = new_person(org, Role::Member, claims, email);
    tx.create_identity(&identity, at).await?;
    tx.add_login(org, &claims.issuer, &claims.subject, &identity.id, at)
        .await?;
    audit::append(
        tx,
        org,
        &Actor {
            id: identity.id.clone(),
            address: None,
        },
        AuditEvent::MemberProvisioned,
        Some(&identity.id),
        detail([("email", json!(email)), ("role", json!("member"))]),
        at,
    )
    .await?;
    Ok(identity)
}

/// A person who signed in for the first time, as `role`, named as the provider names
/// them.
fn new_person(org: &str, role: Role, claims: &Claims, email: &str) -> Identity {
    Identity {
        org: org.to_owned(),
        id: new_id("per_"),
        kind: IdentityKind::Person,
        role: Some(role),
        person: Some(email.to_owned()),
        name: claims.name.clone().unwrap_or_else(|| email.to_owned()),
        groups: Vec::new(),
        deactivated_at: None,
    }
}

/// The person's email, when the provider vouches for it: `email_verified`, or a
/// Google `hd` claim naming the email's domain.
fn verified_email(claims: &Claims) -> Result<String, Error> {
    let Some(email) = claims
        .email
        .as_deref()
        .map(str::to_ascii_lowercase)
        .filter(|email| is_email(email))
    else {
        return Err(Error::forbidden(
            "the identity provider sent no email claim: allow the email scope for this client",
        ));
    };
    let hosted_domain = claims
        .all
        .get("hd")
        .and_then(serde_json::Value::as_str)
        .map(str::to_ascii_lowercase);
    if claims.email_verified == Some(true) || hosted_domain.is_some_and(|hd| Some(hd) == email_domain(&email)) {
        Ok(email)
    } else {
        Err(Error::forbidden(format!(
            "{email} is not verified at the identity provider"
        )))
    }
}

/// The groups a token lists under `claim`, or `None` when it does not say (the claim
/// is absent, or Entra moved it elsewhere because there were too many: an overage).
pub fn claimed_groups(claims: &Claims, claim: &str) -> Option<Vec<String>> {
    let overage = claims
        .all
        .get("_claim_names")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|names| names.contains_key(claim));
    if overage {
        return None;
    }
    match claims.all.get(claim)? {
        serde_json::Value::Array(values) => Some(
            values
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        serde_json::Value::String(value) => Some(vec![value.clone()]),
        _ => None,
    }
}

/// Makes a person's memberships the organization's groups among `claimed`; unknown
/// claim values are ignored, and `None` changes nothing.
async fn sync_groups(
    tx: &mut impl StoreTx,
    mut identity: Identity,
    claimed: Option<Vec<String>>,
) -> Result<Identity, Error> {
    let Some(claimed) = claimed else {
        return Ok(identity);
    };
    // A group is named by its id, or by any of its claim values (Entra sends object ids).
    let known = tx.group_list(&identity.org).await?;
    let mut wanted: Vec<String> = known
        .into_iter()
        .filter(|group| claimed.contains(&group.id) || group.claim_values.iter().any(|value| claimed.contains(value)))
        .map(|group| group.id)
        .collect();
    wanted.sort();
    for group in &identity.groups {
        if !wanted.contains(group) {
            tx.remove_member(&identity.org, group, &identity.id).await?;
        }
    }
    for group in &wanted {
        if !identity.groups.contains(group) {
            tx.add_member(&identity.org, group, &identity.id).await?;
        }
    }
    identity.groups = wanted;
    Ok(identity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(all: serde_json::Value) -> Claims {
        let all = all.as_object().cloned().unwrap_or_default();
        Claims {
            issuer: "https://idp".to_owned(),
            subject: "1".to_owned(),
            email: all.get("email").and_then(|value| value.as_str()).map(str::to_owned),
            email_verified: all.get("email_verified").and_then(serde_json::Value::as_bool),
            name: None,
            all,
        }
    }

    #[test]
    fn slugs_are_short_lowercase_words() {
        assert!(slug_issues("acme-corp").is_empty());
        assert_eq!(slug_issues("Acme").len(), 1);
        assert_eq!(slug_issues("-a").len(), 2);
    }

    #[test]
    fn email_must_be_verified_or_vouched_for_by_hd() {
        let verified = claims(json!({ "email": "Ann@Acme.com", "email_verified": true }));
        assert_eq!(verified_email(&verified).ok().as_deref(), Some("ann@acme.com"));
        assert!(verified_email(&claims(json!({ "email": "ann@acme.com", "email_verified": false }))).is_err());
        assert!(verified_email(&claims(json!({ "email": "ann@acme.com", "hd": "acme.com" }))).is_ok());
        assert!(verified_email(&claims(json!({ "email": "ann@acme.com", "hd": "other.com" }))).is_err());
        assert!(verified_email(&claims(json!({ "email_verified": true }))).is_err());
    }

    #[test]
    fn an_overage_says_nothing_about_groups() {
        let listed = claims(json!({ "groups": ["a", "b"] }));
        assert_eq!(
            claimed_groups(&listed, "groups"),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        let overage = claims(json!({ "_claim_names": { "groups": "src1" }, "_claim_sources": {} }));
        assert_eq!(claimed_groups(&overage, "groups"), None);
        assert_eq!(claimed_groups(&claims(json!({})), "groups"), None);
    }
}
