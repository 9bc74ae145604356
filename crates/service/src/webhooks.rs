//! Webhook delivery: posts each pending delivery of the outbox to its endpoint,
//! signed, and retries with exponential backoff until the endpoint answers 2xx or
//! the attempts run out. Every attempt's outcome is recorded on the delivery.
//!
//! Signatures follow the Standard Webhooks scheme: `webhook-id`,
//! `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64 of
//! HMAC-SHA256 over "<id>.<timestamp>.<body>">`, keyed with the base64 part of the
//! endpoint's `whsec_…` secret. Delivery is at least once: receivers deduplicate by
//! `webhook-id`.

use std::sync::Arc;
use std::time::Duration;

use agentprocess_store::{AttemptResult, Delivery, DeliveryStatus, Store};
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use crate::fair::{self, Pass, Sends, hold_for};
use crate::hook_urls::send_refusal;
use crate::scheduler::{after_failure, duration_millis};
use crate::{Service, millis};
use agentprocess_auth::outbound::{Outbound, OutboundError, OutboundSettings};
use agentprocess_auth::{SealError, SecretKey};

/// How webhooks are delivered (and chat messages posted, and messages to people
/// retried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Organizations with work due that one pass looks at (beyond those with no room).
    pub batch: u32,
    /// Sends under way at once, in each loop.
    pub concurrency: usize,
    /// Sends under way at once for one organization, in each loop: an organization
    /// whose endpoint is slow or never answers ties up this many and no more.
    pub per_organization: usize,
    /// How long one post may take, answer included (a webhook attempt, a chat post).
    pub timeout: Duration,
    /// How long connecting for one post may take.
    pub connect_timeout: Duration,
    /// The wait before the second attempt; it doubles with each further attempt.
    pub retry_base: Duration,
    /// The longest wait between attempts.
    pub retry_max: Duration,
    /// Attempts before a delivery is given up (`failed`).
    pub max_attempts: u32,
    /// The longest pause between passes when nothing is due.
    pub poll: Duration,
    /// Whether endpoints may be on loopback, private or link-local addresses. Off by
    /// default, so a webhook cannot reach into the service's own network.
    pub allow_private_networks: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            batch: 64,
            concurrency: 8,
            per_organization: 2,
            // Posts go to endpoints the tenants choose: an answer that takes longer is
            // an endpoint in trouble, and the post is retried later rather than held.
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            retry_base: Duration::from_secs(10),
            retry_max: Duration::from_secs(3600),
            max_attempts: 12,
            poll: Duration::from_secs(1),
            allow_private_networks: false,
        }
    }
}

impl WebhookSettings {
    /// The client settings of posts to tenants' endpoints (webhooks, chat hooks).
    pub(crate) fn outbound(&self) -> OutboundSettings {
        OutboundSettings {
            allow_private: self.allow_private_networks,
            timeout: self.timeout,
            connect_timeout: Some(self.connect_timeout.min(self.timeout)),
            ..OutboundSettings::default()
        }
    }

    /// The longest one post's send may take: the post, and what comes before it
    /// (opening a secret, reading the run a message is about).
    pub(crate) fn send_deadline(&self) -> Duration {
        self.timeout.saturating_mul(2)
    }
}

/// Where an endpoint's signing secret is sealed: bound to its organization and
/// endpoint, so a sealed secret copied to another row does not open.
pub(crate) fn secret_context(org: &str, webhook_id: &str) -> String {
    format!("webhook-secret:{org}:{webhook_id}")
}

/// An endpoint's signing secret as kept: sealed, opened with `key` (or a previous key
/// it holds); one kept before secrets were sealed, as it is.
pub(crate) fn open_secret(key: &SecretKey, org: &str, webhook_id: &str, kept: &str) -> Result<String, SealError> {
    if SecretKey::is_sealed(kept) {
        key.open(kept, &secret_context(org, webhook_id))
    } else {
        Ok(kept.to_owned())
    }
}

/// The `webhook-signature` header value for a delivery: `v1,<base64>`. `None` when
/// the secret is not a `whsec_…` key.
pub fn sign_webhook(secret: &str, id: &str, timestamp: i64, body: &str) -> Option<String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_")?)
        .ok()?;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    Some(format!("v1,{signature}"))
}

