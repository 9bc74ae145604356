//! Every conformance fixture walked along each of its routes: every route of every
//! list, approval and rejection (once per approval with `on_reject`, so rework loops
//! are walked too), event and timeout. Each walk must end the run, and every view on
//! the way must meet the schemas.

use std::collections::BTreeSet;

use agentprocess_engine::{Actor, StepState};
use agentprocess_format::{EvidenceKind, Next, Step, StepKind};
use serde_json::{Map, Value, json};

use crate::support::{Bench, agent, fixture, fixture_names, person, sample, sample_inputs};

/// What the walks of one fixture saw.
#[derive(Default)]
struct Seen {
    walks: usize,
    completed: BTreeSet<String>,
    routes: BTreeSet<(String, String)>,
    outcomes: BTreeSet<String>,
    rejected: BTreeSet<String>,
}

/// One thing that can happen next.
enum Move {
    Submit {
        step: usize,
        route: Option<String>,
    },
    Decide {
        step: usize,
        decision: &'static str,
        route: Option<String>,
    },
    Fire(String),
    Event {
        name: String,
    },
}

fn output_of(step: &Step) -> Map<String, Value> {
    step.output
        .0
        .iter()
        .filter(|(_, field)| !field.optional)
        .map(|(name, field)| (name.clone(), sample(field)))
        .collect()
}

fn evidence_of(step: &Step) -> Value {
    Value::Array(
        step.evidence
            .iter()
            .map(|kind| match kind {
                EvidenceKind::File => json!({ "kind": "file", "ref": "f_1", "sha256": "00" }),
                EvidenceKind::Link => json!({ "kind": "link", "ref": "https://example.com/e" }),
            })
            .collect(),
    )
}

fn routes_of(step: &Step) -> Vec<Option<String>> {
    match &step.next {
        Some(Next::Routes(routes)) => routes.iter().map(|route| Some(route.to.clone())).collect(),
        _ => vec![None],
    }
}

/// The moves open at the first step that can act, in step order.
fn moves(bench: &Bench, rejections_left: &BTreeSet<String>) -> Vec<Move> {
    let steps = &bench.version.process.document().steps;
    for (index, (state, definition)) in bench.run.steps.iter().map(|s| s.state).zip(steps).enumerate() {
        let run_step = &bench.run.steps[index];
        match (&definition.kind, state) {
            (StepKind::Agent(_), Some(StepState::Ready)) => {
                return routes_of(definition)
                    .into_iter()
                    .map(|route| Move::Submit { step: index, route })
                    .collect();
            }
            (StepKind::Task(_), Some(StepState::Waiting)) => {
                return routes_of(definition)
                    .into_iter()
                    .map(|route| Move::Decide {
                        step: index,
                        decision: "completed",
                        route,
                    })
                    .collect();
            }
            (StepKind::Approve(_), Some(StepState::Waiting)) => {
                let mut moves = vec![Move::Decide {
                    step: index,
                    decision: "approved",
                    route: None,
                }];
                if definition.on_reject.is_none() || rejections_left.contains(&definition.id) {
                    moves.push(Move::Decide {
                        step: index,
                        decision: "rejected",
                        route: None,
                    });
                }
                return moves;
            }
            (StepKind::Wait(_), Some(StepState::Waiting)) => {
                return vec![Move::Fire(format!("{}:wait:{}", definition.id, run_step.attempt))];
            }
            (StepKind::WaitUntil(_), Some(StepState::Waiting)) => {
                return vec![Move::Fire(format!("{}:wait_until:{}", definition.id, run_step.attempt))];
            }
            (StepKind::WaitFor(name), Some(StepState::Waiting)) => {
                let mut moves = vec![Move::Event { name: name.clone() }];
                if definition.timeout.is_some() {
                    moves.push(Move::Fire(format!("{}:timeout:{}", definition.id, run_step.attempt)));
                }
                return moves;
            }
            _ => {}
        }
    }
    Vec::new()
}

