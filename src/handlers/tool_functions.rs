use super::{new_uuid, owned_agent};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::agent::AgentType;
use edgechat_core::domain::tool_function::{apply, ToolFunction, MAX_TOOL_FUNCTIONS_PER_AGENT};
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

async fn owned_tool(call: &Call) -> ApiResult<ToolFunction> {
    let uuid = call.uuid_param(0, "tool function")?;
    call.store
        .get_tool_function(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("tool function"))
}

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let agent = owned_agent(&call).await?;
    // Functions are called while answering, which only user-facing agents do.
    if agent.config.agent_type != AgentType::UserFacing {
        return Err(ApiError::invalid_request(format!(
            "Tool functions belong to user-facing agents; this agent is {}.",
            agent.config.agent_type.as_str()
        )));
    }
    let body = call.json_body().await?;
    let function = apply(
        &body,
        None,
        new_uuid(),
        agent.uuid.clone(),
        &call.config.private_access,
        time::now(),
    )?;
    if call.store.list_tool_functions(&agent.uuid).await?.len() >= MAX_TOOL_FUNCTIONS_PER_AGENT {
        return Err(ApiError::Conflict(format!(
            "An agent may have at most {MAX_TOOL_FUNCTIONS_PER_AGENT} tool functions."
        )));
    }
    call.store.save_tool_function(&function).await?;
    json_response(&function.to_json())
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let agent = owned_agent(&call).await?;
    let functions = call.store.list_tool_functions(&agent.uuid).await?;
    json_response(&Value::Array(
        functions
            .iter()
            .map(|f| f.to_json_for(call.may_configure()))
            .collect(),
    ))
}

pub async fn update(mut call: Call) -> ApiResult<Response> {
    let current = owned_tool(&call).await?;
    let body = call.json_body().await?;
    let function = apply(
        &body,
        Some(current.clone()),
        String::new(),
        String::new(),
        &call.config.private_access,
        time::now(),
    )?;
    if !call.store.update_tool_function(&current, &function).await? {
        return Err(ApiError::not_found("tool function"));
    }
    json_response(&function.to_json())
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let function = owned_tool(&call).await?;
    if !call.store.delete_tool_function(&function.uuid).await? {
        return Err(ApiError::not_found("tool function"));
    }
    success_response()
}
