//! Why the frontmatter is read from `saphyr-parser` events rather than through
//! `serde_yaml_ng` (docs/design/format.md, "YAML"): where the YAML 1.2 core schema and
//! `serde_yaml_ng` 0.10 part ways, measured here rather than assumed. If a new
//! version of the crate closes a gap, the matching assertion fails and the choice is
//! worth revisiting.

use agentprocess_format::read_frontmatter;
use serde_json::{Value, json};

use crate::support::fixtures;

fn theirs(yaml: &str) -> Result<Value, String> {
    serde_yaml_ng::from_str::<Value>(yaml).map_err(|error| error.to_string())
}

fn ours(yaml: &str) -> Result<Value, Vec<String>> {
    read_frontmatter(format!("---\n{yaml}---\n").as_bytes())
        .map_err(|refusal| refusal.issues.iter().map(ToString::to_string).collect())
}

#[test]
fn on_the_fixtures_both_read_the_same_values() {
    for (name, bytes) in fixtures() {
        let text = String::from_utf8(bytes).expect("UTF-8");
        let yaml = text
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map(|(yaml, _)| format!("{yaml}\n"))
            .expect("fenced");
        assert_eq!(
            ours(&yaml).expect("ours reads it"),
            theirs(&yaml).expect("theirs reads it"),
            "{name}"
        );
    }
}

#[test]
fn yaml_1_1_booleans_agree() {
    let yaml = "a: [yes, no, on, off, y, n]\n";
    assert_eq!(ours(yaml), Ok(json!({ "a": ["yes", "no", "on", "off", "y", "n"] })));
    assert_eq!(theirs(yaml), Ok(json!({ "a": ["yes", "no", "on", "off", "y", "n"] })));
}

#[test]
fn leading_zeros_are_integers_under_the_core_schema() {
    let yaml = "a: [012, 00, -012]\n";
    assert_eq!(ours(yaml), Ok(json!({ "a": [12, 0, -12] })));
    assert_eq!(theirs(yaml), Ok(json!({ "a": ["012", "00", "-012"] })));
}

#[test]
fn binary_and_signed_radix_forms_are_strings_under_the_core_schema() {
    let yaml = "a: [0b101, +0x1F, +0o12]\n";
    assert_eq!(ours(yaml), Ok(json!({ "a": ["0b101", "+0x1F", "+0o12"] })));
    assert_eq!(theirs(yaml), Ok(json!({ "a": [5, 31, 10] })));
}

#[test]
fn infinity_is_refused_not_silently_null() {
    let yaml = "a: .inf\n";
    assert_eq!(ours(yaml), Err(vec!["a: .inf is not a finite number".to_owned()]));
    assert_eq!(theirs(yaml), Ok(json!({ "a": null })));
}

#[test]
fn duplicate_keys_are_refused_not_last_one_wins() {
    let yaml = "a: { b: 1, b: 2 }\n";
    assert_eq!(ours(yaml), Err(vec!["a.b: duplicate key \"b\"".to_owned()]));
    assert_eq!(theirs(yaml), Ok(json!({ "a": { "b": 2 } })));
}
