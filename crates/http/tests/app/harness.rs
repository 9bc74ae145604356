//! `TestApp`: the whole router in process, over a fresh database (SQLite or
//! PostgreSQL) with a test clock, driven with `tower::ServiceExt::oneshot`. Requests go
//! through every layer a real one does: authentication, the JSON-RPC front, rmcp, the
//! session layer, CSRF, the service and the store.

use std::sync::Arc;

use agentprocess_app::IdentityConfig;
use agentprocess_app::{HttpSettings, Storage};
use agentprocess_auth::{Auth, Role};
use agentprocess_service::Service;
use agentprocess_service::{Settings, TestClock};
use agentprocess_store::{Dialect, SqlStore, Store as _};
use agentprocess_testkit::TestDb;
use agentprocess_testkit::evaluator::TestEvaluator;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt as _;

pub(crate) const PUBLIC_URL: &str = "http://localhost";

/// The test servers' HTTP settings: `localhost` only, no browser origins.
fn http_settings(dev_sign_in_org: Option<String>, direct_tool_calls: bool) -> HttpSettings {
    HttpSettings {
        allowed_hosts: vec!["localhost".to_owned()],
        allowed_origins: Vec::new(),
        dev_sign_in_org,
        direct_tool_calls,
        trusted_proxies: agentprocess_auth::forwarded::TrustedProxies::default(),
    }
}

/// An organization's server, in process.
pub(crate) struct TestApp {
    pub(crate) router: Router,
    pub(crate) service: Arc<Service>,
    pub(crate) auth: Arc<Auth>,
    pub(crate) clock: Arc<TestClock>,
    pub(crate) org: String,
    /// The test-double evaluator of a server that runs check-1.
    pub(crate) evaluator: Option<TestEvaluator>,
    db: TestDb,
    files: std::path::PathBuf,
}

impl TestApp {
    /// A server over a fresh database of `dialect`; add an organization next.
    pub(crate) async fn new(dialect: Dialect) -> Self {
        Self::reached_at(dialect, PUBLIC_URL).await
    }

    /// A server that runs check-1 with the test-double evaluator.
    pub(crate) async fn checking(dialect: Dialect) -> Self {
        Self::built(dialect, settings(PUBLIC_URL), Some(TestEvaluator::start(true).await)).await
    }

    /// The same, for a server whose public URL is `public_url`.
    pub(crate) async fn reached_at(dialect: Dialect, public_url: &str) -> Self {
        Self::built(dialect, settings(public_url), None).await
    }

    /// A server whose calls may take at most `deadline`.
    pub(crate) async fn with_call_deadline(dialect: Dialect, deadline: std::time::Duration) -> Self {
        let settings = Settings {
            call_deadline: deadline,
            ..settings(PUBLIC_URL)
        };
        Self::built(dialect, settings, None).await
    }

    /// A server whose operator allows plain http hooks (`--allow-plain-http-hooks`).
    pub(crate) async fn allowing_plain_http_hooks(dialect: Dialect) -> Self {
        let settings = Settings {
            plain_http_hooks: agentprocess_service::PlainHttpHooks::Allowed,
            ..settings(PUBLIC_URL)
        };
        Self::built(dialect, settings, None).await
    }

    /// The database the server's store connects to.
    pub(crate) fn database_url(&self) -> &str {
        &self.db.url
    }

    async fn built(dialect: Dialect, settings: Settings, evaluator: Option<TestEvaluator>) -> Self {
        let public_url = settings.public_url.clone();
        let public_url = public_url.as_str();
        let db = TestDb::new(dialect).await;
        let files = std::env::temp_dir().join(agentprocess_testkit::random_name("agentprocess-files-"));
        let clock = Arc::new(TestClock::default());
        let database = agentprocess_app::Database {
            url: agentprocess_app::Secret::new(db.url.clone()),
            max_connections: 8,
            migrate: false,
        };
        let service = agentprocess_app::assemble(
            &database,
            &Storage::Dir(files.clone()),
            settings,
            clock.clone(),
            agentprocess_app::Extras {
                queue: None,
                evaluator: evaluator.as_ref().map(|double| {
                    Arc::new(
                        agentprocess_evaluator::OpenAiEvaluator::new(agentprocess_evaluator::OpenAiSettings {
                            base_url: double.url.clone(),
                            model: agentprocess_testkit::evaluator::MODEL.to_owned(),
                            api_key: None,
                            timeout: std::time::Duration::from_secs(2),
                            concurrency: 4,
                            top_logprobs: 10,
                        })
                        .expect("an evaluator"),
                    ) as Arc<dyn agentprocess_evaluator::Evaluator>
                }),
                publishes_check: false,
            },
        )
        .await
        .expect("service");
        let auth = Arc::new(auth_over(
            service.store().clone(),
            public_url,
            agentprocess_auth::SecretKey::new(&AUTH_KEY).expect("a key"),
        ));
        let router = agentprocess_http::router(Arc::clone(&service), Arc::clone(&auth), &http_settings(None, true));
        Self {
            router,
            service,
            auth,
            clock,
            org: String::new(),
            evaluator,
            db,
            files,
        }
    }

