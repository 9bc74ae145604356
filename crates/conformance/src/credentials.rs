//! `--credentials`: who the runner calls as.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One identity's bearer token, and its `person` value for a person.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Its name in the file.
    pub name: String,
    /// The bearer token.
    pub token: String,
    /// A person's `person` value (an email for `describe.person.format: email`).
    pub person: Option<String>,
}

/// Two agents, two people and an operator, read from the JSON `agentprocess dev
/// --details` writes: `{ identities: { NAME: { kind, token, person? } } }`, where
/// `kind` is `agent`, `person` or `operator`. A `url` in the file is the default
/// endpoint.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The file's `url`, if it has one.
    pub url: Option<String>,
    /// The two agents.
    pub agents: [Identity; 2],
    /// The two people, who should share a group that processes assign work to.
    pub people: [Identity; 2],
    /// A person with the operator role.
    pub operator: Identity,
}

#[derive(Deserialize)]
struct File {
    url: Option<String>,
    identities: Map<String, Value>,
}

impl Credentials {
    /// Reads and checks a credentials file; every problem is named at once.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        Self::parse(&text).map_err(|problem| format!("{}: {problem}", path.display()))
    }

    /// Parses the JSON text of a credentials file.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: File = serde_json::from_str(text).map_err(|error| format!("not a credentials file: {error}"))?;
        let of_kind = |kind: &str| -> Vec<Identity> {
            file.identities
                .iter()
                .filter(|(_, entry)| entry["kind"] == kind)
                .filter_map(|(name, entry)| {
                    Some(Identity {
                        name: name.clone(),
                        token: entry["token"].as_str()?.to_owned(),
                        person: entry["person"].as_str().map(str::to_owned),
                    })
                })
                .collect()
        };
        let agents = of_kind("agent");
        let people = of_kind("person");
        let operators = of_kind("operator");
        let mut problems = Vec::new();
        if agents.len() < 2 {
            problems.push(format!(
                "two identities of kind agent are needed, found {}",
                agents.len()
            ));
        }
        if people.len() < 2 {
            problems.push(format!(
                "two identities of kind person are needed, found {}",
                people.len()
            ));
        }
        if people.iter().any(|person| person.person.is_none()) {
            problems.push("every person needs its `person` value".to_owned());
        }
        if operators.is_empty() {
            problems.push("an identity of kind operator is needed".to_owned());
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        let pair = |mut found: Vec<Identity>| -> [Identity; 2] {
            let second = found.swap_remove(1);
            let first = found.swap_remove(0);
            [first, second]
        };
        Ok(Self {
            url: file.url,
            agents: pair(agents),
            people: pair(people),
            operator: operators.into_iter().next().expect("checked above"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_missing_identity_is_named_at_once() {
        let problem =
            Credentials::parse(r#"{ "identities": { "a": { "kind": "agent", "token": "t" } } }"#).expect_err("too few");
        assert_eq!(
            problem,
            "two identities of kind agent are needed, found 1; two identities of kind person are needed, found 0; \
             an identity of kind operator is needed"
        );
    }

    #[test]
    fn the_dev_details_file_is_read_as_is() {
        let text = r#"{ "url": "http://127.0.0.1:8080/mcp", "organization": "dev", "identities": {
            "agent-1": { "kind": "agent", "token": "a1" }, "agent-2": { "kind": "agent", "token": "a2" },
            "alice": { "kind": "person", "token": "p1", "person": "alice@example.com" },
            "bob": { "kind": "person", "token": "p2", "person": "bob@example.com" },
            "ops": { "kind": "operator", "token": "o", "person": "ops@example.com" } } }"#;
        let credentials = Credentials::parse(text).expect("reads");
        assert_eq!(credentials.agents[1].token, "a2");
        assert_eq!(credentials.people[0].person.as_deref(), Some("alice@example.com"));
        assert_eq!(credentials.operator.name, "ops");
        assert_eq!(credentials.url.as_deref(), Some("http://127.0.0.1:8080/mcp"));
    }
}
