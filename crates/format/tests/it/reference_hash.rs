//! The content hash against an independent implementation.
//!
//! `tests/reference/hash.mjs` computes the content hash with other people's code only:
//! the npm packages `yaml` (YAML 1.2 core schema) and `canonicalize` (RFC 8785), and
//! node:crypto. This test runs it over every conformance fixture and a few documents
//! written to stress the hash, and asserts that our `content_hash()` agrees on each.
//! When a hash differs it prints both canonical JSON texts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use agentprocess_format::{Options, ValidatedProcess, validate};

use crate::support::{TempDir, reference_hash_command};

/// The crate folder, `crates/format`.
fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `PROCESS.md` under `shared/agentprocess/conformance/fixtures`, sorted.
fn fixture_files() -> Vec<PathBuf> {
    let fixtures = manifest_dir()
        .join("../../../shared/agentprocess/conformance/fixtures")
        .canonicalize()
        .unwrap_or_else(|error| {
            panic!(
                "cannot find the conformance fixtures at {}/../../../shared/agentprocess/conformance/fixtures: {error}",
                manifest_dir().display()
            )
        });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", fixtures.display()))
        .map(|entry| entry.expect("a directory entry").path().join("PROCESS.md"))
        .filter(|file| file.is_file())
        .collect();
    files.sort();
    assert!(
        files.len() >= 12,
        "expected at least the 12 conformance fixtures in {}, found {}",
        fixtures.display(),
        files.len()
    );
    files
}

/// CRLF line ends everywhere, non-ASCII text, strings that look like numbers, numbers
/// in every core-schema form, keys whose RFC 8785 order (UTF-16) differs from code
/// point order, a literal and a folded block scalar, a fence-like line in the body,
/// and a body with trailing spaces and no final newline.
fn crlf_unicode_numbers() -> Vec<u8> {
    let lines = [
        "---",
        "# A stress test for the content hash: CRLF line ends, non-ASCII text, numbers.",
        "name: crlf-unicode-numbers",
        r#"description: "Zürich — 東京 😀: CRLF, \"quotes\", tab\there, \u0001 \u001f \u007f \u2028 \\ and a slash /.""#,
        "inputs:",
        r#"  code: { type: string, one_of: ['012', "0012", '1.50', "1e3", '0x1F', "true", 'null', '-0'] }"#,
        "  amount: { type: number, one_of: [1.50, 0.1, 100] }",
        "  precise: { type: number, one_of: [012, -0.0, 1E21, 1e-7, 0.000001, 5e-324, 9007199254740991, 123456789012345680000, 0x1F, 0o17, +5, .5, 5., -2.50e+3] }",
        "  city: { type: string, description: Zürich — 東京 😀, optional: true }",
        // U+1F600 sorts before U+FF76 in UTF-16 code units, after it in code points.
        "  😀: string",
        "  ｶ: string",
        "  é: string",
        "  Zürich: string",
        "  zebra: string",
        r#"  "\x7f": string"#,
        "steps:",
        "  - id: greet",
        "    agent: |",
        "      Greet the team in Zürich and 東京 😀.",
        "      Keep the code '012' as text.   ",
        "    output:",
        "      note:",
        "        type: string",
        "        description: >",
        "          Folded text across",
        "          two lines.",
        "    next: done",
        "  - id: done",
        "    finish: done",
        "---",
        "",
        "# Zürich — 東京 😀",
        "",
        "Trailing spaces here   ",
        "---",
        "A fence-like line above stays in the body.",
        "Last line: trailing spaces and no final newline   ",
    ];
    lines.join("\r\n").into_bytes()
}

