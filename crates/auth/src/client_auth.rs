//! How a client proves who it is at the token, revocation and introspection
//! endpoints: a public client by its `client_id` alone, a confidential one by a secret
//! (`client_secret_basic` or `client_secret_post`), an agent client with registered
//! keys by a signed JWT (`private_key_jwt`, RFC 7523).

use agentprocess_store::{GrantsTx as _, OAuthClient, Store, StoreTx};

use crate::assertion;
use crate::clients::{GrantError, GrantErrorOr};
use crate::people_clients::PeopleClient;
use crate::secrets::{same, sha256_hex};
use crate::{Auth, millis};
use agentprocess_store::Directory;

/// What a request presented to authenticate its client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presented {
    /// A public client: `client_id` only.
    Public {
        /// `client_id`.
        client_id: String,
    },
    /// A client secret, by HTTP Basic or in the form.
    Secret {
        /// `client_id`.
        client_id: String,
        /// `client_secret`.
        secret: String,
        /// Whether it came by HTTP Basic.
        basic: bool,
    },
    /// A JWT client assertion.
    Assertion {
        /// `client_id`, when the form names it.
        client_id: Option<String>,
        /// `client_assertion`.
        assertion: String,
    },
}

/// An authenticated client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Client {
    /// An agent client, acting as its agent.
    Agent(OAuthClient),
    /// A client people use, acting for whoever granted it.
    People(PeopleClient),
}

impl Client {
    /// `client_id`.
    pub fn id(&self) -> &str {
        match self {
            Client::Agent(client) => &client.id,
            Client::People(client) => &client.id,
        }
    }
}

fn invalid_client(description: impl Into<String>) -> GrantErrorOr {
    GrantError::new("invalid_client", description).into()
}

impl Auth {
    /// The client `presented` proves, at `now`. `audiences` are what a JWT assertion
    /// may be addressed to: the issuer and the endpoint's URL.
    pub async fn authenticate(
        &self,
        presented: &Presented,
        audiences: &[String],
        now: jiff::Timestamp,
    ) -> Result<Client, GrantErrorOr> {
        let client_id = match presented {
            Presented::Public { client_id } | Presented::Secret { client_id, .. } => client_id.clone(),
            Presented::Assertion { client_id, assertion } => {
                match client_id.clone().or_else(|| assertion::subject(assertion)) {
                    Some(id) => id,
                    None => return Err(invalid_client("the client assertion names no client (sub)")),
                }
            }
        };
        let failed = |error: agentprocess_store::Error| GrantErrorOr::Failed(error.into());
        if let Some((agent_client, secrets)) = self.store.oauth_client(&client_id).await.map_err(failed)? {
            match (presented, &agent_client.jwks) {
                (Presented::Secret { secret, .. }, None) => {
                    let presented = sha256_hex(secret.as_bytes());
                    // Every live secret is compared, so the time taken says nothing of which matched.
                    let matched = secrets
                        .iter()
                        .fold(false, |matched, secret| same(&secret.secret_hash, &presented) | matched);
                    if !matched {
                        return Err(invalid_client("the client is unknown, revoked, or its secret is wrong"));
                    }
                }
                (Presented::Assertion { assertion, .. }, Some(jwks)) => {
                    self.accept_assertion(&agent_client.id, assertion, jwks, audiences, now)
                        .await?;
                }
                (_, Some(_)) => {
                    return Err(invalid_client(
                        "this client authenticates with private_key_jwt: send client_assertion and client_assertion_type",
                    ));
                }
                (_, None) => {
                    return Err(invalid_client(
                        "authenticate the client with HTTP Basic (client_secret_basic) or client_id and client_secret in the form (client_secret_post)",
                    ));
                }
            }
            return Ok(Client::Agent(agent_client));
        }
        let Some(people_client) = self.people_client(&client_id, now).await? else {
            return Err(invalid_client("the client is unknown, revoked, or its secret is wrong"));
        };
        match (presented, people_client.secret_hash.as_deref()) {
            (Presented::Public { .. }, None) => {}
            (Presented::Secret { secret, .. }, Some(hash)) if same(hash, &sha256_hex(secret.as_bytes())) => {}
            (Presented::Public { .. }, Some(_)) => {
                return Err(invalid_client(
                    "this client is confidential: authenticate it with its secret",
                ));
            }
            (Presented::Secret { .. }, None) => {
                return Err(invalid_client(
                    "this client is public (token_endpoint_auth_method none): send client_id without a secret",
                ));
            }
            (Presented::Assertion { .. }, _) => {
                return Err(invalid_client("this client does not authenticate with private_key_jwt"));
            }
            (Presented::Secret { .. }, Some(_)) => {
                return Err(invalid_client("the client is unknown, revoked, or its secret is wrong"));
            }
        }
        Ok(Client::People(people_client))
    }

    /// Verifies a JWT assertion and records its `jti`, so it is accepted once.
    async fn accept_assertion(
        &self,
        client_id: &str,
        assertion: &str,
        jwks: &str,
        audiences: &[String],
        now: jiff::Timestamp,
    ) -> Result<(), GrantErrorOr> {
        let accepted =
            assertion::verify(assertion, jwks, client_id, audiences, now.as_second()).map_err(invalid_client)?;
        let remember = async {
            let mut tx = self.store.begin().await?;
            let fresh = tx
                .remember_assertion(
                    client_id,
                    &sha256_hex(accepted.jti.as_bytes()),
                    accepted.expires_at,
                    millis(now),
                )
                .await?;
            tx.commit().await?;
            Ok::<bool, agentprocess_store::Error>(fresh)
        };
        let fresh = remember.await.map_err(|error| GrantErrorOr::Failed(error.into()))?;
        if fresh {
            Ok(())
        } else {
            Err(invalid_client(
                "this client assertion (its jti) was used already; sign a new one",
            ))
        }
    }
}
