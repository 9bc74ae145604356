//! The guarantees of spec §6 as properties over random command sequences: order, one
//! actor at a time, acceptance (a refused call changes nothing), immutability of the
//! pinned version, and every run view meeting the schemas.

use agentprocess_engine::{Actor, Code, Run, StepState, ToolError, Work, work_items};
use agentprocess_format::{Next, Step, StepKind};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{Map, Value, json};

use crate::support::{Bench, agent, fixture, operator, person, sample, sample_inputs};

/// One call. `aim` makes it a call meant to succeed (a ready step, the latest token,
/// an allowed decision by someone assigned) so that runs move; the rest probe every
/// refusal.
#[derive(Debug, Clone)]
enum Op {
    Claim {
        who: u8,
        step: u8,
        aim: bool,
    },
    Renew {
        token: u8,
    },
    Submit {
        token: u8,
        good: bool,
        route: u8,
        aim: bool,
    },
    Escalate {
        token: u8,
    },
    Decide {
        item: u8,
        decision: u8,
        stale: bool,
        who: u8,
        aim: bool,
    },
    Cancel,
    Event {
        name: u8,
    },
    Fire {
        step: u8,
        kind: u8,
        earlier: bool,
    },
    Wait {
        minutes: u16,
    },
}

fn aim() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.85)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), any::<u8>(), aim()).prop_map(|(who, step, aim)| Op::Claim { who, step, aim }),
        1 => any::<u8>().prop_map(|token| Op::Renew { token }),
        6 => (any::<u8>(), aim(), any::<u8>(), aim())
            .prop_map(|(token, good, route, aim)| Op::Submit { token, good, route, aim }),
        1 => any::<u8>().prop_map(|token| Op::Escalate { token }),
        6 => (any::<u8>(), any::<u8>(), prop::bool::weighted(0.1), any::<u8>(), aim())
            .prop_map(|(item, decision, stale, who, aim)| Op::Decide { item, decision, stale, who, aim }),
        1 => prop::bool::weighted(0.3).prop_map(|cancel| if cancel { Op::Cancel } else { Op::Wait { minutes: 1 } }),
        1 => any::<u8>().prop_map(|name| Op::Event { name }),
        2 => (any::<u8>(), any::<u8>(), any::<bool>()).prop_map(|(step, kind, earlier)| Op::Fire { step, kind, earlier }),
        2 => (0..3_000u16).prop_map(|minutes| Op::Wait { minutes }),
    ]
}

fn pick<T: Clone>(items: &[T], at: u8) -> Option<T> {
    (!items.is_empty()).then(|| items[usize::from(at) % items.len()].clone())
}

/// Output and evidence that meet the step's declarations, and its first route.
fn work_of(step: &Step, route: u8) -> Value {
    let output: Map<String, Value> = step
        .output
        .0
        .iter()
        .map(|(name, field)| (name.clone(), sample(field)))
        .collect();
    let evidence: Vec<Value> = step
        .evidence
        .iter()
        .map(|kind| json!({ "kind": kind.name(), "ref": "r" }))
        .collect();
    let mut work = json!({ "output": output, "evidence": evidence });
    if let Some(Next::Routes(routes)) = &step.next {
        work["next"] = json!(routes[usize::from(route) % routes.len()].to);
        work["reason"] = json!("Because.");
    }
    work
}

