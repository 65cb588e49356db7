//! How an answer travels to the client. The conversation produces one sequence of
//! `AnswerEvent`s whatever the client speaks; an `Encoder` turns each into the bytes of the
//! format the client chose:
//!
//! - `Plain` (the default): the body is the answer text and nothing else;
//! - `EventStream` (`Accept: text/event-stream`): events `start`, `delta`, `citations`, `error`
//!   and `end`, each with a one-line JSON `data`;
//! - `UiMessageStream` (`?format=ui-message-stream`): the AI SDK's UI message stream, v1;
//! - `OpenAiChunks`: `chat.completion.chunk` events and `data: [DONE]`, for the
//!   OpenAI-compatible endpoint.

use crate::api::error::{openai_error_type, ApiError, ApiResult};
use crate::api::validate::check_len;
use crate::domain::session::MAX_QUERY_CHARS;
use crate::knowledge::retrieve::Ranked;
use serde_json::{json, Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    Plain,
    EventStream,
    UiMessageStream,
    OpenAiChunks,
}

/// The header the AI SDK's readers look for on a UI message stream.
pub const UI_MESSAGE_STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// One thing that happens while an answer is produced, in the order it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum AnswerEvent {
    Start {
        message_uuid: String,
        session_uuid: String,
        agent_uuid: Option<String>,
    },
    Delta(String),
    /// `cite_data` of the message: `{"1": {data_source_uuid, title, text, file_name, type, url}}`.
    Citations(Value),
    Error {
        code: String,
        message: String,
    },
    End {
        message_uuid: String,
        finish_reason: String,
        usage: Value,
        /// Whether the sources held an answer; `None` when nothing decided it.
        answered: Option<bool>,
    },
}

impl WireFormat {
    /// The format a stream request asks for: `?format=` (`plain`, `event-stream` or
    /// `ui-message-stream`) when given, else the `Accept` header. `None` for an unknown name.
    pub fn requested(format_param: Option<&str>, accept: Option<&str>) -> Option<Self> {
        match format_param.map(str::trim) {
            None | Some("") => Some(Self::from_accept(accept)),
            Some(name) => match name.to_ascii_lowercase().as_str() {
                "plain" | "text" => Some(WireFormat::Plain),
                "event-stream" | "sse" => Some(WireFormat::EventStream),
                "ui-message-stream" | "ui-message-stream-v1" => Some(WireFormat::UiMessageStream),
                _ => None,
            },
        }
    }

    /// Server-sent events when `Accept` asks for them at least as much as for plain text (its
    /// `q` values weighed, the most specific range deciding), else plain text.
    pub fn from_accept(accept: Option<&str>) -> Self {
        let accept = accept.unwrap_or("");
        let events = accept_quality(accept, "text/event-stream");
        let plain = accept_quality(accept, "text/plain");
        if events.is_some_and(|q| q > 0 && q >= plain.unwrap_or(0)) {
            WireFormat::EventStream
        } else {
            WireFormat::Plain
        }
    }

    /// The name `requested` reads back (`openai` for the chunks, which no request names).
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Plain => "plain",
            WireFormat::EventStream => "event-stream",
            WireFormat::UiMessageStream => "ui-message-stream",
            WireFormat::OpenAiChunks => "openai",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            WireFormat::Plain => "text/plain; charset=utf-8",
            _ => "text/event-stream; charset=utf-8",
        }
    }

    /// Extra response headers the format's readers expect.
    pub fn extra_headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            WireFormat::UiMessageStream => &[UI_MESSAGE_STREAM_HEADER],
            _ => &[],
        }
    }

    /// Whether a failure after the response has started can still be told to the reader (an
    /// error event or chunk). Plain text has no place for one: there, only the response's
    /// status says that the model could not be reached.
    pub fn tells_errors(self) -> bool {
        self != WireFormat::Plain
    }

    /// The whole body of an answer that is already known (a refusal, a live-chat receipt).
    /// The format a refusal before any answer (a rate limit) is written in: the AI SDK's
    /// transport reads an error response's body as its message, whole, without parsing it as
    /// a stream, so UI-message-stream callers get plain text; the others their own format.
    pub fn for_refusal(self) -> Self {
        match self {
            WireFormat::UiMessageStream => WireFormat::Plain,
            other => other,
        }
    }

    pub fn encode_all(self, model: &str, created: i64, events: &[AnswerEvent]) -> String {
        let mut encoder = Encoder::new(self, model, created);
        events.iter().map(|e| encoder.encode(e)).collect()
    }
}

