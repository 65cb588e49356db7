//! Chatbot settings: defaults, validation of create and update bodies, and the record shape.

use crate::api::error::ApiResult;
use crate::api::validate::{Body, MAX_MESSAGE_CHARS, MAX_NAME_CHARS};
use crate::domain::rate_limit::parse_pair;
use crate::domain::widget::parse_allowed_origins;
use crate::string_enum::string_enum;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

string_enum! {
    /// Who may chat with a chatbot: only its owner's keys (`private`), any site visitor
    /// (`public`), or visitors on its allowed origins (`hybrid`).
    pub enum Visibility {
        Private = "private",
        Public = "public",
        Hybrid = "hybrid",
    }
}

pub const DEFAULT_RATE_LIMIT: (i64, i64) = (20, 240);
pub const RATE_LIMIT_COUNT_RANGE: (i64, i64) = (1, 100);
pub const RATE_LIMIT_WINDOW_RANGE: (i64, i64) = (1, 360);
pub const DEFAULT_RATE_LIMIT_MESSAGE: &str =
    "Too many messages in a short time. Please wait a moment and try again.";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatbotSettings {
    pub name: String,
    pub visibility: Visibility,
    pub rate_limit_count: i64,
    pub rate_limit_window: i64,
    pub rate_limit_message: String,
    pub show_citations: bool,
    /// Sites whose visitors may chat with a hybrid chatbot through the widget.
    pub allowed_origins: Vec<String>,
    /// Each site visitor's own `[messages, seconds]` inside `rate_limit`; `None` is the
    /// default, `visitor_default(rate_limit)`.
    pub visitor_rate_limit: Option<(i64, i64)>,
}

/// A visitor's share when the owner set none: a quarter of the chatbot's messages (at least
/// one) over the same window, so one visitor cannot use up what every other visitor shares.
pub fn visitor_default((count, window): (i64, i64)) -> (i64, i64) {
    ((count / 4).max(1), window)
}

impl ChatbotSettings {
    /// The window each site visitor has to itself.
    pub fn visitor_limit(&self) -> (i64, i64) {
        self.visitor_rate_limit
            .unwrap_or_else(|| visitor_default((self.rate_limit_count, self.rate_limit_window)))
    }
}

/// A stored chatbot as the storage layer reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chatbot {
    pub uuid: String,
    pub created_at: String,
    pub modified_at: String,
    pub settings: ChatbotSettings,
}

impl Chatbot {
    pub fn to_json(&self) -> Value {
        let s = &self.settings;
        json!({
            "uuid": self.uuid,
            "name": s.name,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "meta": {
                "rate_limit": [s.rate_limit_count, s.rate_limit_window],
                "rate_limit_message": s.rate_limit_message,
                "show_citations": s.show_citations,
                "visibility": s.visibility,
                "allowed_origins": s.allowed_origins,
                "visitor_rate_limit": s.visitor_limit(),
            }
        })
    }
}

fn parse_rate_limit(field: &str, value: &Value) -> ApiResult<(i64, i64)> {
    parse_pair(
        field,
        "messages",
        value,
        RATE_LIMIT_COUNT_RANGE,
        RATE_LIMIT_WINDOW_RANGE,
    )
}

/// Applies the optional fields of a create or update body over `base`.
fn apply_optional(body: &Body, mut settings: ChatbotSettings) -> ApiResult<ChatbotSettings> {
    if let Some(v) = body.opt_variant("visibility")? {
        settings.visibility = v;
    }
    if let Some(value) = body.raw("rate_limit") {
        (settings.rate_limit_count, settings.rate_limit_window) =
            parse_rate_limit("rate_limit", value)?;
    }
    match body.raw("visitor_rate_limit") {
        // `null` goes back to the default share.
        Some(Value::Null) => settings.visitor_rate_limit = None,
        Some(value) => {
            settings.visitor_rate_limit = Some(parse_rate_limit("visitor_rate_limit", value)?)
        }
        None => {}
    }
    // The body of every 429 the chatbot's limit sends: an empty one would tell nobody why.
    if let Some(m) = body.opt_nonblank_str("rate_limit_message", MAX_MESSAGE_CHARS)? {
        settings.rate_limit_message = m;
    }
    if let Some(b) = body.opt_bool("show_citations")? {
        settings.show_citations = b;
    }
    if let Some(value) = body.raw("allowed_origins") {
        settings.allowed_origins = parse_allowed_origins(value)?;
    }
    Ok(settings)
}

pub fn settings_for_create(body: &Map<String, Value>) -> ApiResult<ChatbotSettings> {
    let body = Body(body);
    let name = body.req_str("name", MAX_NAME_CHARS)?.trim().to_string();
    apply_optional(
        &body,
        ChatbotSettings {
            name,
            visibility: Visibility::Private,
            rate_limit_count: DEFAULT_RATE_LIMIT.0,
            rate_limit_window: DEFAULT_RATE_LIMIT.1,
            rate_limit_message: DEFAULT_RATE_LIMIT_MESSAGE.to_string(),
            show_citations: false,
            allowed_origins: Vec::new(),
            visitor_rate_limit: None,
        },
    )
}

