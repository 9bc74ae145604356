//! Never a panic, never a hang: arbitrary bytes, mutated fixtures and token soup all
//! come back as a process or as issues.

use agentprocess_format::{Options, StepKind, validate};
use proptest::prelude::*;

use crate::support::fixtures;

/// Whatever the input, validation returns, and a refusal always says why.
fn holds(bytes: &[u8]) {
    match validate(bytes, &Options::default()) {
        Ok(process) => {
            assert_eq!(process.content_hash().len(), 64);
            assert!(crate::support::official_schema().is_valid(process.frontmatter()));
        }
        Err(refusal) => {
            assert!(!refusal.issues.is_empty());
            assert!(refusal.issues.iter().all(|issue| !issue.message.is_empty()));
        }
    }
}

/// Pieces of PROCESS.md syntax, so that random documents get past the YAML layer
/// (the kind keys are added from `StepKind::KEYS`).
const TOKENS: &[&str] = &[
    "---\n",
    "\n",
    "  ",
    "    ",
    "- ",
    ": ",
    ", ",
    "[",
    "]",
    "{",
    "}",
    "&a ",
    "*a",
    "!!str ",
    "'",
    "\"",
    "|\n",
    "#",
    "name",
    "description",
    "steps",
    "inputs",
    "requires",
    "systems",
    "id",
    "next",
    "join",
    "person",
    "on_reject",
    "on_timeout",
    "timeout",
    "due",
    "output",
    "evidence",
    "file",
    "check",
    "ask",
    "pass",
    "fail",
    "one_of",
    "levels",
    "advisory",
    "type",
    "items",
    "optional",
    "list",
    "person",
    "inputs.x",
    "steps.a.output.b",
    "a",
    "b",
    "x",
    "3d",
    "1.5",
    "0x1F",
    ".inf",
    "yes",
    "~",
    "é",
    "\r\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    let tokens: Vec<&str> = TOKENS.iter().copied().chain(StepKind::KEYS).collect();
    prop::collection::vec(prop::sample::select(tokens), 0..200).prop_map(|tokens| format!("---\n{}", tokens.concat()))
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Duplicate(usize, usize),
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    let one = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Replace(at, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), 1..64usize).prop_map(|(at, len)| Mutation::Duplicate(at, len)),
    ];
    prop::collection::vec(one, 1..8)
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        if bytes.is_empty() {
            break;
        }
        let len = bytes.len();
        match *mutation {
            Mutation::Replace(at, b) => bytes[at % len] = b,
            Mutation::Insert(at, b) => bytes.insert(at % (len + 1), b),
            Mutation::Delete(at) => {
                bytes.remove(at % len);
            }
            Mutation::Duplicate(at, n) => {
                let start = at % len;
                let piece: Vec<u8> = bytes[start..(start + n).min(len)].to_vec();
                bytes.splice(start..start, piece);
            }
        }
    }
    bytes
}

fn campaign_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(512)
}

proptest! {
    // 512 cases each in CI; `PROPTEST_CASES=200000` for a longer campaign.
    #![proptest_config(ProptestConfig { cases: campaign_cases(), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        holds(&bytes);
        let mut fenced = b"---\n".to_vec();
        fenced.extend_from_slice(&bytes);
        fenced.extend_from_slice(b"\n---\n");
        holds(&fenced);
    }

    #[test]
    fn token_soup_never_panics(text in token_soup()) {
        holds(text.as_bytes());
        holds(format!("{text}\n---\n").as_bytes());
    }

    #[test]
    fn mutated_fixtures_never_panic(which in 0..12usize, changes in mutations()) {
        let (_, bytes) = fixtures().swap_remove(which);
        holds(&mutate(bytes, &changes));
    }
}

#[test]
fn a_billion_laughs_is_refused_quickly() {
    let mut text =
        String::from("---\nname: lol\ndescription: x\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..12 {
        let prev = level - 1;
        let refs = vec![format!("*a{prev}"); 9].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    text.push_str("steps:\n  - id: done\n    finish: ok\n---\n");
    // Expanded, this would be 9^12 nodes; nextest's timeout catches a hang.
    let refusal = validate(text.as_bytes(), &Options::default()).expect_err("refused");
    assert_eq!(refusal.issues.len(), 1);
    assert!(
        refusal.issues[0].message.contains("once aliases are expanded"),
        "{refusal}"
    );
}

#[test]
fn one_wide_anchor_aliased_many_times_is_refused() {
    let items = vec!["x"; 3000].join(", ");
    let aliases = vec!["*w"; 3000].join(", ");
    let text = format!(
        "---\nname: wide\ndescription: x\nw: &w [{items}]\nall: [{aliases}]\nsteps:\n  - id: done\n    finish: ok\n---\n"
    );
    let refusal = validate(text.as_bytes(), &Options::default()).expect_err("refused");
    assert!(
        refusal
            .issues
            .iter()
            .any(|issue| issue.message.contains("once aliases are expanded")),
        "{refusal}"
    );
}
