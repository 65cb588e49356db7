//! The Worker runtime's pieces that more than one part of the shell uses: the configuration
//! read from the environment, structured logs, outbound HTTP behind the private-address guard,
//! files in R2, the stream an answer is written into, and the rate-limit object's client.

pub mod chat_session;
pub mod config;
pub mod files;
pub mod log;
pub mod outbound;
pub mod rate_limit;
pub mod stream;
pub mod vector_index;