/// Only the fields sent change.
pub fn settings_for_update(
    body: &Map<String, Value>,
    current: &ChatbotSettings,
) -> ApiResult<ChatbotSettings> {
    let body = Body(body);
    let mut settings = current.clone();
    if let Some(name) = body.opt_nonblank_str("name", MAX_NAME_CHARS)? {
        settings.name = name;
    }
    apply_optional(&body, settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn create_fills_defaults() {
        let s = settings_for_create(&obj(json!({"name": "  Help desk "}))).unwrap();
        assert_eq!(s.name, "Help desk");
        assert_eq!(s.visibility, Visibility::Private);
        assert_eq!((s.rate_limit_count, s.rate_limit_window), (20, 240));
        assert!(!s.show_citations);
        assert_eq!(s.rate_limit_message, DEFAULT_RATE_LIMIT_MESSAGE);
        assert!(s.allowed_origins.is_empty());
    }

    #[test]
    fn create_validates_each_field() {
        let field = |v: Value| {
            settings_for_create(&obj(v))
                .unwrap_err()
                .field()
                .map(str::to_string)
        };
        assert_eq!(field(json!({})).as_deref(), Some("name"));
        assert_eq!(field(json!({"name": ""})).as_deref(), Some("name"));
        assert_eq!(field(json!({"name": 3})).as_deref(), Some("name"));
        assert_eq!(
            field(json!({"name": "a", "visibility": "secret"})).as_deref(),
            Some("visibility")
        );
        assert_eq!(
            field(json!({"name": "a", "show_citations": "yes"})).as_deref(),
            Some("show_citations")
        );
        assert_eq!(
            field(json!({"name": "a", "rate_limit_message": 1})).as_deref(),
            Some("rate_limit_message")
        );
        assert_eq!(
            field(json!({"name": "a", "rate_limit_message": " "})).as_deref(),
            Some("rate_limit_message")
        );
        assert_eq!(
            field(json!({"name": "a", "allowed_origins": ["example.com"]})).as_deref(),
            Some("allowed_origins")
        );
        for bad in [
            json!([0, 10]),
            json!([101, 10]),
            json!([10, 0]),
            json!([10, 361]),
            json!([10]),
            json!([10, 10, 10]),
            json!("10,10"),
            json!([1.5, 10]),
            json!(["1", 10]),
        ] {
            assert_eq!(
                field(json!({"name": "a", "rate_limit": bad})).as_deref(),
                Some("rate_limit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn rate_limit_bounds_are_inclusive() {
        let s = settings_for_create(&obj(json!({"name": "a", "rate_limit": [100, 360]}))).unwrap();
        assert_eq!((s.rate_limit_count, s.rate_limit_window), (100, 360));
        let s = settings_for_create(&obj(json!({"name": "a", "rate_limit": [1.0, 1]}))).unwrap();
        assert_eq!((s.rate_limit_count, s.rate_limit_window), (1, 1));
    }

    #[test]
    fn update_changes_only_sent_fields() {
        let current =
            settings_for_create(&obj(json!({"name": "a", "show_citations": true}))).unwrap();
        let s = settings_for_update(&obj(json!({"visibility": "public"})), &current).unwrap();
        assert_eq!(s.visibility, Visibility::Public);
        assert_eq!(s.name, "a");
        assert!(s.show_citations);
        assert!(settings_for_update(&obj(json!({"name": " "})), &current).is_err());
        assert_eq!(
            settings_for_update(&obj(json!({})), &current).unwrap(),
            current
        );
        let s = settings_for_update(
            &obj(json!({"visibility": "hybrid", "allowed_origins": ["https://Shop.example/"]})),
            &current,
        )
        .unwrap();
        assert_eq!(s.allowed_origins, vec!["https://shop.example"]);
        let cleared = settings_for_update(&obj(json!({"allowed_origins": []})), &s).unwrap();
        assert!(cleared.allowed_origins.is_empty());
    }

    #[test]
    fn record_shape_matches_the_spec() {
        let bot = Chatbot {
            uuid: "u".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            modified_at: "2026-01-01T00:00:00Z".into(),
            settings: settings_for_create(&obj(json!({"name": "a"}))).unwrap(),
        };
        let v = bot.to_json();
        assert_eq!(v["meta"]["rate_limit"], json!([20, 240]));
        assert_eq!(v["meta"]["visibility"], "private");
        assert_eq!(v["meta"]["show_citations"], false);
        assert!(v["meta"]["rate_limit_message"].is_string());
        assert_eq!(v["meta"]["allowed_origins"], json!([]));
        assert_eq!(v["meta"]["visitor_rate_limit"], json!([5, 240]));
    }

    #[test]
    fn visitors_get_a_quarter_unless_the_owner_says_otherwise() {
        let s = settings_for_create(&obj(json!({"name": "a", "rate_limit": [3, 60]}))).unwrap();
        assert_eq!(s.visitor_limit(), (1, 60), "at least one message");
        let s = settings_for_create(&obj(json!({"name": "a", "rate_limit": [40, 60]}))).unwrap();
        assert_eq!(s.visitor_limit(), (10, 60));
        let set = settings_for_update(&obj(json!({"visitor_rate_limit": [2, 30]})), &s).unwrap();
        assert_eq!(set.visitor_limit(), (2, 30));
        let cleared = settings_for_update(&obj(json!({"visitor_rate_limit": null})), &set).unwrap();
        assert_eq!(cleared.visitor_limit(), (10, 60));
        for bad in [
            json!([0, 10]),
            json!([101, 10]),
            json!([10, 361]),
            json!("5"),
        ] {
            let err =
                settings_for_update(&obj(json!({"visitor_rate_limit": bad})), &s).unwrap_err();
            assert_eq!(err.field(), Some("visitor_rate_limit"));
        }
    }
}
