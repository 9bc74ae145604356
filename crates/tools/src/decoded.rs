//! Every tool's arguments as a typed struct, decoded once [`crate::arguments::check`]
//! has named every issue of the call. The structs follow [`crate::arguments::ARGUMENTS`]:
//! their tests hold each struct to the names it declares, and hold that whatever the
//! checker lets through, with or without the optional arguments, decodes. Decoding
//! reads the arguments' JSON text, so the numbers of inputs, outputs and event data
//! keep their spelling.

use agentprocess_engine::{Decision, EvidenceItem, Mode, RunState, Submission};
use agentprocess_format::{EvidenceKind, exact};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// `arguments` as `T`. Only a call the checker let through is decoded, so a failure
/// here is a checker that allows what the structs do not: refused, never a panic.
pub(crate) fn decode<T: DeserializeOwned>(arguments: &Map<String, Value>) -> Result<T, String> {
    let text = serde_json::to_string(arguments).map_err(|error| error.to_string())?;
    serde_json::from_str(&text).map_err(|error| error.to_string())
}

/// `start_run`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartRun {
    pub(crate) process: String,
    #[serde(default, deserialize_with = "whole")]
    pub(crate) version: Option<u32>,
    #[serde(default, deserialize_with = "exact::deserialize_optional_object")]
    pub(crate) inputs: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) mode: Option<Mode>,
    pub(crate) request_id: String,
}

/// `list_processes`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListProcesses {
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

/// `get_run`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetRun {
    pub(crate) run_id: String,
}

/// `get_work`.
#[derive(Debug, Deserialize)]
pub(crate) struct GetWork {
    #[serde(default, deserialize_with = "whole")]
    pub(crate) limit: Option<u32>,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
    #[serde(default)]
    pub(crate) process: Option<String>,
}

/// `claim`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Claim {
    pub(crate) run_id: String,
    pub(crate) step_id: String,
    pub(crate) request_id: String,
}

/// `renew`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Renew {
    pub(crate) token: String,
    #[serde(default)]
    pub(crate) progress: Option<String>,
    pub(crate) request_id: String,
}

/// `upload`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Upload {
    pub(crate) file_name: String,
    pub(crate) content_type: String,
    pub(crate) content_base64: String,
    pub(crate) request_id: String,
}

/// What `submit` and `decide … completed` carry.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Work {
    #[serde(default, deserialize_with = "exact::deserialize_optional_object")]
    pub(crate) output: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) evidence: Option<Vec<Evidence>>,
    #[serde(default)]
    pub(crate) summary: Option<String>,
    #[serde(default)]
    pub(crate) next: Option<String>,
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

impl Work {
    /// Whether any of `output`, `evidence`, `summary` was sent.
    pub(crate) fn sent(&self) -> bool {
        self.output.is_some() || self.evidence.is_some() || self.summary.is_some()
    }

    /// The engine's submission.
    pub(crate) fn into_submission(self) -> Submission {
        Submission {
            output: self.output.unwrap_or_default(),
            evidence: self
                .evidence
                .unwrap_or_default()
                .into_iter()
                .map(|item| EvidenceItem {
                    kind: item.kind,
                    reference: item.reference,
                    sha256: None,
                })
                .collect(),
            summary: self.summary,
            next: self.next,
            reason: self.reason,
        }
    }
}

/// An evidence item of a call: `{ kind, ref }`.
#[derive(Debug, Deserialize)]
pub(crate) struct Evidence {
    pub(crate) kind: EvidenceKind,
    #[serde(rename = "ref")]
    pub(crate) reference: String,
}

/// `submit`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Submit {
    pub(crate) token: String,
    pub(crate) request_id: String,
}

/// `escalate`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Escalate {
    pub(crate) token: String,
    pub(crate) note: String,
    pub(crate) request_id: String,
}

/// `decide`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Decide {
    pub(crate) run_id: String,
    pub(crate) work_item_id: String,
    pub(crate) snapshot: String,
    pub(crate) decision: Decision,
    #[serde(default)]
    pub(crate) note: Option<String>,
    pub(crate) request_id: String,
}

/// `cancel`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Cancel {
    pub(crate) run_id: String,
    pub(crate) reason: String,
    pub(crate) request_id: String,
}

/// `send_event`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendEvent {
    pub(crate) run_id: String,
    pub(crate) name: String,
    #[serde(default, deserialize_with = "exact::deserialize_optional_object")]
    pub(crate) data: Option<Map<String, Value>>,
    pub(crate) request_id: String,
}

/// `list_runs`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListRuns {
    #[serde(default)]
    pub(crate) process: Option<String>,
    #[serde(default)]
    pub(crate) state: Option<RunState>,
    #[serde(default, deserialize_with = "exact::deserialize_optional_object")]
    pub(crate) inputs: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "whole")]
    pub(crate) limit: Option<u32>,
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

