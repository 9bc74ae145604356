//! Admin actions: organizations, identities and their bearer tokens; drafts, role
//! bindings, publication; webhooks and limits. The steps under the organization's
//! operations (`agentprocess-operations`), which check the caller's role and write the
//! audit entry for every surface; called as they are only by what acts as no caller
//! (`agentprocess dev`'s seed, the tests' fixtures).

use std::collections::BTreeMap;
use std::sync::Arc;

use agentprocess_auth::SecretKey;
use agentprocess_auth::idempotency::{Idempotent, remember};
use agentprocess_engine::{AgentBindings, EVERY_AGENT_STEP, PersonFormat};
use agentprocess_format::{Capabilities, Options, ValidatedProcess};
use agentprocess_store::{
    Audience, DeliveryRecord, DirectoryTx as _, Identity, IdentityKind, Limit, LimitLayer, LimitValues, LimitsTx as _,
    NewVersion, OrgLimits, Role, SqlTx, Store, StoreTx, StoredDraft, StoredVersion, TokenRow, Webhook,
};

use crate::hook_urls::{PlainHttpHooks, hook_url_issues};
use crate::ids::{random_id, secret, sha256_hex, webhook_secret};
use crate::{CAPABILITIES, Clock, Error, invalid, millis, not_found, webhooks};
use agentprocess_store::Directory;
use agentprocess_store::Limits;
use agentprocess_store::SqlStore;

/// A draft after import or binding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Draft {
    /// The process name.
    pub process: String,
    /// Every role the process names, in order of first use.
    pub roles: Vec<String>,
    /// Role → group bindings so far.
    pub bindings: BTreeMap<String, String>,
    /// The external systems the process says it needs (`requires.systems`).
    pub systems: Vec<String>,
    /// What the admin should know about the bindings made: a group bound while it has
    /// no members, because the identity provider fills it as people sign in.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Every agent step the process has, in order.
    #[serde(default)]
    pub agent_steps: Vec<String>,
    /// Which agents may claim its agent steps; empty: any agent of the organization.
    #[serde(default)]
    pub agents: AgentBindings,
}

impl Draft {
    /// The draft of `process` as `stored`, with `notes` on the binding just made.
    pub(crate) fn of(process: &ValidatedProcess, stored: &StoredDraft, notes: Vec<String>) -> Result<Self, Error> {
        Ok(Self {
            process: process.document().name.clone(),
            roles: process.document().roles().into_iter().map(str::to_owned).collect(),
            bindings: parse_roles(&stored.roles)?,
            systems: systems_of(process),
            notes,
            agent_steps: agent_steps(process),
            agents: parse_agents(&stored.agents)?,
        })
    }
}

/// What publishing did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Published {
    /// The version number.
    pub number: u32,
    /// The content hash.
    pub content_hash: String,
    /// `true` when the latest version already had this content and bindings, so no
    /// new version was made.
    pub unchanged: bool,
}

/// The admin actions over a store.
pub struct Admin {
    pub(crate) store: SqlStore,
    clock: Arc<dyn Clock>,
    person: PersonFormat,
    capabilities: Capabilities,
    /// Seals the secrets it makes and keeps (webhook signing secrets); without it,
    /// nothing that keeps a secret can be done.
    seal_key: Option<SecretKey>,
    /// Whether webhooks and chat hooks may be set to plain http URLs.
    pub(crate) plain_http_hooks: PlainHttpHooks,
}

impl Admin {
    /// Admin actions on `store`, with people identified in `person` format.
    pub fn new(store: SqlStore, clock: Arc<dyn Clock>, person: PersonFormat) -> Self {
        Self {
            store,
            clock,
            person,
            capabilities: CAPABILITIES,
            seal_key: None,
            plain_http_hooks: PlainHttpHooks::Refused,
        }
    }

    /// Lets webhooks and chat hooks be set to plain http URLs when `plain_http` allows
    /// it (the servers' `--allow-plain-http-hooks`); only https otherwise.
    #[must_use]
    pub fn with_plain_http_hooks(mut self, plain_http: PlainHttpHooks) -> Self {
        self.plain_http_hooks = plain_http;
        self
    }

    /// Seals the secrets it keeps with `key` (the servers' `--secret-key`).
    #[must_use]
    pub fn with_seal_key(mut self, key: SecretKey) -> Self {
        self.seal_key = Some(key);
        self
    }

