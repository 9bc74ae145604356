//! Evidence files: `upload`, verification against the stored bytes, and signed
//! short-lived URLs on every file item of run data.

use agentprocess_blobs::Blobs;
use agentprocess_engine::EvidenceItem;
use agentprocess_format::EvidenceKind;
use agentprocess_store::{NewUpload, Store, StoreTx, Upload};
use agentprocess_views::{ToolResult, UploadResult};
use hmac::{KeyInit, Mac};

use crate::ids::{hex, random_id, sha256_hex};
use crate::write::{Hold, Write, fresh};
use crate::{Caller, Error, Limit, Service, Tool, forbidden, invalid, millis, retry};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// Longest file name, in characters.
const MAX_FILE_NAME: usize = 255;

/// What a signed URL opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileDownload {
    /// The bytes, from a store that has no URLs of its own.
    Bytes {
        /// The name given at upload.
        file_name: String,
        /// The content type given at upload.
        content_type: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A short-lived URL of the object store that serves the bytes itself (an S3
    /// presigned GET), valid no longer than the signed URL that led to it.
    Redirect(String),
}

impl Service {
    /// `upload`: stores the bytes and records their SHA-256.
    pub async fn upload(
        &self,
        caller: &Caller,
        file_name: &str,
        content_type: &str,
        bytes: Vec<u8>,
        write: &Write,
    ) -> Result<UploadResult, Error> {
        let mut issues = file_name_issues(file_name);
        if content_type.trim().is_empty() || content_type.len() > 255 || content_type.chars().any(char::is_control) {
            issues.push("contentType: must be a media type such as application/pdf".to_owned());
        }
        if bytes.len() > self.settings.max_upload_bytes {
            issues.push(format!(
                "contentBase64: {} bytes, more than maxUploadBytes ({})",
                bytes.len(),
                self.settings.max_upload_bytes
            ));
        }
        if !issues.is_empty() {
            return Err(invalid("the upload was refused; nothing was stored", issues));
        }
        let mut hold = fresh!(
            self.open(caller, write, Tool::Upload, (Limit::StoredBytes, bytes.len() as u64))
                .await?
        );
        let id = random_id("f_", 8);
        let upload = Upload {
            sha256: sha256_hex(&bytes),
            bytes: bytes.len() as u64,
            content_type: content_type.to_owned(),
            file_name: file_name.to_owned(),
            storage_key: format!("{}/{id}", caller.org()),
            id,
        };
        self.blobs
            .put(&upload.storage_key, &bytes, &upload.content_type)
            .await
            .map_err(retry)?;
        let record = NewUpload {
            upload: upload.clone(),
            uploaded_by: caller.identity.id.clone(),
            created_at: millis(self.now()),
        };
        let tx = self.transaction(&mut hold, caller.org()).await?;
        tx.put_upload(caller.org(), &record).await.map_err(retry)?;
        let result = UploadResult {
            id: upload.id,
            sha256: upload.sha256,
            bytes: upload.bytes,
        };
        self.finish(hold, caller, write, Tool::Upload, None, result).await
    }

    /// Checks every file item against the stored bytes: it must exist in this
    /// organization and still hash to what was recorded. Verified items get their
    /// `sha256`; the rest give issues in the spec's words.
    pub(crate) async fn verify_files(
        &self,
        hold: &mut Hold,
        org: &str,
        evidence: &mut [EvidenceItem],
    ) -> Result<Vec<String>, Error> {
        let mut issues = Vec::new();
        for item in evidence.iter_mut().filter(|item| item.kind == EvidenceKind::File) {
            // The upload's row stays locked to the end, with the run's.
            let tx = self.transaction(hold, org).await?;
            let reference = item.reference.clone();
            // Cited from now on, so never swept (even if this submission is refused:
            // it will likely be cited again).
            let cited = tx.cite_upload(org, &reference, millis(self.now())).await;
            let Some(upload) = cited.map_err(retry)? else {
                issues.push(format!("evidence {reference}: not found"));
                continue;
            };
            match self.blobs.get(&upload.storage_key).await.map_err(retry)? {
                None => issues.push(format!("evidence {reference}: stored bytes are missing")),
                Some(bytes) if sha256_hex(&bytes) != upload.sha256 => {
                    issues.push(format!("evidence {reference}: hash mismatch"));
                }
                Some(_) => item.sha256 = Some(upload.sha256),
            }
        }
        Ok(issues)
    }

    /// `result` with a signed `url` on every file item it shows.
    pub(crate) fn present<R: ToolResult>(&self, org: &str, mut result: R) -> R {
        let expires = self.url_expiry();
        let base = self.settings.public_url.trim_end_matches('/');
        result.sign_files(&|id| {
            format!(
                "{base}/files/{org}/{id}?expires={expires}&signature={}",
                self.signature(org, id, expires)
            )
        });
        result
    }

    /// When URLs made now expire: the end of the next whole period, so every call in
    /// one period (a request and its replays) gets the same URL.
    fn url_expiry(&self) -> i64 {
        let period = i64::from(self.settings.url_seconds.max(1));
        let now = self.now().as_second();
        (now / period + 2) * period
    }

    fn signature(&self, org: &str, id: &str, expires: i64) -> String {
        let Ok(mut mac) = HmacSha256::new_from_slice(&self.settings.url_secret) else {
            return String::new();
        };
        mac.update(format!("{org}/{id}/{expires}").as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// The file behind a signed URL, if the signature holds and has not expired.
    pub async fn download(
        &self,
        org: &str,
        id: &str,
        expires: i64,
        signature: &str,
        preview: bool,
    ) -> Result<Option<FileDownload>, Error> {
        let expected = self.signature(org, id, expires);
        let same = expected.len() == signature.len()
            && expected
                .bytes()
                .zip(signature.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same || expires < self.now().as_second() {
            return Err(forbidden("the file URL is not valid or has expired"));
        }
        let Some(upload) = self.store.upload(org, id).await.map_err(retry)? else {
            return Ok(None);
        };
        let remaining = u64::try_from(expires - self.now().as_second()).unwrap_or(0).max(1);
        let direct = self
            .blobs
            .download_url(
                &upload.storage_key,
                &upload.file_name,
                &upload.content_type,
                std::time::Duration::from_secs(remaining.min(u64::from(self.settings.url_seconds.max(1)))),
            )
            .await
            .map_err(retry)?;
        // A preview is served from here, not the object store's URL: the page that shows
        // it lets nothing load from another origin.
        if let Some(url) = direct.filter(|_| !preview) {
            return Ok(Some(FileDownload::Redirect(url)));
        }
        let bytes = self.blobs.get(&upload.storage_key).await.map_err(retry)?;
        Ok(bytes.map(|bytes| FileDownload::Bytes {
            file_name: upload.file_name,
            content_type: upload.content_type,
            bytes,
        }))
    }
}

impl Service {
    /// Removes uploads never cited and older than `retention`. The record goes first, in
    /// a transaction that re-checks it is uncited (a citing write locks the row), then the
    /// bytes.
    pub(crate) async fn sweep_uploads(&self, retention: std::time::Duration) -> Result<usize, String> {
        let before = millis(self.now()).saturating_sub(crate::scheduler::duration_millis(retention));
        let stale = self
            .store
            .uncited_uploads(before, 500)
            .await
            .map_err(|error| error.to_string())?;
        let mut removed = 0;
        for (org, id) in stale {
            let mut tx = self.store.begin().await.map_err(|error| error.to_string())?;
            let key = tx
                .remove_uncited_upload(&org, &id)
                .await
                .map_err(|error| error.to_string())?;
            tx.commit().await.map_err(|error| error.to_string())?;
            if let Some(key) = key {
                // A failure leaves bytes no record names: harmless, and logged.
                if let Err(error) = self.blobs.delete(&key).await {
                    tracing::warn!(%org, upload = %id, %error, "upload record removed but not its bytes");
                }
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// What is wrong with a file name: empty, too long, a path, or control characters.
fn file_name_issues(name: &str) -> Vec<String> {
    let mut issues = Vec::new();
    if name.trim().is_empty() {
        issues.push("fileName: must not be empty".to_owned());
    } else if name.chars().count() > MAX_FILE_NAME {
        issues.push(format!("fileName: longer than {MAX_FILE_NAME} characters"));
    }
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        issues.push("fileName: must be a plain file name, not a path".to_owned());
    }
    if name.chars().any(char::is_control) {
        issues.push("fileName: must not contain control characters".to_owned());
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::file_name_issues;

    #[test]
    fn file_names_that_are_paths_or_blank_are_refused() {
        assert!(file_name_issues("report.pdf").is_empty());
        for bad in ["", "  ", "../x", "a/b", "a\\b", "..", "a\nb"] {
            assert!(!file_name_issues(bad).is_empty(), "{bad:?}");
        }
    }
}
