//! `get_work` items: what an agent may claim and what a person may decide.

use agentprocess_engine::Actor;
use serde_json::{Value, json};

use crate::support::{Bench, agent, operator, person, version_of};

fn bench() -> Bench {
    let version = version_of(
        "---\nname: work\ndescription: x\ninputs:\n  owner: person\nsteps:\n  - id: fork\n    parallel: [a, b, review]\n    next: done\n  - id: a\n    agent: A.\n    due: 1h\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: review\n    task: Review.\n    person: inputs.owner\n    next: join\n  - id: done\n    finish: ok\n---\n",
    );
    let mut inputs = serde_json::Map::new();
    inputs.insert("owner".into(), json!("Dana@Example.com"));
    Bench::start(version, &agent(), inputs)
}

#[test]
fn an_agent_sees_each_ready_agent_step_with_its_claim_call() {
    let mut bench = bench();
    let items = bench.work(&agent());
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[0],
        json!({
            "runId": "r_1", "stepId": "a", "process": "work", "version": 1, "mode": "live",
            "readySince": "2026-10-06T09:00:00Z", "due": "2026-10-06T10:00:00Z", "overdue": false, "handoff": null,
            "claim": { "tool": "claim", "arguments": { "runId": "r_1", "stepId": "a", "requestId": "<new UUID>" } }
        })
    );
    assert_eq!(items[1]["due"], Value::Null);
    bench.token(&agent(), "a");
    let items = bench.work(&agent());
    assert_eq!(
        items.iter().map(|item| item["stepId"].clone()).collect::<Vec<_>>(),
        [json!("b")]
    );
    // A lease that ended makes the step claimable again at once.
    bench.wait(601);
    assert_eq!(bench.work(&agent()).len(), 2);
}

#[test]
fn a_person_sees_the_work_items_assigned_to_them() {
    let mut bench = bench();
    let dana = Actor::Person {
        person: "dana@example.com".into(),
        groups: vec![],
        operator: false,
    };
    let items = bench.work(&dana);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["workItem"]["stepId"], "review");
    assert_eq!(items[0]["mode"], "live");
    assert!(bench.work(&person(&bench.version)).is_empty());
    assert!(bench.work(&operator()).is_empty());
    let token = bench.token(&agent(), "b");
    bench.escalate(&agent(), &token, "Stuck.").expect("escalates");
    let escalations = bench.work(&operator());
    assert_eq!(escalations.len(), 1);
    assert_eq!(escalations[0]["workItem"]["escalation"]["note"], "Stuck.");
    bench.cancel(&operator(), "Done with it.").expect("cancelled");
    assert!(bench.work(&dana).is_empty() && bench.work(&agent()).is_empty());
}
