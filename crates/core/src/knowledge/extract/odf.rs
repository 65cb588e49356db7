//! OpenDocument (LibreOffice's and many administrations' format): text documents (`.odt`),
//! spreadsheets (`.ods`) and presentations (`.odp`), all a ZIP package whose `content.xml`
//! holds the body. Headings keep their outline level, list paragraphs become items, tables
//! keep their rows (a text table's header rows name its columns; a sheet's first row does
//! when it reads like titles, as a CSV file's does), each sheet is a section named after it
//! and each slide a section titled by its title (else "Slide N"), its speaker notes after it.
//!
//! Left out: tracked deletions, comments, footnotes, generated indexes and tables of
//! contents (they repeat the headings), images' titles and descriptions, and slide numbers,
//! dates and footers.

use super::binary::{too_much_cell_text, Budget, CELL_COST, CELL_TEXT_BUDGET, MAX_SHEET_COLUMNS};
use super::clean::squeeze_lines as tidy;
use super::document::{first_heading, Block, Cell, Document, PushFlat, Row, Table};
use super::office::xml::{attr, Ev, Reader};
use super::office::{push_sheet, title_in, Package, Role};
use super::ExtractError;

/// How many times a repeated row with text is read; empty repeats (a sheet's million
/// trailing rows) are not read at all.
const MAX_ROW_REPEAT: usize = 100;

/// Reads an OpenDocument text, spreadsheet or presentation.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
    let package = Package::open(bytes, "OpenDocument file")?;
    let content = package.text("content.xml")?.ok_or_else(|| {
        ExtractError("the file is not an OpenDocument file: it has no content.xml".into())
    })?;
    let blocks = body_blocks(&content, &Budget::new(CELL_TEXT_BUDGET))?;
    let title = package
        .optional_text("meta.xml")
        .and_then(|meta| title_in(&meta))
        .or_else(|| first_heading(&blocks));
    Ok(Document { title, blocks })
}

/// Elements whose content is not read.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "tracked-changes"
            | "annotation"
            | "note"
            | "table-of-content"
            | "alphabetical-index"
            | "illustration-index"
            | "table-index"
            | "object-index"
            | "user-index"
            | "bibliography"
            // An image's title and description (`svg:title`, `svg:desc`), when it is
            // anchored inside a paragraph, would otherwise run into its text.
            | "title"
            | "desc"
    )
}

#[derive(Default)]
struct TableReading {
    name: String,
    rows: Vec<Row>,
    row: Row,
    row_repeat: usize,
    cell: String,
    cell_repeat: usize,
    in_header: bool,
}

fn repeat_of(attrs: &str, name: &str) -> usize {
    attr(attrs, name)
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1)
}

