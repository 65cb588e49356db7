//! Document text extraction. Every extractor writes the same light markdown (headings as `#`
//! lines, blank-line paragraphs, `- ` list items, one table row per line), which the chunker
//! splits on.

pub mod markup;
pub mod office;

use std::fmt;

/// Readable text of a document, and its title when the document names one.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub title: Option<String>,
    pub text: String,
}

/// Why a document could not be turned into text, as a sentence a person can read.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractError(pub String);

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExtractError {}
