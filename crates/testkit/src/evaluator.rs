//! The test-double evaluator: a stand-in for a language model that speaks the
//! OpenAI-compatible chat-completions API with `logprobs`, and answers by fixed rules
//! on the prompt instead of judging. Every rule reads only the submission's `summary`
//! inside the material block (`<<<MATERIAL … MATERIAL>>>`), so a test steers the
//! verdict from what an agent submits, and nothing else in a submission can:
//!
//! | `summary` contains | yes/no: p(yes) | choice | rubric |
//! |---|---|---|---|
//! | nothing below | 0.97 | the first answer, confidence 0.95 | the top level, 0.95 |
//! | `[fail]` | 0.1 | the second answer, 0.9 | level 0, 0.9 |
//! | `[unsure]` | 0.7 | the last answer, 0.9 | the top level, 0.5 |
//! | `[error]` | HTTP 500, every time | | |
//! | `[flaky]` | HTTP 500 the first time a prompt is sent, then as for nothing | | |
//! | `[429]` | HTTP 429 with `Retry-After: 1` the first time, then as for nothing | | |
//! | `[slow]` | answers after 3 seconds, as for nothing | | |
//! | `[malformed]` | HTTP 200 with a body that is not JSON | | |
//!
//! The question's kind comes from the answer format the prompt asks for (`Yes or No`,
//! one capital letter, one digit) and the number of answers or levels from the lines
//! it lists. Started with `logprobs: false`, it answers without logprobs, as some
//! providers do; started with `always`, it answers every question as for that marker;
//! set down, it answers every request HTTP 503. Every request body is
//! kept, for tests to read (`GET /requests`).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

/// The model name the double answers as.
pub const MODEL: &str = "test-double-evaluator";

#[derive(Default)]
struct Shared {
    logprobs: bool,
    /// While set, every request is answered HTTP 503.
    down: std::sync::atomic::AtomicBool,
    /// Answer every question this way, whatever the summary says.
    always: Option<Mode>,
    requests: Mutex<Vec<Value>>,
    failed_once: Mutex<HashSet<String>>,
}

/// A running test-double evaluator.
pub struct TestEvaluator {
    /// Its base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl TestEvaluator {
    /// Starts one on a free local port; `logprobs: false` leaves them out of answers.
    pub async fn start(logprobs: bool) -> Self {
        #[allow(clippy::expect_used)]
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        #[allow(clippy::expect_used)]
        let address = listener.local_addr().expect("bound");
        let (shared, router) = router(logprobs, None);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            url: format!("http://{address}/v1"),
            shared,
            task,
        }
    }

    /// While `down`, every request is answered HTTP 503 (an evaluator that is away).
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, std::sync::atomic::Ordering::Relaxed);
    }

    /// The request bodies received so far, oldest first.
    pub fn requests(&self) -> Vec<Value> {
        self.shared
            .requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default()
    }
}

impl Drop for TestEvaluator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The double's routes, and what they share.
fn router(logprobs: bool, always: Option<Mode>) -> (Arc<Shared>, axum::Router) {
    let shared = Arc::new(Shared {
        logprobs,
        always,
        ..Shared::default()
    });
    let router = axum::Router::new()
        .route("/v1/chat/completions", post(complete))
        .route("/requests", get(requests))
        .with_state(Arc::clone(&shared));
    (shared, router)
}

/// Serves the double at `address` until the process ends, answering `always` one way
/// when given.
pub async fn serve(address: SocketAddr, logprobs: bool, always: Option<Mode>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    println!("http://{}/v1", listener.local_addr()?);
    let (_, router) = router(logprobs, always);
    axum::serve(listener, router).await
}

async fn requests(State(shared): State<Arc<Shared>>) -> Json<Value> {
    Json(Value::Array(
        shared
            .requests
            .lock()
            .map(|requests| requests.clone())
            .unwrap_or_default(),
    ))
}

