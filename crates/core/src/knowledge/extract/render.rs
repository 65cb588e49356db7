//! The one writer of indexed text: a [`Document`] becomes the light markdown that is stored,
//! counted and shown in citations.
//!
//! * a heading is a line `# text` … `###### text`, always at the left margin;
//! * paragraphs are separated by one blank line;
//! * list items are lines starting with `- ` or `1. `; an item's further lines and nested
//!   items are indented by the width of its marker, as in Markdown;
//! * a quote's lines start with `> `;
//! * a table row is one line, definitions are `Term: definition` lines, and the lines of a
//!   table, a list or a definition list follow each other without a blank line;
//! * code keeps its lines, wrapped in ``` lines when the reader asked for it.
//!
//! The output never has trailing spaces, two blank lines in a row, or blank lines at
//! either end.
//!
//! # Tables
//!
//! When a table has a header row, each data row is written as
//! `Header: value; Header2: value`. Retrieval works on chunks, and a chunk often starts in
//! the middle of a table: a row written as `Ada | 1815 | London` means nothing once its
//! header row is in another chunk, while `Name: Ada; Born: 1815; City: London` still
//! answers "when was Ada born" on its own. The cost is repeating the header words on every
//! row, which is small next to losing the meaning of the row. A table without a header keeps
//! the plain `cell | cell | cell` form, since there is nothing to repeat. Every format's
//! tables go through the same code here, so they all read alike.

use super::document::{Block, Code, Definition, Document, List, Row, Table, MAX_NESTING};
use std::borrow::Cow;
use std::ops::Range;

/// The indexed text of `doc`.
pub fn render(doc: &Document) -> String {
    let mut w = Writer::new(false, text_bytes(&doc.blocks, 0));
    w.blocks(&doc.blocks, 0);
    w.out
}

/// The indexed text of `doc` and where each of its pieces landed in it, in order.
pub fn render_outline(doc: &Document) -> (String, Vec<Placed<'_>>) {
    let mut w = Writer::new(true, text_bytes(&doc.blocks, 0));
    w.outline.reserve(doc.blocks.len());
    w.blocks(&doc.blocks, 0);
    (w.out, w.outline)
}

/// About how long the rendered text of `blocks` is, a little over rather than under: the
/// text is reserved at once, since a string grown by doubling holds its old and new buffers at
/// once, which at the largest upload is a good part of a Worker's memory.
fn text_bytes(blocks: &[Block], depth: usize) -> usize {
    if depth > MAX_NESTING {
        return 0;
    }
    blocks
        .iter()
        .map(|b| {
            4 + match b {
                Block::Heading { text, .. } | Block::Paragraph(text) => text.len() + 8,
                Block::Code(code) => code.text.len() + 8,
                Block::List(list) => list
                    .items
                    .iter()
                    .map(|item| 8 + text_bytes(item, depth + 1))
                    .sum(),
                Block::Quote(inner) => text_bytes(inner, depth + 1) * 9 / 8,
                Block::Table(table) => table_bytes(table),
                Block::Definitions(defs) => defs
                    .iter()
                    .map(|d| {
                        d.terms.iter().map(|t| t.len() + 2).sum::<usize>()
                            + d.details.as_ref().map_or(0, String::len)
                            + 4
                    })
                    .sum(),
            }
        })
        .sum()
}

/// About how long a table is once written: a header's titles are written again beside each
/// value of the rows under it (`keyed_row`), which for short values and long titles is many
/// times the cells' own text.
fn table_bytes(table: &Table) -> usize {
    let mut titles: Vec<usize> = Vec::new();
    let mut total = 0;
    for row in &table.rows {
        if row.header && !row.is_blank() {
            titles = row.cells.iter().map(|c| c.text.len()).collect();
            total += titles.iter().map(|t| t + 4).sum::<usize>();
            continue;
        }
        let longest = titles.iter().copied().max().unwrap_or(0);
        total += row
            .cells
            .iter()
            .enumerate()
            .map(|(col, c)| c.text.len() + 4 + titles.get(col).copied().unwrap_or(longest))
            .sum::<usize>();
    }
    total
}

