//! How a run is kept in the store. The run's row holds the engine's run without its
//! large parts; each large part (the inputs, or one completion of a step, once its JSON
//! reaches [`APART_BYTES`]) is a [`Piece`] of its own, written in the write that made it
//! and never again. A claim on a run that has recorded a megabyte then writes the few
//! kilobytes that changed, not the megabyte.
//!
//! This works because the engine only ever adds to what a run recorded: the inputs
//! never change after the start, a step's history only grows (a completion moves there
//! when it is replaced or rewound), and a current completion is replaced, never edited.
//! [`split`] leans on that and checks it in debug builds.
//!
//! The row's document is `{"apart": <Layout>, "run": <the run without its pieces>}`.
//! A document written before pieces existed is the whole run, and still reads.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;

use agentprocess_engine::{ProcessVersion, Record, Run, StepRun, Transition};
use agentprocess_store::{Piece, StoredRun};
use serde::{Deserialize, Serialize};

/// A part at least this large (as JSON) is kept apart from the run's row. Below it, a
/// separate row would cost more than rewriting the part with the run (PostgreSQL moves
/// values of about this size out of line anyway).
pub(crate) const APART_BYTES: usize = 2048;

/// How a document written with [`split`] starts; an older one is the whole run.
const SPLIT_PREFIX: &str = "{\"apart\":";

/// Which of a run's parts are pieces, and their numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Layout {
    /// The inputs' piece, when they are one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    inputs: Option<i64>,
    /// Steps with at least one completion kept as a piece, by step id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    steps: BTreeMap<String, StepLayout>,
    /// The number the next piece gets.
    #[serde(default)]
    next: i64,
}

/// Where one step's completions are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct StepLayout {
    /// Per history entry, oldest first: its piece, or `None` when it is in the row.
    history: Vec<Option<i64>>,
    /// The current completion's piece, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<i64>,
}

impl StepLayout {
    /// A step whose completions are all in the row.
    fn in_row(step: &StepRun) -> Self {
        Self {
            history: vec![None; step.history.len()],
            record: None,
        }
    }

    fn is_in_row(&self) -> bool {
        self.record.is_none() && self.history.iter().all(Option::is_none)
    }
}

/// A run as read from the store, with where its parts are kept: what a write needs to
/// store only what it changed.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    run: Run,
    layout: Layout,
}

impl Loaded {
    /// The engine's run.
    pub(crate) fn into_run(self) -> Run {
        self.run
    }
}

impl Deref for Loaded {
    type Target = Run;

    fn deref(&self) -> &Run {
        &self.run
    }
}

/// What went wrong reading a stored run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The row or a piece is not the JSON it should be.
    #[error("run {run}: {source}")]
    Json {
        run: String,
        #[source]
        source: serde_json::Error,
    },
    /// The document names a piece the run does not have.
    #[error("run {run}: piece {piece} is missing")]
    MissingPiece { run: String, piece: i64 },
    /// The layout and the run disagree on a step's history.
    #[error("run {run}: step {step}'s history does not match its layout")]
    Layout { run: String, step: String },
}

/// The run a stored row and its pieces hold.
pub(crate) fn load(stored: &StoredRun) -> Result<Loaded, Error> {
    let json = |source| Error::Json {
        run: stored.id.clone(),
        source,
    };
    if !stored.doc.starts_with(SPLIT_PREFIX) {
        let run: Run = serde_json::from_str(&stored.doc).map_err(json)?;
        return Ok(Loaded {
            run,
            layout: Layout::default(),
        });
    }
    #[derive(Deserialize)]
    struct Doc {
        apart: Layout,
        run: Run,
    }
    let Doc { apart: layout, mut run } = serde_json::from_str(&stored.doc).map_err(json)?;
    let pieces: HashMap<i64, &str> = stored
        .pieces
        .iter()
        .map(|piece| (piece.number, piece.body.as_str()))
        .collect();
    let body = |piece: i64| {
        pieces.get(&piece).copied().ok_or_else(|| Error::MissingPiece {
            run: stored.id.clone(),
            piece,
        })
    };
    let record = |piece: i64| serde_json::from_str::<Record>(body(piece)?).map_err(json);
    if let Some(piece) = layout.inputs {
        run.inputs = agentprocess_format::exact::parse_object(body(piece)?).map_err(json)?;
    }
    for step in &mut run.steps {
        let Some(places) = layout.steps.get(&step.id) else {
            continue;
        };
        let mut in_row = std::mem::take(&mut step.history).into_iter();
        let mut history = Vec::with_capacity(places.history.len());
        for place in &places.history {
            history.push(match place {
                Some(piece) => record(*piece)?,
                None => in_row.next().ok_or_else(|| Error::Layout {
                    run: stored.id.clone(),
                    step: step.id.clone(),
                })?,
            });
        }
        if in_row.next().is_some() {
            return Err(Error::Layout {
                run: stored.id.clone(),
                step: step.id.clone(),
            });
        }
        step.history = history;
        if let Some(piece) = places.record {
            step.record = Some(record(piece)?);
        }
    }
    Ok(Loaded { run, layout })
}

