//! Webhooks: a chatbot owner's endpoint, called with a signed JSON body when something happens
//! in the chatbot. The records and their rules, the body and its signature, and the schedule
//! on which a failed delivery is tried again.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{Body, MAX_DESCRIPTION_CHARS};
use crate::domain::widget::hmac_sha256;
use crate::string_enum::string_enum;
use serde_json::{json, Value};

string_enum! {
    /// What a webhook may be told about.
    pub enum Event {
        MessageCreated = "message.created",
        EscalationRequested = "escalation.requested",
        LiveChatStarted = "live_chat.started",
        LiveChatEnded = "live_chat.ended",
        SessionTagged = "session.tagged",
        SourceReady = "source.ready",
        SourceFailed = "source.failed",
        FeedbackCreated = "feedback.created",
        /// Sent by `POST /webhook/{uuid}/test`, whatever the webhook subscribed to.
        WebhookTest = "webhook.test",
    }
}

string_enum! {
    /// Where one delivery stands.
    pub enum DeliveryStatus {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
}

pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_WEBHOOKS_PER_CHATBOT: usize = 20;
/// How many deliveries `GET /webhook/{uuid}/deliveries` lists, newest first.
pub const LISTED_DELIVERIES: usize = 50;

/// Headers every delivery carries.
pub const EVENT_HEADER: &str = "X-Edgechat-Event";
pub const DELIVERY_HEADER: &str = "X-Edgechat-Delivery";
pub const TIMESTAMP_HEADER: &str = "X-Edgechat-Timestamp";
pub const SIGNATURE_HEADER: &str = "X-Edgechat-Signature";

/// Waits before each retry, in units of `WEBHOOK_RETRY_UNIT_SECONDS` (a minute unless set):
/// a failed first attempt is tried again after 1, 5, 15, 30 and 60 minutes, six attempts over
/// 111 minutes in all, then the delivery is marked failed. `WEBHOOK_RETRY_DELAYS` replaces the
/// whole schedule.
pub const RETRY_DELAYS: &[u32] = &[1, 5, 15, 30, 60];

/// The default schedule in seconds, for a unit of `unit_secs`.
pub fn retry_schedule(unit_secs: u32) -> Vec<u32> {
    RETRY_DELAYS
        .iter()
        .map(|units| units.saturating_mul(unit_secs))
        .collect()
}

/// Seconds to wait after failed attempt number `attempts` (1 for the first) under `delays`,
/// or `None` when that was the last.
pub fn retry_delay_secs(attempts: u32, delays: &[u32]) -> Option<u32> {
    let index = usize::try_from(attempts.checked_sub(1)?).ok()?;
    delays.get(index).copied()
}

#[derive(Clone, Debug, PartialEq)]
pub struct Webhook {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub url: String,
    pub events: Vec<Event>,
    pub description: String,
    pub enabled: bool,
    pub secret: String,
    pub created_at: String,
    pub modified_at: String,
}

impl Webhook {
    /// The record as listed: the secret is only ever shown when it is made (see `with_secret`).
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "url": self.url,
            "events": self.events.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            "description": self.description,
            "enabled": u8::from(self.enabled),
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }

    /// The record with its signing secret, as create and rotate answer.
    pub fn with_secret(&self) -> Value {
        let mut value = self.to_json();
        if let Some(fields) = value.as_object_mut() {
            fields.insert("secret".into(), Value::String(self.secret.clone()));
        }
        value
    }

    pub fn wants(&self, event: Event) -> bool {
        self.enabled && (event == Event::WebhookTest || self.events.contains(&event))
    }
}

/// A new signing secret: `whsec_` and 256 random bits in hex.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("whsec_{}", hex(&bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`, the value of `X-Edgechat-Signature`.
pub fn signature(secret: &str, timestamp: i64, body: &str) -> String {
    let signed = format!("{timestamp}.{body}");
    format!(
        "v1={}",
        hex(&hmac_sha256(secret.as_bytes(), signed.as_bytes()))
    )
}

