//! Walks a run to its end the way agents and people would: agents take ready steps
//! from `get_work`, people decide their work items with the `decide` call they are
//! given, events go to waiting `wait_for` steps, and the clock moves (when the runner
//! may move it) when only time can move the run.
//!
//! A [`Plan`] shared by the walks of one process makes each choice round-robin per
//! step: the route of a step whose `next` is a list, whether an approval is rejected,
//! whether an agent escalates and the person returns or completes the step, and
//! whether a `wait_for` gets its event or times out. A walk given an [`Aim`] instead
//! makes every choice on the way to one route, then on the way to an end.

use std::collections::{BTreeSet, HashMap, HashSet};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::aim::Aim;
use crate::fixtures::{Fixture, route_target};
use crate::report::{Failure, ensure};
use crate::sample::fill;
use crate::session::{Answer, Context, Session, request_id, with_request_id};
use crate::verdict;

/// How far the runner moves the clock when only time can move a run: past the
/// longest duration the fixtures use (30 days).
const CLOCK_STEP_SECONDS: u64 = 31 * 24 * 3600;

/// The null a missing step definition or `describe.limits` reads as.
static NULL: Value = Value::Null;

/// Round-robin choices per step, across the walks of one process.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    turns: HashMap<String, usize>,
}

impl Plan {
    fn pick(&mut self, key: &str, options: usize) -> usize {
        let turn = self.turns.entry(key.to_owned()).or_default();
        let picked = *turn % options.max(1);
        *turn += 1;
        picked
    }
}

/// How a walk ended.
pub(crate) enum End {
    /// The run ended; its last view.
    Ended(Value),
    /// Only time could move the run, and the runner cannot move the server's clock.
    NeedsClock(String),
}

