use crate::app::http::json_response;
use crate::app::Call;
use edgechat_core::api::error::ApiResult;
use serde_json::json;
use worker::Response;

/// Ready once the database answers with the schema in place.
pub async fn get(call: Call) -> ApiResult<Response> {
    call.store.ping().await?;
    json_response(&json!({ "status": "ok" }))
}
