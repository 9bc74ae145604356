//! Processes: import a PROCESS.md as a draft, bind its roles to groups and its agent
//! steps to agents, publish it as a numbered version with its content hash, read
//! versions and compare two.

use agentprocess_auth::audit::{AuditEvent, detail};
use agentprocess_auth::idempotency::Operation;
use agentprocess_auth::{Acting, Role};
use agentprocess_engine::Claimants;
use agentprocess_service::admin::{Draft, Published};
use agentprocess_store::{KeptOpen, Openings, Store, StoredVersion};
use agentprocess_views::agreement::{AgreementQuery, AgreementReport};
use serde_json::json;

use crate::{Error, Operations, archive, unless_replayed};

/// The largest PROCESS.md an import takes.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;

/// An uploaded file: a PROCESS.md, or its folder as an archive.
#[derive(Debug)]
pub struct Source {
    /// The PROCESS.md.
    pub text: Vec<u8>,
    /// The folder an archive held it in.
    pub folder: Option<String>,
}

/// What was uploaded as the PROCESS.md: the file itself, or the one an archive (tar,
/// tar.gz or zip) holds, with the folder it sits in there.
pub fn unpack(bytes: Vec<u8>) -> Result<Source, Error> {
    if archive::is_archive(&bytes) {
        let found = archive::process_file(&bytes, MAX_SOURCE_BYTES)
            .map_err(|issues| Error::invalid("the archive holds no process to import", issues))?;
        return Ok(Source {
            text: found.source,
            folder: found.folder,
        });
    }
    if bytes.len() > MAX_SOURCE_BYTES {
        return Err(Error::invalid(
            "the PROCESS.md is too large",
            vec![format!("file: {} bytes, at most {MAX_SOURCE_BYTES}", bytes.len())],
        ));
    }
    Ok(Source {
        text: bytes,
        folder: None,
    })
}

/// The agents and groups of agents that may claim an agent step of a draft.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentBinding {
    /// Agent identity ids.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Group ids: every agent in one of them.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Bind even to groups that have no agents yet.
    #[serde(default)]
    pub force: bool,
}

/// The group a role of a draft is bound to.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The group's id.
    pub group: String,
    /// Bind even though the group has no members yet.
    #[serde(default)]
    pub force: bool,
}

/// Why an admin keeps a version open to new runs.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeepOpen {
    /// Why runs may still start on it (who still needs it, until when); kept with
    /// the version and in the audit log. Required.
    #[serde(default)]
    pub reason: String,
}

/// Two versions of a process compared.
#[derive(Debug)]
pub struct Diff {
    /// The older.
    pub from: StoredVersion,
    /// The newer.
    pub to: StoredVersion,
    /// A unified diff of the two PROCESS.md texts.
    pub unified: String,
}

