//! Reading and changing what people hear of and the organization's defaults. The
//! roles are checked by the caller (`crates/operations`).

use agentprocess_store::{MessageRecord, Messages as _, MessagesTx as _, Store as _, StoreTx as _};

use super::choices::{Choices, Chosen, OrgMessageSettings};
use crate::{Error, Service, invalid, millis, retry};

impl Service {
    /// The organization's settings of messages, and what `identity` chose.
    pub async fn message_settings(&self, org: &str, identity: &str) -> Result<(OrgMessageSettings, Choices), Error> {
        let mut chosen = Chosen::read(org, self.store.message_choices(org).await.map_err(retry)?);
        let own = chosen.people.remove(identity).unwrap_or_default();
        Ok((chosen.organization, own))
    }

    /// Replaces what `identity` chose.
    pub async fn set_message_choices(&self, org: &str, identity: &str, choices: &Choices) -> Result<(), Error> {
        let text = serde_json::to_string(choices).map_err(retry)?;
        self.put_choices(org, identity, &text).await
    }

    /// Replaces the organization's settings of messages.
    pub async fn set_org_message_settings(&self, org: &str, settings: &OrgMessageSettings) -> Result<(), Error> {
        let issues = settings.issues();
        if !issues.is_empty() {
            return Err(invalid("the message settings are not valid", issues));
        }
        let text = serde_json::to_string(settings).map_err(retry)?;
        self.put_choices(org, "", &text).await
    }

    async fn put_choices(&self, org: &str, identity: &str, text: &str) -> Result<(), Error> {
        let mut tx = self.store.begin().await.map_err(retry)?;
        tx.put_message_choices(org, identity, text, millis(self.now()))
            .await
            .map_err(retry)?;
        tx.commit().await.map_err(retry)
    }

    /// The organization's latest messages to people, newest first.
    pub async fn messages(&self, org: &str, limit: u32) -> Result<Vec<MessageRecord>, Error> {
        self.store.messages(org, limit).await.map_err(retry)
    }
}
