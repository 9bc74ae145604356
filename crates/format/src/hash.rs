//! The content hash (spec §6 rule 5).

use sha2::{Digest, Sha256};

/// SHA-256 over the RFC 8785 canonical JSON of the parsed frontmatter, one newline,
/// then the body exactly as written; lowercase hex.
pub(crate) fn content_hash(frontmatter: &serde_json::Value, body: &str) -> String {
    // Every number in the tree was checked to be finite and exact as a double, the
    // only case in which canonicalization could fail or round.
    let canonical = serde_json_canonicalizer::to_vec(frontmatter).unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(&canonical);
    hasher.update(b"\n");
    hasher.update(body.as_bytes());
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_canonical_json_newline_body() {
        let frontmatter = serde_json::json!({ "name": "a", "description": "b" });
        // sha256 of `{"description":"b","name":"a"}\nbody`
        let expected = {
            let mut hasher = Sha256::new();
            hasher.update(b"{\"description\":\"b\",\"name\":\"a\"}\nbody");
            hasher
                .finalize()
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        };
        assert_eq!(content_hash(&frontmatter, "body"), expected);
    }

    #[test]
    fn numbers_are_written_as_es6_does() {
        let value: serde_json::Value = serde_json::from_str(r#"{"b":1.50,"a":1e21,"c":0.1}"#).expect("json");
        let canonical = serde_json_canonicalizer::to_string(&value).expect("canonical");
        assert_eq!(canonical, r#"{"a":1e+21,"b":1.5,"c":0.1}"#);
    }
}
