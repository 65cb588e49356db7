//! The typed document every reader produces and everything downstream consumes.
//!
//! A reader says what the source holds (a heading, a list, a table with or without header
//! cells) and nothing about how it will be written; [`super::render()`] alone decides the
//! indexed text and the chunker reads the same blocks, so a table reads the same whichever
//! format it came from.

/// How deep quotes and list items may nest. Readers flatten anything deeper into the
/// innermost allowed level, so that rendering, chunking and dropping a document never
/// recurse further than this whatever the input holds.
pub const MAX_NESTING: usize = 64;

/// A document: its title when the source names one, and its blocks in reading order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Document {
    pub title: Option<String>,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Levels run from 1 to 6; the text is a single line.
    Heading {
        level: u8,
        text: String,
    },
    /// Running text. A `\n` inside is a line break the source meant (a `<br>`, an address,
    /// a line of a plain-text file); an empty line inside is a blank line it kept.
    Paragraph(String),
    List(List),
    Table(Table),
    /// Term and definition pairs (an HTML `<dl>`).
    Definitions(Vec<Definition>),
    Code(Code),
    Quote(Vec<Block>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct List {
    /// The number of the first item, for a numbered list; `None` for bullets.
    pub start: Option<u64>,
    /// Each item's own blocks: its text, and any list, table or code nested in it. An item
    /// may be empty; it still takes its number.
    pub items: Vec<Vec<Block>>,
}

/// Rows in source order. A row of header cells gives the columns their names for the rows
/// after it; a table none of whose rows is a header simply has no header.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub rows: Vec<Row>,
}

/// The most cells a table read from a file may have. Each is a string of its own: a file of
/// short cells holds several times its size in memory, and a step reading it must stay well
/// inside a Worker's 128 MB (measured: see `ingest::MAX_RENDERED_BYTES`).
pub const MAX_TABLE_CELLS: usize = 500_000;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// The cells name the columns (an HTML header row, a Markdown table's first line, the
    /// first line of a CSV file that reads as titles, a Word row marked to repeat as header).
    pub header: bool,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// One line of text.
    pub text: String,
    /// How many columns the cell covers (an HTML `colspan`); at least 1.
    pub span: u32,
    /// A header cell inside a data row (an HTML `<th>` that labels its row, as in an infobox).
    pub label: bool,
}

impl Cell {
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            span: 1,
            label: false,
        }
    }
}

impl Row {
    /// A data row of plain cells.
    pub fn data<S: Into<String>>(cells: impl IntoIterator<Item = S>) -> Row {
        Row {
            header: false,
            cells: cells.into_iter().map(Cell::new).collect(),
        }
    }

    /// A row of column names.
    pub fn header<S: Into<String>>(cells: impl IntoIterator<Item = S>) -> Row {
        Row {
            header: true,
            ..Row::data(cells)
        }
    }

    pub fn is_blank(&self) -> bool {
        self.cells.iter().all(|c| c.text.trim().is_empty())
    }
}

impl Table {
    /// Whether some row names the columns.
    pub fn has_header(&self) -> bool {
        self.rows.iter().any(|r| r.header && !r.is_blank())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// The terms, several when a `<dl>` lists synonyms before one definition; may be empty.
    pub terms: Vec<String>,
    /// `None` for terms that no definition follows.
    pub details: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    /// The lines of code, indentation kept.
    pub text: String,
    /// Whether the indexed text wraps the code in ``` lines. HTML `<pre>` always has been;
    /// Markdown code blocks have always been indexed bare; plain text keeps its own fence
    /// lines, as written, inside the text.
    pub fenced: bool,
}

impl Document {
    /// Whether the document holds no readable text at all.
    pub fn is_blank(&self) -> bool {
        self.blocks.iter().all(Block::is_blank)
    }
}

/// The text of the first heading among `blocks`: the title of a document whose properties
/// name none.
pub(crate) fn first_heading(blocks: &[Block]) -> Option<String> {
    blocks.iter().find_map(|b| match b {
        Block::Heading { text, .. } => Some(text.clone()),
        _ => None,
    })
}

impl Block {
    pub fn is_blank(&self) -> bool {
        match self {
            Block::Heading { text, .. } | Block::Paragraph(text) => text.trim().is_empty(),
            Block::Code(code) => code.text.trim().is_empty(),
            Block::List(list) => list.items.iter().flatten().all(Block::is_blank),
            Block::Table(table) => table.rows.iter().all(Row::is_blank),
            Block::Definitions(defs) => defs.iter().all(|d| {
                d.terms.iter().all(|t| t.trim().is_empty())
                    && d.details.as_deref().is_none_or(|t| t.trim().is_empty())
            }),
            Block::Quote(blocks) => blocks.iter().all(Block::is_blank),
        }
    }
}

/// Appends blocks the way the layout-driven formats (PDF, DOCX) find them, one at a time:
/// an item right after a bulleted list joins it, a row right after a table joins it.
pub(crate) trait PushFlat {
    fn push_item(&mut self, text: String);
    fn push_row(&mut self, row: Row);
}

impl PushFlat for Vec<Block> {
    fn push_item(&mut self, text: String) {
        let item = vec![Block::Paragraph(text)];
        match self.last_mut() {
            Some(Block::List(list)) if list.start.is_none() => list.items.push(item),
            _ => self.push(Block::List(List {
                start: None,
                items: vec![item],
            })),
        }
    }

    fn push_row(&mut self, row: Row) {
        match self.last_mut() {
            Some(Block::Table(table)) => table.rows.push(row),
            _ => self.push(Block::Table(Table { rows: vec![row] })),
        }
    }
}
