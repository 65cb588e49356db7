//! Code that handles JS types (Requests, Responses, bound D1 values), run in headless Chromium.
//! Built without the `entry` feature: an exported `fetch` would shadow the browser's own.
#![cfg(target_arch = "wasm32")]

use edgechat::app::http::{
    error_response, read_body_capped, read_json_object, MAX_JSON_BODY_BYTES,
};
use edgechat::storage::Arg;
use edgechat_core::api::error::ApiError;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;
use worker::{Headers, Method, Request, RequestInit};

wasm_bindgen_test_configure!(run_in_browser);

// One test binary (one browser start) for every shell module that handles JS types; the
// modules live in tests/browser/.
#[path = "browser/http.rs"]
mod http;
#[path = "browser/outbound.rs"]
mod outbound;
#[path = "browser/storage.rs"]
mod storage;
#[path = "browser/stream.rs"]
mod stream;
#[path = "browser/support.rs"]
mod support;
#[path = "browser/widget.rs"]
mod widget;

fn post(body: &str, content_type: Option<&str>) -> Request {
    let headers = Headers::new();
    if let Some(ct) = content_type {
        headers.set("Content-Type", ct).unwrap();
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(JsValue::from_str(body)));
    Request::new_with_init("https://example.test/api/v1/chatbot/create", &init).unwrap()
}

#[wasm_bindgen_test]
async fn error_response_carries_status_headers_and_json_body() {
    let mut resp = error_response(&ApiError::MethodNotAllowed {
        allow: vec!["GET", "POST"],
    });
    assert_eq!(resp.status_code(), 405);
    assert_eq!(
        resp.headers().get("Allow").unwrap().as_deref(),
        Some("GET, POST")
    );
    assert_eq!(
        resp.headers().get("Content-Type").unwrap().as_deref(),
        Some("application/json")
    );
    let body: serde_json::Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "method_not_allowed");

    let mut resp = error_response(&ApiError::Internal("secret table name".into()));
    assert_eq!(resp.status_code(), 500);
    assert!(!resp.text().await.unwrap().contains("secret"));

    let resp = error_response(&ApiError::Unauthorized("no key".into()));
    assert_eq!(
        resp.headers().get("WWW-Authenticate").unwrap().as_deref(),
        Some("Bearer")
    );
    let resp = error_response(&ApiError::RateLimited {
        message: "slow down".into(),
        retry_after_secs: 12,
    });
    assert_eq!(
        resp.headers().get("Retry-After").unwrap().as_deref(),
        Some("12")
    );
}

#[wasm_bindgen_test]
async fn json_bodies_are_read_from_real_requests() {
    let mut req = post(r#"{"name":"Bot","x":1}"#, Some("application/json"));
    let body = read_json_object(&mut req).await.unwrap();
    assert_eq!(body["name"], "Bot");

    let mut req = post("", Some("application/json"));
    assert!(read_json_object(&mut req).await.unwrap().is_empty());

    let mut req = post("{nope", Some("application/json"));
    assert_eq!(
        read_json_object(&mut req).await.unwrap_err().code(),
        "invalid_json"
    );

    let mut req = post("name=Bot", Some("application/x-www-form-urlencoded"));
    assert_eq!(read_json_object(&mut req).await.unwrap_err().status(), 415);
}

#[wasm_bindgen_test]
async fn oversized_bodies_are_refused() {
    let big = format!(r#"{{"name":"{}"}}"#, "a".repeat(MAX_JSON_BODY_BYTES));
    let mut req = post(&big, Some("application/json"));
    assert_eq!(read_json_object(&mut req).await.unwrap_err().status(), 413);

    let mut req = post("0123456789", None);
    assert_eq!(
        read_body_capped(&mut req, 9).await.unwrap_err().status(),
        413
    );
    let mut req = post("0123456789", None);
    assert_eq!(read_body_capped(&mut req, 10).await.unwrap().len(), 10);
}

#[wasm_bindgen_test]
fn bound_values_become_the_right_js_types() {
    assert_eq!(
        JsValue::from(&Arg::Text("abc")).as_string().as_deref(),
        Some("abc")
    );
    assert_eq!(JsValue::from(&Arg::Int(42)).as_f64(), Some(42.0));
    assert_eq!(JsValue::from(&Arg::Real(0.5)).as_f64(), Some(0.5));
    assert!(JsValue::from(&Arg::Null).is_null());
}
