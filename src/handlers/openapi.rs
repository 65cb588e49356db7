use crate::app::Call;
use edgechat_core::api::error::ApiResult;
use worker::{Headers, Response};

use edgechat_core::api::OPENAPI_DOCUMENT as DOCUMENT;

/// `GET /api/v1/openapi.json`: the description itself, no credentials needed.
pub async fn get(_call: Call) -> ApiResult<Response> {
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    headers.set("Cache-Control", "public, max-age=300")?;
    Ok(Response::builder()
        .with_status(200)
        .with_headers(headers)
        .fixed(DOCUMENT.as_bytes().to_vec()))
}
