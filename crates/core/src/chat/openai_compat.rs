//! The OpenAI-compatible face of the chat (`/api/v1/openai/...`): reading a Chat Completions
//! request as a chat turn, and writing a stored message back as a `chat.completion`. The
//! streamed form is `wire::WireFormat::OpenAiChunks`.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{as_whole_number, canonical_uuid, Body};
use crate::domain::chatbot::Chatbot;
use crate::domain::session::{Message, MAX_QUERY_CHARS};
use crate::time;
use serde_json::{json, Map, Value};

/// Most of a request's messages that are read, the last ones: a client that keeps the
/// conversation sends all of it on every call, and the prompt holds only the newest turns
/// its budget fits anyway.
pub const MAX_MESSAGES: usize = 200;

/// The usage of a turn no model answered.
pub fn no_usage() -> Value {
    json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0})
}

/// A Chat Completions request, read as a chat turn.
#[derive(Debug, PartialEq)]
pub struct CompletionCall {
    /// `model`: the chatbot that answers.
    pub chatbot_uuid: String,
    /// The last message, which must be the user's.
    pub query: String,
    /// Earlier user messages, each with the assistant reply that followed it, oldest first
    /// (a reply before any question has an empty question). When there are none and the call
    /// names a session, the session's stored history is used.
    pub history: Vec<(String, String)>,
    pub stream: bool,
    /// `metadata.session_uuid`: continue this session instead of starting one.
    pub session_uuid: Option<String>,
    /// `temperature` and `max_completion_tokens` (or `max_tokens`), for a model provider.
    pub sampling: Sampling,
    /// `stream_options.include_usage`: usage in a last chunk of its own.
    pub include_usage: bool,
}

/// What a caller may set of how the model answers: its temperature, and a ceiling on the
/// answer's tokens below the agent's own budget.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub max_tokens: Option<usize>,
}

/// OpenAI's range for `temperature`.
const TEMPERATURE_RANGE: (f64, f64) = (0.0, 2.0);

/// `max_completion_tokens`, or the older `max_tokens`: a whole number of at least 1.
fn max_tokens(body: &Map<String, Value>) -> ApiResult<Option<usize>> {
    for field in ["max_completion_tokens", "max_tokens"] {
        match body.get(field) {
            None | Some(Value::Null) => continue,
            Some(value) => {
                return match as_whole_number(value) {
                    Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                    _ => Err(ApiError::invalid(
                        field,
                        format!("`{field}` must be a whole number of at least 1."),
                    )),
                }
            }
        }
    }
    Ok(None)
}

/// The sampling settings a call sends. Those the chatbot's agents do not take from a caller
/// (`top_p`, the penalties) are still checked, so a wrong value is an error rather than
/// silence.
fn sampling(b: &Body) -> ApiResult<Sampling> {
    // `null` is OpenAI's "not set".
    let number = |field: &str, (min, max): (f64, f64)| match b.raw(field) {
        Some(Value::Null) => Ok(None),
        _ => b.opt_f64(field, min, max),
    };
    let temperature = number("temperature", TEMPERATURE_RANGE)?;
    number("top_p", (0.0, 1.0))?;
    number("presence_penalty", (-2.0, 2.0))?;
    number("frequency_penalty", (-2.0, 2.0))?;
    Ok(Sampling {
        temperature,
        max_tokens: max_tokens(b.0)?,
    })
}

/// A message's text: a string, or the `text` parts of an array of content parts.
fn content_text(content: &Value, index: usize) -> ApiResult<String> {
    let field = || format!("messages[{index}].content");
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")),
        _ => Err(ApiError::invalid(
            &field(),
            "`content` must be a string or an array of content parts.",
        )),
    }
}

