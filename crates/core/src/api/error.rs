//! The API's one error type. Handlers return `ApiError`; `http::error_response` is the only
//! place that turns it into a response, so every error body has the same shape.

use serde_json::{json, Value};
use std::error::Error as StdError;
use std::fmt;

/// Why an internal failure happened, kept with its type and source chain until it is logged.
/// It never reaches a client.
pub struct Cause(Box<dyn StdError + 'static>);

impl Cause {
    pub fn new(err: impl StdError + 'static) -> Self {
        Cause(Box::new(err))
    }

    /// A cause that is only a sentence (a broken invariant noticed by our own code).
    pub fn message(text: impl fmt::Display) -> Self {
        Cause(Box::new(Message(text.to_string())))
    }

    /// Every cause from the outermost in, each once: what a log line shows.
    pub fn chain(&self) -> Vec<String> {
        let mut out = vec![self.0.to_string()];
        let mut next = self.0.source();
        while let Some(err) = next {
            let text = err.to_string();
            if out.last() != Some(&text) {
                out.push(text);
            }
            next = err.source();
        }
        out
    }
}

impl From<&str> for Cause {
    fn from(text: &str) -> Self {
        Cause::message(text)
    }
}

impl From<String> for Cause {
    fn from(text: String) -> Self {
        Cause::message(text)
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.chain().join(": "))
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.chain().join(": "))
    }
}

/// A cause written as a sentence by our own code.
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Message {}

#[derive(Debug)]
pub enum ApiError {
    /// The body is not parseable JSON.
    InvalidJson(String),
    /// The body parsed but a value is wrong; `field` names the culprit when there is one.
    InvalidRequest {
        message: String,
        field: Option<String>,
    },
    Unauthorized(String),
    /// The caller is known but may not do this (a site visitor's token outside the chat it
    /// opens, or a chatbot that does not take visitors from that site).
    Forbidden(String),
    /// Missing, or owned by another account: the two must be indistinguishable.
    NotFound(String),
    MethodNotAllowed {
        allow: Vec<&'static str>,
    },
    Conflict(String),
    PayloadTooLarge(String),
    UnsupportedMediaType(String),
    RateLimited {
        message: String,
        retry_after_secs: u64,
    },
    /// A model provider or other outside party failed; the message is safe to show.
    Upstream(String),
    /// A model provider refused for now (its own 429): still a failure upstream, which
    /// passes on how long the provider asked to wait.
    UpstreamBusy {
        message: String,
        retry_after_secs: u64,
    },
    /// Anything we did not expect. The cause is logged, never sent to the client.
    Internal(Cause),
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Two errors are equal when a client would see the same thing and, for internal ones, the
/// same cause would be logged.
impl PartialEq for ApiError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ApiError::Internal(a), ApiError::Internal(b)) => a.chain() == b.chain(),
            (ApiError::Internal(_), _) | (_, ApiError::Internal(_)) => false,
            (a, b) => {
                a.status() == b.status()
                    && a.public_message() == b.public_message()
                    && a.field() == b.field()
                    && a.headers() == b.headers()
            }
        }
    }
}

impl ApiError {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            message: message.into(),
            field: Some(field.to_string()),
        }
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            message: message.into(),
            field: None,
        }
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::NotFound(format!("No {what} with that uuid exists."))
    }

    pub fn internal(cause: impl fmt::Display) -> Self {
        ApiError::Internal(Cause::message(cause))
    }

    pub fn status(&self) -> u16 {
        match self {
            ApiError::InvalidJson(_) | ApiError::InvalidRequest { .. } => 400,
            ApiError::Unauthorized(_) => 401,
            ApiError::Forbidden(_) => 403,
            ApiError::NotFound(_) => 404,
            ApiError::MethodNotAllowed { .. } => 405,
            ApiError::Conflict(_) => 409,
            ApiError::PayloadTooLarge(_) => 413,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::RateLimited { .. } => 429,
            ApiError::Upstream(_) | ApiError::UpstreamBusy { .. } => 502,
            ApiError::Internal(_) => 500,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidJson(_) => "invalid_json",
            ApiError::InvalidRequest { .. } => "invalid_request",
            ApiError::Unauthorized(_) => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::Conflict(_) => "conflict",
            ApiError::PayloadTooLarge(_) => "payload_too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::Upstream(_) | ApiError::UpstreamBusy { .. } => "upstream_error",
            ApiError::Internal(_) => "internal",
        }
    }

    /// The sentence a client sees. Internal causes are replaced by a fixed sentence.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::InvalidJson(m)
            | ApiError::InvalidRequest { message: m, .. }
            | ApiError::Unauthorized(m)
            | ApiError::Forbidden(m)
            | ApiError::NotFound(m)
            | ApiError::Conflict(m)
            | ApiError::PayloadTooLarge(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::RateLimited { message: m, .. }
            | ApiError::Upstream(m)
            | ApiError::UpstreamBusy { message: m, .. } => m.clone(),
            ApiError::MethodNotAllowed { allow } => format!(
                "This path does not accept that method; allowed: {}.",
                allow.join(", ")
            ),
            ApiError::Internal(_) => {
                "Something went wrong on our side; the request was not completed.".to_string()
            }
        }
    }

    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::InvalidRequest { field, .. } => field.as_deref(),
            _ => None,
        }
    }

    /// Headers the status requires (RFC 9110 for 401 and 405, RFC 6585 for 429).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            ApiError::Unauthorized(_) => vec![("WWW-Authenticate", "Bearer".to_string())],
            ApiError::MethodNotAllowed { allow } => vec![("Allow", allow.join(", "))],
            ApiError::RateLimited {
                retry_after_secs, ..
            }
            | ApiError::UpstreamBusy {
                retry_after_secs, ..
            } => vec![("Retry-After", retry_after_secs.to_string())],
            _ => Vec::new(),
        }
    }

    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code(), "message": self.public_message() });
        if let (Some(field), Some(obj)) = (self.field(), error.as_object_mut()) {
            obj.insert("field".to_string(), Value::String(field.to_string()));
        }
        json!({ "success": false, "error": error })
    }

    /// The same error readable as OpenAI's shape too, for the OpenAI-compatible endpoints:
    /// their clients read `error.message`, `error.type` and `error.param` beside our fields.
    pub fn openai_body(&self) -> Value {
        let kind = openai_error_type(self.code());
        let mut body = self.body();
        if let Some(error) = body["error"].as_object_mut() {
            error.insert("type".into(), json!(kind));
            error.insert("param".into(), json!(self.field()));
        }
        body
    }

    /// What to log: the internal cause for 5xx, nothing for client errors.
    pub fn log_line(&self) -> Option<String> {
        match self {
            ApiError::Internal(cause) => Some(format!("internal error: {cause}")),
            ApiError::Upstream(cause) | ApiError::UpstreamBusy { message: cause, .. } => {
                Some(format!("upstream error: {cause}"))
            }
            _ => None,
        }
    }
}

