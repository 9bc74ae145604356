//! A test bench: fixtures as process versions, a counting id source, a fixed clock,
//! sample inputs, and the official schemas.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use agentprocess_engine::{
    Actor, Context, Ids, Mode, ProcessVersion, Settings, StartRun, ToolError, Transition, start,
};
use agentprocess_format::{Field, FieldType, Options, validate};
use jiff::Timestamp;
use serde_json::{Map, Value, json};

/// `../shared/agentprocess` beside the repository.
pub(crate) fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agentprocess")
}

/// The time every scenario starts at.
pub(crate) fn t0() -> Timestamp {
    "2026-10-06T09:00:00Z".parse().expect("a timestamp")
}

/// Ids that count: `w_1`, `w_2`, … and `tok_1`, …
#[derive(Clone, Default)]
pub(crate) struct Counter {
    work_items: u32,
    tokens: u32,
}

impl Ids for Counter {
    fn work_item(&mut self) -> String {
        self.work_items += 1;
        format!("w_{}", self.work_items)
    }

    fn token(&mut self) -> String {
        self.tokens += 1;
        format!("tok_{}", self.tokens)
    }
}

/// Every role bound to the group `g_<role>`.
pub(crate) fn version_of(source: &str) -> ProcessVersion {
    let process = validate(source.as_bytes(), &Options::default()).unwrap_or_else(|refusal| panic!("{refusal}"));
    let roles: BTreeMap<String, String> = process
        .document()
        .roles()
        .into_iter()
        .map(|role| (role.to_owned(), format!("g_{role}")))
        .collect();
    ProcessVersion {
        number: 1,
        process,
        roles,
        agents: agentprocess_engine::AgentBindings::default(),
    }
}

/// A conformance fixture as version 1.
pub(crate) fn fixture(name: &str) -> ProcessVersion {
    let path = shared().join("conformance/fixtures").join(name).join("PROCESS.md");
    version_of(&std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display())))
}

/// Every fixture name.
pub(crate) fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(shared().join("conformance/fixtures"))
        .expect("fixtures")
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A person in the groups of every role of `version`.
pub(crate) fn person(version: &ProcessVersion) -> Actor {
    Actor::Person {
        person: "mira@example.com".to_owned(),
        groups: version.roles.values().cloned().collect(),
        operator: false,
    }
}

/// An agent.
pub(crate) fn agent() -> Actor {
    Actor::Agent {
        id: "a_screener".to_owned(),
        groups: Vec::new(),
    }
}

/// A value of the field's type, the first of `one_of` when it has one.
pub(crate) fn sample(field: &Field) -> Value {
    if let Some(first) = field.one_of.as_ref().and_then(|values| values.first()) {
        return first.clone();
    }
    match field.ty {
        FieldType::String => json!("sample"),
        FieldType::Number => json!(1080.5),
        FieldType::Boolean => json!(true),
        FieldType::Date => json!("2026-10-06"),
        FieldType::Datetime => json!("2026-10-20T09:00:00Z"),
        FieldType::List => json!([]),
        FieldType::Object => json!({}),
        FieldType::Person => json!("dana@example.com"),
    }
}

/// Inputs for every declared input.
pub(crate) fn sample_inputs(version: &ProcessVersion) -> Map<String, Value> {
    version
        .process
        .document()
        .inputs
        .0
        .iter()
        .map(|(name, field)| (name.clone(), sample(field)))
        .collect()
}

/// Starts a run as `actor` at `t0`.
pub(crate) fn start_as(
    version: &ProcessVersion,
    actor: &Actor,
    inputs: Map<String, Value>,
    mode: Mode,
) -> Result<Transition, ToolError> {
    start_with(version, actor, inputs, mode, &mut Counter::default())
}

/// A fixture started by a person in its roles' groups, with sample inputs: the
/// version, the transition, and the run view at `t0`.
pub(crate) fn started_fixture(name: &str, mode: Mode) -> (ProcessVersion, Transition, Value) {
    let version = fixture(name);
    let transition = start_as(&version, &person(&version), sample_inputs(&version), mode)
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    let view = run_view(&transition.run, &version, t0());
    (version, transition, view)
}