/// The AI SDK's finish reasons are a closed set; ours that it lacks are `other`.
fn ui_finish_reason(reason: &str) -> &'static str {
    match reason {
        "stop" => "stop",
        "length" => "length",
        "error" => "error",
        _ => "other",
    }
}

/// A `q` value (`0` to `1` with up to three decimals, RFC 9110 §12.4.2) in thousandths;
/// anything else reads as 0. Read by hand: parsing it as a float brought Rust's float parser
/// into the Worker, 14 KB compressed.
fn quality(value: &str) -> u16 {
    let value = value.trim();
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    if whole == "1" {
        return 1000;
    }
    if whole != "0" || fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    fraction
        .bytes()
        .zip([100u16, 10, 1])
        .map(|(digit, place)| u16::from(digit - b'0') * place)
        .sum()
}

/// The quality `accept` gives `media` (`type/subtype`) through its most specific range that
/// names it: the type itself, else `type/*`. `None` when neither does: `*/*` says nothing
/// about a preference for one format over the other.
fn accept_quality(accept: &str, media: &str) -> Option<u16> {
    let kind = media.split('/').next().unwrap_or(media);
    let mut best: Option<(u8, u16)> = None;
    for range in accept.split(',') {
        let mut params = range.split(';');
        let name = params.next().unwrap_or("").trim();
        let specificity = if name.eq_ignore_ascii_case(media) {
            2
        } else if name
            .strip_suffix("/*")
            .is_some_and(|t| t.eq_ignore_ascii_case(kind))
        {
            1
        } else {
            continue;
        };
        let q = params
            .find_map(|p| p.trim().strip_prefix("q=").map(quality))
            .unwrap_or(1000);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.map(|(_, q)| q)
}

/// The AI SDK's `source-document` parts for a message's citations, numbered as in the text.
pub fn ui_source_documents(cite_data: &Value) -> Vec<Value> {
    let Some(map) = cite_data.as_object() else {
        return Vec::new();
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(n, _)| n.parse::<u64>().unwrap_or(u64::MAX));
    entries
        .into_iter()
        .map(|(n, c)| {
            let mut part = json!({
                "type": "source-document",
                "sourceId": n,
                "mediaType": "text/plain",
                "title": c["title"].as_str().unwrap_or(""),
                "providerMetadata": {"edgechat": {
                    "data_source_uuid": c["data_source_uuid"],
                    "text": c["text"],
                    "type": c["type"],
                    "url": c["url"],
                }},
            });
            // A Q&A pair's citation has an empty file name: no file to name.
            if let Some(file) = c["file_name"].as_str().filter(|f| !f.is_empty()) {
                part["filename"] = json!(file);
            }
            part
        })
        .collect()
}

/// The question of an AI SDK chat request (`useChat`'s body, `{messages: [{role, parts}]}`)
/// when it has no `query`: the text parts of its last message, which must be the user's.
pub fn ui_chat_query(body: &Map<String, Value>) -> Option<ApiResult<String>> {
    if body.contains_key("query") {
        return None;
    }
    let Some(last) = body.get("messages")?.as_array()?.last() else {
        return Some(Err(ApiError::invalid(
            "messages",
            "`messages` must hold at least the user's message.",
        )));
    };
    let text = last["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    let text = text.trim();
    if last["role"] != "user" || text.is_empty() {
        return Some(Err(ApiError::invalid(
            "messages",
            "The last message must be the user's, with text in it.",
        )));
    }
    Some(check_len("messages", text, MAX_QUERY_CHARS).map(|_| text.to_string()))
}

/// Turns answer events into one format's bytes, keeping what the format needs across events
/// (an OpenAI chunk names its completion in every chunk, a UI text part is opened once).
pub struct Encoder {
    format: WireFormat,
    model: String,
    created: i64,
    id: String,
    text_open: bool,
    /// OpenAI chunks: usage goes in a last chunk of its own (`stream_options.include_usage`)
    /// rather than on the finish chunk.
    usage_chunk: bool,
}

impl Encoder {
    /// `model` and `created` appear in OpenAI chunks only.
    pub fn new(format: WireFormat, model: &str, created: i64) -> Self {
        Encoder {
            format,
            model: model.to_string(),
            created,
            id: String::new(),
            text_open: false,
            usage_chunk: false,
        }
    }

    /// OpenAI chunks as with `stream_options: {"include_usage": true}`.
    pub fn with_usage_chunk(mut self) -> Self {
        self.usage_chunk = true;
        self
    }

    pub fn format(&self) -> WireFormat {
        self.format
    }

    pub fn encode(&mut self, event: &AnswerEvent) -> String {
        match self.format {
            WireFormat::Plain => match event {
                AnswerEvent::Delta(text) => text.clone(),
                _ => String::new(),
            },
            WireFormat::EventStream => event_stream(event),
            WireFormat::UiMessageStream => self.ui(event),
            WireFormat::OpenAiChunks => self.openai(event),
        }
    }

    /// `encode` for the event numbered `seq` in its answer: in event-stream mode the frame
    /// carries `id: seq`, which a reader sends back as `Last-Event-ID` to resume after it.
    pub fn encode_at(&mut self, seq: usize, event: &AnswerEvent) -> String {
        let body = self.encode(event);
        if self.format == WireFormat::EventStream {
            format!("id: {seq}\n{body}")
        } else {
            body
        }
    }

    fn ui(&mut self, event: &AnswerEvent) -> String {
        let data = |v: Value| format!("data: {v}\n\n");
        match event {
            AnswerEvent::Start {
                message_uuid,
                session_uuid,
                agent_uuid,
            } => data(json!({
                "type": "start",
                "messageId": message_uuid,
                "messageMetadata": {"session_uuid": session_uuid, "agent_uuid": agent_uuid},
            })),
            AnswerEvent::Delta(text) => {
                let mut out = String::new();
                if !self.text_open {
                    self.text_open = true;
                    out += &data(json!({"type": "text-start", "id": "text-1"}));
                }
                out += &data(json!({"type": "text-delta", "id": "text-1", "delta": text}));
                out
            }
            AnswerEvent::Citations(cite_data) => {
                let mut out = self.close_text();
                for part in ui_source_documents(cite_data) {
                    out += &data(part);
                }
                out
            }
            AnswerEvent::Error { message, .. } => {
                let mut out = self.close_text();
                out += &data(json!({"type": "error", "errorText": message}));
                out
            }
            AnswerEvent::End {
                message_uuid,
                finish_reason,
                usage,
                answered,
            } => {
                let mut out = self.close_text();
                out += &data(json!({
                    "type": "finish",
                    "finishReason": ui_finish_reason(finish_reason),
                    "messageMetadata": {"message_uuid": message_uuid, "finish_reason": finish_reason, "usage": usage, "answered": answered},
                }));
                out += "data: [DONE]\n\n";
                out
            }
        }
    }

    fn close_text(&mut self) -> String {
        if std::mem::take(&mut self.text_open) {
            format!("data: {}\n\n", json!({"type": "text-end", "id": "text-1"}))
        } else {
            String::new()
        }
    }

    /// The first chunk of the completion for `message_uuid`, which names it from here on:
    /// the assistant's role, and the session and message it is (extra fields: the message's
    /// uuid is what a client resumes or stops it by).
    fn openai_opening(&mut self, message_uuid: &str, session_uuid: &str) -> Value {
        self.id = format!("chatcmpl-{message_uuid}");
        let mut opening = self.chunk(json!({"role": "assistant", "content": ""}), None);
        opening["session_uuid"] = json!(session_uuid);
        opening["message_uuid"] = json!(message_uuid);
        opening
    }

    /// A turn a person answers (live chat) as Chat Completions chunks: the user's message
    /// is stored and no words follow, so an opening chunk marked `live_chat: true` (as the
    /// unstreamed completion is) and the finish, then `[DONE]`.
    pub fn openai_live_chat(&mut self, message_uuid: &str, session_uuid: &str) -> String {
        let mut opening = self.openai_opening(message_uuid, session_uuid);
        opening["live_chat"] = json!(true);
        let end = AnswerEvent::End {
            message_uuid: message_uuid.to_string(),
            finish_reason: "stop".into(),
            usage: super::openai_compat::no_usage(),
            answered: None,
        };
        format!("data: {opening}\n\n{}", self.openai(&end))
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        })
    }

    fn openai(&mut self, event: &AnswerEvent) -> String {
        let data = |v: Value| format!("data: {v}\n\n");
        match event {
            AnswerEvent::Start {
                message_uuid,
                session_uuid,
                ..
            } => data(self.openai_opening(message_uuid, session_uuid)),
            AnswerEvent::Delta(text) => data(self.chunk(json!({"content": text}), None)),
            // Standard clients ignore fields they do not know; ours read `citations`.
            AnswerEvent::Citations(cite_data) => {
                let mut chunk = self.chunk(json!({}), None);
                chunk["citations"] = cite_data.clone();
                data(chunk)
            }
            AnswerEvent::Error { code, message } => data(json!({
                "error": {"message": message, "type": openai_error_type(code), "code": code, "param": null}
            })),
            // A failed answer ends with its error, as OpenAI's stream does: a finish chunk
            // after it would tell a client the cut answer was whole.
            AnswerEvent::End { finish_reason, .. } if finish_reason == "error" => String::new(),
            AnswerEvent::End { finish_reason, .. } if finish_reason == "interrupted" => {
                let message =
                    "The answer was interrupted before it ended; what was said is stored.";
                data(json!({
                    "error": {"message": message, "type": "interrupted", "code": "interrupted", "param": null}
                }))
            }
            AnswerEvent::End {
                finish_reason,
                usage,
                ..
            } => {
                let mut finish = self.chunk(
                    json!({}),
                    Some(super::openai_compat::finish_reason(finish_reason)),
                );
                if !self.usage_chunk {
                    finish["usage"] = usage.clone();
                    return data(finish) + "data: [DONE]\n\n";
                }
                // As OpenAI sends it: the usage in a last chunk of its own, with no choices.
                let mut usage_chunk = self.chunk(json!({}), None);
                usage_chunk["choices"] = json!([]);
                usage_chunk["usage"] = usage.clone();
                data(finish) + &data(usage_chunk) + "data: [DONE]\n\n"
            }
        }
    }
}

