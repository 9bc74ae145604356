#![doc = include_str!("../README.md")]

mod s3;

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tracing::Instrument as _;

pub use s3::{S3Blobs, S3Keys, S3Settings};

/// What can go wrong storing or reading bytes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key is not one the service makes.
    #[error("unsafe blob key {0:?}")]
    Key(String),
    /// The storage failed.
    #[error("blob storage: {0}")]
    Io(#[from] io::Error),
    /// The object store refused or could not be reached.
    #[error("object storage: {0}")]
    Storage(String),
}

/// Evidence bytes by key.
pub trait Blobs: Send + Sync + 'static {
    /// Stores `bytes` under `key`, replacing what was there.
    fn put(&self, key: &str, bytes: &[u8], content_type: &str) -> impl Future<Output = Result<(), Error>> + Send;

    /// The bytes under `key`, or `None` when there are none.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, Error>> + Send;

    /// Removes the bytes under `key`; nothing there is not an error.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), Error>> + Send;

    /// A URL the bytes under `key` can be fetched from directly for `expires_in`,
    /// served as `file_name` of `content_type`; `None` when the store has no such
    /// URLs (the server then serves the bytes itself).
    fn download_url(
        &self,
        key: &str,
        file_name: &str,
        content_type: &str,
        expires_in: Duration,
    ) -> impl Future<Output = Result<Option<String>, Error>> + Send {
        let _ = (key, file_name, content_type, expires_in);
        std::future::ready(Ok(None))
    }
}

/// A `Content-Disposition` value that offers `file_name` as a download.
pub fn attachment(file_name: &str) -> String {
    format!("attachment; filename=\"{}\"", file_name.replace(['"', '\\'], "_"))
}

/// Refuses keys that are not `<part>/<part>…` of `[A-Za-z0-9_.-]`, so no key can
/// leave its directory or name another organization's object by accident.
fn check_key(key: &str) -> Result<(), Error> {
    let safe = !key.is_empty()
        && key.split('/').all(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        });
    if safe { Ok(()) } else { Err(Error::Key(key.to_owned())) }
}

/// The stores a server can be configured with.
#[derive(Debug, Clone)]
pub enum ServerBlobs {
    /// A local (or shared network) directory.
    Local(LocalBlobs),
    /// An S3 bucket.
    S3(S3Blobs),
    /// None, in a process that never reads or writes evidence (the scheduler).
    None(NoBlobs),
}

impl ServerBlobs {
    fn span(&self, operation: &'static str) -> tracing::Span {
        let store = match self {
            ServerBlobs::Local(_) => "local",
            ServerBlobs::S3(_) => "s3",
            ServerBlobs::None(_) => "none",
        };
        agentprocess_telemetry::spans::blob(operation, store)
    }
}

impl Blobs for ServerBlobs {
    async fn put(&self, key: &str, bytes: &[u8], content_type: &str) -> Result<(), Error> {
        let put = async {
            match self {
                ServerBlobs::Local(local) => local.put(key, bytes, content_type).await,
                ServerBlobs::S3(s3) => s3.put(key, bytes, content_type).await,
                ServerBlobs::None(none) => none.put(key, bytes, content_type).await,
            }
        };
        put.instrument(self.span("put")).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        let get = async {
            match self {
                ServerBlobs::Local(local) => local.get(key).await,
                ServerBlobs::S3(s3) => s3.get(key).await,
                ServerBlobs::None(none) => none.get(key).await,
            }
        };
        get.instrument(self.span("get")).await
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        let delete = async {
            match self {
                ServerBlobs::Local(local) => local.delete(key).await,
                ServerBlobs::S3(s3) => s3.delete(key).await,
                ServerBlobs::None(none) => none.delete(key).await,
            }
        };
        delete.instrument(self.span("delete")).await
    }

    async fn download_url(
        &self,
        key: &str,
        file_name: &str,
        content_type: &str,
        expires_in: Duration,
    ) -> Result<Option<String>, Error> {
        match self {
            ServerBlobs::Local(_) | ServerBlobs::None(_) => Ok(None),
            ServerBlobs::S3(s3) => s3.download_url(key, file_name, content_type, expires_in).await,
        }
    }
}

/// No storage, for a process that never reads or writes evidence (the scheduler):
/// every call fails.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBlobs;

impl Blobs for NoBlobs {
    async fn put(&self, _key: &str, _bytes: &[u8], _content_type: &str) -> Result<(), Error> {
        Err(Error::Io(io::Error::other("this process stores no files")))
    }

    async fn get(&self, _key: &str) -> Result<Option<Vec<u8>>, Error> {
        Err(Error::Io(io::Error::other("this process reads no files")))
    }

    async fn delete(&self, _key: &str) -> Result<(), Error> {
        Err(Error::Io(io::Error::other("this process removes no files")))
    }
}

/// Bytes as files under one directory.
#[derive(Debug, Clone)]
pub struct LocalBlobs {
    root: PathBuf,
}

impl LocalBlobs {
    /// Keeps files under `root`, creating it if needed.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        Ok(Self { root })
    }

    fn path(&self, key: &str) -> Result<PathBuf, Error> {
        check_key(key)?;
        Ok(self.root.join(Path::new(key)))
    }
}

impl Blobs for LocalBlobs {
    async fn put(&self, key: &str, bytes: &[u8], _content_type: &str) -> Result<(), Error> {
        let path = self.path(key)?;
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let partial = path.with_extension("partial");
        tokio::fs::write(&partial, bytes).await?;
        tokio::fs::rename(&partial, &path).await?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        match tokio::fs::remove_file(self.path(key)?).await {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error.into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let mut salt = [0u8; 8];
        getrandom::fill(&mut salt).expect("random");
        let name: String = salt.iter().map(|b| format!("{b:02x}")).collect();
        std::env::temp_dir().join(format!("agentprocess-blobs-{name}"))
    }

    #[tokio::test]
    async fn bytes_come_back_as_written_and_missing_keys_are_none() {
        let root = scratch();
        let blobs = LocalBlobs::new(&root).expect("dir");
        blobs.put("o_1/f_1", b"hello", "text/plain").await.expect("put");
        assert_eq!(blobs.get("o_1/f_1").await.expect("get"), Some(b"hello".to_vec()));
        assert_eq!(blobs.get("o_1/f_2").await.expect("get"), None);
        blobs.delete("o_1/f_1").await.expect("delete");
        blobs.delete("o_1/f_1").await.expect("deleting what is gone is fine");
        assert_eq!(blobs.get("o_1/f_1").await.expect("get"), None);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[tokio::test]
    async fn keys_that_could_leave_the_directory_are_refused() {
        let root = scratch();
        let blobs = LocalBlobs::new(&root).expect("dir");
        for key in ["../x", "o/../../x", "/etc/passwd", "", "o//f", "o/f\\g"] {
            assert!(
                matches!(blobs.put(key, b"x", "text/plain").await, Err(Error::Key(_))),
                "{key}"
            );
        }
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