    /// The same server with the development sign-in on for its organization, so tests
    /// sign people in without an identity provider.
    pub(crate) fn with_dev_sign_in(mut self) -> Self {
        let settings = http_settings(Some(self.org.clone()), true);
        self.router = agentprocess_http::router(Arc::clone(&self.service), Arc::clone(&self.auth), &settings);
        self
    }

    /// The same server behind proxies in `networks` (as `--trusted-proxies` names them):
    /// for a connection from one, `X-Forwarded-For` names the client.
    pub(crate) fn behind_proxies(mut self, networks: &str) -> Self {
        let settings = HttpSettings {
            trusted_proxies: networks.parse().expect("networks"),
            ..http_settings(None, true)
        };
        self.router = agentprocess_http::router(Arc::clone(&self.service), Arc::clone(&self.auth), &settings);
        self
    }

    /// The same server's router with every `/mcp` request served by rmcp, plain tool
    /// calls included (no direct path).
    pub(crate) fn router_through_rmcp(&self) -> Router {
        agentprocess_http::router(
            Arc::clone(&self.service),
            Arc::clone(&self.auth),
            &http_settings(None, false),
        )
    }

    /// Adds an organization; what follows is added to it.
    pub(crate) async fn with_org(mut self, id: &str) -> Self {
        self.service.admin().create_org(id, id).await.expect("org");
        self.org = id.to_owned();
        self
    }

    /// Adds a person with `role`, in `groups` (made when missing).
    pub(crate) async fn with_member(self, id: &str, role: Role, groups: &[&str]) -> Self {
        let groups: Vec<String> = groups.iter().map(|group| (*group).to_owned()).collect();
        self.service
            .admin()
            .create_identity(&self.org, Some(role), id, id, Some(&format!("{id}@acme.test")), &groups)
            .await
            .expect("member");
        self
    }

    /// Adds an agent.
    pub(crate) async fn with_agent(self, id: &str) -> Self {
        self.with_agent_in(id, &[]).await
    }

    /// Adds an agent in `groups` (made when missing).
    pub(crate) async fn with_agent_in(self, id: &str, groups: &[&str]) -> Self {
        let groups: Vec<String> = groups.iter().map(|group| (*group).to_owned()).collect();
        self.service
            .admin()
            .create_identity(&self.org, None, id, id, None, &groups)
            .await
            .expect("agent");
        self
    }

    /// A new MCP bearer token of an identity.
    pub(crate) async fn mcp_token(&self, identity: &str) -> String {
        self.service
            .admin()
            .issue_token(&self.org, identity)
            .await
            .expect("token")
    }

    /// Every text value in every table of the database, for looking for what must
    /// not be kept in clear.
    pub(crate) async fn every_stored_text(&self) -> Vec<String> {
        use sqlx::{Column as _, Connection as _, Row as _};
        let mut connection = sqlx::AnyConnection::connect(&self.db.url).await.expect("connect");
        let listing = if self.db.url.starts_with("sqlite:") {
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> '_sqlx_migrations'"
        } else {
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name <> '_sqlx_migrations'"
        };
        let tables: Vec<String> = sqlx::query_scalar(listing)
            .fetch_all(&mut connection)
            .await
            .expect("tables");
        let mut texts = Vec::new();
        for table in tables {
            let rows = sqlx::query(&format!("SELECT * FROM \"{table}\""))
                .fetch_all(&mut connection)
                .await
                .expect("rows");
            for row in &rows {
                for column in row.columns() {
                    if let Ok(Some(text)) = row.try_get::<Option<String>, _>(column.ordinal()) {
                        texts.push(text);
                    }
                }
            }
        }
        texts
    }

    /// A new API token of a person, with `scope`.
    pub(crate) async fn api_token(&self, person: &str, scope: &str) -> String {
        let maker = self
            .service
            .store()
            .identity(&self.org, person)
            .await
            .expect("read")
            .expect("person");
        let new: agentprocess_auth::tokens::NewToken =
            serde_json::from_value(json!({ "name": "test", "scope": scope })).expect("token request");
        let actor = agentprocess_auth::audit::Actor {
            id: person.to_owned(),
            address: None,
        };
        self.auth
            .create_token(&actor, &maker, &new, self.service.now(), None)
            .await
            .expect("api token")
            .1
    }

