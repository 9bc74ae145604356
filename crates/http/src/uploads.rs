//! `POST /v1/uploads`: the `upload` tool for clients that speak REST (a person's web
//! app), as `multipart/form-data` with one `file` part. Same rules, same record, same
//! result as the MCP tool; the `requestId` is the `Idempotency-Key` header.

use std::sync::Arc;

use agentprocess_engine::{Code, ToolError};
use agentprocess_service::{Caller, Service, Write};
use axum::extract::{Multipart, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Map, json};
use tracing::Instrument as _;

/// The upload, or the refusal in the tools' envelope with a matching HTTP status.
pub(crate) async fn upload(
    State(service): State<Arc<Service>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    multipart: Multipart,
) -> Response {
    let span = tracing::info_span!(
        "upload",
        gen_ai.tool.name = "upload",
        agentprocess.organization = caller.org(),
        agentprocess.run = tracing::field::Empty,
        agentprocess.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    // The tool's scope, as on `/mcp`, before the body is read.
    let public_url = &service.settings().public_url;
    if let Err(refused) = caller.permit(agentprocess_service::Tool::Upload, public_url) {
        let mut response = (
            StatusCode::FORBIDDEN,
            Json(agentprocess_mcp::envelope::envelope(Err(refused))),
        )
            .into_response();
        if let Some(challenge) =
            crate::jsonrpc::scope_challenge(&caller, agentprocess_service::Tool::Upload, public_url)
        {
            response
                .headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    let result = upload_form(&service, &caller, &headers, multipart)
        .instrument(span.clone())
        .await;
    let over_limit = match &result {
        Err(agentprocess_service::Error::OverLimit(over)) => Some(over.clone()),
        _ => None,
    };
    let result = result.map_err(agentprocess_service::Error::into_tool_error);
    agentprocess_mcp::record_outcome(&span, "upload", caller.org(), &result);
    let status = match &result {
        Ok(_) => StatusCode::CREATED,
        Err(error) => status_of(error.code),
    };
    let response = (status, Json(agentprocess_mcp::envelope::envelope(result))).into_response();
    match over_limit {
        Some(over) => agentprocess_web::errors::too_many_requests(&over, response),
        None => response,
    }
}

async fn upload_form(
    service: &Service,
    caller: &Caller,
    headers: &HeaderMap,
    multipart: Multipart,
) -> Result<Box<serde_json::value::RawValue>, agentprocess_service::Error> {
    // Before the body is read: a refused upload costs no more than its headers.
    let _admission = service.admit(&caller.identity, true).await?;
    match read(service, headers, multipart).await {
        Ok(form) => {
            let mut arguments = Map::new();
            arguments.insert("fileName".to_owned(), json!(form.file_name));
            arguments.insert("contentType".to_owned(), json!(form.content_type));
            arguments.insert(
                "contentSha256".to_owned(),
                json!(agentprocess_service::sha256_hex(&form.bytes)),
            );
            let write = Write::from_arguments(form.request_id, &arguments);
            let uploaded = service
                .upload(caller, &form.file_name, &form.content_type, form.bytes, &write)
                .await?;
            serde_json::value::to_raw_value(&uploaded).map_err(agentprocess_service::Error::internal)
        }
        Err(error) => Err(error.into()),
    }
}

struct Form {
    request_id: String,
    file_name: String,
    content_type: String,
    bytes: Vec<u8>,
}

/// The form's one `file` part, read up to the upload limit; every problem at once.
async fn read(service: &Service, headers: &HeaderMap, mut multipart: Multipart) -> Result<Form, ToolError> {
    let mut issues = Vec::new();
    let request_id = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .map(str::to_owned);
    if request_id.is_none() {
        issues.push("Idempotency-Key: required, the requestId of this upload".to_owned());
    }
    let limit = service.settings().max_upload_bytes;
    let mut file: Option<(String, String, Vec<u8>)> = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(error) => {
                issues.push(format!("body: not a multipart/form-data body ({error})"));
                break;
            }
        };
        let name = field.name().unwrap_or_default().to_owned();
        if name != "file" || file.is_some() {
            issues.push(format!("{name}: unexpected; send one part named file"));
            continue;
        }
        let file_name = field.file_name().unwrap_or_default().to_owned();
        let content_type = field.content_type().unwrap_or("application/octet-stream").to_owned();
        let mut field = field;
        let bytes = match agentprocess_web::app::forms::part_bytes(&mut field, limit).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                issues.push(format!("file: more than maxUploadBytes ({limit}) bytes"));
                Vec::new()
            }
            Err(error) => {
                issues.push(format!("file: could not be read ({error})"));
                Vec::new()
            }
        };
        file = Some((file_name, content_type, bytes));
    }
    // The upload tool's own bounds on what the form carries (the requestId is the
    // header's, so its issues name the header).
    if let Some(spec) = agentprocess_tools::arguments::spec("upload") {
        let mut arguments = Map::new();
        if let Some((file_name, content_type, _)) = &file {
            arguments.insert("fileName".to_owned(), json!(file_name));
            arguments.insert("contentType".to_owned(), json!(content_type));
        }
        if let Some(request_id) = &request_id {
            arguments.insert("requestId".to_owned(), json!(request_id));
        }
        issues.extend(
            agentprocess_tools::arguments::check_present(spec, &arguments)
                .into_iter()
                .map(|issue| issue.replacen("requestId:", "Idempotency-Key:", 1)),
        );
    }
    match (file, request_id) {
        (Some((file_name, content_type, bytes)), Some(request_id)) if issues.is_empty() => Ok(Form {
            request_id,
            file_name,
            content_type,
            bytes,
        }),
        (file, _) => {
            if file.is_none() {
                issues.push("file: required, one part named file".to_owned());
            }
            Err(ToolError::new(
                Code::Invalid,
                "the upload was refused; nothing was stored",
                issues,
            ))
        }
    }
}

/// The HTTP status of a refusal.
fn status_of(code: Code) -> StatusCode {
    match code {
        Code::Invalid => StatusCode::BAD_REQUEST,
        Code::Forbidden => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::Conflict => StatusCode::CONFLICT,
        Code::Retry => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}
