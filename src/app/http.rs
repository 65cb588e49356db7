//! Request and response plumbing shared by every handler: reading a JSON body within limits,
//! writing JSON answers, and the one place an `ApiError` becomes a response.

use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::validate::{check_json_content_type, parse_object};
use futures::StreamExt;
use serde_json::{json, Map, Value};
use worker::{Headers, Request, Response};

/// Largest JSON body accepted; uploads have their own limit.
pub const MAX_JSON_BODY_BYTES: usize = 1 << 20;

fn too_large(limit: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "The request body is larger than the {limit} bytes this endpoint accepts."
    ))
}

/// Reads the whole body, refusing it as soon as it passes `limit` bytes.
pub async fn read_body_capped(req: &mut Request, limit: usize) -> ApiResult<Vec<u8>> {
    let declared = req
        .headers()
        .get("Content-Length")?
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    if req.inner().body().is_none() {
        return Ok(Vec::new());
    }
    let mut stream = req.stream()?;
    let mut body = Vec::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            return Err(too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The JSON object a request carries. An empty body is `{}` whatever its declared type
/// (`curl -d ''` declares a form): endpoints whose fields are all optional take a bare POST.
pub async fn read_json_object(req: &mut Request) -> ApiResult<Map<String, Value>> {
    let empty = req.inner().body().is_none()
        || req
            .headers()
            .get("Content-Length")?
            .is_some_and(|n| n.trim() == "0");
    if empty {
        return Ok(Map::new());
    }
    check_json_content_type(req.headers().get("Content-Type")?.as_deref())?;
    let bytes = read_body_capped(req, MAX_JSON_BODY_BYTES).await?;
    parse_object(&bytes)
}

pub fn json_response(value: &Value) -> ApiResult<Response> {
    Ok(Response::from_json(value)?)
}

pub fn success_response() -> ApiResult<Response> {
    json_response(&json!({ "success": true }))
}

/// The only place an error becomes a response: JSON body, status and required headers. Internal
/// causes are never sent; the request's log line carries them (`platform::log`).
pub fn error_response(err: &ApiError) -> Response {
    error_response_with_body(err, err.body())
}

/// `err` with another body shape (OpenAI's, on the OpenAI-compatible endpoints); the status
/// and headers stay the error's own.
pub fn error_response_with_body(err: &ApiError, body: Value) -> Response {
    let headers = Headers::new();
    for (name, value) in err.headers() {
        // Header names and values here are ours and always valid.
        let _ = headers.set(name, &value);
    }
    let _ = headers.set("Content-Type", "application/json");
    Response::builder()
        .with_status(err.status())
        .with_headers(headers)
        .fixed(body.to_string().into_bytes())
}
