//! JSON whose numbers come back exactly as they were written.
//!
//! serde_json with `arbitrary_precision` keeps a number's digits, but its parser
//! respells the exponent (`1E5` and `1e5` become `1e+5`). [`parse`] keeps the text
//! byte for byte: it parses with serde_json, then puts back the original spelling of
//! each number serde_json changed, found by a second pass over the text. Use it (or
//! the `deserialize_*` functions, in `#[serde(deserialize_with)]`) wherever JSON that
//! a caller sent is read: from the wire and from storage.

use serde::Deserialize as _;
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// Parses `text` into a value whose numbers keep their original text.
pub fn parse(text: &str) -> serde_json::Result<Value> {
    let mut value: Value = serde_json::from_str(text)?;
    for (path, number) in respelled_numbers(text) {
        restore(&mut value, &path, number);
    }
    Ok(value)
}

/// [`parse`] for a value that must be an object.
pub fn parse_object(text: &str) -> serde_json::Result<Map<String, Value>> {
    match parse(text)? {
        Value::Object(object) => Ok(object),
        _ => Err(serde::de::Error::custom("expected a JSON object")),
    }
}

/// `value` as JSON, numbers kept as they are held. Use it instead of
/// `serde_json::to_value` (and of `json!` around a value that holds a caller's numbers):
/// those rebuild each number from its text and respell its exponent.
pub fn to_value<T: serde::Serialize>(value: &T) -> serde_json::Result<Value> {
    parse(&serde_json::to_string(value)?)
}

/// `#[serde(deserialize_with = "exact::deserialize_object")]` for a `Map` field read
/// from JSON text by serde_json.
pub fn deserialize_object<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    parse_object(raw.get()).map_err(serde::de::Error::custom)
}

/// [`deserialize_object`] for an `Option<Map>` field (`null` is `None`).
pub fn deserialize_optional_object<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    let raw = Option::<Box<RawValue>>::deserialize(deserializer)?;
    match raw {
        Some(raw) if raw.get() != "null" => parse_object(raw.get()).map(Some).map_err(serde::de::Error::custom),
        _ => Ok(None),
    }
}

/// One step of the way from the top of a document to a value in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Where a container is while the text is scanned.
enum Frame {
    Object { key: Option<String>, expecting_key: bool },
    Array(usize),
}

/// The place and original text of every number serde_json spells differently: those
/// with an exponent written `E`, or without a sign. `text` is known to be valid JSON.
fn respelled_numbers(text: &str) -> Vec<(Vec<Step>, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    if !any_respelled(text) {
        return found;
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => stack.push(Frame::Object {
                key: None,
                expecting_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expecting_key, .. }) => *expecting_key = true,
                Some(Frame::Array(index)) => *index += 1,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object { expecting_key, .. }) = stack.last_mut() {
                    *expecting_key = false;
                }
            }
            b'"' => {
                let end = string_end(bytes, at);
                if let Some(Frame::Object {
                    key,
                    expecting_key: true,
                }) = stack.last_mut()
                {
                    *key = serde_json::from_str::<String>(&text[at..end]).ok();
                }
                at = end;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(bytes, at);
                let number = &text[at..end];
                if respelled(number) {
                    found.push((path(&stack), number));
                }
                at = end;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    found
}

/// Whether valid JSON `text` holds a number serde_json spells differently. Most
/// text holds none, and this pass allocates nothing, so the pass that tracks where
/// each value is (and copies every key) runs only for text that needs it.
fn any_respelled(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => at = string_end(bytes, at),
            b'-' | b'0'..=b'9' => {
                let end = number_end(bytes, at);
                if respelled(&text[at..end]) {
                    return true;
                }
                at = end;
            }
            _ => at += 1,
        }
    }
    false
}