/// How many bytes `doc`'s indexed text takes, a little over rather than under: read before
/// the text is written, to refuse a document too large to write.
pub fn rendered_bytes(doc: &Document) -> usize {
    text_bytes(&doc.blocks, 0)
}

/// One piece of rendered text: a heading line, a paragraph, a code block, one table row
/// or one definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed<'a> {
    /// Byte range in the rendered text, including any quote or list prefixes.
    pub range: Range<usize>,
    pub what: Placement<'a>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Placement<'a> {
    Heading {
        level: u8,
        /// The heading's text, without the `#` marks.
        title: Range<usize>,
    },
    /// A paragraph. `item` numbers (in rendering order) the list item it belongs to when it
    /// is that item's own text, so that an item's paragraphs can be kept together.
    Text {
        item: Option<usize>,
    },
    Code,
    /// One definition; `list` numbers the definition lists in rendering order.
    Definition {
        list: usize,
    },
    Row {
        /// Numbers the tables in rendering order.
        table: usize,
        block: &'a Table,
        row: &'a Row,
    },
}

enum Ctx {
    Quote,
    Item {
        marker: String,
        used: bool,
        id: usize,
    },
}

struct Writer<'a> {
    out: String,
    ctx: Vec<Ctx>,
    /// The last thing written was a list item, table row or definition (or anything inside
    /// an item): the next such line follows it without a blank line.
    last_tight: bool,
    record: bool,
    outline: Vec<Placed<'a>>,
    items: usize,
    tables: usize,
    definition_lists: usize,
}