fn apply(bench: &mut Bench, op: &Op, tokens: &mut Vec<String>) -> Result<(), ToolError> {
    let document = bench.version.process.document().clone();
    let any_token = |at: u8| pick(tokens, at).unwrap_or_else(|| "none".into());
    match op {
        Op::Claim { who, step, aim } => {
            let ready: Vec<String> = work_items(&bench.run, &bench.version, &agent(), &bench.settings, bench.now)
                .iter()
                .filter_map(|work| match work {
                    Work::Claimable { step, .. } => Some(bench.run.steps[*step].id.clone()),
                    Work::Decidable { .. } => None,
                })
                .collect();
            let callers = [
                agent(),
                Actor::Agent {
                    id: "a_other".into(),
                    groups: Vec::new(),
                },
                person(&bench.version),
            ];
            let (step, caller) = match pick(&ready, *step).filter(|_| *aim) {
                Some(step) => (step, agent()),
                None => (
                    document.steps[usize::from(*step) % document.steps.len()].id.clone(),
                    callers[usize::from(*who) % callers.len()].clone(),
                ),
            };
            let result = bench.claim(&caller, &step)?;
            tokens.push(result["token"].as_str().unwrap_or_default().to_owned());
            Ok(())
        }
        Op::Renew { token } => {
            let result = bench.renew(&agent(), &any_token(*token), Some("halfway"))?;
            tokens.push(result["token"].as_str().unwrap_or_default().to_owned());
            Ok(())
        }
        Op::Submit {
            token,
            good,
            route,
            aim,
        } => {
            let token = if *aim {
                tokens.last().cloned().unwrap_or_else(|| "none".into())
            } else {
                any_token(*token)
            };
            let claimed = bench.run.steps.iter().position(|step| step.claim.is_some());
            let mut submission = match claimed.filter(|_| *good) {
                Some(index) => work_of(&document.steps[index], *route),
                None => json!({ "output": { "unexpected": 1 } }),
            };
            submission["summary"] = json!("Done.");
            bench.submit(&agent(), &token, submission, Vec::new()).map(|_| ())
        }
        Op::Escalate { token } => bench.escalate(&agent(), &any_token(*token), "Cannot finish."),
        Op::Decide {
            item,
            decision,
            stale,
            who,
            aim,
        } => {
            let open: Vec<(String, String)> = bench
                .run
                .steps
                .iter()
                .filter_map(|step| step.work_item.as_ref().map(|item| (step.id.clone(), item.id.clone())))
                .chain(std::iter::once(("none".to_owned(), "w_999".to_owned())))
                .collect();
            let (step_id, item) = pick(&open, *item).unwrap_or_default();
            let kind = document.step(&step_id).map(|step| &step.kind);
            let allowed: &[&str] = match kind {
                Some(StepKind::Approve(_)) if *aim => &["approved", "approved", "rejected"],
                Some(StepKind::Task(_)) if *aim => &["completed"],
                Some(StepKind::Agent(_)) if *aim => &["returned", "completed"],
                _ => &["completed", "approved", "rejected", "returned", "failed"],
            };
            let decision = allowed[usize::from(*decision) % allowed.len()];
            let mut arguments = match document.step(&step_id).filter(|_| decision == "completed") {
                Some(step) => work_of(step, 0),
                None => json!({ "note": "A note." }),
            };
            arguments["workItemId"] = json!(item);
            arguments["decision"] = json!(decision);
            if *stale {
                arguments["snapshot"] = json!("stale");
            }
            let deciders = [bench.decider(&step_id), agent(), operator()];
            let who = if *aim { 0 } else { usize::from(*who) % deciders.len() };
            bench.decide(&deciders[who], arguments)
        }
        Op::Cancel => bench.cancel(&operator(), "Stop."),
        Op::Event { name } => {
            let names: Vec<String> = document
                .steps
                .iter()
                .filter_map(|step| match &step.kind {
                    StepKind::WaitFor(name) => Some(name.clone()),
                    _ => None,
                })
                .chain(std::iter::once("unrelated".to_owned()))
                .collect();
            bench
                .send_event(
                    &agent(),
                    &pick(&names, *name).unwrap_or_default(),
                    json!({ "seen": true }),
                )
                .map(|_| ())
        }
        Op::Fire { step, kind, earlier } => {
            let at = usize::from(*step) % bench.run.steps.len();
            let kinds = ["due", "wait", "wait_until", "timeout"];
            let attempt = bench.run.steps[at].attempt.saturating_sub(u32::from(*earlier));
            let id = format!(
                "{}:{}:{attempt}",
                bench.run.steps[at].id,
                kinds[usize::from(*kind) % kinds.len()]
            );
            bench.fire(&id);
            Ok(())
        }
        Op::Wait { minutes } => {
            bench.wait(i64::from(*minutes) * 60);
            Ok(())
        }
    }
}

