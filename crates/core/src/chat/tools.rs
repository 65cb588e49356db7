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

/// The arguments a model wrote, as the object the endpoint is called with, checked against the
/// function's `parameters` schema: they must be a JSON object (a model that wrote nothing at
/// all, or `null`, means none, `{}`) holding every property the schema's `required` lists. Otherwise the
/// endpoint is not called, and the `Err` is the text the model gets back instead of a result,
/// in the `Error: ...` form of every failed call, so it can correct itself.
pub fn parse_arguments(arguments: &str, parameters: &Value) -> Result<Map<String, Value>, String> {
    let not_called = "the tool was not called";
    let object = if arguments.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(object)) => object,
            // Some servers write `null` for a function without parameters.
            Ok(Value::Null) => Map::new(),
            Ok(_) => {
                return Err(format!(
                    "Error: the arguments must be a JSON object; {not_called}."
                ))
            }
            Err(err) => {
                return Err(format!(
                    "Error: the arguments are not valid JSON ({err}); {not_called}."
                ))
            }
        }
    };
    let missing: Vec<String> = parameters["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !object.contains_key(*name))
        .map(|name| format!("{name:?}"))
        .collect();
    match missing.as_slice() {
        [] => Ok(object),
        [one] => Err(format!(
            "Error: the required argument {one} is missing; {not_called}."
        )),
        several => Err(format!(
            "Error: the required arguments {} are missing; {not_called}.",
            several.join(", ")
        )),
    }
}

/// What goes before the first words of an answer's later round (after its tools ran), given
/// what the earlier rounds `said`: a paragraph break when the two would otherwise run together
/// ("Let me check." and "Done checking." as "Let me check.Done checking."), else nothing.
pub fn round_separator(said: &str, first_piece: &str) -> &'static str {
    let said_ends_in_text = said.chars().next_back().is_some_and(|c| !c.is_whitespace());
    let piece_starts_with_text = first_piece
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace());
    if said_ends_in_text && piece_starts_with_text {
        "\n\n"
    } else {
        ""
    }
}

/// A tool URL's user name and password (`https://shop:s3cret@orders.example/api`) as the
/// `Authorization: Basic` value they stand for, and the URL without them: a URL is never sent
/// with credentials in it. `None` for a URL that holds none (or is not one).
pub fn credentials_of(url: &str) -> Option<(String, String)> {
    let mut parsed = url::Url::parse(url).ok()?;
    if parsed.username().is_empty() && parsed.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let pair = format!(
        "{}:{}",
        decode(parsed.username()),
        decode(parsed.password().unwrap_or(""))
    );
    parsed.set_username("").ok()?;
    parsed.set_password(None).ok()?;
    Some((
        parsed.to_string(),
        format!(
            "Basic {}",
            crate::domain::widget::base64_encode(pair.as_bytes())
        ),
    ))
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
    use serde_json::json;

    #[test]
    fn credentials_in_a_url_become_basic_authorization() {
        let (url, header) =
            credentials_of("https://shop:s3cret@orders.example/api?x=1").expect("credentials");
        assert_eq!(url, "https://orders.example/api?x=1");
        // "shop:s3cret", as RFC 7617 encodes it.
        assert_eq!(header, "Basic c2hvcDpzM2NyZXQ=");
        let (_, encoded) = credentials_of("https://a%40b:p%3Aw@h.example/").expect("credentials");
        assert_eq!(
            encoded,
            format!("Basic {}", crate::domain::widget::base64_encode(b"a@b:p:w"))
        );
        assert_eq!(credentials_of("https://orders.example/api"), None);
        assert_eq!(crate::domain::widget::base64_encode(b"ab"), "YWI=");
    }

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
    fn rounds_that_would_run_together_are_set_apart() {
        assert_eq!(round_separator("Let me check.", "Done checking."), "\n\n");
        assert_eq!(round_separator("Let me check. ", "Done checking."), "");
        assert_eq!(round_separator("Let me check.\n", "Done."), "");
        assert_eq!(round_separator("Let me check.", " Done."), "");
        assert_eq!(round_separator("Let me check.", "\nDone."), "");
        // Nothing said before, or nothing in the piece yet: nothing to set apart.
        assert_eq!(round_separator("", "Done."), "");
        assert_eq!(round_separator("Let me check.", ""), "");
    }

    #[test]
    fn arguments_and_query_strings() {
        let schema = json!({"type": "object", "properties": {}, "required": []});
        let args = parse_arguments(r#"{"order": "A 1", "n": 2}"#, &schema).expect("valid");
        assert_eq!(
            url_with_query("https://x.example/o?k=v", &args).as_deref(),
            Some("https://x.example/o?k=v&n=2&order=A+1")
        );
        assert_eq!(parse_arguments("", &schema), Ok(Map::new()));
        assert_eq!(parse_arguments(" {} ", &schema), Ok(Map::new()));
    }

    #[test]
    fn arguments_that_are_not_an_object_are_an_error_for_the_model() {
        let schema = json!({"type": "object", "properties": {}, "required": []});
        for (bad, why) in [
            ("{not json", "are not valid JSON"),
            ("not json", "are not valid JSON"),
            ("{\"a\": 1", "are not valid JSON"),
            ("[1]", "must be a JSON object"),
            ("\"text\"", "must be a JSON object"),
            ("42", "must be a JSON object"),
        ] {
            let err = parse_arguments(bad, &schema).expect_err(bad);
            assert!(
                err.starts_with(&format!("Error: the arguments {why}")),
                "{bad}: {err}"
            );
            assert!(err.ends_with("the tool was not called."), "{bad}: {err}");
        }
        assert_eq!(parse_arguments("null", &schema), Ok(Map::new()));
    }

    #[test]
    fn missing_required_arguments_are_named() {
        let schema = json!({"type": "object",
            "properties": {"order_id": {"type": "string"}, "zip": {"type": "string"}, "note": {"type": "string"}},
            "required": ["order_id", "zip"]});
        assert_eq!(
            parse_arguments(r#"{"zip": "1000"}"#, &schema),
            Err(
                "Error: the required argument \"order_id\" is missing; the tool was not called."
                    .into()
            )
        );
        assert_eq!(
            parse_arguments(r#"{"note": "x"}"#, &schema),
            Err("Error: the required arguments \"order_id\", \"zip\" are missing; the tool was not called.".into())
        );
        assert_eq!(
            parse_arguments("", &schema).unwrap_err(),
            "Error: the required arguments \"order_id\", \"zip\" are missing; the tool was not called."
        );
        let complete = parse_arguments(r#"{"order_id": "A1", "zip": null}"#, &schema);
        assert_eq!(complete.expect("complete").len(), 2);
    }
}
