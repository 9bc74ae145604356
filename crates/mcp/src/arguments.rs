//! Every tool's arguments, declared once: the JSON Schema `tools/list` advertises and
//! the decoder that checks a call both come from [`ARGUMENTS`].

use serde_json::{Map, Value, json};

/// The type of one argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string of 1 to `max` characters.
    Text {
        /// Longest allowed, in characters.
        max: usize,
    },
    /// An integer in `min..=max`.
    Integer {
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
    /// A JSON object.
    Object,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A list of evidence items `{ kind: file | link, ref }`.
    Evidence,
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
    /// The tool's name.
    pub name: &'static str,
    /// What it does, for `tools/list`.
    pub description: &'static str,
    /// Its arguments.
    pub arguments: &'static [Argument],
    /// Arguments that tools.md requires but whose absence is the engine's to report
    /// (`summary: missing` is `not_accepted`, not `invalid`): advertised as required,
    /// decoded as optional.
    pub reported_by_engine: &'static [&'static str],
}

const ID: usize = 200;
const TEXT: usize = 20_000;
const TOKEN: usize = 512;

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
    Kind::Text { max: ID },
    "A new UUID for this write. Repeating it with the same arguments returns the original result.",
);
const RUN_ID: Argument = required("runId", Kind::Text { max: ID }, "The run.");
const TOKEN_ARG: Argument = required(
    "token",
    Kind::Text { max: TOKEN },
    "The claim token from claim or renew.",
);
const CURSOR: Argument = optional("cursor", Kind::Text { max: 1000 }, "nextCursor from the previous page.");
const LIMIT: Argument = optional(
    "limit",
    Kind::Integer { min: 1, max: 100 },
    "Page size, 1 to 100 (default 20).",
);
const OUTPUT: Argument = optional("output", Kind::Object, "The step's output fields.");
const EVIDENCE: Argument = optional(
    "evidence",
    Kind::Evidence,
    "Evidence items: { kind: file | link, ref }.",
);
const NEXT: Argument = optional(
    "next",
    Kind::Text { max: ID },
    "The chosen route, when the step's next is a list.",
);
const REASON: Argument = optional("reason", Kind::Text { max: TEXT }, "Why that route.");

