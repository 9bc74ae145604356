//! `agentprocess admin`: the platform operator's command line, one more surface over
//! the organization's operations (`agentprocess-operations`), as the REST API and the
//! admin pages are. Each subcommand is one operation call and its printed answer, so
//! it gets that operation's checks (validation, role) and audit entry, and is refused
//! in the same words.
//!
//! Who acts: `agentprocess-admin` ([`Acting::command_line`]), the platform's operator,
//! who holds the database URL and so stands above any organization's admin. It acts
//! as an admin of the organization `--org` names, without a row among its identities
//! (no organization may name an identity so), and is the only caller of what the
//! platform alone grants (`create-org`, `set-limits` above the defaults, `reseal`,
//! and a person's static token with `issue-token`): those operations refuse any
//! caller that did not come through this command line. Nothing reads that identity
//! back from the organization's rows: a token it issues names `agentprocess-admin` as
//! its maker, and its entries carry no address. `migrate` changes the schema, not an
//! organization, and is the one subcommand that is no operation.
//!
//! The operations run over the process the servers run below their surfaces
//! (`agentprocess_app::assemble`, so an unmigrated database is refused), without
//! evidence storage, sealing with `--secret-key` where a command seals or opens
//! something (`set-provider`, `add-webhook`, `chat-hook`, `reseal`) and with a
//! throwaway key elsewhere, where nothing sealed is read or written.

use std::path::Path;
use std::sync::Arc;

use agentprocess_app::flags::SealArgs;
use agentprocess_auth::Acting;
use agentprocess_auth::identities::NewIdentity;
use agentprocess_operations::Operations;
use agentprocess_operations::processes::{AgentBinding, Binding, Source};
use agentprocess_store::{Role, SqlStore};
use anyhow::Context as _;

mod args;

pub(crate) use args::AdminArgs;
use args::{Action, Call};

/// The subcommand's answer, as printed.
type Printed = anyhow::Result<String>;

pub(crate) fn run(args: AdminArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let printed = runtime.block_on(act(args))?;
    if !printed.is_empty() {
        println!("{printed}");
    }
    Ok(())
}

async fn act(args: AdminArgs) -> Printed {
    match args.action {
        Action::Migrate => {
            let store = SqlStore::connect(&args.database_url, 1).await?;
            store.migrate().await?;
            Ok("migrations applied".to_owned())
        }
        Action::Call(call) => {
            let operations = operations(&args.database_url, args.with_check, &call).await?;
            answer(&operations, call).await
        }
    }
}

/// Where this command line's operations reach: the process below the servers' surfaces
/// (`agentprocess_app::assemble`) over the database, without evidence storage, sealing
/// with the key given (`--secret-key`, which commands that seal or open something
/// require) or else a throwaway one, with which nothing sealed is read or written.
async fn operations(database_url: &str, with_check: bool, call: &Call) -> anyhow::Result<Operations> {
    const PUBLIC_URL: &str = "http://localhost";
    let throwaway = agentprocess_auth::secrets::random_bytes::<32>();
    let (seal, allow_private_issuers) = match call {
        Call::SetProvider {
            seal,
            allow_private_issuers,
            ..
        } => (Some(seal), *allow_private_issuers),
        Call::AddWebhook { seal, .. } | Call::ChatHook { seal, .. } | Call::Reseal { seal } => (Some(seal), false),
        _ => (None, false),
    };
    let key = match seal {
        Some(seal) => seal.key(None)?,
        None => SealArgs::default().key(Some(&throwaway))?,
    };
    let database = agentprocess_app::Database {
        url: agentprocess_app::Secret::new(database_url.to_owned()),
        max_connections: 1,
        migrate: false,
    };
    let plain_http_hooks = match call {
        Call::AddWebhook { hooks, .. } | Call::ChatHook { hooks, .. } => hooks.policy(),
        _ => agentprocess_service::PlainHttpHooks::Refused,
    };
    let settings = agentprocess_service::Settings {
        seal_key: key.clone(),
        plain_http_hooks,
        ..agentprocess_service::Settings::new(PUBLIC_URL, throwaway.to_vec())
    };
    let extras = agentprocess_app::Extras {
        publishes_check: with_check,
        ..agentprocess_app::Extras::default()
    };
    let clock = Arc::new(agentprocess_service::SystemClock);
    let service =
        agentprocess_app::assemble(&database, &agentprocess_app::Storage::None, settings, clock, extras).await?;
    // No client metadata document is ever fetched here.
    let identity = agentprocess_app::IdentityConfig {
        allow_private_issuers,
        metadata_documents: None,
        ..agentprocess_app::IdentityConfig::default()
    };
    let auth = identity.auth(service.store().clone(), PUBLIC_URL, key)?;
    Ok(Operations::new(Arc::new(auth), service))
}

