//! Chat: a group's Slack-compatible incoming webhook (Slack, Mattermost and Rocket.Chat
//! take the same `{"text": …}` body, each read in its own markup). The URL is the
//! credential, so it is kept sealed and never shown again once set.

use agentprocess_auth::outbound::{Outbound, OutboundError};
use agentprocess_auth::{SealError, SecretKey};
use agentprocess_store::ChatHook;

use super::medium::Medium;
use crate::WebhookSettings;
use crate::hook_urls::{PlainHttpHooks, send_refusal};

/// Which markup a chat reads a post in, and so how a value is put into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChatKind {
    /// Slack's `mrkdwn` (`<…>` links and mentions).
    Slack,
    /// Markdown: Mattermost, Rocket.Chat and the other Slack-compatible chats.
    Markdown,
}

impl ChatKind {
    /// Every kind, as named.
    pub const ALL: [ChatKind; 2] = [ChatKind::Slack, ChatKind::Markdown];

    /// The name, as stored and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatKind::Slack => "slack",
            ChatKind::Markdown => "markdown",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The kind a hook's URL is, when its admin did not say: Slack's own hosts are
    /// Slack, any other is read as Markdown.
    pub fn of_url(url: &str) -> Self {
        let host = reqwest::Url::parse(url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase));
        match host.as_deref() {
            Some("hooks.slack.com" | "hooks.slack-gov.com") => ChatKind::Slack,
            _ => ChatKind::Markdown,
        }
    }

    /// How a value is put into a post.
    pub(crate) fn medium(self) -> Medium {
        match self {
            ChatKind::Slack => Medium::Slack,
            ChatKind::Markdown => Medium::Markdown,
        }
    }
}

/// Where a group's hook URL is sealed: bound to its organization and group.
pub(crate) fn hook_context(org: &str, group: &str) -> String {
    format!("chat-hook:{org}:{group}")
}

/// What `hook`'s chat reads: as its admin said, or else (a hook set before kinds were
/// told) as its opened `url` says.
pub(crate) fn kind_of(hook: &ChatHook, url: &str) -> ChatKind {
    hook.kind
        .as_deref()
        .and_then(ChatKind::parse)
        .unwrap_or_else(|| ChatKind::of_url(url))
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
    /// Posts with the webhooks' client settings (their short connect and total
    /// timeouts, and their rule for private addresses), to plain http hooks only as
    /// `plain_http` allows.
    pub(crate) fn new(settings: &WebhookSettings, plain_http: PlainHttpHooks) -> Result<Self, String> {
        Ok(Self {
            client: Outbound::new(settings.outbound())?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_slack_on_slacks_hosts_and_markdown_elsewhere() {
        for (url, kind) in [
            ("https://hooks.slack.com/services/T0/B0/X", ChatKind::Slack),
            ("https://HOOKS.SLACK.COM/services/T0/B0/X", ChatKind::Slack),
            ("https://hooks.slack-gov.com/services/T0/B0/X", ChatKind::Slack),
            ("https://chat.example.com/hooks/abc", ChatKind::Markdown),
            ("https://hooks.slack.com.evil.example/services/x", ChatKind::Markdown),
            ("not a url", ChatKind::Markdown),
        ] {
            assert_eq!(ChatKind::of_url(url), kind, "{url}");
        }
        for kind in ChatKind::ALL {
            assert_eq!(ChatKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ChatKind::parse("Slack"), None);
    }
}
