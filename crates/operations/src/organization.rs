//! The organization: its settings, its identity provider and its email domains.

use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::members::OrganizationChange;
use agentprocess_auth::{Acting, Role};
use agentprocess_store::{Domain, Organization};
use serde::{Deserialize, Serialize};

use crate::{Error, Operations, unless_replayed};

/// The organization as its admins see it.
#[derive(Debug)]
pub struct OrganizationState {
    /// Its row.
    pub organization: Organization,
    /// Its identity provider, when one is set up.
    pub provider: Option<Provider>,
    /// Its email domains.
    pub domains: Vec<Domain>,
}

/// An organization's identity provider, without its secret.
#[derive(Debug)]
pub struct Provider {
    /// The issuer URL.
    pub issuer: String,
    /// The client id registered there.
    pub client_id: String,
    /// Whether a client secret is kept.
    pub has_client_secret: bool,
    /// What to register at the provider as the redirect URI.
    pub redirect_uri: String,
}

/// An identity provider to sign in with.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SignIn {
    /// The provider's issuer URL.
    #[schema(pattern = "^https://[^\\s]+$")]
    pub issuer: String,
    /// The client id registered there.
    #[schema(min_length = 1)]
    pub client_id: String,
    /// Absent or empty for a public client.
    #[serde(default)]
    pub client_secret: Option<String>,
}

/// An email domain to add.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDomain {
    /// A domain name, such as `acme.com`.
    #[schema(pattern = "^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+$", max_length = 253)]
    pub domain: String,
}

impl Operations {
    /// The caller's organization.
    pub async fn organization(&self, acting: &Acting) -> Result<OrganizationState, Error> {
        let organization = self.auth.organization(acting.org()).await?;
        self.state_of(organization).await
    }

    async fn state_of(&self, organization: Organization) -> Result<OrganizationState, Error> {
        let provider = self.auth.provider_summary(&organization.id).await?;
        let domains = self.auth.domains(&organization.id).await?;
        Ok(OrganizationState {
            provider: provider.map(|(issuer, client_id, has_client_secret)| Provider {
                issuer,
                client_id,
                has_client_secret,
                redirect_uri: self.auth.oidc().redirect_uri().to_owned(),
            }),
            domains,
            organization,
        })
    }

    /// Changes the organization's settings, unless it changed since `revision`.
    pub async fn change_organization(
        &self,
        acting: &Acting,
        change: &OrganizationChange,
        revision: Option<i64>,
    ) -> Result<OrganizationState, Error> {
        acting.require(Role::Admin, true)?;
        let organization = self
            .auth
            .change_organization(&acting.actor(), acting.org(), change, revision, self.now())
            .await?;
        self.state_of(organization).await
    }

    /// Sets the identity provider its people sign in with.
    pub async fn set_sign_in(&self, acting: &Acting, sign_in: &SignIn) -> Result<OrganizationState, Error> {
        acting.require(Role::Admin, true)?;
        self.auth
            .set_provider(
                &acting.actor(),
                acting.org(),
                &sign_in.issuer,
                &sign_in.client_id,
                sign_in.client_secret.as_deref(),
                self.now(),
            )
            .await?;
        self.organization(acting).await
    }

    /// Adds an email domain, to be proven by a DNS TXT record.
    pub async fn add_domain(&self, acting: &Acting, new: &NewDomain, key: Option<&str>) -> Result<Domain, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::DomainAdd, new);
        Ok(self
            .auth
            .add_domain(
                &acting.actor(),
                acting.org(),
                &new.domain,
                self.now(),
                request.as_deref(),
            )
            .await?)
    }

    /// Verifies a domain by its TXT record.
    pub async fn verify_domain(&self, acting: &Acting, domain: &str) -> Result<Domain, Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .verify_domain(&acting.actor(), acting.org(), domain, self.now())
            .await?)
    }

    /// Removes a domain.
    pub async fn remove_domain(&self, acting: &Acting, domain: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        Ok(self
            .auth
            .remove_domain(&acting.actor(), acting.org(), domain, self.now())
            .await?)
    }
}
