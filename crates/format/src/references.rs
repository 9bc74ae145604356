//! Rules between steps that need no graph: unique ids, targets that exist, and
//! `person` / `wait_until` paths that name declared fields of the right type.

use std::collections::HashMap;

use crate::document::{DataPath, FieldType, Fields, Next, PersonRef, Step, StepKind};
use crate::issue::Issues;
use crate::path;
use crate::steps::StepSlot;

/// Checks ids and references of every readable step.
/// Returns whether every step id is unique.
pub(crate) fn check(slots: &[StepSlot], inputs: &Fields, uses_parallel: bool, issues: &mut Issues) -> bool {
    let mut unique = true;
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (index, slot) in slots.iter().enumerate() {
        let Some(id) = slot.id.as_deref() else {
            continue;
        };
        if let Some(earlier) = first.get(id) {
            unique = false;
            issues.push(
                path::child(&slot.path, "id"),
                format!("{id:?} is already the id of steps[{earlier}]"),
            );
        } else {
            first.insert(id, index);
        }
    }
    // `join` is a target of `next` and `on_timeout` in a process that uses parallel-1,
    // never of `on_reject` or `parallel:`.
    let exists =
        |id: &str, join_allowed: bool| first.contains_key(id) || (join_allowed && uses_parallel && id == "join");
    let steps: HashMap<&str, &Step> = slots
        .iter()
        .filter_map(|slot| slot.step.as_ref())
        .map(|step| (step.id.as_str(), step))
        .collect();

    for slot in slots {
        let Some(step) = &slot.step else { continue };
        let mut target = |key: String, id: &str, join_allowed: bool| {
            if !exists(id, join_allowed) {
                let hint = crate::suggest::hint(id, first.keys().copied());
                issues.push(key, format!("no step {id:?}{hint}"));
            }
        };
        match &step.next {
            Some(Next::Step(id)) => target(path::child(&slot.path, "next"), id, true),
            Some(Next::Routes(routes)) => {
                for (index, route) in routes.iter().enumerate() {
                    target(path::index(&path::child(&slot.path, "next"), index), &route.to, true);
                }
            }
            Some(Next::Join) | None => {}
        }
        if let Some(id) = &step.on_reject {
            target(path::child(&slot.path, "on_reject"), id, false);
        }
        if let Some(id) = &step.on_timeout {
            target(path::child(&slot.path, "on_timeout"), id, true);
        }
        if let StepKind::Parallel(entries) = &step.kind {
            for (index, id) in entries.iter().enumerate() {
                target(path::index(&path::child(&slot.path, "parallel"), index), id, false);
            }
        }
        if let Some(PersonRef::Path(data)) = &step.person {
            declared(
                data,
                FieldType::Person,
                inputs,
                &steps,
                path::child(&slot.path, "person"),
                issues,
            );
        }
        if let StepKind::WaitUntil(data) = &step.kind {
            declared(
                data,
                FieldType::Datetime,
                inputs,
                &steps,
                path::child(&slot.path, "wait_until"),
                issues,
            );
        }
    }
    unique
}

/// A path must name a declared field of type `ty`.
fn declared(
    data: &DataPath,
    ty: FieldType,
    inputs: &Fields,
    steps: &HashMap<&str, &Step>,
    at: String,
    issues: &mut Issues,
) {
    let field = match data {
        DataPath::Input(name) => match inputs.get(name) {
            Some(field) => field,
            None => {
                let hint = crate::suggest::hint(name, inputs.0.iter().map(|(input, _)| input.as_str()));
                return issues.push(at, format!("{data} names no declared input{hint}"));
            }
        },
        DataPath::Output { step, field } => {
            let Some(source) = steps.get(step.as_str()) else {
                let hint = crate::suggest::hint(step, steps.keys().copied());
                return issues.push(at, format!("{data} names no step {step:?}{hint}"));
            };
            match source.output.get(field) {
                Some(field) => field,
                None => {
                    let hint = crate::suggest::hint(field, source.output.0.iter().map(|(output, _)| output.as_str()));
                    return issues.push(at, format!("{data} names no declared output of {step:?}{hint}"));
                }
            }
        }
    };
    if field.ty != ty {
        issues.push(at, format!("{data} is a {} field; it must name a {ty} field", field.ty));
    }
}
