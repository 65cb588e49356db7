//! Splits a document into retrieval chunks.
//!
//! Pipeline: spans (paragraph, list item, table row, code) grouped into heading sections
//! -> units (spans, or sentence/line/word/character pieces of spans too big for one chunk)
//! -> greedy packing per section (`pack`).
//!
//! The spans come from one of two places:
//!
//! * [`chunk_document`]: a [`Document`] from `knowledge::extract`. It is rendered once, and
//!   the renderer says where each block landed, so a heading, a list item or a table row
//!   is known from the block itself. A table whose format names its columns writes them
//!   into every row (`Header: value`), so its rows need nothing repeated; a table without
//!   a header whose first row reads like column titles has that row repeated at the top of
//!   each later chunk of the table.
//! * [`chunk_text`]: text with no document behind it (a Q&A answer someone typed), read as
//!   the light markdown people type (`from_text`).
//!
//! Every chunk's text is a contiguous slice of the rendered (or newline-normalised) text,
//! optionally preceded by a repeated table header, which keeps packing cheap and the output
//! faithful to the source.

mod from_document;
mod from_text;
mod layout;
mod pack;
mod sentences;
mod split;

use super::extract::Document;
use pack::pack_section;
use split::section_units;
use std::borrow::Cow;

/// Limits for chunking, all in estimated cl100k tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkOptions {
    /// Packing stops before a block would push a chunk past this size.
    pub target_tokens: usize,
    /// Hard ceiling; blocks above it are split. Values below
    /// [`MIN_MAX_TOKENS`] are raised to it.
    pub max_tokens: usize,
    /// Budget for sentences repeated from the previous chunk of a section.
    /// Capped at half the target so every chunk still makes progress.
    pub overlap_tokens: usize,
}

/// One estimated character can cost up to 3 tokens (astral-plane symbols),
/// so a smaller ceiling could not be honoured by any split.
pub const MIN_MAX_TOKENS: usize = 8;

impl Default for ChunkOptions {
    /// ~200 tokens (~150 English words) is one or two paragraphs: specific
    /// enough that a full-text hit points at the passage that answers the
    /// query, yet enough context to be useful when pasted into a prompt
    /// (several chunks fit a typical budget). A 320 ceiling lets most whole
    /// paragraphs stay intact instead of being cut at 201 tokens. 40 tokens
    /// of overlap (20 %) is one or two sentences, enough that a statement
    /// straddling a boundary is still found whole in one of the two chunks
    /// without bloating the index.
    fn default() -> Self {
        ChunkOptions {
            target_tokens: 200,
            max_tokens: 320,
            overlap_tokens: 40,
        }
    }
}

/// A piece of a document ready for indexing.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// 0-based order within the document.
    pub position: usize,
    /// Heading path the chunk falls under, e.g. "Installation > Linux".
    pub heading: Option<String>,
    /// Chunk text, without the heading line unless it is the only content.
    pub text: String,
    /// `estimate_tokens(text)`.
    pub tokens: usize,
}

/// Splits a document into chunks, from its blocks.
#[must_use]
pub fn chunk_document(doc: &Document, opts: &ChunkOptions) -> Vec<Chunk> {
    let (text, layout) = from_document::layout(doc);
    chunk_layout(&text, &layout, opts)
}

/// Splits text that has no document behind it into chunks, reading it as light markdown.
#[must_use]
pub fn chunk_text(text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    // Byte ranges are computed on this copy, so "\r\n" is folded first to
    // keep line handling in one place.
    let text: Cow<str> = if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    };
    let layout = from_text::layout(&text);
    chunk_layout(&text, &layout, opts)
}

/// A document's chunks, produced a slice at a time: the document is rendered once and let
/// go, and only the text and its layout stay, so a large reading never holds all its chunks.
/// The chunks are those [`chunk_document`] gives, except where a section is longer than a
/// slice: it is packed in parts of whole spans, each part starting a chunk afresh.
pub struct DocumentChunks {
    text: String,
    layout: layout::Layout,
    limits: Limits,
    /// The next section to pack, and the first of its spans not packed yet.
    section: usize,
    span: usize,
    /// Chunks produced so far: the next one's position.
    position: usize,
}