fn start_with(
    version: &ProcessVersion,
    actor: &Actor,
    inputs: Map<String, Value>,
    mode: Mode,
    ids: &mut Counter,
) -> Result<Transition, ToolError> {
    let settings = Settings::default();
    let mut context = Context {
        now: t0(),
        actor,
        ids,
        settings: &settings,
    };
    checked(start(
        version,
        StartRun {
            id: "r_1".to_owned(),
            inputs,
            mode,
        },
        &mut context,
    ))
}

/// A view as the wire shows it, numbers as held.
pub(crate) fn as_json(view: &impl serde::Serialize) -> Value {
    agentprocess_format::exact::to_value(view).expect("a view serializes")
}

/// The run view of `run` at `now`, as JSON.
pub(crate) fn run_view(run: &agentprocess_engine::Run, version: &ProcessVersion, now: Timestamp) -> Value {
    as_json(&agentprocess_views::RunView::of(run, version, now))
}

fn compile(name: &str) -> jsonschema::Validator {
    let path = shared().join("schemas/core-2").join(name);
    let schema: Value = serde_json::from_slice(&std::fs::read(&path).expect("schema")).expect("JSON");
    jsonschema::draft202012::new(&schema).expect("a valid schema")
}

/// The official schemas, compiled once.
fn contract() -> &'static agentprocess_contract::Contract {
    static CONTRACT: OnceLock<agentprocess_contract::Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        agentprocess_contract::Contract::load(&shared().join("schemas/core-2")).expect("the official schemas load")
    })
}

/// Asserts that `data` meets the official `<tool>.result.json`.
#[track_caller]
pub(crate) fn assert_result(tool: &str, data: &Value) {
    let errors = contract().check_data(tool, data);
    assert!(
        errors.is_empty(),
        "{tool} result breaks {tool}.result.json: {errors:?}\n{data:#}"
    );
}

/// Asserts that `view` meets the official `run-view.json` and `get_run.result.json`
/// (the result of every tool that returns the run view), and each of its work items
/// `work-item.json`.
#[track_caller]
pub(crate) fn assert_valid_view(view: &Value) {
    assert_result("get_run", view);
    static RUN_VIEW: OnceLock<jsonschema::Validator> = OnceLock::new();
    let run_view = RUN_VIEW.get_or_init(|| compile("run-view.json"));
    let errors: Vec<String> = run_view
        .iter_errors(view)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "run view breaks run-view.json: {errors:?}\n{view:#}");
    for item in view["workItems"].as_array().expect("workItems") {
        assert_valid_work_item(item);
    }
}

/// Passes a result through, asserting that an error, written as the protocol writes
/// it (`{ code, message, issues? }`), meets the official `tool-error.json`.
#[track_caller]
pub(crate) fn checked<T>(result: Result<T, ToolError>) -> Result<T, ToolError> {
    if let Err(error) = &result {
        let mut wire = json!({ "code": error.code.as_str(), "message": error.message });
        if !error.issues.is_empty() {
            wire["issues"] = json!(error.issues);
        }
        let errors = contract().check_error(&wire);
        assert!(errors.is_empty(), "error breaks tool-error.json: {errors:?}\n{wire:#}");
        assert!(!error.message.is_empty(), "an error without a message");
    }
    result
}

/// Asserts that `item` meets the official `work-item.json`.
#[track_caller]
pub(crate) fn assert_valid_work_item(item: &Value) {
    static WORK_ITEM: OnceLock<jsonschema::Validator> = OnceLock::new();
    let work_item = WORK_ITEM.get_or_init(|| compile("work-item.json"));
    let errors: Vec<String> = work_item.iter_errors(item).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "work item breaks work-item.json: {errors:?}\n{item:#}"
    );
}

/// A run under test, with its own clock, ids and settings. Every call applies its
/// transition and checks the run view against the schemas.
#[derive(Clone)]
pub(crate) struct Bench {
    pub(crate) version: ProcessVersion,
    pub(crate) run: agentprocess_engine::Run,
    pub(crate) now: Timestamp,
    pub(crate) settings: Settings,
    ids: Counter,
    /// How the test evaluator answers a check's questions (`None`: it does not).
    pub(crate) evaluator: Option<Rule>,
    /// What the evaluator was last shown.
    pub(crate) shown: Option<agentprocess_engine::Material>,
}

