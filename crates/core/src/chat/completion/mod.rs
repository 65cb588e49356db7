//! A chat completion in provider-neutral terms: the conversation sent (`ChatMessage`, with
//! tool calls and their results), the tools offered (`ToolSpec`), and what comes back
//! (`CompletionEvent`). Each provider's module encodes the request in its own wire shape and
//! decodes its own stream, so nothing outside them knows any vendor's format.

pub mod openai;
pub mod workers_ai;

use crate::chat::tools::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call, answering the assistant message that asked for it.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatMessage {
    pub role: Role,
    /// `None` for an assistant message that only calls tools.
    pub content: Option<String>,
    /// Calls an assistant message made.
    pub tool_calls: Vec<ToolCall>,
    /// For a `Tool` message: the call it answers.
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    fn text(role: Role, content: &str) -> Self {
        ChatMessage {
            role,
            content: Some(content.to_string()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn system(content: &str) -> Self {
        Self::text(Role::System, content)
    }

    pub fn user(content: &str) -> Self {
        Self::text(Role::User, content)
    }

    pub fn assistant(content: &str) -> Self {
        Self::text(Role::Assistant, content)
    }
}

/// A function a model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// One call to a model.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionRequest<'a> {
    /// The provider's own name for the model.
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    /// Empty when no tools are offered.
    pub tools: &'a [ToolSpec],
    /// `false` once an answer's tool rounds are spent: the tools are still described (the
    /// conversation holds their calls) but none may be called (`tool_choice: "none"`).
    pub may_call_tools: bool,
    pub temperature: f64,
    pub max_tokens: usize,
}

/// The assistant message that carried the calls, and one tool message per result, to send
/// back to the model.
pub fn tool_round_messages(
    text_so_far: &str,
    calls: &[ToolCall],
    results: &[String],
) -> Vec<ChatMessage> {
    let mut out = vec![ChatMessage {
        role: Role::Assistant,
        content: (!text_so_far.is_empty()).then(|| text_so_far.to_string()),
        tool_calls: calls.to_vec(),
        tool_call_id: None,
    }];
    for (call, result) in calls.iter().zip(results) {
        out.push(ChatMessage {
            role: Role::Tool,
            content: Some(result.clone()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
        });
    }
    out
}

/// Token counts as a provider reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
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

/// What a provider's answer stream yields, whoever the provider is.
#[derive(Clone, Debug, PartialEq)]
pub enum CompletionEvent {
    Text(String),
    /// The built-in engine says which sources its answer cites (indices into the ranked
    /// sources, in citation-number order); a model cites the sources its prompt carried.
    Cited(Vec<usize>),
    /// The built-in engine says whether the sources held an answer (`false`: it said it was
    /// unsure, or declined).
    Answered(bool),
    ToolCall(ToolCallDelta),
    Finish(String),
    Usage(Usage),
    /// The provider reported an error inside the stream.
    Error(String),
    Done,
}
