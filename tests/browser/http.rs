//! `app::http`: bodies read within their cap (declared and actual length), JSON bodies, and
//! every error as a response.

use super::support::{Body, Incoming};
use edgechat::app::http::{
    error_response, json_response, read_body_capped, read_json_object, success_response,
};
use edgechat_core::api::error::ApiError;
use serde_json::{json, Value};
use wasm_bindgen_test::*;

const URL: &str = "https://edgechat.test/api/v1/chatbot/create";

fn post(headers: &[(&str, &str)], body: Body) -> Incoming {
    Incoming::new("POST", URL, headers, body)
}

#[wasm_bindgen_test]
async fn a_declared_length_over_the_cap_is_refused_before_reading() {
    // An endless body: reading it at all would never end.
    let mut incoming = post(&[("Content-Length", "1000")], Body::Endless(&[], 100));
    let err = read_body_capped(&mut incoming.req, 999).await.unwrap_err();
    assert_eq!(err.status(), 413);
    assert_eq!(err.code(), "payload_too_large");
    assert!(err.public_message().contains("999 bytes"), "{err}");
    assert!(!incoming.body_locked(), "the body was not touched");
    assert_eq!(incoming.pulls(), 0);
}

#[wasm_bindgen_test]
async fn a_declared_length_smaller_than_the_body_does_not_lift_the_cap() {
    // The client says 5 bytes and sends 12 over three chunks.
    let mut incoming = post(
        &[("Content-Length", "5")],
        Body::Chunks(&[b"abcd", b"efgh", b"ijkl"]),
    );
    let err = read_body_capped(&mut incoming.req, 10).await.unwrap_err();
    assert_eq!(err.status(), 413);
    // Refused at the chunk that passed the cap, not after reading everything.
    assert_eq!(incoming.pulls(), 3);
}

#[wasm_bindgen_test]
async fn an_undeclared_endless_body_is_cut_off_at_the_cap() {
    let mut incoming = post(&[], Body::Endless(&[], 1024));
    let err = read_body_capped(&mut incoming.req, 10 * 1024)
        .await
        .unwrap_err();
    assert_eq!(err.status(), 413);
    assert!(
        incoming.pulls() <= 12,
        "read {} chunks of 1 KiB for a 10 KiB cap",
        incoming.pulls()
    );
}

#[wasm_bindgen_test]
async fn chunks_up_to_the_cap_are_joined_in_order() {
    let chunks: &[&[u8]] = &[b"01", b"2345", b"", b"6789"];
    let mut incoming = post(&[("Content-Length", "10")], Body::Chunks(chunks));
    let body = read_body_capped(&mut incoming.req, 10).await.unwrap();
    assert_eq!(body, b"0123456789");
    // Declared larger than sent, within the cap: what arrives is what counts.
    let mut incoming = post(&[("Content-Length", "16")], Body::Chunks(chunks));
    let body = read_body_capped(&mut incoming.req, 16).await.unwrap();
    assert_eq!(body, b"0123456789");
}

#[wasm_bindgen_test]
async fn unreadable_declared_lengths_are_ignored() {
    for declared in ["abc", "-1", "1e3", "", "18446744073709551616"] {
        let mut incoming = post(&[("Content-Length", declared)], Body::Chunks(&[b"{}"]));
        let body = read_body_capped(&mut incoming.req, 4).await;
        assert_eq!(body.unwrap(), b"{}", "Content-Length: {declared:?}");
    }
}

#[wasm_bindgen_test]
async fn a_request_without_a_body_reads_as_empty() {
    let mut incoming = Incoming::new("GET", URL, &[], Body::None);
    assert!(read_body_capped(&mut incoming.req, 0)
        .await
        .unwrap()
        .is_empty());
    let mut incoming = Incoming::new(
        "POST",
        URL,
        &[("Content-Type", "application/json")],
        Body::None,
    );
    assert!(read_json_object(&mut incoming.req)
        .await
        .unwrap()
        .is_empty());
}

#[wasm_bindgen_test]
async fn a_body_is_read_once() {
    let mut incoming = post(&[], Body::Chunks(&[b"{}"]));
    read_body_capped(&mut incoming.req, 10).await.unwrap();
    // A second read is the shell's own mistake: a 500, not an empty body taken for `{}`.
    let err = read_body_capped(&mut incoming.req, 10).await.unwrap_err();
    assert_eq!(err.status(), 500);
}

