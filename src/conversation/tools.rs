//! Calling a tool function's endpoint for the model: the arguments as a JSON body (a query
//! string for GET), the function's headers, a time limit and a size cap, and private addresses
//! refused unless allowed. A tool that fails or hangs is reported to the model as text; it
//! never fails the answer. Arguments that are not a JSON object, or lack one the function
//! requires, are reported the same way, and the endpoint is not called.

use crate::platform::outbound::{self, Limits, Outgoing};
use edgechat_core::chat::sse::truncate;
use edgechat_core::chat::tools::{credentials_of, parse_arguments, url_with_query, ToolCall};
use edgechat_core::config::Config;
use edgechat_core::domain::tool_function::{HttpMethod, ToolFunction};
use serde_json::Value;
use worker::Method;

fn tool_limits(config: &Config) -> Limits {
    Limits {
        timeout: config.tool_timeout,
        max_bytes: 256 * 1024,
        max_redirects: 3,
    }
}
/// The most of a tool's answer handed to the model.
pub const MAX_RESULT_CHARS: usize = 8_000;

fn method(method: HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::Get,
        HttpMethod::Post => Method::Post,
        HttpMethod::Put => Method::Put,
        HttpMethod::Patch => Method::Patch,
        HttpMethod::Delete => Method::Delete,
    }
}

/// Whether a call's text (what `run` gave the model) reports a failure rather than a result:
/// every failure `run` reports starts so.
pub fn failed(content: &str) -> bool {
    content.starts_with("Error:")
}

/// Runs one call; the text the model gets back.
pub async fn run(config: &Config, functions: &[ToolFunction], call: &ToolCall) -> String {
    let Some(function) = functions.iter().find(|f| f.name == call.name && f.enabled) else {
        return format!("Error: there is no tool named {:?}.", call.name);
    };
    // Arguments that are not what the function takes are the model's mistake to correct: the
    // endpoint would only be called with something it does not expect.
    let args = match parse_arguments(&call.arguments, &function.parameters) {
        Ok(args) => args,
        Err(refusal) => return refusal,
    };
    // Credentials in the URL are sent as HTTP sends them, unless a header of the function's
    // already authorizes the call.
    let credentials = credentials_of(&function.external_url);
    let external_url = credentials
        .as_ref()
        .map_or(function.external_url.as_str(), |(url, _)| url.as_str());
    let (url, body) = if function.method == HttpMethod::Get {
        match url_with_query(external_url, &args) {
            Some(u) => (u, None),
            None => return "Error: the tool's URL is not valid.".to_string(),
        }
    } else {
        (
            external_url.to_string(),
            Some(Value::Object(args).to_string()),
        )
    };
    let mut headers: Vec<(String, String)> = function
        .headers
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect();
    let has = |headers: &[(String, String)], name: &str| {
        headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name))
    };
    if body.is_some() && !has(&headers, "content-type") {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    if let Some((_, authorization)) = credentials {
        if !has(&headers, "authorization") {
            headers.push(("Authorization".into(), authorization));
        }
    }
    let result = outbound::fetch(
        Outgoing {
            method: method(function.method),
            url: &url,
            headers,
            body,
        },
        &config.private_access,
        tool_limits(config),
    )
    .await;
    match result {
        Ok(f) if (200..300).contains(&f.status) => {
            truncate(&String::from_utf8_lossy(&f.body), MAX_RESULT_CHARS)
        }
        Ok(f) => format!(
            "Error: the tool answered HTTP {}: {}",
            f.status,
            truncate(&String::from_utf8_lossy(&f.body), 500)
        ),
        Err(reason) => format!("Error: the tool could not be called. {reason}"),
    }
}