/// An integer as JSON Schema reads one: any whole number (`2`, `2.0`, `2e0`).
fn whole<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let value = number.as_u64().or_else(|| {
        number
            .as_f64()
            .filter(|float| float.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(float))
            // In range and whole, so exact.
            .map(|float| float as u64)
    });
    value
        .and_then(|value| u32::try_from(value).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format!("{number}: not a whole number in range")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arguments::{ARGUMENTS, Kind};
    use agentprocess_service::Tool;
    use serde::de::{self, Visitor};

    /// The names a struct reads, as serde gives them to `deserialize_struct`.
    struct FieldNames(Vec<&'static str>);

    impl<'de> de::Deserializer<'de> for &mut FieldNames {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.extend_from_slice(fields);
            Err(de::Error::custom("only the names were wanted"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }

    fn names<T: DeserializeOwned>() -> Vec<&'static str> {
        let mut names = FieldNames(Vec::new());
        let _ = T::deserialize(&mut names);
        names.0
    }

    /// The names each tool's typed struct (or structs) reads.
    fn decoded_names(tool: Tool) -> Vec<&'static str> {
        match tool {
            Tool::Describe => Vec::new(),
            Tool::ListProcesses => names::<ListProcesses>(),
            Tool::StartRun => names::<StartRun>(),
            Tool::GetRun => names::<GetRun>(),
            Tool::GetWork => names::<GetWork>(),
            Tool::Claim => names::<Claim>(),
            Tool::Renew => names::<Renew>(),
            Tool::Upload => names::<Upload>(),
            Tool::Submit => [names::<Submit>(), names::<Work>()].concat(),
            Tool::Escalate => names::<Escalate>(),
            Tool::Decide => [names::<Decide>(), names::<Work>()].concat(),
            Tool::Cancel => names::<Cancel>(),
            Tool::SendEvent => names::<SendEvent>(),
            Tool::ListRuns => names::<ListRuns>(),
        }
    }

    /// A value the checker lets through for `kind`.
    fn allowed(kind: Kind) -> Value {
        match kind {
            Kind::Text { .. } => Value::from("x"),
            Kind::Integer { max, .. } => Value::from(max.min(7)),
            Kind::Object => Value::Object(Map::new()),
            Kind::OneOf(values) => Value::from(values[0]),
            Kind::Evidence => serde_json::json!([{ "kind": "link", "ref": "x" }]),
        }
    }

    fn decodes(tool: Tool, arguments: &Map<String, Value>) -> Result<(), String> {
        match tool {
            Tool::Describe => Ok(()),
            Tool::ListProcesses => decode::<ListProcesses>(arguments).map(drop),
            Tool::StartRun => decode::<StartRun>(arguments).map(drop),
            Tool::GetRun => decode::<GetRun>(arguments).map(drop),
            Tool::GetWork => decode::<GetWork>(arguments).map(drop),
            Tool::Claim => decode::<Claim>(arguments).map(drop),
            Tool::Renew => decode::<Renew>(arguments).map(drop),
            Tool::Upload => decode::<Upload>(arguments).map(drop),
            Tool::Submit => decode::<Submit>(arguments).and(decode::<Work>(arguments)).map(drop),
            Tool::Escalate => decode::<Escalate>(arguments).map(drop),
            Tool::Decide => decode::<Decide>(arguments).and(decode::<Work>(arguments)).map(drop),
            Tool::Cancel => decode::<Cancel>(arguments).map(drop),
            Tool::SendEvent => decode::<SendEvent>(arguments).map(drop),
            Tool::ListRuns => decode::<ListRuns>(arguments).map(drop),
        }
    }

    #[test]
    fn each_typed_struct_reads_exactly_the_declared_arguments() {
        for spec in ARGUMENTS {
            let mut declared: Vec<&str> = spec.arguments.iter().map(|argument| argument.name).collect();
            let mut decoded = decoded_names(spec.tool);
            declared.sort_unstable();
            decoded.sort_unstable();
            assert_eq!(decoded, declared, "{}", spec.tool.name());
        }
    }

    #[test]
    fn what_the_checker_allows_decodes_with_or_without_the_optional_arguments() {
        for spec in ARGUMENTS {
            let value = |argument: &crate::arguments::Argument| (argument.name.to_owned(), allowed(argument.kind));
            let all: Map<String, Value> = spec.arguments.iter().map(value).collect();
            let required: Map<String, Value> = spec
                .arguments
                .iter()
                .filter(|argument| argument.required)
                .map(value)
                .collect();
            for arguments in [all, required] {
                decodes(spec.tool, &arguments).unwrap_or_else(|error| panic!("{}: {error}", spec.tool.name()));
            }
        }
    }

    fn arguments(text: &str) -> Map<String, Value> {
        exact::parse_object(text).expect("an object")
    }

    #[test]
    fn a_whole_number_written_as_a_float_is_an_integer() {
        for text in [r#"{"limit": 5}"#, r#"{"limit": 5.0}"#, r#"{"limit": 5e0}"#] {
            let decoded: GetWork = decode(&arguments(text)).expect(text);
            assert_eq!(decoded.limit, Some(5), "{text}");
        }
        let fractional = decode::<GetWork>(&arguments(r#"{"limit": 5.5}"#));
        assert!(fractional.is_err());
    }

    #[test]
    fn numbers_in_objects_keep_their_spelling() {
        let decoded: SendEvent = decode(&arguments(
            r#"{"runId": "r", "name": "paid", "data": {"amount": 1E5}, "requestId": "q"}"#,
        ))
        .expect("decoded");
        let data = decoded.data.expect("data");
        assert_eq!(serde_json::to_string(&data["amount"]).expect("JSON"), "1E5");
    }

    #[test]
    fn work_that_was_not_sent_is_told_apart_from_empty_work() {
        let none: Work = decode(&arguments(r#"{"decision": "approved"}"#)).expect("decoded");
        assert!(!none.sent());
        let some: Work = decode(&arguments(r#"{"output": {}}"#)).expect("decoded");
        assert!(some.sent());
    }
}
