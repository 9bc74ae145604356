//! `check` and its questions (check-1 profile §2).

use std::collections::HashSet;

use crate::document::{Check, Question, QuestionKind};
use crate::path;
use crate::read::Reader;
use crate::yaml::{Node, Value};

const QUESTION_KEYS: [&str; 7] = ["ask", "pass", "fail", "one_of", "unsure", "levels", "confidence"];

/// The short form (one yes/no question) or the full form (a list of questions).
pub(crate) fn check(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Check> {
    if let Value::String(_) = node.value {
        let ask = r.text(node, path)?;
        return Some(Check {
            questions: vec![Question {
                ask,
                kind: QuestionKind::YesNo { pass: None, fail: None },
            }],
        });
    }
    let Value::List(items) = &node.value else {
        r.issues.push(
            path,
            format!(
                "expected a question or a list of questions, found {}",
                node.value.kind_name()
            ),
        );
        return None;
    };
    let items = r.list(node, path).unwrap_or(items);
    if items.is_empty() {
        r.issues.push(path, "needs at least one question");
    }
    let questions: Vec<Option<Question>> = items
        .iter()
        .enumerate()
        .map(|(index, item)| question(r, item, &path::index(path, index)))
        .collect();
    questions
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map(|questions| Check { questions })
}

fn question(r: &mut Reader<'_>, node: &Node, path: &str) -> Option<Question> {
    let object = r.object(node, path, &QUESTION_KEYS)?;
    let ask = object
        .required(r, "ask")
        .and_then(|(value, child)| r.text(value, &child));
    let confidence = object
        .get("confidence")
        .and_then(|(value, child)| r.fraction(value, &child));
    let only = |r: &mut Reader<'_>, key: &str, which: &str| {
        if object.has(key) {
            r.issues.push(path::child(path, key), format!("only for {which}"));
        }
    };
    let kind = match (object.get("one_of"), object.get("levels")) {
        (Some(_), Some(_)) => {
            r.issues.push(
                path,
                "has both one_of and levels; a question has one of them or neither",
            );
            None
        }
        (Some((answers, child)), None) => {
            only(r, "fail", "a yes/no question");
            choice(r, &object, answers, &child, confidence)
        }
        (None, Some((levels, child))) => {
            only(r, "fail", "a yes/no question");
            only(r, "unsure", "a choice question");
            rubric(r, &object, levels, &child, confidence)
        }
        (None, None) => {
            only(r, "unsure", "a choice question");
            only(r, "confidence", "choice and rubric questions");
            yes_no(r, &object)
        }
    };
    Some(Question { ask: ask?, kind: kind? })
}

fn yes_no(r: &mut Reader<'_>, object: &crate::read::Object<'_>) -> Option<QuestionKind> {
    let mut threshold = |key: &str| -> Result<Option<f64>, ()> {
        match object.get(key) {
            None => Ok(None),
            Some((value, child)) => r.fraction(value, &child).map(Some).ok_or(()),
        }
    };
    let pass = threshold("pass");
    let fail = threshold("fail");
    if let (Ok(Some(pass)), Ok(Some(fail))) = (pass, fail)
        && fail > pass
    {
        r.issues.push(
            path::child(&object.path, "fail"),
            "is above pass; fail must be at or below pass",
        );
        return None;
    }
    Some(QuestionKind::YesNo {
        pass: pass.ok()?,
        fail: fail.ok()?,
    })
}

fn choice(
    r: &mut Reader<'_>,
    object: &crate::read::Object<'_>,
    node: &Node,
    path: &str,
    confidence: Option<f64>,
) -> Option<QuestionKind> {
    let answers: Vec<(String, String)> = r
        .mapping(node, path)
        .map(|map| {
            map.entries()
                .filter_map(|(name, value, child)| {
                    r.string(value, &child).map(|text| (name.to_owned(), text.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default();
    if matches!(node.value, Value::Map(ref entries) if entries.len() < 2) {
        r.issues.push(path, "needs two or more answers");
    }
    let names: HashSet<&str> = answers.iter().map(|(name, _)| name.as_str()).collect();
    let pass = match object.get("pass") {
        Some((value, child)) => answer_names(r, value, &child, &names),
        None => {
            r.issues.push(
                path::child(&object.path, "pass"),
                "missing; a choice question lists the answers that pass",
            );
            None
        }
    };
    if pass.as_ref().is_some_and(Vec::is_empty) {
        r.issues
            .push(path::child(&object.path, "pass"), "needs at least one answer");
    }
    let unsure = match object.get("unsure") {
        Some((value, child)) => answer_names(r, value, &child, &names),
        None => Some(Vec::new()),
    };
    if let (Some(pass), Some(unsure)) = (&pass, &unsure) {
        for (index, name) in unsure.iter().enumerate() {
            if pass.contains(name) {
                r.issues.push(
                    path::index(&path::child(&object.path, "unsure"), index),
                    format!("{name:?} is also in pass"),
                );
            }
        }
    }
    Some(QuestionKind::Choice {
        answers,
        pass: pass?,
        unsure: unsure?,
        confidence,
    })
}

/// A list of answer names, each one of `names`.
fn answer_names(r: &mut Reader<'_>, node: &Node, path: &str, names: &HashSet<&str>) -> Option<Vec<String>> {
    if !matches!(node.value, Value::List(_)) {
        r.issues.push(
            path,
            format!("expected a list of answer names, found {}", node.value.kind_name()),
        );
        return None;
    }
    let items = r.list(node, path)?;
    let mut found = Vec::with_capacity(items.len());
    let mut ok = true;
    for (index, item) in items.iter().enumerate() {
        let child = path::index(path, index);
        match r.string(item, &child) {
            Some(name) if names.contains(name) => found.push(name.to_owned()),
            Some(name) => {
                r.issues.push(child, format!("{name:?} is not one of the answers"));
                ok = false;
            }
            None => ok = false,
        }
    }
    ok.then_some(found)
}

fn rubric(
    r: &mut Reader<'_>,
    object: &crate::read::Object<'_>,
    node: &Node,
    path: &str,
    confidence: Option<f64>,
) -> Option<QuestionKind> {
    let items = r.list(node, path)?;
    if !(2..=10).contains(&items.len()) {
        r.issues
            .push(path, format!("has {} levels; a rubric has 2–10", items.len()));
    }
    let levels: Vec<Option<String>> = items
        .iter()
        .enumerate()
        .map(|(index, item)| r.text(item, &path::index(path, index)))
        .collect();
    let pass = match object.get("pass") {
        Some((value, child)) => {
            let level = match &value.value {
                Value::Number(text) => text.parse::<usize>().ok().filter(|level| *level < items.len()),
                _ => None,
            };
            if level.is_none() {
                let shown = match &value.value {
                    Value::Number(text) => text.clone(),
                    other => other.kind_name().to_owned(),
                };
                r.issues.push(
                    child,
                    format!(
                        "expected a level from 0 to {}, found {shown}",
                        items.len().saturating_sub(1)
                    ),
                );
            }
            level
        }
        None => {
            r.issues.push(
                path::child(&object.path, "pass"),
                "missing; a rubric question names the level that passes",
            );
            None
        }
    };
    let levels = levels.into_iter().collect::<Option<Vec<_>>>()?;
    Some(QuestionKind::Rubric {
        levels,
        pass: pass?,
        confidence,
    })
}
