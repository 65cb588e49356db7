//! The block structure of Markdown, read line by line as CommonMark describes it. Each line
//! first continues the containers already open (quotes, list items, footnote definitions),
//! then may open new ones; what is left of it goes to a leaf: a paragraph, heading, code
//! block, HTML block or table.
//!
//! Every line is read once, and no more than [`MAX_NESTING`] containers are ever open: the
//! markers of deeper ones are read and dropped, their text joining the innermost container.
//! So the work per line is bounded by its length, whatever the nesting.

use super::super::document::MAX_NESTING;
use super::links::{self, Labels};
use super::scan::{self, HtmlEnd, Line};

/// What the reader finds, in document order.
pub(super) enum Event {
    /// A container opens; what follows belongs to it up to its `Close`.
    Open(Container),
    Close,
    /// Paragraphs, headings and table cells carry their inline source, read into text once
    /// every reference definition is known.
    Paragraph(String),
    Heading(u8, String),
    Code(String),
    Html(String),
    /// Rows of cells, the first naming the columns; every row has as many cells as it.
    Table(Vec<Vec<String>>),
}

pub(super) enum Container {
    Quote,
    /// A list and the number of its first item (`None` for bullets).
    List(Option<u64>),
    Item,
    /// A footnote definition and its label.
    Footnote(String),
}

/// Reads `text` into events, and the labels its reference definitions give.
pub(super) fn read(text: &str) -> (Vec<Event>, Labels) {
    let mut reader = Blocks {
        open: Vec::new(),
        leaf: Leaf::None,
        events: Vec::new(),
        labels: Labels::new(),
        filled_cells: 0,
    };
    for line in text.split('\n') {
        reader.line(line);
    }
    reader.close_from(0);
    (reader.events, reader.labels)
}

/// How far a footnote definition's later blocks are indented.
const FOOTNOTE_INDENT: usize = 4;

/// Table rows short of cells are filled with empty ones, up to this many in a document: a
/// header of thousands of columns over thousands of one-cell rows would otherwise grow
/// without bound.
const MAX_FILLED_CELLS: usize = 1 << 18;

enum Open {
    Quote,
    /// `kind` is the bullet, or the `.` or `)` after an ordered item's number.
    List {
        kind: u8,
    },
    Item {
        /// The column its content starts at, which continuation lines must reach.
        indent: usize,
        /// Nothing in it yet: a blank line then ends it.
        empty: bool,
    },
    Footnote,
}

enum Leaf {
    None,
    Paragraph {
        text: String,
        /// Where its last line starts: a table's header may be that line.
        last_line: usize,
    },
    Fenced {
        mark: u8,
        len: usize,
        /// The fence's own indentation, taken off each line of code.
        indent: usize,
        text: String,
    },
    Indented {
        text: String,
        /// Blank lines not yet known to be inside the code rather than after it.
        blanks: String,
    },
    Html {
        end: HtmlEnd,
        text: String,
    },
    Table {
        columns: usize,
        rows: Vec<Vec<String>>,
    },
}

struct Blocks {
    open: Vec<Open>,
    leaf: Leaf,
    events: Vec<Event>,
    labels: Labels,
    filled_cells: usize,
}

impl Blocks {
    fn line(&mut self, raw: &str) {
        let mut line = Line::new(raw);
        let mut matched = 0;
        while let Some(open) = self.open.get_mut(matched) {
            // Blank as far as this container sees: `>` alone is a blank line in a quote.
            let blank = line.is_blank();
            let continues = match open {
                Open::Quote => line.quote_marker(),
                Open::List { .. } => true,
                Open::Item { indent, empty } => {
                    if blank {
                        !*empty
                    } else if line.indent() >= *indent {
                        line.skip_cols(*indent);
                        *empty = false;
                        true
                    } else {
                        false
                    }
                }
                Open::Footnote => {
                    if blank {
                        true
                    } else if line.indent() >= FOOTNOTE_INDENT {
                        line.skip_cols(FOOTNOTE_INDENT);
                        true
                    } else {
                        false
                    }
                }
            };
            if !continues {
                break;
            }
            matched += 1;
        }
        if matched == self.open.len() && self.continue_leaf(&mut line) {
            return;
        }
        let (matched, opened) = self.open_containers(&mut line, matched);
        if line.is_blank() {
            self.close_from(matched);
            return;
        }
        self.leaf_line(&mut line, matched, opened);
    }

