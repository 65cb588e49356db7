//! From the tree to the document: which elements make headings, paragraphs, lists, quotes,
//! code, tables and definitions, and how inline text inside them is joined.
//!
//! Whitespace inside a block collapses as a browser shows it; `<br>` keeps its line break.
//! Headings, table cells and definitions are single lines, so whatever blocks they hold are
//! flattened into them. A table whose cells hold headings or other tables lays out the page
//! rather than holding data, so its cells are read as ordinary blocks.

use super::tags::Tag;
use super::tree::{Data, Dom, Drop, Elem, Node, NONE};
use crate::knowledge::extract::clean::is_invisible;
use crate::knowledge::extract::document::{
    Block, Cell, Code, Definition, List, Row, Table, MAX_NESTING,
};

struct ListState {
    ordered: bool,
    next: u64,
    /// Which list element this is, so that items only join the list block they belong to.
    id: usize,
}

/// A table row as found in the tree: its cells (node, is `<th>`, colspan), whether it sits
/// in `<thead>`, and whether it is cells that no `<tr>` wraps.
struct RawRow {
    cells: Vec<(u32, bool, u16)>,
    head: bool,
    loose: bool,
}

enum FrameKind {
    Root,
    Quote,
    Item {
        list: usize,
        ordered: bool,
        number: u64,
    },
}

/// A container being filled: the body, a quote or a list item.
struct Frame {
    kind: FrameKind,
    blocks: Vec<Block>,
    /// The list element that the trailing list block of `blocks` was made for, if the last
    /// block is one and the next item may join it.
    open_list: Option<usize>,
}

pub(super) struct Reader<'a> {
    nodes: &'a [Node],
    text: &'a str,
    lenient: bool,
    /// Inline text of the block being built, already whitespace-collapsed.
    buf: String,
    space: bool,
    /// A block boundary seen while flattening (inside a cell or heading).
    sep: bool,
    flat: u32,
    flat_sep: &'static str,
    pre: u32,
    frames: Vec<Frame>,
    lists: Vec<ListState>,
    list_ids: usize,
}

/// The blocks of the subtrees at `roots`; `lenient` keeps the content of `<form>`s.
pub(super) fn blocks(dom: &Dom, roots: &[u32], lenient: bool) -> Vec<Block> {
    let mut r = Reader::new(dom, lenient);
    for &root in roots {
        r.node(root);
        r.flush();
        if let Some(frame) = r.frames.last_mut() {
            frame.open_list = None;
        }
    }
    r.finish()
}

impl<'a> Reader<'a> {
    pub(super) fn new(dom: &'a Dom, lenient: bool) -> Reader<'a> {
        Reader {
            nodes: &dom.nodes,
            text: &dom.text,
            lenient,
            buf: String::new(),
            space: false,
            sep: false,
            flat: 0,
            flat_sep: " ",
            pre: 0,
            frames: vec![Frame {
                kind: FrameKind::Root,
                blocks: Vec::new(),
                open_list: None,
            }],
            lists: Vec::new(),
            list_ids: 0,
        }
    }

    fn finish(mut self) -> Vec<Block> {
        self.flush();
        while self.frames.len() > 1 {
            self.close_frame();
        }
        self.frames.pop().map(|f| f.blocks).unwrap_or_default()
    }

    fn get(&self, id: u32) -> Option<&'a Node> {
        self.nodes.get(id as usize)
    }

