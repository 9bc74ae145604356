//! The adapter for OpenAI-compatible chat-completions APIs (`POST {base}/chat/completions`
//! with `logprobs: true` and `top_logprobs`): one request per question, one answer
//! token, read from the first token's alternatives.

use std::time::Duration;

use agentprocess_engine::{Answer, Material};
use agentprocess_format::{Question, QuestionKind};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::prompt::{decode, prompt};
use crate::{Evaluator, EvaluatorError};

/// How to reach the provider.
#[derive(Clone)]
pub struct OpenAiSettings {
    /// The API's base URL, up to and including `/v1` (`https://api.openai.com/v1`,
    /// `http://127.0.0.1:8000/v1`).
    pub base_url: String,
    /// The model to ask; recorded as `model` on every verdict.
    pub model: String,
    /// The API key, sent as a bearer token; `None` for a local server without one.
    pub api_key: Option<String>,
    /// How long one question may take, connection included.
    pub timeout: Duration,
    /// How many questions may be in flight at once, across every check of this process.
    pub concurrency: usize,
    /// How many alternatives of the first token to ask for (1–20).
    pub top_logprobs: u8,
}

impl std::fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<secret>"))
            .field("timeout", &self.timeout)
            .field("concurrency", &self.concurrency)
            .field("top_logprobs", &self.top_logprobs)
            .finish()
    }
}

/// An [`Evaluator`] over an OpenAI-compatible chat-completions API.
pub struct OpenAiEvaluator {
    settings: OpenAiSettings,
    url: String,
    client: reqwest::Client,
    in_flight: Semaphore,
}

impl OpenAiEvaluator {
    /// An evaluator with `settings`; nothing is sent until the first question.
    pub fn new(settings: OpenAiSettings) -> Result<Self, EvaluatorError> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|error| EvaluatorError::transient(format!("cannot build the HTTP client: {error}")))?;
        let url = format!("{}/chat/completions", settings.base_url.trim_end_matches('/'));
        let in_flight = Semaphore::new(settings.concurrency.max(1));
        Ok(Self {
            settings,
            url,
            client,
            in_flight,
        })
    }

    /// The first answer token's alternatives, `(token, logprob)`, for `question`.
    async fn alternatives(
        &self,
        material: &Material,
        question: &Question,
    ) -> Result<Vec<(String, f64)>, EvaluatorError> {
        let prompt = prompt(material, question);
        let mut messages = vec![json!({ "role": "system", "content": prompt.system })];
        for (asked, answered) in &prompt.examples {
            messages.push(json!({ "role": "user", "content": asked }));
            messages.push(json!({ "role": "assistant", "content": answered }));
        }
        messages.push(json!({ "role": "user", "content": prompt.user }));
        let body = json!({
            "model": self.settings.model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": true,
            "top_logprobs": self.settings.top_logprobs.clamp(1, 20),
        });
        let _permit = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| EvaluatorError::transient("the evaluator is shutting down"))?;
        let mut request = self.client.post(&self.url).json(&body);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|error| {
            EvaluatorError::transient(if error.is_timeout() {
                format!("the evaluator did not answer within {:?}", self.settings.timeout)
            } else {
                // Without the URL's query or any header: the message goes to the log.
                format!("cannot reach the evaluator at {}: {}", self.url, error.without_url())
            })
        })?;
        let status = response.status();
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Err(EvaluatorError {
                message: format!("the evaluator is busy (HTTP {})", status.as_u16()),
                retry_after,
                unusable: false,
            });
        }
        if !status.is_success() {
            return Err(EvaluatorError::transient(format!(
                "the evaluator answered HTTP {}",
                status.as_u16()
            )));
        }
        let bytes = response.bytes().await.map_err(|error| {
            EvaluatorError::transient(format!("the evaluator's answer broke off: {}", error.without_url()))
        })?;
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|error| EvaluatorError::transient(format!("the evaluator's answer is not JSON: {error}")))?;
        first_token(&answer)
    }
}

/// The alternatives of the first token of the first choice.
fn first_token(answer: &Value) -> Result<Vec<(String, f64)>, EvaluatorError> {
    let Some(choice) = answer["choices"].get(0) else {
        return Err(EvaluatorError::transient("the evaluator's answer has no choices"));
    };
    let Some(first) = choice["logprobs"]["content"].get(0) else {
        return Err(EvaluatorError {
            message: "the evaluator answered without logprobs; check-1 needs an OpenAI-compatible API that \
                      returns them (logprobs: true, top_logprobs)"
                .to_owned(),
            retry_after: None,
            unusable: true,
        });
    };
    let pair = |entry: &Value| Some((entry["token"].as_str()?.to_owned(), entry["logprob"].as_f64()?));
    let mut alternatives: Vec<(String, f64)> = first["top_logprobs"]
        .as_array()
        .map(|entries| entries.iter().filter_map(pair).collect())
        .unwrap_or_default();
    if alternatives.is_empty() {
        alternatives.extend(pair(first));
    }
    Ok(alternatives)
}

#[async_trait::async_trait]
impl Evaluator for OpenAiEvaluator {
    fn model(&self) -> &str {
        &self.settings.model
    }

    async fn answer(&self, material: &Material, question: &Question) -> Result<Answer, EvaluatorError> {
        let alternatives = self.alternatives(material, question).await?;
        decode(question, &alternatives).ok_or_else(|| {
            let tokens: Vec<&str> = alternatives.iter().map(|(token, _)| token.as_str()).take(5).collect();
            EvaluatorError::transient(format!(
                "the model's first token was none of the answers ({})",
                tokens.join(" | ")
            ))
        })
    }

    async fn probe(&self) -> Result<(), EvaluatorError> {
        let material = Material {
            instructions: "Say whether the submitted colour is blue.".to_owned(),
            body: String::new(),
            run_data: json!({ "inputs": {}, "steps": {} }),
            truncated: false,
            submission: json!({ "output": { "colour": "blue" } }),
            questions: Vec::new(),
        };
        let question = Question {
            ask: "Is the submitted colour blue?".to_owned(),
            kind: QuestionKind::YesNo { pass: None, fail: None },
        };
        self.alternatives(&material, &question).await.map(drop)
    }
}
