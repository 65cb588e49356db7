//! Packing: units go into chunks greedily up to the target size; the next chunk of a
//! section repeats a table's header row or the last sentences of the one before.

use super::layout::{Layout, Section, SpanKind};
use super::sentences::sentence_ranges;
use super::split::{line_ranges, Unit};
use super::{Chunk, Limits};
use crate::knowledge::tokens::estimate_tokens;
use std::ops::Range;

/// Text repeated at the start of a chunk from earlier in the section.
#[derive(Clone, Debug)]
enum Lead {
    None,
    /// Overlap: the chunk slice simply starts earlier, at this byte.
    Overlap {
        start: usize,
        tokens: usize,
    },
    /// A table header, joined to the rows with a newline.
    Header {
        range: Range<usize>,
        tokens: usize,
    },
}

impl Lead {
    fn tokens(&self) -> usize {
        match self {
            Lead::None => 0,
            Lead::Overlap { tokens, .. } | Lead::Header { tokens, .. } => *tokens,
        }
    }
}

fn build_text(text: &str, lead: &Lead, start: usize, end: usize) -> String {
    match lead {
        Lead::None => text[start..end].to_string(),
        Lead::Overlap { start: s, .. } => text[*s..end].to_string(),
        Lead::Header { range, .. } => {
            let mut out = String::with_capacity(range.len() + 1 + end - start);
            out.push_str(&text[range.clone()]);
            out.push('\n');
            out.push_str(&text[start..end]);
            out
        }
    }
}

pub(super) fn pack_section(
    text: &str,
    layout: &Layout,
    section: &Section,
    units: &[Unit],
    limits: &Limits,
    out: &mut Vec<Chunk>,
) {
    let mut i = 0;
    let mut lead = Lead::None;
    while i < units.len() {
        // Greedy fill to the target; a block boundary usually costs a
        // newline token that the per-unit estimates do not include.
        let mut j = i;
        let mut acc = lead.tokens();
        while j < units.len() {
            let sep = usize::from(j > i && units[j].span != units[j - 1].span);
            if j > i && acc + sep + units[j].tokens > limits.target {
                break;
            }
            acc += sep + units[j].tokens;
            j += 1;
        }
        // A table header as the last line of a chunk is useless there and
        // would be repeated anyway: leave it to the chunk with its rows.
        if j - i > 1
            && j < units.len()
            && is_table_header(layout, &units[j - 1])
            && units[j].table == units[j - 1].table
        {
            j -= 1;
        }
        // The exact estimate of the joined text decides; shrink until it
        // fits. A lone unit always fits: units were sized by the same
        // estimate on the same slice.
        let (candidate, tokens, first_start) = loop {
            let body_start = units[i].range.start;
            let candidate = build_text(text, &lead, body_start, units[j - 1].range.end);
            let tokens = estimate_tokens(&candidate);
            if tokens <= limits.max {
                let first_start = match &lead {
                    Lead::Overlap { start, .. } => *start,
                    _ => body_start,
                };
                break (candidate, tokens, first_start);
            }
            if j - i > 1 {
                let scaled = ((j - i) as f64 * limits.max as f64 / tokens.max(1) as f64) as usize;
                j = i + scaled.clamp(1, j - i - 1);
            } else if !matches!(lead, Lead::None) {
                lead = Lead::None;
            } else {
                // Unreachable by construction; emitting beats looping.
                break (candidate, tokens, body_start);
            }
        };
        out.push(Chunk {
            position: out.len(),
            heading: section.heading.clone(),
            text: candidate,
            tokens,
        });
        i = j;
        lead = match units.get(i) {
            Some(next) => next_lead(text, layout, units, i, first_start, next, limits),
            None => Lead::None,
        };
    }
}

fn is_table_header(layout: &Layout, unit: &Unit) -> bool {
    let header = unit
        .table
        .and_then(|t| layout.tables.get(t))
        .and_then(|t| t.header.as_ref());
    header.is_some_and(|h| h.start == unit.range.start)
}

/// What the chunk starting at `units[next_idx]` repeats from before it.
fn next_lead(
    text: &str,
    layout: &Layout,
    units: &[Unit],
    next_idx: usize,
    chunk_start: usize,
    next: &Unit,
    limits: &Limits,
) -> Lead {
    if next.kind == SpanKind::Row {
        let header = next
            .table
            .and_then(|t| layout.tables.get(t))
            .and_then(|t| t.header.clone());
        return match header {
            Some(range) if range.start != next.range.start => {
                let tokens = estimate_tokens(&text[range.clone()]);
                Lead::Header { range, tokens }
            }
            _ => Lead::None,
        };
    }
    overlap_lead(text, units, next_idx, chunk_start, limits)
}

/// Trailing sentences (lines, for code) of the previous chunk that fit the
/// overlap budget, never the whole previous chunk and never table rows.
fn overlap_lead(
    text: &str,
    units: &[Unit],
    next_idx: usize,
    chunk_start: usize,
    limits: &Limits,
) -> Lead {
    if limits.overlap == 0 {
        return Lead::None;
    }
    let mut acc = 0;
    let mut start = None;
    'units: for unit in units[..next_idx].iter().rev() {
        if unit.kind == SpanKind::Row || unit.range.end <= chunk_start {
            break;
        }
        let range = unit.range.start.max(chunk_start)..unit.range.end;
        let parts = match unit.kind {
            SpanKind::Code => line_ranges(text, range),
            _ => sentence_ranges(text, range),
        };
        for part in parts.iter().rev() {
            let t = estimate_tokens(&text[part.clone()]);
            if acc + t > limits.overlap {
                break 'units;
            }
            acc += t;
            start = Some(part.start);
        }
    }
    match start {
        Some(s) if s > chunk_start => Lead::Overlap {
            start: s,
            tokens: acc,
        },
        _ => Lead::None,
    }
}