fn play(bench: &mut Bench, on: &Move, rejections_left: &mut BTreeSet<String>, seen: &mut Seen) {
    let steps = bench.version.process.document().steps.clone();
    match on {
        Move::Submit { step, route } => {
            let definition = &steps[*step];
            let token = bench.token(&agent(), &definition.id);
            let mut submission = json!({ "output": output_of(definition), "evidence": evidence_of(definition), "summary": "Done as instructed." });
            if let Some(route) = route {
                submission["next"] = json!(route);
                submission["reason"] = json!("The instructions point this way.");
                seen.routes.insert((definition.id.clone(), route.clone()));
            }
            bench
                .submit(&agent(), &token, submission, Vec::new())
                .unwrap_or_else(|error| panic!("{}: {error}", definition.id));
        }
        Move::Decide { step, decision, route } => {
            let definition = &steps[*step];
            let item = bench.item(&definition.id);
            let mut arguments = json!({ "workItemId": item, "decision": decision });
            match *decision {
                "completed" => {
                    arguments["output"] = json!(output_of(definition));
                    arguments["evidence"] = evidence_of(definition);
                }
                "rejected" => {
                    arguments["note"] = json!("Not yet: redo it.");
                    rejections_left.remove(&definition.id);
                    seen.rejected.insert(definition.id.clone());
                }
                _ => {}
            }
            if let Some(route) = route {
                arguments["next"] = json!(route);
                arguments["reason"] = json!("The instructions point this way.");
                seen.routes.insert((definition.id.clone(), route.clone()));
            }
            let who = bench.decider(&definition.id);
            bench
                .decide(&who, arguments)
                .unwrap_or_else(|error| panic!("{}: {error}", definition.id));
        }
        Move::Fire(id) => {
            bench.wait(40 * 86_400);
            bench.fire(id);
        }
        Move::Event { name } => {
            bench
                .send_event(&agent(), name, json!({ "received": true }))
                .expect("delivered");
        }
    }
}

fn walk(bench: Bench, rejections_left: BTreeSet<String>, seen: &mut Seen) {
    assert!(seen.walks < 2_000, "too many walks");
    let open = moves(&bench, &rejections_left);
    if open.is_empty() {
        let view = bench.view();
        assert_eq!(
            view["run"]["state"], "ended",
            "a walk stopped before the run ended: {view:#}"
        );
        seen.walks += 1;
        seen.outcomes
            .insert(view["run"]["outcome"].as_str().unwrap_or_default().to_owned());
        for step in &bench.run.steps {
            if step.record.is_some() || !step.history.is_empty() || step.state == Some(StepState::Done) {
                seen.completed.insert(step.id.clone());
            }
        }
        return;
    }
    for on in &open {
        let mut next = bench.clone();
        let mut left = rejections_left.clone();
        play(&mut next, on, &mut left, seen);
        next.view();
        walk(next, left, seen);
    }
}

#[test]
fn every_fixture_is_walked_along_every_route() {
    for name in fixture_names() {
        let version = fixture(&name);
        let document = version.process.document().clone();
        let inputs = sample_inputs(&version);
        let bench = Bench::start(version, &person_for(&name), inputs);
        let rejections: BTreeSet<String> = document
            .steps
            .iter()
            .filter(|step| step.on_reject.is_some())
            .map(|step| step.id.clone())
            .collect();
        let mut seen = Seen::default();
        walk(bench, rejections.clone(), &mut seen);

        assert!(seen.walks > 0, "{name}");
        let all: BTreeSet<String> = document.steps.iter().map(|step| step.id.clone()).collect();
        let finishes: BTreeSet<String> = document
            .steps
            .iter()
            .filter(|step| matches!(step.kind, StepKind::Finish(_)))
            .map(|step| step.id.clone())
            .collect();
        assert_eq!(
            seen.completed.union(&finishes).cloned().collect::<BTreeSet<_>>(),
            all,
            "{name}: steps never completed"
        );
        let routes: BTreeSet<(String, String)> = document
            .steps
            .iter()
            .flat_map(|step| match &step.next {
                Some(Next::Routes(routes)) => routes.iter().map(|route| (step.id.clone(), route.to.clone())).collect(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(seen.routes, routes, "{name}: routes never taken");
        assert!(
            rejections.is_subset(&seen.rejected),
            "{name}: rejection loops never walked"
        );
        for step in document
            .steps
            .iter()
            .filter(|step| matches!(step.kind, StepKind::Finish(_)))
        {
            let StepKind::Finish(outcome) = &step.kind else {
                continue;
            };
            assert!(
                seen.outcomes.contains(outcome),
                "{name}: finish {outcome} never reached"
            );
        }
    }
}

/// The person who starts a fixture's runs (an initiator step needs one).
fn person_for(name: &str) -> Actor {
    person(&fixture(name))
}