/// The body's blocks; an error once its tables' cells, repeats written out, hold more text
/// than `cell_text` allows.
fn body_blocks(xml: &str, cell_text: &Budget) -> Result<Vec<Block>, ExtractError> {
    let mut blocks: Vec<Block> = Vec::new();
    // Open paragraphs and headings (a text box may sit inside a paragraph), with the
    // heading's level.
    let mut open: Vec<(String, Option<u8>)> = Vec::new();
    let mut list_depth = 0usize;
    let mut table_depth = 0usize;
    let mut table = TableReading::default();
    // Whether the body is a spreadsheet's, whose tables are sheets.
    let mut spreadsheet = false;
    let mut role = Role::Text;
    let mut in_notes = false;
    // The slide being read: where its blocks start, its number and its title.
    let mut slide: Option<(usize, usize, Option<String>)> = None;
    let mut slides = 0usize;
    for ev in Reader::new(xml).skipping(skipped) {
        match ev {
            Ev::Start("spreadsheet", _, false) => spreadsheet = true,
            Ev::Start("page", _, false) => {
                slides += 1;
                slide = Some((blocks.len(), slides, None));
            }
            Ev::Start("notes", _, false) => in_notes = true,
            Ev::End("notes") => in_notes = false,
            // A frame's paragraphs are what its `presentation:class` says.
            Ev::Start("frame", a, _) => {
                role = match (in_notes, attr(a, "class").as_deref()) {
                    (true, Some("notes")) => Role::Text,
                    (true, _) => Role::Skipped,
                    (false, Some("title")) => Role::Title,
                    (false, Some("outline")) => Role::Points,
                    (false, Some("page-number" | "date-time" | "footer" | "header")) => {
                        Role::Skipped
                    }
                    _ => Role::Text,
                }
            }
            Ev::End("frame") => role = Role::Text,
            Ev::Start("list", _, false) => list_depth += 1,
            Ev::End("list") => list_depth = list_depth.saturating_sub(1),
            Ev::Start("p", _, false) => open.push((String::new(), None)),
            Ev::Start("h", a, false) => {
                let level = attr(a, "outline-level")
                    .and_then(|l| l.parse::<u8>().ok())
                    .unwrap_or(1);
                open.push((String::new(), Some(level.clamp(1, 6))));
            }
            Ev::Text(t) => {
                if let Some((text, _)) = open.last_mut() {
                    text.push_str(&t);
                }
            }
            Ev::Start(name @ ("s" | "tab" | "line-break"), a, _) => {
                if let Some((text, _)) = open.last_mut() {
                    match name {
                        "s" => text.extend(std::iter::repeat_n(' ', repeat_of(a, "c").min(64))),
                        "tab" => text.push('\t'),
                        _ => text.push('\n'),
                    }
                }
            }
            Ev::End("p" | "h") => {
                let Some((text, level)) = open.pop() else {
                    continue;
                };
                let text = tidy(&text);
                if text.is_empty() {
                    continue;
                }
                if table_depth > 0 {
                    if !table.cell.is_empty() {
                        table.cell.push(' ');
                    }
                    table.cell.push_str(&text.replace('\n', " "));
                    continue;
                }
                match (role, slide.as_mut(), level) {
                    (Role::Skipped, _, _) => {}
                    (Role::Title, Some((_, _, title)), _) => {
                        let title = title.get_or_insert_with(String::new);
                        if !title.is_empty() {
                            title.push(' ');
                        }
                        title.push_str(&text.replace('\n', " "));
                    }
                    (_, _, Some(level)) => blocks.push(Block::Heading {
                        level,
                        text: text.replace('\n', " "),
                    }),
                    _ if list_depth > 0 || role == Role::Points => {
                        blocks.push_item(text.replace('\n', " "))
                    }
                    _ => blocks.push(Block::Paragraph(text)),
                }
            }
            Ev::Start("table", a, false) => {
                table_depth += 1;
                if table_depth == 1 {
                    table = TableReading {
                        name: attr(a, "name").unwrap_or_default().into_owned(),
                        ..TableReading::default()
                    };
                }
            }
            Ev::Start("table-header-rows", _, false) if table_depth == 1 => table.in_header = true,
            Ev::End("table-header-rows") if table_depth == 1 => table.in_header = false,
            Ev::Start("table-row", a, _) if table_depth == 1 => {
                table.row = Row {
                    header: table.in_header,
                    cells: Vec::new(),
                };
                table.row_repeat = repeat_of(a, "number-rows-repeated");
            }
            Ev::Start("table-cell" | "covered-table-cell", a, empty) if table_depth == 1 => {
                table.cell.clear();
                table.cell_repeat = repeat_of(a, "number-columns-repeated");
                if empty {
                    push_cells(&mut table, cell_text)?;
                }
            }
            Ev::End("table-cell" | "covered-table-cell") if table_depth == 1 => {
                push_cells(&mut table, cell_text)?
            }
            Ev::End("table-row") if table_depth == 1 => {
                let mut row = std::mem::take(&mut table.row);
                while row.cells.last().is_some_and(|c| c.text.is_empty()) {
                    row.cells.pop();
                }
                if !row.is_blank() {
                    let size: usize = row.cells.iter().map(|c| c.text.len()).sum();
                    let repeat = if size > MAX_REPEATED_TEXT * 16 {
                        1
                    } else {
                        table.row_repeat.min(MAX_ROW_REPEAT)
                    };
                    let cost = size + row.cells.len() * CELL_COST;
                    if !cell_text.take(cost.saturating_mul(repeat - 1)) {
                        return Err(too_much_cell_text());
                    }
                    for _ in 1..repeat {
                        table.rows.push(row.clone());
                    }
                    table.rows.push(row);
                }
            }
            Ev::End("table") => {
                table_depth = table_depth.saturating_sub(1);
                if table_depth == 0 {
                    let done = std::mem::take(&mut table);
                    finish_table(done, spreadsheet, &mut blocks);
                }
            }
            Ev::End("page") => {
                if let Some((start, number, title)) = slide.take() {
                    let text = title.unwrap_or_else(|| format!("Slide {number}"));
                    blocks.insert(start, Block::Heading { level: 1, text });
                }
            }
            _ => {}
        }
    }
    Ok(blocks)
}

/// Longer text than this is read once, whatever its repeat count: a repeat is a way to store
/// many equal short values, and copying a long text thousands of times would take memory
/// the Worker does not have.
const MAX_REPEATED_TEXT: usize = 256;

