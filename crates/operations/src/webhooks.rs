//! The organization's webhook endpoints and their deliveries.

use agentprocess_auth::audit::{AuditEvent, detail};
use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::{Acting, Role};
use agentprocess_store::{DeliveryRecord, Webhook};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{Error, Operations, Replay};

/// A webhook endpoint to add.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// Where deliveries are posted: an https:// URL of a public address (plain http://
    /// only on a server whose operator allows it).
    #[schema(pattern = "^https?://[^\\s]+$")]
    pub url: String,
}

impl Operations {
    /// Every endpoint.
    pub async fn webhooks(&self, acting: &Acting) -> Result<Vec<Webhook>, Error> {
        acting.require(Role::Admin, false)?;
        Ok(self.service.admin().webhooks(acting.org()).await?)
    }

    /// Adds an endpoint, with its signing secret (shown this once).
    pub async fn add_webhook(&self, acting: &Acting, new: &NewWebhook, key: Option<&str>) -> Result<Webhook, Error> {
        acting.require(Role::Admin, true)?;
        let request = match self.replay(acting, key, Operation::WebhookAdd, new).await? {
            // Recorded with its secret sealed.
            Replay::Answered(webhook) => return Ok(self.service.admin().revealed(acting.org(), webhook)?),
            Replay::Fresh(request) => request,
        };
        let webhook = self
            .service
            .admin()
            .add_webhook(acting.org(), &new.url, request.as_deref())
            .await?;
        self.record(
            acting,
            AuditEvent::WebhookAdded,
            &webhook.id,
            detail([("url", json!(webhook.url))]),
        )
        .await?;
        Ok(webhook)
    }

    /// Removes an endpoint.
    pub async fn remove_webhook(&self, acting: &Acting, id: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        self.service.admin().remove_webhook(acting.org(), id).await?;
        self.record(acting, AuditEvent::WebhookRemoved, id, detail([])).await
    }

    /// Sends one delivery again: one more attempt, now, with the notification's id
    /// unchanged (so the endpoint can tell it from a new notification).
    pub async fn redeliver(&self, acting: &Acting, webhook: &str, notification: &str) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        self.service
            .admin()
            .redeliver(acting.org(), webhook, notification)
            .await?;
        let detail = detail([("notification", json!(notification))]);
        self.record(acting, AuditEvent::WebhookRedelivered, webhook, detail)
            .await?;
        self.service.wake_timers();
        Ok(())
    }

    /// The latest deliveries, at most `limit` (1 to the service's page size).
    pub async fn deliveries(&self, acting: &Acting, limit: u32) -> Result<Vec<DeliveryRecord>, Error> {
        acting.require(Role::Admin, false)?;
        let limit = limit.clamp(1, agentprocess_service::MAX_PAGE);
        Ok(self.service.admin().deliveries(acting.org(), limit).await?)
    }
}
