//! Any bytes as a PROCESS.md: the reader and the validator return a process or every
//! issue, never panic, stay within their limits, and hash a valid process the same way
//! twice.
#![no_main]

use agentprocess_format::{Capabilities, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|source: &[u8]| {
    let options = Options {
        capabilities: Capabilities::ALL,
        folder: None,
    };
    let _ = agentprocess_format::read_parts(source);
    if let Ok(process) = agentprocess_format::validate(source, &options) {
        let again = agentprocess_format::validate(source, &options).expect("a valid process stays valid");
        assert_eq!(process.content_hash(), again.content_hash(), "one source, one hash");
    }
});