fn event_stream(event: &AnswerEvent) -> String {
    let (name, data) = event.parts();
    format!("event: {name}\ndata: {data}\n\n")
}

impl AnswerEvent {
    /// The event-stream name and `data` of the event: also how an answer's events are kept
    /// while it is produced (`from_parts` reads them back).
    pub fn parts(&self) -> (&'static str, Value) {
        match self {
            AnswerEvent::Start {
                message_uuid,
                session_uuid,
                agent_uuid,
            } => (
                "start",
                json!({"message_uuid": message_uuid, "session_uuid": session_uuid, "agent_uuid": agent_uuid}),
            ),
            AnswerEvent::Delta(text) => ("delta", json!({ "text": text })),
            AnswerEvent::Citations(cite_data) => ("citations", cite_data.clone()),
            AnswerEvent::Error { code, message } => {
                ("error", json!({"code": code, "message": message}))
            }
            AnswerEvent::End {
                message_uuid,
                finish_reason,
                usage,
                answered,
            } => (
                "end",
                json!({"message_uuid": message_uuid, "finish_reason": finish_reason, "usage": usage, "answered": answered}),
            ),
        }
    }

    /// The event `parts` gave `name` and `data` for; `None` for anything else.
    pub fn from_parts(name: &str, data: &Value) -> Option<Self> {
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
        Some(match name {
            "start" => AnswerEvent::Start {
                message_uuid: text("message_uuid")?,
                session_uuid: text("session_uuid")?,
                agent_uuid: text("agent_uuid"),
            },
            "delta" => AnswerEvent::Delta(text("text")?),
            "citations" => AnswerEvent::Citations(data.clone()),
            "error" => AnswerEvent::Error {
                code: text("code")?,
                message: text("message")?,
            },
            "end" => AnswerEvent::End {
                message_uuid: text("message_uuid")?,
                finish_reason: text("finish_reason")?,
                usage: data.get("usage").cloned().unwrap_or(Value::Null),
                answered: data.get("answered").and_then(Value::as_bool),
            },
            _ => return None,
        })
    }
}

