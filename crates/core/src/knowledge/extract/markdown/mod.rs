//! Markdown (CommonMark with GitHub's tables and strikethrough), parsed by `pulldown-cmark`.
//!
//! Headings, lists, quotes, tables and code map onto the document one to one. Emphasis and
//! link syntax go and keep their text; images carry no text worth indexing and go whole.
//! Raw HTML blocks (READMEs often centre a heading or logo this way) are read by the HTML
//! reader; inline tags disappear. A table's first line names its columns. The title is the
//! first level-one heading, else the front matter's `title:`.
//!
//! Code blocks are indexed bare, without fences: that is how Markdown sources have always
//! read here.

mod source;

use super::clean::{collapse_ws, normalise};
use super::document::{Block, Cell, Code, Document, List, Row, Table, MAX_NESTING};
use super::html;
use pulldown_cmark::{BrokenLink, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Reads a Markdown document.
pub fn read(text: &str) -> Document {
    let norm = normalise(text);
    let (body, front_title) = source::front_matter(&norm);
    let body = source::protect_code_pipes(body);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    // `[text][label]` whose label is defined nowhere (a README cut short, a copied
    // paragraph) still reads as its text rather than as bracket syntax; a bare `[text]`
    // without a definition is ordinary text, brackets and all.
    let mut broken_link = |link: BrokenLink<'_>| match link.link_type {
        LinkType::Reference | LinkType::Collapsed => Some((CowStr::from(""), CowStr::from(""))),
        _ => None,
    };
    let mut b = Builder::new();
    for event in Parser::new_with_broken_link_callback(&body, options, Some(&mut broken_link)) {
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
    /// A quote or list past the nesting bound: its content joins the container around it.
    Flat,
}

#[derive(Default)]
struct TableState {
    rows: Vec<Row>,
    row: Row,
}

/// Turns the parser's events into blocks. The parser nests events as deep as the input
/// does; the frames here stop at [`MAX_NESTING`] and live on the heap, so no input makes
/// this recurse.
struct Builder {
    frames: Vec<Frame>,
    /// Inline text of the paragraph, heading or cell being read.
    inline: String,
    /// Text put before the next paragraph (a footnote's label).
    pending_prefix: Option<String>,
    /// How many images the reader is inside; their alt text is not read.
    in_image: usize,
    heading: Option<u8>,
    code: Option<String>,
    html: Option<String>,
    table: Option<TableState>,
    title: Option<String>,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            frames: vec![Frame::Root(Vec::new())],
            inline: String::new(),
            pending_prefix: None,
            in_image: 0,
            heading: None,
            code: None,
            html: None,
            table: None,
            title: None,
        }
    }

    fn finish(mut self) -> (Option<String>, Vec<Block>) {
        self.flush_inline();
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
            Frame::List(..) | Frame::Flat => None,
        })
    }

    fn push_block(&mut self, block: Block) {
        if let Some(blocks) = self.container() {
            blocks.push(block);
        }
    }

    fn open(&mut self, frame: Frame) {
        self.flush_inline();
        // An item always opens inside its list; quotes and lists past the bound do not.
        let nested =
            matches!(frame, Frame::Item(_)) && matches!(self.frames.last(), Some(Frame::List(..)));
        if self.frames.len() > MAX_NESTING && !nested {
            self.frames.push(Frame::Flat);
        } else {
            self.frames.push(frame);
        }
    }

    fn close_frame(&mut self) {
        self.flush_inline();
        if self.frames.len() <= 1 {
            return;
        }
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Root(_) | Frame::Flat => {}
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

    /// Ends the text being gathered as a paragraph of its container.
    fn flush_inline(&mut self) {
        if self.heading.is_some() || self.table.is_some() {
            return;
        }
        let text = collapse_ws(&self.inline);
        self.inline.clear();
        if text.is_empty() {
            return;
        }
        let text = match self.pending_prefix.take() {
            Some(prefix) => format!("{prefix}{text}"),
            None => text,
        };
        self.push_block(Block::Paragraph(text));
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(code) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        if let Some(html) = &mut self.html {
            match event {
                Event::Html(t) | Event::Text(t) => html.push_str(&t),
                Event::End(TagEnd::HtmlBlock) => self.end_html(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) | Event::Code(t) if self.in_image == 0 => self.inline.push_str(&t),
            Event::SoftBreak | Event::HardBreak => self.inline.push(' '),
            // Inline tags disappear, except that a line break still separates words.
            Event::InlineHtml(h) | Event::Html(h) if is_br(&h) => self.inline.push(' '),
            Event::FootnoteReference(label) => {
                self.inline.push_str("[^");
                self.inline.push_str(&label);
                self.inline.push(']');
            }
            Event::Rule => self.flush_inline(),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush_inline(),
            Tag::Heading { level, .. } => {
                self.flush_inline();
                self.heading = Some(level as u8);
            }
            Tag::BlockQuote(_) => self.open(Frame::Quote(Vec::new())),
            Tag::List(start) => self.open(Frame::List(start, Vec::new())),
            Tag::Item => self.open(Frame::Item(Vec::new())),
            Tag::FootnoteDefinition(label) => {
                self.open(Frame::Footnote(Vec::new()));
                self.pending_prefix = Some(format!("[^{label}]: "));
            }
            Tag::CodeBlock(_) => {
                self.flush_inline();
                self.code = Some(String::new());
            }
            Tag::HtmlBlock => {
                self.flush_inline();
                self.html = Some(String::new());
            }
            Tag::Table(_) => {
                self.flush_inline();
                self.table = Some(TableState::default());
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.row = Row {
                        header: true,
                        cells: Vec::new(),
                    };
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.row = Row::default();
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Image { .. } => self.in_image += 1,
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush_inline(),
            TagEnd::Heading(_) => {
                let level = self.heading.take().unwrap_or(1);
                let text = collapse_ws(&self.inline);
                self.inline.clear();
                if !text.is_empty() {
                    if level == 1 && self.title.is_none() {
                        self.title = Some(text.clone());
                    }
                    self.push_block(Block::Heading { level, text });
                }
            }
            TagEnd::BlockQuote(_) | TagEnd::List(_) | TagEnd::Item | TagEnd::FootnoteDefinition => {
                self.close_frame()
            }
            TagEnd::TableCell => {
                let text = collapse_ws(&self.inline);
                self.inline.clear();
                if let Some(t) = &mut self.table {
                    t.row.cells.push(Cell::new(text));
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.push_block(Block::Table(Table { rows: t.rows }));
                }
            }
            TagEnd::Image => self.in_image = self.in_image.saturating_sub(1),
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let Some(code) = self.code.take() else {
            return;
        };
        self.push_block(Block::Code(Code {
            text: code.trim_end_matches('\n').to_string(),
            fenced: false,
        }));
    }

    /// An HTML block is read as HTML; its blocks join the Markdown's where it stands.
    fn end_html(&mut self) {
        let Some(chunk) = self.html.take() else {
            return;
        };
        let doc = html::read(&chunk);
        if self.title.is_none() && chunk.to_ascii_lowercase().contains("<h1") {
            self.title = doc.title;
        }
        if let Some(container) = self.container() {
            container.extend(doc.blocks);
        }
    }
}

/// `<br>`, `<br/>` or `</br>` in any case.
fn is_br(tag: &str) -> bool {
    let inner = tag.trim_start_matches('<').trim_start_matches('/');
    let name: String = inner
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    name.eq_ignore_ascii_case("br")
}

#[cfg(test)]
mod tests {
    use crate::knowledge::extract::markdown_to_text;

    #[test]
    fn code_spans_match_runs_of_equal_length() {
        assert_eq!(
            markdown_to_text("``a`b`` and `c`` d`").text,
            "a`b and c`` d"
        );
        assert_eq!(markdown_to_text("`unclosed *em*").text, "`unclosed em");
    }
}
