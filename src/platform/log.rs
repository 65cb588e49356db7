//! Structured logs: every line is one JSON object, so a log search can filter by route,
//! account or record. A request writes exactly one line when its response is ready; work that
//! runs after the response (reading a source, tagging a session, storing a streamed answer)
//! writes one line per failure, naming what failed, which record, and the cause chain.
//!
//! An internal failure's line always says "internal error": it is what operators (and the
//! end-to-end tests) look for.

use edgechat_core::api::error::ApiError;
use edgechat_core::config::Problem;
use serde_json::{json, Map, Value};
use std::cell::RefCell;

fn emit(level: &str, mut line: Map<String, Value>) {
    line.insert("level".into(), json!(level));
    let text = Value::Object(line).to_string();
    match level {
        "error" => worker::console_error!("{text}"),
        "warn" => worker::console_warn!("{text}"),
        _ => worker::console_log!("{text}"),
    }
}

/// What a log line says about an error: its code, and for failures on our side or upstream,
/// the cause chain (never sent to the client).
fn error_fields(err: &ApiError) -> Value {
    match err {
        ApiError::Internal(cause) => json!({"code": err.code(), "cause": cause.chain()}),
        ApiError::Upstream(detail)
        | ApiError::UpstreamBusy {
            message: detail, ..
        } => {
            json!({"code": err.code(), "cause": [detail]})
        }
        _ => json!({"code": err.code(), "message": err.public_message()}),
    }
}

/// A client's mistake (4xx) is part of normal traffic; only our own and upstream failures
/// (5xx) are errors.
fn level_of(status: u16) -> &'static str {
    if status >= 500 {
        "error"
    } else {
        "info"
    }
}

/// One request's line, filled in as the request is served and written once at the end.
pub struct RequestLog {
    method: String,
    started_ms: i64,
    route: RefCell<Option<(String, &'static str)>>,
    account: RefCell<Option<String>>,
    record: RefCell<Option<String>>,
    error: RefCell<Option<ApiError>>,
}

impl RequestLog {
    pub fn start(method: &str) -> Self {
        RequestLog {
            method: method.to_string(),
            started_ms: edgechat_core::time::now_ms(),
            route: RefCell::new(None),
            account: RefCell::new(None),
            record: RefCell::new(None),
            error: RefCell::new(None),
        }
    }

    /// The matched route: its endpoint's name and path pattern.
    pub fn route(&self, endpoint: String, pattern: &'static str) {
        *self.route.borrow_mut() = Some((endpoint, pattern));
    }

    pub fn account(&self, account_uuid: &str) {
        *self.account.borrow_mut() = Some(account_uuid.to_string());
    }

    /// The record the request is about: the path's uuid, or the one a create call made.
    pub fn record(&self, uuid: &str) {
        *self.record.borrow_mut() = Some(uuid.to_string());
    }

    /// Turns an error into its response and keeps the error (with its cause) for the line.
    pub fn fail(&self, err: ApiError) -> worker::Response {
        let body = err.body();
        self.fail_with_body(err, body)
    }

    /// As `fail`, with the body in another shape (see `http::error_response_with_body`).
    pub fn fail_with_body(&self, err: ApiError, body: serde_json::Value) -> worker::Response {
        let response = crate::app::http::error_response_with_body(&err, body);
        *self.error.borrow_mut() = Some(err);
        response
    }

    /// Writes the line. `path` is logged only when no route matched (the pattern says more and
    /// carries no ids).
    pub fn finish(&self, status: u16, path: &str) {
        let mut line = Map::new();
        let error = self.error.borrow();
        let msg = match error.as_ref() {
            Some(ApiError::Internal(_)) => "internal error",
            Some(ApiError::Upstream(_) | ApiError::UpstreamBusy { .. }) => "upstream error",
            _ => "request",
        };
        line.insert("msg".into(), json!(msg));
        line.insert("method".into(), json!(self.method));
        match self.route.borrow().as_ref() {
            Some((endpoint, pattern)) => {
                line.insert("route".into(), json!(pattern));
                line.insert("endpoint".into(), json!(endpoint));
            }
            None => {
                line.insert("path".into(), json!(path));
            }
        }
        line.insert("status".into(), json!(status));
        line.insert(
            "duration_ms".into(),
            json!(edgechat_core::time::now_ms() - self.started_ms),
        );
        if let Some(account) = self.account.borrow().as_ref() {
            line.insert("account".into(), json!(account));
        }
        if let Some(record) = self.record.borrow().as_ref() {
            line.insert("record".into(), json!(record));
        }
        if let Some(err) = error.as_ref() {
            line.insert("error".into(), error_fields(err));
        }
        emit(level_of(status), line);
    }
}

/// Work after the response failed. `what` says what was being done ("reading a web page
/// source"), `record` which record it was for.
pub fn background_failure(what: &str, record: &str, err: &ApiError) {
    let msg = match err {
        ApiError::Internal(_) => "internal error in background work",
        _ => "background work failed",
    };
    let mut line = Map::new();
    line.insert("msg".into(), json!(msg));
    line.insert("what".into(), json!(what));
    line.insert("record".into(), json!(record));
    line.insert("error".into(), error_fields(err));
    emit("error", line);
}

/// A model's answer broke off after it had started: the message is stored with what was
/// said, so this is a warning about the provider, not our failure.
pub fn upstream_failure(what: &str, record: &str, detail: &str) {
    let mut line = Map::new();
    line.insert("msg".into(), json!("upstream failure"));
    line.insert("what".into(), json!(what));
    line.insert("record".into(), json!(record));
    line.insert(
        "error".into(),
        json!({"code": "upstream_error", "cause": [detail]}),
    );
    emit("warn", line);
}

/// Settings that could not be used as given (see `edgechat_core::config`).
pub fn config_problems(problems: &[Problem]) {
    let mut line = Map::new();
    line.insert("msg".into(), json!("configuration problem"));
    line.insert(
        "problems".into(),
        Value::Array(
            problems
                .iter()
                .map(|p| json!({"name": p.name, "reason": p.reason, "using": p.fallback}))
                .collect(),
        ),
    );
    emit("warn", line);
}

/// A line for scheduled work that finished: what it did, in figures.
pub fn report(msg: &str, figures: Value) {
    let mut line = Map::new();
    line.insert("msg".into(), json!(msg));
    line.insert("report".into(), figures);
    emit("info", line);
}