    /// Gives the line to an open code or HTML block, which take any line their containers
    /// continue to. Whether it took it.
    fn continue_leaf(&mut self, line: &mut Line<'_>) -> bool {
        let blank = line.is_blank();
        let mut close = false;
        match &mut self.leaf {
            Leaf::Fenced {
                mark,
                len,
                indent,
                text,
            } => {
                let own = line.indent();
                if own <= 3 && scan::closes_fence(line.after_indent(), *mark, *len) {
                    close = true;
                } else {
                    line.skip_cols(own.min(*indent));
                    text.push_str(&line.content());
                    text.push('\n');
                }
            }
            Leaf::Indented { text, blanks } => {
                if blank {
                    line.skip_cols(4);
                    blanks.push_str(&line.content());
                    blanks.push('\n');
                } else if line.indent() >= 4 {
                    line.skip_cols(4);
                    text.push_str(blanks);
                    blanks.clear();
                    text.push_str(&line.content());
                    text.push('\n');
                } else {
                    return false;
                }
            }
            Leaf::Html { end, text } => {
                if blank && *end == HtmlEnd::Blank {
                    close = true;
                } else {
                    let content = line.content();
                    close = scan::ends_html_block(&content, *end);
                    text.push_str(&content);
                    text.push('\n');
                }
            }
            Leaf::None | Leaf::Paragraph { .. } | Leaf::Table { .. } => return false,
        }
        if close {
            self.close_leaf();
        }
        true
    }

    /// Opens the quotes, list items and footnote definitions the line starts with. Returns
    /// how many containers the line is now inside, and whether it opened any.
    fn open_containers(&mut self, line: &mut Line<'_>, mut matched: usize) -> (usize, bool) {
        let mut opened = false;
        while line.indent() <= 3 {
            let rest = line.after_indent();
            let paragraph_goes_on =
                matched == self.open.len() && matches!(self.leaf, Leaf::Paragraph { .. });
            if rest.starts_with('>') {
                self.close_from(matched);
                line.quote_marker();
                self.open(Open::Quote, Container::Quote);
            } else if let Some(marker) = scan::list_marker(rest) {
                // A lone `-` under a paragraph underlines it, `- - -` is a rule, and `- | -`
                // under a table's header is its delimiter row.
                let table = || scan::delimiter_row(rest).and_then(|c| self.table_header(c));
                if paragraph_goes_on
                    && (scan::setext_underline(rest).is_some() || table().is_some())
                    || scan::thematic_break(rest)
                {
                    break;
                }
                let empty = rest[marker.width..].trim_matches([' ', '\t']).is_empty();
                // An item interrupting a paragraph must say something, and a numbered one
                // must start at 1: "the year\n1984. was" is one paragraph.
                if paragraph_goes_on && (empty || marker.number.is_some_and(|n| n != 1)) {
                    break;
                }
                self.close_from(matched);
                let offset = line.indent();
                line.skip_indent();
                line.advance(marker.width);
                let spaces = line.indent();
                // Content indented five or more is code inside the item, one column in.
                let padding = if empty || spaces >= 5 {
                    line.skip_cols(1);
                    marker.width + 1
                } else {
                    line.skip_cols(spaces);
                    marker.width + spaces
                };
                self.open_item(&marker, offset + padding, empty);
            } else if let Some((label, len)) = scan::footnote_definition(rest) {
                let label = label.to_string();
                self.close_from(matched);
                line.skip_indent();
                line.advance(len);
                line.skip_indent();
                self.open(Open::Footnote, Container::Footnote(label));
            } else {
                break;
            }
            matched = self.open.len();
            opened = true;
        }
        (matched, opened)
    }

