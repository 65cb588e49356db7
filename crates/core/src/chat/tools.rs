//! Tool calls in a model's stream: pieces joined into whole calls, and how a call becomes an
//! HTTP request to the tool's endpoint.

use crate::chat::completion::ToolCallDelta;
use serde_json::{Map, Value};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text as the model wrote it.
    pub arguments: String,
}

/// Joins streamed tool-call pieces by their index.
#[derive(Default)]
pub struct ToolCallCollector {
    calls: Vec<ToolCall>,
    indices: Vec<usize>,
}

impl ToolCallCollector {
    pub fn add(&mut self, delta: ToolCallDelta) {
        let slot = match self.indices.iter().position(|&i| i == delta.index) {
            Some(p) => p,
            None => {
                self.indices.push(delta.index);
                self.calls.push(ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = delta.id {
            call.id = id;
        }
        if let Some(name) = delta.name {
            call.name.push_str(&name);
        }
        call.arguments.push_str(&delta.arguments);
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub fn take(&mut self) -> Vec<ToolCall> {
        self.indices.clear();
        std::mem::take(&mut self.calls)
    }
}

/// The arguments as an object; a model that wrote nothing or something else sends `{}`.
pub fn arguments_object(arguments: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The URL for a GET call: the arguments become query parameters (strings as they are, other
/// values as JSON).
pub fn url_with_query(base: &str, arguments: &Map<String, Value>) -> Option<String> {
    let mut url = url::Url::parse(base).ok()?;
    {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in arguments {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            pairs.append_pair(k, &text);
        }
    }
    Some(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_by_index() {
        let mut c = ToolCallCollector::default();
        c.add(ToolCallDelta {
            index: 0,
            id: Some("a".into()),
            name: Some("lookup".into()),
            arguments: "{\"id\":".into(),
        });
        c.add(ToolCallDelta {
            index: 1,
            id: Some("b".into()),
            name: Some("weather".into()),
            arguments: "{}".into(),
        });
        c.add(ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: " 7}".into(),
        });
        let calls = c.take();
        assert_eq!(
            calls[0],
            ToolCall {
                id: "a".into(),
                name: "lookup".into(),
                arguments: "{\"id\": 7}".into()
            }
        );
        assert_eq!(calls[1].name, "weather");
        assert!(c.is_empty());
    }

    #[test]
    fn arguments_and_query_strings() {
        let args = arguments_object(r#"{"order": "A 1", "n": 2}"#);
        assert_eq!(
            url_with_query("https://x.example/o?k=v", &args).as_deref(),
            Some("https://x.example/o?k=v&n=2&order=A+1")
        );
        assert!(arguments_object("not json").is_empty());
        assert!(arguments_object("[1]").is_empty());
    }
}
