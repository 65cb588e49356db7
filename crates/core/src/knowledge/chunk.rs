//! Splits light-markdown document text into retrieval chunks.
//!
//! Pipeline: lines -> blocks (paragraph, list item, table row, code) grouped
//! into heading sections -> units (blocks, or sentence/line/word/character
//! pieces of blocks too big for one chunk) -> greedy packing per section.
//! Every chunk's text is a contiguous slice of the (newline-normalised)
//! input, optionally preceded by a repeated table header, which keeps
//! packing cheap and the output faithful to the source.

use super::tokens::estimate_tokens;
use std::borrow::Cow;
use std::ops::Range;

/// Limits for [`chunk_text`], all in estimated cl100k tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkOptions {
    /// Packing stops before a block would push a chunk past this size.
    pub target_tokens: usize,
    /// Hard ceiling; blocks above it are split. Values below
    /// [`MIN_MAX_TOKENS`] are raised to it.
    pub max_tokens: usize,
    /// Budget for sentences repeated from the previous chunk of a section.
    /// Capped at half the target so every chunk still makes progress.
    pub overlap_tokens: usize,
}

/// One estimated character can cost up to 3 tokens (astral-plane symbols),
/// so a smaller ceiling could not be honoured by any split.
pub const MIN_MAX_TOKENS: usize = 8;

impl Default for ChunkOptions {
    /// ~200 tokens (~150 English words) is one or two paragraphs: specific
    /// enough that a full-text hit points at the passage that answers the
    /// query, yet enough context to be useful when pasted into a prompt
    /// (several chunks fit a typical budget). A 320 ceiling lets most whole
    /// paragraphs stay intact instead of being cut at 201 tokens. 40 tokens
    /// of overlap (20 %) is one or two sentences, enough that a statement
    /// straddling a boundary is still found whole in one of the two chunks
    /// without bloating the index.
    fn default() -> Self {
        ChunkOptions {
            target_tokens: 200,
            max_tokens: 320,
            overlap_tokens: 40,
        }
    }
}

/// A piece of a document ready for indexing.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// 0-based order within the document.
    pub position: usize,
    /// Heading path the chunk falls under, e.g. "Installation > Linux".
    pub heading: Option<String>,
    /// Chunk text, without the heading line unless it is the only content.
    pub text: String,
    /// `estimate_tokens(text)`.
    pub tokens: usize,
}

/// Splits `text` into chunks; see the module docs for the strategy.
#[must_use]
pub fn chunk_text(text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    // Byte ranges are computed on this copy, so "\r\n" is folded first to
    // keep line handling in one place.
    let text: Cow<str> = if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    };
    let limits = Limits::new(opts);
    let doc = parse(&text);
    let mut out = Vec::new();
    for section in &doc.sections {
        let units = section_units(&text, section, &limits);
        pack_section(&text, &doc, section, &units, &limits, &mut out);
    }
    out
}

#[derive(Clone, Copy)]
struct Limits {
    target: usize,
    max: usize,
    overlap: usize,
}

