//! Any bytes as the JSON a caller sends for a run's inputs or a step's output: the
//! engine's field check (spec §2.3) answers with every issue or none, never panics,
//! and says the same twice.
#![no_main]

use std::sync::LazyLock;

use agentprocess_engine::{PersonFormat, check_fields};
use agentprocess_format::{Capabilities, Fields, Options};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// A process of this project's own whose inputs declare every field type, optional
/// fields, a closed set of values, a list and an object.
const DECLARED: &str = "---
name: every-field
description: Inputs of every type, for the fuzzer.
inputs:
  title: string
  amount: number
  urgent: boolean
  due: date
  at: datetime
  owner: person
  tags: list
  details: object
  size:
    type: string
    one_of: [small, large]
  note:
    type: string
    optional: true
steps:
  - id: done
    finish: done
---

Every field.
";

static INPUTS: LazyLock<Fields> = LazyLock::new(|| {
    let options = Options {
        capabilities: Capabilities::ALL,
        folder: None,
    };
    let process = agentprocess_format::validate(DECLARED.as_bytes(), &options).expect("the declaration is valid");
    process.document().inputs.clone()
});

fuzz_target!(|sent: &[u8]| {
    let Ok(sent) = serde_json::from_slice::<Map<String, Value>>(sent) else {
        return;
    };
    let issues = check_fields(&INPUTS, &sent, "inputs", PersonFormat::Email);
    assert_eq!(issues, check_fields(&INPUTS, &sent, "inputs", PersonFormat::Email));
});