/// Every tool, in the order `describe` lists them.
pub const ARGUMENTS: &[ToolSpec] = &[
    ToolSpec {
        name: "describe",
        description: "Protocol version, profiles, lease seconds, person format, tools and limits of this server.",
        arguments: &[],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "list_processes",
        description: "Published processes: name, description, latest version, inputs (and requires). Paged.",
        arguments: &[CURSOR],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "start_run",
        description: "Start a run of a published process with inputs. Returns the run view.",
        arguments: &[
            required("process", Kind::Text { max: ID }, "The process name."),
            optional(
                "version",
                Kind::Integer {
                    min: 1,
                    max: u32::MAX as u64,
                },
                "A published version; the latest by default.",
            ),
            required("inputs", Kind::Object, "Values for the process's inputs."),
            optional("mode", Kind::OneOf(&["live", "test"]), "live (default) or test."),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "get_run",
        description: "The run view: run data, step states, open work items. Never a token.",
        arguments: &[RUN_ID],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "get_work",
        description: "For an agent: ready agent steps with the exact claim call. For a person: open work items with \
                      the exact decide call. Oldest first, paged.",
        arguments: &[
            LIMIT,
            CURSOR,
            optional("process", Kind::Text { max: ID }, "Only this process."),
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "claim",
        description: "Claim a ready agent step: token, expiry, step, body and run data.",
        arguments: &[
            RUN_ID,
            required("stepId", Kind::Text { max: ID }, "The step to claim."),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "renew",
        description: "A new token and expiry for a live claim; the old token stops working.",
        arguments: &[
            TOKEN_ARG,
            optional(
                "progress",
                Kind::Text { max: TEXT },
                "What is done so far, handed to the next claimant if this lease expires.",
            ),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "upload",
        description: "Store a file for use as evidence; returns its id and SHA-256.",
        arguments: &[
            required("fileName", Kind::Text { max: 255 }, "The file's name."),
            required("contentType", Kind::Text { max: 255 }, "Its media type."),
            required("contentBase64", Kind::Text { max: usize::MAX }, "The bytes, base64."),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "submit",
        description: "Complete a claimed step with output, evidence, summary and the chosen next. Returns the run view.",
        arguments: &[
            TOKEN_ARG,
            Argument {
                required: true,
                ..OUTPUT
            },
            EVIDENCE,
            required(
                "summary",
                Kind::Text { max: usize::MAX },
                "What was done and found, 1 to 2000 characters.",
            ),
            NEXT,
            REASON,
            REQUEST_ID,
        ],
        reported_by_engine: &["output", "summary"],
    },
    ToolSpec {
        name: "escalate",
        description: "Hand the claimed step to a person with a note. Returns the run view.",
        arguments: &[
            TOKEN_ARG,
            required("note", Kind::Text { max: TEXT }, "What the person needs to know."),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "decide",
        description: "Decide a work item: completed, approved, rejected, returned or failed. Returns the run view.",
        arguments: &[
            RUN_ID,
            required("workItemId", Kind::Text { max: ID }, "The work item."),
            required(
                "snapshot",
                Kind::Text { max: ID },
                "The snapshot of the read this decision is based on.",
            ),
            required(
                "decision",
                Kind::OneOf(&["completed", "approved", "rejected", "returned", "failed"]),
                "The decision.",
            ),
            OUTPUT,
            EVIDENCE,
            optional("summary", Kind::Text { max: usize::MAX }, "What was done (completed)."),
            NEXT,
            REASON,
            optional(
                "note",
                Kind::Text { max: TEXT },
                "Required for rejected, returned and failed.",
            ),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "cancel",
        description: "Cancel a run (operators). Returns the run view.",
        arguments: &[RUN_ID, required("reason", Kind::Text { max: TEXT }, "Why."), REQUEST_ID],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "send_event",
        description: "Send a named event to a run (agents and operators); a waiting wait_for consumes it.",
        arguments: &[
            RUN_ID,
            required("name", Kind::Text { max: ID }, "The event name."),
            optional("data", Kind::Object, "The event's data."),
            REQUEST_ID,
        ],
        reported_by_engine: &[],
    },
    ToolSpec {
        name: "list_runs",
        description: "Runs of this organization, oldest first, filtered by process, state and input values. Paged.",
        arguments: &[
            optional("process", Kind::Text { max: ID }, "Only this process."),
            optional(
                "state",
                Kind::OneOf(&["active", "waiting", "ended", "cancelled"]),
                "Only runs in this state.",
            ),
            optional("inputs", Kind::Object, "Only runs whose inputs equal these values."),
            LIMIT,
            CURSOR,
        ],
        reported_by_engine: &[],
    },
];

/// The declaration of a tool.
pub fn spec(tool: &str) -> Option<&'static ToolSpec> {
    ARGUMENTS.iter().find(|spec| spec.name == tool)
}

/// The JSON Schema (draft 2020-12) of a tool's arguments.
pub fn input_schema(spec: &ToolSpec) -> Map<String, Value> {
    let mut properties = Map::new();
    for argument in spec.arguments {
        let mut schema = match argument.kind {
            Kind::Text { max } if max == usize::MAX => json!({ "type": "string", "minLength": 1 }),
            Kind::Text { max } => json!({ "type": "string", "minLength": 1, "maxLength": max }),
            Kind::Integer { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
            Kind::Object => json!({ "type": "object" }),
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
        if let Some(object) = schema.as_object_mut() {
            // An optional argument may be sent as null: `cursor: nextCursor` on the
            // first page, for one.
            if !argument.required {
                if let Some(kind) = object.get("type").cloned() {
                    object.insert("type".to_owned(), json!([kind, "null"]));
                }
                if let Some(Value::Array(values)) = object.get_mut("enum") {
                    values.push(Value::Null);
                }
            }
            object.insert("description".to_owned(), json!(argument.description));
        }
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
    let mut issues = Vec::new();
    for argument in spec.arguments {
        match arguments.get(argument.name) {
            None | Some(Value::Null) => {
                if argument.required && !spec.reported_by_engine.contains(&argument.name) {
                    issues.push(format!("{}: missing", argument.name));
                }
            }
            Some(value) if spec.reported_by_engine.contains(&argument.name) => {
                check_type(argument.name, argument.kind, value, &mut issues);
            }
            Some(value) => check_value(argument.name, argument.kind, value, &mut issues),
        }
    }
    for name in arguments.keys() {
        if !spec.arguments.iter().any(|argument| argument.name == name) {
            issues.push(format!("{name}: not an argument of {}", spec.name));
        }
    }
    issues
}

fn check_value(name: &str, kind: Kind, value: &Value, issues: &mut Vec<String>) {
    match kind {
        Kind::Text { max } => match value.as_str() {
            None => issues.push(format!("{name}: expected a string")),
            Some("") => issues.push(format!("{name}: must not be empty")),
            Some(text) if max != usize::MAX && text.chars().count() > max => {
                issues.push(format!("{name}: longer than {max} characters"));
            }
            Some(_) => {}
        },
        Kind::Integer { min, max } => match value.as_u64() {
            Some(number) if (min..=max).contains(&number) => {}
            Some(_) => issues.push(format!("{name}: must be between {min} and {max}")),
            None if value.is_number() => issues.push(format!("{name}: must be an integer between {min} and {max}")),
            None => issues.push(format!("{name}: expected an integer")),
        },
        Kind::Object => {
            if !value.is_object() {
                issues.push(format!("{name}: expected an object"));
            }
        }
        Kind::OneOf(values) => match value.as_str() {
            Some(text) if values.contains(&text) => {}
            _ => issues.push(format!("{name}: expected one of {}", values.join(", "))),
        },
        Kind::Evidence => check_evidence(name, value, issues),
    }
}

/// Only the JSON type, for arguments whose content the engine judges.
fn check_type(name: &str, kind: Kind, value: &Value, issues: &mut Vec<String>) {
    match kind {
        Kind::Text { .. } if !value.is_string() => issues.push(format!("{name}: expected a string")),
        Kind::Object if !value.is_object() => issues.push(format!("{name}: expected an object")),
        _ => {}
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
            Some(Value::String(reference)) if !reference.is_empty() => {}
            Some(Value::String(_)) => issues.push(format!("{at}.ref: must not be empty")),
            _ => issues.push(format!("{at}.ref: expected a string")),
        }
        for key in item.keys().filter(|key| !matches!(key.as_str(), "kind" | "ref")) {
            issues.push(format!("{at}.{key}: not a field of an evidence item"));
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
            issues("claim", json!({ "runId": "", "stepId": ["x"] })),
            vec![
                "runId: must not be empty",
                "stepId: expected a string",
                "requestId: missing"
            ]
        );
    }

    #[test]
    fn a_missing_summary_or_output_is_left_to_the_engine() {
        assert!(issues("submit", json!({ "token": "t", "requestId": "q" })).is_empty());
        assert_eq!(
            issues(
                "submit",
                json!({ "token": "t", "requestId": "q", "summary": 3, "evidence": [{ "kind": "photo" }] })
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
            ("list_processes", json!({ "cursor": null }), true),
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