/// OpenAI's `error.type` for one of our error codes (the same in a body and mid-stream).
pub fn openai_error_type(code: &str) -> &'static str {
    match code {
        "unauthorized" => "authentication_error",
        "forbidden" => "permission_error",
        "not_found" => "not_found_error",
        "rate_limited" => "rate_limit_error",
        "upstream_error" | "internal" => "server_error",
        _ => "invalid_request_error",
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.public_message(), self.code())
    }
}

/// Any error type of a library (the Worker runtime's, serde_json's, ...) is an internal failure
/// that keeps its type. `ApiError` itself is deliberately not a `std::error::Error`, which is
/// what lets this impl exist beside `From<ApiError> for ApiError`.
impl<E: StdError + 'static> From<E> for ApiError {
    fn from(err: E) -> Self {
        ApiError::Internal(Cause::new(err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shape_adds_type_and_param_to_our_own() {
        let body = ApiError::invalid("messages", "bad").openai_body();
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "invalid_request");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["param"], "messages");
        let limited = ApiError::RateLimited {
            message: "slow".into(),
            retry_after_secs: 1,
        };
        assert_eq!(limited.openai_body()["error"]["type"], "rate_limit_error");
        assert_eq!(
            ApiError::Unauthorized("x".into()).openai_body()["error"]["param"],
            Value::Null
        );
    }

    #[test]
    fn every_variant_has_status_code_and_message() {
        let cases = vec![
            (ApiError::InvalidJson("x".into()), 400, "invalid_json"),
            (ApiError::invalid("name", "bad"), 400, "invalid_request"),
            (ApiError::Unauthorized("x".into()), 401, "unauthorized"),
            (ApiError::Forbidden("x".into()), 403, "forbidden"),
            (ApiError::not_found("chatbot"), 404, "not_found"),
            (
                ApiError::MethodNotAllowed {
                    allow: vec!["GET", "POST"],
                },
                405,
                "method_not_allowed",
            ),
            (ApiError::Conflict("x".into()), 409, "conflict"),
            (
                ApiError::PayloadTooLarge("x".into()),
                413,
                "payload_too_large",
            ),
            (
                ApiError::UnsupportedMediaType("x".into()),
                415,
                "unsupported_media_type",
            ),
            (
                ApiError::RateLimited {
                    message: "slow".into(),
                    retry_after_secs: 3,
                },
                429,
                "rate_limited",
            ),
            (ApiError::Upstream("x".into()), 502, "upstream_error"),
            (
                ApiError::UpstreamBusy {
                    message: "x".into(),
                    retry_after_secs: 7,
                },
                502,
                "upstream_error",
            ),
            (ApiError::internal("db exploded"), 500, "internal"),
        ];
        for (err, status, code) in cases {
            assert_eq!(err.status(), status);
            assert_eq!(err.code(), code);
            let body = err.body();
            assert_eq!(body["success"], false);
            assert_eq!(body["error"]["code"], code);
            assert!(!body["error"]["message"].as_str().unwrap_or("").is_empty());
        }
    }

    #[test]
    fn internal_cause_never_reaches_the_body() {
        let err = ApiError::internal("D1_ERROR: no such table: chatbots");
        let text = err.body().to_string();
        assert!(!text.contains("D1_ERROR"));
        assert!(!text.contains("chatbots"));
        assert_eq!(
            err.log_line().as_deref(),
            Some("internal error: D1_ERROR: no such table: chatbots")
        );
    }

    #[test]
    fn field_and_headers_follow_the_contract() {
        let body = ApiError::invalid("rate_limit", "out of range").body();
        assert_eq!(body["error"]["field"], "rate_limit");
        assert!(ApiError::Conflict("x".into()).body()["error"]
            .get("field")
            .is_none());
        assert_eq!(
            ApiError::Unauthorized("x".into()).headers(),
            vec![("WWW-Authenticate", "Bearer".to_string())]
        );
        assert_eq!(
            ApiError::MethodNotAllowed {
                allow: vec!["GET", "DELETE"]
            }
            .headers(),
            vec![("Allow", "GET, DELETE".to_string())]
        );
        assert_eq!(
            ApiError::RateLimited {
                message: "m".into(),
                retry_after_secs: 7
            }
            .headers(),
            vec![("Retry-After", "7".to_string())]
        );
    }
}