/// What to write for `run`: the row's document, and the pieces new since `before` (the
/// run as it was read; `None` for a new run).
pub(crate) struct Split {
    /// The row's document.
    pub(crate) doc: String,
    /// Pieces to add.
    pub(crate) pieces: Vec<Piece>,
    /// Whether the run keeps any part as a piece.
    pub(crate) apart: bool,
}

/// Splits `run` for storing: parts stored before stay where they are, and each part
/// made since `before` becomes a piece when it is large.
pub(crate) fn split(before: Option<&Loaded>, run: &Run) -> serde_json::Result<Split> {
    let mut layout = Layout {
        next: before.map_or(0, |before| before.layout.next),
        ..Layout::default()
    };
    let mut pieces = Vec::new();
    let mut place = |layout: &mut Layout, json: String| -> Option<i64> {
        if json.len() < APART_BYTES {
            return None;
        }
        let number = layout.next;
        layout.next += 1;
        pieces.push(Piece { number, body: json });
        Some(number)
    };
    layout.inputs = match before {
        Some(before) => {
            debug_assert!(before.run.inputs == run.inputs, "inputs changed after the start");
            before.layout.inputs
        }
        None => place(&mut layout, serde_json::to_string(&run.inputs)?),
    };
    for (index, step) in run.steps.iter().enumerate() {
        let earlier = before.and_then(|before| {
            let old = before.run.steps.get(index).filter(|old| old.id == step.id)?;
            let places = before
                .layout
                .steps
                .get(&step.id)
                .cloned()
                .unwrap_or_else(|| StepLayout::in_row(old));
            Some((old, places))
        });
        let mut places = StepLayout::default();
        let mut kept = 0;
        let mut record_kept = false;
        if let Some((old, old_places)) = earlier
            && step.history.len() >= old.history.len()
        {
            places.history = old_places.history;
            kept = old.history.len();
            if step.history.len() > kept {
                // The completion current before moved to history first.
                if let Some(moved) = &old.record {
                    debug_assert!(step.history[kept] == *moved);
                    places.history.push(old_places.record);
                    kept += 1;
                }
            } else if let (Some(current), Some(old_record)) = (&step.record, &old.record) {
                record_kept = same_completion(current, old_record);
                if record_kept {
                    places.record = old_places.record;
                }
            }
        }
        for record in &step.history[kept..] {
            let piece = place(&mut layout, serde_json::to_string(record)?);
            places.history.push(piece);
        }
        if let Some(record) = &step.record
            && !record_kept
        {
            places.record = place(&mut layout, serde_json::to_string(record)?);
        }
        if !places.is_in_row() {
            layout.steps.insert(step.id.clone(), places);
        }
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        apart: &'a Layout,
        run: &'a Run,
    }
    let apart = layout.inputs.is_some() || !layout.steps.is_empty();
    // A run with nothing apart (most runs, and every write of the agent loop) is
    // written as it is, without first copying it.
    let row = apart.then(|| in_row(run, &layout));
    let doc = serde_json::to_string(&Doc {
        apart: &layout,
        run: row.as_ref().unwrap_or(run),
    })?;
    Ok(Split { doc, pieces, apart })
}

/// Whether a step's current completion is the one it had before the write. A
/// completion is replaced, never edited, and its replacement is made at a later time,
/// by someone else or with another decision; debug builds check the whole record.
fn same_completion(current: &Record, old: &Record) -> bool {
    let same = current.at == old.at && current.by == old.by && current.decision == old.decision;
    debug_assert!(!same || current == old, "a completion was edited in place");
    same
}

