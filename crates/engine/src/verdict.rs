//! What a check decided, as recorded on the step (`check-verdict.json`), and the
//! thresholds it decides by. Held apart from `check`, which makes verdicts, so that the
//! run model and the settings can name them without depending on the making.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The server's check limits (`describe.limits`, check.md §5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckLimits {
    /// `checkPass`: the default yes-probability at or above which a yes/no answer passes.
    pub pass: f64,
    /// `checkFail`: the default yes-probability below which a yes/no answer fails;
    /// without one, below `pass` fails.
    pub fail: Option<f64>,
    /// `checkConfidence`: the default confidence below which a choice or rubric answer
    /// is unsure.
    pub confidence: f64,
    /// `checkStateBytes`: how much run data, in bytes of JSON, the evaluator is shown.
    pub state_bytes: usize,
}

impl CheckLimits {
    /// check.md §5's server defaults.
    pub const DEFAULT: CheckLimits = CheckLimits {
        pass: 0.9,
        fail: None,
        confidence: 0.8,
        state_bytes: 64 * 1024,
    };
}

impl Default for CheckLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The verdict of a check: the worst question's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every question passed.
    Pass,
    /// Some question failed and none was unsure.
    Fail,
    /// Some question was unsure.
    Unsure,
    /// The evaluator did not answer.
    Error,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unsure => "unsure",
            Verdict::Error => "error",
        }
    }
}

/// A question's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// At or above its threshold.
    Pass,
    /// Below it.
    Fail,
    /// Between the thresholds, or below the confidence asked for.
    Unsure,
}

/// A recorded verdict (`check-verdict.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    /// `pass`, `fail`, `unsure` or `error`.
    pub verdict: Verdict,
    /// Whether the step's check is advisory.
    pub advisory: bool,
    /// The model that answered.
    pub model: String,
    /// Each question with its answer and result; empty for `error`.
    pub questions: Vec<QuestionRecord>,
    /// Present, `true`, when the run data shown was cut to `checkStateBytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// When the verdict was made.
    pub at: Timestamp,
}

impl CheckRecord {
    /// `check: <ask> → <answer>` for each question that did not pass (check.md §3).
    pub fn issues(&self) -> Vec<String> {
        self.questions
            .iter()
            .filter(|question| question.result != Outcome::Pass)
            .map(|question| format!("check: {} → {}", question.ask, question.shown))
            .collect()
    }
}

/// What kind of question a recorded answer answers (`kind` of a question record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionType {
    /// A yes/no question, answered with the probability of yes.
    YesNo,
    /// A choice among named answers.
    Choice,
    /// A rubric of levels.
    Rubric,
}

/// One question of a recorded verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRecord {
    /// The question.
    pub ask: String,
    /// `yes_no`, `choice` or `rubric`.
    pub kind: QuestionType,
    /// The probability of yes, the chosen name, or the level.
    pub answer: Value,
    /// The confidence of a choice or rubric answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// `pass`, `fail` or `unsure`.
    pub result: Outcome,
    /// The answer as an issue line spells it: `no (0.12)`, `hedges (0.9)`,
    /// `level 1: One list is covered. (0.85)`. Not part of the record.
    #[serde(skip)]
    pub shown: String,
}
