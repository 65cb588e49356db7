//! `platform::outbound`: the guard and limits around the Worker's own requests. The only server
//! reached is the test runner's, on 127.0.0.1, which serves this crate's files.

use super::support::{env, page_origin};
use edgechat::platform::config;
use edgechat::platform::outbound::{fetch, Limits, Outgoing};
use edgechat_core::knowledge::url_guard::PrivateAccess;
use std::time::Duration;
use wasm_bindgen_test::*;
use worker::Method;

const PAGE: &[u8] = include_bytes!("../fixtures/site/returns.html");
const PAGE_PATH: &str = "/tests/fixtures/site/returns.html";

const LIMITS: Limits = Limits {
    timeout: Duration::from_secs(10),
    max_bytes: 1 << 20,
    max_redirects: 3,
};

fn get(url: &str) -> Outgoing<'_> {
    Outgoing {
        method: Method::Get,
        url,
        headers: vec![("Accept".into(), "text/html".into())],
        body: None,
    }
}

#[wasm_bindgen_test]
async fn an_allowed_page_is_fetched_whole() {
    let url = format!("{}{PAGE_PATH}", page_origin());
    let fetched = fetch(get(&url), &PrivateAccess::everything(), LIMITS)
        .await
        .unwrap();
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.url, url);
    assert_eq!(fetched.body, PAGE);
    assert!(
        fetched
            .content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        fetched.content_type
    );
}

#[wasm_bindgen_test]
async fn an_error_status_is_an_answer_not_a_failure() {
    let url = format!("{}/tests/fixtures/site/no-such-page.html", page_origin());
    let fetched = fetch(get(&url), &PrivateAccess::everything(), LIMITS)
        .await
        .unwrap();
    assert_eq!(fetched.status, 404);
}

#[wasm_bindgen_test]
async fn an_answer_over_the_size_cap_is_refused() {
    let url = format!("{}{PAGE_PATH}", page_origin());
    assert!(PAGE.len() > 1024);
    let small = Limits {
        max_bytes: 1024,
        ..LIMITS
    };
    let err = fetch(get(&url), &PrivateAccess::everything(), small)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "The answer is larger than the 1 KiB this service reads."
    );
    let exact = Limits {
        max_bytes: PAGE.len(),
        ..LIMITS
    };
    let fetched = fetch(get(&url), &PrivateAccess::everything(), exact).await;
    assert_eq!(fetched.unwrap().body.len(), PAGE.len());
}

#[wasm_bindgen_test]
async fn loopback_is_refused_unless_the_operator_opened_it() {
    let origin = page_origin();
    let url = format!("{origin}{PAGE_PATH}");
    let err = fetch(get(&url), &PrivateAccess::default(), LIMITS)
        .await
        .unwrap_err();
    assert!(err.contains("private, loopback"), "{err}");
    // Opening this one host and port lets exactly it through.
    let host_port = origin.trim_start_matches("http://");
    let one = PrivateAccess::from_settings(false, host_port);
    assert_eq!(fetch(get(&url), &one, LIMITS).await.unwrap().status, 200);
    let other_port = PrivateAccess::from_settings(false, "127.0.0.1:1");
    assert!(fetch(get(&url), &other_port, LIMITS).await.is_err());
}

#[wasm_bindgen_test]
async fn what_the_guard_refuses_is_never_requested() {
    let access = PrivateAccess::default();
    for url in [
        "file:///etc/passwd",
        "ftp://127.0.0.1/",
        "http://user:secret@127.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://localhost/",
        "not a url",
    ] {
        let err = fetch(get(url), &access, LIMITS).await.unwrap_err();
        assert!(
            !err.starts_with("Could not reach"),
            "{url} was requested: {err}"
        );
    }
}

#[wasm_bindgen_test]
async fn an_invalid_header_fails_before_sending() {
    let url = format!("{}{PAGE_PATH}", page_origin());
    let out = Outgoing {
        method: Method::Post,
        url: &url,
        headers: vec![("Bad Header".into(), "x".into())],
        body: Some("{}".into()),
    };
    let err = fetch(out, &PrivateAccess::everything(), LIMITS)
        .await
        .unwrap_err();
    assert_eq!(err, "The header \"Bad Header\" is not a valid HTTP header.");
}

#[wasm_bindgen_test]
fn time_limits_and_private_access_come_from_the_environment() {
    let read = |vars: &[(&str, &str)]| config::read(&env(vars));
    let secs = |value: &str| {
        read(&[("TOOL_TIMEOUT_SECONDS", value)])
            .tool_timeout
            .as_secs()
    };
    assert_eq!(secs("30"), 30);
    assert_eq!(secs(" 5 "), 5);
    for unusable in ["0", "601", "ten", "-3", ""] {
        assert_eq!(secs(unusable), 10, "{unusable:?} falls back to the default");
    }
    assert_eq!(read(&[]).model_timeout.as_secs(), 60);

    assert_eq!(read(&[]).private_access, PrivateAccess::default());
    assert!(read(&[("ALLOW_PRIVATE_URLS", "TRUE")]).private_access.all);
    assert_eq!(
        read(&[
            ("ALLOW_PRIVATE_URLS", "yes"),
            ("ALLOW_PRIVATE_HOSTS", "127.0.0.1:4545, Intranet"),
        ])
        .private_access,
        PrivateAccess {
            all: false,
            hosts: vec!["127.0.0.1:4545".into(), "intranet".into()],
        }
    );
}