    pub(crate) fn seal_key(&self) -> Result<&SecretKey, Error> {
        self.seal_key
            .as_ref()
            .ok_or_else(|| Error::internal("no secret key to seal with: give --secret-key"))
    }

    /// Publishes processes that use `capabilities` (check-1 only where the servers of
    /// this database run an evaluator); [`CAPABILITIES`] otherwise.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    pub(crate) fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// Creates an organization.
    pub async fn create_org(&self, id: &str, name: &str) -> Result<(), Error> {
        let mut issues = Vec::new();
        check_id("organization id", id, &mut issues);
        refuse(issues)?;
        let mut tx = self.store.begin().await?;
        match tx.create_org(id, id, name, millis(self.now())).await {
            Err(error) if error.is_unique_violation() => {
                return Err(refused(vec![format!("organization {id:?}: exists already")]));
            }
            other => other?,
        }
        Ok(tx.commit().await?)
    }

    /// Creates an identity in `groups` (each created if missing): a person with
    /// `role`, or an agent when `role` is `None`. People need a person value (an
    /// email).
    pub async fn create_identity(
        &self,
        org: &str,
        role: Option<Role>,
        id: &str,
        name: &str,
        person: Option<&str>,
        groups: &[String],
    ) -> Result<Identity, Error> {
        let mut issues = Vec::new();
        check_id("identity id", id, &mut issues);
        let kind = if role.is_some() {
            IdentityKind::Person
        } else {
            IdentityKind::Agent
        };
        match (kind, person) {
            (IdentityKind::Agent, Some(_)) => issues.push("person: agents have no person value".to_owned()),
            (IdentityKind::Person, None) => {
                issues.push(format!("person: required for a {kind}"));
            }
            (IdentityKind::Person, Some(value)) if !self.person.accepts(value) => {
                issues.push(format!("person: {value:?} is not an email"));
            }
            _ => {}
        }
        for group in groups {
            check_id("group id", group, &mut issues);
        }
        refuse(issues)?;
        let mut groups = groups.to_vec();
        groups.sort();
        groups.dedup();
        let identity = Identity {
            org: org.to_owned(),
            id: id.to_owned(),
            kind,
            role,
            person: person.map(str::to_lowercase),
            name: name.to_owned(),
            groups,
            deactivated_at: None,
        };
        let now = millis(self.now());
        let mut tx = self.store.begin().await?;
        for group in &identity.groups {
            tx.create_group(org, group, now).await?;
        }
        match tx.create_identity(&identity, now).await {
            Err(error) if error.is_unique_violation() => {
                let what = match &identity.person {
                    Some(person) => format!("identity {id:?} or person {person:?}"),
                    None => format!("identity {id:?}"),
                };
                return Err(refused(vec![format!("{what}: exists already in {org}")]));
            }
            other => other?,
        }
        tx.commit().await?;
        Ok(identity)
    }

    /// Issues a new bearer token for an identity; only its hash is kept, so this is
    /// the one time it can be read.
    pub async fn issue_token(&self, org: &str, identity: &str) -> Result<String, Error> {
        if self.store.identity(org, identity).await?.is_none() {
            return Err(not_found(format!("there is no identity {identity:?}")));
        }
        let token = format!("apt_{}", secret());
        let now = millis(self.now());
        let mut tx = self.store.begin().await?;
        tx.add_token(&TokenRow {
            id: agentprocess_auth::secrets::new_id("tok_"),
            org: org.to_owned(),
            identity: identity.to_owned(),
            token_hash: sha256_hex(token.as_bytes()),
            audience: Audience::Mcp,
            scope: None,
            name: None,
            expires_at: None,
            created_by: None,
            created_at: now,
            revoked_at: None,
        })
        .await?;
        tx.commit().await?;
        Ok(token)
    }