/// The bench's test evaluator, by the rules of the server's test double: pass unless
/// the submission's summary says `[fail]`, `[unsure]` or `[error]` (no answer).
pub(crate) fn by_summary(
    material: &agentprocess_engine::Material,
    question: &agentprocess_format::Question,
) -> Option<agentprocess_engine::Answer> {
    use agentprocess_engine::Answer;
    use agentprocess_format::QuestionKind;
    let summary = material.submission["summary"].as_str().unwrap_or_default();
    if summary.contains("[error]") {
        return None;
    }
    let fail = summary.contains("[fail]");
    let unsure = summary.contains("[unsure]");
    Some(match &question.kind {
        QuestionKind::YesNo { .. } => Answer::YesNo {
            yes: if fail {
                0.1
            } else if unsure {
                0.7
            } else {
                0.97
            },
        },
        QuestionKind::Choice { answers, .. } => {
            let index = if fail {
                1
            } else if unsure {
                answers.len() - 1
            } else {
                0
            };
            Answer::Choice {
                name: answers[index].0.clone(),
                confidence: if fail || unsure { 0.9 } else { 0.95 },
            }
        }
        QuestionKind::Rubric { levels, .. } => Answer::Rubric {
            level: if fail { 0 } else { levels.len() - 1 },
            confidence: if unsure {
                0.5
            } else if fail {
                0.9
            } else {
                0.95
            },
        },
    })
}

/// A test evaluator: the answer to one question about one material, or none.
pub(crate) type Rule =
    fn(&agentprocess_engine::Material, &agentprocess_format::Question) -> Option<agentprocess_engine::Answer>;

impl Bench {
    /// Starts a run of `version` as `actor` at `t0`.
    pub(crate) fn start(version: ProcessVersion, actor: &Actor, inputs: Map<String, Value>) -> Self {
        let mut ids = Counter::default();
        let transition =
            start_with(&version, actor, inputs, Mode::Live, &mut ids).unwrap_or_else(|error| panic!("{error}"));
        let bench = Self {
            version,
            run: transition.run,
            now: t0(),
            settings: Settings::default(),
            ids,
            evaluator: Some(by_summary),
            shown: None,
        };
        bench.view();
        bench
    }

    /// Moves the clock on by `seconds`.
    pub(crate) fn wait(&mut self, seconds: i64) {
        self.now = self
            .now
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .expect("a time");
    }

    /// The run view now, checked against the schemas.
    pub(crate) fn view(&self) -> Value {
        let view = run_view(&self.run, &self.version, self.now);
        assert_valid_view(&view);
        // The snapshot hashes the engine's run data: the view must show exactly that.
        assert_eq!(
            view["data"],
            agentprocess_engine::run_data(&self.run),
            "the view's data is the run data"
        );
        view
    }