impl Operations {
    /// The latest version of each process.
    pub async fn latest_versions(&self, acting: &Acting) -> Result<Vec<StoredVersion>, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.admin().latest_versions(acting.org()).await?)
    }

    /// Imports `source` as the draft of its process; `folder`, when given, must be
    /// the process's name.
    pub async fn import(
        &self,
        acting: &Acting,
        source: &[u8],
        folder: Option<&str>,
        key: Option<&str>,
    ) -> Result<Draft, Error> {
        acting.require(Role::Admin, true)?;
        let asked = (agentprocess_service::sha256_hex(source), folder);
        let request = unless_replayed!(self, acting, key, Operation::ProcessImport, &asked);
        let draft = self
            .service
            .admin()
            .import_draft(acting.org(), source, folder, request.as_deref())
            .await?;
        self.record(acting, AuditEvent::ProcessImported, &draft.process, detail([]))
            .await?;
        Ok(draft)
    }

    /// A process's draft.
    pub async fn draft(&self, acting: &Acting, process: &str) -> Result<Draft, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self.service.admin().draft(acting.org(), process).await?)
    }

    /// Binds a role of a draft to a group.
    pub async fn bind_role(
        &self,
        acting: &Acting,
        (process, role): (&str, &str),
        binding: &Binding,
    ) -> Result<Draft, Error> {
        acting.require(Role::Admin, true)?;
        let Binding { group, force } = binding;
        let draft = self
            .service
            .admin()
            .bind_role(acting.org(), process, role, group, *force)
            .await?;
        let detail = detail([("role", json!(role)), ("group", json!(group)), ("force", json!(force))]);
        self.record(acting, AuditEvent::ProcessRoleBound, process, detail)
            .await?;
        Ok(draft)
    }

    /// Binds agent step `step` of a draft (or `*`, every agent step without a binding
    /// of its own) to the agents that may claim it.
    pub async fn bind_agents(
        &self,
        acting: &Acting,
        (process, step): (&str, &str),
        binding: &AgentBinding,
    ) -> Result<Draft, Error> {
        acting.require(Role::Admin, true)?;
        let claimants = Claimants {
            agents: binding.agents.clone(),
            groups: binding.groups.clone(),
        };
        let draft = self
            .service
            .admin()
            .bind_agents(acting.org(), process, step, &claimants, binding.force)
            .await?;
        let detail = detail([
            ("step", json!(step)),
            ("agents", json!(binding.agents)),
            ("groups", json!(binding.groups)),
            ("force", json!(binding.force)),
        ]);
        self.record(acting, AuditEvent::ProcessAgentsBound, process, detail)
            .await?;
        Ok(draft)
    }

    /// Removes the binding of agent step `step` of a draft (or of `*`).
    pub async fn unbind_agents(&self, acting: &Acting, (process, step): (&str, &str)) -> Result<Draft, Error> {
        acting.require(Role::Admin, true)?;
        let draft = self.service.admin().unbind_agents(acting.org(), process, step).await?;
        self.record(
            acting,
            AuditEvent::ProcessAgentsUnbound,
            process,
            detail([("step", json!(step))]),
        )
        .await?;
        Ok(draft)
    }

    /// Publishes a draft as a new version, or finds the latest unchanged.
    pub async fn publish(&self, acting: &Acting, process: &str, key: Option<&str>) -> Result<Published, Error> {
        acting.require(Role::Admin, true)?;
        let request = unless_replayed!(self, acting, key, Operation::ProcessPublish, &process);
        let published = self
            .service
            .admin()
            .publish(acting.org(), process, request.as_deref())
            .await?;
        if !published.unchanged {
            let detail = detail([
                ("number", json!(published.number)),
                ("contentHash", json!(published.content_hash)),
            ]);
            self.record(acting, AuditEvent::ProcessPublished, process, detail)
                .await?;
        }
        Ok(published)
    }

    /// A process's versions, oldest first.
    pub async fn versions(&self, acting: &Acting, process: &str) -> Result<Vec<StoredVersion>, Error> {
        acting.require(Role::Member, false)?;
        let versions = self.service.admin().versions(acting.org(), process).await?;
        if versions.is_empty() {
            return Err(Error::not_found(format!("there is no published process {process:?}")));
        }
        Ok(versions)
    }

    /// Which versions of a process new runs may start on.
    pub async fn openings(&self, acting: &Acting, process: &str) -> Result<Openings, Error> {
        acting.require(Role::Member, false)?;
        Ok(self.service.admin().openings(acting.org(), process).await?)
    }

    /// Keeps a version open to new runs once newer versions are published.
    pub async fn keep_version_open(
        &self,
        acting: &Acting,
        (process, number): (&str, u32),
        keep: &KeepOpen,
    ) -> Result<KeptOpen, Error> {
        acting.require(Role::Admin, true)?;
        let kept = self
            .service
            .admin()
            .keep_open(acting.org(), (process, number), &acting.identity.id, &keep.reason)
            .await?;
        let detail = detail([("number", json!(number)), ("reason", json!(kept.reason))]);
        self.record(acting, AuditEvent::ProcessVersionKeptOpen, process, detail)
            .await?;
        Ok(kept)
    }

    /// Closes a version an admin kept open: new runs start on it again only while it
    /// is the latest. Closing one that was not kept open changes nothing and records
    /// nothing.
    pub async fn close_version(&self, acting: &Acting, (process, number): (&str, u32)) -> Result<(), Error> {
        acting.require(Role::Admin, true)?;
        let closed = self
            .service
            .admin()
            .close_version(acting.org(), (process, number))
            .await?;
        if closed {
            let detail = detail([("number", json!(number))]);
            self.record(acting, AuditEvent::ProcessVersionClosed, process, detail)
                .await?;
        }
        Ok(())
    }

    /// One version.
    pub async fn version(&self, acting: &Acting, process: &str, number: u32) -> Result<StoredVersion, Error> {
        acting.require(Role::Member, false)?;
        self.stored(acting.org(), process, number).await
    }

    async fn stored(&self, org: &str, process: &str, number: u32) -> Result<StoredVersion, Error> {
        self.service
            .store()
            .version(org, process, Some(number))
            .await
            .map_err(agentprocess_service::Error::from)?
            .ok_or_else(|| Error::not_found(format!("{process} has no version {number}")))
    }

    /// Two versions compared.
    pub async fn diff(&self, acting: &Acting, process: &str, (from, to): (u32, u32)) -> Result<Diff, Error> {
        acting.require(Role::Member, false)?;
        let from = self.stored(acting.org(), process, from).await?;
        let to = self.stored(acting.org(), process, to).await?;
        let unified = similar::TextDiff::from_lines(&from.source, &to.source)
            .unified_diff()
            .header(
                &format!("{process} version {}", from.number),
                &format!("{process} version {}", to.number),
            )
            .to_string();
        Ok(Diff { from, to, unified })
    }

    /// How a process's advisory checks agreed with the approvals after them.
    pub async fn check_agreement(
        &self,
        acting: &Acting,
        process: &str,
        query: &AgreementQuery,
    ) -> Result<AgreementReport, Error> {
        acting.require(Role::Operator, false)?;
        Ok(self
            .service
            .admin()
            .check_agreement(acting.org(), process, query)
            .await?)
    }
}
