//! Spans from a document's blocks: the document is rendered once, and the renderer's
//! outline says where each heading, paragraph, item, row and code block landed.

use super::layout::{Layout, Sections, Span, SpanKind, TableLead};
use super::split::trim_range;
use crate::knowledge::extract::document::{Document, Row, Table};
use crate::knowledge::extract::render::{render_outline, Placement};
use std::ops::Range;

/// What the packer needs to know of one rendered table.
struct SeenTable<'a> {
    block: &'a Table,
    first: Option<(Range<usize>, &'a Row)>,
    rows: usize,
}

/// The rendered text of `doc` and its spans.
pub(super) fn layout(doc: &Document) -> (String, Layout) {
    let (text, outline) = render_outline(doc);
    let mut sections = Sections::new(&text);
    let mut seen: Vec<SeenTable> = Vec::new();
    // The item whose text the last span holds, so that an item's paragraphs stay one span.
    let mut last_item: Option<usize> = None;
    // Likewise the definition list whose definitions the last span holds.
    let mut last_definitions: Option<usize> = None;
    for placed in &outline {
        let range = placed.range.clone();
        match &placed.what {
            Placement::Heading { level, title } => {
                (last_item, last_definitions) = (None, None);
                sections.heading(usize::from(*level), title.clone());
            }
            Placement::Text { item } => {
                last_definitions = None;
                if let (Some(id), Some(last)) = (item, sections.last_mut()) {
                    if last_item == Some(*id) {
                        last.range.end = range.end;
                        continue;
                    }
                }
                last_item = *item;
                let kind = if item.is_some() {
                    SpanKind::ListItem
                } else {
                    SpanKind::Paragraph
                };
                sections.push(Span {
                    kind,
                    range,
                    table: None,
                });
            }
            // A definition list is read like a paragraph of `Term: definition` lines: packed
            // by sentences, which fills chunks evenly where definitions are short.
            Placement::Definition { list } => {
                last_item = None;
                if let (true, Some(last)) = (last_definitions == Some(*list), sections.last_mut()) {
                    last.range.end = range.end;
                    continue;
                }
                last_definitions = Some(*list);
                sections.push(Span {
                    kind: SpanKind::Paragraph,
                    range,
                    table: None,
                });
            }
            Placement::Code => {
                (last_item, last_definitions) = (None, None);
                sections.push(Span {
                    kind: SpanKind::Code,
                    range,
                    table: None,
                });
            }
            Placement::Row { table, block, row } => {
                (last_item, last_definitions) = (None, None);
                // Tables are numbered in order; one that wrote no row leaves a gap, filled
                // with an entry that repeats nothing.
                while seen.len() <= *table {
                    seen.push(SeenTable {
                        block,
                        first: None,
                        rows: 0,
                    });
                }
                if let Some(t) = seen.get_mut(*table) {
                    t.rows += 1;
                    if t.first.is_none() {
                        t.first = Some((trim_range(&text, range.clone()), row));
                    }
                }
                sections.push(Span {
                    kind: SpanKind::Row,
                    range,
                    table: Some(*table),
                });
            }
        }
    }
    let tables = seen
        .into_iter()
        .map(|t| TableLead {
            header: t.first.and_then(|(range, row)| {
                let repeat = !t.block.has_header()
                    && t.rows >= 2
                    && looks_like_titles(
                        row.cells
                            .iter()
                            .map(|c| c.text.trim())
                            .filter(|c| !c.is_empty()),
                    );
                repeat.then_some(range)
            }),
        })
        .collect();
    let layout = Layout {
        sections: sections.finish(),
        tables,
    };
    (text, layout)
}

/// Short, non-empty, non-numeric cells: how column titles look, as opposed to data rows
/// that carry numbers or long values.
pub(super) fn looks_like_titles<'c>(cells: impl Iterator<Item = &'c str>) -> bool {
    let mut n = 0;
    for cell in cells {
        n += 1;
        let numeric = cell.bytes().any(|b| b.is_ascii_digit())
            && cell
                .chars()
                .all(|c| c.is_ascii_digit() || " .,-+%$€:/".contains(c));
        if cell.is_empty() || cell.chars().count() > 40 || numeric {
            return false;
        }
    }
    n >= 2
}
