//! Spans from text that has no document behind it (a Q&A answer someone typed), read as
//! the light markdown people type: `#` headings, fenced code, list items, and table rows
//! (`a | b` lines, or `Key: v; Key2: w` lines). A pipe table's first row is repeated on
//! later chunks when it reads like column titles.

use super::layout::{Layout, Sections, Span, SpanKind, TableLead};
use crate::knowledge::extract::text::{heading, is_list_item};
use std::ops::Range;

#[derive(Debug, Default)]
struct Table {
    pipe: bool,
    /// First row (plus a markdown `---|---` rule if one follows it).
    first: Option<Range<usize>>,
    rows: usize,
}

struct Parser<'a> {
    sections: Sections<'a>,
    tables: Vec<Table>,
    open: Option<Span>,
    /// Table the previous line belonged to, if it was a row.
    open_table: Option<usize>,
    fence: Option<(Span, &'a str)>,
}

pub(super) fn layout(text: &str) -> Layout {
    let mut p = Parser {
        sections: Sections::new(text),
        tables: Vec::new(),
        open: None,
        open_table: None,
        fence: None,
    };
    let mut offset = 0;
    for raw in text.split_inclusive('\n') {
        let line = raw.trim_end_matches('\n');
        p.line(line, offset);
        offset += raw.len();
    }
    if let Some((span, _)) = p.fence.take() {
        p.sections.push(span);
    }
    p.close_span();
    let tables = p
        .tables
        .iter()
        .map(|t| TableLead {
            header: t
                .first
                .clone()
                .filter(|r| t.pipe && t.rows >= 2 && looks_like_header(&text[r.clone()])),
        })
        .collect();
    Layout {
        sections: p.sections.finish(),
        tables,
    }
}

impl Parser<'_> {
    fn line(&mut self, line: &str, start: usize) {
        let end = start + line.len();
        let trimmed = line.trim();
        if let Some((span, marker)) = &mut self.fence {
            span.range.end = end;
            let fence_char = marker.chars().next().unwrap_or('`');
            if trimmed.starts_with(*marker) && trimmed.trim_start_matches(fence_char).is_empty() {
                if let Some((span, _)) = self.fence.take() {
                    self.sections.push(span);
                }
            }
            return;
        }
        if trimmed.is_empty() {
            // A blank line ends a table as well as a paragraph.
            self.close_span();
            self.open_table = None;
            return;
        }
        let is_row = row_kind(trimmed);
        if is_row.is_none() {
            self.open_table = None;
        }
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                self.close_span();
                let span = Span {
                    kind: SpanKind::Code,
                    range: start..end,
                    table: None,
                };
                self.fence = Some((span, marker));
                return;
            }
        }
        if let Some((level, title)) = heading(line) {
            self.close_span();
            self.sections
                .heading(level, start + title.start..start + title.end);
            return;
        }
        if let Some(pipe) = is_row {
            self.close_span();
            self.row(trimmed, start..end, pipe);
            return;
        }
        if is_list_item(trimmed) {
            self.close_span();
        }
        match &mut self.open {
            // A non-item line continues the paragraph or item above it.
            Some(b) => b.range.end = end,
            None => {
                let kind = if is_list_item(trimmed) {
                    SpanKind::ListItem
                } else {
                    SpanKind::Paragraph
                };
                self.open = Some(Span {
                    kind,
                    range: start..end,
                    table: None,
                });
            }
        }
    }

    fn row(&mut self, trimmed: &str, range: Range<usize>, pipe: bool) {
        let id = match self.open_table {
            Some(id) if self.tables.get(id).is_some_and(|t| t.pipe == pipe) => id,
            _ => {
                self.tables.push(Table {
                    pipe,
                    ..Table::default()
                });
                self.tables.len() - 1
            }
        };
        self.open_table = Some(id);
        let Some(table) = self.tables.get_mut(id) else {
            return;
        };
        // A markdown rule right under the first row belongs to the header
        // span, so the pair is kept together and repeated together.
        if pipe && table.rows == 1 && is_rule_row(trimmed) {
            if let (Some(first), Some(last)) = (&mut table.first, self.sections.last_mut()) {
                first.end = range.end;
                last.range.end = range.end;
                return;
            }
        }
        table.rows += 1;
        if table.first.is_none() {
            table.first = Some(range.clone());
        }
        self.sections.push(Span {
            kind: SpanKind::Row,
            range,
            table: Some(id),
        });
    }

    fn close_span(&mut self) {
        if let Some(b) = self.open.take() {
            self.sections.push(b);
        }
    }
}

/// `Some(true)` for a `a | b` row, `Some(false)` for `Key: v; Key2: v`.
fn row_kind(t: &str) -> Option<bool> {
    if t.contains(" | ") || (t.len() > 1 && t.starts_with('|') && t.ends_with('|')) {
        return Some(true);
    }
    let mut parts = 0;
    for part in t.split("; ") {
        match part.split_once(": ") {
            Some((key, value))
                if !key.is_empty() && key.chars().count() <= 40 && !value.is_empty() =>
            {
                parts += 1
            }
            _ => return None,
        }
    }
    (parts >= 2).then_some(false)
}

fn cells(row: &str) -> impl Iterator<Item = &str> {
    let row = row.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    row.split('|').map(str::trim)
}

fn is_rule_row(t: &str) -> bool {
    cells(t).all(|c| {
        let c = c.trim_matches(':');
        !c.is_empty() && c.bytes().all(|b| b == b'-')
    })
}

/// Short, non-empty, non-numeric cells: how column titles look, as opposed
/// to data rows that carry numbers or long values.
fn looks_like_header(first_row: &str) -> bool {
    let row = first_row.lines().next().unwrap_or("");
    super::from_document::looks_like_titles(cells(row))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_list_items() {
        assert_eq!(row_kind("a | b | c"), Some(true));
        assert_eq!(row_kind("|a|b|"), Some(true));
        assert_eq!(row_kind("Name: Ann; Age: 31"), Some(false));
        assert_eq!(row_kind("Note: this; is prose"), None);
        assert_eq!(row_kind("plain text"), None);
        assert!(is_rule_row("| --- | :---: |"));
        assert!(looks_like_header("Name | Age | City"));
        assert!(!looks_like_header("Ann | 31 | Paris"));
        assert!(is_list_item("- x") && is_list_item("12. x") && is_list_item("3) x"));
        assert!(!is_list_item("-x") && !is_list_item("2024.") && !is_list_item("1234567890. x"));
    }
}