/// The index just past the number that starts at `start`.
fn number_end(bytes: &[u8], start: usize) -> usize {
    start
        + bytes[start..]
            .iter()
            .take_while(|byte| matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count()
}

/// The index just past the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

fn respelled(number: &str) -> bool {
    match number.find(['e', 'E']) {
        Some(at) => number.as_bytes()[at] == b'E' || !matches!(number.as_bytes().get(at + 1), Some(b'+' | b'-')),
        None => false,
    }
}

fn path(stack: &[Frame]) -> Vec<Step> {
    stack
        .iter()
        .filter_map(|frame| match frame {
            Frame::Object { key, .. } => key.clone().map(Step::Key),
            Frame::Array(index) => Some(Step::Index(*index)),
        })
        .collect()
}

/// Puts `original` back at `path` if the number there is the one it was parsed into.
/// (With a repeated key the later member wins, as in serde_json: an earlier member's
/// number then finds another value there and is left alone.)
fn restore(value: &mut Value, path: &[Step], original: &str) {
    let mut here = value;
    for step in path {
        let next = match (step, here) {
            (Step::Key(key), Value::Object(object)) => object.get_mut(key),
            (Step::Index(index), Value::Array(items)) => items.get_mut(*index),
            _ => None,
        };
        match next {
            Some(next) => here = next,
            None => return,
        }
    }
    let parsed = serde_json::from_str::<Number>(original).ok();
    if let (Value::Number(number), Some(parsed)) = (here, parsed)
        && number.as_str() == parsed.as_str()
    {
        // The only constructor of a number with given text; serde_json's own tests
        // use it, and `a_number_keeps_its_exponent_spelling` pins what it does.
        *number = Number::from_string_unchecked(original.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_keeps_its_exponent_spelling() {
        let text = r#"{"a":1E5,"b":[2.50E-3,1e400,{"c d\"":-1e+2}],"e":"1E5","f":1080.50}"#;
        let value = parse(text).expect("JSON");
        assert_eq!(value.to_string(), text);
        assert_eq!(value["a"].as_f64(), Some(100_000.0));
        assert_eq!(value["b"][0].as_f64(), Some(0.0025));
    }

    #[test]
    fn a_repeated_key_keeps_the_later_member_as_serde_json_does() {
        assert_eq!(parse(r#"{"a":1E5,"a":2E5}"#).expect("JSON").to_string(), r#"{"a":2E5}"#);
        assert_eq!(parse(r#"{"a":1E5,"a":"x"}"#).expect("JSON").to_string(), r#"{"a":"x"}"#);
        assert_eq!(parse(r#"[1E1, 2e2 ,3]"#).expect("JSON").to_string(), "[1E1,2e2,3]");
    }

    #[test]
    fn fields_read_from_storage_keep_their_numbers() {
        #[derive(serde::Deserialize)]
        struct Row {
            #[serde(deserialize_with = "deserialize_object")]
            inputs: Map<String, Value>,
            #[serde(default, deserialize_with = "deserialize_optional_object")]
            output: Option<Map<String, Value>>,
        }
        let row: Row = serde_json::from_str(r#"{"inputs":{"n":1E5},"output":null}"#).expect("JSON");
        assert_eq!(Value::Object(row.inputs).to_string(), r#"{"n":1E5}"#);
        assert!(row.output.is_none());
        let row: Row = serde_json::from_str(r#"{"inputs":{},"output":{"m":[5e1]}}"#).expect("JSON");
        assert_eq!(
            row.output.map(|output| Value::Object(output).to_string()),
            Some(r#"{"m":[5e1]}"#.to_owned())
        );
    }

    #[test]
    fn to_value_keeps_what_serde_json_to_value_respells() {
        let value = parse(r#"{"n":[1E5]}"#).expect("JSON");
        assert_eq!(
            serde_json::to_value(&value).expect("value").to_string(),
            r#"{"n":[1e+5]}"#
        );
        assert_eq!(to_value(&value).expect("value").to_string(), r#"{"n":[1E5]}"#);
    }

    #[test]
    fn only_numbers_outside_strings_send_text_to_the_keyed_pass() {
        assert!(!any_respelled(
            r#"{"requestId":"run-1E5-3e4","n":[1e+5,2.5e-3,-7,1080.50]}"#
        ));
        assert!(any_respelled(r#"{"id":"x","n":1E5}"#));
        assert!(any_respelled(r#"[0,"\"",2e5]"#));
        assert!(!any_respelled(r#"["\\",1e-5]"#));
    }

    #[test]
    fn invalid_json_is_still_refused() {
        assert!(parse("{\"a\":1E}").is_err());
        assert!(parse("[1e5").is_err());
    }
}