/// `run` without the parts `layout` keeps as pieces: what the row holds.
fn in_row(run: &Run, layout: &Layout) -> Run {
    Run {
        id: run.id.clone(),
        process: run.process.clone(),
        version: run.version,
        mode: run.mode,
        started_by: run.started_by.clone(),
        initiator: run.initiator.clone(),
        started_at: run.started_at,
        updated_at: run.updated_at,
        end: run.end.clone(),
        inputs: match layout.inputs {
            Some(_) => serde_json::Map::new(),
            None => run.inputs.clone(),
        },
        steps: run
            .steps
            .iter()
            .map(|step| step_in_row(step, layout.steps.get(&step.id)))
            .collect(),
        events: run.events.clone(),
        completions: run.completions,
        decided: run.decided.clone(),
    }
}

fn step_in_row(step: &StepRun, places: Option<&StepLayout>) -> StepRun {
    let (record, history) = match places {
        None => (step.record.clone(), step.history.clone()),
        Some(places) => (
            step.record.as_ref().filter(|_| places.record.is_none()).cloned(),
            step.history
                .iter()
                .zip(&places.history)
                .filter(|(_, place)| place.is_none())
                .map(|(record, _)| record.clone())
                .collect(),
        ),
    };
    StepRun {
        id: step.id.clone(),
        state: step.state,
        record,
        history,
        completed: step.completed,
        entered: step.entered,
        ready_since: step.ready_since,
        due_at: step.due_at,
        overdue: step.overdue,
        attempt: step.attempt,
        claim: step.claim.clone(),
        work_item: step.work_item.clone(),
        handoff: step.handoff.clone(),
        retired_tokens: step.retired_tokens.clone(),
    }
}

/// What a write changed: the run before (`None` for a new run), the engine's
/// transition, and the version it ran on.
#[derive(Clone, Copy)]
pub(crate) struct Change<'a> {
    pub(crate) before: Option<&'a Loaded>,
    pub(crate) transition: &'a Transition,
    pub(crate) version: &'a ProcessVersion,
}

#[cfg(test)]
mod tests {
    use agentprocess_engine::{Record, Run, StepRun, StepState};
    use agentprocess_store::StoredRun;
    use jiff::Timestamp;
    use serde_json::{Map, Value, json};

