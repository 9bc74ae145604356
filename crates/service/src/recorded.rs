//! How a write's result is recorded under its `requestId`, and read back for a replay.
//!
//! A result is recorded as its JSON. A `claim` or a run view shows the whole run data,
//! so on a run with large parts (see [`crate::stored`]) that copy would be as large as
//! the run, written again by every write. There the result is recorded without its run
//! data, beside the run's row as this write left it: the pieces that row names are
//! never changed or removed, so a replay rebuilds exactly the run data the original
//! call answered with.
//!
//! A result that hands out a credential (a claim token) records it sealed with the
//! server's key, bound to the organization and the `requestId`: a read of the
//! database alone yields no usable token, and a sealed token copied to another record
//! does not open.

use agentprocess_auth::SecretKey;
use agentprocess_auth::secrets::SealError;
use agentprocess_store::StoredRun;
use agentprocess_views::{RunData, ToolResult};
use serde::{Deserialize, Serialize};

use crate::stored;

/// How a result recorded by reference starts (no result's JSON starts so).
const BY_REFERENCE_PREFIX: &str = "{\"runRow\":";

/// The run's row as a write left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunRowRef {
    /// The run id.
    pub(crate) id: String,
    /// The row's document.
    pub(crate) doc: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ByReferenceOut<'a, R> {
    run_row: &'a RunRowRef,
    result: &'a R,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ByReferenceIn<R> {
    run_row: RunRowRef,
    result: R,
}

/// How the credential of one record is sealed: the server's key, and the record it
/// belongs to.
pub(crate) struct Sealing<'a> {
    key: &'a SecretKey,
    org: &'a str,
    request_id: &'a str,
}

impl<'a> Sealing<'a> {
    /// For the record of `request_id` in `org`.
    pub(crate) fn of(key: &'a SecretKey, org: &'a str, request_id: &'a str) -> Self {
        Self { key, org, request_id }
    }

    /// What binds a sealed credential to its record.
    fn context(&self) -> String {
        format!("recorded-credential:{}:{}", self.org, self.request_id)
    }
}

/// The text to record for `result`, its credential sealed. `row` is the run's row as
/// this write left it, given when the run keeps parts as pieces: then a result that
/// shows run data is recorded without it. `result` itself is left as it was.
pub(crate) fn text<R: ToolResult>(
    result: &mut R,
    row: Option<&RunRowRef>,
    sealing: &Sealing<'_>,
) -> serde_json::Result<String> {
    let clear = result.credential_mut().map(|credential| {
        let sealed = sealing.key.seal(credential, &sealing.context());
        std::mem::replace(credential, sealed)
    });
    let text = text_as_it_is(result, row);
    if let (Some(clear), Some(credential)) = (clear, result.credential_mut()) {
        *credential = clear;
    }
    text
}

fn text_as_it_is<R: ToolResult>(result: &mut R, row: Option<&RunRowRef>) -> serde_json::Result<String> {
    let (Some(row), Some(data)) = (row, result.run_data_mut()) else {
        return serde_json::to_string(result);
    };
    let data = std::mem::take(data);
    let text = serde_json::to_string(&ByReferenceOut { run_row: row, result });
    if let Some(slot) = result.run_data_mut() {
        *slot = data;
    }
    text
}

/// A recorded result as read back: whole, or waiting for its run data from the run's
/// pieces.
pub(crate) enum Recorded<R> {
    /// The result as it was answered.
    Whole(R),
    /// The result without its run data, which the row rebuilds with the run's pieces.
    ByReference { row: RunRowRef, result: R },
}

/// Reads a recorded result's text.
pub(crate) fn parse<R: ToolResult>(text: &str) -> serde_json::Result<Recorded<R>> {
    if !text.starts_with(BY_REFERENCE_PREFIX) {
        return serde_json::from_str(text).map(Recorded::Whole);
    }
    let ByReferenceIn { run_row, result } = serde_json::from_str::<ByReferenceIn<R>>(text)?;
    Ok(Recorded::ByReference { row: run_row, result })
}

