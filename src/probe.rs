//! Test-only ways in, compiled only with the `panic-probe` feature: `scripts/test.sh` builds
//! that into `build/panic-probe` for `tests/e2e/panic.test.mjs`, and `make dev`, `make build`
//! and deploys never have it.
//!
//! - `/__probe/panic` panics, to show what a panic does to the requests after it.
//! - `/__probe/rate-limiter/{name}` hands the request body, untouched, to the rate-limit object
//!   named `name` and returns its answer, to show what the object makes of JSON that is not a
//!   limit (the Worker itself only ever sends valid ones).

use wasm_bindgen::JsValue;
use worker::{Env, Method, Request, RequestInit, Response, Result};

pub const PANIC_PATH: &str = "/__probe/panic";
pub const RATE_LIMITER_PREFIX: &str = "/__probe/rate-limiter/";

/// The probe's answer, or the request back when it is not for a probe.
pub async fn intercept(
    mut req: Request,
    env: &Env,
) -> Result<std::result::Result<Response, Request>> {
    let path = req.path();
    if path == PANIC_PATH {
        panic!("panic probe: {PANIC_PATH} panics on purpose");
    }
    let Some(name) = path.strip_prefix(RATE_LIMITER_PREFIX) else {
        return Ok(Err(req));
    };
    let body = req.bytes().await?;
    let stub = env
        .durable_object(edgechat_core::config::bindings::RATE_LIMITER)?
        .id_from_name(name)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(JsValue::from(js_sys::Uint8Array::from(&body[..]))));
    let forwarded = Request::new_with_init("https://rate-limiter/admit", &init)?;
    Ok(Ok(stub.fetch_with_request(forwarded).await?))
}
