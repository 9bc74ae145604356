//! Every tool's arguments, declared once: the JSON Schema `tools/list` advertises and
//! the decoder that checks a call both come from [`ARGUMENTS`].

use agentprocess_service::Tool;
use serde_json::{Map, Value, json};

/// The type of one argument, with exactly the bounds of the official argument schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string of `min` characters or more, and at most `max` when bounded.
    Text {
        /// Fewest allowed, in characters (0 or 1 in the official schemas).
        min: usize,
        /// Most allowed, in characters; `None` for no bound.
        max: Option<usize>,
    },
    /// An integer in `min..=max`.
    Integer {
        /// The lower bound.
        min: Lower,
        /// Largest allowed.
        max: u64,
    },
    /// A JSON object with any members.
    Object,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A list of evidence items `{ kind: file | link, ref }`.
    Evidence,
}

/// The lower bound of an integer, written as the official schema writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lower {
    /// `minimum`: this value or more.
    AtLeast(u64),
    /// `exclusiveMinimum`: more than this value.
    Above(u64),
}

impl Lower {
    /// The smallest integer allowed.
    fn least(self) -> u64 {
        match self {
            Self::AtLeast(min) => min,
            Self::Above(min) => min.saturating_add(1),
        }
    }
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argument {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether a call must carry it.
    pub required: bool,
    /// What it is, for `tools/list`.
    pub description: &'static str,
}

/// A tool and its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The tool.
    pub tool: Tool,
    /// What it does, for `tools/list`.
    pub description: &'static str,
    /// Its arguments.
    pub arguments: &'static [Argument],
}

/// Any string, the empty one included: what the official schemas say of ids and tokens.
const ANY_TEXT: Kind = Kind::Text { min: 0, max: None };
/// Free text written by a caller: a note, a reason, a progress report.
const NOTE: Kind = Kind::Text {
    min: 0,
    max: Some(4000),
};
/// The largest integer a JSON number holds exactly (2^53 - 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

const fn required(name: &'static str, kind: Kind, description: &'static str) -> Argument {
    Argument {
        name,
        kind,
        required: true,
        description,
    }
}

const fn optional(name: &'static str, kind: Kind, description: &'static str) -> Argument {
    Argument {
        name,
        kind,
        required: false,
        description,
    }
}

const REQUEST_ID: Argument = required(
    "requestId",
    Kind::Text { min: 1, max: Some(128) },
    "A new UUID for this write. Repeating it with the same arguments returns the original result.",
);
const RUN_ID: Argument = required("runId", ANY_TEXT, "The run.");
const TOKEN_ARG: Argument = required("token", ANY_TEXT, "The claim token from claim or renew.");
const CURSOR: Argument = optional("cursor", ANY_TEXT, "nextCursor from the previous page.");
const LIMIT: Argument = optional(
    "limit",
    Kind::Integer {
        min: Lower::AtLeast(1),
        max: 100,
    },
    "Page size, 1 to 100 (default 20).",
);
const OUTPUT: Argument = optional("output", Kind::Object, "The step's output fields.");
const EVIDENCE: Argument = optional(
    "evidence",
    Kind::Evidence,
    "Evidence items: { kind: file | link, ref }.",
);
const SUMMARY: Kind = Kind::Text {
    min: 0,
    max: Some(2000),
};
const NEXT: Argument = optional("next", ANY_TEXT, "The chosen route, when the step's next is a list.");
const REASON: Argument = optional("reason", NOTE, "Why that route.");