impl DocumentChunks {
    #[must_use]
    pub fn new(doc: &Document, opts: &ChunkOptions) -> Self {
        let (text, layout) = from_document::layout(doc);
        DocumentChunks {
            text,
            layout,
            limits: Limits::new(opts),
            section: 0,
            span: 0,
            position: 0,
        }
    }

    /// The rendered text the chunks are cut from.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether every chunk was produced.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.section >= self.layout.sections.len()
    }

    /// The next chunks, in order, until their text reaches about `max_bytes` (whole sections,
    /// or parts of whole spans of a section longer than that); empty when all were produced.
    pub fn next_slice(&mut self, max_bytes: usize) -> Vec<Chunk> {
        let mut out = Vec::new();
        let mut bytes = 0;
        while bytes < max_bytes && self.section < self.layout.sections.len() {
            let section = &self.layout.sections[self.section];
            let mut end = self.span;
            let mut span_bytes = 0;
            while end < section.spans.len() && (end == self.span || span_bytes < max_bytes) {
                span_bytes += section.spans[end].range.len();
                end += 1;
            }
            let from = out.len();
            if self.span == 0 && end == section.spans.len() {
                let units = section_units(&self.text, section, &self.limits);
                pack_section(
                    &self.text,
                    &self.layout,
                    section,
                    &units,
                    &self.limits,
                    &mut out,
                );
            } else {
                let part = layout::Section {
                    heading: section.heading.clone(),
                    spans: section.spans[self.span..end].to_vec(),
                };
                let units = section_units(&self.text, &part, &self.limits);
                pack_section(
                    &self.text,
                    &self.layout,
                    &part,
                    &units,
                    &self.limits,
                    &mut out,
                );
            }
            for chunk in &mut out[from..] {
                bytes += chunk.text.len();
                chunk.position = self.position;
                self.position += 1;
            }
            if end >= section.spans.len() {
                self.section += 1;
                self.span = 0;
            } else {
                self.span = end;
            }
        }
        out
    }
}

/// A slice of a document's layout that chunks on its own, as a step of its own does: the text
/// of whole sections (or of whole spans of a section longer than a slice), the spans grouped
/// under their headings, and the header lines of the tables it holds rows of (written after
/// the spans' text). Its chunks are the ones [`DocumentChunks::next_slice`] gives for the same
/// part of the document, numbered from 0.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayoutSlice {
    text: String,
    sections: Vec<SliceSection>,
    /// Per table the slice holds rows of, the byte range of its repeated header line, if any.
    tables: Vec<Option<(u32, u32)>>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct SliceSection {
    heading: Option<String>,
    /// Per span: its kind (0 paragraph, 1 list item, 2 row, 3 code), its byte range in the
    /// slice's text, and its table's index among the slice's tables.
    spans: Vec<(u8, u32, u32, Option<u32>)>,
}

impl LayoutSlice {
    /// Bytes of text the slice holds.
    #[must_use]
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The slice's chunks, positions from 0.
    #[must_use]
    pub fn chunks(&self, opts: &ChunkOptions) -> Vec<Chunk> {
        let valid = |start: u32, end: u32| {
            let (start, end) = (start as usize, end as usize);
            (start <= end && self.text.is_char_boundary(start) && self.text.is_char_boundary(end))
                .then_some(start..end)
        };
        let sections = self
            .sections
            .iter()
            .map(|s| layout::Section {
                heading: s.heading.clone(),
                spans: s
                    .spans
                    .iter()
                    .filter_map(|&(kind, start, end, table)| {
                        Some(layout::Span {
                            kind: match kind {
                                1 => layout::SpanKind::ListItem,
                                2 => layout::SpanKind::Row,
                                3 => layout::SpanKind::Code,
                                _ => layout::SpanKind::Paragraph,
                            },
                            range: valid(start, end)?,
                            table: table.map(|t| t as usize).filter(|&t| t < self.tables.len()),
                        })
                    })
                    .collect(),
            })
            .collect();
        let tables = self
            .tables
            .iter()
            .map(|h| layout::TableLead {
                header: h.and_then(|(start, end)| valid(start, end)),
            })
            .collect();
        chunk_layout(&self.text, &layout::Layout { sections, tables }, opts)
    }
}