/// The body of every attempt of one delivery; its `id` is the delivery's, so a receiver can
/// drop a repeat.
pub fn payload(
    delivery_uuid: &str,
    event: Event,
    created_at: &str,
    chatbot_uuid: &str,
    data: Value,
) -> String {
    json!({
        "id": delivery_uuid,
        "type": event.as_str(),
        "created_at": created_at,
        "chatbot_uuid": chatbot_uuid,
        "data": data,
    })
    .to_string()
}

fn parse_url(raw: &str) -> ApiResult<String> {
    let bad = || ApiError::invalid("url", "`url` must be an absolute http or https URL.");
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(ApiError::invalid(
            "url",
            format!("`url` must be at most {MAX_URL_CHARS} characters."),
        ));
    }
    let url = crate::idn::parse_url(raw.trim()).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad());
    }
    Ok(url.to_string())
}

fn parse_events(body: &Body) -> ApiResult<Option<Vec<Event>>> {
    let Some(names) = body.opt_string_array("events", Event::ALL.len())? else {
        return Ok(None);
    };
    let subscribable: Vec<&str> = Event::NAMES
        .iter()
        .copied()
        .filter(|n| *n != Event::WebhookTest.as_str())
        .collect();
    let mut events = Vec::new();
    for name in &names {
        match Event::parse(name).filter(|e| *e != Event::WebhookTest) {
            Some(event) if !events.contains(&event) => events.push(event),
            Some(_) => {}
            None => {
                return Err(ApiError::invalid(
                    "events",
                    format!(
                        "{name:?} is not an event; use any of: {}.",
                        subscribable.join(", ")
                    ),
                ))
            }
        }
    }
    if events.is_empty() {
        return Err(ApiError::invalid(
            "events",
            "`events` must name at least one event.",
        ));
    }
    Ok(Some(events))
}

/// What `create` and `update` may set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WebhookChanges {
    pub url: Option<String>,
    pub events: Option<Vec<Event>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

impl WebhookChanges {
    pub fn from_body(body: &Body) -> ApiResult<Self> {
        Ok(WebhookChanges {
            url: body
                .opt_str("url", MAX_URL_CHARS + 100)?
                .map(|u| parse_url(&u))
                .transpose()?,
            events: parse_events(body)?,
            description: body.opt_str("description", MAX_DESCRIPTION_CHARS)?,
            enabled: body.opt_bool("enabled")?,
        })
    }

    /// A new webhook: `url` and `events` are required.
    pub fn create(
        self,
        uuid: String,
        chatbot_uuid: String,
        secret: String,
        now: &str,
    ) -> ApiResult<Webhook> {
        let url = self
            .url
            .ok_or_else(|| ApiError::invalid("url", "`url` is required."))?;
        let events = self
            .events
            .ok_or_else(|| ApiError::invalid("events", "`events` is required."))?;
        Ok(Webhook {
            uuid,
            chatbot_uuid,
            url,
            events,
            description: self.description.unwrap_or_default(),
            enabled: self.enabled.unwrap_or(true),
            secret,
            created_at: now.to_string(),
            modified_at: now.to_string(),
        })
    }

    pub fn apply(self, webhook: &mut Webhook, now: &str) {
        if let Some(url) = self.url {
            webhook.url = url;
        }
        if let Some(events) = self.events {
            webhook.events = events;
        }
        if let Some(description) = self.description {
            webhook.description = description;
        }
        if let Some(enabled) = self.enabled {
            webhook.enabled = enabled;
        }
        webhook.modified_at = now.to_string();
    }
}

/// Events stored as a JSON array of their names; unknown names (from a later version) are
/// skipped.
pub fn events_from_json(text: &str) -> Vec<Event> {
    serde_json::from_str::<Vec<String>>(text)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| Event::parse(n))
        .collect()
}

