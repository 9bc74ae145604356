//! The REST surface's error body: the protocol's `{ code, message, issues? }` with the
//! HTTP status of each code. A failure of the server is logged here, once, with its
//! cause chain, and answered `retry` with 503.

use agentprocess_auth::oidc::chain;
use agentprocess_engine::{Code, ToolError};
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A refusal of a REST request.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    error: ToolError,
    /// Set when the organization is at one of its limits: 429 with `Retry-After`.
    over_limit: Option<Box<agentprocess_service::OverLimit>>,
    /// Seconds to wait, sent as `Retry-After`, for a refusal of too many requests.
    retry_after: Option<u64>,
}

impl ApiError {
    /// A refusal with `code`, at that code's HTTP status.
    pub fn new(code: Code, message: impl Into<String>, issues: Vec<String>) -> Self {
        Self::from_tool(ToolError::new(code, message, issues))
    }

    /// The service's refusal, at its code's HTTP status.
    pub fn from_tool(error: ToolError) -> Self {
        Self {
            status: status_of(error.code),
            error,
            over_limit: None,
            retry_after: None,
        }
    }

    /// Too many requests from this address or for this organization: 429 with
    /// `Retry-After`.
    pub fn too_many(message: impl Into<String>, seconds: u64) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            error: ToolError::new(Code::Retry, message, Vec::new()),
            over_limit: None,
            retry_after: Some(seconds),
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// `response` with this refusal's `Retry-After`, when it has one.
    pub fn with_retry_after(&self, mut response: Response) -> Response {
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }

    /// `invalid`: a NUL character, which no name or text may hold (PostgreSQL cannot
    /// store it).
    pub fn nul() -> Self {
        Self::invalid(
            "the request holds a NUL character, which no field may hold; nothing changed",
            Vec::new(),
        )
    }

    /// `invalid`: a JSON body that is not the request's, with what is wrong with it.
    pub fn body(rejection: &axum::extract::rejection::JsonRejection) -> Self {
        Self::invalid(
            "the request body is not valid; nothing changed",
            vec![rejection.body_text()],
        )
    }

    /// `forbidden`: 403.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(Code::Forbidden, message, Vec::new())
    }

    /// `not_found`: 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Code::NotFound, message, Vec::new())
    }

    /// `invalid` with every issue: 400.
    pub fn invalid(message: impl Into<String>, issues: Vec<String>) -> Self {
        Self::new(Code::Invalid, message, issues)
    }

    /// No credential, or one that is not valid: 401, with the body's code `forbidden`
    /// (the protocol has no code of its own for it).
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            error: ToolError::new(Code::Forbidden, message, Vec::new()),
            over_limit: None,
            retry_after: None,
        }
    }

    /// The session store failed.
    pub fn session(error: tower_sessions::session::Error) -> Self {
        tracing::error!(error = %chain(&error), "session store failed");
        Self::retry()
    }

    /// `retry`: the server could not answer now (its cause is logged where it failed).
    pub fn retry() -> Self {
        Self::new(
            Code::Retry,
            "the server could not complete the request; try again shortly",
            Vec::new(),
        )
    }

    /// The refusal's message.
    pub fn message(&self) -> &str {
        &self.error.message
    }

    /// The refusal in the protocol's terms.
    pub fn tool_error(&self) -> &ToolError {
        &self.error
    }

    /// Every issue the refusal names.
    pub fn issues(&self) -> &[String] {
        &self.error.issues
    }
}

impl From<agentprocess_auth::Error> for ApiError {
    fn from(error: agentprocess_auth::Error) -> Self {
        if error.is_internal() {
            tracing::error!(error = %chain(&error), "request failed");
        }
        Self::from_tool(error.to_tool_error())
    }
}

impl From<agentprocess_service::Error> for ApiError {
    fn from(error: agentprocess_service::Error) -> Self {
        match error {
            agentprocess_service::Error::OverLimit(over) => over.into(),
            error => Self::from_tool(error.into_tool_error()),
        }
    }
}

