//! `app::widget`: the visitor helpers that need no database: origins, the token secret, which
//! answers a visitor's page may read, and preflights refused before any lookup.

use super::support::{env, Body, Incoming};
use edgechat::app::widget::{
    allow_origin, cors_grant, foreign_origin, now_secs, own_origin, preflight, token_secret,
};
use edgechat::platform::config;
use edgechat_core::api::routes::Endpoint;
use edgechat_core::config::Config;
use edgechat_core::domain::widget::{sign, VisitorClaims};
use wasm_bindgen_test::*;
use worker::{Headers, Response};

const WORKER: &str = "https://chat.edgechat.test/api/v1/session/x/message/stream";
const SECRET: &str = "0123456789abcdef0123456789abcdef";
const SITE: &str = "https://shop.example";

/// The configuration a Worker with these variables reads.
fn config_of(vars: &[(&str, &str)]) -> Config {
    config::read(&env(vars))
}

fn with_origin(origin: Option<&str>) -> Incoming {
    let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
    Incoming::new("POST", WORKER, &headers, Body::None)
}

fn token(origin: Option<&str>, expires_at: i64, secret: &str) -> String {
    sign(
        &VisitorClaims {
            chatbot_uuid: "0b4e7a52-5d3c-4c4e-9d0e-1f2a3b4c5d6e".into(),
            visitor_id: "00112233445566778899aabbccddeeff".into(),
            origin: origin.map(str::to_string),
            expires_at,
        },
        secret.as_bytes(),
    )
}

#[wasm_bindgen_test]
fn the_workers_own_origin_is_scheme_host_and_port() {
    let at = |url: &str| own_origin(&Incoming::new("GET", url, &[], Body::None).req).unwrap();
    assert_eq!(at(WORKER), "https://chat.edgechat.test");
    assert_eq!(at("http://127.0.0.1:8787/health"), "http://127.0.0.1:8787");
    assert_eq!(
        at("https://chat.edgechat.test:443/x?y#z"),
        "https://chat.edgechat.test"
    );
    assert_eq!(
        at("HTTPS://Chat.EdgeChat.Test:8443/"),
        "https://chat.edgechat.test:8443"
    );
}

#[wasm_bindgen_test]
fn only_another_sites_origin_is_foreign() {
    let foreign = |origin: Option<&str>| foreign_origin(&with_origin(origin).req).unwrap();
    assert_eq!(foreign(None), None, "no Origin: not a cross-site call");
    assert_eq!(
        foreign(Some("null")),
        None,
        "an opaque origin names no site"
    );
    assert_eq!(
        foreign(Some("https://chat.edgechat.test")),
        None,
        "the Worker's own page"
    );
    assert_eq!(foreign(Some(SITE)).as_deref(), Some(SITE));
    assert_eq!(
        foreign(Some("  https://Shop.Example:443 ")).as_deref(),
        Some(SITE)
    );
    assert_eq!(
        foreign(Some("http://localhost:3000")).as_deref(),
        Some("http://localhost:3000")
    );
    assert_eq!(foreign(Some("not an origin")), None);
    assert_eq!(
        foreign(Some("https://shop.example/path")),
        None,
        "an origin has no path"
    );
}

#[wasm_bindgen_test]
fn the_token_secret_must_be_set_and_long_enough() {
    let missing = token_secret(&config_of(&[])).unwrap_err();
    assert_eq!(missing.status(), 500);
    assert!(missing
        .log_line()
        .unwrap()
        .contains("WIDGET_TOKEN_SECRET is not set"));
    assert!(
        !missing.public_message().contains("WIDGET_TOKEN_SECRET"),
        "not told to clients"
    );
    let empty = token_secret(&config_of(&[("WIDGET_TOKEN_SECRET", "")])).unwrap_err();
    assert_eq!(empty.status(), 500);
    let short = token_secret(&config_of(&[("WIDGET_TOKEN_SECRET", "too short")])).unwrap_err();
    assert!(short.log_line().unwrap().contains("too short"), "{short}");
    assert_eq!(
        token_secret(&config_of(&[("WIDGET_TOKEN_SECRET", SECRET)])).unwrap(),
        SECRET.as_bytes()
    );
}