pub fn parse_call(body: &Map<String, Value>) -> ApiResult<CompletionCall> {
    let b = Body(body);
    let model = b.req_str("model", 100)?;
    let chatbot_uuid = canonical_uuid(&model).ok_or_else(|| {
        ApiError::NotFound(format!(
            "The model `{model}` does not exist: `model` is the uuid of one of your chatbots."
        ))
    })?;
    // `null` is OpenAI's "not set", for these fields as for the others.
    let given = |field: &str| !matches!(body.get(field), None | Some(Value::Null));
    let stream = given("stream") && b.opt_bool("stream")?.unwrap_or(false);
    let sampling = sampling(&b)?;
    let stream_options = if given("stream_options") {
        b.opt_object("stream_options")?
    } else {
        None
    };
    let include_usage = match stream_options {
        Some(options) => Body(options)
            .opt_bool("include_usage")
            .map_err(|_| {
                ApiError::invalid(
                    "stream_options.include_usage",
                    "`stream_options.include_usage` must be true or false.",
                )
            })?
            .unwrap_or(false),
        None => false,
    };
    // One answer per turn: silently giving one of several choices would mislead.
    match body.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if as_whole_number(n) == Some(1) => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "n",
                "`n` must be 1: a call gives one answer.",
            ))
        }
    }
    let metadata = if given("metadata") {
        b.opt_object("metadata")?
    } else {
        None
    };
    let session_uuid =
        match metadata {
            Some(meta) => match meta.get("session_uuid") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(canonical_uuid(s).ok_or_else(|| {
                    ApiError::NotFound("No session with that uuid exists.".into())
                })?),
                Some(_) => {
                    return Err(ApiError::invalid(
                        "metadata.session_uuid",
                        "`metadata.session_uuid` must be a session's uuid.",
                    ))
                }
            },
            None => None,
        };
    let messages = b
        .opt_array("messages", usize::MAX)?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                "messages",
                "`messages` must hold at least the user's message.",
            )
        })?;
    let first_read = messages.len().saturating_sub(MAX_MESSAGES);
    let mut said: Vec<(String, String)> = Vec::with_capacity(messages.len() - first_read);
    for (i, m) in messages.iter().enumerate().skip(first_read) {
        let role = m["role"].as_str().ok_or_else(|| {
            ApiError::invalid(
                &format!("messages[{i}].role"),
                "Each message needs a `role`.",
            )
        })?;
        let text = content_text(&m["content"], i)?;
        match role {
            "user" => said.push((role.to_string(), text)),
            // A reply that only asked for tools (`content: null` beside `tool_calls`) said
            // nothing to the user: it ends no turn, so the question before it stays with the
            // one after, as when the caller's tool traffic is left out.
            "assistant" if text.trim().is_empty() => {}
            "assistant" => said.push((role.to_string(), text)),
            // The chatbot's agents bring their own instructions; tool traffic is the caller's.
            "system" | "developer" | "tool" | "function" => {}
            _ => {
                return Err(ApiError::invalid(
                    &format!("messages[{i}].role"),
                    format!("Unknown role `{role}`."),
                ))
            }
        }
    }
    // Consecutive messages of one role are one turn (a chat UI may send a question in two
    // messages, or two replies in a row).
    let mut turns: Vec<(String, String)> = Vec::with_capacity(said.len());
    for (role, text) in said {
        match turns.last_mut() {
            Some((last, joined)) if *last == role => {
                if !text.trim().is_empty() {
                    if !joined.is_empty() {
                        joined.push('\n');
                    }
                    joined.push_str(text.trim());
                }
            }
            _ => turns.push((role, text.trim().to_string())),
        }
    }
    let query = match turns.pop() {
        Some((role, text)) if role == "user" && !text.is_empty() => text,
        _ => {
            return Err(ApiError::invalid(
                "messages",
                "The last message must be the user's, with text in it.",
            ))
        }
    };
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(
            "messages",
            format!(
                "The question (the user's last message, with any user messages right before it) must be at most {MAX_QUERY_CHARS} characters."
            ),
        ));
    }
    let mut history: Vec<(String, String)> = Vec::new();
    for (role, text) in turns {
        match (role.as_str(), history.last_mut()) {
            ("assistant", Some((_, reply))) if reply.is_empty() => *reply = text,
            // What the assistant said first (a greeting) answers no question.
            ("assistant", _) => history.push((String::new(), text)),
            _ => history.push((text, String::new())),
        }
    }
    Ok(CompletionCall {
        chatbot_uuid,
        query,
        history,
        stream,
        session_uuid,
        sampling,
        include_usage,
    })
}

/// OpenAI's finish reasons: an answer cut short by a failure still ended.
pub fn finish_reason(ours: &str) -> &'static str {
    match ours {
        "length" => "length",
        _ => "stop",
    }
}