    /// Imports a PROCESS.md as the draft of its process, keeping bindings of roles it
    /// still names. Refused, with every issue, when it would not publish here.
    pub async fn import_draft(
        &self,
        org: &str,
        source: &[u8],
        folder: Option<&str>,
        request: Option<&Idempotent>,
    ) -> Result<Draft, Error> {
        let process = validated(source, folder, self.capabilities)?;
        let name = process.document().name.clone();
        // Under the organization's lock, as bindings are made: a binding made while
        // the text is replaced is kept or refused, never lost.
        let mut tx = self.store.begin().await?;
        lock(&mut tx, org).await?;
        let (roles, agents) = match tx.draft(org, &name).await? {
            Some(previous) => (parse_roles(&previous.roles)?, parse_agents(&previous.agents)?),
            None => (BTreeMap::new(), AgentBindings::default()),
        };
        let named = process.document().roles();
        let roles: BTreeMap<String, String> = roles
            .into_iter()
            .filter(|(role, _)| named.contains(&role.as_str()))
            .collect();
        let steps = agent_steps(&process);
        let agents = AgentBindings(
            agents
                .0
                .into_iter()
                .filter(|(step, _)| step == EVERY_AGENT_STEP || steps.contains(step))
                .collect(),
        );
        let stored = StoredDraft {
            source: String::from_utf8_lossy(source).into_owned(),
            roles: roles_json(&roles),
            agents: agents_json(&agents),
        };
        tx.put_draft(org, &name, &stored, millis(self.now())).await?;
        let draft = Draft::of(&process, &stored, Vec::new())?;
        remember(request, &mut tx, org, &draft, millis(self.now())).await?;
        tx.commit().await?;
        Ok(draft)
    }

    /// A draft as stored and the process it validates as.
    async fn stored_draft(&self, org: &str, process: &str) -> Result<(StoredDraft, ValidatedProcess), Error> {
        let stored = self
            .store
            .draft(org, process)
            .await?
            .ok_or_else(|| not_found(format!("there is no draft of process {process:?}")))?;
        let parsed = validated(stored.source.as_bytes(), None, self.capabilities)?;
        Ok((stored, parsed))
    }

    /// The draft of a process.
    pub async fn draft(&self, org: &str, process: &str) -> Result<Draft, Error> {
        let (stored, parsed) = self.stored_draft(org, process).await?;
        Draft::of(&parsed, &stored, Vec::new())
    }

    /// Binds a role of a draft to a group. A group that does not exist is refused, and
    /// so is one without members unless `force` (its work items would wait for
    /// nobody).
    pub async fn bind_role(
        &self,
        org: &str,
        process: &str,
        role: &str,
        group: &str,
        force: bool,
    ) -> Result<Draft, Error> {
        let mut tx = self.store.begin().await?;
        let (mut stored, parsed) = self.locked_draft(&mut tx, org, process).await?;
        let named: Vec<String> = parsed.document().roles().into_iter().map(str::to_owned).collect();
        let mut issues = Vec::new();
        if !named.iter().any(|known| known == role) {
            issues.push(format!(
                "role {role:?}: not named by {process} (it names: {})",
                named.join(", ")
            ));
        }
        check_id("group id", group, &mut issues);
        let groups = tx.group_list(org).await?;
        // An organization whose groups come from its provider's groups claim fills a
        // group as its people sign in: nobody may have signed in yet.
        let claim = match tx.organization(org).await? {
            Some(organization) => organization.groups_claim,
            None => None,
        };
        let mut notes = Vec::new();
        match groups.iter().find(|known| known.id == group) {
            None => issues.push(no_such_group(group, &groups)),
            Some(known) if known.members.is_empty() => match &claim {
                Some(claim) => notes.push(format!(
                    "group {group:?} has no members yet: the identity provider's {claim:?} claim fills it \
                     as its people sign in ({}), and the work of role {role} waits for them until then",
                    if known.claim_values.is_empty() {
                        format!("the value {group:?}")
                    } else {
                        format!("the values {}", known.claim_values.join(", "))
                    }
                )),
                None if force => notes.push(format!(
                    "group {group:?} has no members: the work of role {role} waits until it has"
                )),
                None => issues.push(format!(
                    "group {group:?}: has no members, so the work of role {role} would wait for nobody; \
                     add members first, or bind with force"
                )),
            },
            Some(_) => {}
        }
        refuse(issues)?;
        let mut bindings = parse_roles(&stored.roles)?;
        bindings.insert(role.to_owned(), group.to_owned());
        stored.roles = roles_json(&bindings);
        tx.put_draft(org, process, &stored, millis(self.now())).await?;
        tx.commit().await?;
        Draft::of(&parsed, &stored, notes)
    }

    /// A draft and the process it validates as, read after taking the organization's
    /// lock in `tx`: a binding read, checked and written under it cannot race another
    /// binding of the draft, nor the deletion of a group it names (which takes it too).
    pub(crate) async fn locked_draft(
        &self,
        tx: &mut SqlTx,
        org: &str,
        process: &str,
    ) -> Result<(StoredDraft, ValidatedProcess), Error> {
        lock(tx, org).await?;
        let stored = tx
            .draft(org, process)
            .await?
            .ok_or_else(|| not_found(format!("there is no draft of process {process:?}")))?;
        let parsed = validated(stored.source.as_bytes(), None, self.capabilities)?;
        Ok((stored, parsed))
    }