#[wasm_bindgen_test]
fn a_page_may_read_answers_only_with_a_token_minted_for_its_own_site() {
    let config = config_of(&[("WIDGET_TOKEN_SECRET", SECRET)]);
    let later = now_secs() + 600;
    let grant = |origin: Option<&str>, token: Option<&str>| {
        cors_grant(&with_origin(origin).req, &config, token)
    };
    let for_site = token(Some(SITE), later, SECRET);
    assert_eq!(grant(Some(SITE), Some(&for_site)).as_deref(), Some(SITE));
    // An expired token still lets the page read its 401, so it can renew.
    let expired = token(Some(SITE), now_secs() - 5, SECRET);
    assert_eq!(grant(Some(SITE), Some(&expired)).as_deref(), Some(SITE));
    // Refused: another site's token, a token for no site, a forged or altered one, no token,
    // and a call that is not cross-site at all.
    let other = token(Some("https://other.example"), later, SECRET);
    assert_eq!(grant(Some(SITE), Some(&other)), None);
    assert_eq!(grant(Some(SITE), Some(&token(None, later, SECRET))), None);
    let forged = token(Some(SITE), later, "another secret, long enough too");
    assert_eq!(grant(Some(SITE), Some(&forged)), None);
    let altered = format!("{}A", for_site);
    assert_eq!(grant(Some(SITE), Some(&altered)), None);
    assert_eq!(grant(Some(SITE), None), None);
    assert_eq!(grant(None, Some(&for_site)), None);
    // Without the secret nothing is granted (and nothing panics).
    let bare = config_of(&[]);
    assert_eq!(
        cors_grant(&with_origin(Some(SITE)).req, &bare, Some(&for_site)),
        None
    );
}

#[wasm_bindgen_test]
async fn a_granted_answer_carries_the_cors_headers_and_keeps_the_rest() {
    let headers = Headers::new();
    headers.set("Vary", "Accept").unwrap();
    headers.set("X-Message-Uuid", "m-1").unwrap();
    let response = Response::builder()
        .with_status(429)
        .with_headers(headers)
        .fixed(b"slow down".to_vec());
    let mut response = allow_origin(response, SITE);
    assert_eq!(response.status_code(), 429);
    let h = response.headers();
    assert_eq!(
        h.get("Access-Control-Allow-Origin").unwrap().as_deref(),
        Some(SITE)
    );
    let exposed = h.get("Access-Control-Expose-Headers").unwrap().unwrap();
    for name in ["X-Message-Uuid", "X-Live-Chat", "Retry-After"] {
        assert!(exposed.contains(name), "{name} not exposed: {exposed}");
    }
    assert_eq!(h.get("Vary").unwrap().as_deref(), Some("Accept, Origin"));
    assert_eq!(h.get("X-Message-Uuid").unwrap().as_deref(), Some("m-1"));
    assert_eq!(h.get("Access-Control-Allow-Credentials").unwrap(), None);
    assert_eq!(response.text().await.unwrap(), "slow down");
}

#[wasm_bindgen_test]
async fn a_preflight_not_from_another_site_is_refused_before_any_lookup() {
    // The environment has no database: reaching for it would be a 500, not this 403.
    let env = env(&[("WIDGET_TOKEN_SECRET", SECRET)]);
    let params = vec!["0b4e7a52-5d3c-4c4e-9d0e-1f2a3b4c5d6e".to_string()];
    for origin in [None, Some("null"), Some("https://chat.edgechat.test")] {
        let incoming = with_origin(origin);
        let err = preflight(&incoming.req, &env, Endpoint::SessionCreate, &params)
            .await
            .unwrap_err();
        assert_eq!(err.status(), 403, "Origin: {origin:?}");
        assert_eq!(err.code(), "forbidden");
    }
}