pub fn events_to_json(events: &[Event]) -> String {
    Value::from(events.iter().map(|e| e.as_str()).collect::<Vec<_>>()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn retries_grow_over_more_than_an_hour_then_stop() {
        let schedule = retry_schedule(60);
        let attempts = schedule.len() as u32 + 1;
        let delays: Vec<u32> = (1..attempts)
            .map(|n| retry_delay_secs(n, &schedule).unwrap())
            .collect();
        assert!(attempts >= 5);
        assert!(delays.windows(2).all(|w| w[0] < w[1]), "{delays:?}");
        assert!(delays.iter().sum::<u32>() >= 3600);
        assert_eq!(retry_delay_secs(attempts, &schedule), None);
        assert_eq!(retry_delay_secs(0, &schedule), None);
        assert_eq!(retry_delay_secs(1, &retry_schedule(0)), Some(0));
        assert_eq!(retry_delay_secs(2, &[2, 4, 8]), Some(4));
        assert_eq!(retry_delay_secs(4, &[2, 4, 8]), None);
    }

    #[test]
    fn signature_is_hmac_of_timestamp_and_body() {
        let s = signature("key", 1_700_000_000, "{}");
        assert!(s.starts_with("v1="));
        assert_eq!(s.len(), 3 + 64);
        assert_eq!(s, signature("key", 1_700_000_000, "{}"));
        assert_ne!(s, signature("other", 1_700_000_000, "{}"));
        assert_ne!(s, signature("key", 1_700_000_001, "{}"));
    }

    #[test]
    fn create_needs_an_http_url_and_known_events() {
        let ok = WebhookChanges::from_body(&Body(&body(
            json!({"url": "https://hooks.example.com/x", "events": ["message.created", "message.created", "feedback.created"]}),
        )))
        .unwrap()
        .create("w".into(), "c".into(), "s".into(), "t")
        .unwrap();
        assert_eq!(
            ok.events,
            vec![Event::MessageCreated, Event::FeedbackCreated]
        );
        assert!(ok.enabled);
        assert!(ok.to_json().get("secret").is_none());
        assert_eq!(ok.with_secret()["secret"], "s");
        for (bad, field) in [
            (
                json!({"url": "ftp://x", "events": ["message.created"]}),
                "url",
            ),
            (json!({"url": "nope", "events": ["message.created"]}), "url"),
            (json!({"url": "https://x.example", "events": []}), "events"),
            (
                json!({"url": "https://x.example", "events": ["webhook.test"]}),
                "events",
            ),
            (
                json!({"url": "https://x.example", "events": ["message.deleted"]}),
                "events",
            ),
            (
                json!({"url": "https://x.example", "events": "message.created"}),
                "events",
            ),
            (
                json!({"url": "https://x.example", "events": ["message.created"], "enabled": "yes"}),
                "enabled",
            ),
        ] {
            let err = WebhookChanges::from_body(&Body(&body(bad.clone())))
                .and_then(|c| c.create("w".into(), "c".into(), "s".into(), "t"))
                .unwrap_err();
            assert_eq!(err.field(), Some(field), "{bad}");
        }
        let err = WebhookChanges::from_body(&Body(&body(json!({"events": ["message.created"]}))))
            .unwrap()
            .create("w".into(), "c".into(), "s".into(), "t")
            .unwrap_err();
        assert_eq!(err.field(), Some("url"));
    }

    #[test]
    fn a_disabled_webhook_wants_nothing() {
        let mut w = WebhookChanges {
            url: Some("https://x.example/".into()),
            events: Some(vec![Event::MessageCreated]),
            ..Default::default()
        }
        .create("w".into(), "c".into(), "s".into(), "t")
        .unwrap();
        assert!(w.wants(Event::MessageCreated));
        assert!(w.wants(Event::WebhookTest));
        assert!(!w.wants(Event::FeedbackCreated));
        w.enabled = false;
        assert!(!w.wants(Event::MessageCreated));
        assert!(!w.wants(Event::WebhookTest));
        assert_eq!(events_from_json(&events_to_json(&w.events)), w.events);
        assert!(new_secret().unwrap().starts_with("whsec_"));
    }
}
