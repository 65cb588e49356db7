use crate::app::Call;
use crate::error::ApiResult;
use worker::{Headers, Response};

/// The service's OpenAPI 3.1 description, built into the Worker. A route-table test keeps it
/// listing exactly the routes `routes::ROUTES` serves.
pub const DOCUMENT: &str = include_str!("../../openapi/openapi.json");

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
