//! How an answer travels to the client: plain text by default (the body is the answer text and
//! nothing else), or server-sent events when the client asks for `text/event-stream`.

use crate::knowledge::retrieve::Ranked;
use serde_json::{json, Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    Plain,
    EventStream,
}

impl WireFormat {
    pub fn from_accept(accept: Option<&str>) -> Self {
        let wants_events = accept.is_some_and(|a| {
            a.split(',').any(|part| {
                part.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case("text/event-stream")
            })
        });
        if wants_events {
            WireFormat::EventStream
        } else {
            WireFormat::Plain
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            WireFormat::Plain => "text/plain; charset=utf-8",
            WireFormat::EventStream => "text/event-stream; charset=utf-8",
        }
    }

    /// One server-sent event; `None` in plain mode, which carries only answer text.
    pub fn event(self, name: &str, data: &Value) -> Option<String> {
        match self {
            WireFormat::Plain => None,
            WireFormat::EventStream => Some(format!("event: {name}\ndata: {data}\n\n")),
        }
    }

    pub fn delta(self, text: &str) -> String {
        match self {
            WireFormat::Plain => text.to_string(),
            WireFormat::EventStream => {
                format!("event: delta\ndata: {}\n\n", json!({ "text": text }))
            }
        }
    }
}

/// `cite_data_json`'s object: `{"1": {data_source_uuid, title, text, file_name, type}, ...}`,
/// numbered in the order given (relevance order).
pub fn cite_data(ranked: &[Ranked], cited: &[usize]) -> Value {
    let mut map = Map::new();
    for (n, &i) in cited.iter().enumerate() {
        if let Some(r) = ranked.get(i) {
            map.insert(
                (n + 1).to_string(),
                json!({
                    "data_source_uuid": r.hit.data_source_uuid,
                    "title": r.hit.title,
                    "text": r.hit.text,
                    "file_name": r.hit.file_name,
                    "type": r.hit.source_type,
                }),
            );
        }
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_header_selects_the_format() {
        assert_eq!(WireFormat::from_accept(None), WireFormat::Plain);
        assert_eq!(WireFormat::from_accept(Some("*/*")), WireFormat::Plain);
        assert_eq!(
            WireFormat::from_accept(Some("text/event-stream")),
            WireFormat::EventStream
        );
        assert_eq!(
            WireFormat::from_accept(Some("application/json, Text/Event-Stream;q=0.9")),
            WireFormat::EventStream
        );
    }

    #[test]
    fn plain_mode_carries_only_text() {
        assert_eq!(WireFormat::Plain.delta("Hi\nthere"), "Hi\nthere");
        assert_eq!(WireFormat::Plain.event("start", &json!({})), None);
    }

    #[test]
    fn event_stream_frames_one_line_json() {
        assert_eq!(
            WireFormat::EventStream.delta("a\nb"),
            "event: delta\ndata: {\"text\":\"a\\nb\"}\n\n"
        );
        assert_eq!(
            WireFormat::EventStream
                .event("end", &json!({"finish_reason": "stop"}))
                .as_deref(),
            Some("event: end\ndata: {\"finish_reason\":\"stop\"}\n\n")
        );
    }
}
