//! Units: the spans of a section, each whole when it fits a chunk, else broken into
//! sentences, lines, words and, as a last resort, characters.

use super::layout::{Section, SpanKind};
use super::sentences::sentence_ranges;
use super::Limits;
use crate::knowledge::tokens::estimate_tokens;
use std::ops::Range;

#[derive(Clone, Debug)]
pub(super) struct Unit {
    pub(super) range: Range<usize>,
    pub(super) tokens: usize,
    /// Index of the span within its section; pieces of one span share it.
    pub(super) span: usize,
    pub(super) kind: SpanKind,
    pub(super) table: Option<usize>,
}

pub(super) fn trim_range(text: &str, r: Range<usize>) -> Range<usize> {
    let s = text.get(r.clone()).unwrap_or("");
    let lead = s.len() - s.trim_start().len();
    let trail = s.trim_start().len() - s.trim().len();
    r.start + lead..r.end - trail
}

pub(super) fn section_units(text: &str, section: &Section, limits: &Limits) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut pieces = Vec::new();
    for (idx, span) in section.spans.iter().enumerate() {
        let range = trim_range(text, span.range.clone());
        if range.is_empty() {
            continue;
        }
        pieces.clear();
        let level = match span.kind {
            SpanKind::Paragraph | SpanKind::ListItem => Level::Sentences,
            SpanKind::Row | SpanKind::Code => Level::Lines,
        };
        fit(text, range, level, limits, &mut pieces);
        units.extend(pieces.drain(..).map(|(range, tokens)| Unit {
            range,
            tokens,
            span: idx,
            kind: span.kind,
            table: span.table,
        }));
    }
    units
}

/// Byte ranges of the text with their token estimates, in text order.
type Pieces = Vec<(Range<usize>, usize)>;

/// Pushes `range` whole if its estimate fits `max`; false, pushing nothing, if it does not.
fn push_whole(text: &str, range: &Range<usize>, limits: &Limits, out: &mut Pieces) -> bool {
    let tokens = estimate_tokens(&text[range.clone()]);
    let fits = tokens <= limits.max;
    if fits {
        out.push((range.clone(), tokens));
    }
    fits
}

/// How a too-big span is broken down, coarsest first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Sentences,
    Lines,
    Words,
}

/// Pushes `range` whole if it fits `max`, otherwise pieces of it that do.
fn fit(text: &str, range: Range<usize>, level: Level, limits: &Limits, out: &mut Pieces) {
    if push_whole(text, &range, limits, out) {
        return;
    }
    match level {
        Level::Sentences => {
            let sentences = sentence_ranges(text, range.clone());
            if sentences.len() <= 1 {
                fit(text, range, Level::Lines, limits, out);
            } else {
                for s in sentences {
                    fit(text, s, Level::Lines, limits, out);
                }
            }
        }
        Level::Lines => {
            let lines = line_ranges(text, range.clone());
            if lines.len() <= 1 {
                split_words(text, range, limits, out);
            } else {
                for l in lines {
                    fit(text, l, Level::Words, limits, out);
                }
            }
        }
        Level::Words => split_words(text, range, limits, out),
    }
}

pub(super) fn line_ranges(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = range.start;
    for (i, _) in text[range.clone()].match_indices('\n') {
        out.push(trim_range(text, start..range.start + i));
        start = range.start + i + 1;
    }
    out.push(trim_range(text, start..range.end));
    out.retain(|r| !r.is_empty());
    out
}

/// Calls `f` with each whitespace-separated word of `range`.
fn for_each_word(text: &str, range: Range<usize>, mut f: impl FnMut(Range<usize>)) {
    let mut start = None;
    for (i, c) in text[range.clone()].char_indices() {
        let at = range.start + i;
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                f(s..at);
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(s) = start {
        f(s..range.end);
    }
}

/// Greedy word groups up to the target. Streams, because this is the path
/// a multi-megabyte run of text without sentences or lines takes.
fn split_words(text: &str, range: Range<usize>, limits: &Limits, out: &mut Pieces) {
    let mut group: Option<Range<usize>> = None;
    let mut acc = 0;
    for_each_word(text, range, |w| {
        let t = estimate_tokens(&text[w.clone()]);
        group = match group.take() {
            Some(g) if acc + t > limits.target => {
                emit_words(text, g, limits, out);
                acc = 0;
                Some(w)
            }
            Some(g) => Some(g.start..w.end),
            None => Some(w),
        };
        acc += t;
    });
    if let Some(g) = group {
        emit_words(text, g, limits, out);
    }
}

/// Pushes a word group, halving it when the exact estimate of the joined
/// words is still too big, and cutting a lone oversized word by characters.
fn emit_words(text: &str, range: Range<usize>, limits: &Limits, out: &mut Pieces) {
    if push_whole(text, &range, limits, out) {
        return;
    }
    let mut words = Vec::new();
    for_each_word(text, range.clone(), |w| words.push(w));
    match words.len() {
        0 => {}
        1 => split_chars(text, range, limits, out),
        n => {
            let mid = words[n / 2].start;
            emit_words(text, trim_range(text, range.start..mid), limits, out);
            emit_words(text, mid..range.end, limits, out);
        }
    }
}

/// Last resort for whitespace-free runs (base64, CJK without punctuation,
/// minified data): slices by character count, sized from the run's average
/// token density and shrunk until the exact estimate fits.
fn split_chars(text: &str, range: Range<usize>, limits: &Limits, out: &mut Pieces) {
    let s = &text[range.clone()];
    let total_chars = s.chars().count().max(1);
    let total_tokens = estimate_tokens(s).max(1);
    let guess = ((total_chars as f64 * limits.target as f64 / total_tokens as f64) as usize).max(1);
    let mut pos = range.start;
    while pos < range.end {
        let mut n = guess;
        loop {
            let end = char_cut(text, pos, range.end, n);
            let tokens = estimate_tokens(&text[pos..end]);
            if tokens <= limits.max || n == 1 {
                out.push((pos..end, tokens));
                pos = end;
                break;
            }
            n = (n - n / 4).min(n - 1).max(1);
        }
    }
}

/// Byte offset `n` chars after `pos` (capped at `end`), moved back so a
/// combining mark, variation selector or joiner stays with its base.
fn char_cut(text: &str, pos: usize, end: usize, n: usize) -> usize {
    let slice = &text[pos..end];
    let first = slice.char_indices().nth(n).map_or(end, |(i, _)| pos + i);
    let mut cut = first;
    while cut < end {
        let next = text[cut..].chars().next();
        let prev = text[..cut].chars().next_back();
        let glued = next.is_some_and(is_joining) || prev == Some('\u{200d}');
        let Some(p) = prev.filter(|_| glued) else {
            break;
        };
        if cut - p.len_utf8() <= pos {
            // The whole slice is one cluster too big to keep whole.
            return first;
        }
        cut -= p.len_utf8();
    }
    cut
}

fn is_joining(c: char) -> bool {
    matches!(u32::from(c),
        0x300..=0x36f | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff | 0x20d0..=0x20ff
        | 0xfe00..=0xfe0f | 0xfe20..=0xfe2f | 0x200d | 0x1f3fb..=0x1f3ff | 0xe0100..=0xe01ef)
}
