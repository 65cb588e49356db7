//! What packing works on, whichever way it was found: the text's spans grouped into
//! heading sections, and for each table the header line its later chunks repeat.

use std::ops::Range;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum SpanKind {
    Paragraph,
    ListItem,
    /// A table line; never split across chunks unless it alone is too big.
    Row,
    Code,
}

#[derive(Clone, Debug)]
pub(super) struct Span {
    pub(super) kind: SpanKind,
    pub(super) range: Range<usize>,
    /// Index into `Layout::tables` for rows.
    pub(super) table: Option<usize>,
}

#[derive(Debug, Default)]
pub(super) struct TableLead {
    /// The line repeated at the top of each later chunk of the table, if any.
    pub(super) header: Option<Range<usize>>,
}

#[derive(Debug)]
pub(super) struct Section {
    pub(super) heading: Option<String>,
    pub(super) spans: Vec<Span>,
}

pub(super) struct Layout {
    pub(super) sections: Vec<Section>,
    pub(super) tables: Vec<TableLead>,
}

/// Groups spans under the headings they follow; headings nest by level, and a section's
/// heading is the path of titles above it.
pub(super) struct Sections<'t> {
    text: &'t str,
    sections: Vec<Section>,
    stack: Vec<(usize, Range<usize>)>,
    /// Heading that opened the current section, and its level.
    current_title: Option<(usize, Range<usize>)>,
    spans: Vec<Span>,
}

impl<'t> Sections<'t> {
    pub(super) fn new(text: &'t str) -> Sections<'t> {
        Sections {
            text,
            sections: Vec::new(),
            stack: Vec::new(),
            current_title: None,
            spans: Vec::new(),
        }
    }

    /// Starts a section under a heading of `level` whose title is at `title`.
    pub(super) fn heading(&mut self, level: usize, title: Range<usize>) {
        self.finish_section(Some(level));
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        self.stack.push((level, title.clone()));
        self.current_title = Some((level, title));
    }

    pub(super) fn push(&mut self, span: Span) {
        self.spans.push(span);
    }

    pub(super) fn last_mut(&mut self) -> Option<&mut Span> {
        self.spans.last_mut()
    }

    pub(super) fn finish(mut self) -> Vec<Section> {
        self.finish_section(None);
        self.sections
    }

    /// Ends the current section; `next_level` is the level of the heading that starts the
    /// next one (None at end of input).
    fn finish_section(&mut self, next_level: Option<usize>) {
        let mut spans = std::mem::take(&mut self.spans);
        if spans.is_empty() {
            // A heading with no body is kept as a chunk of its own unless a deeper heading
            // follows, whose path already carries it.
            match (&self.current_title, next_level) {
                (Some((level, title)), next) if next.is_none_or(|n| n <= *level) => {
                    spans.push(Span {
                        kind: SpanKind::Paragraph,
                        range: title.clone(),
                        table: None,
                    });
                }
                _ => return,
            }
        }
        let heading = if self.stack.is_empty() {
            None
        } else {
            let titles: Vec<&str> = self
                .stack
                .iter()
                .map(|(_, r)| self.text.get(r.clone()).unwrap_or(""))
                .collect();
            Some(titles.join(" > "))
        };
        self.sections.push(Section { heading, spans });
    }
}
