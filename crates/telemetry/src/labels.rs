//! Attribute values that name a tenant. Metrics never carry a value a tenant wrote (a
//! process name, an outcome), and name an organization only when the deployment's
//! configuration lists it: every other organization is `other`. So the number of
//! series is bounded by the configuration, however many organizations sign up; the
//! detail of any one organization, process or run is in its traces.

use std::collections::HashSet;
use std::sync::OnceLock;

use opentelemetry::KeyValue;

/// The most organizations a deployment may name in its metrics.
pub const MAX_WATCHED: usize = 50;

/// The value every organization not listed is counted under.
pub const OTHER: &str = "other";

static WATCHED: OnceLock<HashSet<String>> = OnceLock::new();

/// Names these organizations (by id) in metrics from now on; the first call wins.
///
/// # Errors
/// More than [`MAX_WATCHED`] organizations.
pub fn watch(organizations: &[String]) -> anyhow::Result<()> {
    if organizations.len() > MAX_WATCHED {
        anyhow::bail!(
            "{} organizations named for metrics: at most {MAX_WATCHED}, so the number of series stays bounded",
            organizations.len()
        );
    }
    let _ = WATCHED.set(organizations.iter().cloned().collect());
    Ok(())
}

/// `agentprocess.organization`: the organization's id if the deployment watches it,
/// else [`OTHER`].
pub fn organization(org: &str) -> KeyValue {
    KeyValue::new("agentprocess.organization", label(WATCHED.get(), org).to_owned())
}

fn label<'a>(watched: Option<&HashSet<String>>, org: &'a str) -> &'a str {
    if watched.is_some_and(|watched| watched.contains(org)) {
        org
    } else {
        OTHER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_organizations_are_named() {
        let watched: HashSet<String> = ["org_big".to_owned()].into();
        assert_eq!(label(Some(&watched), "org_big"), "org_big");
        assert_eq!(label(Some(&watched), "org_small"), OTHER);
        assert_eq!(label(None, "org_big"), OTHER);
    }

    #[test]
    fn too_many_organizations_are_refused() {
        let many: Vec<String> = (0..=MAX_WATCHED).map(|n| format!("org_{n}")).collect();
        let error = watch(&many).expect_err("refused").to_string();
        assert!(error.contains("at most 50"), "{error}");
    }
}
