//! Answering: prompt assembly, the built-in engine, model stream parsing and the wire formats
//! answers are streamed in. All pure; `conversation` runs it in the Worker.

pub mod answered;
pub mod completion;
pub mod engine;
pub mod followup;
pub mod models;
pub mod openai_compat;
pub mod prompt;
pub mod replies;
pub mod routing;
pub mod sentences;
pub mod sse;
pub mod tagging;
pub mod tools;
pub mod wire;