impl From<agentprocess_operations::Error> for ApiError {
    fn from(error: agentprocess_operations::Error) -> Self {
        match error {
            agentprocess_operations::Error::Auth(error) => error.into(),
            agentprocess_operations::Error::Service(error) => error.into(),
        }
    }
}

impl From<agentprocess_service::OverLimit> for ApiError {
    fn from(over: agentprocess_service::OverLimit) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            error: over.to_tool_error(),
            over_limit: Some(Box::new(over)),
            retry_after: None,
        }
    }
}

/// The HTTP status of each of the protocol's codes.
pub fn status_of(code: Code) -> StatusCode {
    match code {
        Code::Invalid => StatusCode::BAD_REQUEST,
        Code::NotAccepted => StatusCode::UNPROCESSABLE_ENTITY,
        Code::Stale | Code::Conflict => StatusCode::CONFLICT,
        Code::Forbidden => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::Retry => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// The protocol's error body (spec §4.3).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// One of the protocol's seven codes.
    #[schema(value_type = String, pattern = "^(invalid|not_accepted|stale|conflict|forbidden|not_found|retry)$")]
    code: &'static str,
    /// What happened, as a sentence.
    message: String,
    /// Every problem, each naming where.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    issues: Vec<String>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let waited = self.clone();
        let body = ErrorBody {
            code: self.error.code.as_str(),
            message: self.error.message,
            issues: self.error.issues,
        };
        let response = (self.status, Json(body)).into_response();
        let response = waited.with_retry_after(response);
        if let Some(over) = &self.over_limit {
            return too_many_requests(over, response);
        }
        let mut response = response;
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"agentprocess\""),
            );
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// Answers every refusal of `/api/v1` in the protocol's body, including those axum
/// makes itself (a path segment that is not a number, a body that is not multipart, a
/// method the route lacks), which come as plain text.
pub async fn json_errors(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let code = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Code::Forbidden,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::CONFLICT => Code::Conflict,
        StatusCode::UNPROCESSABLE_ENTITY => Code::NotAccepted,
        status if status.is_server_error() => Code::Retry,
        _ => Code::Invalid,
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_owned()
    } else {
        text
    };
    let mut answer = ApiError {
        status,
        error: ToolError::new(code, message, Vec::new()),
        over_limit: None,
        retry_after: None,
    }
    .into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}

/// Refuses, before anything reads it, a request to `/api/v1` that carries a NUL
/// character in its path, query or JSON body: no name or text of the surface may hold
/// one (PostgreSQL cannot store it), and saying so beats failing later.
pub async fn refuse_nul(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let refused = || ApiError::nul().into_response();
    let uri = request.uri().to_string().to_ascii_lowercase();
    if uri.contains("%00") {
        return refused();
    }
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return ApiError::invalid("the request body is larger than 1 MiB", Vec::new()).into_response();
    };
    // JSON spells a NUL only as the escape \u0000, so a body without that text holds
    // none and is not parsed here too; one with it is parsed to tell a real NUL from an
    // escaped backslash. A body that is not JSON is left to the handler to refuse.
    let escaped = bytes.windows(6).any(|window| window.eq_ignore_ascii_case(b"\\u0000"));
    if escaped && serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|value| holds_nul(&value)) {
        return refused();
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Whether any string (or key) in `value` holds a NUL character.
fn holds_nul(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(text) => text.contains('\0'),
        serde_json::Value::Array(items) => items.iter().any(holds_nul),
        serde_json::Value::Object(fields) => fields.iter().any(|(key, value)| key.contains('\0') || holds_nul(value)),
        _ => false,
    }
}

/// `response` as 429 with `Retry-After`: the caller's organization is at one of its
/// limits.
pub fn too_many_requests(over: &agentprocess_service::OverLimit, mut response: Response) -> Response {
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(over.retry_after_seconds()));
    response
}
