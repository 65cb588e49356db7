//! Reading, indexing and searching a chatbot's sources. Everything here is pure and tested
//! natively; `storage` runs the queries and `handlers` the fetches.

pub mod chunk;
pub mod extract;
pub mod ingest;
pub mod query;
pub mod retrieve;
pub mod tokens;
pub mod url_guard;