/// Opens the credential of a result read back. A record made before credentials were
/// sealed holds it in clear, and is answered as it is.
pub(crate) fn open_credential<R: ToolResult>(result: &mut R, sealing: &Sealing<'_>) -> Result<(), SealError> {
    if let Some(credential) = result.credential_mut()
        && SecretKey::is_sealed(credential)
    {
        *credential = sealing.key.open(credential, &sealing.context())?;
    }
    Ok(())
}

/// Puts back the run data of a result recorded by reference, from the row it names and
/// the run's pieces now (a superset of those the row names).
pub(crate) fn rebuild<R: ToolResult>(
    row: RunRowRef,
    mut result: R,
    pieces: Vec<agentprocess_store::Piece>,
) -> Result<R, stored::Error> {
    let run = stored::load(&StoredRun {
        id: row.id,
        doc: row.doc,
        pieces,
        revision: 0,
    })?;
    if let Some(data) = result.run_data_mut() {
        *data = RunData::of(&run);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use agentprocess_views::{RunData, ToolResult};
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use agentprocess_auth::SecretKey;

    use super::{Recorded, RunRowRef, Sealing, open_credential, parse, text};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Shows {
        token: String,
        data: RunData,
    }

    impl ToolResult for Shows {
        fn run_data_mut(&mut self) -> Option<&mut RunData> {
            Some(&mut self.data)
        }

        fn credential_mut(&mut self) -> Option<&mut String> {
            Some(&mut self.token)
        }
    }

    fn key() -> SecretKey {
        SecretKey::new(&[3; 32]).expect("a key")
    }

    fn shows() -> Shows {
        let data: RunData = serde_json::from_value(json!({ "inputs": { "a": 1 }, "steps": {} })).expect("data");
        Shows {
            token: "r_1.claim-token".to_owned(),
            data,
        }
    }

    #[test]
    fn a_result_is_recorded_whole_unless_its_run_keeps_pieces() {
        let key = key();
        let sealing = Sealing::of(&key, "o_1", "req-1");
        let mut result = shows();
        let whole = text(&mut result, None, &sealing).expect("text");
        let Recorded::Whole(mut read) = parse::<Shows>(&whole).expect("parse") else {
            panic!("recorded by reference: {whole}");
        };
        open_credential(&mut read, &sealing).expect("opens");
        assert_eq!(read, result);

        let row = RunRowRef {
            id: "r_1".to_owned(),
            doc: "{\"apart\":{}}".to_owned(),
        };
        let by_reference = text(&mut result, Some(&row), &sealing).expect("text");
        assert_eq!(result, shows(), "the result itself is left as it was");
        assert!(!by_reference.contains("\"a\":1"), "{by_reference}");
        match parse::<Shows>(&by_reference).expect("parse") {
            Recorded::ByReference { row: read, result } => {
                assert_eq!(read, row);
                assert_eq!(result.data, RunData::default());
                assert!(SecretKey::is_sealed(&result.token), "{}", result.token);
            }
            Recorded::Whole(_) => panic!("recorded whole: {by_reference}"),
        }
    }

    #[test]
    fn a_recorded_credential_is_sealed_to_its_record() {
        let key = key();
        let sealing = Sealing::of(&key, "o_1", "req-1");
        let mut result = shows();
        let recorded = text(&mut result, None, &sealing).expect("text");
        assert_eq!(result.token, "r_1.claim-token", "the answer keeps the token");
        assert!(!recorded.contains("claim-token"), "{recorded}");

        let read = || match parse::<Shows>(&recorded).expect("parse") {
            Recorded::Whole(read) => read,
            Recorded::ByReference { .. } => panic!("by reference"),
        };
        let mut elsewhere = read();
        let copied = Sealing::of(&key, "o_1", "req-2");
        assert!(
            open_credential(&mut elsewhere, &copied).is_err(),
            "another record's token"
        );
        let other_key = SecretKey::new(&[4; 32]).expect("a key");
        let mut other = read();
        assert!(open_credential(&mut other, &Sealing::of(&other_key, "o_1", "req-1")).is_err());

        let mut before = shows();
        open_credential(&mut before, &sealing).expect("a token recorded in clear is left as it is");
        assert_eq!(before.token, "r_1.claim-token");
    }
}
