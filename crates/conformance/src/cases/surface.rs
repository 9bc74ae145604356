//! `describe`, `tools/list` and the catalog: what the server says it is.

use agentprocess_contract::differences;
use serde_json::{Value, json};

use super::{Env, Runner};
use crate::fixtures::Fixture;
use crate::report::{Failure, Outcome, ensure};
use crate::session::Context;

/// Reads `describe` and the whole catalog, and matches the fixtures against it.
pub(crate) async fn read_server<'a>(cx: &Context, fixtures: &'a [Fixture]) -> Result<Env<'a>, Failure> {
    let describe = cx.agents[0].ok("describe", json!({})).await?;
    let mut catalog = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let arguments = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let page = cx.agents[0].ok("list_processes", arguments).await?;
        catalog.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let offered: Vec<&str> = describe["profiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let published = fixtures
        .iter()
        .filter(|fixture| fixture.profiles.iter().all(|profile| offered.contains(profile)))
        .filter(|fixture| {
            catalog
                .iter()
                .any(|item| item["name"] == fixture.name.as_str() && same_content(item, fixture).is_empty())
        })
        .collect();
    Ok(Env {
        describe,
        catalog,
        fixtures,
        published,
    })
}

/// What the catalog shows of a process that differs from the fixture. The content
/// hash itself is not on the wire; description, inputs and requires are.
fn same_content(item: &Value, fixture: &Fixture) -> Vec<String> {
    let written = &fixture.frontmatter;
    let mut differences = Vec::new();
    if item["description"] != written["description"] {
        differences.push("description".to_owned());
    }
    let inputs = written.get("inputs").cloned().unwrap_or(json!({}));
    if item["inputs"] != inputs {
        differences.push("inputs".to_owned());
    }
    if item.get("requires") != written.get("requires") {
        differences.push("requires".to_owned());
    }
    differences
}

pub(crate) async fn cases(cx: &Context, env: &Env<'_>, runner: &mut Runner<'_>) {
    runner
        .case("surface/describe", "tools.md, describe; describe.result.json", async {
            let describe = &env.describe;
            ensure!(
                describe["protocol"] == "agentprocess",
                "protocol is {}",
                describe["protocol"]
            );
            ensure!(describe["version"] == "core-2", "version is {}", describe["version"]);
            let tools: Vec<&str> = describe["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            // The tools the official schemas' index names: the fourteen of core-2.
            let missing: Vec<&str> = cx.agents[0]
                .contract()
                .tools()
                .filter(|tool| !tools.contains(tool))
                .collect();
            ensure!(missing.is_empty(), "describe.tools lacks {missing:?}");
            Ok(Outcome::Passed)
        })
        .await;
    runner
        .case(
            "surface/tools-list-official-argument-schemas",
            "tools.md; tools/*.arguments.json",
            async {
                let listed = cx.agents[0].list_tools().await?;
                let mut problems = Vec::new();
                for tool in cx.agents[0].contract().tools() {
                    let Some(advertised) = listed.iter().find(|listed| listed.name == tool) else {
                        problems.push(format!("{tool}: not in tools/list"));
                        continue;
                    };
                    let Some(official) = cx.agents[0].contract().arguments(tool) else {
                        continue;
                    };
                    let advertised = Value::Object(advertised.input_schema.as_ref().clone());
                    problems.extend(
                        differences(&advertised, official)
                            .into_iter()
                            .map(|d| format!("{tool}{d}")),
                    );
                }
                ensure!(
                    problems.is_empty(),
                    "tools/list differs from the official argument schemas:\n{}",
                    problems.join("\n")
                );
                Ok(Outcome::Passed)
            },
        )
        .await;
    let offered: Vec<&str> = env.describe["profiles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for fixture in env.fixtures {
        let name = format!("catalog/{}", fixture.name);
        runner
            .case(&name, "specification §7.5; tools.md, list_processes", async {
                let missing: Vec<&&str> = fixture
                    .profiles
                    .iter()
                    .filter(|profile| !offered.contains(profile))
                    .collect();
                let Some(item) = env.listed(&fixture.name) else {
                    return super::skip(format!(
                        "not published on this server (content hash {}); publish it to have it walked",
                        fixture.hash
                    ));
                };
                ensure!(
                    missing.is_empty(),
                    "published, though it needs {missing:?}, which describe.profiles does not offer"
                );
                let differs = same_content(item, fixture);
                ensure!(
                    differs.is_empty(),
                    "published with other content than the fixture (content hash {}): {} differ; not walked",
                    fixture.hash,
                    differs.join(", ")
                );
                ensure!(
                    item["version"].as_u64().is_some_and(|v| v >= 1),
                    "version is {}",
                    item["version"]
                );
                Ok(Outcome::Passed)
            })
            .await;
    }
}
