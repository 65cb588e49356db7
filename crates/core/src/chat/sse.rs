//! Incremental parsing of server-sent events, and of the OpenAI Chat Completions stream carried
//! in them. Bytes arrive in arbitrary pieces (a boundary may fall inside a line or inside a
//! UTF-8 character), so the parser buffers until it has whole lines.

use serde::Deserialize;

/// One dispatched event: its `event:` name (empty when none) and its joined `data:` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub struct SseParser {
    pending: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.pending.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.pending.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            self.take_line(&line, &mut events);
        }
        events
    }

    /// Ends the input: a last event without its blank line still counts.
    pub fn finish(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.take_line(rest.trim_end_matches('\r'), &mut events);
        }
        self.dispatch(&mut events);
        events
    }

    fn take_line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_string()),
            "event" => self.event = value.to_string(),
            _ => {}
        }
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        if !self.data.is_empty() {
            events.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: self.data.join("\n"),
            });
        }
        self.data.clear();
        self.event.clear();
    }
}

/// Token counts as a provider reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

/// A piece of a tool call as the stream delivers it: fields arrive spread over chunks and are
/// joined by `index`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCallDelta {
    pub index: usize,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CompletionEvent {
    Text(String),
    ToolCall(ToolCallDelta),
    Finish(String),
    Usage(Usage),
    /// The provider reported an error inside the stream.
    Error(String),
    Done,
}

#[derive(Deserialize)]
struct ChunkJson {
    #[serde(default)]
    choices: Vec<ChoiceJson>,
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChoiceJson {
    #[serde(default)]
    delta: Option<DeltaJson>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaJson {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallJson>,
}

#[derive(Deserialize)]
struct ToolCallJson {
    #[serde(default)]
    index: usize,
    id: Option<String>,
    function: Option<FunctionJson>,
}

#[derive(Deserialize)]
struct FunctionJson {
    name: Option<String>,
    arguments: Option<String>,
}

/// Reads one Chat Completions stream event (`data: {...}` or `data: [DONE]`).
pub fn completion_events(event: &SseEvent) -> Vec<CompletionEvent> {
    let data = event.data.trim();
    if data == "[DONE]" {
        return vec![CompletionEvent::Done];
    }
    let chunk: ChunkJson = match serde_json::from_str(data) {
        Ok(c) => c,
        Err(_) => {
            return vec![CompletionEvent::Error(format!(
                "unreadable stream event: {}",
                truncate(data, 200)
            ))]
        }
    };
    let mut out = Vec::new();
    if let Some(err) = chunk.error {
        let message = err
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string());
        out.push(CompletionEvent::Error(message));
    }
    for choice in chunk.choices {
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                out.push(CompletionEvent::Text(text));
            }
            for call in delta.tool_calls {
                let (name, arguments) = match call.function {
                    Some(f) => (f.name, f.arguments.unwrap_or_default()),
                    None => (None, String::new()),
                };
                out.push(CompletionEvent::ToolCall(ToolCallDelta {
                    index: call.index,
                    id: call.id,
                    name,
                    arguments,
                }));
            }
        }
        if let Some(reason) = choice.finish_reason {
            out.push(CompletionEvent::Finish(reason));
        }
    }
    if let Some(usage) = chunk.usage {
        out.push(CompletionEvent::Usage(usage));
    }
    out
}

/// Reads one Workers AI text-generation stream event (`data: {"response": "..."}`).
pub fn workers_ai_events(event: &SseEvent) -> Vec<CompletionEvent> {
    let data = event.data.trim();
    if data == "[DONE]" {
        return vec![CompletionEvent::Done];
    }
    #[derive(Deserialize)]
    struct Piece {
        response: Option<String>,
        usage: Option<Usage>,
    }
    match serde_json::from_str::<Piece>(data) {
        Ok(p) => {
            let mut out = Vec::new();
            if let Some(text) = p.response.filter(|t| !t.is_empty()) {
                out.push(CompletionEvent::Text(text));
            }
            if let Some(u) = p.usage {
                out.push(CompletionEvent::Usage(u));
            }
            out
        }
        Err(_) => vec![CompletionEvent::Error(format!(
            "unreadable stream event: {}",
            truncate(data, 200)
        ))],
    }
}

pub fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"Héllo\"}}]}\n\n\
        : keep-alive\n\n\
        data: {\"choices\":[{\"delta\":{\"content\":\" wörld\"}}]}\r\n\r\n\
        data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
        data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\n\n\
        data: [DONE]\n\n";

    fn all_events(pieces: &[&[u8]]) -> Vec<CompletionEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for p in pieces {
            for e in parser.feed(p) {
                out.extend(completion_events(&e));
            }
        }
        for e in parser.finish() {
            out.extend(completion_events(&e));
        }
        out
    }

    fn expected() -> Vec<CompletionEvent> {
        vec![
            CompletionEvent::Text("Héllo".into()),
            CompletionEvent::Text(" wörld".into()),
            CompletionEvent::Finish("stop".into()),
            CompletionEvent::Usage(Usage {
                prompt_tokens: 7,
                completion_tokens: 2,
                total_tokens: 9,
            }),
            CompletionEvent::Done,
        ]
    }

    #[test]
    fn parses_a_whole_stream() {
        assert_eq!(all_events(&[STREAM.as_bytes()]), expected());
    }

    #[test]
    fn any_split_point_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for cut in 0..bytes.len() {
            assert_eq!(
                all_events(&[&bytes[..cut], &bytes[cut..]]),
                expected(),
                "cut at {cut}"
            );
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all_events(&singles), expected());
    }

    #[test]
    fn multi_line_data_event_names_and_unterminated_tail() {
        let mut p = SseParser::new();
        let events = p.feed(b"event: delta\ndata: a\ndata: b\n\ndata: tail");
        assert_eq!(
            events,
            vec![SseEvent {
                event: "delta".into(),
                data: "a\nb".into()
            }]
        );
        assert_eq!(
            p.finish(),
            vec![SseEvent {
                event: String::new(),
                data: "tail".into()
            }]
        );
    }

    #[test]
    fn tool_calls_and_errors() {
        let e = SseEvent {
            event: String::new(),
            data: r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"lookup","arguments":"{\"q\":"}}]}}]}"#.into(),
        };
        assert_eq!(
            completion_events(&e),
            vec![CompletionEvent::ToolCall(ToolCallDelta {
                index: 0,
                id: Some("call_1".into()),
                name: Some("lookup".into()),
                arguments: "{\"q\":".into()
            })]
        );
        let err = SseEvent {
            event: String::new(),
            data: r#"{"error":{"message":"overloaded"}}"#.into(),
        };
        assert_eq!(
            completion_events(&err),
            vec![CompletionEvent::Error("overloaded".into())]
        );
        let junk = SseEvent {
            event: String::new(),
            data: "not json".into(),
        };
        assert!(matches!(
            completion_events(&junk)[0],
            CompletionEvent::Error(_)
        ));
    }

    #[test]
    fn workers_ai_stream() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for e in p.feed(
            b"data: {\"response\":\"Hi\"}\n\ndata: {\"response\":\" there\"}\n\ndata: [DONE]\n\n",
        ) {
            out.extend(workers_ai_events(&e));
        }
        assert_eq!(
            out,
            vec![
                CompletionEvent::Text("Hi".into()),
                CompletionEvent::Text(" there".into()),
                CompletionEvent::Done
            ]
        );
    }
}