    /// What is left of a line once its containers are known.
    fn leaf_line(&mut self, line: &mut Line<'_>, matched: usize, opened: bool) {
        let indent = line.indent();
        let current = matched == self.open.len();
        let in_paragraph = matches!(self.leaf, Leaf::Paragraph { .. });
        let paragraph_goes_on = current && in_paragraph;
        let table_goes_on = current && matches!(self.leaf, Leaf::Table { .. });
        if indent <= 3 {
            let rest = line.after_indent();
            if let Some((level, text)) = scan::atx_heading(rest) {
                self.start_leaf(matched);
                self.events.push(Event::Heading(level, text.to_string()));
                return;
            }
            if let Some((mark, len)) = scan::code_fence(rest) {
                self.start_leaf(matched);
                self.leaf = Leaf::Fenced {
                    mark,
                    len,
                    indent,
                    text: String::new(),
                };
                return;
            }
            // A tag alone on its line opens an HTML block only where it interrupts nothing.
            let lone_tag = !(in_paragraph || table_goes_on);
            if let Some(end) = scan::html_block_start(rest, lone_tag) {
                self.start_leaf(matched);
                let content = line.content();
                let text = format!("{content}\n");
                self.leaf = Leaf::Html { end, text };
                if scan::ends_html_block(&content, end) {
                    self.close_leaf();
                }
                return;
            }
            if paragraph_goes_on {
                if let Some(level) = scan::setext_underline(rest) {
                    self.setext_heading(level, rest);
                    return;
                }
            }
            if scan::thematic_break(rest) {
                self.start_leaf(matched);
                return;
            }
            if paragraph_goes_on {
                if let Some(columns) = scan::delimiter_row(rest) {
                    if self.start_table(columns) {
                        return;
                    }
                }
            }
        }
        if table_goes_on {
            if self.table_row(line.after_indent()) {
                return;
            }
            self.close_leaf();
        }
        if indent >= 4 && !in_paragraph {
            self.start_leaf(matched);
            line.skip_cols(4);
            self.leaf = Leaf::Indented {
                text: format!("{}\n", line.content()),
                blanks: String::new(),
            };
            return;
        }
        let text = line.after_indent();
        // A line that opened no container goes on with the paragraph even where its
        // containers did not continue: "lazy" continuation, as in a quote whose later
        // lines lack their `>`.
        if !opened {
            if let Leaf::Paragraph {
                text: paragraph,
                last_line,
            } = &mut self.leaf
            {
                paragraph.push('\n');
                *last_line = paragraph.len();
                paragraph.push_str(text);
                return;
            }
        }
        self.start_leaf(matched);
        self.leaf = Leaf::Paragraph {
            text: text.to_string(),
            last_line: 0,
        };
    }

    /// Opens a container, unless as many as allowed are open: then its marker is dropped
    /// and its content joins the innermost container.
    fn open(&mut self, open: Open, container: Container) {
        self.close_lists_at_tip();
        if self.open.len() < MAX_NESTING {
            self.open.push(open);
            self.events.push(Event::Open(container));
        }
    }

    fn open_item(&mut self, marker: &scan::ListMarker, indent: usize, empty: bool) {
        let same_list =
            matches!(self.open.last(), Some(Open::List { kind }) if *kind == marker.kind);
        if !same_list {
            self.close_lists_at_tip();
            if self.open.len() + 2 > MAX_NESTING {
                return;
            }
            self.open.push(Open::List { kind: marker.kind });
            self.events
                .push(Event::Open(Container::List(marker.number)));
        } else if self.open.len() + 1 > MAX_NESTING {
            return;
        }
        self.open.push(Open::Item { indent, empty });
        self.events.push(Event::Open(Container::Item));
    }

    /// A list holds nothing but items: anything else ends it.
    fn close_lists_at_tip(&mut self) {
        while matches!(self.open.last(), Some(Open::List { .. })) {
            self.open.pop();
            self.events.push(Event::Close);
        }
    }