    fn context<'a>(
        &'a mut self,
        actor: &'a Actor,
    ) -> (Context<'a>, &'a mut agentprocess_engine::Run, &'a ProcessVersion) {
        let context = Context {
            now: self.now,
            actor,
            ids: &mut self.ids,
            settings: &self.settings,
        };
        (context, &mut self.run, &self.version)
    }

    /// `claim`; returns the claim result.
    pub(crate) fn claim(&mut self, actor: &Actor, step: &str) -> Result<Value, ToolError> {
        let (mut context, run, version) = self.context(actor);
        let claimed = checked(agentprocess_engine::claim(run, version, step, &mut context))?;
        let result = as_json(&agentprocess_views::ClaimResult::of(&claimed, version));
        *run = claimed.transition.run;
        assert_result("claim", &result);
        Ok(result)
    }

    /// `claim` that must succeed; returns the token.
    pub(crate) fn token(&mut self, actor: &Actor, step: &str) -> String {
        let result = self
            .claim(actor, step)
            .unwrap_or_else(|error| panic!("claim {step}: {error}"));
        result["token"].as_str().expect("a token").to_owned()
    }

    /// `renew`; returns `{ token, expiresAt }`.
    pub(crate) fn renew(&mut self, actor: &Actor, token: &str, progress: Option<&str>) -> Result<Value, ToolError> {
        let (mut context, run, _) = self.context(actor);
        let (transition, renewed) = checked(agentprocess_engine::renew(
            run,
            token,
            progress.map(str::to_owned),
            &mut context,
        ))?;
        let result = as_json(&agentprocess_views::RenewResult::from(renewed));
        *run = transition.run;
        assert_result("renew", &result);
        Ok(result)
    }

    /// `submit`; returns the effects. A refusal keeps its handoff, as the server does.
    pub(crate) fn submit(
        &mut self,
        actor: &Actor,
        token: &str,
        submission: Value,
        file_issues: Vec<String>,
    ) -> Result<Vec<agentprocess_engine::Effect>, ToolError> {
        let mut answers = None;
        loop {
            let (mut context, run, version) = self.context(actor);
            let submitted = checked(agentprocess_engine::submit(
                run,
                version,
                token,
                submission_of(&submission),
                file_issues.clone(),
                answers.as_ref(),
                &mut context,
            ))?;
            match self.apply(submitted) {
                Ok(effects) => return effects,
                Err(material) => answers = Some(self.ask(&material)),
            }
        }
    }

    /// What the test evaluator answers about `material`, as the server asks: every
    /// question on its own.
    pub(crate) fn ask(&mut self, material: &agentprocess_engine::Material) -> agentprocess_engine::Checked {
        self.shown = Some(material.clone());
        let answers = self.evaluator.and_then(|rule| {
            material
                .questions
                .iter()
                .map(|question| rule(material, question))
                .collect::<Option<Vec<_>>>()
        });
        agentprocess_engine::Checked {
            model: "test-rule".to_owned(),
            seen: material.seen(),
            truncated: material.truncated,
            answers,
        }
    }

    /// Applies a submission's outcome; the material when the evaluator must be asked.
    #[allow(clippy::type_complexity)]
    fn apply(
        &mut self,
        submitted: agentprocess_engine::Submitted,
    ) -> Result<Result<Vec<agentprocess_engine::Effect>, ToolError>, Box<agentprocess_engine::Material>> {
        match submitted {
            agentprocess_engine::Submitted::Accepted(transition) => {
                self.run = transition.run;
                self.view();
                Ok(Ok(transition.effects))
            }
            agentprocess_engine::Submitted::NotAccepted { run: kept, error } => {
                self.run = kept;
                Ok(checked(Err(error)))
            }
            agentprocess_engine::Submitted::Check(material) => Err(material),
        }
    }

    /// `escalate`.
    pub(crate) fn escalate(&mut self, actor: &Actor, token: &str, note: &str) -> Result<(), ToolError> {
        let (mut context, run, version) = self.context(actor);
        let transition = checked(agentprocess_engine::escalate(run, version, token, note, &mut context))?;
        *run = transition.run;
        Ok(())
    }
}

/// A submission from its JSON arguments.
pub(crate) fn submission_of(value: &Value) -> agentprocess_engine::Submission {
    use agentprocess_engine::{EvidenceItem, Submission};
    use agentprocess_format::EvidenceKind;
    let evidence = value["evidence"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| EvidenceItem {
                    kind: if item["kind"] == "file" {
                        EvidenceKind::File
                    } else {
                        EvidenceKind::Link
                    },
                    reference: item["ref"].as_str().unwrap_or_default().to_owned(),
                    sha256: item["sha256"].as_str().map(str::to_owned),
                })
                .collect()
        })
        .unwrap_or_default();
    let text = |key: &str| value[key].as_str().map(str::to_owned);
    Submission {
        output: value["output"].as_object().cloned().unwrap_or_default(),
        evidence,
        summary: text("summary"),
        next: text("next"),
        reason: text("reason"),
    }
}

