//! Reading documents: every format becomes one typed [`Document`], which is then rendered
//! to the indexed text and chunked.
//!
//! ```text
//!   html/ markdown/ csv/ json/ text/ pdf/            one reader per format: bytes or text
//!   office/ (docx pptx xlsx) epub odf                in, Document out
//!                     │
//!                     ▼
//!   document.rs   Document { title, blocks }         headings, paragraphs, lists, tables
//!                     │                              (with header rows when the format
//!          ┌──────────┴───────────┐                  knows them), definitions, code, quotes
//!          ▼                      ▼
//!   render.rs  the indexed     knowledge::chunk      retrieval chunks, cut at headings,
//!   text (one writer for       (works on the         blocks and sentences; knows a
//!   every format)              blocks, not text)     table's rows and header from the block
//! ```
//!
//! A reader decides what the source holds and nothing about how it is written, so a table
//! reads the same whichever format it came from. A new format is one folder here with a
//! `read` function, plus its line in `knowledge::ingest`.
//!
//! The `*_to_text` functions are the readers followed by [`render()`], for callers that only
//! want the text.

pub mod csv;
pub mod document;
pub mod epub;
pub mod html;
pub mod json;
pub mod markdown;
pub mod odf;
pub mod office;
pub mod pdf;
pub mod render;
pub mod text;

pub use office::{docx, pptx, xlsx};

pub(crate) mod binary;
mod clean;

pub use document::{Block, Cell, Code, Definition, Document, List, Row, Table};
pub use render::render;

use std::fmt;

/// Readable text of a document, and its title when the document names one.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    pub title: Option<String>,
    pub text: String,
}

impl From<&Document> for Extracted {
    fn from(doc: &Document) -> Extracted {
        Extracted {
            title: doc.title.clone(),
            text: render(doc),
        }
    }
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

impl ExtractError {
    /// The reason as a source's `error` shows it: a sentence, with a capital and a full stop,
    /// whichever reader wrote it.
    pub fn as_sentence(self) -> ExtractError {
        let reason = self.0.trim();
        if reason.is_empty() {
            return self;
        }
        // The readers write in English: an ASCII capital is all it takes, and leaves Unicode's
        // case tables out of the Worker.
        let mut sentence = reason.to_string();
        if let Some(first) = sentence.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        if !sentence.ends_with(['.', '!', '?']) {
            sentence.push('.');
        }
        ExtractError(sentence)
    }
}

/// The readable text of a web page.
pub fn html_to_text(html: &str) -> Extracted {
    Extracted::from(&html::read(html))
}

/// Markdown as the shared light markdown: headings stay `#` lines, emphasis and link
/// syntax go, code is kept as plain text, images are dropped.
pub fn markdown_to_text(text: &str) -> Extracted {
    Extracted::from(&markdown::read(text))
}

/// CSV (comma, semicolon, tab or pipe separated) as one line per row.
pub fn csv_to_text(text: &str) -> Result<String, ExtractError> {
    csv::read(text).map(|doc| render(&doc))
}

/// A JSON document (or JSON Lines) as `key.path: value` lines.
pub fn json_to_text(text: &str) -> Result<String, ExtractError> {
    json::read(text).map(|doc| render(&doc))
}

/// Plain text with line endings unified, control characters gone and every run of blank
/// lines collapsed to one, indentation and single line breaks kept.
pub fn plain_to_text(text: &str) -> String {
    render(&text::read(text))
}

/// The text of a PDF, page by page.
pub fn pdf_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    pdf::read(bytes).map(|doc| Extracted::from(&doc))
}

/// The text of a DOCX (Office Open XML) document.
pub fn docx_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    docx::read(bytes).map(|doc| Extracted::from(&doc))
}

/// The text of an EPUB book, chapter by chapter.
pub fn epub_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    epub::read(bytes).map(|doc| Extracted::from(&doc))
}

/// The text of an OpenDocument text, spreadsheet or presentation.
pub fn odf_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    odf::read(bytes).map(|doc| Extracted::from(&doc))
}

/// The text of a PPTX (PowerPoint) presentation, slide by slide.
pub fn pptx_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    pptx::read(bytes).map(|doc| Extracted::from(&doc))
}

/// The text of an XLSX (Excel) workbook, sheet by sheet.
pub fn xlsx_to_text(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    xlsx::read(bytes).map(|doc| Extracted::from(&doc))
}

#[cfg(test)]
mod tests {
    use super::ExtractError;

    #[test]
    fn a_reason_reads_as_a_sentence() {
        let made = |s: &str| ExtractError(s.into()).as_sentence().0;
        assert_eq!(
            made("the file is not a PDF: it has no %PDF header"),
            "The file is not a PDF: it has no %PDF header."
        );
        assert_eq!(
            made("The document holds no readable text."),
            "The document holds no readable text."
        );
    }
}
