//! The call-by-call traces of the three independent reviews
//! (`research/review-round-1.md`, `-2.md`, `-3.md`) replayed against the engine, where
//! they still hold under core-2.
//!
//! Round 1 walks the conformance fixtures. Rounds 2 and 3 mostly wrote processes of
//! their own (a fixture of the same name is round 1's, with other step ids and
//! fields); those traces run the process as the review wrote it, read from the review
//! document itself, so each trace keeps its own ids, values and decisions. Round 3's
//! major incident walks the `major-incident` fixture, which grew out of that process.
//!
//! Where a trace predates a revision and core-2 behaves differently, a one-line comment
//! at that point says what changed and in which revision. Not replayed, by design of the
//! engine: external systems (`erp.*`, `cms.*`, …: the agent's own tools), `upload` (the
//! store's: a file ref arrives here with the hash the store verified), `requestId`
//! replay (the store's), `describe`/`list_processes`, and presentation.
//!
//! Conventions: person values are emails (`describe.person.format` is `email`), so the
//! reviews' `person:mira` is `mira@example.com`. Every role is bound to group
//! `g_<role>`. Agent submissions that predate revision 5 carry no `summary`, which is
//! now required; they get [`SUMMARY`]. A link the trace names without a value gets a
//! document number in the trace's style.

use agentprocess_engine::{Actor, Code, Effect, Mode, Notification, ToolError};
use serde_json::{Map, Value, json};

use crate::support::{Bench, agent, fixture, operator, shared, start_as, version_of};

/// The summary of agent submissions whose trace predates `summary` (revision 5).
const SUMMARY: &str = "Did the step as instructed; the output says what was found.";

/// The process under `heading` in review round `round`: the first fenced `markdown`
/// block after that heading line, as the reviewer wrote it.
fn review_process(round: u8, heading: &str) -> String {
    let path = shared().join(format!("research/review-round-{round}.md"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no heading {heading:?} in round {round}");
    let mut lines = lines.skip_while(|line| *line != "```markdown");
    assert!(lines.next().is_some(), "no process under {heading:?}");
    lines
        .take_while(|line| *line != "```")
        .map(|line| format!("{line}\n"))
        .collect()
}

fn inputs(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("inputs are an object")
}

/// A person in the group `role` is bound to.
fn member(person: &str, role: &str) -> Actor {
    Actor::Person {
        person: person.to_owned(),
        groups: vec![format!("g_{role}")],
        operator: false,
    }
}

/// A person in no group: whom a `person` path or `initiator` names.
fn named(person: &str) -> Actor {
    Actor::Person {
        person: person.to_owned(),
        groups: Vec::new(),
        operator: false,
    }
}

fn link(reference: &str) -> Value {
    json!({ "kind": "link", "ref": reference })
}

/// Sets the bench's clock to `time`.
fn at(bench: &mut Bench, time: &str) {
    bench.now = time.parse().expect("a timestamp");
}

/// The state of step `id` in a run view.
fn state(view: &Value, id: &str) -> Value {
    step_view(view, id)["state"].clone()
}

/// The `steps[]` entry of step `id` in a run view.
fn step_view<'a>(view: &'a Value, id: &str) -> &'a Value {
    view["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

/// `get_run` as a person reads it: the open work item of `step`.
fn read(bench: &Bench, step: &str) -> Value {
    bench.view()["workItems"]
        .as_array()
        .expect("workItems")
        .iter()
        .find(|item| item["stepId"] == step)
        .cloned()
        .unwrap_or_else(|| panic!("no open work item on {step}"))
}

/// The step ids of the open work items, in view order.
fn open_items(bench: &Bench) -> Vec<String> {
    bench.view()["workItems"]
        .as_array()
        .expect("workItems")
        .iter()
        .map(|item| item["stepId"].as_str().expect("stepId").to_owned())
        .collect()
}

/// `get_run` then `decide` on the open work item of `step`: its id and, unless the
/// arguments carry an older one, the snapshot of that read.
fn try_decide(bench: &mut Bench, who: &Actor, step: &str, mut arguments: Value) -> Result<(), ToolError> {
    let item = read(bench, step);
    arguments["workItemId"] = item["decide"]["arguments"]["workItemId"].clone();
    if arguments.get("snapshot").is_none() {
        arguments["snapshot"] = item["decide"]["arguments"]["snapshot"].clone();
    }
    bench.decide(who, arguments)
}

/// H(step, …): a decision that must be taken.
fn decide(bench: &mut Bench, who: &Actor, step: &str, arguments: Value) {
    try_decide(bench, who, step, arguments).unwrap_or_else(|error| panic!("decide {step}: {error}"));
}

fn token_of(claim: &Value) -> String {
    claim["token"].as_str().expect("a token").to_owned()
}

/// A(step) then S(submission) by the agent; returns the claim result.
fn agent_does(bench: &mut Bench, step: &str, mut submission: Value) -> Value {
    let claim = bench
        .claim(&agent(), step)
        .unwrap_or_else(|error| panic!("claim {step}: {error}"));
    if submission.get("summary").is_none() {
        submission["summary"] = json!(SUMMARY);
    }
    bench
        .submit(&agent(), &token_of(&claim), submission, Vec::new())
        .unwrap_or_else(|error| panic!("submit {step}: {error}"));
    claim
}

fn code(error: ToolError) -> (Code, Vec<String>) {
    (error.code, error.issues)
}

fn run_ended() -> (Code, Vec<String>) {
    (Code::Conflict, vec!["run_ended".to_owned()])
}

// Round 1: revision 1, the ten processes that became the fixtures.

/// review-round-1.md, §1 Invoice approval above 10k and 100k: agent run and approver run.
#[test]
fn round1_invoice_approval_routes_125000_to_the_cfo_and_records_the_approval() {
    // `manager: "person:mira"`: person values are emails under core-2.
    let mut bench = Bench::start(
        fixture("invoice-approval"),
        &agent(),
        inputs(json!({ "invoiceId": "INV-284", "invoiceDocument": "DMS:INV-284", "manager": "mira@example.com" })),
    );
    assert_eq!(state(&bench.view(), "validate"), "ready");
    // Steps 3–4, erp.get_invoice and erp.match_invoice, are the agent's own tools.
    let claim = agent_does(
        &mut bench,
        "validate",
        json!({
            "output": { "totalUsd": 125000, "supplier": "Acme", "matchSummary": "PO and receipt matched; no duplicate" },
            "evidence": [link("DMS:INV-284"), link("ERP:MATCH-284")],
            // The trace's "first gap": `next` and `reason` are top-level submit fields since revision 2.
            "next": "cfo_review", "reason": "125000 exceeds 100000"
        }),
    );
    assert!(
        claim["step"]["instructions"]
            .as_str()
            .expect("instructions")
            .contains("choose cfo_review for totals above 100000")
    );
    assert_eq!(claim["data"]["inputs"]["manager"], "mira@example.com");
    let view = bench.view();
    let validate = &view["data"]["steps"]["validate"];
    assert_eq!(validate["output"]["totalUsd"], 125000);
    assert_eq!(validate["next"], "cfo_review");
    assert_eq!(validate["reason"], "125000 exceeds 100000");
    assert_eq!(state(&view, "manager_review"), Value::Null);
    assert_eq!(state(&view, "finance_review"), Value::Null);
    assert_eq!(state(&view, "cfo_review"), "waiting");
    // Approver run: the CFO opens the run and approves with the current snapshot.
    assert_eq!(read(&bench, "cfo_review")["assignedTo"], json!({ "group": "g_cfo" }));
    decide(
        &mut bench,
        &member("cfo@example.com", "cfo"),
        "cfo_review",
        json!({ "decision": "approved" }),
    );
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["cfo_review"],
        json!({ "decision": "approved", "by": "cfo@example.com", "at": "2026-10-06T09:00:00Z", "history": [] })
    );
    assert_eq!(state(&view, "record"), "ready");
    // Steps 8–9, erp.find_approval and erp.record_approval, are the agent's own tools.
    let claim = agent_does(
        &mut bench,
        "record",
        json!({ "output": { "approvalRecord": "ERP:AP-901" }, "evidence": [link("ERP:AP-901")] }),
    );
    assert_eq!(claim["data"]["steps"]["cfo_review"]["decision"], "approved");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "approved");
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "server", "at": "2026-10-06T09:00:00Z", "note": null })
    );
    assert_eq!(view["workItems"], json!([]));
}

/// review-round-1.md, §2 Employee onboarding across HR, IT, and the manager: agent run,
/// including the intervening human work.
#[test]
fn round1_employee_onboarding_goes_hr_access_it_checklist_and_the_managers_approval() {
    let hr = member("hr@example.com", "hr-operations");
    let it = member("it@example.com", "it-operations");
    // `hiringManager: "person:mira"` and `buddy: "person:jo"`: person values are emails.
    let mira = named("mira@example.com");
    let mut bench = Bench::start(
        fixture("employee-onboarding"),
        &hr,
        inputs(json!({
            "employeeId": "E-412", "employeeName": "Nina Rao", "startDate": "2026-11-02", "hiringManager": "mira@example.com"
        })),
    );
    // The trace's first gap: a role's item is one shared group item (spec §3.4, revision 2).
    assert_eq!(
        read(&bench, "hr_setup")["assignedTo"],
        json!({ "group": "g_hr-operations" })
    );
    decide(
        &mut bench,
        &hr,
        "hr_setup",
        json!({ "decision": "completed", "output": { "hrisRecord": "HR:E-412", "location": "London", "jobTitle": "Analyst" }, "evidence": [link("HR:E-412")] }),
    );
    assert_eq!(
        read(&bench, "access_plan")["assignedTo"],
        json!({ "person": "mira@example.com" })
    );
    decide(
        &mut bench,
        &mira,
        "access_plan",
        json!({ "decision": "completed", "output": {
            "accessRequests": ["CRM:read", "Analytics:standard"], "equipment": "Standard laptop", "buddy": "jo@example.com"
        } }),
    );
    decide(
        &mut bench,
        &it,
        "it_setup",
        json!({ "decision": "completed", "output": {
            "assetTag": "LT-440", "accounts": ["CRM:nrao", "Analytics:nrao"], "handoverPlan": "Collect laptop Monday at reception"
        }, "evidence": [link("IT:771")] }),
    );
    // Steps 6–7, onboarding.find_checklist and create_checklist, are the agent's.
    let claim = agent_does(
        &mut bench,
        "welcome",
        json!({ "output": { "checklist": "ONBOARD:412" }, "evidence": [link("ONBOARD:412")] }),
    );
    assert_eq!(claim["data"]["inputs"]["employeeId"], "E-412");
    assert_eq!(claim["data"]["steps"]["hr_setup"]["output"]["hrisRecord"], "HR:E-412");
    assert_eq!(
        claim["data"]["steps"]["access_plan"]["output"]["buddy"],
        "jo@example.com"
    );
    assert_eq!(claim["data"]["steps"]["it_setup"]["output"]["assetTag"], "LT-440");
    decide(&mut bench, &mira, "confirm_ready", json!({ "decision": "approved" }));
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "ready");
    assert_eq!(view["data"]["steps"]["confirm_ready"]["by"], "mira@example.com");
}

/// review-round-1.md, §2 Employee onboarding, approver run: Mira rejects, and
/// `on_reject: access_plan` repeats access planning, IT setup and the checklist; the
/// stale IT output is not presented as current during the repeat.
#[test]
fn round1_employee_onboarding_rejection_repeats_access_it_and_the_checklist() {
    let hr = member("hr@example.com", "hr-operations");
    let it = member("it@example.com", "it-operations");
    let mira = named("mira@example.com");
    let mut bench = Bench::start(
        fixture("employee-onboarding"),
        &hr,
        inputs(json!({
            "employeeId": "E-412", "employeeName": "Nina Rao", "startDate": "2026-11-02", "hiringManager": "mira@example.com"
        })),
    );
    let hr_done = json!({ "decision": "completed", "output": { "hrisRecord": "HR:E-412", "location": "London", "jobTitle": "Analyst" }, "evidence": [link("HR:E-412")] });
    let access = |requests: Value| json!({ "decision": "completed", "output": { "accessRequests": requests, "equipment": "Standard laptop", "buddy": "jo@example.com" } });
    let it_done = |accounts: Value| json!({ "decision": "completed", "output": { "assetTag": "LT-440", "accounts": accounts, "handoverPlan": "Collect laptop Monday at reception" }, "evidence": [link("IT:771")] });
    decide(&mut bench, &hr, "hr_setup", hr_done);
    decide(
        &mut bench,
        &mira,
        "access_plan",
        access(json!(["CRM:read", "Analytics:standard"])),
    );
    decide(
        &mut bench,
        &it,
        "it_setup",
        it_done(json!(["CRM:nrao", "Analytics:nrao"])),
    );
    agent_does(
        &mut bench,
        "welcome",
        json!({ "output": { "checklist": "ONBOARD:412" }, "evidence": [link("ONBOARD:412")] }),
    );
    bench.wait(3600);
    // The trace says only that she rejects when access is wrong; the note is ours.
    decide(
        &mut bench,
        &mira,
        "confirm_ready",
        json!({ "decision": "rejected", "note": "Access is wrong: Analytics needs the finance level." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "hr_setup"), "done");
    assert_eq!(state(&view, "access_plan"), "waiting");
    // Rewound steps show null (revision 4); their completions moved to history (revision 2).
    for step in ["it_setup", "welcome", "confirm_ready"] {
        assert_eq!(state(&view, step), Value::Null, "{step}");
    }
    let steps = &view["data"]["steps"];
    assert_eq!(steps["hr_setup"]["output"]["hrisRecord"], "HR:E-412");
    assert_eq!(
        steps["access_plan"]["output"]["accessRequests"],
        json!(["CRM:read", "Analytics:standard"])
    );
    for step in ["it_setup", "welcome"] {
        assert!(steps[step].get("output").is_none(), "{step} is still current");
        assert_eq!(steps[step]["history"].as_array().map(Vec::len), Some(1), "{step}");
    }
    // The rejecting approval keeps its note current (revision 4).
    assert_eq!(
        steps["confirm_ready"]["note"],
        "Access is wrong: Analytics needs the finance level."
    );
    assert_eq!(
        step_view(&view, "access_plan")["due"],
        "2026-10-08T10:00:00Z",
        "the repeat restarts due"
    );
    decide(
        &mut bench,
        &mira,
        "access_plan",
        access(json!(["CRM:read", "Analytics:finance"])),
    );
    decide(
        &mut bench,
        &it,
        "it_setup",
        it_done(json!(["CRM:nrao", "Analytics:nrao-finance"])),
    );
    let claim = agent_does(
        &mut bench,
        "welcome",
        json!({ "output": { "checklist": "ONBOARD:412" }, "evidence": [link("ONBOARD:412")] }),
    );
    assert_eq!(
        claim["data"]["steps"]["it_setup"]["output"]["accounts"],
        json!(["CRM:nrao", "Analytics:nrao-finance"])
    );
    decide(&mut bench, &mira, "confirm_ready", json!({ "decision": "approved" }));
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "ready");
    assert_eq!(
        view["data"]["steps"]["confirm_ready"]["history"][0]["decision"],
        "rejected"
    );
}