    fn elem_of(&self, id: u32) -> Option<&'a Elem> {
        match &self.get(id)?.data {
            Data::Elem(e) => Some(e),
            Data::Text(..) => None,
        }
    }

    fn first_child(&self, id: u32) -> u32 {
        self.get(id).map_or(NONE, |n| n.first)
    }

    fn next_sibling(&self, id: u32) -> u32 {
        self.get(id).map_or(NONE, |n| n.next)
    }

    fn skipped(&self, e: &Elem) -> bool {
        match e.drop {
            Drop::Always => true,
            Drop::Form => !self.lenient,
            Drop::Keep => false,
        }
    }

    // -- containers ------------------------------------------------------------------

    fn push_block(&mut self, block: Block) {
        if let Some(frame) = self.frames.last_mut() {
            frame.blocks.push(block);
            frame.open_list = None;
        }
    }

    /// Opens a quote or item; past the nesting bound its content joins the current
    /// container instead, and false says there is nothing to close.
    fn open_frame(&mut self, kind: FrameKind) -> bool {
        if self.frames.len() > MAX_NESTING {
            return false;
        }
        self.frames.push(Frame {
            kind,
            blocks: Vec::new(),
            open_list: None,
        });
        true
    }

    fn close_frame(&mut self) {
        if self.frames.len() <= 1 {
            return;
        }
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame.kind {
            FrameKind::Root => {}
            FrameKind::Quote => {
                if !frame.blocks.is_empty() {
                    self.push_block(Block::Quote(frame.blocks));
                }
            }
            // An empty item is kept: it still took its number.
            FrameKind::Item {
                list,
                ordered,
                number,
            } => {
                let Some(parent) = self.frames.last_mut() else {
                    return;
                };
                if parent.open_list == Some(list) {
                    if let Some(Block::List(open)) = parent.blocks.last_mut() {
                        open.items.push(frame.blocks);
                        return;
                    }
                }
                parent.blocks.push(Block::List(List {
                    start: ordered.then_some(number),
                    items: vec![frame.blocks],
                }));
                parent.open_list = Some(list);
            }
        }
    }

    // -- traversal -------------------------------------------------------------------

    fn children(&mut self, id: u32) {
        let mut c = self.first_child(id);
        while c != NONE {
            self.node(c);
            c = self.next_sibling(c);
        }
    }

    fn node(&mut self, id: u32) {
        let Some(node) = self.get(id) else { return };
        match &node.data {
            Data::Text(s, e) => {
                let text = self.text.get(*s as usize..*e as usize).unwrap_or_default();
                self.push_text(text);
            }
            Data::Elem(e) => self.elem(id, e),
        }
    }

    fn elem(&mut self, id: u32, e: &Elem) {
        if self.skipped(e) {
            return;
        }
        let tag = e.tag;
        if self.pre > 0 && self.flat == 0 {
            // Inside <pre> every element is inline; blocks only start a line.
            if tag == Tag::Br {
                self.buf.push('\n');
                return;
            }
            let block = tag.is_block();
            if block && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
            self.children(id);
            if block && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
            return;
        }
        match tag {
            Tag::Br => self.line_break(),
            Tag::H(level) => self.heading(id, level),
            Tag::Ul | Tag::Ol | Tag::Menu | Tag::Dir => self.list(id, e),
            Tag::Li => self.item(id),
            Tag::Dl => self.definitions(id),
            Tag::Table => self.table(id),
            Tag::Pre | Tag::Xmp | Tag::Listing | Tag::Plaintext => self.preformatted(id),
            Tag::Blockquote => self.quote(id),
            Tag::Head | Tag::Title | Tag::Img => {}
            _ if tag.is_block() => {
                self.boundary();
                self.children(id);
                self.boundary();
            }
            _ => self.children(id),
        }
    }

    // -- inline text -----------------------------------------------------------------

    fn push_text(&mut self, s: &str) {
        if self.pre > 0 && self.flat == 0 {
            for c in s.chars() {
                match c {
                    '\n' | '\t' => self.buf.push(c),
                    '\u{a0}' => self.buf.push(' '),
                    c if is_invisible(c) => {}
                    c => self.buf.push(c),
                }
            }
            return;
        }
        for c in s.chars() {
            if c.is_whitespace() {
                if !self.buf.is_empty() && !self.buf.ends_with('\n') {
                    self.space = true;
                }
                continue;
            }
            if is_invisible(c) {
                continue;
            }
            if self.sep {
                if !self.buf.is_empty() {
                    let sep = if self.buf.ends_with(['.', ',', ';', ':', '!', '?']) {
                        " "
                    } else {
                        self.flat_sep
                    };
                    self.buf.push_str(sep);
                }
                self.sep = false;
                self.space = false;
            } else if self.space {
                self.buf.push(' ');
                self.space = false;
            }
            self.buf.push(c);
        }
    }

    fn soft_break(&mut self) {
        if !self.buf.is_empty() {
            self.sep = true;
        }
    }

    fn boundary(&mut self) {
        if self.flat > 0 {
            self.soft_break();
        } else {
            self.flush();
        }
    }

    fn line_break(&mut self) {
        if self.flat > 0 {
            self.soft_break();
            return;
        }
        if !self.buf.is_empty() {
            self.buf.push('\n');
        }
        self.space = false;
    }

    /// Ends the paragraph being built: its lines trimmed, runs of blank lines kept as one.
    fn flush(&mut self) {
        self.space = false;
        self.sep = false;
        if self.buf.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.buf);
        let mut lines: Vec<&str> = Vec::new();
        let mut blank = false;
        for l in text.split('\n') {
            let l = l.trim();
            if l.is_empty() {
                blank = !lines.is_empty();
                continue;
            }
            if blank {
                lines.push("");
                blank = false;
            }
            lines.push(l);
        }
        if !lines.is_empty() {
            self.push_block(Block::Paragraph(lines.join("\n")));
        }
    }

    /// An element's content as one collapsed line: for headings, table cells and
    /// definitions, which must stay on a single line.
    pub(super) fn inline_text(&mut self, id: u32, sep: &'static str) -> String {
        let saved_buf = std::mem::take(&mut self.buf);
        let saved = (self.space, self.sep, self.flat_sep);
        self.space = false;
        self.sep = false;
        self.flat_sep = sep;
        self.flat += 1;
        self.children(id);
        self.flat -= 1;
        let got = std::mem::replace(&mut self.buf, saved_buf);
        (self.space, self.sep, self.flat_sep) = saved;
        got.trim().to_string()
    }

    fn flattened(&mut self, id: u32) {
        self.soft_break();
        self.children(id);
        self.soft_break();
    }

    // -- blocks ----------------------------------------------------------------------

    fn heading(&mut self, id: u32, level: u8) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let text = self.inline_text(id, " ");
        if !text.is_empty() {
            self.push_block(Block::Heading { level, text });
        }
    }

    fn list(&mut self, id: u32, e: &Elem) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        self.list_ids += 1;
        self.lists.push(ListState {
            ordered: e.tag == Tag::Ol,
            next: u64::from(e.start),
            id: self.list_ids,
        });
        self.children(id);
        self.flush();
        self.lists.pop();
    }

    fn item(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        // An item outside any list still reads as a bullet.
        let (list, ordered, number) = match self.lists.last_mut() {
            Some(l) => {
                let number = l.next;
                l.next = l.next.saturating_add(1);
                (l.id, l.ordered, number)
            }
            None => (0, false, 1),
        };
        let opened = self.open_frame(FrameKind::Item {
            list,
            ordered,
            number,
        });
        self.children(id);
        self.flush();
        if opened {
            self.close_frame();
        }
    }

    fn quote(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let opened = self.open_frame(FrameKind::Quote);
        self.children(id);
        self.flush();
        if opened {
            self.close_frame();
        }
    }

    fn preformatted(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        self.pre += 1;
        self.children(id);
        self.pre -= 1;
        let text = std::mem::take(&mut self.buf);
        let lines: Vec<&str> = text.split('\n').map(str::trim_end).collect();
        let first = lines.iter().position(|l| !l.is_empty());
        let last = lines.iter().rposition(|l| !l.is_empty());
        if let (Some(f), Some(l)) = (first, last) {
            // Fenced, so that a code line such as `# comment` never passes for a heading.
            self.push_block(Block::Code(Code {
                text: lines[f..=l].join("\n"),
                fenced: true,
            }));
        }
    }

    fn collect_defs(&self, id: u32, out: &mut Vec<(bool, u32)>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Dt => out.push((true, c)),
                        Tag::Dd => out.push((false, c)),
                        Tag::Dl => {}
                        _ => self.collect_defs(c, out),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    /// Each definition becomes one `Term: definition` line, so a term and its meaning never
    /// end up in different chunks. Terms listed together share each definition after them.
    fn definitions(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let mut entries = Vec::new();
        self.collect_defs(id, &mut entries);
        let mut defs = Vec::new();
        let mut terms: Vec<String> = Vec::new();
        let mut answered = false;
        for (is_term, node) in entries {
            if is_term {
                if answered {
                    terms.clear();
                    answered = false;
                }
                let t = self.inline_text(node, ", ");
                if !t.is_empty() {
                    terms.push(t);
                }
                continue;
            }
            let d = self.inline_text(node, ", ");
            if d.is_empty() {
                continue;
            }
            defs.push(Definition {
                terms: terms.clone(),
                details: Some(d),
            });
            answered = true;
        }
        if !answered && !terms.is_empty() {
            defs.push(Definition {
                terms,
                details: None,
            });
        }
        if !defs.is_empty() {
            self.push_block(Block::Definitions(defs));
        }
    }

    fn collect_rows(&self, id: u32, head: bool, rows: &mut Vec<RawRow>, caption: &mut Option<u32>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Tr => {
                            let mut cells = Vec::new();
                            self.collect_cells(c, &mut cells);
                            rows.push(RawRow {
                                cells,
                                head,
                                loose: false,
                            });
                        }
                        Tag::Thead => self.collect_rows(c, true, rows, caption),
                        Tag::Tbody | Tag::Tfoot => self.collect_rows(c, false, rows, caption),
                        Tag::Td | Tag::Th => {
                            let cell = (c, e.tag == Tag::Th, e.span);
                            match rows.last_mut() {
                                Some(r) if r.loose => r.cells.push(cell),
                                _ => rows.push(RawRow {
                                    cells: vec![cell],
                                    head,
                                    loose: true,
                                }),
                            }
                        }
                        Tag::Caption => {
                            if caption.is_none() {
                                *caption = Some(c);
                            }
                        }
                        Tag::Table | Tag::Colgroup | Tag::Col => {}
                        _ => self.collect_rows(c, head, rows, caption),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    fn collect_cells(&self, id: u32, cells: &mut Vec<(u32, bool, u16)>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Td | Tag::Th => cells.push((c, e.tag == Tag::Th, e.span)),
                        Tag::Table | Tag::Tr => {}
                        _ => self.collect_cells(c, cells),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    /// A cell holding a nested table or a heading means the table lays out the page rather
    /// than holding data. Nested tables are not entered, so each node is looked at by one
    /// table only.
    fn has_structure(&self, id: u32) -> bool {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e)
                    && (matches!(e.tag, Tag::Table | Tag::H(_)) || self.has_structure(c))
                {
                    return true;
                }
            }
            c = self.next_sibling(c);
        }
        false
    }

    fn table(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let mut rows = Vec::new();
        let mut caption = None;
        self.collect_rows(id, false, &mut rows, &mut caption);
        if let Some(cap) = caption {
            let text = self.inline_text(cap, ", ");
            if !text.is_empty() {
                self.push_block(Block::Paragraph(text));
            }
        }
        let widest = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
        let layout = widest <= 1
            || rows
                .iter()
                .any(|r| r.cells.iter().any(|&(c, _, _)| self.has_structure(c)));
        if layout {
            for row in &rows {
                for &(cell, _, _) in &row.cells {
                    self.flush();
                    self.children(cell);
                    self.flush();
                }
            }
            return;
        }
        let mut table = Table::default();
        for row in &rows {
            let cells: Vec<Cell> = row
                .cells
                .iter()
                .map(|&(c, th, span)| Cell {
                    text: self.inline_text(c, ", "),
                    span: u32::from(span.max(1)),
                    label: th,
                })
                .collect();
            // A row of `<th>` only names the columns, as a `<thead>` row does; one cell
            // alone is a title, not column names.
            let header = (row.head || cells.iter().all(|c| c.label)) && cells.len() >= 2;
            table.rows.push(Row { header, cells });
        }
        self.push_block(Block::Table(table));
    }
}
