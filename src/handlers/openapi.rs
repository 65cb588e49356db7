use crate::app::Call;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::api::OPENAPI_ASSET_PATH;
use edgechat_core::config::bindings;
use worker::{Headers, Response};

/// `GET /api/v1/openapi.json`: the description itself, no credentials needed. It is one of the
/// static files (`public/openapi.json`), read through the assets binding rather than built into
/// the module; its body streams through as the static files send it.
pub async fn get(call: Call) -> ApiResult<Response> {
    let url = format!("https://assets.internal{OPENAPI_ASSET_PATH}");
    let found = call.env.assets(bindings::ASSETS)?.fetch(url, None).await?;
    if found.status_code() != 200 {
        return Err(ApiError::internal(format!(
            "the static files answered {} for {OPENAPI_ASSET_PATH}",
            found.status_code()
        )));
    }
    let headers = Headers::new();
    headers.set("Content-Type", "application/json")?;
    headers.set("Cache-Control", "public, max-age=300")?;
    Ok(found.with_headers(headers))
}