fn support_escalation() -> Bench {
    Bench::start(
        fixture("support-escalation"),
        &agent(),
        inputs(json!({ "ticketId": "SUP-991" })),
    )
}

/// Steps 2–8 of review-round-1.md §3: diagnosis, tier-1 handoff, engineering.
fn support_to_confirmation(bench: &mut Bench, lead: &Actor, engineer: &Actor) {
    // Steps 3–5, support.get_ticket, diagnostics.read and knowledge.search, are the agent's.
    agent_does(
        bench,
        "diagnose",
        json!({
            "output": { "diagnosis": "Export worker times out on large reports", "attemptedFixes": "Retried with approved reduced batch size; still fails" },
            "evidence": [link("DIAG:SUP-991")],
            // The trace's first gap: `next` and `reason` are top-level submit fields (revision 2).
            "next": "tier1_handoff", "reason": "No approved tier-1 resolution"
        }),
    );
    decide(
        bench,
        lead,
        "tier1_handoff",
        json!({ "decision": "completed", "output": {
            "reproduction": "Export account 17 report for one year", "impact": "Customer cannot complete monthly reporting", "severity": "high"
        }, "evidence": [link("SUP-991")] }),
    );
    decide(
        bench,
        engineer,
        "engineering",
        json!({ "decision": "completed", "output": {
            "resolution": "Worker timeout corrected in release 8.4.2", "issue": "ENG-731"
        }, "evidence": [link("DEPLOY:8.4.2")] }),
    );
}

/// review-round-1.md, §3 Customer support escalation to engineering, agent run.
#[test]
fn round1_support_escalation_goes_through_tier1_and_engineering_to_a_closed_ticket() {
    let lead = member("lead@example.com", "tier1-lead");
    let engineer = member("oncall@example.com", "engineering-oncall");
    let mut bench = support_escalation();
    support_to_confirmation(&mut bench, &lead, &engineer);
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["diagnose"]["next"], "tier1_handoff");
    assert_eq!(view["data"]["steps"]["tier1_handoff"]["output"]["severity"], "high");
    assert_eq!(state(&view, "confirm"), "waiting");
    assert_eq!(
        read(&bench, "confirm")["assignedTo"],
        json!({ "group": "g_tier1-lead" })
    );
    decide(&mut bench, &lead, "confirm", json!({ "decision": "approved" }));
    // Step 11, support.close, is the agent's own tool.
    let claim = agent_does(
        &mut bench,
        "close_ticket",
        json!({ "output": { "ticket": "SUP-991" }, "evidence": [link("SUP-991")] }),
    );
    assert_eq!(
        claim["data"]["steps"]["engineering"]["output"]["resolution"],
        "Worker timeout corrected in release 8.4.2"
    );
    assert_eq!(claim["data"]["steps"]["confirm"]["decision"], "approved");
    assert_eq!(bench.view()["run"]["outcome"], "resolved");
}