/// A `check` with yes/no thresholds `pass: 0.9`, `fail: 0.5`, a choice and a rubric;
/// core-schema strings that other schemas read as booleans, dates or numbers; anchors
/// and aliases.
const CHECK_THRESHOLDS: &str = "---
name: check-thresholds
description: &about A model checks the draft; the thresholds pass 0.9 and fail 0.5 hash as written.
inputs:
  answer: { type: string, one_of: [yes, no, on, off, y, n, 2026-10-06, 12:30, 1_000, 0b101, ~x, .inf-ish, 1e, 0x, 0o8] }
  when: { type: date, one_of: [2026-10-06] }
  flag: { type: boolean, one_of: [true, False] }
  note: { type: string, optional: true, description: *about }
steps:
  - id: draft
    agent: *about
    output:
      verdict: { type: string, one_of: [ok, \"no\"] }
      score: { type: number, one_of: [0.9, 0.5, 1e0] }
    check:
      - ask: The draft answers the question.
        pass: 0.9
        fail: 0.5
      - ask: How clear is it?
        one_of:
          clear: Clear.
          muddled: Muddled.
        pass: [clear]
        confidence: 0.85
      - ask: How complete is it?
        levels: [None., Some., All.]
        pass: 1
    next: done
  - id: done
    finish: done
---
# Check thresholds

A body with a final newline.
";

/// Runs `node tests/reference/hash.mjs ARGS...`; fails the test if node or the
/// packages are missing.
fn run_reference(args: &[&Path], canonical: bool) -> Output {
    let mut command = reference_hash_command();
    if canonical {
        command.arg("--canonical");
    }
    command.args(args);
    command
        .output()
        .unwrap_or_else(|error| panic!("cannot run node (Node.js 20 or later is needed for this test): {error}"))
}

/// Our canonical JSON of the frontmatter, for a mismatch report.
fn our_canonical(process: &ValidatedProcess) -> String {
    serde_json_canonicalizer::to_string(process.frontmatter())
        .unwrap_or_else(|error| format!("<cannot canonicalize: {error}>"))
}

#[test]
fn content_hash_matches_an_independent_rfc8785_implementation() {
    let temp = TempDir::new("reference-hash");
    let mut files = fixture_files();
    for (name, bytes) in [
        ("crlf-unicode-numbers.md", crlf_unicode_numbers()),
        ("check-thresholds.md", CHECK_THRESHOLDS.as_bytes().to_vec()),
    ] {
        let file = temp.0.join(name);
        std::fs::write(&file, bytes).unwrap_or_else(|error| panic!("cannot write {}: {error}", file.display()));
        files.push(file);
    }

    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let output = run_reference(&paths, false);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "hash.mjs failed ({}):\nstderr:\n{}\nstdout:\n{stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: HashMap<&str, &str> = stdout
        .lines()
        .map(|line| {
            let (hash, path) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("hash.mjs printed {line:?}, not `<hash> <path>`"));
            assert!(
                hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "hash.mjs printed {hash:?}, not a lowercase SHA-256 hex digest"
            );
            (path, hash)
        })
        .collect();

    let mut mismatches = Vec::new();
    for file in &files {
        let shown = file.display().to_string();
        let bytes = std::fs::read(file).unwrap_or_else(|error| panic!("cannot read {shown}: {error}"));
        let process = validate(&bytes, &Options::default())
            .unwrap_or_else(|refusal| panic!("{shown} should validate: {refusal}"));
        let Some(&their_hash) = theirs.get(shown.as_str()) else {
            panic!("hash.mjs printed no hash for {shown}:\n{stdout}");
        };
        if process.content_hash() != their_hash {
            let canonical = run_reference(&[file.as_path()], true);
            mismatches.push(format!(
                "{shown}\n  ours:   {}\n  theirs: {their_hash}\n  our canonical JSON:   {}\n  their canonical JSON: {}",
                process.content_hash(),
                our_canonical(&process),
                String::from_utf8_lossy(&canonical.stdout)
                    .trim_end()
                    .split_once('\t')
                    .map_or("<none>", |(_, json)| json),
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} content hashes differ from the reference implementation:\n{}",
        mismatches.len(),
        files.len(),
        mismatches.join("\n")
    );
}
