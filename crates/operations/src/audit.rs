//! Reading the audit log.

use agentprocess_auth::{Acting, Role};
use agentprocess_store::{AuditFilter, AuditRow};
use serde::Deserialize;

use crate::{Error, Operations};

/// The most audit entries one page holds.
pub const AUDIT_PAGE: u32 = 200;

/// Which entries to read, as a query names them.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditQuery {
    /// Entries at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Entries before this time (RFC 3339).
    pub until: Option<String>,
    /// Entries of this identity.
    pub actor: Option<String>,
    /// Entries of this kind, such as `run.decided`.
    pub kind: Option<String>,
    /// Entries about this, such as a run id.
    pub target: Option<String>,
    /// Where the page before ended.
    pub cursor: Option<String>,
    /// Page size, 1 to 200 (50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// One page of the log.
#[derive(Debug)]
pub struct AuditPage {
    /// The entries, oldest first.
    pub entries: Vec<AuditRow>,
    /// Where the next page starts, when there is one.
    pub next_cursor: Option<String>,
}

fn audit_filter(query: AuditQuery) -> Result<AuditFilter, Error> {
    let mut issues = Vec::new();
    let mut at = |name: &str, text: Option<String>| {
        text.and_then(|text| match text.parse::<jiff::Timestamp>() {
            Ok(at) => Some(at.as_millisecond()),
            Err(_) => {
                issues.push(format!("{name}: {text:?} is not an RFC 3339 date-time"));
                None
            }
        })
    };
    let since = at("since", query.since);
    let until = at("until", query.until);
    let limit = query.limit.unwrap_or(50);
    if !(1..=AUDIT_PAGE).contains(&limit) {
        issues.push(format!("limit: {limit} is not between 1 and {AUDIT_PAGE}"));
    }
    if !issues.is_empty() {
        return Err(Error::invalid("the query has problems", issues));
    }
    Ok(AuditFilter {
        after: query.cursor,
        since,
        until,
        actor: query.actor,
        kind: query.kind,
        target: query.target,
        limit,
    })
}

impl Operations {
    /// A page of the log.
    pub async fn audit(&self, acting: &Acting, query: AuditQuery) -> Result<AuditPage, Error> {
        acting.require(Role::Admin, false)?;
        let filter = audit_filter(query)?;
        let (entries, more) = self.auth.audit(acting.org(), &filter).await?;
        let next_cursor = if more {
            entries.last().map(|row| row.id.clone())
        } else {
            None
        };
        Ok(AuditPage { entries, next_cursor })
    }

    /// Every entry the query matches (its `limit` aside), read page by page.
    pub async fn audit_export(&self, acting: &Acting, query: AuditQuery) -> Result<Vec<AuditRow>, Error> {
        acting.require(Role::Admin, false)?;
        let mut filter = audit_filter(AuditQuery {
            limit: Some(AUDIT_PAGE),
            ..query
        })?;
        let mut entries = Vec::new();
        loop {
            let (rows, more) = self.auth.audit(acting.org(), &filter).await?;
            filter.after = rows.last().map(|row| row.id.clone());
            entries.extend(rows);
            if !more {
                return Ok(entries);
            }
        }
    }
}