/// review-round-1.md, §3 Customer support escalation, approver run: when the customer
/// still sees failures, the rejection returns to the handoff and engineering.
#[test]
fn round1_support_escalation_a_failed_confirmation_returns_through_tier1_to_engineering() {
    let lead = member("lead@example.com", "tier1-lead");
    let engineer = member("oncall@example.com", "engineering-oncall");
    let mut bench = support_escalation();
    support_to_confirmation(&mut bench, &lead, &engineer);
    decide(
        &mut bench,
        &lead,
        "confirm",
        json!({ "decision": "rejected", "note": "The customer still sees export failures." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "diagnose"), "done");
    assert_eq!(state(&view, "tier1_handoff"), "waiting");
    assert_eq!(state(&view, "engineering"), Value::Null);
    assert_eq!(state(&view, "confirm"), Value::Null);
    assert_eq!(open_items(&bench), ["tier1_handoff"]);
    assert!(view["data"]["steps"]["engineering"].get("output").is_none());
    assert_eq!(
        view["data"]["steps"]["engineering"]["history"][0]["output"]["issue"],
        "ENG-731"
    );
    assert_eq!(
        view["data"]["steps"]["confirm"]["note"],
        "The customer still sees export failures."
    );
    // The second pass reaches engineering again.
    decide(
        &mut bench,
        &lead,
        "tier1_handoff",
        json!({ "decision": "completed", "output": {
            "reproduction": "Export account 17 report for one year", "impact": "Customer cannot complete monthly reporting", "severity": "critical"
        }, "evidence": [link("SUP-991")] }),
    );
    assert_eq!(open_items(&bench), ["engineering"]);
}

/// review-round-1.md, §3 Customer support escalation, approver run: "If the agent
/// instead calls `escalate`, the draft does not say who receives that escalation."
#[test]
fn round1_support_escalation_an_escalated_diagnosis_goes_to_the_operators() {
    let mut bench = support_escalation();
    let token = bench.token(&agent(), "diagnose");
    bench
        .escalate(&agent(), &token, "Diagnostic logs are unreadable for this tenant.")
        .expect("escalates");
    // Escalations go to the organization's operators (revision 2).
    let item = read(&bench, "diagnose");
    assert_eq!(item["assignedTo"], json!({ "group": "operators" }));
    assert_eq!(
        item["escalation"]["note"],
        "Diagnostic logs are unreadable for this tenant."
    );
    assert_eq!(state(&bench.view(), "tier1_handoff"), Value::Null);
}

fn contract_review(owner: &str) -> Bench {
    // This process has no agent work; an agent initiates it. `owner: "person:lee"` is an email.
    Bench::start(
        fixture("contract-review"),
        &agent(),
        inputs(json!({ "contractId": "C-77", "document": "DMS:C-77", "owner": owner })),
    )
}

fn file(reference: &str, sha256: &str) -> Value {
    json!({ "kind": "file", "ref": reference, "sha256": sha256 })
}

/// review-round-1.md, §4 Legal and finance contract review before signature: the run.
#[test]
fn round1_contract_review_owner_legal_finance_and_signatory_sign_revision_3() {
    let lee = named("lee@example.com");
    let mut bench = contract_review("lee@example.com");
    assert!(bench.work(&agent()).is_empty(), "the agent gets no work");
    let item = read(&bench, "prepare");
    assert_eq!(item["assignedTo"], json!({ "person": "lee@example.com" }));
    assert_eq!(item["evidence"], json!(["file"]));
    // Step 3, F("C-77-r3.pdf"), is `upload`: the store's. `file-c3` arrives verified.
    decide(
        &mut bench,
        &lee,
        "prepare",
        json!({ "decision": "completed", "output": {
            "revision": "C-77/r3", "summary": "USD 48,000 annual subscription; net 30; agreed liability cap"
        }, "evidence": [file("file-c3", "c3")] }),
    );
    assert_eq!(
        bench.view()["data"]["steps"]["prepare"]["evidence"],
        json!([{ "kind": "file", "ref": "file-c3", "sha256": "c3" }])
    );
    decide(
        &mut bench,
        &member("legal@example.com", "legal-reviewer"),
        "legal_review",
        json!({ "decision": "approved" }),
    );
    decide(
        &mut bench,
        &member("finance@example.com", "finance-reviewer"),
        "finance_review",
        json!({ "decision": "approved" }),
    );
    assert!(bench.work(&agent()).is_empty(), "the agent gets no work");
    decide(
        &mut bench,
        &member("signatory@example.com", "authorized-signatory"),
        "sign",
        json!({ "decision": "completed", "output": { "signedRevision": "C-77/r3", "signedAt": "2026-10-09T10:00:00Z" },
                "evidence": [file("file-c3-signed", "c3s")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "signed");
    assert_eq!(view["data"]["steps"]["legal_review"]["decision"], "approved");
    assert_eq!(view["data"]["steps"]["finance_review"]["decision"], "approved");
    assert_eq!(view["data"]["steps"]["sign"]["output"]["signedRevision"], "C-77/r3");
}

/// review-round-1.md, §4 Contract review, approver run: finance requests a changed
/// payment term and rejects; preparation produces r4 and legal reviews again.
#[test]
fn round1_contract_review_a_finance_rejection_brings_r4_back_to_legal() {
    let lee = named("lee@example.com");
    let legal = member("legal@example.com", "legal-reviewer");
    let finance = member("finance@example.com", "finance-reviewer");
    let mut bench = contract_review("lee@example.com");
    let prepared = |revision: &str, hash: &str| {
        json!({ "decision": "completed", "output": { "revision": revision, "summary": "USD 48,000 annual subscription; agreed liability cap" },
                "evidence": [file(&format!("file-{hash}"), hash)] })
    };
    decide(&mut bench, &lee, "prepare", prepared("C-77/r3", "c3"));
    decide(&mut bench, &legal, "legal_review", json!({ "decision": "approved" }));
    decide(
        &mut bench,
        &finance,
        "finance_review",
        json!({ "decision": "rejected", "note": "Change the payment term to net 45." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "prepare"), "waiting");
    assert_eq!(state(&view, "legal_review"), Value::Null);
    assert_eq!(state(&view, "finance_review"), Value::Null);
    assert_eq!(open_items(&bench), ["prepare"]);
    let steps = &view["data"]["steps"];
    assert!(
        steps["legal_review"].get("decision").is_none(),
        "r3's approval is not current"
    );
    assert_eq!(steps["legal_review"]["history"][0]["decision"], "approved");
    assert_eq!(steps["finance_review"]["note"], "Change the payment term to net 45.");
    decide(&mut bench, &lee, "prepare", prepared("C-77/r4", "c4"));
    assert_eq!(open_items(&bench), ["legal_review"]);
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["prepare"]["output"]["revision"], "C-77/r4");
    assert_eq!(
        view["data"]["steps"]["prepare"]["history"][0]["output"]["revision"],
        "C-77/r3"
    );
}

/// review-round-1.md, §5 Expense reimbursement with receipts and manager approval, agent run.
#[test]
fn round1_expense_reimbursement_receipts_check_approval_and_payment() {
    let employee = named("employee@example.com");
    // `manager: "person:mira"` is an email.
    let mut bench = Bench::start(
        fixture("expense-reimbursement"),
        &employee,
        inputs(json!({ "claimId": "EX-19", "manager": "mira@example.com" })),
    );
    // `receipts` is the initiator's: the employee who started the run.
    assert_eq!(
        read(&bench, "receipts")["assignedTo"],
        json!({ "person": "employee@example.com" })
    );
    let lines = json!([
        { "merchant": "Rail", "date": "2026-10-05", "amount": 160, "purpose": "Travel" },
        { "merchant": "Hotel", "date": "2026-10-05", "amount": 80, "purpose": "Overnight stay" }
    ]);
    // Step 2, F("EX-19-receipts.pdf"), is `upload`: the store's.
    decide(
        &mut bench,
        &employee,
        "receipts",
        json!({ "decision": "completed", "output": { "purpose": "Customer site visit", "totalUsd": 240, "lines": lines },
                "evidence": [file("file-e19", "e19")] }),
    );
    // Steps 5–7, expenses.get_policy, find_duplicates and the receipt reader, are the agent's.
    let claim = agent_does(
        &mut bench,
        "check",
        json!({ "output": { "checkedTotalUsd": 240, "checks": "Both receipts matched; sum correct; policy compliant; no duplicate" },
                "evidence": [link("EXP:CHECK-19")] }),
    );
    assert_eq!(claim["data"]["steps"]["receipts"]["output"]["lines"], lines);
    assert_eq!(claim["data"]["steps"]["receipts"]["evidence"][0]["ref"], "file-e19");
    assert_eq!(
        read(&bench, "manager_review")["assignedTo"],
        json!({ "person": "mira@example.com" })
    );
    decide(
        &mut bench,
        &named("mira@example.com"),
        "manager_review",
        json!({ "decision": "approved" }),
    );
    decide(
        &mut bench,
        &member("ap@example.com", "accounts-payable"),
        "reimburse",
        json!({ "decision": "completed", "output": { "paymentReference": "PAY-881", "paidUsd": 240 }, "evidence": [link("PAY-881")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "reimbursed");
    assert_eq!(view["data"]["steps"]["reimburse"]["output"]["paidUsd"], 240);
}

/// review-round-1.md, §6 RFP with three supplier quotes, agent run and approver run.
#[test]
fn round1_supplier_rfp_three_quotes_comparison_selection_and_record() {
    let buyer = member("buyer@example.com", "procurement-buyer");
    let manager = member("procurement@example.com", "procurement-manager");
    let mut bench = Bench::start(
        fixture("supplier-rfp"),
        &buyer,
        inputs(json!({
            "rfpId": "RFP-8", "requirements": "Twenty laptops, delivered within four weeks",
            "supplierOne": "Acme", "supplierTwo": "Beacon", "supplierThree": "Cedar"
        })),
    );
    // Step 3, three `upload` calls, is the store's.
    let quotes = json!({ "decision": "completed",
        "output": { "quoteOne": "ACME-Q10", "quoteTwo": "BEACON-Q8", "quoteThree": "CEDAR-Q41" },
        "evidence": [file("file-acme", "a"), file("file-beacon", "b"), file("file-cedar", "c")] });
    decide(&mut bench, &buyer, "collect_quotes", quotes.clone());
    assert_eq!(
        bench.view()["data"]["steps"]["collect_quotes"]["evidence"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    // Step 6, the document reader, is the agent's.
    let compare = json!({ "output": {
        "comparison": "Acme and Beacon meet delivery; Cedar does not", "recommendedSupplier": "Acme", "rationale": "Lowest price among compliant quotes"
    }, "evidence": [] });
    let claim = agent_does(&mut bench, "compare", compare.clone());
    assert_eq!(
        claim["data"]["steps"]["collect_quotes"]["output"]["quoteThree"],
        "CEDAR-Q41"
    );
    // Approver run, alternative: a rejection returns to quote collection even when only
    // the comparison needs correcting.
    let mut rejected = bench.clone();
    decide(
        &mut rejected,
        &manager,
        "select",
        json!({ "decision": "rejected", "note": "The comparison misreads Beacon's delivery date." }),
    );
    assert_eq!(open_items(&rejected), ["collect_quotes"]);
    assert_eq!(state(&rejected.view(), "compare"), Value::Null);
    decide(&mut bench, &manager, "select", json!({ "decision": "approved" }));
    // Steps 10–11, sourcing.find_selection and record_selection, are the agent's.
    agent_does(
        &mut bench,
        "record_selection",
        json!({ "output": { "sourcingRecord": "SOURCE:RFP-8" }, "evidence": [link("SOURCE:RFP-8")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "selected");
    assert_eq!(
        view["data"]["steps"]["compare"]["output"]["recommendedSupplier"],
        "Acme"
    );
}

fn blog() -> Bench {
    Bench::start(
        fixture("blog-publication"),
        &agent(),
        inputs(
            json!({ "brief": "Explain the new reporting feature", "slug": "reporting-update", "publishAt": "2026-10-12T09:00:00Z" }),
        ),
    )
}

fn draft_r1(bench: &mut Bench) {
    // Step 3, cms.save_draft, is the agent's.
    agent_does(
        bench,
        "draft",
        json!({ "output": { "revision": "POST-14/r1", "title": "Reporting update", "summary": "New reports and scheduling" },
                "evidence": [link("CMS:POST-14/r1/preview")] }),
    );
}

/// review-round-1.md, §7 Blog draft through editor review to publication, agent run.
#[test]
fn round1_blog_publication_rejected_r1_then_approved_r2_is_published_at_publish_at() {
    let editor = member("editor@example.com", "editor");
    let mut bench = blog();
    draft_r1(&mut bench);
    decide(
        &mut bench,
        &editor,
        "editor_review",
        json!({ "decision": "rejected", "note": "Correct the availability date" }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "draft"), "ready");
    // Revision 4: the rejected approval is rewound to null and keeps its note current.
    assert_eq!(state(&view, "editor_review"), Value::Null);
    // The trace's first gap, assumed at `steps.editor_review.note`: that is the place (revision 2).
    let claim = agent_does(
        &mut bench,
        "draft",
        json!({ "output": { "revision": "POST-14/r2", "title": "Reporting update", "summary": "Availability date corrected" },
                "evidence": [link("CMS:POST-14/r2/preview")] }),
    );
    assert_eq!(
        claim["data"]["steps"]["editor_review"]["note"],
        "Correct the availability date"
    );
    assert_eq!(claim["data"]["steps"]["draft"]["output"]["revision"], "POST-14/r1");
    decide(&mut bench, &editor, "editor_review", json!({ "decision": "approved" }));
    let view = bench.view();
    assert_eq!(state(&view, "publication_time"), "waiting");
    assert_eq!(state(&view, "publish"), Value::Null);
    // Step 10: the server waits until publishAt.
    at(&mut bench, "2026-10-12T09:00:00Z");
    bench.fire("publication_time:wait_until:1");
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["publication_time"],
        json!({ "by": "server", "at": "2026-10-12T09:00:00Z", "history": [] })
    );
    // Steps 12–14, cms.get_publication, cms.publish and the HTTP check, are the agent's.
    let claim = agent_does(
        &mut bench,
        "publish",
        json!({ "output": { "url": "https://company.example/blog/reporting-update", "publishedRevision": "POST-14/r2" },
                "evidence": [link("https://company.example/blog/reporting-update")] }),
    );
    let steps = &claim["data"]["steps"];
    assert_eq!(steps["draft"]["output"]["revision"], "POST-14/r2");
    assert_eq!(steps["draft"]["history"][0]["output"]["revision"], "POST-14/r1");
    assert_eq!(steps["editor_review"]["decision"], "approved");
    assert_eq!(
        steps["editor_review"]["history"][0]["note"],
        "Correct the availability date"
    );
    assert_eq!(bench.view()["run"]["outcome"], "published");
}

/// review-round-1.md, §7 Blog, approver run: "If approval arrives after the scheduled
/// timestamp, the file says to publish immediately. The server still needs a defined
/// past-time rule for `wait_until`."
#[test]
fn round1_blog_publication_approved_after_publish_at_publishes_at_once() {
    let mut bench = blog();
    draft_r1(&mut bench);
    at(&mut bench, "2026-10-13T08:00:00Z");
    decide(
        &mut bench,
        &member("editor@example.com", "editor"),
        "editor_review",
        json!({ "decision": "approved" }),
    );
    // A time already past continues at once (spec §2.2, revision 2).
    let view = bench.view();
    assert_eq!(state(&view, "publication_time"), "done");
    assert_eq!(state(&view, "publish"), "ready");
    assert_eq!(view["data"]["steps"]["publication_time"]["at"], "2026-10-13T08:00:00Z");
}

/// review-round-1.md, §8 Incident postmortem with actions tracked to closure, agent run.
#[test]
fn round1_incident_postmortem_keeps_the_run_open_until_jo_confirms_closure() {
    // `incidentOwner: "person:jo"` is an email.
    let jo = named("jo@example.com");
    let mut bench = Bench::start(
        fixture("incident-postmortem"),
        &agent(),
        inputs(json!({ "incidentId": "INC-44", "incidentOwner": "jo@example.com" })),
    );
    // Step 3, incidents.read, is the agent's. The action owners were `person:alex` and
    // `person:sam`; inside an `object` nothing checks them, but they are emails here too.
    let actions = json!([
        { "deliverable": "Add queue-depth alert", "owner": "alex@example.com", "due": "2026-10-20", "criterion": "Alert fires in controlled test" },
        { "deliverable": "Add rollback drill", "owner": "sam@example.com", "due": "2026-10-27", "criterion": "Successful timed drill recorded" }
    ]);
    agent_does(
        &mut bench,
        "draft",
        json!({ "output": { "report": "DOC:PM-44", "proposedActions": actions }, "evidence": [link("DOC:PM-44")] }),
    );
    assert_eq!(
        read(&bench, "review")["assignedTo"],
        json!({ "person": "jo@example.com" })
    );
    decide(&mut bench, &jo, "review", json!({ "decision": "approved" }));
    // Steps 7–9, issues.find_by_incident and issues.create, are the agent's.
    let claim = agent_does(
        &mut bench,
        "register_actions",
        json!({ "output": { "actionIds": ["ACT-1", "ACT-2"], "trackerView": "TRACKER:INC-44" }, "evidence": [link("TRACKER:INC-44")] }),
    );
    assert_eq!(claim["data"]["steps"]["draft"]["output"]["proposedActions"], actions);
    let item = read(&bench, "track_closure");
    assert_eq!(item["assignedTo"], json!({ "person": "jo@example.com" }));
    assert_eq!(item["due"], "2026-11-05T09:00:00Z");
    assert_eq!(bench.view()["run"]["state"], "waiting");
    decide(
        &mut bench,
        &jo,
        "track_closure",
        json!({ "decision": "completed", "output": {
            "closures": [{ "issueId": "ACT-1", "evidence": "TEST:ALERT-7" }, { "issueId": "ACT-2", "evidence": "DRILL:29" }],
            "closureSummary": "Both completion criteria verified"
        }, "evidence": [link("TRACKER:INC-44")] }),
    );
    assert_eq!(bench.view()["run"]["outcome"], "closed");
}

fn offboarding() -> Bench {
    Bench::start(
        fixture("customer-offboarding"),
        &member("owner@example.com", "account-owner"),
        inputs(json!({ "customerId": "CUS-32", "effectiveAt": "2026-10-31T18:00:00Z" })),
    )
}

/// Steps 2–8 of review-round-1.md §9: authorization, the effective time, cancellation.
fn offboarding_to_final_invoice(bench: &mut Bench) {
    decide(
        bench,
        &member("owner@example.com", "account-owner"),
        "authorize",
        json!({ "decision": "approved" }),
    );
    // The trace's first gap: datetimes are RFC 3339 (revision 2); this one is in the future.
    assert_eq!(state(&bench.view(), "effective_time"), "waiting");
    at(bench, "2026-10-31T18:00:00Z");
    bench.fire("effective_time:wait_until:1");
    // Steps 5–7, the status, listing and cancellation calls, are the agent's.
    agent_does(
        bench,
        "cancel_services",
        json!({ "output": { "cancellationIds": ["CANCEL-1", "CANCEL-2"] }, "evidence": [link("CANCEL-1"), link("CANCEL-2")] }),
    );
}

fn final_invoice() -> Value {
    // Step 10, billing.finalize, is the agent's; `next`/`reason` are top-level (revision 2).
    json!({ "output": { "invoiceId": "FINAL-32", "balance": 420, "currency": "USD" }, "evidence": [link("FINAL-32")],
            "next": "settlement_event", "reason": "Outstanding final balance" })
}

/// review-round-1.md, §9 Customer offboarding, agent run.
#[test]
fn round1_customer_offboarding_settles_by_event_and_verifies_deletion() {
    let steward = member("steward@example.com", "data-steward");
    let mut bench = offboarding();
    offboarding_to_final_invoice(&mut bench);
    agent_does(&mut bench, "final_invoice", final_invoice());
    assert_eq!(state(&bench.view(), "settlement_event"), "waiting");
    // Step 12: the billing system sends the event as an agent identity (revision 8);
    // the reply is `consumedBy` (the `delivered` flag went in revision 3).
    let consumed = bench
        .send_event(&agent(), "final-invoice-settled", json!({ "invoiceId": "FINAL-32" }))
        .expect("delivered");
    assert_eq!(consumed.as_deref(), Some("settlement_event"));
    assert_eq!(
        bench.view()["data"]["steps"]["settlement_event"]["output"],
        json!({ "invoiceId": "FINAL-32" })
    );
    // Step 14, billing.get_invoice, is the agent's. The trace gives no reason for its choice.
    agent_does(
        &mut bench,
        "verify_settlement",
        json!({ "output": { "ledgerSummary": "FINAL-32 settled in full" }, "evidence": [link("LEDGER:FINAL-32")],
                "next": "deletion_clearance", "reason": "The ledger shows FINAL-32 settled." }),
    );
    assert_eq!(state(&bench.view(), "finance_followup"), Value::Null);
    decide(
        &mut bench,
        &steward,
        "deletion_clearance",
        json!({ "decision": "completed", "output": {
            "deletionScope": "Customer workspace and application exports", "retentionExceptions": "Billing records retained under approved schedule"
        }, "evidence": [link("INVENTORY:CUS-32")] }),
    );
    // Step 18, the deletion tools, are the agent's.
    agent_does(
        &mut bench,
        "delete_data",
        json!({ "output": { "deletionReceipts": ["DELETE:APP-32", "EXPIRE:BACKUP-32"] },
                "evidence": [link("DELETE:APP-32"), link("EXPIRE:BACKUP-32")] }),
    );
    decide(
        &mut bench,
        &steward,
        "verify_deletion",
        json!({ "decision": "completed", "output": { "completionStatement": "Approved deletion completed; retained billing records listed" },
                "evidence": [link("VERIFY:CUS-32")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "offboarded");
    assert_eq!(view["data"]["steps"]["final_invoice"]["next"], "settlement_event");
}

/// review-round-1.md, §9 Customer offboarding, approver run: "A billing event arriving
/// before `settlement_event` becomes active may be lost, buffered, or rejected."
#[test]
fn round1_customer_offboarding_a_settlement_event_before_its_wait_is_held() {
    let mut bench = offboarding();
    offboarding_to_final_invoice(&mut bench);
    // Events are held until their wait (revision 2), not lost or rejected.
    let consumed = bench
        .send_event(&agent(), "final-invoice-settled", json!({ "invoiceId": "FINAL-32" }))
        .expect("held");
    assert_eq!(consumed, None);
    assert_eq!(bench.run.events.len(), 1);
    agent_does(&mut bench, "final_invoice", final_invoice());
    let view = bench.view();
    assert_eq!(state(&view, "settlement_event"), "done");
    assert_eq!(state(&view, "verify_settlement"), "ready");
    assert_eq!(
        view["data"]["steps"]["settlement_event"]["output"],
        json!({ "invoiceId": "FINAL-32" })
    );
    assert!(bench.run.events.is_empty());
}

/// review-round-1.md, §9 Customer offboarding, approver run: "The timeout to collections
/// and ledger check provide a recovery path."
#[test]
fn round1_customer_offboarding_no_settlement_in_30_days_goes_to_finance_followup() {
    let mut bench = offboarding();
    offboarding_to_final_invoice(&mut bench);
    agent_does(&mut bench, "final_invoice", final_invoice());
    bench.wait(30 * 86_400);
    bench.fire("settlement_event:timeout:1");
    let view = bench.view();
    assert_eq!(state(&view, "settlement_event"), "done");
    assert_eq!(state(&view, "verify_settlement"), Value::Null);
    assert_eq!(state(&view, "finance_followup"), "waiting");
    assert_eq!(view["data"]["steps"]["settlement_event"]["by"], "server");
    decide(
        &mut bench,
        &member("collections@example.com", "finance-collections"),
        "finance_followup",
        json!({ "decision": "completed", "output": { "settlementReference": "PAY:FINAL-32" }, "evidence": [link("PAY:FINAL-32")] }),
    );
    assert_eq!(open_items(&bench), ["deletion_clearance"]);
}

/// review-round-1.md, §10 Major incident response with concurrent accountable teams:
/// the core-only attempt creates the teams' work one after another, and their `due`
/// clocks start only when each is reached.
#[test]
fn round1_major_incident_response_in_core_only_runs_the_teams_in_sequence() {
    let operations = member("operations@example.com", "operations-lead");
    let security = member("security@example.com", "security-lead");
    let communications = member("communications@example.com", "communications-lead");
    // `commander: "person:jo"` is an email.
    let mut bench = Bench::start(
        fixture("major-incident-response"),
        &agent(),
        inputs(json!({ "incidentId": "SEV-7", "commander": "jo@example.com" })),
    );
    // Steps 3–4, incidents.open_bridge and paging.page_teams, are the agent's.
    agent_does(
        &mut bench,
        "activate",
        json!({ "output": { "bridge": "BRIDGE:7", "pagingReceipt": "PAGE:7" }, "evidence": [link("BRIDGE:7"), link("PAGE:7")] }),
    );
    // Step 6: only the operations work item exists.
    assert_eq!(open_items(&bench), ["operations"]);
    assert_eq!(read(&bench, "operations")["due"], "2026-10-06T10:00:00Z");
    // Step 7: security has no work item to record completion on.
    assert_eq!(state(&bench.view(), "security"), Value::Null);
    assert!(bench.work(&security).is_empty());
    let done = |field: &str, value: &str| json!({ "decision": "completed", "output": { field: value }, "evidence": [link("SEV-7")] });
    bench.wait(1800);
    decide(
        &mut bench,
        &operations,
        "operations",
        done("recoverySummary", "Service restored."),
    );
    // Step 8: security becomes current only now, its one hour counted from here.
    assert_eq!(open_items(&bench), ["security"]);
    assert_eq!(read(&bench, "security")["due"], "2026-10-06T10:30:00Z");
    bench.wait(600);
    decide(
        &mut bench,
        &security,
        "security",
        done("containmentSummary", "Contained."),
    );
    assert_eq!(read(&bench, "communications")["due"], "2026-10-06T10:40:00Z");
    decide(
        &mut bench,
        &communications,
        "communications",
        done("communicationsSummary", "Notice published."),
    );
    decide(
        &mut bench,
        &named("jo@example.com"),
        "close_review",
        json!({ "decision": "approved" }),
    );
    assert_eq!(bench.view()["run"]["outcome"], "stabilized");
}

// Round 1, Tasks 2–4 (the ambiguity tables, the removal audit, the verdict) hold no traces.

// Round 2: revision 2, core and tools. The reviewer wrote its own ten processes; each
// trace below runs the process of its section, read from review-round-2.md.

fn round2_started(heading: &str, by: &Actor, values: Value) -> Bench {
    let values = if values.is_null() { json!({}) } else { values };
    Bench::start(version_of(&review_process(2, heading)), by, inputs(values))
}

const R2_INVOICE: &str = "## 1. Invoice approval";

/// Round 2 §1 up to the executive's work item: start, get_work, claim, submit.
fn round2_invoice_at_the_executive() -> Bench {
    let mut bench = Bench::start(
        version_of(&review_process(2, R2_INVOICE)),
        &agent(),
        inputs(json!({ "invoiceRef": "INV-410", "amount": 125000 })),
    );
    let view = bench.view();
    assert_eq!(
        (view["run"]["id"].as_str(), view["run"]["state"].as_str()),
        (Some("r_1"), Some("active"))
    );
    assert_eq!(state(&view, "validate"), "ready");
    let work = bench.work(&agent());
    assert_eq!(work.len(), 1);
    assert_eq!(work[0]["mode"], "live");
    assert_eq!(
        work[0]["claim"],
        json!({ "tool": "claim", "arguments": { "runId": "r_1", "stepId": "validate", "requestId": "<new UUID>" } })
    );
    // `note` on a get_work item became `handoff` (revision 5): null on a first attempt.
    assert_eq!(work[0]["handoff"], Value::Null);
    let claim = agent_does(
        &mut bench,
        "validate",
        json!({ "output": { "summary": "Invoice matches the purchase order and receipt; total USD 125000." },
                "evidence": [link("INV-410")], "next": "executive", "reason": "USD 125000 is above USD 100000." }),
    );
    // Routes are `{ to, when? }` objects, not bare ids (revision 7).
    assert_eq!(
        claim["step"]["next"],
        json!([{ "to": "manager" }, { "to": "finance" }, { "to": "executive" }, { "to": "invalid_invoice" }])
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(open_items(&bench), ["executive"]);
    bench
}

/// review-round-2.md, §1 Invoice approval: agent run and approver run.
#[test]
fn round2_invoice_approval_the_executive_approves_usd_125000() {
    let mut bench = round2_invoice_at_the_executive();
    let cfo = member("cfo@example.com", "chief-financial-officer");
    assert_eq!(
        read(&bench, "executive")["assignedTo"],
        json!({ "group": "g_chief-financial-officer" })
    );
    // "Two concrete behaviors": a wrongly chosen allowed route is accepted; thresholds
    // are instructions, not server rules (spec §1 non-goals).
    let mut wrong = Bench::start(
        bench.version.clone(),
        &agent(),
        inputs(json!({ "invoiceRef": "INV-410", "amount": 125000 })),
    );
    agent_does(
        &mut wrong,
        "validate",
        json!({ "output": { "summary": "Total USD 125000." }, "evidence": [link("INV-410")], "next": "manager", "reason": "Chosen in error." }),
    );
    assert_eq!(open_items(&wrong), ["manager"]);
    decide(&mut bench, &cfo, "executive", json!({ "decision": "approved" }));
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "approved");
    assert_eq!(view["data"]["steps"]["executive"]["decision"], "approved");
}

/// review-round-2.md, §1 Invoice approval, failure: rejection.
#[test]
fn round2_invoice_approval_a_rejection_ends_the_run_rejected() {
    let mut bench = round2_invoice_at_the_executive();
    decide(
        &mut bench,
        &member("cfo@example.com", "chief-financial-officer"),
        "executive",
        json!({ "decision": "rejected", "note": "The purchase was not authorized." }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "rejected");
    assert_eq!(view["data"]["steps"]["executive"]["decision"], "rejected");
    assert_eq!(
        view["data"]["steps"]["executive"]["note"],
        "The purchase was not authorized."
    );
    // The run records who ended it and why (revision 4).
    assert_eq!(view["run"]["ended"]["note"], "The purchase was not authorized.");
    assert_eq!(state(&view, "approved"), Value::Null);
}

const R2_ONBOARDING: &str = "## 2. Employee onboarding";

fn round2_onboarding(hr: &Actor) -> Bench {
    round2_started(
        R2_ONBOARDING,
        hr,
        json!({ "employeeRef": "EMP-27", "manager": "manager@example.com", "startAt": "2026-10-07T09:00:00+05:30", "startDate": "2026-10-07" }),
    )
}

/// review-round-2.md, §2 Employee onboarding: agent run and human handoffs, and the
/// human run through `get_run` and `decide`.
#[test]
fn round2_employee_onboarding_hr_it_first_day_and_the_manager() {
    let hr = member("hr@example.com", "hr-team");
    let mut bench = round2_onboarding(&hr);
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert!(bench.work(&agent()).is_empty(), "no agent work to claim");
    // The trace's first gap: work items carry the output and evidence requirements (revision 3).
    let item = read(&bench, "hr");
    assert_eq!(
        item["output"],
        json!({ "recordRef": "string", "checksComplete": "boolean" })
    );
    assert_eq!(item["evidence"], json!(["link"]));
    // "Two behaviors at the schema gap": a guessed key is refused; nothing changes.
    let before = bench.run.clone();
    let error = try_decide(
        &mut bench,
        &hr,
        "hr",
        json!({ "decision": "completed", "output": { "employeeRecord": "HR-27" }, "evidence": [link("HR-27")] }),
    )
    .expect_err("a guessed key");
    assert_eq!(
        code(error),
        (
            Code::NotAccepted,
            vec![
                "output.recordRef: missing".to_owned(),
                "output.checksComplete: missing".to_owned(),
                "output.employeeRecord: not declared".to_owned()
            ]
        )
    );
    assert_eq!(bench.run, before);
    decide(
        &mut bench,
        &hr,
        "hr",
        json!({ "decision": "completed", "output": { "recordRef": "HR-27", "checksComplete": true }, "evidence": [link("HR-27")] }),
    );
    assert_eq!(open_items(&bench), ["it"]);
    decide(
        &mut bench,
        &member("it@example.com", "it-team"),
        "it",
        json!({ "decision": "completed", "output": { "ticketRef": "IT-27" }, "evidence": [link("IT-27")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(state(&view, "first_day"), "waiting");
    // After the specified time, 09:00 at +05:30.
    at(&mut bench, "2026-10-07T03:30:00Z");
    bench.fire("first_day:wait_until:1");
    // `assignedTo` has a person form (revision 4).
    assert_eq!(
        read(&bench, "manager")["assignedTo"],
        json!({ "person": "manager@example.com" })
    );
    decide(
        &mut bench,
        &named("manager@example.com"),
        "manager",
        json!({ "decision": "completed", "output": { "checklistRef": "ONBOARD-27" }, "evidence": [link("ONBOARD-27")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "onboarded");
    assert_eq!(view["data"]["inputs"]["startAt"], "2026-10-07T09:00:00+05:30");
}

/// review-round-2.md, §2 Employee onboarding, failure: HR cannot complete checks.
#[test]
fn round2_employee_onboarding_failed_hr_checks_end_the_run_failed() {
    let hr = member("hr@example.com", "hr-team");
    let mut bench = round2_onboarding(&hr);
    decide(
        &mut bench,
        &hr,
        "hr",
        json!({ "decision": "failed", "note": "Required employment verification failed." }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "failed");
    // The failing step is `failed` with its note in run data (revision 4).
    assert_eq!(state(&view, "hr"), "failed");
    assert_eq!(
        view["data"]["steps"]["hr"],
        json!({ "decision": "failed", "note": "Required employment verification failed.", "by": "hr@example.com",
                "at": "2026-10-06T09:00:00Z", "history": [] })
    );
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "hr@example.com", "at": "2026-10-06T09:00:00Z", "note": "Required employment verification failed." })
    );
    assert_eq!(view["workItems"], json!([]));
}

const R2_SUPPORT: &str = "## 3. Customer support escalation";

/// Round 2 §3 up to `respond` ready: triage to engineering, engineering resolves.
fn round2_support_to_respond() -> Bench {
    let mut bench = round2_started(R2_SUPPORT, &agent(), json!({ "ticketRef": "SUP-81" }));
    assert_eq!(bench.work(&agent())[0]["stepId"], "triage");
    let claim = agent_does(
        &mut bench,
        "triage",
        json!({ "output": { "summary": "Export fails consistently after documented recovery steps." },
                "next": "engineering", "reason": "Tier-1 troubleshooting did not resolve the reproducible failure." }),
    );
    assert_eq!(claim["step"]["output"], json!({ "summary": "string" }));
    assert_eq!(
        claim["step"]["next"],
        json!([{ "to": "respond" }, { "to": "engineering" }])
    );
    // Engineering reviewer run.
    let item = read(&bench, "engineering");
    assert_eq!(item["output"], json!({ "resolution": "string" }));
    assert_eq!(item["due"], "2026-10-07T09:00:00Z");
    decide(
        &mut bench,
        &member("engineer@example.com", "engineering-support"),
        "engineering",
        json!({ "decision": "completed", "output": { "resolution": "The export service was repaired; retry the export." },
                "evidence": [link("ENG-81")] }),
    );
    assert_eq!(state(&bench.view(), "respond"), "ready");
    bench
}

/// review-round-2.md, §3 Customer support escalation: agent run and engineering
/// reviewer run.
#[test]
fn round2_support_escalation_triage_engineering_and_the_response() {
    let mut bench = round2_support_to_respond();
    assert_eq!(bench.work(&agent())[0]["stepId"], "respond");
    let claim = agent_does(
        &mut bench,
        "respond",
        json!({ "output": { "replyRef": "SUP-81-REPLY" }, "evidence": [link("SUP-81-REPLY")] }),
    );
    assert_eq!(
        claim["data"]["steps"]["engineering"]["output"]["resolution"],
        "The export service was repaired; retry the export."
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "resolved");
}

/// review-round-2.md, §3 Customer support escalation, failure: the response agent
/// cannot access the support system, escalates, and an operator returns the step.
#[test]
fn round2_support_escalation_a_returned_escalation_reaches_the_next_claim() {
    let mut bench = round2_support_to_respond();
    let token = bench.token(&agent(), "respond");
    bench.wait(60);
    bench
        .escalate(
            &agent(),
            &token,
            "Support-system access is denied; restore access or send the response manually.",
        )
        .expect("escalates");
    let view = bench.view();
    assert_eq!(state(&view, "respond"), "waiting");
    let item = read(&bench, "respond");
    assert_eq!(
        item["escalation"],
        json!({ "note": "Support-system access is denied; restore access or send the response manually.",
                "by": "a_screener", "at": "2026-10-06T09:01:00Z" })
    );
    // "For manual completed instead, the missing work-item schema reappears": it is there (revision 3).
    assert_eq!(item["output"], json!({ "replyRef": "string" }));
    assert_eq!(item["evidence"], json!(["link"]));
    assert_eq!(item["decide"]["decisions"], json!(["returned", "completed", "failed"]));
    bench.wait(60);
    decide(
        &mut bench,
        &operator(),
        "respond",
        json!({ "decision": "returned", "note": "Access restored. Check for an existing reply before sending." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "respond"), "ready");
    // The return note travels in `handoff.returned`, not `data.steps.respond.note` or
    // `step.note` (revision 6).
    assert!(view["data"]["steps"].get("respond").is_none());
    let returned = json!({ "returned": { "note": "Access restored. Check for an existing reply before sending.",
                                         "by": "ops@example.com", "at": "2026-10-06T09:02:00Z" } });
    assert_eq!(bench.work(&agent())[0]["handoff"], returned);
    let claim = agent_does(
        &mut bench,
        "respond",
        json!({ "output": { "replyRef": "SUP-81-REPLY" }, "evidence": [link("SUP-81-REPLY")] }),
    );
    assert_eq!(claim["handoff"], returned);
    assert_eq!(bench.view()["run"]["outcome"], "resolved");
    // The old token died with the escalation.
    assert_eq!(
        code(
            bench
                .submit(&agent(), &token, json!({}), Vec::new())
                .expect_err("ended")
        ),
        run_ended()
    );
}

const R2_CONTRACT: &str = "## 4. Contract review before signature";
/// SHA-256 of the trace's file bytes, `contract`.
const CONTRACT_SHA256: &str = "cc8321d6375c494d043fdd0260f21bc0ec51dacc9f6abb7f909cdcd3041b78bf";

/// Round 2 §4 up to the finance work item: the agent prepares, legal approves.
fn round2_contract_at_finance() -> Bench {
    let mut bench = round2_started(R2_CONTRACT, &agent(), json!({ "contractRef": "CON-19" }));
    // `upload` of `contract` (f4) is the store's; the file arrives with its verified hash.
    let claim = agent_does(
        &mut bench,
        "prepare",
        json!({ "output": { "revision": "rev-1", "summary": "One-year agreement at the reviewed price." },
                "evidence": [file("f4", CONTRACT_SHA256)] }),
    );
    assert_eq!(claim["step"]["evidence"], json!(["file"]));
    assert_eq!(open_items(&bench), ["legal"]);
    // The `url` beside `sha256` is the store's: short-lived links are not the engine's.
    assert_eq!(
        bench.view()["data"]["steps"]["prepare"]["evidence"][0]["sha256"],
        CONTRACT_SHA256
    );
    decide(
        &mut bench,
        &member("legal@example.com", "legal-team"),
        "legal",
        json!({ "decision": "approved" }),
    );
    assert_eq!(open_items(&bench), ["finance"]);
    assert_eq!(bench.view()["data"]["steps"]["legal"]["decision"], "approved");
    bench
}

/// review-round-2.md, §4 Contract review before signature: agent run, approver and
/// signer run.
#[test]
fn round2_contract_review_prepared_approved_twice_and_signed() {
    let mut bench = round2_contract_at_finance();
    decide(
        &mut bench,
        &member("finance@example.com", "finance-team"),
        "finance",
        json!({ "decision": "approved" }),
    );
    // The signer's work item carries its schema (revision 3).
    let item = read(&bench, "signature");
    assert_eq!(item["output"], json!({ "executedRef": "string" }));
    assert_eq!(item["assignedTo"], json!({ "group": "g_authorized-signers" }));
    decide(
        &mut bench,
        &member("signer@example.com", "authorized-signers"),
        "signature",
        json!({ "decision": "completed", "output": { "executedRef": "SIGNED-19" }, "evidence": [link("SIGNED-19")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "signed");
    assert_eq!(view["data"]["steps"]["signature"]["output"]["executedRef"], "SIGNED-19");
}

/// review-round-2.md, §4 Contract review, failure: finance rejects after legal approves.
#[test]
fn round2_contract_review_finance_rejects_after_legal_approves() {
    let mut bench = round2_contract_at_finance();
    decide(
        &mut bench,
        &member("finance@example.com", "finance-team"),
        "finance",
        json!({ "decision": "rejected", "note": "Change payment terms to net 60." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "prepare"), "ready");
    assert_eq!(state(&view, "legal"), Value::Null);
    assert_eq!(state(&view, "finance"), Value::Null);
    let steps = &view["data"]["steps"];
    assert!(
        steps["legal"].get("decision").is_none(),
        "legal has no current completion"
    );
    assert_eq!(steps["legal"]["history"][0]["decision"], "approved");
    // The trace expected the rejection in `finance.history`; the rejecting approval keeps
    // `decision` and `note` current instead (revision 4).
    assert_eq!(steps["finance"]["decision"], "rejected");
    assert_eq!(steps["finance"]["note"], "Change payment terms to net 60.");
    assert_eq!(steps["finance"]["history"], json!([]));
    assert_eq!(bench.work(&agent())[0]["stepId"], "prepare");
    let claim = bench.claim(&agent(), "prepare").expect("claims again");
    assert_eq!(
        claim["data"]["steps"]["finance"]["note"],
        "Change payment terms to net 60."
    );
    assert_eq!(claim["data"]["steps"]["prepare"]["output"]["revision"], "rev-1");
}

const R2_EXPENSE: &str = "## 5. Expense reimbursement";
/// SHA-256 of the trace's file bytes, `receipt`.
const RECEIPT_SHA256: &str = "6f32860910ca0fb2a20c7fda143666b09dbf8db5238195c90a586fb542ff0cad";

/// review-round-2.md, §5 Expense reimbursement: agent run and approver run.
///
/// Not replayed: the failure "successful submit response lost, then replayed after
/// lease expiry". Replay by `requestId` returns the original result from the store's
/// record (revision 3) before the engine is asked; the engine's part, that the old
/// token makes no second transition, is asserted at the end.
#[test]
fn round2_expense_reimbursement_check_approval_and_payment() {
    let mut bench = round2_started(
        R2_EXPENSE,
        &agent(),
        json!({ "expenseRef": "EXP-55", "manager": "manager@example.com", "amount": 85.5 }),
    );
    // `upload` of `receipt` (f5) is the store's.
    agent_does(
        &mut bench,
        "check",
        json!({ "output": { "summary": "Receipts total USD 85.50; no exceptions." }, "evidence": [file("f5", RECEIPT_SHA256)] }),
    );
    // Approver run: the amount, the summary and the receipt's hash are in the read.
    let view = bench.view();
    assert_eq!(view["data"]["inputs"]["amount"], 85.5);
    assert_eq!(
        view["data"]["steps"]["check"]["output"]["summary"],
        "Receipts total USD 85.50; no exceptions."
    );
    assert_eq!(view["data"]["steps"]["check"]["evidence"][0]["sha256"], RECEIPT_SHA256);
    assert_eq!(read(&bench, "manager")["due"], "2026-10-09T09:00:00Z");
    decide(
        &mut bench,
        &named("manager@example.com"),
        "manager",
        json!({ "decision": "approved" }),
    );
    assert_eq!(state(&bench.view(), "reimburse"), "ready");
    let token = bench.token(&agent(), "reimburse");
    let payment = json!({ "output": { "paymentRef": "PAY-55" }, "evidence": [link("PAY-55")], "summary": SUMMARY });
    bench
        .submit(&agent(), &token, payment.clone(), Vec::new())
        .expect("accepted");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "reimbursed");
    assert_eq!(view["data"]["steps"]["reimburse"]["output"]["paymentRef"], "PAY-55");
    bench.wait(601);
    let ended = bench.run.clone();
    assert_eq!(
        code(
            bench
                .submit(&agent(), &token, payment, Vec::new())
                .expect_err("no second payment")
        ),
        run_ended()
    );
    assert_eq!(bench.run, ended);
}

const R2_RFP: &str = "## 6. RFP with three suppliers";

fn round2_rfp() -> Bench {
    round2_started(
        R2_RFP,
        &agent(),
        json!({ "rfpRef": "RFP-9", "suppliers": ["Acme", "Birch", "Cedar"] }),
    )
}

fn quotes() -> Value {
    json!({
        "output": {
            "quotes": [
                { "supplier": "Acme", "quoteRef": "Q-A", "amount": 9000, "currency": "USD" },
                { "supplier": "Birch", "quoteRef": "Q-B", "amount": 8500, "currency": "USD" },
                { "supplier": "Cedar", "quoteRef": "Q-C", "amount": 9200, "currency": "USD" }
            ],
            "comparison": "Equivalent scope; Birch is lowest priced and meets the delivery date."
        },
        "evidence": [link("Q-A"), link("Q-B"), link("Q-C")],
        "summary": SUMMARY
    })
}

/// review-round-2.md, §6 RFP with three suppliers: agent run (claim, renew, submit)
/// and procurement run.
#[test]
fn round2_three_supplier_rfp_a_renewed_claim_submits_and_procurement_selects() {
    let mut bench = round2_rfp();
    let claim = bench.claim(&agent(), "quotes").expect("claims");
    assert_eq!(claim["expiresAt"], "2026-10-06T09:10:00Z");
    let t6a = token_of(&claim);
    bench.wait(300);
    let renewed = bench.renew(&agent(), &t6a, None).expect("renews");
    assert_eq!(renewed["expiresAt"], "2026-10-06T09:15:00Z");
    let t6b = token_of(&renewed);
    assert_eq!(
        bench
            .submit(&agent(), &t6a, quotes(), Vec::new())
            .expect_err("replaced")
            .code,
        Code::Stale
    );
    bench.submit(&agent(), &t6b, quotes(), Vec::new()).expect("accepted");
    // The trace's "first missing information": the work item has the output schema (revision 3).
    let item = read(&bench, "selection");
    assert_eq!(
        item["output"],
        json!({ "selectedSupplier": "string", "rationale": "string" })
    );
    // A supplier outside the quotes is accepted: membership is an instruction-level check.
    let mut outsider = bench.clone();
    decide(
        &mut outsider,
        &member("procurement@example.com", "procurement-team"),
        "selection",
        json!({ "decision": "completed", "output": { "selectedSupplier": "Dogwood", "rationale": "Not quoted." } }),
    );
    assert_eq!(outsider.view()["run"]["outcome"], "selected");
    decide(
        &mut bench,
        &member("procurement@example.com", "procurement-team"),
        "selection",
        json!({ "decision": "completed", "output": {
            "selectedSupplier": "Birch", "rationale": "Lowest price for equivalent scope and acceptable delivery."
        } }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "selected");
    assert_eq!(
        view["data"]["steps"]["selection"]["output"]["selectedSupplier"],
        "Birch"
    );
    assert_eq!(
        view["data"]["steps"]["quotes"]["output"]["quotes"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}

/// review-round-2.md, §6 RFP, failure: the lease expires during collection.
#[test]
fn round2_three_supplier_rfp_a_submission_after_the_lease_ended_is_stale() {
    let mut bench = round2_rfp();
    let t6a = bench.token(&agent(), "quotes");
    bench.wait(11 * 60);
    let error = bench
        .submit(
            &agent(),
            &t6a,
            json!({ "output": { "quotes": [], "comparison": "Quotes incomplete." }, "evidence": [link("RFP-9")], "summary": SUMMARY }),
            Vec::new(),
        )
        .expect_err("lease over");
    assert_eq!(error.code, Code::Stale);
    assert!(bench.view()["data"]["steps"].get("quotes").is_none());
    let work = bench.work(&agent());
    assert_eq!(work[0]["stepId"], "quotes");
    let claim = bench.claim(&agent(), "quotes").expect("claims again");
    assert_ne!(token_of(&claim), t6a);
    assert_eq!(claim["data"]["inputs"]["suppliers"], json!(["Acme", "Birch", "Cedar"]));
}

const R2_BLOG: &str = "## 7. Blog post review and publication";

/// Round 2 §7's process with the route list taken off the approval. Approvals take no
/// route list since revision 3, so the review's file is refused; the review's own
/// smallest repair, "remove the optional hold route", makes it publishable.
fn round2_blog() -> Bench {
    let source = review_process(2, R2_BLOG);
    let refusal = agentprocess_format::validate(source.as_bytes(), &Default::default()).expect_err("refused");
    assert_eq!(refusal.issues.len(), 1, "{refusal}");
    assert!(
        refusal.issues[0]
            .to_string()
            .contains("a list of routes is allowed only on agent and task steps"),
        "{refusal}"
    );
    let repaired = source
        .replace("    next: [schedule, held]\n", "    next: schedule\n")
        .replace("  - id: held\n    finish: held\n", "");
    assert_ne!(repaired, source);
    let mut bench = Bench::start(
        version_of(&repaired),
        &agent(),
        inputs(json!({ "briefRef": "BRIEF-7", "publishAt": "2026-10-07T10:00:00Z" })),
    );
    agent_does(
        &mut bench,
        "draft",
        json!({ "output": { "draftRef": "POST-7", "revision": "rev-2" }, "evidence": [link("POST-7-REV-2")] }),
    );
    assert_eq!(open_items(&bench), ["editor"]);
    bench
}

/// review-round-2.md, §7 Blog post review and publication: agent run and approver run.
#[test]
fn round2_blog_publication_the_editor_approves_without_a_route_and_it_publishes() {
    let editor = member("editor@example.com", "editors");
    let mut bench = round2_blog();
    assert_eq!(read(&bench, "editor")["next"], Value::Null);
    // The trace's approval carried `next` and `reason`: approvals take no route since
    // revision 3, and on any decision but `completed` they are `invalid` (spec §3.2).
    let error = try_decide(
        &mut bench,
        &editor,
        "editor",
        json!({ "decision": "approved", "next": "schedule", "reason": "The revision is approved for the scheduled publication." }),
    )
    .expect_err("approvals take no route");
    assert_eq!(
        code(error),
        (
            Code::Invalid,
            vec![
                "next: not allowed with approved".to_owned(),
                "reason: not allowed with approved".to_owned()
            ]
        )
    );
    decide(&mut bench, &editor, "editor", json!({ "decision": "approved" }));
    assert_eq!(state(&bench.view(), "schedule"), "waiting");
    at(&mut bench, "2026-10-07T10:00:00Z");
    bench.fire("schedule:wait_until:1");
    assert_eq!(bench.work(&agent())[0]["stepId"], "publish");
    let claim = agent_does(
        &mut bench,
        "publish",
        json!({ "output": { "url": "https://example.com/blog/post-7" }, "evidence": [link("https://example.com/blog/post-7")] }),
    );
    assert_eq!(claim["data"]["steps"]["draft"]["output"]["revision"], "rev-2");
    assert_eq!(claim["data"]["steps"]["editor"]["decision"], "approved");
    let view = bench.view();
    assert_eq!(view["run"]["outcome"], "published");
}

/// review-round-2.md, §7 Blog, failure: the editor rejects the draft, with a note and
/// no route.
#[test]
fn round2_blog_publication_a_rejection_takes_a_note_and_no_route() {
    let editor = member("editor@example.com", "editors");
    let mut bench = round2_blog();
    // "Behavior 2" (requiring `next`/`reason` on a rejection) is gone: with no route on
    // approvals (revision 3) they are `invalid` on a rejection (spec §3.2).
    let error = try_decide(
        &mut bench,
        &editor,
        "editor",
        json!({ "decision": "rejected", "note": "Remove the unsupported performance claim.", "next": "schedule", "reason": "x" }),
    )
    .expect_err("no route on a rejection");
    assert_eq!(error.code, Code::Invalid);
    // "Behavior 1": the call as the trace makes it is accepted and returns to `draft`.
    decide(
        &mut bench,
        &editor,
        "editor",
        json!({ "decision": "rejected", "note": "Remove the unsupported performance claim." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "draft"), "ready");
    assert_eq!(state(&view, "editor"), Value::Null);
    assert_eq!(
        view["data"]["steps"]["editor"]["note"],
        "Remove the unsupported performance claim."
    );
}

const R2_POSTMORTEM: &str = "## 8. Incident postmortem with tracked action closure";

fn round2_postmortem_at_review() -> Bench {
    let owner = member("owner@example.com", "incident-owner");
    let mut bench = round2_started(R2_POSTMORTEM, &agent(), json!({ "incidentRef": "INC-88" }));
    agent_does(
        &mut bench,
        "draft",
        json!({ "output": { "reportRef": "PM-88", "actionRefs": ["ACT-1", "ACT-2"] }, "evidence": [link("PM-88")] }),
    );
    let view = bench.view();
    assert_eq!(step_view(&view, "close_actions")["due"], "2026-11-05T09:00:00Z");
    assert_eq!(step_view(&view, "close_actions")["overdue"], false);
    assert_eq!(
        view["data"]["steps"]["draft"]["output"]["actionRefs"],
        json!(["ACT-1", "ACT-2"])
    );
    decide(
        &mut bench,
        &owner,
        "close_actions",
        json!({ "decision": "completed", "output": { "closedActionRefs": ["ACT-1", "ACT-2"] }, "evidence": [link("TRACKER-88-CLOSED")] }),
    );
    assert_eq!(open_items(&bench), ["review"]);
    bench
}

/// review-round-2.md, §8 Incident postmortem with tracked action closure: agent run,
/// incident owner and approver run.
#[test]
fn round2_incident_postmortem_the_owner_closes_actions_and_the_reviewer_approves() {
    let mut bench = round2_postmortem_at_review();
    decide(
        &mut bench,
        &member("reviewer@example.com", "reliability-reviewers"),
        "review",
        json!({ "decision": "approved" }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "closed");
}

/// review-round-2.md, §8 Incident postmortem, failure: the reviewer finds an unclosed
/// action; and "leaving the task open and notifying when overdue is required".
#[test]
fn round2_incident_postmortem_a_rejection_reopens_closure_with_a_fresh_due() {
    let owner = member("owner@example.com", "incident-owner");
    let mut bench = round2_postmortem_at_review();
    let first = bench.run.step("close_actions").map(|step| step.attempt);
    bench.wait(2 * 86_400);
    decide(
        &mut bench,
        &member("reviewer@example.com", "reliability-reviewers"),
        "review",
        json!({ "decision": "rejected", "note": "ACT-2 has no verified closure evidence." }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "close_actions"), "waiting");
    let item = read(&bench, "close_actions");
    assert_eq!(item["id"], "w_3", "a new work item");
    assert_eq!(item["due"], "2026-11-07T09:00:00Z", "the due clock restarted");
    let steps = &view["data"]["steps"];
    // The trace moved the rejection to history; it stays current (revision 4).
    assert_eq!(steps["review"]["note"], "ACT-2 has no verified closure evidence.");
    assert_eq!(state(&view, "review"), Value::Null);
    // The returned-to step's previous completion stays current until replaced.
    assert_eq!(
        steps["close_actions"]["output"]["closedActionRefs"],
        json!(["ACT-1", "ACT-2"])
    );
    assert_ne!(bench.run.step("close_actions").map(|step| step.attempt), first);
    // Thirty days on, the task is overdue and notified, and stays open.
    bench.wait(30 * 86_400);
    let effects = bench.fire("close_actions:due:2");
    assert_eq!(
        effects,
        [Effect::Notify(Notification::Overdue {
            step: "close_actions".to_owned()
        })]
    );
    let view = bench.view();
    assert_eq!(state(&view, "close_actions"), "waiting");
    assert_eq!(step_view(&view, "close_actions")["overdue"], true);
    decide(
        &mut bench,
        &owner,
        "close_actions",
        json!({ "decision": "completed", "output": { "closedActionRefs": ["ACT-1", "ACT-2"] }, "evidence": [link("TRACKER-88-VERIFIED")] }),
    );
    assert_eq!(
        bench.view()["data"]["steps"]["close_actions"]["history"][0]["evidence"][0]["ref"],
        "TRACKER-88-CLOSED"
    );
}

const R2_OFFBOARDING: &str = "## 9. Customer offboarding";

/// Round 2 §9 up to the finance work item.
fn round2_offboarding_at_finance() -> Bench {
    let mut bench = round2_started(
        R2_OFFBOARDING,
        &agent(),
        json!({ "customerRef": "CUS-9", "deleteAt": "2026-11-06T00:00:00Z" }),
    );
    agent_does(
        &mut bench,
        "cancel_services",
        json!({ "output": { "cancellationRef": "CANCEL-9", "invoiceRef": "FINAL-9" }, "evidence": [link("CANCEL-9"), link("FINAL-9")] }),
    );
    assert_eq!(open_items(&bench), ["finance"]);
    bench
}

fn finance_approves(bench: &mut Bench) {
    decide(
        bench,
        &member("finance@example.com", "finance-team"),
        "finance",
        json!({ "decision": "approved" }),
    );
}

/// review-round-2.md, §9 Customer offboarding: agent run with an early settlement event,
/// and approver run.
#[test]
fn round2_customer_offboarding_an_early_settlement_event_is_held_for_its_wait() {
    let mut bench = round2_offboarding_at_finance();
    // The billing integration is an agent identity; `delivered` was dropped (revision 3).
    let consumed = bench
        .send_event(&agent(), "final_settlement", json!({ "settlementRef": "SET-9" }))
        .expect("held");
    assert_eq!(consumed, None);
    finance_approves(&mut bench);
    let view = bench.view();
    assert_eq!(state(&view, "settlement"), "done");
    assert_eq!(state(&view, "retention"), "waiting");
    assert_eq!(
        view["data"]["steps"]["settlement"]["output"],
        json!({ "settlementRef": "SET-9" })
    );
    at(&mut bench, "2026-11-06T00:00:00Z");
    bench.fire("retention:wait_until:1");
    assert_eq!(bench.work(&agent())[0]["stepId"], "delete_data");
    let claim = agent_does(
        &mut bench,
        "delete_data",
        json!({ "output": { "deletionReportRef": "DELETE-9" }, "evidence": [link("DELETE-9")] }),
    );
    assert_eq!(
        claim["data"]["steps"]["settlement"]["output"],
        json!({ "settlementRef": "SET-9" })
    );
    assert_eq!(bench.view()["run"]["outcome"], "offboarded");
}

/// review-round-2.md, §9 Customer offboarding, failure: two events arrive before the wait.
#[test]
fn round2_customer_offboarding_two_held_events_are_consumed_oldest_first() {
    let mut bench = round2_offboarding_at_finance();
    for reference in ["SET-OLD", "SET-CORRECTED"] {
        let consumed = bench
            .send_event(&agent(), "final_settlement", json!({ "settlementRef": reference }))
            .expect("held");
        assert_eq!(consumed, None);
    }
    finance_approves(&mut bench);
    // The trace's first undefined point: held events are consumed oldest first (revision 3).
    assert_eq!(
        bench.view()["data"]["steps"]["settlement"]["output"],
        json!({ "settlementRef": "SET-OLD" })
    );
    assert_eq!(bench.run.events.len(), 1);
    assert_eq!(bench.run.events[0].data["settlementRef"], "SET-CORRECTED");
}

/// review-round-2.md, §9 Customer offboarding: "For the timeout path, the existing tools
/// can finish `resolve_settlement`; its work item again lacks the output/evidence schema."
#[test]
fn round2_customer_offboarding_a_settlement_timeout_is_resolved_by_accounts_receivable() {
    let mut bench = round2_offboarding_at_finance();
    finance_approves(&mut bench);
    bench.wait(3 * 86_400);
    bench.fire("settlement:timeout:1");
    // The work item carries the schema (revision 3).
    let item = read(&bench, "resolve_settlement");
    assert_eq!(item["output"], json!({ "settlementRef": "string" }));
    assert_eq!(item["evidence"], json!(["link"]));
    decide(
        &mut bench,
        &member("ar@example.com", "accounts-receivable"),
        "resolve_settlement",
        json!({ "decision": "completed", "output": { "settlementRef": "SET-9" }, "evidence": [link("SET-9")] }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "settlement"), "done");
    assert_eq!(state(&view, "retention"), "waiting");
}

// Round 2, not replayed:
// - §10 Major incident response in parallel: written against an invented `branches` key
//   with guessed semantics; `parallel-1` answers its 23 questions differently, and round
//   3 traces the same incident against the real profile (below).
// - "Agent-started runs with a later initiator assignment": the start check covers
//   every step (revision 3); round 3 §3e traces it.
// - "Some run-state results are not fully specified": terminal cleanup (revision 3) is
//   traced in round 3 §1c and §3d.

// Round 3: revision 3, core, tools and `parallel`. The major incident walks the
// `major-incident` fixture, the process round 3 wrote (the fixture's `activate` asks for
// no evidence and its task texts are shorter; the trace's extra link is allowed).

fn operations_lead() -> Actor {
    member("operations@example.org", "operations-lead")
}

fn security_lead() -> Actor {
    member("security@example.org", "security-lead")
}

fn communications_lead() -> Actor {
    member("communications@example.org", "communications-lead")
}

fn commander() -> Actor {
    named("commander@example.org")
}

fn incident(version: agentprocess_engine::ProcessVersion) -> Bench {
    Bench::start(
        version,
        &agent(),
        inputs(json!({ "incidentId": "INC-42", "commander": "commander@example.org" })),
    )
}

/// Step 4 of round 3 §1a: the bridge result submitted at 09:05, which forks.
fn activate(bench: &mut Bench) {
    at(bench, "2026-10-06T09:05:00Z");
    let token = bench.token(&agent(), "activate");
    bench
        .submit(
            &agent(),
            &token,
            json!({ "output": { "bridge": "BRIDGE-42" }, "evidence": [link("BRIDGE-42")], "summary": SUMMARY }),
            Vec::new(),
        )
        .expect("accepted");
}

fn recovery() -> Value {
    json!({ "decision": "completed", "output": { "recoverySummary": "Service restored; recovery checks passed." }, "evidence": [link("RECOVERY-42")] })
}

fn containment() -> Value {
    json!({ "decision": "completed", "output": { "containmentSummary": "Compromised access revoked; no known remaining exposure." }, "evidence": [link("CONTAINMENT-42")] })
}

fn notice() -> Value {
    json!({ "decision": "completed", "output": { "communicationsSummary": "Customer notice published and current." }, "evidence": [link("NOTICE-42")] })
}

/// Round 3 §1a steps 1–10: the three branches complete at 09:25, 09:30 and 09:35.
fn incident_joined() -> Bench {
    let mut bench = incident(fixture("major-incident"));
    activate(&mut bench);
    for (time, lead, step, decision) in [
        ("2026-10-06T09:25:00Z", operations_lead(), "operations", recovery()),
        ("2026-10-06T09:30:00Z", security_lead(), "security", containment()),
        (
            "2026-10-06T09:35:00Z",
            communications_lead(),
            "communications",
            notice(),
        ),
    ] {
        at(&mut bench, time);
        decide(&mut bench, &lead, step, decision);
    }
    bench
}

/// review-round-3.md, §1a Major incident, happy path from start_run to end.
#[test]
fn round3_major_incident_forks_three_branches_joins_and_closes() {
    // 1. The agent starts the run.
    let mut bench = incident(fixture("major-incident"));
    let view = bench.view();
    assert_eq!(view["run"]["mode"], "live");
    assert_eq!(view["run"]["state"], "active");
    assert_eq!(state(&view, "activate"), "ready");
    // 2–3. get_work gives the claim call; the claim.
    let work = bench.work(&agent());
    assert_eq!(
        work[0]["claim"]["arguments"],
        json!({ "runId": "r_1", "stepId": "activate", "requestId": "<new UUID>" })
    );
    let claim = bench.claim(&agent(), "activate").expect("claims");
    assert_eq!(claim["expiresAt"], "2026-10-06T09:10:00Z");
    assert_eq!(claim["mode"], "live");
    assert_eq!(claim["step"]["output"], json!({ "bridge": "string" }));
    assert_eq!(
        claim["data"]["inputs"],
        json!({ "incidentId": "INC-42", "commander": "commander@example.org" })
    );
    assert_eq!(claim["body"], json!(bench.version.process.body()));
    // 4. "No `next` or `reason` is sent: … sending either is refused."
    at(&mut bench, "2026-10-06T09:05:00Z");
    let token = token_of(&claim);
    let error = bench
        .submit(
            &agent(),
            &token,
            json!({ "output": { "bridge": "BRIDGE-42" }, "summary": SUMMARY, "next": "respond", "reason": "x" }),
            Vec::new(),
        )
        .expect_err("single next");
    assert_eq!(error.code, Code::NotAccepted);
    assert_eq!(
        error.issues,
        [
            "next: not accepted; this step has a single next",
            "reason: not accepted; this step has a single next"
        ]
    );
    bench
        .submit(
            &agent(),
            &token,
            json!({ "output": { "bridge": "BRIDGE-42" }, "evidence": [link("BRIDGE-42")], "summary": SUMMARY }),
            Vec::new(),
        )
        .expect("accepted");
    // The trace's first unspecified point: a write returns after the transitions it
    // triggered (revision 4), so the submit's view already has the three work items.
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(
        view["data"]["steps"]["activate"]["output"],
        json!({ "bridge": "BRIDGE-42" })
    );
    assert_eq!(state(&view, "respond"), "waiting");
    for branch in ["operations", "security", "communications"] {
        let step = step_view(&view, branch);
        assert_eq!(
            (step["state"].as_str(), step["due"].as_str(), step["overdue"].as_bool()),
            (Some("waiting"), Some("2026-10-06T10:05:00Z"), Some(false)),
            "{branch}"
        );
    }
    assert_eq!(state(&view, "close_review"), Value::Null);
    assert_eq!(open_items(&bench), ["operations", "security", "communications"]);
    // 5–6. Operations reads and records completion.
    at(&mut bench, "2026-10-06T09:25:00Z");
    let item = read(&bench, "operations");
    assert_eq!(item["kind"], "task");
    assert_eq!(item["text"], "Restore service. Attach the recovery evidence.");
    assert_eq!(item["output"], json!({ "recoverySummary": "string" }));
    assert_eq!(item["evidence"], json!(["link"]));
    assert_eq!(item["next"], Value::Null);
    assert_eq!(item["assignedTo"], json!({ "group": "g_operations-lead" }));
    assert_eq!(item["due"], "2026-10-06T10:05:00Z");
    assert_eq!(item["escalation"], Value::Null);
    let s0 = item["snapshot"].clone();
    decide(&mut bench, &operations_lead(), "operations", recovery());
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(
        view["data"]["steps"]["operations"],
        json!({ "output": { "recoverySummary": "Service restored; recovery checks passed." }, "evidence": [link("RECOVERY-42")],
                "by": "operations@example.org", "at": "2026-10-06T09:25:00Z", "history": [] })
    );
    assert_eq!(state(&view, "operations"), "done");
    assert_eq!(state(&view, "respond"), "waiting");
    assert_eq!(open_items(&bench), ["security", "communications"]);
    // 7–8. Security reads a snapshot that reflects the current read, and completes.
    at(&mut bench, "2026-10-06T09:30:00Z");
    let s1 = read(&bench, "security")["snapshot"].clone();
    assert_ne!(s1, s0);
    assert_eq!(
        bench.view()["data"]["steps"]["operations"]["output"]["recoverySummary"],
        "Service restored; recovery checks passed."
    );
    decide(&mut bench, &security_lead(), "security", containment());
    let view = bench.view();
    assert_eq!(state(&view, "security"), "done");
    assert_eq!(state(&view, "respond"), "waiting");
    assert_eq!(view["data"]["steps"]["security"]["at"], "2026-10-06T09:30:00Z");
    assert_eq!(open_items(&bench), ["communications"]);
    // 9–10. Communications completes; all branches have joined.
    at(&mut bench, "2026-10-06T09:35:00Z");
    decide(&mut bench, &communications_lead(), "communications", notice());
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(state(&view, "respond"), "done");
    assert_eq!(state(&view, "close_review"), "waiting");
    // The trace expected `respond.at`; the parallel step records nothing (revision 4).
    assert!(view["data"]["steps"].get("respond").is_none());
    // 11. The commander reads; `assignedTo` has a person form (revision 4).
    let item = read(&bench, "close_review");
    assert_eq!(item["kind"], "approve");
    assert_eq!(
        (&item["output"], &item["evidence"], &item["next"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(item["assignedTo"], json!({ "person": "commander@example.org" }));
    let s3 = item["snapshot"].clone();
    assert_eq!(read(&bench, "close_review")["snapshot"], s3, "no change, same snapshot");
    // 12. The commander approves.
    at(&mut bench, "2026-10-06T09:40:00Z");
    decide(
        &mut bench,
        &commander(),
        "close_review",
        json!({ "decision": "approved", "snapshot": s3 }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "stabilized");
    assert_eq!(
        view["data"]["steps"]["close_review"],
        json!({ "decision": "approved", "by": "commander@example.org", "at": "2026-10-06T09:40:00Z", "history": [] })
    );
    assert_eq!(view["workItems"], json!([]));
}

/// review-round-3.md, §1b Security reads; operations completes; security decides (and
/// §3b Stale human decision recovers to success, the same calls).
///
/// The retry reuses request id `ib-sec`: "a call that failed is not recorded" is the
/// store's `requestId` record, not the engine's.
#[test]
fn round3_major_incident_a_decision_prepared_before_a_sibling_completed_is_stale_then_retried() {
    let mut bench = incident(fixture("major-incident"));
    activate(&mut bench);
    // 1–2. Security and operations read.
    let b0 = read(&bench, "security")["snapshot"].clone();
    assert_eq!(read(&bench, "operations")["snapshot"], b0);
    let security_item = read(&bench, "security")["id"].clone();
    // 3. Operations completes with b0.
    decide(
        &mut bench,
        &operations_lead(),
        "operations",
        json!({ "decision": "completed", "output": { "recoverySummary": "Service restored; recovery checks passed." },
                "evidence": [link("RECOVERY-42")], "snapshot": b0 }),
    );
    // 4. Security's decision prepared on b0 is stale; it records nothing.
    let decision = json!({ "decision": "completed", "output": { "containmentSummary": "Access revoked; containment verified." },
                           "evidence": [link("CONTAINMENT-42")] });
    let mut stale = decision.clone();
    stale["snapshot"] = b0.clone();
    let before = bench.run.clone();
    assert_eq!(
        try_decide(&mut bench, &security_lead(), "security", stale)
            .expect_err("stale")
            .code,
        Code::Stale
    );
    assert_eq!(bench.run, before);
    assert!(bench.view()["data"]["steps"].get("security").is_none());
    // 5. Security reads again: its item is still open, with a current snapshot.
    let item = read(&bench, "security");
    assert_eq!(item["id"], security_item);
    let b1 = item["snapshot"].clone();
    assert_ne!(b1, b0);
    // "If communications completes between calls 5 and 6, call 6 returns stale again":
    // the profile no longer says "refused once" (revision 4).
    let mut again = bench.clone();
    decide(&mut again, &communications_lead(), "communications", notice());
    let mut late = decision.clone();
    late["snapshot"] = b1.clone();
    assert_eq!(
        try_decide(&mut again, &security_lead(), "security", late)
            .expect_err("stale again")
            .code,
        Code::Stale
    );
    decide(&mut again, &security_lead(), "security", decision.clone());
    assert_eq!(state(&again.view(), "security"), "done");
    // 6. With nothing changed since the read, the same decision on b1 is accepted.
    let mut retry = decision;
    retry["snapshot"] = b1;
    decide(&mut bench, &security_lead(), "security", retry);
    let view = bench.view();
    assert_eq!(state(&view, "security"), "done");
    assert_eq!(
        view["data"]["steps"]["security"]["output"],
        json!({ "containmentSummary": "Access revoked; containment verified." })
    );
    assert_eq!(open_items(&bench), ["communications"]);
}

/// review-round-3.md, §1c: "The baseline process cannot have the stated communications
/// claim": an agent's claim of a person task is `forbidden`.
#[test]
fn round3_major_incident_an_agent_cannot_claim_the_communications_task() {
    let mut bench = incident(fixture("major-incident"));
    activate(&mut bench);
    let error = bench.claim(&agent(), "communications").expect_err("a person task");
    assert_eq!(error.code, Code::Forbidden);
    assert_eq!(state(&bench.view(), "communications"), "waiting");
}

/// Round 3 §1c's "separately published incident variant": the `major-incident` fixture
/// with communications done by an agent, named as the trace's `get_work` filter names it.
fn incident_with_agent_communications() -> agentprocess_engine::ProcessVersion {
    let path = shared().join("conformance/fixtures/major-incident/PROCESS.md");
    let source = std::fs::read_to_string(&path).expect("the fixture");
    let variant = source
        .replace("name: major-incident\n", "name: major-incident-agent-comms\n")
        .replace(
            "    person: communications-lead\n    task: Publish the customer notice and keep it updated.\n",
            "    agent: Publish the customer notice, record its status, and attach the notice reference.\n",
        );
    assert_eq!(variant.matches("agent-comms").count(), 1);
    assert!(variant.contains("    agent: Publish the customer notice"));
    version_of(&variant)
}

/// The variant after activation, with the communications step claimed by the agent at
/// 09:10 and security's snapshot read before it; returns the token and that snapshot.
fn incident_with_a_claim(bench: &mut Bench) -> (String, Value) {
    activate(bench);
    let security_snapshot = read(bench, "security")["snapshot"].clone();
    at(bench, "2026-10-06T09:10:00Z");
    let work = bench.work(&agent());
    assert_eq!(work.len(), 1);
    assert_eq!(
        work[0]["claim"]["arguments"],
        json!({ "runId": "r_1", "stepId": "communications", "requestId": "<new UUID>" })
    );
    let claim = bench.claim(&agent(), "communications").expect("claims");
    assert_eq!(claim["expiresAt"], "2026-10-06T09:20:00Z");
    assert_eq!(claim["step"]["output"], json!({ "communicationsSummary": "string" }));
    assert_eq!(claim["step"]["evidence"], json!(["link"]));
    let view = bench.view();
    assert_eq!(state(&view, "communications"), "claimed");
    assert_eq!(view["run"]["state"], "active");
    (token_of(&claim), security_snapshot)
}

/// review-round-3.md, §1c Operations fails while security is working and communications
/// has an agent claim.
#[test]
fn round3_major_incident_a_failed_branch_ends_the_run_and_cancels_every_sibling() {
    let mut bench = incident(incident_with_agent_communications());
    let (token, c0) = incident_with_a_claim(&mut bench);
    let security_item = read(&bench, "security")["id"].clone();
    // 3–4. Operations reads and decides `failed`.
    at(&mut bench, "2026-10-06T09:15:00Z");
    let note = "Recovery cannot proceed because the production data copy is unusable.";
    decide(
        &mut bench,
        &operations_lead(),
        "operations",
        json!({ "decision": "failed", "note": note }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "failed");
    for step in ["respond", "security", "communications"] {
        assert_eq!(state(&view, step), "cancelled", "{step}");
    }
    assert_eq!(state(&view, "activate"), "done");
    assert_eq!(state(&view, "close_review"), Value::Null);
    assert_eq!(view["workItems"], json!([]));
    // The trace's first unspecified point: the deciding step is `failed` with its note in
    // run data, and the run records `ended` (revision 4).
    assert_eq!(state(&view, "operations"), "failed");
    assert_eq!(
        view["data"]["steps"]["operations"],
        json!({ "decision": "failed", "note": note, "by": "operations@example.org", "at": "2026-10-06T09:15:00Z", "history": [] })
    );
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "operations@example.org", "at": "2026-10-06T09:15:00Z", "note": note })
    );
    assert_eq!(view["data"]["steps"]["activate"]["output"]["bridge"], "BRIDGE-42");
    // Every participant's next write: `conflict` `run_ended`, checked first (revision 4).
    let late_security = json!({ "workItemId": security_item, "snapshot": c0, "decision": "completed",
                                "output": { "containmentSummary": "Containment completed." }, "evidence": [link("CONTAINMENT-MIX")] });
    assert_eq!(
        code(bench.decide(&security_lead(), late_security).expect_err("ended")),
        run_ended()
    );
    let late_notice = json!({ "output": { "communicationsSummary": "Notice published." }, "evidence": [link("NOTICE-MIX")], "summary": SUMMARY });
    assert_eq!(
        code(
            bench
                .submit(&agent(), &token, late_notice, Vec::new())
                .expect_err("ended")
        ),
        run_ended()
    );
    assert!(bench.work(&agent()).is_empty());
    assert!(bench.work(&security_lead()).is_empty());
    assert!(bench.work(&commander()).is_empty());
}

/// review-round-3.md, §1d Commander rejects close_review back to respond.
#[test]
fn round3_major_incident_rejecting_close_review_reruns_every_branch_with_history() {
    let mut bench = incident_joined();
    let earlier: Vec<Value> = bench.view()["workItems"].as_array().expect("items").clone();
    at(&mut bench, "2026-10-06T09:45:00Z");
    let note = "Recheck the restored replica, confirm rotated credentials, and correct the customer notice.";
    decide(
        &mut bench,
        &commander(),
        "close_review",
        json!({ "decision": "rejected", "note": note }),
    );
    let view = bench.view();
    assert_eq!(state(&view, "respond"), "waiting");
    assert_eq!(state(&view, "activate"), "done");
    let steps = &view["data"]["steps"];
    assert_eq!(steps["activate"]["output"]["bridge"], "BRIDGE-42");
    let history = [
        (
            "operations",
            recovery(),
            "operations@example.org",
            "2026-10-06T09:25:00Z",
        ),
        (
            "security",
            containment(),
            "security@example.org",
            "2026-10-06T09:30:00Z",
        ),
        (
            "communications",
            notice(),
            "communications@example.org",
            "2026-10-06T09:35:00Z",
        ),
    ];
    for (branch, decision, by, when) in history {
        let entry = step_view(&view, branch);
        assert_eq!(
            (entry["state"].as_str(), entry["due"].as_str()),
            (Some("waiting"), Some("2026-10-06T10:45:00Z")),
            "{branch}: a fresh due from the re-fork"
        );
        assert!(steps[branch].get("output").is_none(), "{branch} has no current output");
        assert_eq!(
            steps[branch]["history"],
            json!([{ "output": decision["output"], "evidence": decision["evidence"], "by": by, "at": when }]),
            "{branch}"
        );
    }
    // The trace's first inconsistent point: the rejecting approval keeps its note current
    // and shows `null` until reached again (revision 4).
    assert_eq!(state(&view, "close_review"), Value::Null);
    assert_eq!(
        steps["close_review"],
        json!({ "decision": "rejected", "note": note, "by": "commander@example.org", "at": "2026-10-06T09:45:00Z", "history": [] })
    );
    // The trace asked what becomes of `respond.at`: the parallel step records nothing (revision 4).
    assert!(steps.get("respond").is_none());
    assert_eq!(open_items(&bench), ["operations", "security", "communications"]);
    let ids: Vec<Value> = view["workItems"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["id"].clone())
        .collect();
    for item in &earlier {
        assert!(!ids.contains(&item["id"]), "a new work item for every branch");
    }
}

/// review-round-3.md, §3d Operator cancels with an agent claim and an open human item.
#[test]
fn round3_major_incident_cancel_with_a_claim_and_an_open_item() {
    let mut bench = incident(incident_with_agent_communications());
    let (token, z0) = incident_with_a_claim(&mut bench);
    let security_item = read(&bench, "security")["id"].clone();
    let reason = "Incident handling moved to the disaster-recovery process.";
    bench.cancel(&operator(), reason).expect("cancelled");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "cancelled");
    // `outcome: "cancelled"` is not promised: the outcome stays null.
    assert_eq!(view["run"]["outcome"], Value::Null);
    // The trace found no place for the reason; it is `run.ended.note` (revision 4).
    assert_eq!(
        view["run"]["ended"],
        json!({ "by": "ops@example.com", "at": "2026-10-06T09:10:00Z", "note": reason })
    );
    for step in ["respond", "operations", "security", "communications"] {
        assert_eq!(state(&view, step), "cancelled", "{step}");
    }
    assert_eq!(state(&view, "activate"), "done");
    assert_eq!(view["workItems"], json!([]));
    // The late writes: `conflict` `run_ended` (revision 4), the trace's undefined errors.
    let late_notice = json!({ "output": { "communicationsSummary": "Notice published." }, "evidence": [link("NOTICE-CANCEL")], "summary": SUMMARY });
    assert_eq!(
        code(
            bench
                .submit(&agent(), &token, late_notice, Vec::new())
                .expect_err("ended")
        ),
        run_ended()
    );
    let late_security = json!({ "workItemId": security_item, "snapshot": z0, "decision": "completed",
                                "output": { "containmentSummary": "Containment completed." }, "evidence": [link("CONTAINMENT-CANCEL")] });
    assert_eq!(
        code(bench.decide(&security_lead(), late_security).expect_err("ended")),
        run_ended()
    );
    assert!(bench.work(&agent()).is_empty());
    assert_eq!(
        code(bench.cancel(&operator(), "Again.").expect_err("ended")),
        run_ended()
    );
}

/// review-round-3.md, §2a Expense reimbursement: receipts and manager approval, with
/// people restricted to `get_run` and `decide`.
#[test]
fn round3_expense_reimbursement_receipts_need_a_file_then_the_manager_approves() {
    let employee = named("employee@example.org");
    let mut bench = Bench::start(
        version_of(&review_process(
            3,
            "### 2a. Expense reimbursement: receipts and manager approval",
        )),
        &employee,
        inputs(
            json!({ "amount": 45, "currency": "USD", "purpose": "Taxi to customer workshop", "manager": "manager@example.org" }),
        ),
    );
    // The employee's first read.
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(view["data"]["steps"], json!({}));
    let item = read(&bench, "receipts");
    assert_eq!(item["kind"], "task");
    assert_eq!(
        item["text"],
        "Describe the expense and attach the receipt files supporting the amount and purpose."
    );
    assert_eq!(item["output"], json!({ "expenseSummary": "string" }));
    assert_eq!(item["evidence"], json!(["file"]));
    assert_eq!((&item["next"], &item["escalation"]), (&Value::Null, &Value::Null));
    assert_eq!(item["assignedTo"], json!({ "person": "employee@example.org" }));
    // "No tool-result field contains a decide recipe": work items carry it (revision 4).
    assert_eq!(
        item["decide"],
        json!({ "tool": "decide", "arguments": { "runId": "r_1", "workItemId": item["id"], "snapshot": item["snapshot"], "requestId": "<new UUID>" },
                "decisions": ["completed", "failed"] })
    );
    // The attempted call without a receipt id: `not_accepted`, nothing changes.
    let before = bench.run.clone();
    let error = try_decide(
        &mut bench,
        &employee,
        "receipts",
        json!({ "decision": "completed", "output": { "expenseSummary": "Taxi to customer workshop" }, "evidence": [] }),
    )
    .expect_err("no file");
    assert_eq!(
        code(error),
        (Code::NotAccepted, vec!["evidence: file required".to_owned()])
    );
    assert_eq!(bench.run, before);
    assert_eq!(open_items(&bench), ["receipts"]);
    // The manager's play, conditional on an upload outside the two tools (`upload` is the
    // store's; so is the short-lived `url` beside `sha256`).
    decide(
        &mut bench,
        &employee,
        "receipts",
        json!({ "decision": "completed", "output": { "expenseSummary": "Taxi to customer workshop" },
                "evidence": [file("f_receipt", "illustrative-hash")] }),
    );
    let view = bench.view();
    assert_eq!(
        view["data"]["steps"]["receipts"]["evidence"],
        json!([{ "kind": "file", "ref": "f_receipt", "sha256": "illustrative-hash" }])
    );
    let item = read(&bench, "manager_review");
    assert_eq!(item["kind"], "approve");
    assert_eq!(
        (&item["output"], &item["evidence"], &item["next"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(item["decide"]["decisions"], json!(["approved", "rejected", "failed"]));
    decide(
        &mut bench,
        &named("manager@example.org"),
        "manager_review",
        json!({ "decision": "approved" }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "approved");
    assert_eq!(view["data"]["steps"]["manager_review"]["decision"], "approved");
    assert_eq!(view["workItems"], json!([]));
}

/// review-round-3.md, §2b Contract review: legal, finance, signature.
#[test]
fn round3_contract_review_legal_finance_and_the_signature() {
    let mut bench = Bench::start(
        version_of(&review_process(3, "### 2b. Contract review: legal, finance, signature")),
        &agent(),
        inputs(json!({ "contractRef": "CONTRACT-77", "amount": 12000, "currency": "USD" })),
    );
    let legal = member("legal@example.org", "legal");
    let item = read(&bench, "legal_review");
    assert_eq!(item["kind"], "approve");
    assert_eq!(
        item["text"],
        "Read the contract at inputs.contractRef and approve its legal terms before it goes to finance."
    );
    assert_eq!(
        (&item["output"], &item["evidence"], &item["next"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(item["assignedTo"], json!({ "group": "g_legal" }));
    // "If any approver instead declines": `rejected` needs a note, and with no
    // `on_reject` the run ends `rejected`.
    let mut declined = bench.clone();
    assert_eq!(
        code(
            try_decide(&mut declined, &legal, "legal_review", json!({ "decision": "rejected" })).expect_err("no note")
        ),
        (Code::Invalid, vec!["note: required with rejected".to_owned()])
    );
    decide(
        &mut declined,
        &legal,
        "legal_review",
        json!({ "decision": "rejected", "note": "The indemnity clause is unacceptable." }),
    );
    assert_eq!(declined.view()["run"]["outcome"], "rejected");
    // The three decisions.
    decide(&mut bench, &legal, "legal_review", json!({ "decision": "approved" }));
    let view = bench.view();
    assert_eq!(view["data"]["steps"]["legal_review"]["decision"], "approved");
    assert_eq!(view["data"]["steps"]["legal_review"]["by"], "legal@example.org");
    assert_eq!(
        read(&bench, "finance_review")["assignedTo"],
        json!({ "group": "g_finance" })
    );
    decide(
        &mut bench,
        &member("finance@example.org", "finance"),
        "finance_review",
        json!({ "decision": "approved" }),
    );
    let item = read(&bench, "signature");
    assert_eq!(item["kind"], "task");
    assert_eq!(item["output"], json!({ "signedContractRef": "string" }));
    assert_eq!(item["evidence"], json!(["link"]));
    assert_eq!(item["assignedTo"], json!({ "group": "g_signer" }));
    decide(
        &mut bench,
        &member("signer@example.org", "signer"),
        "signature",
        json!({ "decision": "completed", "output": { "signedContractRef": "SIGNED-77" }, "evidence": [link("SIGNED-77")] }),
    );
    let view = bench.view();
    assert_eq!(view["run"]["state"], "ended");
    assert_eq!(view["run"]["outcome"], "executed");
    assert_eq!(
        view["data"]["steps"]["signature"]["output"],
        json!({ "signedContractRef": "SIGNED-77" })
    );
    assert_eq!(
        view["data"]["steps"]["signature"]["evidence"],
        json!([link("SIGNED-77")])
    );
    assert_eq!(view["workItems"], json!([]));
}

/// review-round-3.md, §3c Two same-name events before readiness; a third after
/// consumption.
///
/// Not replayed: replaying `ev-one` after consumption, which is the store's `requestId`
/// record.
#[test]
fn round3_event_review_held_events_are_consumed_oldest_first_and_a_late_one_is_held() {
    let mut bench = Bench::start(
        version_of(&review_process(
            3,
            "### 3c. Two same-name events before readiness; a third after consumption",
        )),
        &agent(),
        Map::new(),
    );
    let token = bench.token(&agent(), "prepare");
    for delivery in [1, 2] {
        let consumed = bench
            .send_event(&agent(), "proof_received", json!({ "delivery": delivery }))
            .expect("held");
        assert_eq!(consumed, None);
    }
    // `submit` with `output: {}` only: `summary` is required since revision 5.
    bench
        .submit(
            &agent(),
            &token,
            json!({ "output": {}, "summary": SUMMARY }),
            Vec::new(),
        )
        .expect("accepted");
    let view = bench.view();
    assert_eq!(view["run"]["state"], "waiting");
    assert_eq!(view["data"]["steps"]["proof"]["output"], json!({ "delivery": 1 }));
    assert_eq!(view["data"]["steps"]["proof"]["by"], "a_screener");
    assert_eq!(state(&view, "proof"), "done");
    assert_eq!(state(&view, "review"), "waiting");
    assert_eq!(read(&bench, "review")["kind"], "approve");
    // The trace's first unspecified point: an event with no wait, now or later, is held
    // until the run ends (revision 4).
    let consumed = bench
        .send_event(&agent(), "proof_received", json!({ "delivery": 3 }))
        .expect("held");
    assert_eq!(consumed, None);
    let held: Vec<&Value> = bench.run.events.iter().map(|event| &event.data["delivery"]).collect();
    assert_eq!(held, [&json!(2), &json!(3)]);
    assert_eq!(
        bench.view()["data"]["steps"]["proof"]["output"],
        json!({ "delivery": 1 })
    );
    decide(
        &mut bench,
        &member("reviewer@example.org", "reviewer"),
        "review",
        json!({ "decision": "approved" }),
    );
    assert_eq!(bench.view()["run"]["outcome"], "reviewed");
    assert!(bench.run.events.is_empty(), "held events are discarded at the end");
}

/// review-round-3.md, §3e Agent first step, later initiator task, started by an agent.
#[test]
fn round3_initiator_check_an_agent_cannot_start_a_process_with_an_initiator_step() {
    let version = version_of(&review_process(
        3,
        "### 3e. Agent first step, later initiator task, started by an agent",
    ));
    let error = start_as(&version, &agent(), Map::new(), Mode::Live).expect_err("refused at start");
    assert_eq!(
        code(error),
        (
            Code::Invalid,
            vec!["steps.confirm.person: initiator needs a run started by a person".to_owned()]
        )
    );
    // The same process started by a person runs; the refusal is about who starts it.
    let started = start_as(&version, &named("mira@example.com"), Map::new(), Mode::Live).expect("a person starts it");
    assert_eq!(started.run.initiator.as_deref(), Some("mira@example.com"));
}

// Round 3, not replayed:
// - §3a Submission succeeds, response is lost, lease expires, same requestId is
//   retried: the original result comes from the store's `requestId` record (revision 3).
// - §3b is §1b's calls; the §1b test replays them.
// - The `describe`/`list_processes` discovery and the humans' out-of-band run-id handoff
//   (Task 2) are not engine calls.