/// What a delivery's task posts with.
struct Posting {
    client: Outbound,
    settings: WebhookSettings,
}

impl Service {
    /// Delivers webhooks until `stop` is cancelled; attempts under way finish first.
    /// Each pass shares its attempts between organizations (the `fair` module).
    pub async fn run_webhooks(self: Arc<Self>, settings: WebhookSettings, stop: CancellationToken) {
        let client = match Outbound::new(settings.outbound()) {
            Ok(client) => client,
            Err(error) => {
                tracing::error!(%error, "no HTTP client: webhooks are not delivered");
                return;
            }
        };
        let mut sends = Sends::new(settings.concurrency, settings.per_organization);
        let posting = Arc::new(Posting { client, settings });
        loop {
            let poll = posting.settings.poll;
            let pause = match self.webhook_pass(&posting, &mut sends).await {
                Ok(pass) => pass.pause(&sends, poll),
                Err(error) => after_failure("webhook pass", &error, poll),
            };
            if !sends.rest(&stop, &self.deliveries_wake, pause).await {
                break;
            }
        }
        sends.finish().await;
    }

    /// Takes each organization's share of the deliveries due and starts their
    /// attempts, waiting for none of them.
    async fn webhook_pass(self: &Arc<Self>, posting: &Arc<Posting>, sends: &mut Sends) -> Result<Pass, String> {
        let settings = &posting.settings;
        let now = millis(self.now());
        // An attempt that outlives this hold (a process that died mid-attempt) is
        // taken again afterwards.
        let hold_until = now.saturating_add(duration_millis(hold_for(settings.send_deadline())));
        let listed = settings
            .batch
            .saturating_add(u32::try_from(sends.busiest()).unwrap_or(u32::MAX));
        let organizations = self
            .bounded(self.store.due_delivery_organizations(now, listed))
            .await
            .ok_or_else(|| self.past_deadline())?
            .map_err(|error| error.to_string())?;
        sends
            .pass(organizations, |org, room| async move {
                let taken = self
                    .bounded(self.store.take_deliveries(&org, now, hold_until, room))
                    .await
                    .ok_or_else(|| self.past_deadline())?
                    .map_err(|error| error.to_string())?;
                let rows = taken.len();
                let started = taken
                    .into_iter()
                    .map(|delivery| fair::Send {
                        keys: vec![format!(
                            "{}/{}/{}",
                            delivery.org, delivery.notification_id, delivery.webhook_id
                        )],
                        work: Box::pin(Arc::clone(self).deliver(Arc::clone(posting), delivery)),
                    })
                    .collect();
                Ok((rows, started))
            })
            .await
    }

    /// One attempt at `delivery`, within its deadline, and its outcome recorded.
    async fn deliver(self: Arc<Self>, posting: Arc<Posting>, delivery: Delivery) {
        let span = tracing::info_span!(
            "POST",
            otel.kind = "client",
            http.request.method = "POST",
            agentprocess.webhook = %delivery.webhook_id,
            agentprocess.notification = %delivery.notification_id,
        );
        // An attempt, however late, continues the trace of the change that caused the
        // notification.
        agentprocess_telemetry::context::continue_from_traceparent(&span, delivery.trace_parent.as_deref(), None);
        let deadline = posting.settings.send_deadline();
        let attempt = tokio::time::timeout(deadline, self.attempt(&posting.client, &posting.settings, &delivery))
            .instrument(span)
            .await;
        let Ok(result) = attempt else {
            // Its hold ends soon after; it is taken again then.
            tracing::warn!(notification = %delivery.notification_id, webhook = %delivery.webhook_id,
                "webhook attempt past its deadline of {deadline:?}");
            return;
        };
        crate::observe::delivery(result.status);
        let recorded = match self.bounded(self.store.record_attempt(&delivery, &result)).await {
            Some(recorded) => recorded.map_err(|error| error.to_string()),
            None => Err(self.past_deadline()),
        };
        if let Err(error) = recorded {
            // The delivery is taken again when its hold ends.
            tracing::warn!(%error, notification = %delivery.notification_id, "delivery outcome not recorded");
        }
    }

