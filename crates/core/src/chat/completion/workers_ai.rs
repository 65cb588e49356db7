//! Workers AI text generation (the `AI` binding): the input it takes, and the decoder of its
//! streamed answer. It takes plain role/content messages; tools are not offered to it.

use super::{CompletionEvent, CompletionRequest, Usage};
use crate::chat::sse::{truncate, SseEvent};
use serde::Deserialize;
use serde_json::{json, Value};

/// The input of `AI.run(model, input)`, streamed.
pub fn request_input(request: &CompletionRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content.as_deref().unwrap_or("")}))
        .collect();
    json!({
        "messages": messages,
        "stream": true,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    })
}

/// Reads one Workers AI text-generation stream event (`data: {"response": "..."}`).
pub fn decode(event: &SseEvent) -> Vec<CompletionEvent> {
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

#[cfg(test)]
mod tests {
    use super::decode as workers_ai_events;
    use super::*;
    use crate::chat::sse::SseParser;

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
