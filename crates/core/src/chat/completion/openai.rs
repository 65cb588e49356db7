//! The OpenAI-compatible Chat Completions API (OpenAI itself, Ollama, llama.cpp's server,
//! vLLM, ...): the request body, and the decoder of its streamed answer.

use super::{
    ChatMessage, CompletionEvent, CompletionRequest, Role, ToolCallDelta, ToolSpec, Usage,
};
use crate::chat::sse::{truncate, SseEvent};
use serde::Deserialize;
use serde_json::{json, Value};

/// One message in the API's shape.
pub fn message_json(message: &ChatMessage) -> Value {
    let mut out = json!({
        "role": message.role.as_str(),
        "content": message.content,
    });
    if !message.tool_calls.is_empty() {
        out["tool_calls"] = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
    }
    if let (Role::Tool, Some(id)) = (message.role, &message.tool_call_id) {
        out["tool_call_id"] = json!(id);
    }
    out
}

/// One offered tool in the API's shape.
pub fn tool_json(tool: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
    })
}

/// The body of `POST {base}/chat/completions`, streamed, with usage in the last chunk.
pub fn request_body(request: &CompletionRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    });
    if !request.tools.is_empty() {
        body["tools"] = request.tools.iter().map(tool_json).collect();
        body["tool_choice"] = json!(if request.may_call_tools {
            "auto"
        } else {
            "none"
        });
    }
    body
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
    /// A model's refusal, sent in place of `content`.
    refusal: Option<String>,
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
pub fn decode(event: &SseEvent) -> Vec<CompletionEvent> {
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
            // A refusal is what the model says instead of an answer: the user reads it as one,
            // rather than an empty answer with no reason.
            for text in [delta.content, delta.refusal].into_iter().flatten() {
                if !text.is_empty() {
                    out.push(CompletionEvent::Text(text));
                }
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

#[cfg(test)]
mod tests {
    use super::decode as completion_events;
    use super::*;
    use crate::chat::completion::tool_round_messages;
    use crate::chat::sse::SseParser;
    use crate::chat::tools::ToolCall;

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
    fn spent_tools_are_described_but_not_to_be_called() {
        let tools = [ToolSpec {
            name: "lookup".into(),
            description: "Finds an order.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }];
        let messages = [ChatMessage::user("where is it?")];
        let request = |may_call_tools| CompletionRequest {
            model: "m",
            messages: &messages,
            tools: &tools,
            may_call_tools,
            temperature: 0.2,
            max_tokens: 100,
        };
        assert_eq!(request_body(&request(true))["tool_choice"], "auto");
        let spent = request_body(&request(false));
        assert_eq!(spent["tool_choice"], "none");
        assert_eq!(spent["tools"][0]["function"]["name"], "lookup");
    }

    #[test]
    fn a_refusal_is_read_as_what_the_model_said() {
        let e = SseEvent {
            event: String::new(),
            data: r#"{"choices":[{"delta":{"role":"assistant","refusal":"I can't help with that."}}]}"#.into(),
        };
        assert_eq!(
            completion_events(&e),
            vec![CompletionEvent::Text("I can't help with that.".into())]
        );
    }

    #[test]
    fn follow_up_carries_calls_and_results() {
        let calls = vec![ToolCall {
            id: "a".into(),
            name: "lookup".into(),
            arguments: "{}".into(),
        }];
        let m: Vec<Value> = tool_round_messages("", &calls, &["{\"status\":\"shipped\"}".into()])
            .iter()
            .map(message_json)
            .collect();
        assert_eq!(m[0]["role"], "assistant");
        assert!(m[0]["content"].is_null());
        assert_eq!(m[0]["tool_calls"][0]["function"]["name"], "lookup");
        assert_eq!(
            m[1],
            json!({"role": "tool", "tool_call_id": "a", "content": "{\"status\":\"shipped\"}"})
        );
    }
}
