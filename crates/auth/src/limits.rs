//! An organization's admins lowering its limits.

use agentprocess_store::{Limit, LimitLayer, LimitValues, LimitsTx as _, Store, StoreTx as _};
use serde_json::json;

use crate::audit::{self, Actor, AuditEvent, detail};
use crate::error::refuse_if_any;
use crate::{Auth, Error, millis};

/// Every problem with a choice of limits: each at least 1 and at most `ceiling` (what
/// the server grants the organization; `None` there: no limit).
pub fn choice_issues(chosen: &LimitValues, ceiling: &LimitValues) -> Vec<String> {
    let mut issues = Vec::new();
    for limit in Limit::ALL {
        let Some(value) = chosen.get(limit) else { continue };
        let key = limit.key();
        if value == 0 {
            issues.push(format!("{key}: at least 1 (leave it out to follow the server)"));
        } else if let Some(ceiling) = ceiling.get(limit)
            && value > ceiling
        {
            issues.push(format!(
                "{key}: at most {ceiling}, what the server grants this organization (ask the platform's \
                 operators for more)"
            ));
        }
    }
    issues
}

impl Auth {
    /// Replaces what the organization's admins chose for its limits, recorded in the
    /// audit log; refused, naming every problem, when a value is 0 or over `ceiling`.
    pub async fn choose_limits(
        &self,
        actor: &Actor,
        org: &str,
        chosen: &LimitValues,
        ceiling: &LimitValues,
        now: jiff::Timestamp,
    ) -> Result<(), Error> {
        refuse_if_any(
            "the limits were not changed; each must be at least 1 and within what the server grants",
            choice_issues(chosen, ceiling),
        )?;
        let mut tx = self.store.begin().await?;
        tx.put_org_limits(org, LimitLayer::Chosen, chosen, millis(now)).await?;
        let values = Limit::ALL.map(|limit| (limit.key(), json!(chosen.get(limit))));
        audit::append(
            &mut tx,
            org,
            actor,
            AuditEvent::LimitsChosen,
            Some(org),
            detail(values),
            millis(now),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_at_zero_or_over_the_ceiling_is_named() {
        let ceiling = LimitValues {
            calls_per_second: Some(100),
            writes_per_second: Some(50),
            ..LimitValues::default()
        };
        let chosen = LimitValues {
            calls_per_second: Some(101),
            writes_per_second: Some(50),
            open_runs: Some(0),
            stored_bytes: Some(1 << 40),
            ..LimitValues::default()
        };
        let issues = choice_issues(&chosen, &ceiling);
        assert_eq!(issues.len(), 2, "{issues:?}");
        assert!(issues[0].starts_with("callsPerSecond: at most 100"), "{issues:?}");
        assert!(issues[1].starts_with("openRuns: at least 1"), "{issues:?}");
    }
}