async fn complete(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    if let Ok(mut requests) = shared.requests.lock() {
        requests.push(body.clone());
    }
    if shared.down.load(std::sync::atomic::Ordering::Relaxed) {
        return (StatusCode::SERVICE_UNAVAILABLE, "the test double is down").into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text_of = |role: &str| -> String {
        messages
            .iter()
            .rev()
            .find(|message| message["role"] == role)
            .and_then(|message| message["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (system, user) = (text_of("system"), text_of("user"));
    let summary = material(&user)
        .and_then(|material| material["submission"]["summary"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let first_time = || {
        shared
            .failed_once
            .lock()
            .map(|mut failed| failed.insert(user.clone()))
            .unwrap_or(false)
    };
    if summary.contains("[error]") || (summary.contains("[flaky]") && first_time()) {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the test double fails as asked").into_response();
    }
    if summary.contains("[429]") && first_time() {
        return (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], "slow down").into_response();
    }
    if summary.contains("[malformed]") {
        return (StatusCode::OK, [("content-type", "application/json")], "{not json").into_response();
    }
    if summary.contains("[slow]") {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let mode = if let Some(always) = shared.always {
        always
    } else if summary.contains("[fail]") {
        Mode::Fail
    } else if summary.contains("[unsure]") {
        Mode::Unsure
    } else {
        Mode::Pass
    };
    let alternatives = if system.contains("Yes or No") {
        let yes = match mode {
            Mode::Pass => 0.97,
            Mode::Fail => 0.1,
            Mode::Unsure => 0.7,
        };
        vec![
            ("Yes".to_owned(), yes * 0.9),
            ("No".to_owned(), (1.0 - yes) * 0.9),
            ("yes".to_owned(), yes * 0.1),
            ("no".to_owned(), (1.0 - yes) * 0.1),
        ]
    } else if system.contains("capital letter") {
        let count = listed(&user, "Answers:");
        let (chosen, confidence) = match mode {
            Mode::Pass => (0, 0.95),
            Mode::Fail => (1, 0.9),
            Mode::Unsure => (count.saturating_sub(1), 0.9),
        };
        spread(count, chosen, confidence, |index| {
            char::from(b'A' + u8::try_from(index).unwrap_or(0)).to_string()
        })
    } else {
        let count = listed(&user, "Levels:");
        let top = count.saturating_sub(1);
        let (chosen, confidence) = match mode {
            Mode::Pass => (top, 0.95),
            Mode::Fail => (0, 0.9),
            Mode::Unsure => (top, 0.5),
        };
        spread(count, chosen, confidence, |index| index.to_string())
    };
    Json(answer(&alternatives, shared.logprobs)).into_response()
}

/// How the double answers: as for a summary with nothing, `[fail]` or `[unsure]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every question passes.
    Pass,
    /// Every question fails.
    Fail,
    /// Every question is unsure.
    Unsure,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "pass" => Ok(Mode::Pass),
            "fail" => Ok(Mode::Fail),
            "unsure" => Ok(Mode::Unsure),
            other => Err(format!("{other:?} is not pass, fail or unsure")),
        }
    }
}

/// The material JSON between the markers.
fn material(user: &str) -> Option<Value> {
    let start = user.find("<<<MATERIAL")? + "<<<MATERIAL".len();
    let end = user.find("MATERIAL>>>")?;
    serde_json::from_str(user.get(start..end)?.trim()).ok()
}

/// How many lines follow `heading` before a blank one.
fn listed(user: &str, heading: &str) -> usize {
    user.split(heading)
        .nth(1)
        .map(|rest| rest.lines().skip(1).take_while(|line| !line.trim().is_empty()).count())
        .unwrap_or(0)
}

/// `confidence` on `chosen`, the rest shared by the others.
fn spread(count: usize, chosen: usize, confidence: f64, token: impl Fn(usize) -> String) -> Vec<(String, f64)> {
    let others = count.saturating_sub(1).max(1) as f64;
    (0..count)
        .map(|index| {
            let probability = if index == chosen {
                confidence
            } else {
                (1.0 - confidence) / others
            };
            (token(index), probability)
        })
        .collect()
}

/// A chat completion in the shape llama.cpp's server gives (`bytes: null`,
/// `refusal: null`), its content the likeliest token.
fn answer(alternatives: &[(String, f64)], logprobs: bool) -> Value {
    let mut sorted = alternatives.to_vec();
    sorted.sort_by(|left, right| right.1.total_cmp(&left.1));
    let top: Vec<Value> = sorted
        .iter()
        .map(|(token, probability)| json!({ "token": token, "logprob": probability.max(1e-9).ln(), "bytes": null }))
        .collect();
    let content = sorted.first().map(|(token, _)| token.clone()).unwrap_or_default();
    let mut choice = json!({
        "index": 0,
        "message": { "role": "assistant", "content": content },
        "finish_reason": "length",
    });
    if logprobs {
        let first = top.first().cloned().unwrap_or(Value::Null);
        choice["logprobs"] = json!({
            "content": [{
                "token": first["token"],
                "logprob": first["logprob"],
                "bytes": null,
                "top_logprobs": top,
            }],
            "refusal": null,
        });
    } else {
        choice["logprobs"] = Value::Null;
    }
    json!({
        "id": "chatcmpl-test-double",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [choice],
    })
}
