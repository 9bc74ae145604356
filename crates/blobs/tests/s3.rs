//! The S3 adapter against a real S3-compatible server: s3s-fs, started by each test on
//! a free port over a temporary directory. The binary is found through
//! `AGENTPROCESS_S3S_FS`, else in the cache folder where `scripts/install-test-deps`
//! puts it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentprocess_blobs::{Blobs, Error, S3Blobs, S3Keys, S3Settings};

fn s3s_fs() -> PathBuf {
    if let Ok(path) = std::env::var("AGENTPROCESS_S3S_FS") {
        return PathBuf::from(path);
    }
    let cache = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache"));
    cache.join("agentprocess/s3s-fs/bin/s3s-fs")
}

/// A running s3s-fs; stopped and its directory removed on drop.
struct Server {
    child: Child,
    dir: PathBuf,
    endpoint: String,
}

impl Server {
    fn start() -> Self {
        let mut salt = [0u8; 6];
        getrandom::fill(&mut salt).expect("random");
        let name: String = salt.iter().map(|b| format!("{b:02x}")).collect();
        let dir = std::env::temp_dir().join(format!("agentprocess-s3-{name}"));
        std::fs::create_dir_all(&dir).expect("dir");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(s3s_fs())
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--access-key",
                "K",
                "--secret-key",
                "S",
            ])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("s3s-fs runs (scripts/install-test-deps installs it)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "s3s-fs did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            dir,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    fn settings(&self) -> S3Settings {
        settings(&self.endpoint)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn settings(endpoint: &str) -> S3Settings {
    S3Settings {
        bucket: "evidence".to_owned(),
        prefix: "files/".to_owned(),
        region: "us-east-1".to_owned(),
        endpoint: Some(endpoint.to_owned()),
        path_style: true,
        keys: Some(S3Keys {
            access_key_id: "K".to_owned(),
            secret_access_key: "S".to_owned(),
        }),
        checksums_when_required: false,
        timeout: Duration::from_secs(3),
    }
}

#[tokio::test]
async fn objects_come_back_as_written_and_presigned_urls_serve_them() {
    let server = Server::start();
    let blobs = S3Blobs::new(&server.settings()).await;
    blobs.create_bucket().await.expect("bucket");
    blobs.create_bucket().await.expect("an existing bucket is fine");
    let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    blobs.put("acme/f_1", &bytes, "application/pdf").await.expect("put");
    assert_eq!(blobs.get("acme/f_1").await.expect("get"), Some(bytes.clone()));
    assert_eq!(blobs.get("acme/f_2").await.expect("get"), None);
    // Stored under the prefix, where the server keeps it as a file.
    assert!(server.dir.join("evidence/files/acme/f_1").exists());

    let url = blobs
        .download_url(
            "acme/f_1",
            "report \"final\".pdf",
            "application/pdf",
            Duration::from_secs(60),
        )
        .await
        .expect("presign")
        .expect("S3 has URLs");
    let response = reqwest::get(&url).await.expect("GET");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"report _final_.pdf\""
    );
    assert_eq!(response.bytes().await.expect("body").to_vec(), bytes);
    // The signature covers the key: another object is refused.
    let forged = url.replace("acme/f_1", "acme/f_2");
    assert_eq!(reqwest::get(&forged).await.expect("GET").status(), 403);
    blobs.delete("acme/f_1").await.expect("delete");
    blobs.delete("acme/f_1").await.expect("deleting what is gone is fine");
    assert_eq!(blobs.get("acme/f_1").await.expect("get"), None);
}

#[tokio::test]
async fn keys_that_could_name_another_object_are_refused() {
    let server = Server::start();
    let blobs = S3Blobs::new(&server.settings()).await;
    for key in ["../x", "acme/../other/f_1", "", "acme//f", "acme/f?x"] {
        assert!(
            matches!(blobs.put(key, b"x", "text/plain").await, Err(Error::Key(_))),
            "{key}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_store_fails_fast() {
    let blobs = S3Blobs::new(&settings("http://127.0.0.1:9")).await;
    let started = Instant::now();
    assert!(matches!(
        blobs.put("acme/f_1", b"x", "text/plain").await,
        Err(Error::Storage(_))
    ));
    assert!(matches!(blobs.get("acme/f_1").await, Err(Error::Storage(_))));
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
}