/// `cite_data_json`'s object: `{"1": {data_source_uuid, title, text, file_name, type, url}, ...}`,
/// numbered in the order given (relevance order). `url` is where a reader can open the source
/// (a page's address, or the `reference_source_link` an upload was given), null when it has none.
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
                    "url": source_link(&r.hit.meta_json),
                }),
            );
        }
    }
    Value::Object(map)
}

/// Where a source can be read, from its `meta_json`: a web page's `url`, else the link an
/// upload was given.
fn source_link(meta_json: &str) -> Option<String> {
    let meta: Value = serde_json::from_str(meta_json).ok()?;
    ["url", "reference_source_link"]
        .iter()
        .find_map(|key| meta.get(*key)?.as_str().map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> Vec<AnswerEvent> {
        vec![
            AnswerEvent::Start {
                message_uuid: "m1".into(),
                session_uuid: "s1".into(),
                agent_uuid: Some("a1".into()),
            },
            AnswerEvent::Delta("Hi\n".into()),
            AnswerEvent::Delta("there [1]".into()),
            AnswerEvent::Citations(json!({"1": {"data_source_uuid": "d", "title": "Shipping",
                "text": "We ship.", "file_name": null, "type": "qa"}})),
            AnswerEvent::End {
                message_uuid: "m1".into(),
                finish_reason: "stop".into(),
                usage: json!({"total_tokens": 3}),
                answered: Some(true),
            },
        ]
    }

    fn data_lines(body: &str) -> Vec<String> {
        body.split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| f.strip_prefix("data: ").expect("a data line").to_string())
            .collect()
    }

    /// The chunks of an OpenAI stream, which must end with `[DONE]`.
    fn openai_chunks(body: &str) -> Vec<Value> {
        let lines = data_lines(body);
        assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
        lines[..lines.len() - 1]
            .iter()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }

    #[test]
    fn a_refusal_is_plain_text_to_the_ai_sdk_and_in_their_own_format_to_others() {
        assert_eq!(WireFormat::UiMessageStream.for_refusal(), WireFormat::Plain);
        assert_eq!(
            WireFormat::EventStream.for_refusal(),
            WireFormat::EventStream
        );
        assert_eq!(WireFormat::Plain.for_refusal(), WireFormat::Plain);
    }

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
        // The client's own ranking decides.
        assert_eq!(
            WireFormat::from_accept(Some("text/event-stream;q=0.9, text/plain")),
            WireFormat::Plain
        );
        assert_eq!(
            WireFormat::from_accept(Some("text/plain;q=0.5, text/event-stream")),
            WireFormat::EventStream
        );
        assert_eq!(
            WireFormat::from_accept(Some("text/event-stream; q=0")),
            WireFormat::Plain
        );
        assert_eq!(
            WireFormat::from_accept(Some("text/*;q=0.2, text/event-stream")),
            WireFormat::EventStream
        );
        assert_eq!(
            WireFormat::from_accept(Some("text/event-stream;q=0.5, text/*")),
            WireFormat::Plain
        );
        assert_eq!(
            WireFormat::from_accept(Some("text/event-stream, text/plain")),
            WireFormat::EventStream
        );
        assert_eq!(
            [
                quality("1"),
                quality("1.000"),
                quality("0.25"),
                quality("0"),
                quality("x")
            ],
            [1000, 1000, 250, 0, 0]
        );
    }

    #[test]
    fn the_format_parameter_wins_over_accept() {
        assert_eq!(
            WireFormat::requested(Some("ui-message-stream"), Some("text/event-stream")),
            Some(WireFormat::UiMessageStream)
        );
        assert_eq!(
            WireFormat::requested(Some("plain"), Some("text/event-stream")),
            Some(WireFormat::Plain)
        );
        assert_eq!(
            WireFormat::requested(None, Some("text/event-stream")),
            Some(WireFormat::EventStream)
        );
        assert_eq!(WireFormat::requested(Some("xml"), None), None);
    }

    #[test]
    fn an_ai_sdk_chat_body_asks_its_last_user_message() {
        let body = json!({"id": "c", "messages": [
            {"id": "1", "role": "user", "parts": [{"type": "text", "text": "old"}]},
            {"id": "2", "role": "user", "parts": [{"type": "text", "text": " Do you ship? "}, {"type": "file"}]},
        ]});
        let body = body.as_object().expect("object");
        assert_eq!(ui_chat_query(body), Some(Ok("Do you ship?".to_string())));
        let ours = json!({"query": "hi", "messages": []});
        assert_eq!(ui_chat_query(ours.as_object().expect("object")), None);
        let empty = json!({"id": "c", "messages": []});
        assert_eq!(
            ui_chat_query(empty.as_object().expect("object"))
                .and_then(|r| r.err())
                .and_then(|e| e.field().map(str::to_string)),
            Some("messages".to_string())
        );
        let assistant =
            json!({"messages": [{"role": "assistant", "parts": [{"type": "text", "text": "x"}]}]});
        assert_eq!(
            ui_chat_query(assistant.as_object().expect("object"))
                .and_then(|r| r.err())
                .and_then(|e| e.field().map(str::to_string)),
            Some("messages".to_string())
        );
    }

    #[test]
    fn events_read_back_from_their_parts() {
        for event in answer() {
            let (name, data) = event.parts();
            assert_eq!(AnswerEvent::from_parts(name, &data), Some(event));
        }
        let none = AnswerEvent::Start {
            message_uuid: "m".into(),
            session_uuid: "s".into(),
            agent_uuid: None,
        };
        let (name, data) = none.parts();
        assert_eq!(AnswerEvent::from_parts(name, &data), Some(none));
        assert_eq!(AnswerEvent::from_parts("nope", &json!({})), None);
        assert_eq!(AnswerEvent::from_parts("delta", &json!({})), None);
    }

    #[test]
    fn event_stream_frames_carry_their_number() {
        let mut enc = Encoder::new(WireFormat::EventStream, "", 0);
        assert_eq!(
            enc.encode_at(4, &AnswerEvent::Delta("x".into())),
            "id: 4\nevent: delta\ndata: {\"text\":\"x\"}\n\n"
        );
        let mut plain = Encoder::new(WireFormat::Plain, "", 0);
        assert_eq!(plain.encode_at(4, &AnswerEvent::Delta("x".into())), "x");
    }

    #[test]
    fn plain_mode_carries_only_text() {
        assert_eq!(
            WireFormat::Plain.encode_all("", 0, &answer()),
            "Hi\nthere [1]"
        );
    }

    #[test]
    fn event_stream_frames_one_line_json() {
        let body = WireFormat::EventStream.encode_all("", 0, &answer());
        assert!(body.starts_with(
            "event: start\ndata: {\"agent_uuid\":\"a1\",\"message_uuid\":\"m1\",\"session_uuid\":\"s1\"}\n\n\
             event: delta\ndata: {\"text\":\"Hi\\n\"}\n\n"
        ));
        assert!(body.ends_with(
            "event: end\ndata: {\"answered\":true,\"finish_reason\":\"stop\",\"message_uuid\":\"m1\",\"usage\":{\"total_tokens\":3}}\n\n"
        ));
    }

    #[test]
    fn ui_message_stream_opens_text_once_and_ends_with_done() {
        let body = WireFormat::UiMessageStream.encode_all("", 0, &answer());
        let lines = data_lines(&body);
        let types: Vec<String> = lines
            .iter()
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(v) => v["type"].as_str().unwrap_or("?").to_string(),
                Err(_) => l.clone(),
            })
            .collect();
        assert_eq!(
            types,
            [
                "start",
                "text-start",
                "text-delta",
                "text-delta",
                "text-end",
                "source-document",
                "finish",
                "[DONE]"
            ]
        );
        let source: Value = serde_json::from_str(&lines[5]).expect("json");
        assert_eq!(source["sourceId"], "1");
        assert_eq!(source["title"], "Shipping");
        assert!(source.get("filename").is_none());
        // Stored Q&A citations name their file as "": still none.
        let mut enc = Encoder::new(WireFormat::UiMessageStream, "", 0);
        let cited = enc.encode(&AnswerEvent::Citations(json!({"1": {"title": "Q",
            "file_name": "", "type": "qa"}})));
        assert!(!cited.contains("filename"), "{cited}");
    }

    #[test]
    fn ui_finish_reasons_stay_in_the_sdk_set() {
        let mut enc = Encoder::new(WireFormat::UiMessageStream, "", 0);
        let end = enc.encode(&AnswerEvent::End {
            message_uuid: "m".into(),
            finish_reason: "aborted".into(),
            usage: Value::Null,
            answered: None,
        });
        assert!(end.contains("\"finishReason\":\"other\""));
    }

    #[test]
    fn a_live_chat_turn_streams_as_an_empty_completion_marked_live_chat() {
        let body = Encoder::new(WireFormat::OpenAiChunks, "bot", 7)
            .with_usage_chunk()
            .openai_live_chat("m1", "s1");
        let chunks = openai_chunks(&body);
        assert_eq!(chunks.len(), 3, "opening, finish, usage: {body}");
        assert!(chunks.iter().all(|c| c["id"] == "chatcmpl-m1"));
        assert_eq!(chunks[0]["live_chat"], true);
        assert_eq!(chunks[0]["session_uuid"], "s1");
        assert_eq!(chunks[0]["message_uuid"], "m1");
        assert_eq!(chunks[1]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[2]["choices"], json!([]));
        assert_eq!(chunks[2]["usage"]["total_tokens"], 0);
    }

    #[test]
    fn openai_chunks_name_the_completion_and_end_with_done() {
        let body = WireFormat::OpenAiChunks.encode_all("bot", 7, &answer());
        let chunks = openai_chunks(&body);
        assert!(chunks.iter().all(|c| c["id"] == "chatcmpl-m1"
            && c["object"] == "chat.completion.chunk"
            && c["model"] == "bot"
            && c["created"] == 7));
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Hi\n");
        assert_eq!(chunks[3]["citations"]["1"]["title"], "Shipping");
        assert_eq!(chunks[4]["choices"][0]["finish_reason"], "stop");
    }

    #[test]
    fn openai_usage_rides_the_finish_chunk_or_a_last_chunk_of_its_own_when_asked() {
        let end = AnswerEvent::End {
            message_uuid: "m1".into(),
            finish_reason: "stop".into(),
            usage: json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
            answered: Some(true),
        };
        let plain = Encoder::new(WireFormat::OpenAiChunks, "bot", 7).encode(&end);
        let lines = data_lines(&plain);
        assert_eq!(lines.len(), 2, "{plain}");
        let finish: Value = serde_json::from_str(&lines[0]).expect("json");
        assert_eq!(finish["usage"]["total_tokens"], 5);
        let asked = Encoder::new(WireFormat::OpenAiChunks, "bot", 7)
            .with_usage_chunk()
            .encode(&end);
        let lines = data_lines(&asked);
        assert_eq!(lines.len(), 3, "{asked}");
        let finish: Value = serde_json::from_str(&lines[0]).expect("json");
        let usage: Value = serde_json::from_str(&lines[1]).expect("json");
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        assert!(finish.get("usage").is_none());
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 5);
        assert_eq!(lines[2], "[DONE]");
    }

    #[test]
    fn a_failed_openai_stream_ends_with_its_error_and_no_finish() {
        let mut encoder = Encoder::new(WireFormat::OpenAiChunks, "bot", 7);
        let failed = [
            AnswerEvent::Delta("Hello from the ".into()),
            AnswerEvent::Error {
                code: "upstream_error".into(),
                message: "the model stopped".into(),
            },
            AnswerEvent::End {
                message_uuid: "m1".into(),
                finish_reason: "error".into(),
                usage: Value::Null,
                answered: None,
            },
        ];
        let body: String = failed.iter().map(|e| encoder.encode(e)).collect();
        let lines = data_lines(&body);
        assert_eq!(lines.len(), 2, "{body}");
        let error: Value = serde_json::from_str(&lines[1]).expect("json");
        assert_eq!(error["error"]["code"], "upstream_error");
        assert_eq!(
            error["error"]["type"], "server_error",
            "OpenAI's type, as in a 502 body"
        );
        assert!(!body.contains("finish_reason\":\"stop") && !body.contains("[DONE]"));
        let interrupted = encoder.encode(&AnswerEvent::End {
            message_uuid: "m1".into(),
            finish_reason: "interrupted".into(),
            usage: Value::Null,
            answered: None,
        });
        assert!(interrupted.contains("\"interrupted\"") && !interrupted.contains("[DONE]"));
    }

    #[test]
    fn a_citation_links_to_its_page_or_the_uploads_reference() {
        use crate::domain::data_source::SourceType;
        use crate::knowledge::retrieve::{ChunkHit, Ranked};
        let cited = |kind: SourceType, meta: &str| {
            let hit = ChunkHit {
                id: 1,
                data_source_uuid: "d".into(),
                position: 0,
                heading: String::new(),
                text: "We ship.".into(),
                tokens: 2,
                source_type: kind,
                title: "Shipping".into(),
                file_name: String::new(),
                meta_json: meta.into(),
                rank: -1.0,
            };
            let ranked = Ranked {
                hit,
                score: 1.0,
                coverage: 1.0,
                weighted_coverage: 1.0,
                known_share: 1.0,
                question_match: 0.0,
                misses_follow_up: false,
            };
            cite_data(&[ranked], &[0])["1"]["url"].clone()
        };
        let page = r#"{"url":"https://shop.example/shipping","crawl_uuid":"c"}"#;
        assert_eq!(
            cited(SourceType::Link, page),
            "https://shop.example/shipping"
        );
        let upload = r#"{"reference_source_link":"https://shop.example/handbook.pdf"}"#;
        assert_eq!(
            cited(SourceType::File, upload),
            "https://shop.example/handbook.pdf"
        );
        assert_eq!(
            cited(SourceType::Qa, r#"{"question":"q","answer":"a"}"#),
            Value::Null
        );
        assert_eq!(cited(SourceType::File, "not json"), Value::Null);
    }
}