impl<'a> Writer<'a> {
    fn new(record: bool, capacity: usize) -> Writer<'a> {
        Writer {
            out: String::with_capacity(capacity),
            ctx: Vec::new(),
            last_tight: false,
            record,
            outline: Vec::new(),
            items: 0,
            tables: 0,
            definition_lists: 0,
        }
    }

    fn in_item(&self) -> bool {
        self.ctx.iter().any(|c| matches!(c, Ctx::Item { .. }))
    }

    fn place(&mut self, range: Range<usize>, what: Placement<'a>) {
        if self.record {
            self.outline.push(Placed { range, what });
        }
    }

    fn blocks(&mut self, blocks: &'a [Block], depth: usize) {
        for block in blocks {
            self.block(block, depth);
        }
    }

    fn block(&mut self, block: &'a Block, depth: usize) {
        match block {
            Block::Heading { level, text } => self.heading(*level, text),
            Block::Paragraph(text) => self.paragraph(text),
            Block::Code(code) => self.code(code),
            Block::List(list) => self.list(list, depth),
            Block::Quote(blocks) => {
                // Readers keep nesting within bounds; past it, content is kept unquoted
                // rather than recursing further.
                let nest = depth < MAX_NESTING;
                if nest {
                    self.ctx.push(Ctx::Quote);
                }
                self.blocks(blocks, depth + 1);
                if nest {
                    self.ctx.pop();
                }
            }
            Block::Table(table) => self.table(table),
            Block::Definitions(defs) => self.definitions(defs),
        }
    }

    fn prefix(&self, first: bool) -> String {
        let innermost = self.ctx.iter().rposition(|c| matches!(c, Ctx::Item { .. }));
        let mut p = String::new();
        for (i, c) in self.ctx.iter().enumerate() {
            match c {
                Ctx::Quote => p.push_str("> "),
                Ctx::Item { marker, used, .. } => {
                    if first && !used && Some(i) == innermost {
                        p.push_str(marker);
                    } else {
                        p.extend(std::iter::repeat_n(' ', marker.chars().count()));
                    }
                }
            }
        }
        p
    }

    /// Writes finished lines (none blank at either end) and returns where they went.
    fn emit(&mut self, lines: &[&str], tight: bool) -> Option<Range<usize>> {
        if lines.is_empty() {
            return None;
        }
        if !self.out.is_empty() {
            self.out.push_str(if tight && self.last_tight {
                "\n"
            } else {
                "\n\n"
            });
        }
        let start = self.out.len();
        let mut prev_blank = false;
        for (k, line) in lines.iter().enumerate() {
            let line = line.trim_end();
            let p = self.prefix(k == 0);
            let blank = line.is_empty() && p.trim().is_empty();
            if blank && prev_blank {
                continue;
            }
            if k > 0 {
                self.out.push('\n');
            }
            if line.is_empty() {
                self.out.push_str(p.trim_end());
            } else {
                self.out.push_str(&p);
                self.out.push_str(line);
            }
            prev_blank = blank;
        }
        for c in &mut self.ctx {
            if let Ctx::Item { used, .. } = c {
                *used = true;
            }
        }
        self.last_tight = tight;
        Some(start..self.out.len())
    }

    fn heading(&mut self, level: u8, text: &str) {
        let text = one_line(text);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push_str("\n\n");
        }
        let start = self.out.len();
        let level = level.clamp(1, 6);
        for _ in 0..level {
            self.out.push('#');
        }
        self.out.push(' ');
        let title = self.out.len();
        self.out.push_str(text);
        self.last_tight = false;
        let end = self.out.len();
        self.place(
            start..end,
            Placement::Heading {
                level,
                title: title..end,
            },
        );
    }

    fn paragraph(&mut self, text: &str) {
        let lines = trimmed_lines(text);
        let tight = self.in_item();
        let item = match self.ctx.last() {
            Some(Ctx::Item { id, .. }) => Some(*id),
            _ => None,
        };
        if let Some(range) = self.emit(&lines, tight) {
            self.place(range, Placement::Text { item });
        }
    }

    fn code(&mut self, code: &Code) {
        let mut lines = trimmed_lines(&code.text);
        if lines.is_empty() {
            return;
        }
        if code.fenced {
            lines.insert(0, "```");
            lines.push("```");
        }
        let tight = self.in_item();
        if let Some(range) = self.emit(&lines, tight) {
            self.place(range, Placement::Code);
        }
    }

    fn list(&mut self, list: &'a List, depth: usize) {
        let nest = depth < MAX_NESTING;
        for (i, item) in list.items.iter().enumerate() {
            let marker = match list.start {
                Some(n) => format!("{}. ", n.saturating_add(i as u64)),
                None => "- ".to_string(),
            };
            let id = self.items;
            self.items += 1;
            if nest {
                self.ctx.push(Ctx::Item {
                    marker,
                    used: false,
                    id,
                });
            }
            self.blocks(item, depth + 1);
            if nest {
                self.ctx.pop();
            }
        }
        if !self.in_item() {
            self.last_tight = false;
        }
    }

    fn table(&mut self, table: &'a Table) {
        let id = self.tables;
        self.tables += 1;
        for (line, row) in table_lines(table) {
            if let Some(range) = self.emit(&[line.as_str()], true) {
                self.place(
                    range,
                    Placement::Row {
                        table: id,
                        block: table,
                        row,
                    },
                );
            }
        }
        if !self.in_item() {
            self.last_tight = false;
        }
    }

    fn definitions(&mut self, defs: &[Definition]) {
        let list = self.definition_lists;
        self.definition_lists += 1;
        for def in defs {
            let line = definition_line(def);
            if line.is_empty() {
                continue;
            }
            if let Some(range) = self.emit(&[line.as_str()], true) {
                self.place(range, Placement::Definition { list });
            }
        }
        if !self.in_item() {
            self.last_tight = false;
        }
    }
}

/// A cell or heading is one line; a stray line break from a reader must not split it.
fn one_line(s: &str) -> Cow<'_, str> {
    if s.contains('\n') {
        Cow::Owned(s.replace('\n', " "))
    } else {
        Cow::Borrowed(s)
    }
}

/// The lines of a paragraph or code block without trailing spaces and without blank lines
/// at either end.
fn trimmed_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.split('\n').map(str::trim_end).collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    match (first, last) {
        (Some(f), Some(l)) => lines[f..=l].to_vec(),
        _ => Vec::new(),
    }
}

fn definition_line(def: &Definition) -> String {
    let terms: Vec<Cow<str>> = def
        .terms
        .iter()
        .map(|t| one_line(t.trim()))
        .filter(|t| !t.is_empty())
        .collect();
    let terms = terms.join(" / ");
    match def
        .details
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        Some(d) if terms.is_empty() => one_line(d).into_owned(),
        Some(d) => format!("{terms}: {}", one_line(d)),
        None => terms,
    }
}

