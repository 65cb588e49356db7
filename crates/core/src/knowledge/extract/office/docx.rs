//! DOCX (WordprocessingML): paragraphs by style (headings, list items, body text) and
//! tables, read from the ZIP package with a small XML reader of our own.
//!
//! Numbered and bulleted paragraphs both come out as bullet items, since Word keeps the
//! numbers in a separate numbering part. A table row marked to repeat as the header row on
//! each page (`w:tblHeader`) names the columns; other tables have no header.

use super::xml::{attr, Ev, Reader};
use super::Package;
use crate::knowledge::extract::binary::FastMap;
use crate::knowledge::extract::clean::squeeze_lines as tidy;
use crate::knowledge::extract::document::{first_heading, Block, Cell, Document, PushFlat, Row};
use crate::knowledge::extract::ExtractError;

/// What a paragraph style means for the output, after following `basedOn`.
#[derive(Clone, Copy, Default)]
struct StyleInfo {
    heading: Option<u8>,
    list: bool,
}

struct Style {
    name: String,
    based_on: Option<String>,
    outline: Option<u8>,
    numbered: Option<bool>,
}

/// Reads a Word document.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
    let package = Package::open(bytes, "DOCX")?;
    let (main, doc) = package.main_part("word/document.xml", "document")?;
    let dir = main.rsplit_once('/').map_or("", |(d, _)| d);
    let styles_path = if dir.is_empty() {
        "styles.xml".to_string()
    } else {
        format!("{dir}/styles.xml")
    };
    // Styles and properties are optional: a document without them still has text.
    let styles = package
        .optional_text(&styles_path)
        .map(|s| parse_styles(&s))
        .unwrap_or_default();
    let blocks = body_blocks(&doc, &styles);
    let title = package.title().or_else(|| first_heading(&blocks));
    Ok(Document { title, blocks })
}

