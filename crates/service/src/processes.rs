//! `describe` and `list_processes`.

use agentprocess_store::Store;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use crate::{Error, Service, Tool, invalid, retry};

/// Processes per page of `list_processes`.
const PROCESS_PAGE: u32 = 50;

impl Service {
    /// `describe`: the protocol, profiles, lease, person format, tools and limits.
    pub fn describe(&self) -> Value {
        let settings = &self.settings;
        let check = &settings.engine.check;
        let mut profiles = vec!["parallel-1"];
        if self.check_offered() {
            profiles.push("check-1");
        }
        json!({
            "protocol": "agentprocess",
            "version": "core-2",
            "profiles": profiles,
            "leaseSeconds": settings.engine.lease_seconds,
            "person": { "format": settings.engine.person.name() },
            "tools": Tool::ALL.map(Tool::name),
            "maxUploadBytes": settings.max_upload_bytes,
            "limits": {
                "runDataBytes": settings.engine.run_data_bytes,
                // Published even while check-1 is not offered: the official describe
                // schema requires them.
                "checkPass": check.pass,
                "checkFail": check.fail,
                "checkConfidence": check.confidence,
                "checkStateBytes": check.state_bytes,
            }
        })
    }

    /// `list_processes`: the latest version of each published process, by name.
    pub async fn list_processes(&self, org: &str, cursor: Option<&str>) -> Result<Value, Error> {
        let after = cursor
            .map(|cursor| {
                URL_SAFE_NO_PAD
                    .decode(cursor)
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .ok_or_else(|| {
                        invalid(
                            "the cursor is not one this server gave",
                            vec!["cursor: not recognised".to_owned()],
                        )
                    })
            })
            .transpose()?;
        let stored = self
            .store
            .latest_versions(org, after.as_deref(), PROCESS_PAGE + 1)
            .await
            .map_err(retry)?;
        let more = stored.len() > PROCESS_PAGE as usize;
        let mut items = Vec::new();
        for version in stored.iter().take(PROCESS_PAGE as usize) {
            let parsed = self.parse(org, version)?;
            let frontmatter = parsed.process.frontmatter();
            let mut item = Map::new();
            item.insert("name".to_owned(), json!(version.process));
            item.insert("description".to_owned(), frontmatter["description"].clone());
            item.insert("version".to_owned(), json!(version.number));
            item.insert(
                "inputs".to_owned(),
                frontmatter.get("inputs").cloned().unwrap_or_else(|| json!({})),
            );
            if let Some(requires) = frontmatter.get("requires") {
                item.insert("requires".to_owned(), requires.clone());
            }
            items.push(Value::Object(item));
        }
        let next = more
            .then(|| stored.get(PROCESS_PAGE as usize - 1))
            .flatten()
            .map(|last| URL_SAFE_NO_PAD.encode(&last.process));
        Ok(json!({ "items": items, "nextCursor": next }))
    }
}
