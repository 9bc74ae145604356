//! One refusal per publication rule, asserting the exact issue, and one document that
//! breaks many rules at once and gets all of them.

use crate::support::{doc, publish, refuse, with_steps};

const END: &str = "  - id: done\n    finish: ok\n";

/// The steps given, then a finish.
fn steps(body: &str) -> String {
    with_steps(&format!("{body}{END}"))
}

#[track_caller]
fn refused(source: &str, expected: &[&str]) {
    assert_eq!(refuse(source), expected, "\n{source}");
}

#[test]
fn a_minimal_process_publishes() {
    let process = publish(&steps("  - id: work\n    agent: Do it.\n")).expect("publishes");
    assert_eq!(process.document().steps.len(), 2);
}

// ---- the file ----

#[test]
fn the_file_needs_frontmatter_and_utf8() {
    refused(
        "# Just a body\n",
        &["no frontmatter: the file must start with a line `---`"],
    );
    refused(
        "---\nname: a\n",
        &["frontmatter is not closed: no line `---` after the first"],
    );
    refused("---\n---\nbody\n", &["the frontmatter is empty"]);
    refused(
        "\u{feff}---\nname: a\n---\n",
        &[
            "the file starts with a byte order mark (U+FEFF); save it as UTF-8 without one so that its first line is `---`",
        ],
    );
    let not_utf8 = agentprocess_format::validate(b"---\nname: \xff\n---\n", &Default::default()).expect_err("refused");
    assert_eq!(
        not_utf8.issues[0].to_string(),
        "the file is not UTF-8 (invalid byte at offset 10)"
    );
    let huge = format!(
        "---\ndescription: {}\n---\n",
        "x".repeat(agentprocess_format::MAX_DOCUMENT_BYTES)
    );
    assert_eq!(refuse(&huge).len(), 1);
    assert!(refuse(&huge)[0].starts_with("the file is 1048"), "{:?}", refuse(&huge));
}

#[test]
fn the_frontmatter_is_a_mapping() {
    refused(&doc("- a\n- b\n"), &["expected mapping, found list"]);
}

// ---- YAML ----

#[test]
fn yaml_1_1_words_stay_strings() {
    // Under YAML 1.1 `no` would be false and the one_of would mix types.
    let process = publish(&doc(
        "name: sample\ndescription: A sample.\ninputs:\n  answer: { type: string, one_of: [yes, no, on, off, y, n] }\nsteps:\n  - id: done\n    finish: ok\n",
    ))
    .expect("publishes");
    let field = process.document().inputs.get("answer").expect("declared");
    let values: Vec<String> = field
        .one_of
        .as_ref()
        .expect("one_of")
        .iter()
        .map(|v| v.as_str().expect("string").to_owned())
        .collect();
    assert_eq!(values, ["yes", "no", "on", "off", "y", "n"]);
}

#[test]
fn duplicate_keys_are_refused_at_every_depth() {
    refused(
        &doc("name: sample\nname: again\ndescription: A sample.\nsteps:\n  - id: done\n    finish: ok\n"),
        &["name: duplicate key \"name\""],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    output: { a: string, a: number }\n"),
        &["steps[0].output.a: duplicate key \"a\""],
    );
    refused(
        &with_steps(
            "  - id: work\n    agent: Do it.\n    next:\n      - { to: done, when: x, when: y }\n      - other\n  - id: other\n    finish: other\n  - id: done\n    finish: ok\n",
        ),
        &["steps[0].next[0].when: duplicate key \"when\""],
    );
}

