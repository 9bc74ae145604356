//! Chat: a group's Slack-compatible incoming webhook (Slack, Mattermost and Rocket.Chat
//! take the same `{"text": …}` body). The URL is the credential, so it is kept sealed
//! and never shown again once set.

use agentprocess_auth::outbound::{Outbound, OutboundError, OutboundSettings};
use agentprocess_auth::{SealError, SecretKey};

use crate::WebhookSettings;
use crate::hook_urls::{PlainHttpHooks, send_refusal};

/// Where a group's hook URL is sealed: bound to its organization and group.
pub(crate) fn hook_context(org: &str, group: &str) -> String {
    format!("chat-hook:{org}:{group}")
}

/// A hook URL as kept, opened.
pub(crate) fn open_hook(key: &SecretKey, org: &str, group: &str, sealed: &str) -> Result<String, SealError> {
    key.open(sealed, &hook_context(org, group))
}

/// Posts to chat hooks, refusing private addresses unless allowed (as webhooks do),
/// and plain http unless allowed.
pub(crate) struct Chat {
    client: Outbound,
    plain_http: PlainHttpHooks,
}

impl Chat {
    pub(crate) fn new(settings: &WebhookSettings, plain_http: PlainHttpHooks) -> Result<Self, String> {
        Ok(Self {
            client: Outbound::new(OutboundSettings {
                allow_private: settings.allow_private_networks,
                timeout: settings.timeout,
                ..OutboundSettings::default()
            })?,
            plain_http,
        })
    }

    /// Posts `text` to `url`; a plain http URL kept from before https was required is
    /// refused, unposted.
    pub(crate) async fn post(&self, url: &str, text: &str) -> Result<(), String> {
        let url = reqwest::Url::parse(url).map_err(|error| format!("the hook's URL is not valid: {error}"))?;
        if let Some(refused) = send_refusal("the hook's URL", &url, self.plain_http) {
            return Err(refused);
        }
        let body = serde_json::json!({ "text": text }).to_string();
        let status = self
            .client
            .send_for_status(
                self.client
                    .request(reqwest::Method::POST, url)
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await
            .map_err(|error| match error {
                OutboundError::Refused(refused) => format!("refused: {refused} (private networks are not allowed)"),
                other => other.to_string(),
            })?;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the hook answered {status}"))
        }
    }
}