/// Walks runs of one fixture.
pub(crate) struct Walker<'a> {
    cx: &'a Context,
    fixture: &'a Fixture,
    plan: &'a mut Plan,
    choice: usize,
    escalated: bool,
    rejected: HashSet<String>,
    file_id: Option<String>,
    mode: String,
    /// `(step, to)` of every route taken.
    pub(crate) routes: BTreeSet<(String, String)>,
    /// `(step, decision)` of every decision made.
    pub(crate) decisions: BTreeSet<(String, String)>,
    /// `(step, verdict)` of every check record read.
    pub(crate) verdicts: BTreeSet<(String, String)>,
    /// How many events the walker sent to each wait_for step.
    pub(crate) events_sent: HashMap<String, usize>,
    /// The route this walk is aimed at, when it is.
    aim: Option<Aim>,
    /// Whether agents escalate now and then (round-robin walks only).
    escalates: bool,
    /// `describe.limits`, read at the first checked step (check-1's default thresholds).
    limits: Option<Value>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(cx: &'a Context, fixture: &'a Fixture, plan: &'a mut Plan, choice: usize) -> Self {
        Self {
            cx,
            fixture,
            plan,
            choice,
            escalated: false,
            rejected: HashSet::new(),
            file_id: None,
            mode: "live".to_owned(),
            routes: BTreeSet::new(),
            decisions: BTreeSet::new(),
            verdicts: BTreeSet::new(),
            events_sent: HashMap::new(),
            aim: None,
            escalates: true,
            limits: None,
        }
    }

    /// This walker, making its choices on the way to `aim` (and never escalating).
    pub(crate) fn aimed(mut self, aim: Aim) -> Self {
        self.aim = Some(aim);
        self.escalates = false;
        self
    }

    /// Agents and events move `run` until a person has a work item in it, choosing
    /// routes towards the nearest person's step: whether one opened before the run
    /// ended or could go no further without people or time. Agents do not escalate
    /// here, so the item is one the process itself opens.
    pub(crate) async fn until_work_item(&mut self, run: &str) -> Result<bool, Failure> {
        self.escalates = false;
        self.aim = Some(Aim::to_people(self.fixture));
        for _ in 0..200 {
            let view = self.cx.people[0].ok("get_run", json!({ "runId": run })).await?;
            self.mode = view["run"]["mode"].as_str().unwrap_or("live").to_owned();
            if view["workItems"].as_array().is_some_and(|items| !items.is_empty()) {
                return Ok(true);
            }
            if !view["run"]["ended"].is_null() || !(self.agent_turn(run).await? || self.event_turn(&view).await?) {
                return Ok(false);
            }
        }
        Ok(false)
    }

    /// Fails unless `view`, a submission's answer, records step `id`'s check (if it has
    /// one) as check-1 says; notes the verdict read.
    async fn check_recorded(&mut self, id: &Value, view: &Value) -> Result<(), Failure> {
        let step = self.definition(id);
        if step.get("check").is_none() {
            return Ok(());
        }
        if self.limits.is_none() {
            let described = self.cx.agents[0].ok("describe", json!({})).await?;
            self.limits = Some(described["limits"].clone());
        }
        if let Some(verdict) = verdict::recorded(step, view, self.limits.as_ref().unwrap_or(&NULL))? {
            let id = id.as_str().unwrap_or_default().to_owned();
            self.verdicts.insert((id, verdict));
        }
        Ok(())
    }

    /// The fixture's definition of step `id` (null when it has none).
    fn definition(&self, id: &Value) -> &'a Value {
        self.fixture.frontmatter["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|step| step["id"] == *id)
            .unwrap_or(&NULL)
    }

    fn person(&self) -> &str {
        self.cx.people[0].person.as_deref().unwrap_or_default()
    }

    /// Starts a run with `start` (its `start_run` arguments) in `mode`, and walks it.
    pub(crate) async fn run(&mut self, mut start: Value, mode: &str) -> Result<End, Failure> {
        start["mode"] = json!(mode);
        let view = self.cx.people[0].ok("start_run", start).await?;
        ensure!(
            view["run"]["mode"] == mode,
            "start_run in {mode} mode gave {}",
            view["run"]
        );
        let run = view["run"]["id"].as_str().unwrap_or_default().to_owned();
        self.drive(&run).await
    }

    /// Takes a run to its end.
    pub(crate) async fn drive(&mut self, run: &str) -> Result<End, Failure> {
        for _ in 0..200 {
            let view = self.cx.people[0].ok("get_run", json!({ "runId": run })).await?;
            self.mode = view["run"]["mode"].as_str().unwrap_or("live").to_owned();
            if !view["run"]["ended"].is_null() {
                return Ok(End::Ended(view));
            }
            if self.agent_turn(run).await? || self.person_turn(&view).await? || self.event_turn(&view).await? {
                continue;
            }
            if !self.let_time_pass(run, &view).await? {
                let waiting: Vec<&str> = view["steps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|step| step["state"] == "waiting")
                    .filter_map(|step| step["id"].as_str())
                    .collect();
                return Ok(End::NeedsClock(format!(
                    "run {run} waits on time (steps {waiting:?}); the runner was given no way to move the server's clock"
                )));
            }
        }
        Err(Failure::new(format!(
            "run {run} of {} did not end in 200 turns",
            self.fixture.name
        )))
    }

    fn agent(&self) -> &'a Session {
        &self.cx.agents[self.choice % 2]
    }

    /// An agent takes the run's first ready step from get_work.
    async fn agent_turn(&mut self, run: &str) -> Result<bool, Failure> {
        let agent = self.agent();
        let work = agent
            .ok("get_work", json!({ "process": self.fixture.name, "limit": 100 }))
            .await?;
        let Some(item) = work["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|item| item["runId"] == run)
        else {
            return Ok(false);
        };
        let arguments = with_request_id(&item["claim"]["arguments"]);
        callable(agent, "claim", &arguments)?;
        let claimed = agent.ok("claim", arguments).await?;
        ensure!(
            item["mode"] == self.mode.as_str() && claimed["mode"] == self.mode.as_str(),
            "the get_work item ({}) and the claim ({}) must carry the run's mode {}",
            item["mode"],
            claimed["mode"],
            self.mode
        );
        ensure!(
            claimed["body"] == self.fixture.body.as_str(),
            "the claim's body is not the fixture's body: {} is published with other content",
            self.fixture.name
        );
        if self.escalates && !self.escalated && self.plan.pick("escalate", 4) == 3 {
            self.escalated = true;
            agent
                .ok(
                    "escalate",
                    json!({ "token": claimed["token"], "note": "A person should look at this.", "requestId": request_id() }),
                )
                .await?;
            return Ok(true);
        }
        let mut arguments = self.work_arguments(agent, &claimed["step"]).await?;
        arguments["token"] = claimed["token"].clone();
        arguments["requestId"] = json!(request_id());
        match agent.call("submit", arguments).await? {
            Answer::Ok(view) => self.check_recorded(&claimed["step"]["id"], &view).await?,
            // check-1: the server's own model judged the walker's sample submission.
            // A failed check leaves the claim standing; a person takes the step over,
            // as after an escalation, and the walk goes on. (An unsure check has
            // already escalated it.)
            Answer::Refused(error) if failed_check(&error) => {
                agent
                    .ok(
                        "escalate",
                        json!({ "token": claimed["token"], "note": "The step's check failed the sample submission.", "requestId": request_id() }),
                    )
                    .await?;
            }
            Answer::Refused(error) => {
                return Err(Failure::new(format!("submit as {} was refused: {error}", agent.name)));
            }
        }
        Ok(true)
    }

    /// output, evidence, summary, next and reason for a step's requirements.
    async fn work_arguments(&mut self, actor: &Session, step: &Value) -> Result<Value, Failure> {
        let mut arguments = json!({ "output": fill(&step["output"], self.person()), "summary": "Done as instructed." });
        let mut evidence = Vec::new();
        for kind in step["evidence"].as_array().into_iter().flatten() {
            if kind == "file" {
                let id = match &self.file_id {
                    Some(id) => id.clone(),
                    None => {
                        let uploaded = actor
                            .ok(
                                "upload",
                                json!({
                                    "fileName": "evidence.txt", "contentType": "text/plain",
                                    "contentBase64": base64::engine::general_purpose::STANDARD.encode(b"evidence bytes"),
                                    "requestId": request_id()
                                }),
                            )
                            .await?;
                        let id = uploaded["id"].as_str().unwrap_or_default().to_owned();
                        self.file_id = Some(id.clone());
                        id
                    }
                };
                evidence.push(json!({ "kind": "file", "ref": id }));
            } else {
                evidence.push(json!({ "kind": "link", "ref": "https://example.com/ticket/1" }));
            }
        }
        if !evidence.is_empty() {
            arguments["evidence"] = json!(evidence);
        }
        if let Some(routes) = step["next"].as_array().filter(|routes| !routes.is_empty()) {
            let id = step["id"].as_str().unwrap_or_default().to_owned();
            let options: Vec<String> = routes
                .iter()
                .map(|route| route_target(route).unwrap_or_default().to_owned())
                .collect();
            let index = match &mut self.aim {
                Some(aim) => aim.route(&id, &options),
                None => self.plan.pick(&format!("route:{id}"), routes.len()),
            };
            let to = options[index].clone();
            arguments["next"] = json!(to);
            arguments["reason"] = json!("Chosen by the conformance runner.");
            self.routes.insert((id, to));
        }
        Ok(arguments)
    }

    /// A person decides the run's first open work item.
    async fn person_turn(&mut self, view: &Value) -> Result<bool, Failure> {
        let Some(item) = view["workItems"].as_array().and_then(|items| items.first()) else {
            return Ok(false);
        };
        let (person, listed) = self.assignee(view, item).await?;
        let listed = &listed["workItem"];
        ensure!(
            listed["id"] == item["id"] && listed["stepId"] == item["stepId"],
            "get_work lists {} where get_run shows {}",
            listed["id"],
            item["id"]
        );
        let decision = self.decision(listed);
        let decisions = listed["decide"]["decisions"].as_array().cloned().unwrap_or_default();
        ensure!(
            decisions.is_empty() || decisions.iter().any(|offered| offered == decision),
            "work item {} offers decisions {decisions:?}, not {decision}",
            listed["id"]
        );
        let mut arguments = with_request_id(&listed["decide"]["arguments"]);
        arguments["decision"] = json!(decision);
        if matches!(decision, "rejected" | "returned" | "failed") {
            arguments["note"] = json!("Not yet: please look again.");
        }
        if decision == "completed" {
            let requirements = json!({
                "id": listed["stepId"], "output": listed["output"], "evidence": listed["evidence"], "next": listed["next"]
            });
            let work = self.work_arguments(person, &requirements).await?;
            for (key, value) in work.as_object().into_iter().flatten() {
                arguments[key] = value.clone();
            }
        }
        callable(person, "decide", &arguments)?;
        let decided = person.ok("decide", arguments).await?;
        // check-1 §3: a person completing an ordinary task is checked; one completing
        // an escalated step is not.
        if decision == "completed" && listed["escalation"].is_null() {
            self.check_recorded(&listed["stepId"], &decided).await?;
        }
        let step = listed["stepId"].as_str().unwrap_or_default().to_owned();
        self.decisions.insert((step, decision.to_owned()));
        Ok(true)
    }

    /// The session the item is assigned to, and the item as its get_work lists it.
    async fn assignee(&self, view: &Value, item: &Value) -> Result<(&'a Session, Value), Failure> {
        let assigned = &item["assignedTo"];
        let candidates: Vec<&'a Session> = match assigned["person"].as_str() {
            Some(person) => self.cx.person(person).into_iter().collect(),
            None => {
                let first = &self.cx.people[self.choice % 2];
                let second = &self.cx.people[(self.choice + 1) % 2];
                vec![first, second, &self.cx.operator]
            }
        };
        for session in candidates {
            let work = session
                .ok("get_work", json!({ "process": self.fixture.name, "limit": 100 }))
                .await?;
            if let Some(listed) = work["items"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|listed| listed["runId"] == view["run"]["id"] && listed["workItem"]["id"] == item["id"])
            {
                ensure!(
                    listed["mode"] == self.mode.as_str(),
                    "the get_work item of {} carries mode {}, the run is {}",
                    item["id"],
                    listed["mode"],
                    self.mode
                );
                return Ok((session, listed.clone()));
            }
        }
        Err(Failure::new(format!(
            "no person the runner holds sees work item {} (assigned to {assigned}) in get_work",
            item["id"]
        )))
    }

    fn decision(&mut self, item: &Value) -> &'static str {
        let step = item["stepId"].as_str().unwrap_or_default().to_owned();
        if let Some(aim) = &mut self.aim {
            return if item["kind"] != "approve" {
                "completed"
            } else if aim.reject(&step) {
                "rejected"
            } else {
                "approved"
            };
        }
        if item["kind"] == "approve" {
            if !self.rejected.contains(&step) && self.plan.pick(&format!("reject:{step}"), 3) == 2 {
                self.rejected.insert(step);
                return "rejected";
            }
            return "approved";
        }
        if !item["escalation"].is_null()
            && !self.rejected.contains(&step)
            && self.plan.pick(&format!("return:{step}"), 2) == 1
        {
            self.rejected.insert(step);
            return "returned";
        }
        "completed"
    }

    /// An agent sends the event a waiting `wait_for` step waits for (or lets it time out).
    async fn event_turn(&mut self, view: &Value) -> Result<bool, Failure> {
        for step in view["steps"].as_array().into_iter().flatten() {
            let id = step["id"].as_str().unwrap_or_default();
            let Some(definition) = self.fixture.step(id) else {
                continue;
            };
            let Some(event) = definition["wait_for"].as_str() else {
                continue;
            };
            if step["state"] != "waiting" {
                continue;
            }
            if definition.get("timeout").is_some() && !self.cx.clocks.is_empty() {
                let late = match &self.aim {
                    Some(aim) => aim.time_out(id),
                    None => self.plan.pick(&format!("timeout:{id}"), 2) == 1,
                };
                if late {
                    return Ok(false);
                }
            }
            let sent = self
                .agent()
                .ok(
                    "send_event",
                    json!({ "runId": view["run"]["id"], "name": event, "data": { "reference": "evt-1" }, "requestId": request_id() }),
                )
                .await?;
            ensure!(
                sent["consumedBy"] == id,
                "the event {event} should be consumed by {id}: {sent}"
            );
            *self.events_sent.entry(id.to_owned()).or_default() += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Moves the clock and waits for a timer to move the run; false when the runner
    /// cannot move the clock.
    async fn let_time_pass(&self, run: &str, view: &Value) -> Result<bool, Failure> {
        if !self.cx.advance(CLOCK_STEP_SECONDS).await? {
            return Ok(false);
        }
        let before = (view["run"]["updatedAt"].clone(), view["steps"].clone());
        for _ in 0..200 {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            let now = self.cx.people[0].ok("get_run", json!({ "runId": run })).await?;
            if (now["run"]["updatedAt"].clone(), now["steps"].clone()) != before {
                return Ok(true);
            }
        }
        Err(Failure::new(format!(
            "nothing moved run {run} within 10 s of the clock moving {CLOCK_STEP_SECONDS} s"
        )))
    }
}

/// A call a `get_work` item offers must meet the tool's official argument schema as
/// it stands once the caller adds what the item asks for.
fn callable(session: &Session, tool: &str, arguments: &Value) -> Result<(), Failure> {
    let problems = session.contract().check_arguments(tool, arguments);
    ensure!(
        problems.is_empty(),
        "the {tool} call get_work offers breaks {tool}.arguments.json: {}\n  arguments: {arguments}",
        problems.join("; ")
    );
    Ok(())
}

/// Whether a refused submission was refused by its step's check alone (check-1 §3):
/// `not_accepted` with only `check: …` issues.
fn failed_check(error: &Value) -> bool {
    error["code"] == "not_accepted"
        && error["issues"].as_array().is_some_and(|issues| {
            !issues.is_empty()
                && issues
                    .iter()
                    .all(|issue| issue.as_str().is_some_and(|issue| issue.starts_with("check: ")))
        })
}