impl Bench {
    /// `decide` with tools.md's arguments as JSON; `snapshot` defaults to the current one.
    pub(crate) fn decide(&mut self, actor: &Actor, arguments: Value) -> Result<(), ToolError> {
        use agentprocess_engine::{Decide, Decision};
        let decision = match arguments["decision"].as_str() {
            Some("completed") => Decision::Completed,
            Some("approved") => Decision::Approved,
            Some("rejected") => Decision::Rejected,
            Some("returned") => Decision::Returned,
            _ => Decision::Failed,
        };
        let snapshot = arguments["snapshot"]
            .as_str()
            .map_or_else(|| agentprocess_engine::snapshot(&self.run), str::to_owned);
        let decide = Decide {
            work_item: arguments["workItemId"].as_str().unwrap_or_default().to_owned(),
            snapshot,
            decision,
            submission: submission_of(&arguments),
            sent_work: ["output", "evidence", "summary"]
                .iter()
                .any(|key| arguments.get(key).is_some()),
            note: arguments["note"].as_str().map(str::to_owned),
        };
        let mut answers = None;
        loop {
            let (mut context, run, version) = self.context(actor);
            let submitted = checked(agentprocess_engine::decide(
                run,
                version,
                decide.clone(),
                Vec::new(),
                answers.as_ref(),
                &mut context,
            ))?;
            match self.apply(submitted) {
                Ok(effects) => return effects.map(drop),
                Err(material) => answers = Some(self.ask(&material)),
            }
        }
    }

    /// `cancel`.
    pub(crate) fn cancel(&mut self, actor: &Actor, reason: &str) -> Result<(), ToolError> {
        let (mut context, run, version) = self.context(actor);
        let transition = checked(agentprocess_engine::cancel(run, version, reason, &mut context))?;
        *run = transition.run;
        Ok(())
    }

    /// `send_event`; returns `consumedBy`.
    pub(crate) fn send_event(&mut self, actor: &Actor, name: &str, data: Value) -> Result<Option<String>, ToolError> {
        let data = data.as_object().cloned().unwrap_or_default();
        let (mut context, run, version) = self.context(actor);
        let (transition, consumed) = checked(agentprocess_engine::send_event(run, version, name, data, &mut context))?;
        *run = transition.run;
        assert_result("send_event", &json!({ "consumedBy": consumed }));
        Ok(consumed)
    }

    /// The scheduler fires timer `id` now; returns the effects.
    pub(crate) fn fire(&mut self, id: &str) -> Vec<agentprocess_engine::Effect> {
        let transition = agentprocess_engine::timer_fired(&self.run, &self.version, id, self.now, &mut self.ids);
        self.run = transition.run;
        self.view();
        transition.effects
    }

    /// A person who may decide the open work item of `step`: a member of its group
    /// (an operator, should it be the escalation group), or its person.
    pub(crate) fn decider(&self, step: &str) -> Actor {
        match self
            .run
            .step(step)
            .and_then(|s| s.work_item.as_ref())
            .map(|item| item.assigned_to.clone())
        {
            Some(agentprocess_engine::Assignee::Group(group)) => Actor::Person {
                person: "member@example.com".into(),
                groups: vec![group],
                operator: true,
            },
            Some(agentprocess_engine::Assignee::Person(person)) => Actor::Person {
                person,
                groups: vec![],
                operator: false,
            },
            None => person(&self.version),
        }
    }

    /// The id of the open work item of `step`.
    pub(crate) fn item(&self, step: &str) -> String {
        self.run
            .step(step)
            .and_then(|s| s.work_item.as_ref())
            .map(|item| item.id.clone())
            .expect("an open work item")
    }

    /// Each step's state as the view shows it.
    pub(crate) fn states(&self) -> Vec<Value> {
        self.view()["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|step| step["state"].clone())
            .collect()
    }
}

/// An operator in every group.
pub(crate) fn operator() -> Actor {
    Actor::Person {
        person: "ops@example.com".to_owned(),
        groups: vec!["operators".to_owned()],
        operator: true,
    }
}

impl Bench {
    /// `get_work` items of this run for `actor`; each person item's work item is
    /// checked against work-item.json.
    pub(crate) fn work(&self, actor: &Actor) -> Vec<Value> {
        let items: Vec<Value> =
            agentprocess_engine::work_items(&self.run, &self.version, actor, &self.settings, self.now)
                .into_iter()
                .filter_map(|work| agentprocess_views::WorkEntry::of(&self.run, &self.version, work))
                .map(|entry| as_json(&entry))
                .collect();
        assert_result("get_work", &json!({ "items": items, "nextCursor": null }));
        for item in &items {
            if let Some(work_item) = item.get("workItem") {
                assert_valid_work_item(work_item);
            }
        }
        items
    }
}
