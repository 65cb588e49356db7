//! Markdown: CommonMark with GitHub's tables, strikethrough and footnotes.
//!
//! The reader is our own. `pulldown-cmark`, which read Markdown here before, cost 72 KB of
//! the compressed Worker (its parser, its table of 2,125 character references and
//! `unicase`), and only plain text is wanted from it: character references are decoded by
//! the HTML reader's table, which knows the common ones.
//!
//! Headings, lists, quotes, tables and code map onto the document one to one. Emphasis and
//! link syntax go and keep their text; images carry no text worth indexing and go whole.
//! Raw HTML blocks (READMEs often centre a heading or logo this way) are read by the HTML
//! reader; inline tags disappear. A table's first line names its columns. Footnote
//! references stay as written (`[^1]`); a definition's blocks join the text where it
//! stands, its first paragraph prefixed `[^1]: `. The title is the first level-one heading,
//! else the front matter's `title:`.
//!
//! Code blocks are indexed bare, without fences: that is how Markdown sources have always
//! read here.
//!
//! Reading is in two passes. `blocks` finds the block structure line by line and the
//! labels of reference definitions; the inline text of each paragraph, heading and cell is
//! then read by `inlines`, which needs those labels (a `[text]` is a link only if its
//! label is defined, wherever the definition stands). Both are linear in the input and
//! neither recurses: containers nest at most [`MAX_NESTING`](super::document::MAX_NESTING)
//! deep.

mod blocks;
mod inlines;
mod links;
mod scan;
mod source;

use super::clean::{collapse_ws, normalise};
use super::document::{Block, Cell, Code, Document, List, Row, Table};
use super::html;
use blocks::{Container, Event};
use links::Labels;

/// Reads an MDX document: Markdown once its `import` and `export` statements are left out
/// (components in it read as inline HTML does).
pub fn read_mdx(text: &str) -> Document {
    read(&source::without_esm(text))
}

/// Reads a Markdown document.
pub fn read(text: &str) -> Document {
    let norm = normalise(text);
    let (body, front_title) = source::front_matter(&norm);
    let (events, labels) = blocks::read(body);
    let mut b = Builder::new(&labels);
    for event in events {
        b.event(event);
    }
    let (title, blocks) = b.finish();
    Document {
        title: title.or(front_title),
        blocks,
    }
}

enum Frame {
    Root(Vec<Block>),
    Quote(Vec<Block>),
    List(Option<u64>, Vec<Vec<Block>>),
    Item(Vec<Block>),
    /// A footnote's definition: its blocks join the text where it stands.
    Footnote(Vec<Block>),
}

/// Turns the block reader's events into blocks, reading inline text on the way. The block
/// reader keeps containers within [`MAX_NESTING`](super::document::MAX_NESTING), so the
/// frames here are as few.
struct Builder<'a> {
    frames: Vec<Frame>,
    labels: &'a Labels,
    /// Text put before the next paragraph (a footnote's label).
    pending_prefix: Option<String>,
    title: Option<String>,
}

impl<'a> Builder<'a> {
    fn new(labels: &'a Labels) -> Builder<'a> {
        Builder {
            frames: vec![Frame::Root(Vec::new())],
            labels,
            pending_prefix: None,
            title: None,
        }
    }

    fn finish(mut self) -> (Option<String>, Vec<Block>) {
        while self.frames.len() > 1 {
            self.close_frame();
        }
        let blocks = match self.frames.pop() {
            Some(Frame::Root(blocks)) => blocks,
            _ => Vec::new(),
        };
        (self.title, blocks)
    }

    /// The innermost frame that holds blocks.
    fn container(&mut self) -> Option<&mut Vec<Block>> {
        self.frames.iter_mut().rev().find_map(|f| match f {
            Frame::Root(b) | Frame::Quote(b) | Frame::Item(b) | Frame::Footnote(b) => Some(b),
            Frame::List(..) => None,
        })
    }

    fn push_block(&mut self, block: Block) {
        if let Some(blocks) = self.container() {
            blocks.push(block);
        }
    }

    fn close_frame(&mut self) {
        if self.frames.len() <= 1 {
            return;
        }
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Root(_) => {}
            Frame::Quote(blocks) => {
                if !blocks.is_empty() {
                    self.push_block(Block::Quote(blocks));
                }
            }
            Frame::List(start, items) => self.push_block(Block::List(List { start, items })),
            Frame::Item(blocks) => match self.frames.last_mut() {
                Some(Frame::List(_, items)) => items.push(blocks),
                _ => {
                    if let Some(container) = self.container() {
                        container.extend(blocks);
                    }
                }
            },
            Frame::Footnote(blocks) => {
                self.pending_prefix = None;
                if let Some(container) = self.container() {
                    container.extend(blocks);
                }
            }
        }
    }

    /// The text of inline Markdown, on one line.
    fn inline(&self, raw: &str) -> String {
        collapse_ws(&inlines::text(raw, self.labels))
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Open(container) => {
                let frame = match container {
                    Container::Quote => Frame::Quote(Vec::new()),
                    Container::List(start) => Frame::List(start, Vec::new()),
                    Container::Item => Frame::Item(Vec::new()),
                    Container::Footnote(label) => {
                        self.pending_prefix = Some(format!("[^{label}]: "));
                        Frame::Footnote(Vec::new())
                    }
                };
                self.frames.push(frame);
            }
            Event::Close => self.close_frame(),
            Event::Paragraph(raw) => {
                let text = self.inline(&raw);
                if text.is_empty() {
                    return;
                }
                let text = match self.pending_prefix.take() {
                    Some(prefix) => format!("{prefix}{text}"),
                    None => text,
                };
                self.push_block(Block::Paragraph(text));
            }
            Event::Heading(level, raw) => {
                let text = self.inline(&raw);
                if !text.is_empty() {
                    if level == 1 && self.title.is_none() {
                        self.title = Some(text.clone());
                    }
                    self.push_block(Block::Heading { level, text });
                }
            }
            Event::Code(text) => self.push_block(Block::Code(Code {
                text: text.trim_end_matches('\n').to_string(),
                fenced: false,
            })),
            Event::Html(chunk) => self.html(&chunk),
            Event::Table(rows) => {
                let rows = rows
                    .iter()
                    .enumerate()
                    .map(|(i, cells)| Row {
                        header: i == 0,
                        cells: cells.iter().map(|c| Cell::new(self.inline(c))).collect(),
                    })
                    .collect();
                self.push_block(Block::Table(Table { rows }));
            }
        }
    }

    /// An HTML block is read as HTML; its blocks join the Markdown's where it stands.
    fn html(&mut self, chunk: &str) {
        let doc = html::read(chunk);
        if self.title.is_none() && chunk.to_ascii_lowercase().contains("<h1") {
            self.title = doc.title;
        }
        if let Some(container) = self.container() {
            container.extend(doc.blocks);
        }
    }
}

#[cfg(test)]
mod tests;