    /// Publishes a draft as the next version. Refused while a role is unbound.
    pub async fn publish(&self, org: &str, process: &str, request: Option<&Idempotent>) -> Result<Published, Error> {
        let (stored, parsed) = self.stored_draft(org, process).await?;
        let bindings = parse_roles(&stored.roles)?;
        let agents = parse_agents(&stored.agents)?;
        let unbound: Vec<String> = parsed
            .document()
            .roles()
            .into_iter()
            .filter(|role| !bindings.contains_key(*role))
            .map(|role| format!("role {role}: not bound to a group"))
            .collect();
        refuse(unbound)?;
        if let Some(latest) = self.store.version(org, process, None).await?
            && latest.content_hash == parsed.content_hash()
            && parse_roles(&latest.roles)? == bindings
            && parse_agents(&latest.agents)? == agents
        {
            return Ok(Published {
                number: latest.number,
                content_hash: latest.content_hash,
                unchanged: true,
            });
        }
        let version = NewVersion {
            process: process.to_owned(),
            content_hash: parsed.content_hash().to_owned(),
            source: stored.source,
            frontmatter: parsed.frontmatter().to_string(),
            body: parsed.body().to_owned(),
            roles: stored.roles,
            agents: agents_json(&agents),
            claimants: claimant_rows(&agents),
        };
        let mut tx = self.store.begin().await?;
        let number = tx.publish(org, &version, millis(self.now())).await?;
        let published = Published {
            number,
            content_hash: version.content_hash,
            unchanged: false,
        };
        remember(request, &mut tx, org, &published, millis(self.now())).await?;
        tx.commit().await?;
        Ok(published)
    }