/// Every tool, in the order `describe` lists them.
pub const ARGUMENTS: &[ToolSpec] = &[
    ToolSpec {
        tool: Tool::Describe,
        description: "Protocol version, profiles, lease seconds, person format, tools and limits of this server.",
        arguments: &[],
    },
    ToolSpec {
        tool: Tool::ListProcesses,
        description: "Published processes: name, description, latest version, inputs (and requires). Paged.",
        arguments: &[CURSOR],
    },
    ToolSpec {
        tool: Tool::StartRun,
        description: "Start a run of a published process with inputs. Returns the run view.",
        arguments: &[
            required("process", ANY_TEXT, "The process name."),
            optional(
                "version",
                Kind::Integer {
                    min: Lower::Above(0),
                    max: MAX_SAFE_INTEGER,
                },
                "A published version; the latest by default. An older version takes new runs only while an admin of the organization keeps it open (else forbidden).",
            ),
            required("inputs", Kind::Object, "Values for the process's inputs."),
            optional("mode", Kind::OneOf(&["live", "test"]), "live (default) or test."),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::GetRun,
        description: "The run view: run data, step states, open work items. Never a token.",
        arguments: &[RUN_ID],
    },
    ToolSpec {
        tool: Tool::GetWork,
        description: "For an agent: ready agent steps with the exact claim call. For a person: open work items with \
                      the exact decide call. Oldest first, paged.",
        arguments: &[LIMIT, CURSOR, optional("process", ANY_TEXT, "Only this process.")],
    },
    ToolSpec {
        tool: Tool::Claim,
        description: "Claim a ready agent step: token, expiry, step, body and run data.",
        arguments: &[RUN_ID, required("stepId", ANY_TEXT, "The step to claim."), REQUEST_ID],
    },
    ToolSpec {
        tool: Tool::Renew,
        description: "A new token and expiry for a live claim; the old token stops working.",
        arguments: &[
            TOKEN_ARG,
            optional(
                "progress",
                NOTE,
                "What is done so far, handed to the next claimant if this lease expires.",
            ),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::Upload,
        description: "Store a file for use as evidence; returns its id and SHA-256.",
        arguments: &[
            required("fileName", Kind::Text { min: 1, max: Some(255) }, "The file's name."),
            required("contentType", Kind::Text { min: 1, max: Some(160) }, "Its media type."),
            required("contentBase64", Kind::Text { min: 1, max: None }, "The bytes, base64."),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::Submit,
        description: "Complete a claimed step with output, evidence, summary and the chosen next. Returns the run view.",
        arguments: &[
            TOKEN_ARG,
            Argument {
                required: true,
                ..OUTPUT
            },
            EVIDENCE,
            required("summary", SUMMARY, "What was done and found, 1 to 2000 characters."),
            NEXT,
            REASON,
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::Escalate,
        description: "Hand the claimed step to a person with a note. Returns the run view.",
        arguments: &[
            TOKEN_ARG,
            required("note", NOTE, "What the person needs to know."),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::Decide,
        description: "Decide a work item: completed, approved, rejected, returned or failed. Returns the run view.",
        arguments: &[
            RUN_ID,
            required("workItemId", ANY_TEXT, "The work item."),
            required(
                "snapshot",
                ANY_TEXT,
                "The snapshot of the read this decision is based on.",
            ),
            required(
                "decision",
                Kind::OneOf(&["completed", "approved", "rejected", "returned", "failed"]),
                "The decision.",
            ),
            OUTPUT,
            EVIDENCE,
            optional("summary", SUMMARY, "What was done (completed)."),
            NEXT,
            REASON,
            optional("note", NOTE, "Required for rejected, returned and failed."),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::Cancel,
        description: "Cancel a run (operators). Returns the run view.",
        arguments: &[RUN_ID, required("reason", NOTE, "Why."), REQUEST_ID],
    },
    ToolSpec {
        tool: Tool::SendEvent,
        description: "Send a named event to a run (agents and operators); a waiting wait_for consumes it.",
        arguments: &[
            RUN_ID,
            required("name", ANY_TEXT, "The event name."),
            optional("data", Kind::Object, "The event's data."),
            REQUEST_ID,
        ],
    },
    ToolSpec {
        tool: Tool::ListRuns,
        description: "Runs of this organization, oldest first, filtered by process, state and input values. Paged.",
        arguments: &[
            optional("process", ANY_TEXT, "Only this process."),
            optional(
                "state",
                Kind::OneOf(&["active", "waiting", "ended", "cancelled"]),
                "Only runs in this state.",
            ),
            optional("inputs", Kind::Object, "Only runs whose inputs equal these values."),
            LIMIT,
            CURSOR,
        ],
    },
];

/// The declaration of a tool.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    let tool = Tool::parse(name)?;
    ARGUMENTS.iter().find(|spec| spec.tool == tool)
}

/// The JSON Schema (draft 2020-12) of a tool's arguments: the official argument schema
/// of `core-2`, with a description on the tool's arguments.
pub fn input_schema(spec: &ToolSpec) -> Map<String, Value> {
    let mut properties = Map::new();
    for argument in spec.arguments {
        let mut schema = match argument.kind {
            Kind::Text { min, max } => {
                let mut text = json!({ "type": "string" });
                if min > 0 {
                    text["minLength"] = json!(min);
                }
                if let Some(max) = max {
                    text["maxLength"] = json!(max);
                }
                text
            }
            Kind::Integer { min, max } => {
                let lower = match min {
                    Lower::AtLeast(min) => ("minimum", min),
                    Lower::Above(min) => ("exclusiveMinimum", min),
                };
                json!({ "type": "integer", lower.0: lower.1, "maximum": max })
            }
            Kind::Object => json!({
                "type": "object",
                "propertyNames": { "type": "string" },
                "additionalProperties": {}
            }),
            Kind::OneOf(values) => json!({ "type": "string", "enum": values }),
            Kind::Evidence => json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": { "type": "string", "enum": ["file", "link"] },
                        "ref": { "type": "string", "minLength": 1 }
                    },
                    "required": ["kind", "ref"],
                    "additionalProperties": false
                }
            }),
        };
        schema["description"] = json!(argument.description);
        properties.insert(argument.name.to_owned(), schema);
    }
    let required: Vec<&str> = spec
        .arguments
        .iter()
        .filter(|argument| argument.required)
        .map(|argument| argument.name)
        .collect();
    let mut schema = Map::new();
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".to_owned(), json!(required));
    }
    schema.insert("additionalProperties".to_owned(), json!(false));
    schema
}

