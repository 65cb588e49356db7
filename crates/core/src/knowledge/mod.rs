//! Reading, indexing and searching a chatbot's sources. Everything here is pure and tested
//! natively; `storage` runs the queries and `handlers` the fetches.
//!
//! A source travels: bytes → [`ingest::detect_upload`] / [`ingest::detect_page`] (which
//! format) → a reader in [`extract`] (one folder per format) → one typed
//! [`extract::Document`] → [`extract::render()`] (the indexed text) and
//! [`chunk::chunk_document`] (chunks cut along the document's blocks) → stored and searched
//! through [`query`] and [`retrieve`]. [`ingest`] strings these together.

pub mod chunk;
pub mod cjk;
pub mod compounds;
pub mod crawl;
pub mod encoding;
pub mod extract;
pub mod ingest;
pub mod language;
pub mod query;
pub mod retrieve;
pub mod semantic;
pub mod spelling;
pub mod steps;
mod stop_words;
pub mod thesaurus;
pub mod tokens;
pub mod url_guard;
