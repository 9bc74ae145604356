//! What `tools/list` advertises is the official argument schema of every tool, read
//! from the protocol's schemas folder (`AGENTPROCESS_SCHEMAS`, by default
//! `../shared/agentprocess/schemas/core-2`): the same types, bounds and required
//! lists, descriptions aside. A drift on either side fails here.

use agentprocess_contract::{Contract, default_dir, differences};
use agentprocess_tools::arguments::{ARGUMENTS, input_schema};
use serde_json::Value;

#[test]
fn tools_list_advertises_exactly_the_official_argument_schemas() {
    let contract = Contract::load(&default_dir()).expect("the official schemas load");
    let mut drift = Vec::new();
    for spec in ARGUMENTS {
        let Some(official) = contract.arguments(spec.tool.name()) else {
            drift.push(format!("{}: not a tool of the official contract", spec.tool.name()));
            continue;
        };
        let advertised = Value::Object(input_schema(spec));
        drift.extend(
            differences(&advertised, official)
                .into_iter()
                .map(|difference| format!("{}{difference}", spec.tool.name())),
        );
    }
    let ours: Vec<&str> = ARGUMENTS.iter().map(|spec| spec.tool.name()).collect();
    for tool in contract.tools().filter(|tool| !ours.contains(tool)) {
        drift.push(format!("{tool}: in the official contract, not offered"));
    }
    assert!(
        drift.is_empty(),
        "tools/list drifts from the official schemas:\n{}",
        drift.join("\n")
    );
}

#[test]
fn every_tool_is_declared_once_in_describes_order() {
    let declared: Vec<_> = ARGUMENTS.iter().map(|spec| spec.tool).collect();
    assert_eq!(declared, agentprocess_service::Tool::ALL);
}
