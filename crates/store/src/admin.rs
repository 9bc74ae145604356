//! Organizations, identities, groups, tokens, drafts and published versions.

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::model::{Identity, IdentityKind, NewVersion, Role, StoredDraft, StoredVersion};
use crate::{Error, Result};

pub(crate) async fn create_org(
    connection: &mut AnyConnection,
    id: &str,
    slug: &str,
    name: &str,
    now: i64,
) -> Result<()> {
    sqlx::query("INSERT INTO organizations (id, slug, name, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id)
        .bind(slug)
        .bind(name)
        .bind(now)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn create_group(connection: &mut AnyConnection, org: &str, id: &str, now: i64) -> Result<()> {
    sqlx::query("INSERT INTO org_groups (org_id, id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(org)
        .bind(id)
        .bind(now)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn create_identity(connection: &mut AnyConnection, identity: &Identity, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO identities (org_id, id, kind, role, person, name, created_at, deactivated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&identity.org)
    .bind(&identity.id)
    .bind(identity.kind.as_str())
    .bind(identity.role.map(Role::as_str))
    .bind(identity.person.as_deref())
    .bind(&identity.name)
    .bind(now)
    .bind(identity.deactivated_at)
    .execute(&mut *connection)
    .await?;
    for group in &identity.groups {
        add_member(connection, &identity.org, group, &identity.id).await?;
    }
    Ok(())
}

pub(crate) async fn add_member(connection: &mut AnyConnection, org: &str, group: &str, identity: &str) -> Result<()> {
    sqlx::query("INSERT INTO memberships (org_id, group_id, identity_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(org)
        .bind(group)
        .bind(identity)
        .execute(connection)
        .await?;
    Ok(())
}

pub(crate) async fn revoke_tokens(connection: &mut AnyConnection, org: &str, identity: &str, now: i64) -> Result<u64> {
    let revoked = sqlx::query(
        "UPDATE access_tokens SET revoked_at = $3 WHERE org_id = $1 AND identity_id = $2 AND revoked_at IS NULL",
    )
    .bind(org)
    .bind(identity)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(revoked.rows_affected())
}

pub(crate) async fn identity(connection: &mut AnyConnection, org: &str, id: &str) -> Result<Option<Identity>> {
    let row = sqlx::query(
        "SELECT org_id, id, kind, role, person, name, deactivated_at FROM identities WHERE org_id = $1 AND id = $2",
    )
    .bind(org)
    .bind(id)
    .fetch_optional(&mut *connection)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let groups =
        sqlx::query("SELECT group_id FROM memberships WHERE org_id = $1 AND identity_id = $2 ORDER BY group_id")
            .bind(org)
            .bind(id)
            .fetch_all(&mut *connection)
            .await?
            .iter()
            .map(|row| row.try_get::<String, _>("group_id"))
            .collect::<Result<Vec<_>, _>>()?;
    identity_row(&row, groups).map(Some)
}

/// Every identity of an organization, by id, with its groups: two reads, whatever
/// the number of identities.
pub(crate) async fn identities(connection: &mut AnyConnection, org: &str) -> Result<Vec<Identity>> {
    let rows = sqlx::query(
        "SELECT org_id, id, kind, role, person, name, deactivated_at FROM identities WHERE org_id = $1 ORDER BY id",
    )
    .bind(org)
    .fetch_all(&mut *connection)
    .await?;
    let mut groups: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for membership in
        sqlx::query("SELECT identity_id, group_id FROM memberships WHERE org_id = $1 ORDER BY identity_id, group_id")
            .bind(org)
            .fetch_all(&mut *connection)
            .await?
    {
        groups
            .entry(membership.try_get("identity_id")?)
            .or_default()
            .push(membership.try_get("group_id")?);
    }
    rows.iter()
        .map(|row| {
            let id: String = row.try_get("id")?;
            identity_row(row, groups.remove(&id).unwrap_or_default())
        })
        .collect()
}

fn identity_row(row: &AnyRow, groups: Vec<String>) -> Result<Identity> {
    let kind: String = row.try_get("kind")?;
    let role: Option<String> = row.try_get("role")?;
    let role = role
        .map(|role| Role::parse(&role).ok_or_else(|| Error::Corrupt(format!("identity role {role:?}"))))
        .transpose()?;
    Ok(Identity {
        org: row.try_get("org_id")?,
        id: row.try_get("id")?,
        kind: IdentityKind::parse(&kind).ok_or_else(|| Error::Corrupt(format!("identity kind {kind:?}")))?,
        role,
        person: row.try_get("person")?,
        name: row.try_get("name")?,
        groups,
        deactivated_at: row.try_get("deactivated_at")?,
    })
}

pub(crate) async fn put_draft(
    connection: &mut AnyConnection,
    org: &str,
    process: &str,
    draft: &StoredDraft,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO drafts (org_id, process, source, roles, agents, updated_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (org_id, process) DO UPDATE SET source = excluded.source, roles = excluded.roles, \
         agents = excluded.agents, updated_at = excluded.updated_at",
    )
    .bind(org)
    .bind(process)
    .bind(&draft.source)
    .bind(&draft.roles)
    .bind(&draft.agents)
    .bind(now)
    .execute(connection)
    .await?;
    Ok(())
}

pub(crate) async fn draft(connection: &mut AnyConnection, org: &str, process: &str) -> Result<Option<StoredDraft>> {
    let row = sqlx::query("SELECT source, roles, agents FROM drafts WHERE org_id = $1 AND process = $2")
        .bind(org)
        .bind(process)
        .fetch_optional(connection)
        .await?;
    row.map(|row| {
        Ok(StoredDraft {
            source: row.try_get("source")?,
            roles: row.try_get("roles")?,
            agents: row.try_get("agents")?,
        })
    })
    .transpose()
}

pub(crate) async fn publish(connection: &mut AnyConnection, org: &str, version: &NewVersion, now: i64) -> Result<u32> {
    // Two publishers racing for one number: the primary key refuses the second.
    let row = sqlx::query("SELECT MAX(number) AS n FROM process_versions WHERE org_id = $1 AND process = $2")
        .bind(org)
        .bind(&version.process)
        .fetch_one(&mut *connection)
        .await?;
    let latest: Option<i64> = row.try_get("n")?;
    let number = latest.unwrap_or(0) + 1;
    sqlx::query(
        "INSERT INTO process_versions (org_id, process, number, content_hash, source, frontmatter, body, roles, \
         agents, published_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(org)
    .bind(&version.process)
    .bind(number)
    .bind(&version.content_hash)
    .bind(&version.source)
    .bind(&version.frontmatter)
    .bind(&version.body)
    .bind(&version.roles)
    .bind(&version.agents)
    .bind(now)
    .execute(&mut *connection)
    .await?;
    for (step, kind, who) in &version.claimants {
        sqlx::query("INSERT INTO agent_bindings (org_id, process, binding, kind, who) VALUES ($1, $2, $3, $4, $5)")
            .bind(org)
            .bind(&version.process)
            .bind(format!("{number}/{step}"))
            .bind(*kind)
            .bind(who)
            .execute(&mut *connection)
            .await?;
    }
    u32::try_from(number).map_err(|_| Error::Corrupt(format!("version number {number}")))
}

const VERSION_COLUMNS: &str = "process, number, content_hash, source, roles, agents, published_at";

pub(crate) async fn version(
    connection: &mut AnyConnection,
    org: &str,
    process: &str,
    number: Option<u32>,
) -> Result<Option<StoredVersion>> {
    let row = match number {
        Some(number) => {
            sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM process_versions WHERE org_id = $1 AND process = $2 AND number = $3"
            ))
            .bind(org)
            .bind(process)
            .bind(i64::from(number))
            .fetch_optional(connection)
            .await?
        }
        None => {
            sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM process_versions WHERE org_id = $1 AND process = $2 \
                 ORDER BY number DESC LIMIT 1"
            ))
            .bind(org)
            .bind(process)
            .fetch_optional(connection)
            .await?
        }
    };
    row.map(|row| version_row(&row)).transpose()
}

pub(crate) async fn latest_versions(
    connection: &mut AnyConnection,
    org: &str,
    after: Option<&str>,
    limit: u32,
) -> Result<Vec<StoredVersion>> {
    let rows = sqlx::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM process_versions v WHERE v.org_id = $1 AND v.process > $2 \
         AND v.number = (SELECT MAX(number) FROM process_versions w WHERE w.org_id = v.org_id AND w.process = v.process) \
         ORDER BY v.process LIMIT $3"
    ))
    .bind(org)
    .bind(after.unwrap_or(""))
    .bind(i64::from(limit))
    .fetch_all(connection)
    .await?;
    rows.iter().map(version_row).collect()
}

pub(crate) async fn versions(connection: &mut AnyConnection, org: &str, process: &str) -> Result<Vec<StoredVersion>> {
    let rows = sqlx::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM process_versions WHERE org_id = $1 AND process = $2 ORDER BY number"
    ))
    .bind(org)
    .bind(process)
    .fetch_all(connection)
    .await?;
    rows.iter().map(version_row).collect()
}

fn version_row(row: &AnyRow) -> Result<StoredVersion> {
    let number: i64 = row.try_get("number")?;
    Ok(StoredVersion {
        process: row.try_get("process")?,
        number: u32::try_from(number).map_err(|_| Error::Corrupt(format!("version number {number}")))?,
        content_hash: row.try_get("content_hash")?,
        source: row.try_get("source")?,
        roles: row.try_get("roles")?,
        agents: row.try_get("agents")?,
        published_at: row.try_get("published_at")?,
    })
}
