//! The service's records and the rules for changing them. Nothing here touches the Worker
//! runtime, so all of it is tested natively.

pub mod agent;
pub mod api_key;
pub mod chatbot;
pub mod crawl;
pub mod data_source;
pub mod feedback;
pub mod rate_limit;
pub mod session;
pub mod tool_function;
pub mod webhook;
pub mod widget;