/// A stored answer as a `chat.completion`; `citations`, `session_uuid` and `message_uuid` are
/// extra fields standard clients ignore.
/// `citations` holds the answer's sources only when the chatbot shows them (`show_citations`),
/// as its streamed answers do.
pub fn completion(message: &Message, model: &str, created: i64, show_citations: bool) -> Value {
    // OpenAI always sends usage; a message no model answered (live chat) used none.
    let usage = message
        .meta
        .get("usage")
        .filter(|u| u.is_object())
        .cloned()
        .unwrap_or_else(no_usage);
    json!({
        "id": format!("chatcmpl-{}", message.uuid),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": message.response, "refusal": null},
            "finish_reason": finish_reason(message.finish_reason.as_str()),
            "logprobs": null,
        }],
        "usage": usage,
        "citations": if show_citations { message.cite_data.clone() } else { json!({}) },
        "session_uuid": message.session_uuid,
        "message_uuid": message.uuid,
    })
}

/// A chatbot as an entry of `GET /openai/models` (and the answer of `GET /openai/models/{id}`).
pub fn model_entry(chatbot: &Chatbot) -> Value {
    let created = time::seconds_of(&chatbot.created_at).unwrap_or(0);
    json!({"id": chatbot.uuid, "object": "model", "created": created, "owned_by": "edgechat", "name": chatbot.settings.name})
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOT: &str = "0b5c8f1e-8d3a-4c3b-9a51-3f7b1d2e4a60";

    fn call(body: Value) -> ApiResult<CompletionCall> {
        parse_call(body.as_object().expect("object"))
    }

    #[test]
    fn the_last_user_message_is_the_query_and_earlier_pairs_the_history() {
        let c = call(json!({"model": BOT, "stream": true, "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "Do you ship abroad?"},
            {"role": "assistant", "content": "Yes."},
            {"role": "user", "content": [{"type": "text", "text": " And returns? "}]},
        ]}))
        .expect("valid");
        assert_eq!(c.chatbot_uuid, BOT);
        assert_eq!(c.query, "And returns?");
        assert_eq!(
            c.history,
            vec![("Do you ship abroad?".to_string(), "Yes.".to_string())]
        );
        assert!(c.stream);
        assert_eq!(c.session_uuid, None);
    }

    #[test]
    fn consecutive_messages_of_one_role_are_one_turn_and_a_greeting_is_kept() {
        let c = call(json!({"model": BOT, "messages": [
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "My order number is 4417"},
            {"role": "user", "content": "and my name is Ada"},
            {"role": "assistant", "content": "Thanks Ada"},
            {"role": "assistant", "content": "Anything else?"},
            {"role": "user", "content": "Where is it?"},
            {"role": "tool", "content": "ignored"},
            {"role": "user", "content": "It was due Monday."},
        ]}))
        .expect("valid");
        assert_eq!(c.query, "Where is it?\nIt was due Monday.");
        assert_eq!(
            c.history,
            vec![
                (String::new(), "Hi! How can I help?".to_string()),
                (
                    "My order number is 4417\nand my name is Ada".to_string(),
                    "Thanks Ada\nAnything else?".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_reply_that_only_called_tools_ends_no_turn() {
        let c = call(json!({"model": BOT, "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "answer", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            {"role": "user", "content": "and now?"},
        ]}))
        .expect("valid");
        assert_eq!(c.query, "hello\nand now?");
        assert_eq!(c.history, Vec::new());
        // After the tool, a reply with text is the answer to the question before it.
        let c = call(json!({"model": BOT, "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "answer", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"},
            {"role": "assistant", "content": "It is 42."},
            {"role": "user", "content": "and now?"},
        ]}))
        .expect("valid");
        assert_eq!(c.query, "and now?");
        assert_eq!(
            c.history,
            vec![("hello".to_string(), "It is 42.".to_string())]
        );
    }

    #[test]
    fn a_session_is_named_in_metadata() {
        let s = "1b5c8f1e-8d3a-4c3b-9a51-3f7b1d2e4a60";
        let c = call(json!({"model": BOT, "metadata": {"session_uuid": s},
            "messages": [{"role": "user", "content": "hi"}]}))
        .expect("valid");
        assert_eq!(c.session_uuid.as_deref(), Some(s));
    }

    #[test]
    fn null_is_not_set_and_a_whole_float_is_a_whole_number() {
        let c = call(
            json!({"model": BOT, "stream": null, "stream_options": null, "metadata": null,
            "n": 1.0, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .expect("valid");
        assert!(!c.stream && !c.include_usage && c.session_uuid.is_none());
    }

    #[test]
    fn a_long_conversation_is_read_from_its_last_messages() {
        let mut messages: Vec<Value> = (0..400)
            .flat_map(|i| {
                [
                    json!({"role": "user", "content": format!("question {i}")}),
                    json!({"role": "assistant", "content": format!("answer {i}")}),
                ]
            })
            .collect();
        messages.push(json!({"role": "user", "content": "and now?"}));
        let c = call(json!({"model": BOT, "messages": messages})).expect("valid");
        assert_eq!(c.query, "and now?");
        assert_eq!(c.history.len(), MAX_MESSAGES / 2);
        assert_eq!(
            c.history.last().map(|(q, a)| (q.as_str(), a.as_str())),
            Some(("question 399", "answer 399"))
        );
        let long = call(json!({"model": BOT, "messages": [
            {"role": "user", "content": "a".repeat(5000)},
            {"role": "user", "content": "b".repeat(5000)}]}));
        let err = long.unwrap_err();
        assert_eq!(err.field(), Some("messages"));
        assert!(err.public_message().contains("the user's last message"));
    }

    #[test]
    fn bad_requests_name_their_field() {
        let no_user =
            call(json!({"model": BOT, "messages": [{"role": "assistant", "content": "x"}]}));
        assert_eq!(no_user.unwrap_err().field(), Some("messages"));
        let empty = call(json!({"model": BOT, "messages": []}));
        assert_eq!(empty.unwrap_err().field(), Some("messages"));
        let role = call(json!({"model": BOT, "messages": [{"role": "wizard", "content": "x"}]}));
        assert_eq!(role.unwrap_err().field(), Some("messages[0].role"));
        let model =
            call(json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}));
        assert_eq!(model.unwrap_err().status(), 404);
        let several =
            call(json!({"model": BOT, "n": 2, "messages": [{"role": "user", "content": "x"}]}));
        assert_eq!(several.unwrap_err().field(), Some("n"));
        assert!(call(
            json!({"model": BOT, "n": 1, "messages": [{"role": "user", "content": "x"}]})
        )
        .is_ok());
        let missing = call(json!({"messages": [{"role": "user", "content": "x"}]}));
        assert_eq!(missing.unwrap_err().field(), Some("model"));
    }

    #[test]
    fn sampling_settings_are_taken_when_valid_and_refused_by_name_when_not() {
        let with = |extra: Value| {
            let mut body = json!({"model": BOT, "messages": [{"role": "user", "content": "x"}]});
            for (k, v) in extra.as_object().expect("object") {
                body[k] = v.clone();
            }
            call(body)
        };
        let c = with(json!({"temperature": 0.7, "max_tokens": 50, "top_p": 1,
            "stream_options": {"include_usage": true}, "tools": [], "response_format": {"type": "text"}}))
        .expect("valid");
        assert_eq!(
            c.sampling,
            Sampling {
                temperature: Some(0.7),
                max_tokens: Some(50)
            }
        );
        assert!(c.include_usage);
        // The newer name wins; `null` is not set.
        let c = with(json!({"max_completion_tokens": 20, "max_tokens": 50, "temperature": null}))
            .expect("valid");
        assert_eq!(
            c.sampling,
            Sampling {
                temperature: None,
                max_tokens: Some(20)
            }
        );
        assert_eq!(
            with(json!({})).expect("valid").sampling,
            Sampling::default()
        );
        for (extra, field) in [
            (json!({"temperature": 5}), "temperature"),
            (json!({"temperature": -1}), "temperature"),
            (json!({"temperature": "hot"}), "temperature"),
            (json!({"max_tokens": -5}), "max_tokens"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"max_tokens": 1.5}), "max_tokens"),
            (
                json!({"max_completion_tokens": "2"}),
                "max_completion_tokens",
            ),
            (json!({"top_p": 2}), "top_p"),
            (json!({"presence_penalty": 3}), "presence_penalty"),
            (
                json!({"stream_options": {"include_usage": "yes"}}),
                "stream_options.include_usage",
            ),
            (json!({"stream_options": 1}), "stream_options"),
        ] {
            let err = with(extra.clone()).expect_err("refused");
            assert_eq!((err.status(), err.field()), (400, Some(field)), "{extra}");
        }
    }
}