/// Checks a call's arguments against the declaration; returns every issue.
pub fn check(spec: &ToolSpec, arguments: &Map<String, Value>) -> Vec<String> {
    check_arguments(spec, arguments, true)
}

/// Checks the arguments a call carries, without asking for the ones it lacks: for a
/// surface that gathers some of a tool's arguments itself (`POST /v1/uploads`).
pub fn check_present(spec: &ToolSpec, arguments: &Map<String, Value>) -> Vec<String> {
    check_arguments(spec, arguments, false)
}

fn check_arguments(spec: &ToolSpec, arguments: &Map<String, Value>, all_required: bool) -> Vec<String> {
    let mut issues = Vec::new();
    for argument in spec.arguments {
        match arguments.get(argument.name) {
            None if argument.required && all_required => issues.push(format!("{}: missing", argument.name)),
            None => {}
            Some(value) => check_value(argument.name, argument.kind, value, &mut issues),
        }
    }
    for name in arguments.keys() {
        if !spec.arguments.iter().any(|argument| argument.name == name) {
            issues.push(format!(
                "{}: not an argument of {}",
                name.escape_debug(),
                spec.tool.name()
            ));
        }
    }
    issues
}

fn check_value(name: &str, kind: Kind, value: &Value, issues: &mut Vec<String>) {
    match kind {
        Kind::Text { min, max } => match value.as_str() {
            None => issues.push(format!("{name}: expected a string")),
            Some(text) => check_text(name, text, min, max, issues),
        },
        Kind::Integer { min, max } => check_integer(name, value, min.least(), max, issues),
        Kind::Object => match value.as_object() {
            Some(object) => check_keys(name, object, issues),
            None => issues.push(format!("{name}: expected an object")),
        },
        Kind::OneOf(values) => match value.as_str() {
            Some(text) if values.contains(&text) => {}
            _ => issues.push(format!("{name}: expected one of {}", values.join(", "))),
        },
        Kind::Evidence => check_evidence(name, value, issues),
    }
}

fn check_text(name: &str, text: &str, min: usize, max: Option<usize>, issues: &mut Vec<String>) {
    // Counted as JSON Schema counts: in characters (code points).
    let length = text.chars().count();
    if length < min {
        issues.push(if min == 1 {
            format!("{name}: must not be empty")
        } else {
            format!("{name}: shorter than {min} characters")
        });
    }
    if let Some(max) = max.filter(|max| length > *max) {
        issues.push(format!("{name}: longer than {max} characters"));
    }
    check_no_nul(name, text, issues);
}

/// PostgreSQL cannot store U+0000 in text, so no string that reaches a column may
/// hold it: refused here rather than failing the write as `retry` for ever.
fn check_no_nul(name: &str, text: &str, issues: &mut Vec<String>) {
    if text.contains('\0') {
        issues.push(format!("{name}: must not contain the character U+0000"));
    }
}

