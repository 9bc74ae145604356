//! Opaque paging cursors: a keyset position, base64url.

use crate::Error;
use agentprocess_store::Keyset;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::invalid;

/// The cursor for a keyset.
pub(crate) fn encode(keyset: &Keyset) -> String {
    URL_SAFE_NO_PAD.encode(format!("{}|{}", keyset.at, keyset.id))
}

/// The keyset a cursor stands for.
pub(crate) fn decode(cursor: &str) -> Result<Keyset, Error> {
    let refused = || {
        invalid(
            "the cursor is not one this server gave",
            vec!["cursor: not recognised".to_owned()],
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| refused())?;
    let text = String::from_utf8(bytes).map_err(|_| refused())?;
    let (at, id) = text.split_once('|').ok_or_else(refused)?;
    Ok(Keyset {
        at: at.parse().map_err(|_| refused())?,
        id: id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_garbage_is_invalid() {
        let keyset = Keyset {
            at: 1_790_000_000_000,
            id: "r_1 step".to_owned(),
        };
        assert_eq!(decode(&encode(&keyset)).expect("decodes"), keyset);
        for garbage in ["", "!!", "bm9wZQ"] {
            assert_eq!(
                decode(garbage).map_err(|e| e.code()),
                Err(agentprocess_engine::Code::Invalid)
            );
        }
    }
}
