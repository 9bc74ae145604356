#![doc = include_str!("../README.md")]

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};

/// What can go wrong storing or reading bytes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key is not one the service makes.
    #[error("unsafe blob key {0:?}")]
    Key(String),
    /// The storage failed.
    #[error("blob storage: {0}")]
    Io(#[from] io::Error),
}

/// Evidence bytes by key.
pub trait Blobs: Send + Sync + 'static {
    /// Stores `bytes` under `key`, replacing what was there.
    fn put(&self, key: &str, bytes: &[u8]) -> impl Future<Output = Result<(), Error>> + Send;

    /// The bytes under `key`, or `None` when there are none.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, Error>> + Send;
}

/// No storage, for a process that never reads or writes evidence (the scheduler):
/// every call fails.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBlobs;

impl Blobs for NoBlobs {
    async fn put(&self, _key: &str, _bytes: &[u8]) -> Result<(), Error> {
        Err(Error::Io(io::Error::other("this process stores no files")))
    }

    async fn get(&self, _key: &str) -> Result<Option<Vec<u8>>, Error> {
        Err(Error::Io(io::Error::other("this process reads no files")))
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
        let safe = !key.is_empty()
            && key.split('/').all(|part| {
                !part.is_empty()
                    && part != "."
                    && part != ".."
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            });
        if !safe {
            return Err(Error::Key(key.to_owned()));
        }
        Ok(self.root.join(Path::new(key)))
    }
}

impl Blobs for LocalBlobs {
    async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), Error> {
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
        blobs.put("o_1/f_1", b"hello").await.expect("put");
        assert_eq!(blobs.get("o_1/f_1").await.expect("get"), Some(b"hello".to_vec()));
        assert_eq!(blobs.get("o_1/f_2").await.expect("get"), None);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[tokio::test]
    async fn keys_that_could_leave_the_directory_are_refused() {
        let root = scratch();
        let blobs = LocalBlobs::new(&root).expect("dir");
        for key in ["../x", "o/../../x", "/etc/passwd", "", "o//f", "o/f\\g"] {
            assert!(matches!(blobs.put(key, b"x").await, Err(Error::Key(_))), "{key}");
        }
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