/// The member names of an object argument become column values (input filters,
/// output field names in the record), so they are held to the same rule as strings.
fn check_keys(name: &str, object: &Map<String, Value>, issues: &mut Vec<String>) {
    for key in object.keys().filter(|key| key.contains('\0')) {
        issues.push(format!(
            "{name}.{}: a member name must not contain the character U+0000",
            key.escape_debug()
        ));
    }
}

/// An integer as JSON Schema reads one: any number whose value is whole (`2`, `2.0`,
/// `2e0`), within bounds.
fn check_integer(name: &str, value: &Value, min: u64, max: u64, issues: &mut Vec<String>) {
    let Value::Number(number) = value else {
        issues.push(format!("{name}: expected an integer"));
        return;
    };
    let whole = match number.as_u64() {
        Some(whole) => Some(Ok(whole)),
        None => number.as_f64().and_then(|float| {
            let whole = float.is_infinite() || float.fract() == 0.0;
            // Negative, beyond u64 or infinite (1e400): whole, but out of every range.
            let fits = (0.0..=u64::MAX as f64).contains(&float).then_some(float as u64);
            whole.then_some(fits.ok_or(()))
        }),
    };
    match whole {
        Some(Ok(whole)) if (min..=max).contains(&whole) => {}
        Some(Ok(_) | Err(())) => issues.push(format!("{name}: must be between {min} and {max}")),
        None => issues.push(format!("{name}: must be an integer between {min} and {max}")),
    }
}