impl Limits {
    fn new(o: &ChunkOptions) -> Self {
        let max = o.max_tokens.max(MIN_MAX_TOKENS);
        let target = o.target_tokens.clamp(1, max);
        Limits {
            target,
            max,
            overlap: o.overlap_tokens.min(target / 2),
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BlockKind {
    Paragraph,
    ListItem,
    /// A table line; never split across chunks unless it alone is too big.
    Row,
    Code,
}

#[derive(Clone, Debug)]
struct Block {
    kind: BlockKind,
    range: Range<usize>,
    /// Index into `Doc::tables` for rows.
    table: Option<usize>,
}

#[derive(Debug, Default)]
struct Table {
    pipe: bool,
    /// First row (plus a markdown `---|---` rule if one follows it).
    first: Option<Range<usize>>,
    rows: usize,
    /// Set once the table is complete and its first row looks like a header.
    header: Option<Range<usize>>,
}

#[derive(Debug)]
struct Section {
    heading: Option<String>,
    blocks: Vec<Block>,
}

struct Doc {
    sections: Vec<Section>,
    tables: Vec<Table>,
}

struct Parser<'a> {
    text: &'a str,
    sections: Vec<Section>,
    tables: Vec<Table>,
    stack: Vec<(usize, Range<usize>)>,
    /// Heading line that opened the current section, and its level.
    current_title: Option<(usize, Range<usize>)>,
    blocks: Vec<Block>,
    open: Option<Block>,
    /// Table the previous line belonged to, if it was a row.
    open_table: Option<usize>,
    fence: Option<(Block, &'a str)>,
}

fn parse(text: &str) -> Doc {
    let mut p = Parser {
        text,
        sections: Vec::new(),
        tables: Vec::new(),
        stack: Vec::new(),
        current_title: None,
        blocks: Vec::new(),
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
    if let Some((block, _)) = p.fence.take() {
        p.blocks.push(block);
    }
    p.close_block();
    p.finish_section(None);
    for t in &mut p.tables {
        if t.pipe && t.rows >= 2 {
            t.header = t
                .first
                .clone()
                .filter(|r| looks_like_header(&text[r.clone()]));
        }
    }
    Doc {
        sections: p.sections,
        tables: p.tables,
    }
}

impl Parser<'_> {
    fn line(&mut self, line: &str, start: usize) {
        let end = start + line.len();
        let trimmed = line.trim();
        if let Some((block, marker)) = &mut self.fence {
            block.range.end = end;
            let fence_char = marker.chars().next().unwrap_or('`');
            if trimmed.starts_with(*marker) && trimmed.trim_start_matches(fence_char).is_empty() {
                if let Some((block, _)) = self.fence.take() {
                    self.blocks.push(block);
                }
            }
            return;
        }
        if trimmed.is_empty() {
            // A blank line ends a table as well as a paragraph.
            self.close_block();
            self.open_table = None;
            return;
        }
        let is_row = row_kind(trimmed);
        if is_row.is_none() {
            self.open_table = None;
        }
        for marker in ["```", "~~~"] {
            if trimmed.starts_with(marker) {
                self.close_block();
                let block = Block {
                    kind: BlockKind::Code,
                    range: start..end,
                    table: None,
                };
                self.fence = Some((block, marker));
                return;
            }
        }
        if let Some((level, title)) = heading(line) {
            self.close_block();
            let title = start + title.start..start + title.end;
            self.finish_section(Some(level));
            while self.stack.last().is_some_and(|(l, _)| *l >= level) {
                self.stack.pop();
            }
            self.stack.push((level, title.clone()));
            self.current_title = Some((level, title));
            return;
        }
        if let Some(pipe) = is_row {
            self.close_block();
            self.row(trimmed, start..end, pipe);
            return;
        }
        if is_list_item(trimmed) {
            self.close_block();
        }
        match &mut self.open {
            // A non-item line continues the paragraph or item above it.
            Some(b) => b.range.end = end,
            None => {
                let kind = if is_list_item(trimmed) {
                    BlockKind::ListItem
                } else {
                    BlockKind::Paragraph
                };
                self.open = Some(Block {
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
        // block, so the pair is kept together and repeated together.
        if pipe && table.rows == 1 && is_rule_row(trimmed) {
            if let (Some(first), Some(last)) = (&mut table.first, self.blocks.last_mut()) {
                first.end = range.end;
                last.range.end = range.end;
                return;
            }
        }
        table.rows += 1;
        if table.first.is_none() {
            table.first = Some(range.clone());
        }
        self.blocks.push(Block {
            kind: BlockKind::Row,
            range,
            table: Some(id),
        });
    }

    fn close_block(&mut self) {
        if let Some(b) = self.open.take() {
            self.blocks.push(b);
        }
    }

    /// Ends the current section; `next_level` is the level of the heading
    /// that starts the next one (None at end of input).
    fn finish_section(&mut self, next_level: Option<usize>) {
        let mut blocks = std::mem::take(&mut self.blocks);
        if blocks.is_empty() {
            // A heading with no body is kept as a chunk of its own unless a
            // deeper heading follows, whose path already carries it.
            match (&self.current_title, next_level) {
                (Some((level, title)), next) if next.is_none_or(|n| n <= *level) => {
                    blocks.push(Block {
                        kind: BlockKind::Paragraph,
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
        self.sections.push(Section { heading, blocks });
    }
}

/// `(level, title range relative to line)` for an ATX heading line.
fn heading(line: &str) -> Option<(usize, Range<usize>)> {
    let indent = line.len() - line.trim_start().len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.starts_with([' ', '\t']) {
        return None;
    }
    let mut title = after.trim();
    // Optional closing sequence: "## Title ##".
    let stripped = title.trim_end_matches('#');
    if stripped.len() < title.len() && (stripped.is_empty() || stripped.ends_with([' ', '\t'])) {
        title = stripped.trim_end();
    }
    if title.is_empty() {
        return None;
    }
    let start = title.as_ptr() as usize - line.as_ptr() as usize;
    Some((level, start..start + title.len()))
}

fn is_list_item(t: &str) -> bool {
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits) && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
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
    let mut n = 0;
    for cell in cells(row) {
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

// ---------------------------------------------------------------------------
// Units
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Unit {
    range: Range<usize>,
    tokens: usize,
    /// Index of the block within its section; pieces of one block share it.
    block: usize,
    kind: BlockKind,
    table: Option<usize>,
}

fn trim_range(text: &str, r: Range<usize>) -> Range<usize> {
    let s = text.get(r.clone()).unwrap_or("");
    let lead = s.len() - s.trim_start().len();
    let trail = s.trim_start().len() - s.trim().len();
    r.start + lead..r.end - trail
}

fn section_units(text: &str, section: &Section, limits: &Limits) -> Vec<Unit> {
    let mut units = Vec::new();
    let mut pieces = Vec::new();
    for (idx, block) in section.blocks.iter().enumerate() {
        let range = trim_range(text, block.range.clone());
        if range.is_empty() {
            continue;
        }
        pieces.clear();
        let level = match block.kind {
            BlockKind::Paragraph | BlockKind::ListItem => Level::Sentences,
            BlockKind::Row | BlockKind::Code => Level::Lines,
        };
        fit(text, range, level, limits, &mut pieces);
        units.extend(pieces.drain(..).map(|(range, tokens)| Unit {
            range,
            tokens,
            block: idx,
            kind: block.kind,
            table: block.table,
        }));
    }
    units
}

/// How a too-big span is broken down, coarsest first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Sentences,
    Lines,
    Words,
}

/// Pushes `range` whole if it fits `max`, otherwise pieces of it that do.
fn fit(
    text: &str,
    range: Range<usize>,
    level: Level,
    limits: &Limits,
    out: &mut Vec<(Range<usize>, usize)>,
) {
    let tokens = estimate_tokens(&text[range.clone()]);
    if tokens <= limits.max {
        out.push((range, tokens));
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

fn line_ranges(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
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
fn split_words(
    text: &str,
    range: Range<usize>,
    limits: &Limits,
    out: &mut Vec<(Range<usize>, usize)>,
) {
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
fn emit_words(
    text: &str,
    range: Range<usize>,
    limits: &Limits,
    out: &mut Vec<(Range<usize>, usize)>,
) {
    let tokens = estimate_tokens(&text[range.clone()]);
    if tokens <= limits.max {
        out.push((range, tokens));
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
fn split_chars(
    text: &str,
    range: Range<usize>,
    limits: &Limits,
    out: &mut Vec<(Range<usize>, usize)>,
) {
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

// ---------------------------------------------------------------------------
// Sentences
// ---------------------------------------------------------------------------

/// Words whose trailing period almost never ends a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "cf", "approx", "ca", "al",
    "dept", "gen", "gov", "sen", "rev", "hon", "capt", "col", "lt", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "bzw", "vgl", "ggf", "sog", "mme",
    "mlle", "sra", "resp",
];

/// Abbreviations that precede a number ("No. 5", "Fig. 3"); as plain words
/// ("the answer is no.") they do end sentences.
const NUMBER_ABBREVIATIONS: &[&str] = &[
    "no", "nos", "nr", "fig", "figs", "vol", "pp", "p", "art", "abs", "eq", "ref", "ch", "sec",
];

fn is_abbreviation(word: &str, next: Option<char>) -> bool {
    let w = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    if w.is_empty() {
        return false;
    }
    // Initials and dotted forms: "J.", "e.g.", "i.e.", "U.S.", "z.B.".
    let single_initial = w.chars().count() == 1 && w.chars().all(char::is_uppercase);
    if w.contains('.') || single_initial {
        return w
            .split('.')
            .all(|p| p.chars().count() <= 2 && p.chars().all(char::is_alphabetic));
    }
    let lower = w.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
        || (next.is_some_and(|c| c.is_ascii_digit())
            && NUMBER_ABBREVIATIONS.contains(&lower.as_str()))
}

fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | ')' | ']' | '}' | '»' | '”' | '’' | '」' | '』' | '）' | '】' | '》' | '〉'
    )
}

/// Trimmed sentence ranges inside `range`. Western terminators need
/// whitespace after them and a next sentence not starting in lowercase
/// (so "3.14", "e.g. this", "example.com" stay intact); CJK terminators
/// split immediately because those scripts do not use spaces.
fn sentence_ranges(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let s = &text[range.clone()];
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let cjk = matches!(c, '。' | '！' | '？' | '｡');
        if !cjk && !matches!(c, '.' | '!' | '?' | '…') {
            continue;
        }
        // Absorb "?!", "...", and closing quotes/brackets.
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = iter.peek() {
            if matches!(d, '.' | '!' | '?' | '…' | '。' | '！' | '？') || is_closer(d) {
                end = j + d.len_utf8();
                iter.next();
            } else {
                break;
            }
        }
        let rest = &s[end..];
        if !cjk {
            if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
                continue;
            }
            let next = rest.trim_start().chars().next();
            if next.is_some_and(char::is_lowercase) {
                continue;
            }
            if c == '.' && end == i + 1 {
                let word_start = s[..i]
                    .char_indices()
                    .rev()
                    .find(|(_, c)| c.is_whitespace())
                    .map_or(0, |(p, c)| p + c.len_utf8());
                if is_abbreviation(&s[word_start.max(start)..i], next) {
                    continue;
                }
            }
        }
        let r = trim_range(text, range.start + start..range.start + end);
        if !r.is_empty() {
            out.push(r);
        }
        start = end;
    }
    let r = trim_range(text, range.start + start..range.end);
    if !r.is_empty() {
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------
// Packing
// ---------------------------------------------------------------------------

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

fn pack_section(
    text: &str,
    doc: &Doc,
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
            let sep = usize::from(j > i && units[j].block != units[j - 1].block);
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
            && is_table_header(doc, &units[j - 1])
            && units[j].table == units[j - 1].table
        {
            j -= 1;
        }
        // The exact estimate of the joined text decides; shrink until it
        // fits. A lone unit always fits: units were sized by the same
        // estimate on the same slice.
        let (chunk, first_start) = loop {
            let body_start = units[i].range.start;
            let candidate = build_text(text, &lead, body_start, units[j - 1].range.end);
            let tokens = estimate_tokens(&candidate);
            if tokens <= limits.max {
                let first_start = match &lead {
                    Lead::Overlap { start, .. } => *start,
                    _ => body_start,
                };
                break (
                    Chunk {
                        position: out.len(),
                        heading: section.heading.clone(),
                        text: candidate,
                        tokens,
                    },
                    first_start,
                );
            }
            if j - i > 1 {
                let scaled = ((j - i) as f64 * limits.max as f64 / tokens.max(1) as f64) as usize;
                j = i + scaled.clamp(1, j - i - 1);
            } else if !matches!(lead, Lead::None) {
                lead = Lead::None;
            } else {
                // Unreachable by construction; emitting beats looping.
                break (
                    Chunk {
                        position: out.len(),
                        heading: section.heading.clone(),
                        text: candidate,
                        tokens,
                    },
                    body_start,
                );
            }
        };
        out.push(chunk);
        i = j;
        lead = match units.get(i) {
            Some(next) => next_lead(text, doc, units, i, first_start, next, limits),
            None => Lead::None,
        };
    }
}

fn is_table_header(doc: &Doc, unit: &Unit) -> bool {
    let header = unit
        .table
        .and_then(|t| doc.tables.get(t))
        .and_then(|t| t.header.as_ref());
    header.is_some_and(|h| h.start == unit.range.start)
}

/// What the chunk starting at `units[next_idx]` repeats from before it.
fn next_lead(
    text: &str,
    doc: &Doc,
    units: &[Unit],
    next_idx: usize,
    chunk_start: usize,
    next: &Unit,
    limits: &Limits,
) -> Lead {
    if next.kind == BlockKind::Row {
        let header = next
            .table
            .and_then(|t| doc.tables.get(t))
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
        if unit.kind == BlockKind::Row || unit.range.end <= chunk_start {
            break;
        }
        let range = unit.range.start.max(chunk_start)..unit.range.end;
        let parts = match unit.kind {
            BlockKind::Code => line_ranges(text, range),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&str> {
        sentence_ranges(s, 0..s.len())
            .into_iter()
            .map(|r| &s[r])
            .collect()
    }

    #[test]
    fn sentence_edge_cases() {
        let cases: &[(&str, &[&str])] = &[
            (
                "Hello there. How are you? Fine!",
                &["Hello there.", "How are you?", "Fine!"],
            ),
            (
                "Dr. Smith arrived. He sat.",
                &["Dr. Smith arrived.", "He sat."],
            ),
            (
                "Use tools, e.g. hammers. Then rest.",
                &["Use tools, e.g. hammers.", "Then rest."],
            ),
            ("Pi is 3.14 exactly. Yes.", &["Pi is 3.14 exactly.", "Yes."]),
            (
                "The value is 3.14. Next one.",
                &["The value is 3.14.", "Next one."],
            ),
            (
                "The U.S. Army won. Peace.",
                &["The U.S. Army won.", "Peace."],
            ),
            (
                "See No. 5 here. The answer is no. Right.",
                &["See No. 5 here.", "The answer is no.", "Right."],
            ),
            (
                "He said \"Stop.\" Then left.",
                &["He said \"Stop.\"", "Then left."],
            ),
            (
                "Wait... What? Really?! Yes.",
                &["Wait...", "What?", "Really?!", "Yes."],
            ),
            (
                "Visit example.com today. Ok.",
                &["Visit example.com today.", "Ok."],
            ),
            (
                "J. R. R. Tolkien wrote. Good.",
                &["J. R. R. Tolkien wrote.", "Good."],
            ),
            (
                "Apples, pears etc. are fruit. Fine.",
                &["Apples, pears etc. are fruit.", "Fine."],
            ),
            (
                "今天很好。我们走吧！好吗？",
                &["今天很好。", "我们走吧！", "好吗？"],
            ),
            (
                "「こんにちは。」と言った。",
                &["「こんにちは。」", "と言った。"],
            ),
            (
                "Das ist z.B. gut. Und dann?",
                &["Das ist z.B. gut.", "Und dann?"],
            ),
            ("Он пришёл. Она ушла.", &["Он пришёл.", "Она ушла."]),
            ("No terminator at all", &["No terminator at all"]),
            ("  ", &[]),
            ("x\u{a0}. Y", &["x\u{a0}.", "Y"]),
        ];
        for (input, want) in cases {
            assert_eq!(split(input), *want, "{input:?}");
        }
    }

    #[test]
    fn headings_are_recognised_strictly() {
        assert_eq!(heading("## Title"), Some((2, 3..8)));
        assert_eq!(
            heading("# Title ##").map(|(l, r)| (l, &"# Title ##"[r])),
            Some((1, "Title"))
        );
        assert_eq!(heading("# C#"), Some((1, 2..4)));
        assert_eq!(heading("#Title"), None);
        assert_eq!(heading("####### Seven"), None);
        assert_eq!(heading("#   "), None);
        assert_eq!(heading("    # indented code"), None);
    }

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
