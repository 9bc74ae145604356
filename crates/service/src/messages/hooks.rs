//! The groups' chat hooks, as admins set them: the URL (the hook's credential) kept
//! sealed and never shown again, only its host.

use agentprocess_auth::SecretKey;
use agentprocess_store::{ChatHook, Directory as _, Messages as _, MessagesTx as _, Store as _, StoreTx as _};

use super::chat::{ChatKind, hook_context, kind_of, open_hook};
use crate::admin::Admin;
use crate::hook_urls::hook_url_issues;
use crate::{Error, invalid, millis, not_found};

/// A group's chat hook as admins see it: the URL is never shown again once set.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatHookView {
    /// The group.
    pub group: String,
    /// The host the hook posts to.
    pub host: String,
    /// The markup its chat reads posts in.
    pub kind: ChatKind,
    /// When it was set (milliseconds).
    pub created_at: i64,
}

impl Admin {
    /// The organization's chat hooks.
    pub async fn chat_hooks(&self, org: &str) -> Result<Vec<ChatHookView>, Error> {
        let key = self.seal_key()?;
        let hooks = self.store.chat_hooks(org).await?;
        Ok(hooks.into_iter().map(|hook| view(key, org, hook)).collect())
    }

    /// Points `group` at a Slack-compatible incoming-webhook `url` whose chat reads
    /// `kind` (when not given, as the URL's host says), replacing its hook.
    pub async fn set_chat_hook(
        &self,
        org: &str,
        group: &str,
        url: &str,
        kind: Option<ChatKind>,
    ) -> Result<ChatHookView, Error> {
        let issues = hook_url_issues("url", url, self.plain_http_hooks);
        let groups = self.store.groups(org).await?;
        let operators = agentprocess_engine::Settings::default().escalation_group;
        if group != operators && !groups.iter().any(|known| known == group) {
            return Err(not_found(format!("no group {group:?} in this organization")));
        }
        if !issues.is_empty() {
            return Err(invalid("the chat hook cannot be set", issues));
        }
        let kind = kind.unwrap_or_else(|| ChatKind::of_url(url));
        let hook = ChatHook {
            group: group.to_owned(),
            sealed_url: self.seal_key()?.seal(url, &hook_context(org, group)),
            kind: Some(kind.as_str().to_owned()),
            created_at: millis(self.now()),
        };
        let mut tx = self.store.begin().await?;
        tx.put_chat_hook(org, &hook).await?;
        tx.commit().await?;
        Ok(ChatHookView {
            group: hook.group,
            host: host_of(url).unwrap_or_default(),
            kind,
            created_at: hook.created_at,
        })
    }

    /// Removes `group`'s chat hook; its messages not yet sent are dropped.
    pub async fn remove_chat_hook(&self, org: &str, group: &str) -> Result<(), Error> {
        let mut tx = self.store.begin().await?;
        let removed = tx.remove_chat_hook(org, group, millis(self.now())).await?;
        tx.commit().await?;
        if removed {
            Ok(())
        } else {
            Err(not_found(format!("group {group:?} has no chat hook")))
        }
    }

    /// Seals again with the current key every chat hook URL of `org` that a previous
    /// key sealed; how many.
    pub async fn reseal_chat_hooks(&self, org: &str) -> Result<usize, Error> {
        let key = self.seal_key()?;
        let kept = self.store.chat_hooks(org).await?;
        let mut tx = self.store.begin().await?;
        let mut resealed = 0;
        for hook in kept {
            let url = open_hook(key, org, &hook.group, &hook.sealed_url)
                .map_err(|error| Error::internal(format!("chat hook of group {} of {org}: {error}", hook.group)))?;
            if !key.sealed_with_previous(&hook.sealed_url) {
                continue;
            }
            let resealed_hook = ChatHook {
                sealed_url: key.seal(&url, &hook_context(org, &hook.group)),
                ..hook
            };
            tx.put_chat_hook(org, &resealed_hook).await?;
            resealed += 1;
        }
        tx.commit().await?;
        Ok(resealed)
    }
}

/// The host a hook URL posts to.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url).ok()?.host_str().map(str::to_owned)
}

/// What admins see of a kept hook.
fn view(key: &SecretKey, org: &str, hook: ChatHook) -> ChatHookView {
    let url = open_hook(key, org, &hook.group, &hook.sealed_url).ok();
    let host = url
        .as_deref()
        .and_then(host_of)
        .unwrap_or_else(|| "(cannot be opened with this server's key)".to_owned());
    ChatHookView {
        kind: kind_of(&hook, url.as_deref().unwrap_or_default()),
        group: hook.group,
        host,
        created_at: hook.created_at,
    }
}