    async fn attempt(&self, client: &Outbound, settings: &WebhookSettings, delivery: &Delivery) -> AttemptResult {
        let timestamp = self.now().as_second();
        let signature = open_secret(
            &self.settings.seal_key,
            &delivery.org,
            &delivery.webhook_id,
            &delivery.secret,
        )
        .map_err(|error| format!("the endpoint's secret cannot be opened: {error}"))
        .map(|secret| sign_webhook(&secret, &delivery.notification_id, timestamp, &delivery.body));
        let url = reqwest::Url::parse(&delivery.url)
            .map_err(|error| format!("the endpoint's URL is not valid: {error}"))
            .and_then(|url| {
                // An endpoint kept before https was required is not posted to.
                match send_refusal("the endpoint's URL", &url, self.settings.plain_http_hooks) {
                    Some(refused) => Err(refused),
                    None => Ok(url),
                }
            });
        let answer = match (signature, url) {
            (Err(unopened), _) => Err(unopened),
            (_, Err(invalid)) => Err(invalid),
            (Ok(None), _) => Err("the endpoint's secret is not a whsec_ key".to_owned()),
            (Ok(Some(signature)), Ok(url)) => client
                .send_for_status(
                    client
                        .request(reqwest::Method::POST, url)
                        .header("content-type", "application/json")
                        .header("webhook-id", &delivery.notification_id)
                        .header("webhook-timestamp", timestamp.to_string())
                        .header("webhook-signature", signature)
                        .body(delivery.body.clone()),
                )
                .await
                .map_err(|error| match error {
                    OutboundError::Refused(refused) => {
                        format!("refused: {refused} (private networks are not allowed)")
                    }
                    other => other.to_string(),
                }),
        };
        let at = millis(self.now());
        let (status_code, error) = match answer {
            Ok(status) if status.is_success() => {
                return AttemptResult {
                    status: DeliveryStatus::Delivered,
                    next_at: at,
                    status_code: Some(status.as_u16()),
                    error: None,
                    at,
                };
            }
            Ok(status) => (Some(status.as_u16()), Some(format!("the endpoint answered {status}"))),
            Err(error) => (None, Some(error)),
        };
        let (status, next_at) = if delivery.attempts >= settings.max_attempts {
            (DeliveryStatus::Failed, at)
        } else {
            (
                DeliveryStatus::Pending,
                at.saturating_add(backoff(settings, delivery.attempts)),
            )
        };
        tracing::info!(
            notification = %delivery.notification_id,
            webhook = %delivery.webhook_id,
            attempt = delivery.attempts,
            status = status.as_str(),
            error = error.as_deref().unwrap_or(""),
            "webhook not delivered"
        );
        AttemptResult {
            status,
            next_at,
            status_code,
            error,
            at,
        }
    }
}

/// The wait after attempt `attempts`: `retry_base` doubled per attempt, capped at
/// `retry_max`, less up to a fifth at random so endpoints that come back are not hit
/// by every retry at once.
pub(crate) fn backoff(settings: &WebhookSettings, attempts: u32) -> i64 {
    let base = duration_millis(settings.retry_base).max(1);
    let doubled = base.saturating_mul(1_i64 << attempts.saturating_sub(1).min(40));
    let wait = doubled.min(duration_millis(settings.retry_max).max(base));
    let mut byte = [0_u8; 1];
    let fraction = if getrandom::fill(&mut byte).is_ok() {
        i64::from(byte[0])
    } else {
        0
    };
    wait - wait / 5 * fraction / 255
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_like_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification.
        let signature = sign_webhook(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(
            signature.as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
        assert_eq!(sign_webhook("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, "{}"), None);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let settings = WebhookSettings {
            retry_base: Duration::from_secs(10),
            retry_max: Duration::from_secs(60),
            ..WebhookSettings::default()
        };
        for (attempts, full) in [(1, 10_000), (2, 20_000), (3, 40_000), (4, 60_000), (30, 60_000)] {
            let wait = backoff(&settings, attempts);
            assert!(wait <= full && wait >= full - full / 5, "attempt {attempts}: {wait}");
        }
    }
}