/// The run without handoffs, which a refused submission may change.
fn without_handoffs(run: &Run) -> Run {
    let mut run = run.clone();
    for step in &mut run.steps {
        step.handoff = Default::default();
    }
    run
}

/// Order: every current step other than the first is reached by an edge from a step
/// that completed (or rejected into it), or from a fork that is waiting on it.
fn assert_order(bench: &Bench) {
    let document = bench.version.process.document();
    for (index, step) in bench.run.steps.iter().enumerate() {
        if index == 0
            || !matches!(
                step.state,
                Some(StepState::Ready | StepState::Claimed | StepState::Waiting)
            )
        {
            continue;
        }
        let reached = document.steps.iter().zip(&bench.run.steps).any(|(from, from_run)| {
            let mut targets: Vec<&str> = match &from.next {
                Some(Next::Step(id)) => vec![id],
                Some(Next::Routes(routes)) => routes.iter().map(|route| route.to.as_str()).collect(),
                _ => Vec::new(),
            };
            targets.extend(from.on_timeout.as_deref());
            targets.extend(from.on_reject.as_deref());
            if let StepKind::Parallel(entries) = &from.kind {
                targets.extend(entries.iter().map(String::as_str));
            }
            // A parallel step records nothing: done, it has joined; waiting, it forked.
            let moved =
                from_run.record.is_some() || matches!(from_run.state, Some(StepState::Waiting | StepState::Done));
            moved && targets.contains(&step.id.as_str())
        });
        assert!(reached, "step {} is current without a way in", step.id);
    }
}

/// One actor at a time: a claim exactly on claimed steps, and at most one token that
/// still renews.
fn assert_one_actor(bench: &Bench, tokens: &[String]) {
    for step in &bench.run.steps {
        assert_eq!(
            step.claim.is_some(),
            step.state == Some(StepState::Claimed),
            "{}",
            step.id
        );
    }
    let claimed = bench.run.steps.iter().filter(|step| step.claim.is_some()).count();
    let live = tokens
        .iter()
        .filter(|token| bench.clone().renew(&agent(), token, None).is_ok())
        .count();
    assert!(live <= claimed, "{live} live tokens for {claimed} claims");
}

/// Plays `ops` on a fixture, checking every guarantee after each; returns how many
/// calls succeeded.
fn check(name: &str, ops: &[Op]) -> usize {
    let version = fixture(name);
    let inputs = sample_inputs(&version);
    let starter = person(&version);
    let mut bench = Bench::start(version, &starter, inputs);
    let mut tokens = Vec::new();
    let mut succeeded = 0;
    for op in ops {
        let before = bench.run.clone();
        match apply(&mut bench, op, &mut tokens) {
            Err(error) if error.code == Code::NotAccepted => {
                assert_eq!(
                    without_handoffs(&bench.run),
                    without_handoffs(&before),
                    "a refused submission changed the run"
                );
            }
            Err(_) => assert_eq!(bench.run, before, "a refused call changed the run: {op:?}"),
            Ok(()) => succeeded += 1,
        }
        assert_eq!(
            (bench.run.version, bench.run.process.as_str()),
            (1, name),
            "the pinned version changed"
        );
        bench.view();
        assert_order(&bench);
        assert_one_actor(&bench, &tokens);
    }
    succeeded
}

const FIXTURES: [&str; 4] = [
    "vendor-check",
    "major-incident",
    "customer-offboarding",
    "invoice-approval",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_guarantees_hold_over_random_calls(which in 0..FIXTURES.len(), ops in prop::collection::vec(op(), 1..60)) {
        check(FIXTURES[which], &ops);
    }
}

/// The properties are only as good as the calls that succeed: aimed calls must move
/// runs along, through claims, submissions and decisions alike.
#[test]
fn aimed_calls_move_runs() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut succeeded = 0;
    let mut total = 0;
    for name in FIXTURES {
        for _ in 0..16 {
            let ops = prop::collection::vec(op(), 40..41)
                .new_tree(&mut runner)
                .expect("a sequence")
                .current();
            total += ops.len();
            succeeded += check(name, &ops);
        }
    }
    assert!(succeeded * 4 > total, "only {succeeded} of {total} calls succeeded");
}
