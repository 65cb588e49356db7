//! An OpenAI-compatible server's `POST {base}/embeddings` and `POST {base}/rerank`.

use super::{within, Failure};
use edgechat_core::chat::sse::truncate;
use edgechat_core::config::OpenAiEndpoint;
use edgechat_core::knowledge::semantic::{openai, RerankScore};
use serde_json::Value;
use std::time::Duration;
use worker::{AbortController, Fetch, Headers, Method, Request, RequestInit};

/// Posts `body` to `{base}/{path}` and returns the answer's text when it is a 2xx.
async fn post(
    endpoint: &OpenAiEndpoint,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> Result<String, Failure> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let call = async {
        let headers = Headers::new();
        let set = |name: &str, value: &str| headers.set(name, value).map_err(|e| e.to_string());
        set("Authorization", &format!("Bearer {}", endpoint.api_key))?;
        set("Content-Type", "application/json")?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers.clone())
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body.to_string())));
        let request = Request::new_with_init(&format!("{}/{path}", endpoint.base_url), &init)
            .map_err(|e| e.to_string())?;
        let mut response = Fetch::Request(request)
            .send_with_signal(&signal)
            .await
            .map_err(|e| format!("could not reach it ({e})"))?;
        let status = response.status_code();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !(200..300).contains(&status) {
            return Err(format!("HTTP {status}: {}", truncate(text.trim(), 300)));
        }
        Ok(text)
    };
    let result = within(timeout, call).await;
    if result.is_err() {
        controller.abort();
    }
    result
}

pub async fn embed(
    endpoint: &OpenAiEndpoint,
    model: &str,
    texts: &[&str],
    timeout: Duration,
) -> Result<Vec<Vec<f32>>, Failure> {
    let body = openai::embeddings_body(model, texts);
    let text = post(endpoint, "embeddings", &body, timeout).await?;
    openai::decode_embeddings(&text, texts.len()).map_err(|e| e.to_string())
}

pub async fn rerank(
    endpoint: &OpenAiEndpoint,
    model: &str,
    query: &str,
    documents: &[&str],
    timeout: Duration,
) -> Result<Vec<RerankScore>, Failure> {
    let body = openai::rerank_body(model, query, documents, documents.len());
    let text = post(endpoint, "rerank", &body, timeout).await?;
    openai::decode_rerank(&text, documents.len()).map_err(|e| e.to_string())
}