    /// The latest published version of every process of an organization, by name.
    pub async fn latest_versions(&self, org: &str) -> Result<Vec<StoredVersion>, Error> {
        let mut versions = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store
                .latest_versions(org, after.as_deref(), crate::MAX_PAGE)
                .await?;
            let full = page.len() == crate::MAX_PAGE as usize;
            after = page.last().map(|version| version.process.clone());
            versions.extend(page);
            if !full {
                return Ok(versions);
            }
        }
    }

    /// Every published version of a process, oldest first.
    pub async fn versions(&self, org: &str, process: &str) -> Result<Vec<StoredVersion>, Error> {
        Ok(self.store.versions(org, process).await?)
    }

    /// The check agreement report of `process` (see
    /// [`agentprocess_views::agreement`]): every run of it read, oldest first.
    pub async fn check_agreement(
        &self,
        org: &str,
        process: &str,
        query: &agentprocess_views::agreement::AgreementQuery,
    ) -> Result<agentprocess_views::agreement::AgreementReport, Error> {
        let stored = self.store.versions(org, process).await?;
        if stored.is_empty() {
            return Err(not_found(format!("there is no published process {process:?}")));
        }
        let versions = stored
            .iter()
            .map(crate::versions::parsed)
            .collect::<Result<Vec<_>, Error>>()?;
        let mut runs = Vec::new();
        let mut filter = agentprocess_store::RunFilter {
            process: Some(process.to_owned()),
            limit: 500,
            ..agentprocess_store::RunFilter::default()
        };
        loop {
            let page = self.store.list_runs(org, &filter).await?;
            for stored in &page.items {
                runs.push(crate::stored::load(stored).map_err(crate::retry)?.into_run());
            }
            match page.next {
                Some(next) => filter.after = Some(next),
                None => break,
            }
        }
        let versions: Vec<&agentprocess_engine::ProcessVersion> = versions.iter().collect();
        Ok(agentprocess_views::agreement::report(process, &runs, &versions, query))
    }

    /// Every identity of an organization.
    pub async fn identities(&self, org: &str) -> Result<Vec<Identity>, Error> {
        Ok(self.store.identities(org).await?)
    }

    /// Adds a webhook endpoint that receives every notification of the organization
    /// from now on, signed with a new `whsec_…` secret (returned, with the id; kept
    /// sealed, and recorded sealed for a replay, which [`Admin::revealed`] opens).
    pub async fn add_webhook(&self, org: &str, url: &str, request: Option<&Idempotent>) -> Result<Webhook, Error> {
        let mut issues = hook_url_issues("url", url, self.plain_http_hooks);
        // Admins list endpoints' URLs and the audit log records them: no secret in one.
        if reqwest::Url::parse(url).is_ok_and(|parsed| !parsed.username().is_empty() || parsed.password().is_some()) {
            issues.push("url: must not carry credentials".to_owned());
        }
        refuse(issues)?;
        let id = random_id("wh_", 8);
        let secret = webhook_secret();
        let kept = Webhook {
            secret: self.seal_key()?.seal(&secret, &webhooks::secret_context(org, &id)),
            id,
            url: url.to_owned(),
            created_at: millis(self.now()),
        };
        let mut tx = self.store.begin().await?;
        tx.add_webhook(org, &kept).await?;
        remember(request, &mut tx, org, &kept, kept.created_at).await?;
        tx.commit().await?;
        Ok(Webhook { secret, ..kept })
    }

    /// Seals again, with the current key, every webhook signing secret of `org` that
    /// a previous key sealed or that was kept before secrets were sealed; returns how
    /// many.
    pub async fn reseal_webhooks(&self, org: &str) -> Result<usize, Error> {
        let key = self.seal_key()?;
        let kept = self.store.webhooks(org).await?;
        let mut tx = self.store.begin().await?;
        let mut resealed = 0;
        for webhook in kept {
            // Each must open: one sealed with a key given neither as current nor as
            // previous stops the reseal, before it changes anything of `org`.
            let secret = webhooks::open_secret(key, org, &webhook.id, &webhook.secret)
                .map_err(|error| Error::internal(format!("webhook {} of {org}: {error}", webhook.id)))?;
            if SecretKey::is_sealed(&webhook.secret) && !key.sealed_with_previous(&webhook.secret) {
                continue;
            }
            let sealed = key.seal(&secret, &webhooks::secret_context(org, &webhook.id));
            tx.set_webhook_secret(org, &webhook.id, &sealed).await?;
            resealed += 1;
        }
        tx.commit().await?;
        Ok(resealed)
    }

    /// A webhook as it was kept or recorded, with its signing secret opened.
    pub fn revealed(&self, org: &str, webhook: Webhook) -> Result<Webhook, Error> {
        let secret =
            webhooks::open_secret(self.seal_key()?, org, &webhook.id, &webhook.secret).map_err(Error::internal)?;
        Ok(Webhook { secret, ..webhook })
    }

    /// Sends one delivery again (one more attempt, due now), whatever became of it.
    pub async fn redeliver(&self, org: &str, webhook_id: &str, notification_id: &str) -> Result<(), Error> {
        let mut tx = self.store.begin().await?;
        if !tx
            .redeliver(org, notification_id, webhook_id, millis(self.now()))
            .await?
        {
            return Err(not_found(format!(
                "there is no delivery of notification {notification_id:?} to webhook {webhook_id:?}"
            )));
        }
        Ok(tx.commit().await?)
    }

    /// Removes a webhook endpoint; its pending deliveries are given up.
    pub async fn remove_webhook(&self, org: &str, id: &str) -> Result<(), Error> {
        let mut tx = self.store.begin().await?;
        if !tx.remove_webhook(org, id, millis(self.now())).await? {
            return Err(not_found(format!("there is no webhook {id:?}")));
        }
        Ok(tx.commit().await?)
    }

    /// Grants `org` limits in place of the server's defaults (0: no limit): those
    /// `changes` names, kept with what was granted before unless `reset`. Its admins
    /// may then lower them, never raise them. Returns the organization's overrides.
    pub async fn grant_limits(&self, org: &str, changes: &LimitValues, reset: bool) -> Result<OrgLimits, Error> {
        if self.store.organization(org).await?.is_none() {
            return Err(not_found(format!("there is no organization {org:?}")));
        }
        let mut granted = if reset {
            LimitValues::default()
        } else {
            self.store.org_limits(org).await?.granted
        };
        for limit in Limit::ALL {
            if let Some(value) = changes.get(limit) {
                granted.set(limit, Some(value));
            }
        }
        let mut tx = self.store.begin().await?;
        tx.put_org_limits(org, LimitLayer::Granted, &granted, millis(self.now()))
            .await?;
        tx.commit().await?;
        Ok(self.store.org_limits(org).await?)
    }

    /// The organization's limits as the platform granted them and its admins chose.
    pub async fn org_limits(&self, org: &str) -> Result<OrgLimits, Error> {
        Ok(self.store.org_limits(org).await?)
    }

    /// The organization's webhook endpoints.
    pub async fn webhooks(&self, org: &str) -> Result<Vec<Webhook>, Error> {
        Ok(self.store.webhooks(org).await?)
    }

    /// The organization's latest webhook deliveries, newest first.
    pub async fn deliveries(&self, org: &str, limit: u32) -> Result<Vec<DeliveryRecord>, Error> {
        Ok(self.store.deliveries(org, limit).await?)
    }
}