fn parse_styles(xml: &str) -> FastMap<String, StyleInfo> {
    let mut raw: FastMap<String, Style> = FastMap::default();
    let mut cur: Option<(String, Style)> = None;
    for ev in Reader::new(xml) {
        match ev {
            Ev::Start("style", a, empty) => {
                let is_para = attr(a, "type").is_none_or(|t| t == "paragraph");
                if let (Some(id), true, false) = (attr(a, "styleId"), is_para, empty) {
                    let style = Style {
                        name: String::new(),
                        based_on: None,
                        outline: None,
                        numbered: None,
                    };
                    cur = Some((id.into_owned(), style));
                }
            }
            Ev::End("style") => {
                if let Some((id, s)) = cur.take() {
                    raw.insert(id, s);
                }
            }
            Ev::Start(name, a, _) => {
                let Some((_, s)) = cur.as_mut() else { continue };
                let val = attr(a, "val");
                match (name, val) {
                    ("name", Some(v)) => s.name = v.to_ascii_lowercase(),
                    ("basedOn", Some(v)) => s.based_on = Some(v.into_owned()),
                    ("outlineLvl", Some(v)) => s.outline = v.parse::<u8>().ok(),
                    ("numId", Some(v)) => s.numbered = Some(v != "0"),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let mut out = FastMap::default();
    for id in raw.keys() {
        let mut info = StyleInfo::default();
        let (mut heading_known, mut list_known) = (false, false);
        let mut at = Some(id.as_str());
        // basedOn chains are short; the bound stops cycles in broken files.
        for _ in 0..16 {
            let Some(s) = at.and_then(|k| raw.get(k)) else {
                break;
            };
            if !heading_known {
                if let Some(h) =
                    heading_from_name(&s.name).or(s.outline.filter(|&l| l < 9).map(|l| l + 1))
                {
                    info.heading = Some(h);
                    heading_known = true;
                }
            }
            if let (false, Some(n)) = (list_known, s.numbered) {
                info.list = n;
                list_known = true;
            }
            at = s.based_on.as_deref();
        }
        out.insert(id.clone(), info);
    }
    out
}

fn heading_from_name(name: &str) -> Option<u8> {
    let name = name.trim();
    if name == "title" {
        return Some(1);
    }
    let n = name.strip_prefix("heading")?.trim();
    n.parse::<u8>().ok().filter(|&n| (1..=9).contains(&n))
}

/// Style ids are locale-independent in files from most producers, so they
/// are a reasonable guess when styles.xml is missing.
fn heading_from_id(id: &str) -> Option<u8> {
    heading_from_name(&id.to_ascii_lowercase())
}

#[derive(Default)]
struct Para {
    style: Option<String>,
    numbered: Option<bool>,
    outline: Option<u8>,
    text: String,
}

#[derive(Default)]
struct Table {
    rows: Vec<Row>,
    row: Row,
    cell: String,
}

/// Elements whose content must not reach the output: deleted or moved-away
/// revisions, field instructions, and the legacy duplicate of new content.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "delText" | "instrText" | "delInstrText" | "Fallback" | "moveFrom"
    )
}

fn body_blocks(xml: &str, styles: &FastMap<String, StyleInfo>) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut paras: Vec<Para> = Vec::new();
    let mut tables: Vec<Table> = Vec::new();
    let mut in_text = false;
    let mut run_depth = 0usize;
    // A run marked hidden (`<w:vanish/>` in its properties) is not shown to a reader of the
    // document, so it is not read either, as hidden slides and sheets are not.
    let mut hidden_run = false;
    for ev in Reader::new(xml).skipping(skipped) {
        match ev {
            Ev::Start(name, a, empty) => match name {
                "p" if !empty => paras.push(Para::default()),
                "t" if !empty => in_text = true,
                "r" if !empty => {
                    run_depth += 1;
                    hidden_run = false;
                }
                "vanish" if run_depth > 0 => {
                    hidden_run =
                        attr(a, "val").is_none_or(|v| !matches!(&*v, "0" | "false" | "off"));
                }
                _ if hidden_run => {}
                "pStyle" => {
                    if let (Some(p), Some(v)) = (paras.last_mut(), attr(a, "val")) {
                        p.style = Some(v.into_owned());
                    }
                }
                "numId" => {
                    if let (Some(p), Some(v)) = (paras.last_mut(), attr(a, "val")) {
                        p.numbered = Some(v != "0");
                    }
                }
                "outlineLvl" => {
                    if let (Some(p), Some(v)) = (paras.last_mut(), attr(a, "val")) {
                        p.outline = v.parse().ok();
                    }
                }
                // Tabs inside pPr are tab-stop definitions, not characters.
                "tab" | "ptab" if run_depth > 0 => push_text(&mut paras, "\t"),
                "br" | "cr" if run_depth > 0 => {
                    let page = attr(a, "type").is_some_and(|t| t == "page" || t == "column");
                    push_text(&mut paras, if page { " " } else { "\n" });
                }
                "noBreakHyphen" => push_text(&mut paras, "-"),
                "tbl" if !empty => tables.push(Table::default()),
                "tr" if !empty => {
                    if let Some(t) = tables.last_mut() {
                        t.row = Row::default();
                    }
                }
                "tblHeader" => {
                    let on = attr(a, "val").is_none_or(|v| !matches!(&*v, "0" | "false" | "off"));
                    if let Some(t) = tables.last_mut() {
                        t.row.header = on;
                    }
                }
                "tc" if !empty => {
                    if let Some(t) = tables.last_mut() {
                        t.cell.clear();
                    }
                }
                _ => {}
            },
            Ev::Text(s) => {
                if in_text && !hidden_run {
                    push_text(&mut paras, &s);
                }
            }
            Ev::End(name) => match name {
                "t" => in_text = false,
                "r" => {
                    run_depth = run_depth.saturating_sub(1);
                    hidden_run = false;
                }
                "p" => {
                    if let Some(p) = paras.pop() {
                        finish_para(p, styles, &mut tables, &mut blocks);
                    }
                }
                "tc" => {
                    if let Some(t) = tables.last_mut() {
                        let cell = std::mem::take(&mut t.cell);
                        t.row.cells.push(Cell::new(tidy(&cell.replace('\n', " "))));
                    }
                }
                "tr" => {
                    if let Some(t) = tables.last_mut() {
                        let row = std::mem::take(&mut t.row);
                        t.rows.push(row);
                    }
                }
                "tbl" => {
                    if let Some(t) = tables.pop() {
                        finish_table(t, &mut tables, &mut blocks);
                    }
                }
                _ => {}
            },
        }
    }
    // A truncated document still gives what was read so far.
    while let Some(p) = paras.pop() {
        finish_para(p, styles, &mut tables, &mut blocks);
    }
    while let Some(t) = tables.pop() {
        finish_table(t, &mut tables, &mut blocks);
    }
    blocks
}

fn push_text(paras: &mut [Para], s: &str) {
    if let Some(p) = paras.last_mut() {
        p.text.push_str(s);
    }
}

fn finish_para(
    p: Para,
    styles: &FastMap<String, StyleInfo>,
    tables: &mut [Table],
    blocks: &mut Vec<Block>,
) {
    if let Some(t) = tables.last_mut() {
        // Paragraphs of one cell read as one run of text in the row.
        let text = tidy(&p.text.replace('\n', " "));
        if !text.is_empty() {
            if !t.cell.is_empty() {
                t.cell.push(' ');
            }
            t.cell.push_str(&text);
        }
        return;
    }
    let info = p
        .style
        .as_deref()
        .map(|s| {
            styles.get(s).copied().unwrap_or(StyleInfo {
                heading: heading_from_id(s),
                list: s.to_ascii_lowercase().starts_with("list"),
            })
        })
        .unwrap_or_default();
    let heading = p.outline.filter(|&l| l < 9).map(|l| l + 1).or(info.heading);
    let list = p.numbered.unwrap_or(info.list);
    if let Some(level) = heading {
        let text = tidy(&p.text.replace('\n', " "));
        if !text.is_empty() {
            blocks.push(Block::Heading {
                level: level.min(6),
                text,
            });
        }
    } else if list {
        let text = tidy(&p.text.replace('\n', " "));
        if !text.is_empty() {
            blocks.push_item(text);
        }
    } else {
        let text = tidy(&p.text);
        if !text.is_empty() {
            blocks.push(Block::Paragraph(text));
        }
    }
}

fn finish_table(t: Table, outer: &mut [Table], blocks: &mut Vec<Block>) {
    let rows = t.rows.into_iter().filter(|r| !r.is_blank());
    if let Some(parent) = outer.last_mut() {
        // A nested table becomes plain text of the enclosing cell: a `|` in
        // there would break the row structure of the outer table.
        for (i, row) in rows.enumerate() {
            if !parent.cell.is_empty() {
                parent.cell.push_str(if i == 0 { " " } else { "; " });
            }
            let cells: Vec<&str> = row
                .cells
                .iter()
                .map(|c| c.text.as_str())
                .filter(|c| !c.is_empty())
                .collect();
            parent.cell.push_str(&cells.join(" "));
        }
    } else {
        for row in rows {
            blocks.push_row(row);
        }
    }
}