#[test]
fn unknown_fields_are_refused_everywhere() {
    refused(
        &doc("name: sample\ndescription: A sample.\nversion: 2\nsteps:\n  - id: done\n    finish: ok\n"),
        &["version: unknown field"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    retries: 3\n"),
        &["steps[0] (work).retries: unknown field"],
    );
    refused(
        &doc(
            "name: sample\ndescription: A sample.\ninputs:\n  a: { type: string, format: email }\nsteps:\n  - id: done\n    finish: ok\n",
        ),
        &["inputs.a.format: unknown field"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next:\n      - { to: done, label: x }\n      - done\n"),
        &[
            "steps[0] (work).next[0].label: unknown field",
            "steps[0] (work).next[1]: \"done\" is already a route",
        ],
    );
    refused(
        &doc(
            "name: sample\ndescription: A sample.\nrequires: { systems: [crm], teams: [ops] }\nsteps:\n  - id: done\n    finish: ok\n",
        ),
        &["requires.teams: unknown field"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    check:\n      - ask: Is it right?\n        weight: 2\n"),
        &["steps[0] (work).check[0].weight: unknown field"],
    );
}

// ---- name and description ----

#[test]
fn name_pattern_length_and_description() {
    let named = |name: &str| {
        doc(&format!(
            "name: {name}\ndescription: A sample.\nsteps:\n  - id: done\n    finish: ok\n"
        ))
    };
    refused(
        &named("Supplier_Onboarding"),
        &[
            "name: \"Supplier_Onboarding\" is not a valid name: use 1–64 lowercase letters a–z and digits, with single hyphens between words, such as \"supplier-onboarding\" (^[a-z0-9]+(-[a-z0-9]+)*$)",
        ],
    );
    refused(
        &named("a--b"),
        &[
            "name: \"a--b\" is not a valid name: use 1–64 lowercase letters a–z and digits, with single hyphens between words, such as \"a-b\" (^[a-z0-9]+(-[a-z0-9]+)*$)",
        ],
    );
    refused(&named(&"a".repeat(65)), &["name: must be 1–64 characters, has 65"]);
    refused(&named("''"), &["name: must be 1–64 characters, has 0"]);
    assert!(publish(&named(&"a".repeat(64))).is_ok());
    refused(&named("12"), &["name: expected string, found number"]);
    refused(
        &doc("name: sample\nsteps:\n  - id: done\n    finish: ok\n"),
        &["description: missing"],
    );
    refused(
        &doc("name: sample\ndescription: '  '\nsteps:\n  - id: done\n    finish: ok\n"),
        &["description: must not be blank"],
    );
    refused(&doc("description: A sample.\n"), &["name: missing", "steps: missing"]);
    // A missing key is placed at the frontmatter's mapping, on the file's second line.
    let refusal = agentprocess_format::validate(doc("description: A sample.\n").as_bytes(), &Default::default())
        .expect_err("refused");
    let places: Vec<_> = refusal
        .issues
        .iter()
        .map(|issue| issue.position.map(|p| (p.line, p.column)))
        .collect();
    assert_eq!(places, [Some((2, 1)), Some((2, 1))]);
}

// ---- steps ----

#[test]
fn step_ids_match_the_pattern_and_are_unique() {
    refused(
        &with_steps("  - id: Work\n    agent: Do it.\n  - id: done\n    finish: ok\n"),
        &[
            "steps[0].id: \"Work\" is not a valid step id: start with a lowercase letter a–z, then up to 63 lowercase letters, digits, \"_\" or \"-\", such as \"work\" (^[a-z][a-z0-9_-]{0,63}$)",
        ],
    );
    refused(
        &with_steps("  - id: work\n    agent: Do it.\n  - id: work\n    agent: Again.\n  - id: done\n    finish: ok\n"),
        &["steps[1] (work).id: \"work\" is already the id of steps[0]"],
    );
    refused(
        &with_steps("  - agent: Do it.\n  - id: done\n    finish: ok\n"),
        &["steps[0].id: missing"],
    );
    refused(
        &with_steps("  - id: 7\n    agent: Do it.\n  - id: done\n    finish: ok\n"),
        &["steps[0].id: expected string, found number"],
    );
    refused(
        &doc("name: sample\ndescription: A sample.\nsteps: []\n"),
        &["steps: needs at least one step"],
    );
}

#[test]
fn exactly_one_kind_key() {
    refused(
        &steps("  - id: work\n    next: done\n"),
        &[
            "steps[0] (work): no kind key; a step has exactly one of agent, task, approve, wait, wait_until, wait_for, finish, parallel",
        ],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    task: Or this.\n    person: ops\n"),
        &["steps[0] (work): has 2 kind keys (agent, task); a step has exactly one"],
    );
}

#[test]
fn only_the_optional_keys_a_kind_allows() {
    refused(
        &steps("  - id: pause\n    wait: 1h\n    due: 2h\n"),
        &["steps[0] (pause).due: not allowed on a wait step"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    person: ops\n"),
        &["steps[0] (work).person: not allowed on an agent step"],
    );
    refused(
        &steps("  - id: ok\n    approve: Fine?\n    person: ops\n    output: { a: string }\n"),
        &["steps[0] (ok).output: not allowed on an approve step"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    on_reject: work\n"),
        &["steps[0] (work).on_reject: not allowed on an agent step"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    timeout: 1h\n"),
        &["steps[0] (work).timeout: not allowed on an agent step"],
    );
    refused(
        &steps("  - id: ok\n    approve: Fine?\n    person: ops\n    check: Is it fine?\n"),
        &["steps[0] (ok).check: not allowed on an approve step"],
    );
    refused(
        &with_steps("  - id: done\n    finish: ok\n    next: done\n"),
        &["steps[0] (done).next: not allowed on a finish step"],
    );
    refused(
        &steps("  - id: task\n    task: Do it.\n"),
        &["steps[0] (task).person: missing; a task step needs one"],
    );
    refused(
        &steps("  - id: ok\n    approve: Fine?\n"),
        &["steps[0] (ok).person: missing; an approve step needs one"],
    );
}

#[test]
fn kind_values() {
    // The optional keys are judged by the kind key even when its value is broken.
    refused(
        &steps("  - id: work\n    agent: ''\n    person: ops\n"),
        &[
            "steps[0] (work).agent: must not be blank",
            "steps[0] (work).person: not allowed on an agent step",
        ],
    );
    refused(
        &steps("  - id: work\n    agent: ''\n"),
        &["steps[0] (work).agent: must not be blank"],
    );
    refused(
        &steps("  - id: work\n    agent: [a]\n"),
        &["steps[0] (work).agent: expected string, found list"],
    );
    refused(
        &steps("  - id: hear\n    wait_for: Payment Received\n"),
        &[
            "steps[0] (hear).wait_for: \"Payment Received\" is not a valid event name: start with a lowercase letter a–z, then up to 63 lowercase letters, digits, \"_\" or \"-\", such as \"payment_received\" (^[a-z][a-z0-9_-]{0,63}$)",
        ],
    );
    refused(
        &steps("  - id: later\n    wait_until: startDate\n"),
        &[
            "steps[0] (later).wait_until: \"startDate\" is not a path of the form inputs.<field> or steps.<id>.output.<field>",
        ],
    );
}

// ---- next, on_reject, on_timeout ----

#[test]
fn targets_name_existing_steps() {
    refused(
        &steps("  - id: ok\n    approve: Fine?\n    person: ops\n    on_reject: chek_vendor\n"),
        &["steps[0] (ok).on_reject: no step \"chek_vendor\""],
    );
    refused(
        &with_steps("  - id: work\n    agent: Do it.\n    next: [done, nowhere]\n  - id: done\n    finish: ok\n"),
        &["steps[0] (work).next[1]: no step \"nowhere\""],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: nowhere\n"),
        &[
            "steps[0] (work).next: no step \"nowhere\"",
            "steps[1] (done): not reachable from the first step",
        ],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: [done, { to: gone, when: Never }]\n"),
        &["steps[0] (work).next[1]: no step \"gone\" (did you mean \"done\"?)"],
    );
    refused(
        &steps("  - id: hear\n    wait_for: paid\n    timeout: 1d\n    on_timeout: chase\n"),
        &["steps[0] (hear).on_timeout: no step \"chase\""],
    );
}

#[test]
fn route_lists() {
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: [done]\n"),
        &["steps[0] (work).next: a list of routes needs two or more, found 1"],
    );
    refused(
        &with_steps(
            "  - id: ok\n    approve: Fine?\n    person: ops\n    next: [a, b]\n  - id: a\n    finish: yes\n  - id: b\n    finish: no\n",
        ),
        &["steps[0] (ok).next: a list of routes is allowed only on agent and task steps, not on an approve step"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: [done, { when: Never }]\n"),
        &["steps[0] (work).next[1].to: missing"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: [done, 5]\n"),
        &["steps[0] (work).next[1]: expected a step id or { to, when }, found number"],
    );
    refused(
        &steps("  - id: work\n    agent: Do it.\n    next: { to: done }\n"),
        &["steps[0] (work).next: expected a step id or a list of routes, found mapping"],
    );
    let routed = publish(&with_steps(
        "  - id: work\n    agent: Do it.\n    next: [a, { to: b, when: Otherwise }]\n  - id: a\n    finish: yes\n  - id: b\n    finish: no\n",
    ))
    .expect("publishes");
    assert_eq!(
        routed.document().steps[0].next,
        Some(agentprocess_format::Next::Routes(vec![
            agentprocess_format::Route {
                to: "a".into(),
                when: None
            },
            agentprocess_format::Route {
                to: "b".into(),
                when: Some("Otherwise".into())
            },
        ]))
    );
}

// ---- the graph ----

#[test]
fn every_step_is_reachable_from_the_first() {
    refused(
        &with_steps(
            "  - id: work\n    agent: Do it.\n    next: done\n  - id: orphan\n    agent: Never reached.\n  - id: done\n    finish: ok\n",
        ),
        &["steps[1] (orphan): not reachable from the first step"],
    );
}

#[test]
fn the_last_step_names_next_unless_it_is_a_finish() {
    refused(
        &with_steps("  - id: done\n    finish: ok\n  - id: work\n    agent: Do it.\n"),
        &[
            "steps[1] (work): not reachable from the first step",
            "steps[1] (work).next: missing; the last step must name next unless it is a finish",
        ],
    );
}

#[test]
fn no_step_is_visited_twice_along_next_and_on_timeout() {
    refused(
        &with_steps("  - id: a\n    agent: A.\n  - id: b\n    agent: B.\n    next: a\n  - id: done\n    finish: ok\n"),
        &[
            "steps[1] (b).next: goes back to \"a\" (a → b → a); only on_reject may go back",
            "steps[2] (done): not reachable from the first step",
        ],
    );
    refused(
        &with_steps(
            "  - id: a\n    agent: A.\n  - id: hear\n    wait_for: paid\n    timeout: 1d\n    on_timeout: a\n    next: done\n  - id: done\n    finish: ok\n",
        ),
        &["steps[1] (hear).on_timeout: goes back to \"a\" (a → hear → a); only on_reject may go back"],
    );
    // Two routes meeting at one step is not a cycle; on_reject may go back.
    assert!(publish(&with_steps(
        "  - id: a\n    agent: A.\n    next: [b, c]\n  - id: b\n    agent: B.\n    next: c\n  - id: c\n    approve: Fine?\n    person: ops\n    on_reject: a\n  - id: done\n    finish: ok\n"
    ))
    .is_ok());
}

// ---- person and paths ----

#[test]
fn person_is_a_role_initiator_or_a_declared_person_path() {
    let with = |inputs: &str, person: &str| {
        doc(&format!(
            "name: sample\ndescription: A sample.\ninputs:\n{inputs}steps:\n  - id: ok\n    approve: Fine?\n    person: {person}\n  - id: done\n    finish: ok\n"
        ))
    };
    assert!(publish(&with("  boss: person\n", "inputs.boss")).is_ok());
    assert!(publish(&with("  boss: person\n", "initiator")).is_ok());
    assert!(publish(&with("  boss: person\n", "finance-approver")).is_ok());
    refused(
        &with("  boss: person\n", "inputs.manager"),
        &["steps[0] (ok).person: inputs.manager names no declared input"],
    );
    refused(
        &with("  boss: string\n", "inputs.boss"),
        &["steps[0] (ok).person: inputs.boss is a string field; it must name a person field"],
    );
    refused(
        &with("  boss: person\n", "finance.approver"),
        &[
            "steps[0] (ok).person: \"finance.approver\" is not a role name (role names have no dots) nor a path of the form inputs.<field> or steps.<id>.output.<field>",
        ],
    );
    refused(
        &with_steps(
            "  - id: pick\n    agent: Pick.\n    output: { who: string }\n  - id: ok\n    approve: Fine?\n    person: steps.pick.output.who\n  - id: done\n    finish: ok\n",
        ),
        &["steps[1] (ok).person: steps.pick.output.who is a string field; it must name a person field"],
    );
    refused(
        &with_steps(
            "  - id: ok\n    approve: Fine?\n    person: steps.pick.output.who\n  - id: done\n    finish: ok\n",
        ),
        &["steps[0] (ok).person: steps.pick.output.who names no step \"pick\""],
    );
    assert!(publish(&with_steps(
        "  - id: pick\n    agent: Pick.\n    output: { who: person }\n  - id: ok\n    approve: Fine?\n    person: steps.pick.output.who\n  - id: done\n    finish: ok\n"
    ))
    .is_ok());
}

#[test]
fn wait_until_names_a_declared_datetime() {
    let with = |ty: &str| {
        doc(&format!(
            "name: sample\ndescription: A sample.\ninputs:\n  at: {ty}\nsteps:\n  - id: later\n    wait_until: inputs.at\n  - id: done\n    finish: ok\n"
        ))
    };
    assert!(publish(&with("datetime")).is_ok());
    refused(
        &with("date"),
        &["steps[0] (later).wait_until: inputs.at is a date field; it must name a datetime field"],
    );
}

// ---- fields ----

#[test]
fn fields_use_the_eight_types() {
    let input = |decl: &str| {
        doc(&format!(
            "name: sample\ndescription: A sample.\ninputs:\n  f: {decl}\nsteps:\n  - id: done\n    finish: ok\n"
        ))
    };
    for ty in [
        "string", "number", "boolean", "date", "datetime", "list", "object", "person",
    ] {
        assert!(publish(&input(ty)).is_ok(), "{ty}");
    }
    refused(
        &input("integer"),
        &[
            "inputs.f: \"integer\" is not a type; expected one of string, number, boolean, date, datetime, list, object, person",
        ],
    );
    refused(&input("{ description: x }"), &["inputs.f.type: missing"]);
    refused(
        &input("{ type: string, optional: yes }"),
        &["inputs.f.optional: expected boolean, found string"],
    );
    refused(
        &input("{ type: string, one_of: [a, 2] }"),
        &["inputs.f.one_of[1]: expected string like the field, found number 2"],
    );
    refused(
        &input("{ type: number, one_of: [1, '2'] }"),
        &["inputs.f.one_of[1]: expected number like the field, found \"2\""],
    );
    refused(
        &input("{ type: date, one_of: [2026-02-30] }"),
        &["inputs.f.one_of[0]: expected a date (YYYY-MM-DD) like the field, found \"2026-02-30\""],
    );
    refused(
        &input("{ type: string, one_of: [] }"),
        &["inputs.f.one_of: needs at least one value"],
    );
    refused(
        &input("{ type: list, one_of: [a] }"),
        &["inputs.f.one_of: not allowed on a list field (put it on items)"],
    );
    refused(
        &input("{ type: string, items: string }"),
        &["inputs.f.items: allowed only when type is list"],
    );
    refused(
        &input("{ type: list, items: { type: text } }"),
        &[
            "inputs.f.items.type: \"text\" is not a type; expected one of string, number, boolean, date, datetime, list, object, person",
        ],
    );
    refused(
        &input("[string]"),
        &["inputs.f: expected a type name or a field object, found list"],
    );
    assert!(
        publish(&input(
            "{ type: list, items: { type: string, one_of: [a, b] }, optional: true, description: Tags }"
        ))
        .is_ok()
    );
}

// ---- durations and requires ----

#[test]
fn durations_are_an_integer_and_m_h_or_d() {
    let due = |value: &str| steps(&format!("  - id: work\n    agent: Do it.\n    due: {value}\n"));
    for ok in ["30m", "4h", "3d", "0m"] {
        assert!(publish(&due(ok)).is_ok(), "{ok}");
    }
    refused(
        &due("2w"),
        &["steps[0] (work).due: \"2w\" is not a duration: an integer followed by m, h or d, such as 30m, 4h or 3d"],
    );
    refused(
        &due("1.5h"),
        &["steps[0] (work).due: \"1.5h\" is not a duration: an integer followed by m, h or d, such as 30m, 4h or 3d"],
    );
    refused(
        &due("30"),
        &["steps[0] (work).due: \"30\" is not a duration: an integer followed by m, h or d, such as 30m, 4h or 3d"],
    );
    refused(
        &due("99999999d"),
        &["steps[0] (work).due: \"99999999d\" is longer than 100 years"],
    );
}

#[test]
fn requires_lists_systems_once_each() {
    let requires = |value: &str| {
        doc(&format!(
            "name: sample\ndescription: A sample.\nrequires: {value}\nsteps:\n  - id: done\n    finish: ok\n"
        ))
    };
    assert!(publish(&requires("{ systems: [salesforce, gmail] }")).is_ok());
    refused(
        &requires("{ systems: [crm, crm] }"),
        &["requires.systems[1]: \"crm\" is listed twice"],
    );
    refused(
        &requires("{ systems: [Salesforce] }"),
        &[
            "requires.systems[0]: \"Salesforce\" is not a valid name: use 1–64 lowercase letters a–z and digits, with single hyphens between words, such as \"salesforce\" (^[a-z0-9]+(-[a-z0-9]+)*$)",
        ],
    );
    refused(
        &requires("{ systems: [] }"),
        &["requires.systems: needs at least one system"],
    );
    refused(&requires("{}"), &["requires.systems: missing"]);
}

// ---- parallel-1 ----

const FORK: &str = "  - id: start\n    agent: Start.\n  - id: fork\n    parallel: [a, b]\n    next: review\n";

fn parallel(branches: &str) -> String {
    with_steps(&format!(
        "{FORK}{branches}  - id: review\n    approve: All done?\n    person: lead\n    on_reject: fork\n{END}"
    ))
}

#[test]
fn a_well_formed_fork_publishes() {
    assert!(publish(&parallel("  - id: a\n    agent: A.\n    next: join\n  - id: b\n    task: B.\n    person: ops\n    next: b2\n  - id: b2\n    agent: B2.\n    next: join\n")).is_ok());
}

#[test]
fn parallel_needs_two_or_more_entries() {
    refused(
        &with_steps(
            "  - id: fork\n    parallel: [a]\n    next: done\n  - id: a\n    agent: A.\n    next: join\n  - id: done\n    finish: ok\n",
        ),
        &["steps[0] (fork).parallel: needs two or more branch entries"],
    );
}

#[test]
fn every_branch_step_names_next_or_join() {
    refused(
        &parallel("  - id: a\n    agent: A.\n  - id: b\n    agent: B.\n    next: join\n"),
        &["steps[2] (a).next: missing; a step in a parallel branch names next or join"],
    );
}

#[test]
fn no_step_is_in_two_branches() {
    refused(
        &parallel(
            "  - id: a\n    agent: A.\n    next: shared\n  - id: b\n    agent: B.\n    next: shared\n  - id: shared\n    agent: S.\n    next: join\n",
        ),
        &["steps[4] (shared): is in more than one parallel branch: \"fork\" → \"a\" and \"fork\" → \"b\""],
    );
}

#[test]
fn two_parallel_steps_cannot_share_an_entry() {
    refused(
        &with_steps(
            "  - id: one\n    parallel: [a, b]\n    next: two\n  - id: two\n    parallel: [a, c]\n    next: done\n  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: c\n    agent: C.\n    next: join\n  - id: done\n    finish: ok\n",
        ),
        &["steps[2] (a): is in more than one parallel branch: \"one\" → \"a\" and \"two\" → \"a\""],
    );
}

#[test]
fn nothing_outside_routes_into_a_branch() {
    refused(
        &with_steps(
            "  - id: start\n    agent: Start.\n    next: [fork, b]\n  - id: fork\n    parallel: [a, b]\n    next: done\n  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: done\n    finish: ok\n",
        ),
        &[
            "steps[0] (start).next[1]: routes into the parallel branch of \"fork\" at \"b\"; only the parallel step starts a branch",
        ],
    );
}

#[test]
fn no_branch_step_routes_out_to_a_finish_or_to_its_parallel_step() {
    refused(
        &parallel("  - id: a\n    agent: A.\n    next: done\n  - id: b\n    agent: B.\n    next: join\n"),
        &["steps[2] (a).next: routes to the finish \"done\"; a branch ends with join"],
    );
    refused(
        &parallel("  - id: a\n    agent: A.\n    next: fork\n  - id: b\n    agent: B.\n    next: join\n"),
        &["steps[2] (a).next: routes back to its parallel step \"fork\"; a branch ends with join"],
    );
    // A branch step that routes to a step after the join pulls it into the branch,
    // which the parallel step's own next then routes into.
    refused(
        &parallel("  - id: a\n    agent: A.\n    next: review\n  - id: b\n    agent: B.\n    next: join\n"),
        &[
            "steps[1] (fork).next: routes into the parallel branch of \"fork\" at \"review\"; only the parallel step starts a branch",
            "steps[4] (review).next: missing; a step in a parallel branch names next or join",
            "steps[4] (review).on_reject: \"fork\" is outside this step's branch; on_reject inside a branch stays in its branch",
            "steps[5] (done): not reachable from the first step",
        ],
    );
}

#[test]
fn join_only_inside_a_branch_and_no_step_named_join() {
    refused(
        &with_steps(&format!(
            "{FORK}  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: review\n    agent: Review.\n    next: join\n  - id: join\n    finish: ok\n"
        )),
        &[
            "steps[4] (review).next: join is allowed only inside a parallel branch",
            "steps[5] (join): not reachable from the first step",
            "steps[5] (join).id: \"join\" is reserved in a process that uses parallel",
        ],
    );
    // Without a parallel step, join is an ordinary id.
    assert!(
        publish(&with_steps(
            "  - id: work\n    agent: Do it.\n    next: join\n  - id: join\n    finish: ok\n"
        ))
        .is_ok()
    );
}

#[test]
fn join_is_not_a_target_of_on_reject_or_parallel() {
    refused(
        &parallel(
            "  - id: a\n    agent: A.\n    next: join\n  - id: b\n    approve: B?\n    person: ops\n    on_reject: join\n    next: join\n",
        ),
        &["steps[3] (b).on_reject: no step \"join\""],
    );
    refused(
        &with_steps(
            "  - id: fork\n    parallel: [a, join]\n    next: done\n  - id: a\n    agent: A.\n    next: join\n  - id: done\n    finish: ok\n",
        ),
        &["steps[0] (fork).parallel[1]: no step \"join\""],
    );
}

#[test]
fn a_broken_step_does_not_shift_the_place_of_later_issues() {
    let source = with_steps(&format!("  - id: start\n    agent: A.\n    task: B.\n{FORK_AT_1}"));
    let issues = crate::support::publish_with(
        &source,
        agentprocess_format::Capabilities {
            parallel: false,
            ..agentprocess_format::Capabilities::ALL
        },
    )
    .expect_err("refused");
    assert_eq!(
        issues,
        [
            "steps[0] (start): has 2 kind keys (agent, task); a step has exactly one",
            "steps[1] (fork).parallel: needs the parallel-1 profile, which this server does not offer",
        ]
    );
}

const FORK_AT_1: &str = "  - id: fork\n    parallel: [a, b]\n    next: done\n  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: done\n    finish: ok\n";

#[test]
fn no_nesting() {
    refused(
        &with_steps(&format!(
            "{FORK}  - id: a\n    agent: A.\n    next: inner\n  - id: inner\n    parallel: [x, y]\n    next: join\n  - id: x\n    agent: X.\n    next: join\n  - id: y\n    agent: Y.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: review\n    agent: R.\n    next: done\n{END}"
        )),
        &[
            "steps[2] (a).next: routes to the parallel step \"inner\"; no nesting in parallel-1",
            "steps[3] (inner).next: join is allowed only inside a parallel branch",
        ],
    );
}

#[test]
fn on_reject_rules_in_and_after_branches() {
    // Inside a branch, on_reject stays in the branch.
    refused(
        &parallel(
            "  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: b_ok\n  - id: b_ok\n    approve: B fine?\n    person: ops\n    on_reject: a\n    next: join\n",
        ),
        &[
            "steps[4] (b_ok).on_reject: \"a\" is outside this step's branch; on_reject inside a branch stays in its branch",
        ],
    );
    assert!(publish(&parallel("  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: b_ok\n  - id: b_ok\n    approve: B fine?\n    person: ops\n    on_reject: b\n    next: join\n")).is_ok());
    // After the join, on_reject may target the parallel step or a step before it, not a branch step.
    refused(
        &with_steps(&format!(
            "{FORK}  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: review\n    approve: Fine?\n    person: lead\n    on_reject: a\n{END}"
        )),
        &[
            "steps[4] (review).on_reject: \"a\" is inside a parallel branch; return to the parallel step \"fork\" or a step before it",
        ],
    );
    assert!(publish(&with_steps(&format!("{FORK}  - id: a\n    agent: A.\n    next: join\n  - id: b\n    agent: B.\n    next: join\n  - id: review\n    approve: Fine?\n    person: lead\n    on_reject: start\n{END}"))).is_ok());
}

// ---- check-1 ----

fn checked(check: &str) -> String {
    steps(&format!("  - id: work\n    agent: Do it.\n    check:{check}"))
}

#[test]
fn check_short_and_full_forms() {
    let short = publish(&checked(" The report covers both lists.\n")).expect("publishes");
    assert_eq!(
        short.document().steps[0].check.as_ref().map(|c| c.questions.len()),
        Some(1)
    );
    assert!(publish(&checked("\n      - ask: Matches?\n        pass: 0.9\n        fail: 0.5\n      - ask: Which?\n        one_of: { states: States it., hedges: Hedges. }\n        pass: [states]\n        unsure: [hedges]\n        confidence: 0.8\n      - ask: How complete?\n        levels: [None., Some., All.]\n        pass: 2\n")).is_ok());
    refused(&checked(" ''\n"), &["steps[0] (work).check: must not be blank"]);
    refused(
        &checked(" []\n"),
        &["steps[0] (work).check: needs at least one question"],
    );
}

#[test]
fn one_of_levels_or_neither() {
    refused(
        &checked(
            "\n      - ask: Which?\n        one_of: { a: A., b: B. }\n        levels: [x, y]\n        pass: [a]\n",
        ),
        &["steps[0] (work).check[0]: has both one_of and levels; a question has one of them or neither"],
    );
    refused(
        &checked("\n      - ask: Fine?\n        unsure: [x]\n"),
        &["steps[0] (work).check[0].unsure: only for a choice question"],
    );
    refused(
        &checked("\n      - ask: Fine?\n        confidence: 0.5\n"),
        &["steps[0] (work).check[0].confidence: only for choice and rubric questions"],
    );
    refused(
        &checked("\n      - ask: Which?\n        one_of: { a: A., b: B. }\n        pass: [a]\n        fail: 0.2\n"),
        &["steps[0] (work).check[0].fail: only for a yes/no question"],
    );
    refused(
        &checked("\n      - pass: 0.5\n"),
        &["steps[0] (work).check[0].ask: missing"],
    );
}

#[test]
fn thresholds_are_within_0_and_1() {
    refused(
        &checked("\n      - ask: Fine?\n        pass: 1.5\n"),
        &["steps[0] (work).check[0].pass: 1.5 is outside 0–1"],
    );
    refused(
        &checked("\n      - ask: Fine?\n        fail: -0.1\n"),
        &["steps[0] (work).check[0].fail: -0.1 is outside 0–1"],
    );
    refused(
        &checked("\n      - ask: Fine?\n        pass: 0.5\n        fail: 0.7\n"),
        &["steps[0] (work).check[0].fail: is above pass; fail must be at or below pass"],
    );
    refused(
        &checked("\n      - ask: How?\n        levels: [a, b]\n        pass: 1\n        confidence: 2\n"),
        &["steps[0] (work).check[0].confidence: 2 is outside 0–1"],
    );
}

#[test]
fn levels_are_two_to_ten() {
    refused(
        &checked("\n      - ask: How?\n        levels: [only]\n        pass: 0\n"),
        &["steps[0] (work).check[0].levels: has 1 levels; a rubric has 2–10"],
    );
    let eleven: Vec<String> = (0..11).map(|i| format!("l{i}")).collect();
    refused(
        &checked(&format!(
            "\n      - ask: How?\n        levels: [{}]\n        pass: 0\n",
            eleven.join(", ")
        )),
        &["steps[0] (work).check[0].levels: has 11 levels; a rubric has 2–10"],
    );
}

#[test]
fn pass_names_existing_answers_or_levels() {
    refused(
        &checked("\n      - ask: Which?\n        one_of: { a: A., b: B. }\n        pass: [c]\n"),
        &["steps[0] (work).check[0].pass[0]: \"c\" is not one of the answers"],
    );
    refused(
        &checked("\n      - ask: Which?\n        one_of: { a: A., b: B. }\n        pass: [a]\n        unsure: [z]\n"),
        &["steps[0] (work).check[0].unsure[0]: \"z\" is not one of the answers"],
    );
    refused(
        &checked("\n      - ask: Which?\n        one_of: { a: A. }\n        pass: [a]\n"),
        &["steps[0] (work).check[0].one_of: needs two or more answers"],
    );
    refused(
        &checked("\n      - ask: Which?\n        one_of: { a: A., b: B. }\n"),
        &["steps[0] (work).check[0].pass: missing; a choice question lists the answers that pass"],
    );
    refused(
        &checked("\n      - ask: How?\n        levels: [a, b, c]\n        pass: 3\n"),
        &["steps[0] (work).check[0].pass: expected a level from 0 to 2, found 3"],
    );
    refused(
        &checked("\n      - ask: How?\n        levels: [a, b, c]\n"),
        &["steps[0] (work).check[0].pass: missing; a rubric question names the level that passes"],
    );
}

#[test]
fn advisory_only_beside_check() {
    refused(
        &steps("  - id: work\n    agent: Do it.\n    advisory: true\n"),
        &["steps[0] (work).advisory: allowed only beside check"],
    );
    assert!(
        publish(&steps(
            "  - id: work\n    agent: Do it.\n    check: Fine?\n    advisory: true\n"
        ))
        .is_ok()
    );
}

// ---- many at once ----

#[test]
fn one_document_breaking_many_rules_gets_every_issue_in_file_order() {
    let source = "---\n\
name: Bad_Name\n\
inputs:\n  \
  amount: money\n  \
  boss: string\n\
colour: blue\n\
steps:\n  \
  - id: check_vendor\n    \
    agent: Check it.\n    \
    evidence: [pdf]\n    \
    due: 2 days\n    \
    next: [approve]\n  \
  - id: approve\n    \
    approve: Approve it.\n    \
    person: inputs.boss\n    \
    on_reject: chek_vendor\n    \
    timeout: 1h\n  \
  - id: approve\n    \
    finish: done\n\
---\n";
    let expected = [
        "description: missing",
        "name: \"Bad_Name\" is not a valid name: use 1–64 lowercase letters a–z and digits, with single hyphens between words, such as \"bad-name\" (^[a-z0-9]+(-[a-z0-9]+)*$)",
        "inputs.amount: \"money\" is not a type; expected one of string, number, boolean, date, datetime, list, object, person",
        "colour: unknown field",
        "steps[0] (check_vendor).evidence[0]: \"pdf\" is not an evidence kind; expected file or link",
        "steps[0] (check_vendor).due: \"2 days\" is not a duration: an integer followed by m, h or d, such as 30m, 4h or 3d",
        "steps[0] (check_vendor).next: a list of routes needs two or more, found 1",
        "steps[1] (approve).person: inputs.boss is a string field; it must name a person field",
        "steps[1] (approve).on_reject: no step \"chek_vendor\" (did you mean \"check_vendor\"?)",
        "steps[1] (approve).timeout: not allowed on an approve step",
        "steps[2] (approve).id: \"approve\" is already the id of steps[1]",
    ];
    // `description: missing` has no place in the file, so it comes first.
    assert_eq!(refuse(source), expected);
}