#[wasm_bindgen_test]
async fn json_media_types_are_accepted_and_others_refused() {
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/merge-patch+json",
        "",
    ] {
        let mut incoming = post(
            &[("Content-Type", content_type)],
            Body::Chunks(&[br#"{"a":1}"#]),
        );
        let body = read_json_object(&mut incoming.req).await;
        assert_eq!(body.unwrap()["a"], 1, "Content-Type: {content_type:?}");
    }
    // No Content-Type at all: the body is tried as JSON.
    let mut incoming = post(&[], Body::Chunks(&[br#"{"a":1}"#]));
    assert_eq!(read_json_object(&mut incoming.req).await.unwrap()["a"], 1);
    for content_type in [
        "text/plain",
        "multipart/form-data; boundary=x",
        "application/jsonx",
    ] {
        let mut incoming = post(&[("Content-Type", content_type)], Body::Endless(&[], 10));
        let err = read_json_object(&mut incoming.req).await.unwrap_err();
        assert_eq!(err.status(), 415, "Content-Type: {content_type:?}");
        assert_eq!(err.code(), "unsupported_media_type");
        assert!(!incoming.body_locked(), "refused before reading the body");
    }
}

#[wasm_bindgen_test]
async fn bodies_that_are_not_a_json_object_are_told_apart() {
    let cases: [(&[u8], u16, &str); 10] = [
        (b"{nope", 400, "invalid_json"),
        (b"{\"a\":1}{", 400, "invalid_json"),
        // A byte order mark before the JSON is skipped (RFC 8259 allows it), nowhere else.
        (b"\xef\xbb\xbf{}", 200, "empty"),
        (b"{}\xef\xbb\xbf", 400, "invalid_json"),
        (b"{\"a\":\"\xff\"}", 400, "invalid_json"),
        (b"[1,2]", 400, "invalid_request"),
        (b"\"text\"", 400, "invalid_request"),
        (b"42", 400, "invalid_request"),
        (b"null", 400, "invalid_request"),
        (b"  \n\t ", 200, "empty"),
    ];
    for (body, status, code) in cases {
        let mut incoming = post(
            &[("Content-Type", "application/json")],
            Body::Chunks(&[body]),
        );
        let result = read_json_object(&mut incoming.req).await;
        let shown = String::from_utf8_lossy(body);
        match result {
            Ok(map) => {
                assert_eq!((status, code), (200, "empty"), "{shown:?} was accepted");
                assert!(map.is_empty());
            }
            Err(err) => {
                assert_eq!((err.status(), err.code()), (status, code), "{shown:?}");
            }
        }
    }
    // The position of a syntax error is in the message, for the person fixing the request.
    let mut incoming = post(&[], Body::Chunks(&[b"{\n  \"a\": 1,\n  oops\n}"]));
    let err = read_json_object(&mut incoming.req).await.unwrap_err();
    assert!(err.public_message().contains("line 3"), "{err}");
}

#[wasm_bindgen_test]
async fn deeply_nested_json_is_refused_not_fatal() {
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
    let mut incoming = post(&[], Body::Chunks(&[deep.as_bytes()]));
    let err = read_json_object(&mut incoming.req).await.unwrap_err();
    assert_eq!(err.code(), "invalid_json");
}

/// An error, and the status, code and required headers its response must carry.
type ErrorCase = (
    ApiError,
    u16,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// Every error kind: its status, the headers it requires and nothing else, and the JSON body
/// of the contract.
#[wasm_bindgen_test]
async fn every_error_becomes_its_response() {
    let cases: Vec<ErrorCase> = vec![
        (
            ApiError::InvalidJson("bad".into()),
            400,
            "invalid_json",
            vec![],
        ),
        (
            ApiError::invalid("name", "too long"),
            400,
            "invalid_request",
            vec![],
        ),
        (
            ApiError::invalid_request("no"),
            400,
            "invalid_request",
            vec![],
        ),
        (
            ApiError::Unauthorized("no key".into()),
            401,
            "unauthorized",
            vec![("WWW-Authenticate", "Bearer")],
        ),
        (
            ApiError::Forbidden("not yours".into()),
            403,
            "forbidden",
            vec![],
        ),
        (ApiError::not_found("chatbot"), 404, "not_found", vec![]),
        (
            ApiError::MethodNotAllowed {
                allow: vec!["DELETE"],
            },
            405,
            "method_not_allowed",
            vec![("Allow", "DELETE")],
        ),
        (ApiError::Conflict("taken".into()), 409, "conflict", vec![]),
        (
            ApiError::PayloadTooLarge("big".into()),
            413,
            "payload_too_large",
            vec![],
        ),
        (
            ApiError::UnsupportedMediaType("xml".into()),
            415,
            "unsupported_media_type",
            vec![],
        ),
        (
            ApiError::RateLimited {
                message: "later".into(),
                retry_after_secs: 0,
            },
            429,
            "rate_limited",
            vec![("Retry-After", "0")],
        ),
        (
            ApiError::Upstream("the model failed".into()),
            502,
            "upstream_error",
            vec![],
        ),
        (
            ApiError::internal("D1: no such table"),
            500,
            "internal",
            vec![],
        ),
    ];
    let required = ["WWW-Authenticate", "Allow", "Retry-After"];
    for (err, status, code, headers) in cases {
        let mut resp = error_response(&err);
        assert_eq!(resp.status_code(), status, "{code}");
        assert_eq!(
            resp.headers().get("Content-Type").unwrap().as_deref(),
            Some("application/json"),
            "{code}"
        );
        for name in required {
            let expected = headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
            assert_eq!(
                resp.headers().get(name).unwrap().as_deref(),
                expected,
                "{code}: {name}"
            );
        }
        let text = resp.text().await.unwrap();
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body, err.body(), "{code}");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], code);
        assert!(!body["error"]["message"].as_str().unwrap().is_empty());
        assert!(
            !text.contains("no such table"),
            "an internal cause leaked: {text}"
        );
    }
    let mut resp = error_response(&ApiError::invalid("name", "too long"));
    let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["field"], "name");
    let mut resp = error_response(&ApiError::Forbidden("x".into()));
    let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert!(body["error"].get("field").is_none());
}

#[wasm_bindgen_test]
async fn json_answers_are_json() {
    let mut resp = json_response(&json!({"uuid": "x", "list": [1, 2], "emoji": "é🙂"})).unwrap();
    assert_eq!(resp.status_code(), 200);
    assert_eq!(
        resp.headers().get("Content-Type").unwrap().as_deref(),
        Some("application/json")
    );
    let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(body, json!({"uuid": "x", "list": [1, 2], "emoji": "é🙂"}));
    let mut resp = success_response().unwrap();
    assert_eq!(resp.status_code(), 200);
    assert_eq!(resp.text().await.unwrap(), r#"{"success":true}"#);
}