fn check_evidence(name: &str, value: &Value, issues: &mut Vec<String>) {
    let Some(items) = value.as_array() else {
        issues.push(format!("{name}: expected a list of {{ kind, ref }}"));
        return;
    };
    for (index, item) in items.iter().enumerate() {
        let at = format!("{name}[{index}]");
        let Some(item) = item.as_object() else {
            issues.push(format!("{at}: expected {{ kind, ref }}"));
            continue;
        };
        match item.get("kind").and_then(Value::as_str) {
            Some("file" | "link") => {}
            _ => issues.push(format!("{at}.kind: expected file or link")),
        }
        match item.get("ref") {
            Some(Value::String(reference)) => check_text(&format!("{at}.ref"), reference, 1, None, issues),
            _ => issues.push(format!("{at}.ref: expected a string")),
        }
        for key in item.keys().filter(|key| !matches!(key.as_str(), "kind" | "ref")) {
            issues.push(format!("{at}.{}: not a field of an evidence item", key.escape_debug()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issues(tool: &str, arguments: Value) -> Vec<String> {
        let spec = spec(tool).expect("tool");
        check(spec, arguments.as_object().expect("object"))
    }

    #[test]
    fn every_problem_of_a_call_is_named_at_once() {
        assert_eq!(
            issues("get_work", json!({ "limit": 0, "cursor": 5, "colour": "red" })),
            vec![
                "limit: must be between 1 and 100",
                "cursor: expected a string",
                "colour: not an argument of get_work"
            ]
        );
        assert_eq!(
            issues("claim", json!({ "runId": null, "stepId": ["x"] })),
            vec![
                "runId: expected a string",
                "stepId: expected a string",
                "requestId: missing"
            ]
        );
        assert_eq!(
            issues(
                "renew",
                json!({ "token": "", "requestId": "", "progress": "p".repeat(4001) })
            ),
            vec!["progress: longer than 4000 characters", "requestId: must not be empty"]
        );
    }

    #[test]
    fn a_nul_character_is_refused_wherever_a_string_is_stored() {
        assert_eq!(
            issues(
                "start_run",
                json!({ "process": "p\u{0}", "inputs": { "a\u{0}b": 1, "c": "\u{0}" }, "requestId": "\u{0}" })
            ),
            vec![
                "process: must not contain the character U+0000",
                "inputs.a\\0b: a member name must not contain the character U+0000",
                "requestId: must not contain the character U+0000"
            ]
        );
        assert_eq!(
            issues(
                "submit",
                json!({ "token": "t", "requestId": "q", "output": {}, "summary": "\u{0}", "evidence": [{ "kind": "link", "ref": "\u{0}" }] })
            ),
            vec![
                "evidence[0].ref: must not contain the character U+0000",
                "summary: must not contain the character U+0000"
            ]
        );
    }

    #[test]
    fn an_integer_is_any_whole_number_within_bounds() {
        for (limit, valid) in [
            (json!(1), true),
            (json!(100), true),
            (serde_json::from_str::<Value>("2.0").expect("JSON"), true),
            (serde_json::from_str::<Value>("1e2").expect("JSON"), true),
            (serde_json::from_str::<Value>("2.5").expect("JSON"), false),
            (serde_json::from_str::<Value>("1e400").expect("JSON"), false),
            (json!(-3), false),
            (json!("5"), false),
        ] {
            assert_eq!(
                issues("get_work", json!({ "limit": limit })).is_empty(),
                valid,
                "{limit}"
            );
        }
        assert!(
            issues(
                "start_run",
                json!({ "process": "p", "inputs": {}, "requestId": "q", "version": 9_007_199_254_740_991_u64 })
            )
            .is_empty()
        );
        assert_eq!(
            issues(
                "start_run",
                json!({ "process": "p", "inputs": {}, "requestId": "q", "version": 0 })
            ),
            vec!["version: must be between 1 and 9007199254740991"]
        );
    }

    #[test]
    fn a_missing_summary_or_output_breaks_the_schema_and_is_invalid() {
        // Specification §6.3: a call whose arguments break the tool's schema is
        // `invalid` before acceptance. An empty summary is acceptance's to refuse.
        assert_eq!(
            issues("submit", json!({ "token": "t", "requestId": "q" })),
            vec!["output: missing", "summary: missing"]
        );
        assert!(
            issues(
                "submit",
                json!({ "token": "t", "requestId": "q", "output": {}, "summary": "" })
            )
            .is_empty()
        );
        assert_eq!(
            issues(
                "submit",
                json!({ "token": "t", "requestId": "q", "output": {}, "summary": 3, "evidence": [{ "kind": "photo" }] })
            ),
            vec![
                "evidence[0].kind: expected file or link",
                "evidence[0].ref: expected a string",
                "summary: expected a string"
            ]
        );
    }

    #[test]
    fn every_advertised_schema_accepts_what_the_decoder_accepts_and_refuses_what_it_refuses() {
        let samples = [
            (
                "start_run",
                json!({ "process": "p", "inputs": {}, "requestId": "q" }),
                true,
            ),
            (
                "start_run",
                json!({ "process": "p", "inputs": [], "requestId": "q" }),
                false,
            ),
            ("get_work", json!({ "limit": 101 }), false),
            ("get_work", json!({ "limit": 100, "process": "p" }), true),
            (
                "decide",
                json!({ "runId": "r", "workItemId": "w", "snapshot": "s", "decision": "approved", "requestId": "q" }),
                true,
            ),
            (
                "decide",
                json!({ "runId": "r", "workItemId": "w", "snapshot": "s", "decision": "maybe", "requestId": "q" }),
                false,
            ),
            ("list_runs", json!({ "state": "ended", "inputs": { "a": 1 } }), true),
            ("describe", json!({ "x": 1 }), false),
            ("list_processes", json!({ "cursor": null }), false),
            ("list_processes", json!({ "cursor": "" }), true),
            ("get_work", json!({ "limit": 2.0 }), true),
            (
                "start_run",
                json!({ "process": "p", "inputs": {}, "requestId": "q", "version": 9_007_199_254_740_992_u64 }),
                false,
            ),
            (
                "upload",
                json!({ "fileName": "a", "contentType": "t".repeat(161), "contentBase64": "AA==", "requestId": "q" }),
                false,
            ),
            ("renew", json!({ "token": "t", "requestId": "q".repeat(129) }), false),
            (
                "claim",
                json!({ "runId": null, "stepId": "s", "requestId": "q" }),
                false,
            ),
            (
                "submit",
                json!({ "token": "t", "output": {}, "summary": "s", "evidence": [{ "kind": "file", "ref": "f_1" }], "requestId": "q" }),
                true,
            ),
        ];
        for (tool, arguments, valid) in samples {
            let spec = spec(tool).expect("tool");
            let schema = Value::Object(input_schema(spec));
            let validator = jsonschema::validator_for(&schema).expect("schema compiles");
            assert_eq!(validator.is_valid(&arguments), valid, "{tool} schema on {arguments}");
            let decoded = check(spec, arguments.as_object().expect("object")).is_empty();
            assert_eq!(decoded, valid, "{tool} decoder on {arguments}");
        }
    }
}