    /// Sends one request through the router.
    pub(crate) async fn send(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(request).await.expect("infallible");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .expect("body");
        let body = agentprocess_format::exact::parse(&String::from_utf8_lossy(&bytes)).unwrap_or(Value::Null);
        (status, body)
    }

    /// A tool call over `/mcp`: the result's `{ ok, … }` envelope.
    pub(crate) async fn call(&self, token: &str, tool: &str, arguments: Value) -> Value {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        });
        let request = Request::post("/mcp")
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Body::from(body.to_string()))
            .expect("request");
        let (status, answer) = self.send(request).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer["result"]["structuredContent"].clone()
    }

    /// A REST call with an API token; `body` as JSON when given.
    pub(crate) async fn rest(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        self.rest_keyed(token, method, path, body, None).await
    }

    /// [`TestApp::rest`] with an `Idempotency-Key`.
    pub(crate) async fn rest_keyed(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
        key: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("/api/v1{path}"))
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        };
        self.send(request.expect("request")).await
    }

    /// Publishes the PROCESS.md of `examples/processes/<name>` with every role bound to
    /// `group`, through the REST surface as `admin` (an admin's API token).
    pub(crate) async fn publish_example(&self, admin_token: &str, name: &str, group: &str) {
        let source = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../../examples/processes/{name}/PROCESS.md")),
        )
        .expect("example");
        self.publish(admin_token, name, &source, group).await;
    }

    /// Imports `file` (a PROCESS.md or an archive) as the draft of a process, through
    /// the REST surface as `admin` (an admin's API token), sent as `file_name`.
    pub(crate) async fn import(&self, admin_token: &str, file_name: &str, file: &[u8]) -> (StatusCode, Value) {
        let boundary = "agentprocess-test-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(file);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let request = Request::post("/api/v1/processes")
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {admin_token}"))
            .header(
                header::CONTENT_TYPE,
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(Body::from(body))
            .expect("request");
        self.send(request).await
    }

    /// Publishes `source` as process `name` with every role bound to `group`, through
    /// the REST surface as `admin` (an admin's API token).
    pub(crate) async fn publish(&self, admin_token: &str, name: &str, source: &[u8], group: &str) {
        let (status, draft) = self.import(admin_token, &format!("{name}/PROCESS.md"), source).await;
        assert_eq!(status, StatusCode::CREATED, "{draft}");
        for role in draft["roles"].as_array().expect("roles") {
            let role = role["role"].as_str().expect("role");
            let path = format!("/processes/{name}/draft/roles/{role}");
            let (status, answer) = self
                .rest(admin_token, Method::PUT, &path, Some(json!({ "group": group })))
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
        }
        let (status, answer) = self
            .rest(admin_token, Method::POST, &format!("/processes/{name}/publish"), None)
            .await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }

    /// Removes the database and the files.
    pub(crate) async fn finish(self) {
        self.service.store().close().await;
        let _ = std::fs::remove_dir_all(&self.files);
        self.db.drop_database().await;
    }
}

/// The key material the app's identity seals with.
pub(crate) const AUTH_KEY: [u8; 32] = [9; 32];

/// Identity over `store`, sealing with `key`.
pub(crate) fn auth_over(store: SqlStore, public_url: &str, key: agentprocess_auth::SecretKey) -> Auth {
    let mut identity = IdentityConfig {
        oidc_timeout: std::time::Duration::from_secs(2),
        ..IdentityConfig::default()
    };
    identity.settings.session_idle = std::time::Duration::from_secs(3600);
    identity.settings.session_absolute = std::time::Duration::from_secs(3600);
    identity.settings.decide_sign_in_within = std::time::Duration::from_secs(600);
    identity.auth(store, public_url, key).expect("auth")
}

fn settings(public_url: &str) -> Settings {
    Settings::new(public_url, vec![7; 32])
}

/// Runs `body(TestApp) -> TestApp` once on SQLite and once on PostgreSQL; the app it
/// hands back is cleaned up.
macro_rules! on_both {
    ($name:ident, $body:ident) => {
        crate::harness::on_both!($name, $body, new);
    };
    ($name:ident, $body:ident, $make:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let app = crate::harness::TestApp::$make(agentprocess_store::Dialect::Sqlite).await;
                super::$body(app).await.finish().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let app = crate::harness::TestApp::$make(agentprocess_store::Dialect::Postgres).await;
                super::$body(app).await.finish().await;
            }
        }
    };
}
pub(crate) use on_both;