/// The cell just read, as many times as it repeats, within the columns read; an error once
/// the cells' text is over its budget.
fn push_cells(table: &mut TableReading, cell_text: &Budget) -> Result<(), ExtractError> {
    let text = std::mem::take(&mut table.cell);
    let room = MAX_SHEET_COLUMNS.saturating_sub(table.row.cells.len());
    let repeat = table.cell_repeat.min(room);
    // A long text keeps its column; the repeats after it stay empty. Empty cells repeated
    // past the last filled one are trimmed with the row.
    let copies = if text.len() > MAX_REPEATED_TEXT {
        1
    } else {
        repeat
    };
    let empty = repeat.saturating_sub(copies.max(1));
    let cost = (text.len() + CELL_COST)
        .saturating_mul(copies)
        .saturating_add(empty.saturating_mul(CELL_COST));
    if !cell_text.take(cost) {
        return Err(too_much_cell_text());
    }
    for _ in 1..copies {
        table.row.cells.push(Cell::new(text.clone()));
    }
    if repeat > 0 {
        table.row.cells.push(Cell::new(text));
    }
    for _ in copies.max(1)..repeat {
        table.row.cells.push(Cell::new(""));
    }
    Ok(())
}

fn finish_table(table: TableReading, spreadsheet: bool, blocks: &mut Vec<Block>) {
    if table.rows.is_empty() {
        return;
    }
    if spreadsheet {
        let rows = table
            .rows
            .into_iter()
            .map(|r| r.cells.into_iter().map(|c| c.text).collect())
            .collect();
        push_sheet(blocks, &table.name, rows);
    } else {
        blocks.push(Block::Table(Table { rows: table.rows }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchored_image_keeps_its_description_out_of_the_paragraph() {
        let xml = r#"<office:document-content><office:body><office:text><text:p>Before <draw:frame><svg:title>Logo</svg:title><svg:desc>A red logo</svg:desc><draw:image/></draw:frame>after.</text:p></office:text></office:body></office:document-content>"#;
        assert_eq!(
            body_blocks(xml, &Budget::new(CELL_TEXT_BUDGET)).expect("blocks"),
            [Block::Paragraph("Before after.".into())]
        );
    }

    #[test]
    fn a_long_repeated_text_is_read_once_in_its_column() {
        let long = "word ".repeat(100);
        let xml = format!(
            r#"<office:spreadsheet><table:table table:name="S"><table:table-row table:number-rows-repeated="50"><table:table-cell table:number-columns-repeated="3"><text:p>{long}</text:p></table:table-cell><table:table-cell><text:p>last</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>"#
        );
        let blocks = body_blocks(&xml, &Budget::new(CELL_TEXT_BUDGET)).expect("blocks");
        let Some(Block::Table(table)) = blocks.get(1) else {
            panic!("{blocks:?}");
        };
        let cells: Vec<&str> = table.rows[0]
            .cells
            .iter()
            .map(|c| c.text.as_str())
            .collect();
        assert_eq!(cells, [long.trim(), "", "", "last"]);
        assert_eq!(table.rows.len(), 50);
    }

    #[test]
    fn repeats_that_write_out_too_much_text_are_refused() {
        let row = r#"<table:table-row table:number-rows-repeated="100"><table:table-cell table:number-columns-repeated="256"><text:p>short text</text:p></table:table-cell></table:table-row>"#;
        let sheet = |rows: usize| {
            format!(
                "<office:spreadsheet><table:table>{}</table:table></office:spreadsheet>",
                row.repeat(rows)
            )
        };
        assert!(body_blocks(&sheet(10), &Budget::new(CELL_TEXT_BUDGET)).is_ok());
        let err =
            body_blocks(&sheet(300), &Budget::new(CELL_TEXT_BUDGET)).expect_err("over the budget");
        assert!(err.0.contains("more than 24 MiB"), "{err}");
    }

    #[test]
    fn repeated_rows_and_cells_are_bounded() {
        let xml = r#"<office:spreadsheet><table:table table:name="S"><table:table-row table:number-rows-repeated="1000000"><table:table-cell table:number-columns-repeated="100000"><text:p>x</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet>"#;
        let blocks = body_blocks(xml, &Budget::new(CELL_TEXT_BUDGET)).expect("blocks");
        let Some(Block::Table(table)) = blocks.get(1) else {
            panic!("{blocks:?}");
        };
        assert_eq!(table.rows.len(), MAX_ROW_REPEAT);
        assert!(table
            .rows
            .iter()
            .all(|r| r.cells.len() == MAX_SHEET_COLUMNS));
    }
}
