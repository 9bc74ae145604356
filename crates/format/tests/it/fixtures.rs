//! The conformance fixtures publish, and the profile fixtures are refused with the
//! right issue when their profile is off.

use agentprocess_format::{Capabilities, Options, validate};

use crate::support::{fixtures, official_schema};

#[test]
fn all_twelve_fixtures_publish_with_their_folder_name() {
    for (name, bytes) in fixtures() {
        let process = validate(
            &bytes,
            &Options {
                capabilities: Capabilities::ALL,
                folder: Some(&name),
            },
        )
        .unwrap_or_else(|refusal| panic!("{name} refused: {refusal}"));
        assert_eq!(process.document().name, name);
        assert_eq!(process.content_hash().len(), 64);
        assert!(
            process
                .content_hash()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}

#[test]
fn the_ten_core_fixtures_publish_on_a_core_server_with_upload_and_send_event() {
    let core_tools = Capabilities {
        parallel: false,
        check: false,
        upload: true,
        send_event: true,
    };
    for (name, bytes) in fixtures() {
        let result = validate(
            &bytes,
            &Options {
                capabilities: core_tools,
                folder: Some(&name),
            },
        );
        match name.as_str() {
            "major-incident" | "vendor-check" => assert!(result.is_err(), "{name} needs a profile"),
            _ => assert!(result.is_ok(), "{name}: {:?}", result.err()),
        }
    }
}

fn issues_of(name: &str, capabilities: Capabilities) -> Vec<String> {
    let (_, bytes) = fixtures().into_iter().find(|(n, _)| n == name).expect("fixture");
    validate(
        &bytes,
        &Options {
            capabilities,
            folder: Some(name),
        },
    )
    .expect_err("refused")
    .issues
    .iter()
    .map(ToString::to_string)
    .collect()
}

#[test]
fn major_incident_is_refused_without_parallel_1() {
    let offered = Capabilities {
        parallel: false,
        ..Capabilities::ALL
    };
    assert_eq!(
        issues_of("major-incident", offered),
        ["steps[1] (respond).parallel: needs the parallel-1 profile, which this server does not offer"]
    );
}

#[test]
fn vendor_check_is_refused_without_check_1() {
    let offered = Capabilities {
        check: false,
        ..Capabilities::ALL
    };
    assert_eq!(
        issues_of("vendor-check", offered),
        [
            "steps[0] (check_vendor).check: needs the check-1 profile, which this server does not offer: it runs checks only with an evaluator configured"
        ]
    );
}

#[test]
fn optional_tools_are_named_when_missing() {
    assert_eq!(
        issues_of(
            "vendor-check",
            Capabilities {
                upload: false,
                ..Capabilities::ALL
            }
        ),
        ["steps[0] (check_vendor).evidence: file evidence needs the upload tool, which this server does not offer"]
    );
    assert_eq!(
        issues_of(
            "customer-offboarding",
            Capabilities {
                send_event: false,
                ..Capabilities::ALL
            }
        ),
        ["steps[4] (settlement_event).wait_for: needs the send_event tool, which this server does not offer"]
    );
}

#[test]
fn a_folder_name_must_match() {
    let (_, bytes) = fixtures().into_iter().next().expect("a fixture");
    let refusal = validate(
        &bytes,
        &Options {
            capabilities: Capabilities::ALL,
            folder: Some("other-name"),
        },
    )
    .expect_err("refused");
    assert_eq!(refusal.issues.len(), 1);
    assert_eq!(
        refusal.issues[0].to_string(),
        "name: \"blog-publication\" does not match the folder name \"other-name\""
    );
    assert_eq!(refusal.issues[0].position.map(|p| (p.line, p.column)), Some((2, 1)));
}

#[test]
fn parsed_frontmatter_of_every_fixture_meets_the_official_schema() {
    let validator = official_schema();
    for (name, bytes) in fixtures() {
        let process = validate(&bytes, &Options::default()).expect("publishes");
        let errors: Vec<String> = validator
            .iter_errors(process.frontmatter())
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    // The validator is real: a broken document fails it.
    let broken = serde_json::json!({ "name": "Bad Name", "steps": [] });
    assert!(!validator.is_valid(&broken));
}

#[test]
fn the_body_is_kept_byte_for_byte() {
    for (name, bytes) in fixtures() {
        let text = String::from_utf8(bytes.clone()).expect("UTF-8");
        let process = validate(&bytes, &Options::default()).expect("publishes");
        assert!(text.ends_with(process.body()), "{name}");
        let fence = text.len() - process.body().len();
        assert!(text[..fence].ends_with("\n---\n"), "{name}");
    }
}

#[test]
fn typed_documents_carry_the_defaults() {
    let (_, bytes) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "blog-publication")
        .expect("fixture");
    let process = validate(&bytes, &Options::default()).expect("publishes");
    let document = process.document();
    // `draft` names no next: it continues at the following step.
    assert_eq!(
        document.steps[0].next,
        Some(agentprocess_format::Next::Step("editor_review".into()))
    );
    assert_eq!(document.steps.last().map(|s| s.next.clone()), Some(None));
    assert_eq!(
        document.step("editor_review").and_then(|s| s.on_reject.as_deref()),
        Some("draft")
    );
}

#[test]
fn role_names_to_bind_at_import() {
    let roles = |name: &str| {
        let (_, bytes) = fixtures().into_iter().find(|(n, _)| n == name).expect("fixture");
        let process = validate(&bytes, &Options::default()).expect("publishes");
        process
            .document()
            .roles()
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        roles("contract-review"),
        ["legal-reviewer", "finance-reviewer", "authorized-signatory"]
    );
    assert_eq!(
        roles("customer-offboarding"),
        ["account-owner", "finance-collections", "data-steward"]
    );
    assert_eq!(roles("expense-reimbursement"), ["accounts-payable"]);
}

#[test]
fn branch_steps_know_their_parallel_step() {
    let (_, bytes) = fixtures()
        .into_iter()
        .find(|(n, _)| n == "major-incident")
        .expect("fixture");
    let process = validate(&bytes, &Options::default()).expect("publishes");
    let document = process.document();
    assert!(document.uses_parallel());
    assert_eq!(
        document.enclosing_parallel(),
        [None, None, Some(1), Some(1), Some(1), None, None]
    );
}
