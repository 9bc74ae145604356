//! The typed frontmatter of a process: what the engine and the server read.
//!
//! Values of these types come out of [`crate::validate`] only; a [`crate::ValidatedProcess`]
//! holds one that broke no rule.

use std::fmt;

/// The frontmatter of a `PROCESS.md` (spec §2.1).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessDocument {
    /// `name`: 1–64 characters of `^[a-z0-9]+(-[a-z0-9]+)*$`.
    pub name: String,
    /// `description`: what the process does and when to start it.
    pub description: String,
    /// `inputs`: the fields a run starts with.
    pub inputs: Fields,
    /// `requires`: what the organization must connect first.
    pub requires: Option<Requires>,
    /// `steps`, in order.
    pub steps: Vec<Step>,
}

impl ProcessDocument {
    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|step| step.id == id)
    }

    /// Whether the process uses parallel-1, and so `join` is the end of a branch.
    pub fn uses_parallel(&self) -> bool {
        self.steps.iter().any(|step| matches!(step.kind, StepKind::Parallel(_)))
    }

    /// The role names in `person:`, each once, in order of first use: what an importer
    /// maps to groups (spec §7).
    pub fn roles(&self) -> Vec<&str> {
        let mut roles: Vec<&str> = Vec::new();
        for step in &self.steps {
            if let Some(PersonRef::Role(role)) = &step.person
                && !roles.contains(&role.as_str())
            {
                roles.push(role);
            }
        }
        roles
    }
}

/// Named fields in the order written (spec §2.3).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(pub Vec<(String, Field)>);

impl Fields {
    /// The field with this name.
    pub fn get(&self, name: &str) -> Option<&Field> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, field)| field)
    }

    /// Whether no field is declared.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One declared field, in its full form (a bare type name is a field with only a type).
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// `type`.
    pub ty: FieldType,
    /// `description`.
    pub description: Option<String>,
    /// `optional: true`.
    pub optional: bool,
    /// `one_of`: the allowed values, each of the field's type.
    pub one_of: Option<Vec<serde_json::Value>>,
    /// `items`: the type of each item of a `list`.
    pub items: Option<Box<Field>>,
}

impl Field {
    /// A field declared by its type name alone.
    pub fn of(ty: FieldType) -> Self {
        Self {
            ty,
            description: None,
            optional: false,
            one_of: None,
            items: None,
        }
    }
}

/// The eight field types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// `string`
    String,
    /// `number`: a JSON number, never rounded.
    Number,
    /// `boolean`
    Boolean,
    /// `date`: `YYYY-MM-DD`, a real calendar date.
    Date,
    /// `datetime`: RFC 3339 with an offset.
    Datetime,
    /// `list`
    List,
    /// `object`
    Object,
    /// `person`: an identity reference the server resolves.
    Person,
}

impl FieldType {
    /// Every type, in the spec's order.
    pub const ALL: [FieldType; 8] = [
        FieldType::String,
        FieldType::Number,
        FieldType::Boolean,
        FieldType::Date,
        FieldType::Datetime,
        FieldType::List,
        FieldType::Object,
        FieldType::Person,
    ];

    /// The name written in a process.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
            FieldType::Datetime => "datetime",
            FieldType::List => "list",
            FieldType::Object => "object",
            FieldType::Person => "person",
        }
    }

    /// The type with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|ty| ty.name() == name)
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `requires`: external systems the work needs. Shown, never checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requires {
    /// `systems`, each once.
    pub systems: Vec<String>,
}

/// One step (spec §2.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// `id`, unique, matching `^[a-z][a-z0-9_-]{0,63}$`.
    pub id: String,
    /// The kind key and its value.
    pub kind: StepKind,
    /// `output`: fields a submission must contain.
    pub output: Fields,
    /// `evidence`: kinds that must be attached.
    pub evidence: Vec<EvidenceKind>,
    /// Where the run goes next. `None` on a `finish`; otherwise the written `next`
    /// or, outside a parallel branch, the following step.
    pub next: Option<Next>,
    /// `person`, on `task` and `approve`.
    pub person: Option<PersonRef>,
    /// `on_reject`, on `approve`.
    pub on_reject: Option<String>,
    /// `due`, on `agent`, `task` and `approve`.
    pub due: Option<Duration>,
    /// `timeout`, on `wait_for`.
    pub timeout: Option<Duration>,
    /// `on_timeout`, on `wait_for`.
    pub on_timeout: Option<String>,
    /// `check` (check-1), on `agent` and `task`.
    pub check: Option<Check>,
    /// `advisory: true` (check-1): record verdicts without blocking.
    pub advisory: bool,
}

/// The kind key of a step and its value.
#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    /// `agent:` instructions.
    Agent(String),
    /// `task:` instructions for a person.
    Task(String),
    /// `approve:` what the person approves.
    Approve(String),
    /// `wait:` a duration.
    Wait(Duration),
    /// `wait_until:` a path to a `datetime` in run data.
    WaitUntil(DataPath),
    /// `wait_for:` an event name.
    WaitFor(String),
    /// `finish:` the run's outcome.
    Finish(String),
    /// `parallel:` (parallel-1) the branch entries.
    Parallel(Vec<String>),
}

