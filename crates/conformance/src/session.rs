//! MCP sessions, one per identity, and the checks every call goes through.

use std::sync::Arc;
use std::time::Duration;

use agentprocess_contract::Contract;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Map, Value, json};

use crate::credentials::Identity;
use crate::report::Failure;
use crate::{Error, Options};

/// The longest the runner waits for one call.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One identity's session.
pub(crate) struct Session {
    /// The identity's name in the credentials file.
    pub(crate) name: String,
    /// A person's `person` value.
    pub(crate) person: Option<String>,
    client: RunningService<RoleClient, ()>,
    contract: Arc<Contract>,
}

/// What a call answered: `{ ok: true, data }` or `{ ok: false, error }`.
pub(crate) enum Answer {
    /// `data` of a success.
    Ok(Value),
    /// `error` of a refusal.
    Refused(Value),
}

impl Session {
    async fn open(url: &str, identity: &Identity, contract: Arc<Contract>) -> Result<Self, Error> {
        let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(identity.token.clone());
        let transport = StreamableHttpClientTransport::from_config(config);
        let client = ().serve(transport).await.map_err(|error| Error::Connect {
            identity: identity.name.clone(),
            url: url.to_owned(),
            problem: error.to_string(),
        })?;
        Ok(Self {
            name: identity.name.clone(),
            person: identity.person.clone(),
            client,
            contract,
        })
    }

    /// Calls `tool`; the result must meet the official schemas, and `isError` must
    /// agree with `ok`.
    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Result<Answer, Failure> {
        let Value::Object(arguments) = arguments else {
            return Err(Failure::new(format!(
                "{tool}: the runner built arguments that are not an object"
            )));
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // Bounded, so a server that hangs fails a case instead of the whole run.
        let result = tokio::time::timeout(CALL_TIMEOUT, self.client.call_tool(params))
            .await
            .map_err(|_| Failure::new(format!("{tool} as {}: no answer in {CALL_TIMEOUT:?}", self.name)))?
            .map_err(|error| Failure::new(format!("{tool} as {}: the call failed: {error}", self.name)))?;
        let envelope = result
            .structured_content
            .ok_or_else(|| Failure::new(format!("{tool}: the result has no structuredContent")))?;
        let violations = self.contract.check_result(tool, &envelope);
        if !violations.is_empty() {
            return Err(Failure::new(format!(
                "{tool} result breaks the official schema: {}\n  result: {envelope}",
                violations.join("; ")
            )));
        }
        let ok = envelope["ok"] == true;
        if result.is_error.unwrap_or(false) == ok {
            return Err(Failure::new(format!(
                "{tool}: isError is {:?} on a result with ok: {ok}",
                result.is_error
            )));
        }
        Ok(match envelope {
            Value::Object(mut object) if ok => Answer::Ok(object.remove("data").unwrap_or(Value::Null)),
            Value::Object(mut object) => Answer::Refused(object.remove("error").unwrap_or(Value::Null)),
            _ => unreachable!("check_result admits objects only"),
        })
    }

    /// `data` of a call that must succeed.
    pub(crate) async fn ok(&self, tool: &str, arguments: Value) -> Result<Value, Failure> {
        match self.call(tool, arguments).await? {
            Answer::Ok(data) => Ok(data),
            Answer::Refused(error) => Err(Failure::new(format!("{tool} as {} was refused: {error}", self.name))),
        }
    }

    /// `error` of a call that must be refused with `code`.
    pub(crate) async fn refused(&self, tool: &str, arguments: Value, code: &str) -> Result<Value, Failure> {
        match self.call(tool, arguments).await? {
            Answer::Refused(error) if error["code"] == code => Ok(error),
            Answer::Refused(error) => Err(Failure::new(format!(
                "{tool} as {}: expected {code}, got {error}",
                self.name
            ))),
            Answer::Ok(data) => Err(Failure::new(format!(
                "{tool} as {}: expected {code}, but it succeeded: {data}",
                self.name
            ))),
        }
    }

    /// The advertised tools.
    pub(crate) async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, Failure> {
        self.client
            .list_all_tools()
            .await
            .map_err(|error| Failure::new(format!("tools/list failed: {error}")))
    }

    /// The contract every call is held to.
    pub(crate) fn contract(&self) -> &Contract {
        &self.contract
    }
}

/// Everything the cases share: the sessions, the server's `describe`, its catalog
/// and its clock, if it lets the runner move it.
pub(crate) struct Context {
    pub(crate) agents: [Session; 2],
    pub(crate) people: [Session; 2],
    pub(crate) operator: Session,
    pub(crate) clocks: Vec<String>,
}

impl Context {
    pub(crate) async fn open(options: &Options, contract: Arc<Contract>) -> Result<Self, Error> {
        let credentials = &options.credentials;
        let identities = [
            &credentials.agents[0],
            &credentials.agents[1],
            &credentials.people[0],
            &credentials.people[1],
            &credentials.operator,
        ];
        let mut sessions = Vec::new();
        for (index, identity) in identities.into_iter().enumerate() {
            // Spread over every endpoint given, so two server processes share the calls.
            let url = &options.urls[index % options.urls.len()];
            sessions.push(Session::open(url, identity, Arc::clone(&contract)).await?);
        }
        let mut sessions = sessions.into_iter();
        let mut next = || sessions.next().expect("five sessions");
        Ok(Self {
            agents: [next(), next()],
            people: [next(), next()],
            operator: next(),
            clocks: options.clocks.clone(),
        })
    }

    pub(crate) async fn close(self) {
        for session in self.agents.into_iter().chain(self.people).chain([self.operator]) {
            let mut client = session.client;
            let _closed = client.close().await;
        }
    }

    /// The person session whose `person` value is `person` (case-insensitive).
    pub(crate) fn person(&self, person: &str) -> Option<&Session> {
        self.people.iter().chain([&self.operator]).find(|session| {
            session
                .person
                .as_deref()
                .is_some_and(|value| value.eq_ignore_ascii_case(person))
        })
    }

    /// Moves the server's clock forward, when the runner was given a way to.
    pub(crate) async fn advance(&self, seconds: u64) -> Result<bool, Failure> {
        if self.clocks.is_empty() {
            return Ok(false);
        }
        let client = reqwest::Client::new();
        for url in &self.clocks {
            let sent = client
                .post(url)
                .json(&json!({ "advanceSeconds": seconds }))
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .and_then(reqwest::Response::error_for_status);
            sent.map_err(|error| Failure::new(format!("moving the clock at {url} failed: {error}")))?;
        }
        Ok(true)
    }
}

/// A fresh `requestId`.
pub(crate) fn request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `arguments` with a fresh `requestId` in place of the placeholder a `get_work` item
/// carries.
pub(crate) fn with_request_id(arguments: &Value) -> Value {
    let mut arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
    arguments.insert("requestId".to_owned(), json!(request_id()));
    Value::Object(arguments)
}