    /// Ends the leaf and every container past the first `depth`.
    fn close_from(&mut self, depth: usize) {
        self.close_leaf();
        while self.open.len() > depth {
            self.open.pop();
            self.events.push(Event::Close);
        }
    }

    /// Makes room for a new leaf inside the first `depth` containers.
    fn start_leaf(&mut self, depth: usize) {
        self.close_from(depth);
        self.close_lists_at_tip();
    }

    fn close_leaf(&mut self) {
        match std::mem::replace(&mut self.leaf, Leaf::None) {
            Leaf::None => {}
            Leaf::Paragraph { mut text, .. } => {
                let definitions = text.len() - self.take_definitions(&text).len();
                if definitions > 0 {
                    text.drain(..definitions);
                }
                if !text.trim().is_empty() {
                    self.events.push(Event::Paragraph(text));
                }
            }
            Leaf::Fenced { text, .. } | Leaf::Indented { text, .. } => {
                self.events.push(Event::Code(text));
            }
            Leaf::Html { text, .. } => self.events.push(Event::Html(text)),
            Leaf::Table { rows, .. } => self.events.push(Event::Table(rows)),
        }
    }

    /// A paragraph's leading reference definitions are not text: their labels are kept
    /// for the links that name them, and the rest is returned.
    fn take_definitions<'t>(&mut self, mut text: &'t str) -> &'t str {
        while text.starts_with('[') {
            let Some((label, len)) = links::definition(text) else {
                break;
            };
            self.labels.insert(label);
            text = &text[len..];
        }
        text
    }

    fn setext_heading(&mut self, level: u8, underline: &str) {
        let Leaf::Paragraph { text, .. } = std::mem::replace(&mut self.leaf, Leaf::None) else {
            return;
        };
        let rest = self.take_definitions(&text).trim_end().to_string();
        if !rest.is_empty() {
            self.events.push(Event::Heading(level, rest));
        } else if !scan::thematic_break(underline) {
            // Nothing but definitions above: the underline is text of its own.
            self.leaf = Leaf::Paragraph {
                text: underline.to_string(),
                last_line: 0,
            };
        }
    }

    /// The cells of the paragraph's line that heads a table, if its only line, or a last
    /// line starting with `|`, names as many columns as the delimiter row sets.
    fn table_header(&self, columns: usize) -> Option<Vec<String>> {
        let Leaf::Paragraph { text, last_line } = &self.leaf else {
            return None;
        };
        let header_line = &text[*last_line..];
        if *last_line > 0 && !header_line.starts_with('|') {
            return None;
        }
        let header: Vec<String> = scan::table_cells(header_line)
            .into_iter()
            .map(|c| c.into_owned())
            .collect();
        (header.len() == columns).then_some(header)
    }

    /// Turns the paragraph, or its last line, into a table's header.
    fn start_table(&mut self, columns: usize) -> bool {
        let Some(header) = self.table_header(columns) else {
            return false;
        };
        let Leaf::Paragraph { text, last_line } = &self.leaf else {
            return false;
        };
        // The lines above stay a paragraph (without the line break before the header).
        let above = text[..last_line.saturating_sub(1)].to_string();
        self.leaf = Leaf::Paragraph {
            text: above,
            last_line: 0,
        };
        self.close_leaf();
        self.leaf = Leaf::Table {
            columns,
            rows: vec![header],
        };
        true
    }

    /// Adds a row to the open table; false if the line is none (it holds no cell, or the
    /// table has filled as many empty cells as it may).
    fn table_row(&mut self, line: &str) -> bool {
        let Leaf::Table { columns, rows } = &mut self.leaf else {
            return false;
        };
        let mut row: Vec<String> = scan::table_cells(line)
            .into_iter()
            .take(*columns)
            .map(|c| c.into_owned())
            .collect();
        let missing = *columns - row.len();
        if row.is_empty() || self.filled_cells + missing > MAX_FILLED_CELLS {
            return false;
        }
        self.filled_cells += missing;
        row.resize(*columns, String::new());
        rows.push(row);
        true
    }
}