impl DocumentChunks {
    /// The next part of the layout, of about `max_bytes` of text (whole sections, or parts of
    /// whole spans of a section longer than that), to be chunked elsewhere; `None` when all
    /// were taken.
    pub fn next_layout_slice(&mut self, max_bytes: usize) -> Option<LayoutSlice> {
        let mut parts: Vec<(Option<String>, &[layout::Span])> = Vec::new();
        let mut bytes = 0;
        while bytes < max_bytes && self.section < self.layout.sections.len() {
            let section = &self.layout.sections[self.section];
            // The parts of a section are those `next_slice` packs.
            let mut end = self.span;
            let mut part = 0;
            while end < section.spans.len() && (end == self.span || part < max_bytes) {
                part += section.spans[end].range.len();
                end += 1;
            }
            bytes += part;
            parts.push((section.heading.clone(), &section.spans[self.span..end]));
            if end >= section.spans.len() {
                self.section += 1;
                self.span = 0;
            } else {
                self.span = end;
            }
        }
        let ranges = parts
            .iter()
            .flat_map(|(_, spans)| spans.iter().map(|s| &s.range));
        let start = ranges.clone().map(|r| r.start).min()?;
        let end = ranges.map(|r| r.end).max()?;
        let mut text = self.text[start..end].to_string();
        let mut tables: Vec<usize> = Vec::new();
        let mut headers = Vec::new();
        let sections = parts
            .into_iter()
            .map(|(heading, spans)| SliceSection {
                heading,
                spans: spans
                    .iter()
                    .map(|s| {
                        let table = s.table.map(|t| {
                            let local = tables.iter().position(|&x| x == t).unwrap_or_else(|| {
                                tables.push(t);
                                tables.len() - 1
                            });
                            local as u32
                        });
                        let kind = match s.kind {
                            layout::SpanKind::Paragraph => 0,
                            layout::SpanKind::ListItem => 1,
                            layout::SpanKind::Row => 2,
                            layout::SpanKind::Code => 3,
                        };
                        (
                            kind,
                            (s.range.start - start) as u32,
                            (s.range.end - start) as u32,
                            table,
                        )
                    })
                    .collect(),
            })
            .collect();
        // A table's header line is known by where it starts: in the slice, where it is; before
        // the slice, its text goes after the spans'.
        for &t in &tables {
            let header = self.layout.tables.get(t).and_then(|l| l.header.clone());
            headers.push(header.map(|r| {
                if r.start >= start && r.end <= end {
                    return ((r.start - start) as u32, (r.end - start) as u32);
                }
                text.push('\n');
                let at = text.len();
                text.push_str(&self.text[r]);
                (at as u32, text.len() as u32)
            }));
        }
        Some(LayoutSlice {
            text,
            sections,
            tables: headers,
        })
    }
}

fn chunk_layout(text: &str, layout: &layout::Layout, opts: &ChunkOptions) -> Vec<Chunk> {
    let limits = Limits::new(opts);
    let mut out = Vec::new();
    for section in &layout.sections {
        let units = section_units(text, section, &limits);
        pack_section(text, layout, section, &units, &limits, &mut out);
    }
    out
}

#[derive(Clone, Copy)]
struct Limits {
    target: usize,
    max: usize,
    overlap: usize,
}

impl Limits {
    fn new(o: &ChunkOptions) -> Self {
        let max = o.max_tokens.max(MIN_MAX_TOKENS);
        let target = o.target_tokens.clamp(1, max);
        Limits {
            target,
            max,
            overlap: o.overlap_tokens.min(target / 2),
        }
    }
}