/// Calls the subcommand's operation as `agentprocess-admin` and says what it answered.
async fn answer(operations: &Operations, call: Call) -> Printed {
    match call {
        Call::SetProvider {
            org,
            issuer,
            client_id,
            client_secret,
            ..
        } => {
            let sign_in = agentprocess_operations::organization::SignIn {
                issuer,
                client_id,
                client_secret,
            };
            operations.set_sign_in(&Acting::command_line(&org), &sign_in).await?;
            Ok(format!(
                "{org} signs in through {}; its people sign in at /login?org=<its slug>",
                sign_in.issuer
            ))
        }
        Call::CreateOrg { id, name } => {
            let name = name.unwrap_or_else(|| id.clone());
            operations
                .create_organization(&Acting::command_line(&id), &name)
                .await?;
            Ok(format!("organization {id} created"))
        }
        Call::CreateGroup { org, id } => {
            let new = agentprocess_auth::groups::NewGroup { id, name: None };
            let group = operations.create_group(&Acting::command_line(&org), &new, None).await?;
            Ok(format!("group {} created", group.id))
        }
        Call::CreateIdentity {
            org,
            kind,
            id,
            name,
            person,
            groups,
        } => {
            let new = NewIdentity {
                id,
                role: kind.role(),
                name,
                person,
                groups,
            };
            let made = operations.create_identity(&Acting::command_line(&org), &new).await?;
            Ok(format!(
                "{} {} created",
                made.role.map_or("agent", Role::as_str),
                made.id
            ))
        }
        Call::CreateClient { org, agent, name } => {
            let new = agentprocess_operations::clients::NewClient { name, jwks: None };
            let (client, secret) = operations
                .create_client(&Acting::command_line(&org), &agent, &new, None)
                .await?;
            let secret = secret.map(|(_, plain)| plain);
            Ok(serde_json::json!({ "clientId": client.id, "secret": secret }).to_string())
        }
        Call::IssueToken { org, identity } => {
            let (_, token) = operations.issue_token(&Acting::command_line(&org), &identity).await?;
            Ok(token)
        }
        Call::RevokeTokens { org, identity } => {
            let revoked = operations.revoke_tokens(&Acting::command_line(&org), &identity).await?;
            Ok(format!("{revoked} token(s) of {identity} revoked"))
        }
        Call::Identities { org } => {
            let identities = operations.identities(&Acting::command_line(&org)).await?;
            Ok(lines(identities.iter().map(|identity| {
                format!(
                    "{}\t{}\t{}\t{}\t{}",
                    identity.id,
                    identity.kind,
                    identity.role.map_or("-", Role::as_str),
                    identity.person.as_deref().unwrap_or("-"),
                    identity.groups.join(",")
                )
            })))
        }
        Call::Import { org, path } => {
            let source = read_source(&path)?;
            let draft = operations
                .import(
                    &Acting::command_line(&org),
                    &source.text,
                    source.folder.as_deref(),
                    None,
                )
                .await?;
            let roles = draft.roles.iter().map(|role| match draft.bindings.get(role) {
                Some(group) => format!("  role {role} → group {group}"),
                None => format!(
                    "  role {role}: not bound yet (agentprocess admin bind --org {org} {} {role} GROUP)",
                    draft.process
                ),
            });
            Ok(lines(
                std::iter::once(format!("draft of {} imported", draft.process)).chain(roles),
            ))
        }
        Call::Bind {
            org,
            process,
            role,
            group,
            force,
        } => {
            let binding = Binding { group, force };
            let draft = operations
                .bind_role(&Acting::command_line(&org), (&process, &role), &binding)
                .await?;
            let bound = format!("role {role} of {process} bound to group {}", binding.group);
            Ok(with_notes(bound, &draft.notes))
        }
        Call::BindAgents {
            org,
            process,
            step,
            agents,
            groups,
            force,
        } => {
            let binding = AgentBinding { agents, groups, force };
            let draft = operations
                .bind_agents(&Acting::command_line(&org), (&process, &step), &binding)
                .await?;
            let claimants = agentprocess_engine::Claimants {
                agents: binding.agents,
                groups: binding.groups,
            };
            let bound = format!("agent step {step} of {process} bound to {}", claimants.described());
            Ok(with_notes(bound, &draft.notes))
        }
        Call::Publish { org, process } => {
            let published = operations.publish(&Acting::command_line(&org), &process, None).await?;
            let note = if published.unchanged { " (unchanged)" } else { "" };
            Ok(format!(
                "{process} version {}{note}: {}",
                published.number, published.content_hash
            ))
        }
        Call::Versions { org, process } => {
            let versions = operations.versions(&Acting::command_line(&org), &process).await?;
            Ok(lines(versions.iter().map(|version| {
                format!(
                    "{}\t{}\t{}",
                    version.number,
                    version.content_hash,
                    time(version.published_at)
                )
            })))
        }
        Call::CheckAgreement {
            org,
            process,
            from_version,
            to_version,
            since,
            until,
            target,
            json,
        } => {
            let query = agentprocess_views::agreement::AgreementQuery::parse(
                from_version,
                to_version,
                since.as_deref(),
                until.as_deref(),
                Some(target),
            )
            .map_err(|issues| anyhow::anyhow!("{}", issues.join("\n")))?;
            let report = operations
                .check_agreement(&Acting::command_line(&org), &process, &query)
                .await?;
            if json {
                Ok(serde_json::to_string_pretty(&report)?)
            } else {
                Ok(crate::agreement::text(&report).trim_end().to_owned())
            }
        }
        Call::AddWebhook { org, url, .. } => {
            let new = agentprocess_operations::webhooks::NewWebhook { url };
            let webhook = operations.add_webhook(&Acting::command_line(&org), &new, None).await?;
            Ok(serde_json::json!({ "id": webhook.id, "url": webhook.url, "secret": webhook.secret }).to_string())
        }
        Call::ChatHook {
            org, group, url, kind, ..
        } => {
            let hook = operations
                .set_chat_hook(&Acting::command_line(&org), &group, &url, kind)
                .await?;
            Ok(serde_json::json!({ "group": hook.group, "host": hook.host, "kind": hook.kind }).to_string())
        }
        Call::RemoveChatHook { org, group } => {
            operations.remove_chat_hook(&Acting::command_line(&org), &group).await?;
            Ok(format!("removed the chat hook of {group}"))
        }
        Call::Reseal { .. } => {
            // Every organization's: the acting names none of them.
            let resealed = operations.reseal(&Acting::command_line("")).await?;
            Ok(format!(
                "resealed {} webhook secret(s), {} chat hook URL(s) and {} identity provider secret(s)",
                resealed.webhooks, resealed.chat_hooks, resealed.providers
            ))
        }
        Call::SetLimits { org, limits, reset } => {
            let limits = operations
                .grant_limits(&Acting::command_line(&org), &limits.values(), reset)
                .await?;
            Ok(limits_json(&limits).to_string())
        }
        Call::Limits { org } => {
            let limits = operations.granted_limits(&Acting::command_line(&org)).await?;
            Ok(limits_json(&limits).to_string())
        }
        Call::RemoveWebhook { org, id } => {
            operations.remove_webhook(&Acting::command_line(&org), &id).await?;
            Ok(format!("webhook {id} removed"))
        }
        Call::Webhooks { org } => {
            let webhooks = operations.webhooks(&Acting::command_line(&org)).await?;
            Ok(lines(webhooks.iter().map(|webhook| {
                format!("{}\t{}\t{}", webhook.id, webhook.url, time(webhook.created_at))
            })))
        }
        Call::Deliveries { org, limit } => {
            let deliveries = operations.deliveries(&Acting::command_line(&org), limit).await?;
            Ok(lines(deliveries.iter().map(|delivery| {
                let code = delivery.last_status_code.map(|code| code.to_string());
                format!(
                    "{}\t{}\t{}\t{}\t{}\t{} attempt(s)\t{}\t{}",
                    delivery.notification_id,
                    delivery.event,
                    delivery.run_id,
                    delivery.webhook_id,
                    delivery.status.as_str(),
                    delivery.attempts,
                    code.as_deref().unwrap_or("-"),
                    delivery.last_error.as_deref().unwrap_or("-"),
                )
            })))
        }
    }
}

/// The PROCESS.md to import: a folder's, with the folder's name, or a file (a
/// PROCESS.md, or an archive of its folder) as the REST upload reads it.
fn read_source(path: &Path) -> anyhow::Result<Source> {
    let file = if path.is_dir() {
        path.join("PROCESS.md")
    } else {
        path.to_owned()
    };
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut source = agentprocess_operations::processes::unpack(bytes)?;
    if path.is_dir() {
        source.folder = path.file_name().map(|name| name.to_string_lossy().into_owned());
    }
    Ok(source)
}

/// `first`, then each note indented on a line of its own.
fn with_notes(first: String, notes: &[String]) -> String {
    lines(std::iter::once(first).chain(notes.iter().map(|note| format!("  {note}"))))
}

fn lines(lines: impl Iterator<Item = String>) -> String {
    lines.collect::<Vec<_>>().join("\n")
}

fn time(millis: i64) -> String {
    agentprocess_operations::time_text(millis)
}
fn limits_json(limits: &agentprocess_store::OrgLimits) -> serde_json::Value {
    serde_json::json!({
        "granted": limits.granted,
        "chosen": limits.chosen,
        "updatedAt": limits.updated_at.map(time),
    })
}