/// One table row in the `Header: value; Header2: value` form described in the module docs.
/// `cells` carries each value's column so that spanning cells land under the right header.
pub(crate) fn keyed_row(headers: &[String], cells: &[(usize, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for &(col, value) in cells {
        if value.is_empty() {
            continue;
        }
        match headers.get(col) {
            Some(h) if !h.is_empty() && h != value => parts.push(format!("{h}: {value}")),
            _ => parts.push(value.to_string()),
        }
    }
    parts.join("; ")
}

/// A row without column names: an empty cell between two others keeps its place (else
/// "Tea | 3.00" would put a Large price under Small); those at either end are left off.
fn plain_row<'s>(cells: impl Iterator<Item = &'s str>) -> String {
    let cells: Vec<&str> = cells.collect();
    let first = cells
        .iter()
        .position(|c| !c.is_empty())
        .unwrap_or(cells.len());
    let end = cells
        .iter()
        .rposition(|c| !c.is_empty())
        .map_or(first, |i| i + 1);
    cells[first..end].join(" | ")
}

const MAX_HEADER_SPAN: u32 = 1000;

/// The lines a table is written as, each with the row it came from. A header row is only
/// written itself when no data row used it (a table that is all header).
fn table_lines(table: &Table) -> Vec<(String, &Row)> {
    let mut lines = Vec::new();
    let mut header: Option<Vec<String>> = None;
    let mut unused_header: Option<(String, &Row)> = None;
    for row in &table.rows {
        let cells: Vec<(Cow<str>, bool, u32)> = row
            .cells
            .iter()
            .map(|c| (one_line(c.text.trim()), c.label, c.span.max(1)))
            .collect();
        if cells.iter().all(|c| c.0.is_empty()) {
            continue;
        }
        if row.header {
            if let Some(h) = unused_header.take() {
                lines.push(h);
            }
            let mut cols = Vec::new();
            for (text, _, span) in &cells {
                // No real header cell spans more columns than this; the bound keeps a
                // forged span from filling memory.
                for _ in 0..(*span).min(MAX_HEADER_SPAN) {
                    cols.push(text.to_string());
                }
            }
            unused_header = Some((plain_row(cells.iter().map(|c| c.0.as_ref())), row));
            header = Some(cols);
            continue;
        }
        unused_header = None;
        let line = match &header {
            // A single cell across the whole table labels the rows below it.
            Some(h) if cells.len() == 1 && cells[0].2 > 1 && cells[0].2 as usize >= h.len() => {
                cells[0].0.to_string()
            }
            Some(h) => {
                let mut col = 0usize;
                let mut placed = Vec::with_capacity(cells.len());
                for (text, _, span) in &cells {
                    placed.push((col, text.as_ref()));
                    col = col.saturating_add(*span as usize);
                }
                keyed_row(h, &placed)
            }
            None => {
                // A row that starts with a header cell (an infobox) reads as `Label: value`.
                if cells.len() >= 2
                    && cells[0].1
                    && !cells[0].0.is_empty()
                    && !cells[1..].iter().any(|c| c.1)
                {
                    let rest = plain_row(cells[1..].iter().map(|c| c.0.as_ref()));
                    if rest.is_empty() {
                        cells[0].0.to_string()
                    } else {
                        format!("{}: {}", cells[0].0, rest)
                    }
                } else {
                    plain_row(cells.iter().map(|c| c.0.as_ref()))
                }
            }
        };
        if !line.is_empty() {
            lines.push((line, row));
        }
    }
    if let Some(h) = unused_header {
        lines.push(h);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_rows_skip_empty_and_redundant_labels() {
        let headers = vec!["Name".to_string(), String::new(), "City".to_string()];
        let cells = [(0, "Ada"), (1, "x"), (2, ""), (3, "extra")];
        assert_eq!(keyed_row(&headers, &cells), "Name: Ada; x; extra");
        assert_eq!(keyed_row(&["Yes".to_string()], &[(0, "Yes")]), "Yes");
    }
}