fn systems_of(process: &ValidatedProcess) -> Vec<String> {
    process
        .document()
        .requires
        .as_ref()
        .map(|requires| requires.systems.clone())
        .unwrap_or_default()
}

/// The process, or every issue in the format library's words with line and column.
pub(crate) fn validated(
    source: &[u8],
    folder: Option<&str>,
    capabilities: Capabilities,
) -> Result<ValidatedProcess, Error> {
    let options = Options { capabilities, folder };
    agentprocess_format::validate(source, &options).map_err(|refusal| {
        refused(
            refusal
                .issues
                .iter()
                .map(|issue| match &issue.position {
                    Some(at) => format!("{}:{}: {issue}", at.line, at.column),
                    None => issue.to_string(),
                })
                .collect(),
        )
    })
}

/// `invalid`, naming every issue of an admin request.
/// Takes the organization's lock in `tx`, which drafts are changed under.
async fn lock(tx: &mut SqlTx, org: &str) -> Result<(), Error> {
    tx.lock_org(org)
        .await?
        .ok_or_else(|| not_found("there is no such organization".to_owned()))?;
    Ok(())
}

/// The refusal of a group the organization does not have, naming those it has.
pub(crate) fn no_such_group(group: &str, groups: &[agentprocess_store::Group]) -> String {
    let ids: Vec<&str> = groups.iter().map(|known| known.id.as_str()).collect();
    format!(
        "group {group:?}: the organization has no such group (it has: {})",
        if ids.is_empty() {
            "none".to_owned()
        } else {
            ids.join(", ")
        }
    )
}

fn refused(issues: Vec<String>) -> Error {
    invalid("the request was refused; nothing changed", issues)
}

pub(crate) fn refuse(issues: Vec<String>) -> Result<(), Error> {
    if issues.is_empty() {
        Ok(())
    } else {
        Err(refused(issues))
    }
}

/// Ids chosen by admins: 1–64 of `a-z 0-9 _ - .`, starting with a letter or digit.
fn check_id(what: &str, id: &str, issues: &mut Vec<String>) {
    let valid = (1..=64).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if !valid {
        issues.push(format!(
            "{what} {id:?}: use 1 to 64 of a-z, 0-9, '_', '-', '.', starting with a letter or digit"
        ));
    }
}

fn parse_roles(text: &str) -> Result<BTreeMap<String, String>, Error> {
    serde_json::from_str(text)
        .map_err(|error| Error::internal(agentprocess_store::Error::Corrupt(format!("roles: {error}"))))
}

fn roles_json(bindings: &BTreeMap<String, String>) -> String {
    serde_json::to_string(bindings).unwrap_or_else(|_| "{}".to_owned())
}

pub(crate) fn parse_agents(text: &str) -> Result<AgentBindings, Error> {
    serde_json::from_str(text)
        .map_err(|error| Error::internal(agentprocess_store::Error::Corrupt(format!("agent bindings: {error}"))))
}

pub(crate) fn agents_json(bindings: &AgentBindings) -> String {
    serde_json::to_string(bindings).unwrap_or_else(|_| "{}".to_owned())
}

/// A version's agent bindings as the rows `get_work` filters by.
fn claimant_rows(bindings: &AgentBindings) -> Vec<(String, &'static str, String)> {
    let mut rows = Vec::new();
    for (step, claimants) in &bindings.0 {
        rows.extend(
            claimants
                .agents
                .iter()
                .map(|agent| (step.clone(), "agent", agent.clone())),
        );
        rows.extend(
            claimants
                .groups
                .iter()
                .map(|group| (step.clone(), "group", group.clone())),
        );
    }
    rows
}

/// The ids of a process's agent steps, in order.
pub(crate) fn agent_steps(process: &ValidatedProcess) -> Vec<String> {
    process
        .document()
        .steps
        .iter()
        .filter(|step| matches!(step.kind, agentprocess_format::StepKind::Agent(_)))
        .map(|step| step.id.clone())
        .collect()
}