    use super::{APART_BYTES, Loaded, load, split};

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + second).expect("time")
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object"),
        }
    }

    /// A run of two steps with `inputs`, read as the wire reads them (numbers kept as written).
    fn run(inputs: &str) -> Run {
        Run {
            initiator: Some("a@example.com".to_owned()),
            inputs: agentprocess_format::exact::parse_object(inputs).expect("inputs"),
            ..Run::new(
                "r_1",
                ("p", 1),
                "a@example.com",
                at(0),
                vec![StepRun::new("first"), StepRun::new("second")],
            )
        }
    }

    /// A completion whose JSON is about `bytes` long.
    fn completion(by: &str, second: i64, bytes: usize) -> Record {
        Record {
            output: Some(object(json!({ "notes": "n".repeat(bytes), "amount": 1080.50 }))),
            summary: Some("done".to_owned()),
            by: by.to_owned(),
            at: at(second),
            ..Record::default()
        }
    }

    /// The step completes with `record`, an earlier completion going to history.
    fn complete(run: &mut Run, step: usize, record: Record) {
        run.completions += 1;
        let step = &mut run.steps[step];
        if let Some(previous) = step.record.replace(record) {
            step.history.push(previous);
        }
        step.state = Some(StepState::Done);
        step.completed = Some(run.completions);
    }

    /// Writes `run` over `before` and reads it back as the store would return it,
    /// holding the pieces of every earlier write too.
    fn write(before: Option<&Loaded>, run: &Run, kept: &mut Vec<agentprocess_store::Piece>) -> (Loaded, usize) {
        let written = split(before, run).expect("split");
        let added = written.pieces.len();
        kept.extend(written.pieces);
        let stored = StoredRun {
            id: run.id.clone(),
            doc: written.doc,
            pieces: kept.clone(),
            revision: 0,
        };
        let loaded = load(&stored).expect("load");
        assert_eq!(*loaded, *run, "what was written reads back");
        (loaded, added)
    }

    #[test]
    fn a_small_run_is_one_row() {
        let mut pieces = Vec::new();
        let mut small = run(r#"{ "vendor": "acme", "amount": 1e400, "price": 1080.50 }"#);
        let (loaded, added) = write(None, &small, &mut pieces);
        assert_eq!(added, 0);
        complete(&mut small, 0, completion("agent-1", 5, 100));
        let (_, added) = write(Some(&loaded), &small, &mut pieces);
        assert_eq!(added, 0);
    }

    #[test]
    fn large_parts_are_written_once_and_later_writes_leave_them() {
        let mut pieces = Vec::new();
        let mut big = run(&format!(
            r#"{{ "contract": "{}", "amount": 1E5 }}"#,
            "c".repeat(APART_BYTES)
        ));
        let (loaded, added) = write(None, &big, &mut pieces);
        assert_eq!(added, 1, "the inputs");

        complete(&mut big, 0, completion("agent-1", 5, 100_000));
        let (loaded, added) = write(Some(&loaded), &big, &mut pieces);
        assert_eq!(added, 1, "the completion");

        // A write that changes only the hot part (here, a claim-like change) adds
        // nothing and leaves the row small.
        big.steps[1].state = Some(StepState::Claimed);
        big.updated_at = at(6);
        let written = split(Some(&loaded), &big).expect("split");
        assert!(written.pieces.is_empty());
        assert!(written.doc.len() < 2_000, "{} bytes in the row", written.doc.len());
        let (loaded, _) = write(Some(&loaded), &big, &mut pieces);

        // Rework: the big completion moves to history where it already is a piece;
        // only the new completion is written.
        complete(&mut big, 0, completion("agent-2", 9, 50_000));
        let (loaded, added) = write(Some(&loaded), &big, &mut pieces);
        assert_eq!(added, 1);
        assert_eq!(loaded.steps[0].history.len(), 1);

        // A completion rewound by a rejection goes to history with its piece.
        let rewound = big.steps[0].record.take().expect("current");
        big.steps[0].history.push(rewound);
        big.steps[0].state = None;
        let (_, added) = write(Some(&loaded), &big, &mut pieces);
        assert_eq!(added, 0);
    }

    #[test]
    fn small_and_large_completions_keep_their_order_in_history() {
        let mut pieces = Vec::new();
        let mut mixed = run("{}");
        let (mut loaded, _) = write(None, &mixed, &mut pieces);
        for (second, bytes) in [(1, 10), (2, 10_000), (3, 20), (4, 30_000), (5, 40)] {
            complete(&mut mixed, 1, completion("agent-1", second, bytes));
            loaded = write(Some(&loaded), &mixed, &mut pieces).0;
        }
        assert_eq!(pieces.len(), 2);
        let sizes: Vec<usize> = loaded.steps[1]
            .history
            .iter()
            .map(|record| serde_json::to_string(record).expect("json").len())
            .collect();
        assert!(
            sizes[0] < 200 && sizes[1] > 10_000 && sizes[2] < 200 && sizes[3] > 30_000,
            "{sizes:?}"
        );
    }

    #[test]
    fn a_completion_replaced_in_place_is_written_again() {
        // The server failing a step replaces its current completion without moving it.
        let mut pieces = Vec::new();
        let mut failing = run("{}");
        let (loaded, _) = write(None, &failing, &mut pieces);
        complete(&mut failing, 0, completion("agent-1", 1, 10_000));
        let (loaded, _) = write(Some(&loaded), &failing, &mut pieces);
        failing.steps[0].record = Some(Record {
            decision: Some(agentprocess_engine::Decision::Failed),
            note: Some("n".repeat(APART_BYTES)),
            by: "server".to_owned(),
            at: at(1),
            ..Record::default()
        });
        let (_, added) = write(Some(&loaded), &failing, &mut pieces);
        assert_eq!(added, 1);
    }

    #[test]
    fn a_row_written_before_pieces_reads_as_it_was() {
        let mut whole = run(r#"{ "amount": 1080.50 }"#);
        complete(&mut whole, 0, completion("agent-1", 5, 10_000));
        let stored = StoredRun {
            id: whole.id.clone(),
            doc: serde_json::to_string(&whole).expect("json"),
            pieces: Vec::new(),
            revision: 0,
        };
        let loaded = load(&stored).expect("load");
        assert_eq!(*loaded, whole);
        // Its next write keeps what it had in the row, and puts new large parts apart.
        complete(&mut whole, 1, completion("agent-1", 6, 10_000));
        let mut pieces = Vec::new();
        let (_, added) = write(Some(&loaded), &whole, &mut pieces);
        assert_eq!(added, 1);
    }

    #[test]
    fn a_missing_piece_is_an_error() {
        let big = run(&format!(
            r#"{{ "contract": "{}", "amount": 1E5 }}"#,
            "c".repeat(APART_BYTES)
        ));
        let written = split(None, &big).expect("split");
        let stored = StoredRun {
            id: big.id.clone(),
            doc: written.doc,
            pieces: Vec::new(),
            revision: 0,
        };
        let error = load(&stored).expect_err("no pieces");
        assert_eq!(error.to_string(), "run r_1: piece 0 is missing");
    }
}
