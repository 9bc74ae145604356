#![doc = include_str!("../README.md")]

mod openai;
pub mod prompt;

use std::time::Duration;

use agentprocess_engine::{Answer, Material};
use agentprocess_format::Question;

pub use openai::{OpenAiEvaluator, OpenAiSettings};

/// Answers check questions. One call answers one question about one material; the
/// service asks a check's questions at the same time, each on its own, so no answer
/// can see another.
#[async_trait::async_trait]
pub trait Evaluator: Send + Sync {
    /// The model that answers, as verdicts record it.
    fn model(&self) -> &str;

    /// The answer to `question` about `material`.
    async fn answer(&self, material: &Material, question: &Question) -> Result<Answer, EvaluatorError>;

    /// Asks a fixed question, to learn whether the evaluator answers with
    /// probabilities. [`EvaluatorError::unusable`] means it never will as configured.
    async fn probe(&self) -> Result<(), EvaluatorError>;
}

/// The evaluator did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvaluatorError {
    /// What went wrong, for the log. Never holds the API key.
    pub message: String,
    /// How long the provider asked to wait (`Retry-After` of a 429 or 503).
    pub retry_after: Option<Duration>,
    /// The provider answers, but not in a way a check can use (no logprobs): a
    /// configuration error, not a passing failure.
    pub unusable: bool,
}

impl EvaluatorError {
    /// A passing failure.
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            retry_after: None,
            unusable: false,
        }
    }
}

impl std::fmt::Display for EvaluatorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvaluatorError {}