impl StepKind {
    /// Every kind key, in the spec's order.
    pub const KEYS: [&'static str; 8] = [
        "agent",
        "task",
        "approve",
        "wait",
        "wait_until",
        "wait_for",
        "finish",
        "parallel",
    ];

    /// The kind key, as written in a process and shown in run views.
    pub fn key(&self) -> &'static str {
        match self {
            StepKind::Agent(_) => "agent",
            StepKind::Task(_) => "task",
            StepKind::Approve(_) => "approve",
            StepKind::Wait(_) => "wait",
            StepKind::WaitUntil(_) => "wait_until",
            StepKind::WaitFor(_) => "wait_for",
            StepKind::Finish(_) => "finish",
            StepKind::Parallel(_) => "parallel",
        }
    }
}

/// Where a step goes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// One step.
    Step(String),
    /// `join` (parallel-1): this branch is finished.
    Join,
    /// Two or more routes the actor chooses from.
    Routes(Vec<Route>),
}

/// One route of a `next` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// `to`: the step id, or `join` inside a parallel branch.
    pub to: String,
    /// `when`: a plain-language label, not enforced.
    pub when: Option<String>,
}

/// Who does a person step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PersonRef {
    /// A role name local to the process, bound to a group at import.
    Role(String),
    /// The person who started the run.
    Initiator,
    /// A `person` value in run data.
    Path(DataPath),
}

/// A path into run data naming a declared field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataPath {
    /// `inputs.<field>`
    Input(String),
    /// `steps.<id>.output.<field>`
    Output {
        /// The step id.
        step: String,
        /// The output field.
        field: String,
    },
}

impl fmt::Display for DataPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataPath::Input(field) => write!(f, "inputs.{field}"),
            DataPath::Output { step, field } => write!(f, "steps.{step}.output.{field}"),
        }
    }
}

/// An evidence kind (spec §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceKind {
    /// An uploaded file, verified by hash.
    File,
    /// A URL or document number, recorded as stated.
    Link,
}

impl EvidenceKind {
    /// The name written in a process.
    pub fn name(self) -> &'static str {
        match self {
            EvidenceKind::File => "file",
            EvidenceKind::Link => "link",
        }
    }
}

/// A duration (spec §2.4): an integer followed by `m`, `h` or `d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Duration {
    /// The integer.
    pub amount: u64,
    /// The unit.
    pub unit: DurationUnit,
}

/// Why a text is not a [`Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationError {
    /// Not an integer followed by `m`, `h` or `d`.
    Malformed,
    /// Longer than [`Duration::MAX_SECONDS`].
    TooLong,
}

/// The unit of a [`Duration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DurationUnit {
    /// `m`
    Minutes,
    /// `h`
    Hours,
    /// `d`
    Days,
}

impl Duration {
    /// Longest duration accepted: about a hundred years.
    pub const MAX_SECONDS: u64 = 100 * 366 * 86_400;

    /// Reads `30m`, `4h`, `3d`; nothing else.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let unit = match text.as_bytes().last() {
            Some(b'm') => DurationUnit::Minutes,
            Some(b'h') => DurationUnit::Hours,
            Some(b'd') => DurationUnit::Days,
            _ => return Err(DurationError::Malformed),
        };
        let digits = &text[..text.len() - 1];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(DurationError::Malformed);
        }
        let amount = digits.parse().map_err(|_| DurationError::TooLong)?;
        let duration = Self { amount, unit };
        match duration.seconds() {
            Some(seconds) if seconds <= Self::MAX_SECONDS => Ok(duration),
            _ => Err(DurationError::TooLong),
        }
    }

    /// The length in seconds, if it fits.
    pub fn seconds(self) -> Option<u64> {
        let per = match self.unit {
            DurationUnit::Minutes => 60,
            DurationUnit::Hours => 3_600,
            DurationUnit::Days => 86_400,
        };
        self.amount.checked_mul(per)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            DurationUnit::Minutes => 'm',
            DurationUnit::Hours => 'h',
            DurationUnit::Days => 'd',
        };
        write!(f, "{}{unit}", self.amount)
    }
}

/// `check` (check-1): questions a model answers about each submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The questions; the short form is one yes/no question with default thresholds.
    pub questions: Vec<Question>,
}

/// One check question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `ask`: the question in plain language.
    pub ask: String,
    /// What kind of answer it takes, with its thresholds.
    pub kind: QuestionKind,
}

/// The three question kinds of check-1.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    /// Yes/no with a probability.
    YesNo {
        /// `pass`: at or above, the answer passes; default from `describe.limits.checkPass`.
        pass: Option<f64>,
        /// `fail`: below, the answer fails; between `fail` and `pass` it is unsure.
        fail: Option<f64>,
    },
    /// A choice among named answers.
    Choice {
        /// `one_of`: answer name and description, in order.
        answers: Vec<(String, String)>,
        /// `pass`: names that pass.
        pass: Vec<String>,
        /// `unsure`: names that are unsure; any other fails.
        unsure: Vec<String>,
        /// `confidence`: below it the answer is unsure.
        confidence: Option<f64>,
    },
    /// A rubric of ordered levels, worst first.
    Rubric {
        /// `levels`: 2–10 descriptions.
        levels: Vec<String>,
        /// `pass`: the 0-based level at or above which the answer passes.
        pass: usize,
        /// `confidence`: below it the answer is unsure.
        confidence: Option<f64>,
    },
}
