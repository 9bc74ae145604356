//! A tool's answer as MCP carries it: `{ ok: true, data }` or
//! `{ ok: false, error: { code, message, issues? } }`, printed once as JSON text.

use agentprocess_engine::ToolError;
use serde::Serialize;
use serde_json::value::RawValue;

/// The envelope of a result, as JSON text.
pub fn envelope(result: Result<Box<RawValue>, ToolError>) -> Box<RawValue> {
    let printed = match &result {
        Ok(data) => serde_json::value::to_raw_value(&Answered { ok: true, data }),
        Err(error) => serde_json::value::to_raw_value(&Refused {
            ok: false,
            error: Refusal {
                code: error.code.as_str(),
                message: &error.message,
                issues: &error.issues,
            },
        }),
    };
    // Strings, booleans and JSON text already printed: nothing here can fail to print.
    printed.expect("an envelope prints")
}

#[derive(Serialize)]
struct Answered<'a> {
    ok: bool,
    data: &'a RawValue,
}

#[derive(Serialize)]
struct Refused<'a> {
    ok: bool,
    error: Refusal<'a>,
}

#[derive(Serialize)]
struct Refusal<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    issues: &'a [String],
}

#[cfg(test)]
mod tests {
    use agentprocess_engine::Code;

    use super::*;

    #[test]
    fn data_is_written_as_it_was_printed_and_a_refusal_names_its_issues_only_when_there_are_some() {
        let data = RawValue::from_string(r#"{"amount":1.20E3,"name":"Ünïcode \"q\""}"#.to_owned()).expect("json");
        assert_eq!(
            envelope(Ok(data)).get(),
            r#"{"ok":true,"data":{"amount":1.20E3,"name":"Ünïcode \"q\""}}"#
        );
        let refused = ToolError::new(Code::Invalid, "not valid", vec!["a: required".to_owned()]);
        assert_eq!(
            envelope(Err(refused)).get(),
            r#"{"ok":false,"error":{"code":"invalid","message":"not valid","issues":["a: required"]}}"#
        );
        let refused = ToolError::new(Code::NotFound, "no such run", Vec::new());
        assert_eq!(
            envelope(Err(refused)).get(),
            r#"{"ok":false,"error":{"code":"not_found","message":"no such run"}}"#
        );
    }
}
