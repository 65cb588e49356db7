//! Reading one line: indentation measured in columns, and the markers that open blocks.
//!
//! Every function here looks at one line and returns in time linear in its length; offsets
//! only ever stop on ASCII bytes, so slicing at them cannot split a character.

use super::links::skip_space;
use std::borrow::Cow;

/// A line read from left to right. Indentation counts columns with tab stops of four, as
/// CommonMark does, so that a tab can be partly taken by a container (a `>` and one space)
/// and partly left as indentation of what follows.
#[derive(Clone)]
pub(super) struct Line<'a> {
    text: &'a str,
    pos: usize,
    col: usize,
    /// The tab at `pos` has been partly consumed: the columns it still spans read as spaces.
    half_tab: bool,
}

impl<'a> Line<'a> {
    pub(super) fn new(text: &'a str) -> Line<'a> {
        Line {
            text,
            pos: 0,
            col: 0,
            half_tab: false,
        }
    }

    /// How many columns of spaces and tabs come next.
    pub(super) fn indent(&self) -> usize {
        let mut col = self.col;
        for &b in &self.text.as_bytes()[self.pos..] {
            match b {
                b' ' => col += 1,
                b'\t' => col += 4 - col % 4,
                _ => break,
            }
        }
        col - self.col
    }

    pub(super) fn is_blank(&self) -> bool {
        self.text.as_bytes()[self.pos..]
            .iter()
            .all(|&b| b == b' ' || b == b'\t')
    }

    /// Consumes up to `cols` columns of indentation, splitting a tab if need be.
    pub(super) fn skip_cols(&mut self, mut cols: usize) {
        let bytes = self.text.as_bytes();
        while cols > 0 {
            match bytes.get(self.pos) {
                Some(b' ') => {
                    self.pos += 1;
                    self.col += 1;
                    cols -= 1;
                }
                Some(b'\t') => {
                    let width = 4 - self.col % 4;
                    if width <= cols {
                        self.pos += 1;
                        self.col += width;
                        self.half_tab = false;
                        cols -= width;
                    } else {
                        self.col += cols;
                        self.half_tab = true;
                        cols = 0;
                    }
                }
                _ => break,
            }
        }
    }

    /// Consumes all indentation.
    pub(super) fn skip_indent(&mut self) {
        let cols = self.indent();
        self.skip_cols(cols);
    }

    /// Consumes the `n` bytes of a marker, which holds no tab.
    pub(super) fn advance(&mut self, n: usize) {
        let end = (self.pos + n).min(self.text.len());
        let Some(marker) = self.text.get(self.pos..end) else {
            return;
        };
        self.col += marker.chars().count();
        self.pos = end;
        self.half_tab = false;
    }

    /// The rest of the line after any indentation, which the caller has measured.
    pub(super) fn after_indent(&self) -> &'a str {
        self.text[self.pos..].trim_start_matches([' ', '\t'])
    }

    /// The rest of the line, with what is left of a split tab as spaces.
    pub(super) fn content(&self) -> Cow<'a, str> {
        let rest = &self.text[self.pos..];
        if self.half_tab {
            let spaces = 4 - self.col % 4;
            Cow::Owned(format!("{}{}", " ".repeat(spaces), &rest[1..]))
        } else {
            Cow::Borrowed(rest)
        }
    }

    /// Consumes a block quote marker, `>` and one optional space, if one comes next.
    pub(super) fn quote_marker(&mut self) -> bool {
        if self.indent() > 3 || !self.after_indent().starts_with('>') {
            return false;
        }
        self.skip_indent();
        self.advance(1);
        if self.indent() > 0 {
            self.skip_cols(1);
        }
        true
    }
}

/// Whether `s` (a line's text after its indentation) is a thematic break: three or more of
/// the same `*`, `-` or `_`, with nothing but spaces and tabs between.
pub(super) fn thematic_break(s: &str) -> bool {
    let Some(mark) = s.bytes().next().filter(|b| matches!(b, b'*' | b'-' | b'_')) else {
        return false;
    };
    let mut count = 0;
    for b in s.bytes() {
        if b == mark {
            count += 1;
        } else if b != b' ' && b != b'\t' {
            return false;
        }
    }
    count >= 3
}

/// An ATX heading: its level and its text, the closing `#`s removed.
pub(super) fn atx_heading(s: &str) -> Option<(u8, &str)> {
    let level = s.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &s[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim_matches([' ', '\t']);
    let without_hashes = text.trim_end_matches('#');
    let text = if without_hashes.is_empty() {
        without_hashes
    } else if without_hashes.ends_with([' ', '\t']) {
        without_hashes.trim_end_matches([' ', '\t'])
    } else {
        text
    };
    Some((level as u8, text))
}

/// A setext underline: level 1 for `=`, 2 for `-`.
pub(super) fn setext_underline(s: &str) -> Option<u8> {
    let mark = s.bytes().next()?;
    let level = match mark {
        b'=' => 1,
        b'-' => 2,
        _ => return None,
    };
    let run = s.bytes().take_while(|&b| b == mark).count();
    s[run..]
        .bytes()
        .all(|b| b == b' ' || b == b'\t')
        .then_some(level)
}

/// An opening code fence: its character and length.
pub(super) fn code_fence(s: &str) -> Option<(u8, usize)> {
    let mark = s.bytes().next().filter(|b| matches!(b, b'`' | b'~'))?;
    let len = s.bytes().take_while(|&b| b == mark).count();
    // A backtick fence's info string may not hold a backtick: that reads as a code span.
    (len >= 3 && !(mark == b'`' && s[len..].contains('`'))).then_some((mark, len))
}

/// Whether `s` closes a fence of `mark` at least `len` long.
pub(super) fn closes_fence(s: &str, mark: u8, len: usize) -> bool {
    let run = s.bytes().take_while(|&b| b == mark).count();
    run >= len && s[run..].bytes().all(|b| b == b' ' || b == b'\t')
}

/// A list item's marker.
pub(super) struct ListMarker {
    /// `-`, `+` or `*` for bullets, `.` or `)` after the number of an ordered item: items
    /// of one list share it.
    pub(super) kind: u8,
    pub(super) number: Option<u64>,
    pub(super) width: usize,
}

/// A list marker at the start of `s`, followed by a space, a tab or the end of the line.
pub(super) fn list_marker(s: &str) -> Option<ListMarker> {
    let bytes = s.as_bytes();
    let first = *bytes.first()?;
    let marker = if matches!(first, b'-' | b'+' | b'*') {
        ListMarker {
            kind: first,
            number: None,
            width: 1,
        }
    } else {
        let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let kind = *bytes.get(digits)?;
        if !(1..=9).contains(&digits) || !matches!(kind, b'.' | b')') {
            return None;
        }
        ListMarker {
            kind,
            number: s[..digits].parse().ok(),
            width: digits + 1,
        }
    };
    match bytes.get(marker.width) {
        None | Some(b' ' | b'\t') => Some(marker),
        _ => None,
    }
}

/// A footnote definition's label, `[^label]:`, and the length of that opening.
pub(super) fn footnote_definition(s: &str) -> Option<(&str, usize)> {
    let rest = s.strip_prefix("[^")?;
    let end = footnote_label(rest)?;
    rest[end..]
        .starts_with("]:")
        .then_some((&rest[..end], 2 + end + 2))
}

/// The length of a footnote's label at the start of `s` (after `[^`), which `]` must
/// follow: not blank, on one line, without brackets.
pub(super) fn footnote_label(s: &str) -> Option<usize> {
    let end = s.find([']', '[', '\n'])?;
    let valid = s[end..].starts_with(']') && !s[..end].trim().is_empty() && end <= 999;
    valid.then_some(end)
}

/// Where an HTML block ends.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum HtmlEnd {
    /// At the line holding this text, in any case (`</script>`, `-->`, …).
    Marker(&'static str),
    /// At the next blank line.
    Blank,
}

/// Elements whose start or end tag opens an HTML block that ends at a blank line.
const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "base",
    "basefont",
    "blockquote",
    "body",
    "caption",
    "center",
    "col",
    "colgroup",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frame",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "link",
    "main",
    "menu",
    "menuitem",
    "nav",
    "noframes",
    "ol",
    "optgroup",
    "option",
    "p",
    "param",
    "search",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "title",
    "tr",
    "track",
    "ul",
];

/// Elements whose content is raw text: their block runs to the closing tag, blank lines and
/// all.
const RAW_TAGS: [(&str, &str); 4] = [
    ("script", "</script>"),
    ("pre", "</pre>"),
    ("style", "</style>"),
    ("textarea", "</textarea>"),
];

/// Whether `s` opens an HTML block, and where that block ends. A block opened by an
/// arbitrary tag alone on its line (`lone_tag`) cannot interrupt a paragraph.
pub(super) fn html_block_start(s: &str, lone_tag: bool) -> Option<HtmlEnd> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'<') {
        return None;
    }
    let name_end = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count()
    };
    let end = name_end(1);
    let after = bytes.get(end).copied();
    for (tag, close) in RAW_TAGS {
        if s[1..end].eq_ignore_ascii_case(tag) && matches!(after, None | Some(b' ' | b'\t' | b'>'))
        {
            return Some(HtmlEnd::Marker(close));
        }
    }
    if s.starts_with("<!--") {
        return Some(HtmlEnd::Marker("-->"));
    }
    if s.starts_with("<?") {
        return Some(HtmlEnd::Marker("?>"));
    }
    if s.starts_with("<![CDATA[") {
        return Some(HtmlEnd::Marker("]]>"));
    }
    if s.starts_with("<!") && bytes.get(2).is_some_and(u8::is_ascii_alphabetic) {
        return Some(HtmlEnd::Marker(">"));
    }
    let (from, end) = if bytes.get(1) == Some(&b'/') {
        (2, name_end(2))
    } else {
        (1, end)
    };
    let name = &s[from..end];
    let ends_name = match bytes.get(end) {
        None | Some(b' ' | b'\t' | b'>') => true,
        Some(b'/') => bytes.get(end + 1) == Some(&b'>'),
        _ => false,
    };
    if ends_name && BLOCK_TAGS.iter().any(|t| t.eq_ignore_ascii_case(name)) {
        return Some(HtmlEnd::Blank);
    }
    if lone_tag {
        let len = html_tag(bytes, 0)?;
        let raw = RAW_TAGS.iter().any(|(t, _)| t.eq_ignore_ascii_case(name));
        if !raw && s[len..].bytes().all(|b| b == b' ' || b == b'\t') {
            return Some(HtmlEnd::Blank);
        }
    }
    None
}

/// Whether `line` holds the end marker of an HTML block.
pub(super) fn ends_html_block(line: &str, end: HtmlEnd) -> bool {
    match end {
        HtmlEnd::Blank => false,
        HtmlEnd::Marker(marker) => line
            .as_bytes()
            .windows(marker.len())
            .any(|w| w.eq_ignore_ascii_case(marker.as_bytes())),
    }
}

/// The length of an HTML open or closing tag at `at` (which holds `<`), as CommonMark
/// defines them; `None` if there is none. It never reads past the first `<` or `>` outside
/// a quoted attribute value.
pub(super) fn html_tag(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    if !bytes.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-')
    {
        i += 1;
    }
    if closing {
        i = skip_space(bytes, i);
        return (bytes.get(i) == Some(&b'>')).then_some(i + 1 - at);
    }
    loop {
        let spaced = skip_space(bytes, i);
        match bytes.get(spaced)? {
            b'>' => return Some(spaced + 1 - at),
            b'/' => return (bytes.get(spaced + 1) == Some(&b'>')).then_some(spaced + 2 - at),
            b if spaced > i && (b.is_ascii_alphabetic() || *b == b'_' || *b == b':') => {
                i = spaced;
                while bytes
                    .get(i)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(b))
                {
                    i += 1;
                }
                let eq = skip_space(bytes, i);
                if bytes.get(eq) == Some(&b'=') {
                    i = attribute_value(bytes, skip_space(bytes, eq + 1))?;
                }
            }
            _ => return None,
        }
    }
}

/// The end of an attribute value starting at `i`.
fn attribute_value(bytes: &[u8], i: usize) -> Option<usize> {
    match bytes.get(i)? {
        q @ (b'"' | b'\'') => {
            let close = bytes.get(i + 1..)?.iter().position(|b| b == q)?;
            Some(i + 1 + close + 1)
        }
        _ => {
            let len = bytes[i..]
                .iter()
                .take_while(|b| !b" \t\n\"'=<>`".contains(b))
                .count();
            (len > 0).then_some(i + len)
        }
    }
}

/// The raw text of a table row's cells. Cells part at each `|` that is neither escaped nor
/// inside a code span, so `` `a|b` `` stays one cell. As in GitHub's tables, a backslash
/// before `|` always escapes it, even after another backslash, and goes before the cell is
/// read: that is how a pipe is written in a cell, code spans included.
pub(super) fn table_cells(line: &str) -> Vec<Cow<'_, str>> {
    let bytes = line.trim_matches([' ', '\t']).as_bytes();
    let line = line.trim_matches([' ', '\t']);
    let spans = code_spans(bytes);
    let mut spans = spans.iter().peekable();
    let mut cells = Vec::new();
    let mut start = usize::from(bytes.first() == Some(&b'|'));
    let mut i = start;
    while i < bytes.len() {
        if let Some(span) = spans.next_if(|s| s.start <= i) {
            i = span.end;
            continue;
        }
        if bytes[i] == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            cells.push(cell(&line[start..i]));
            start = i + 1;
        }
        i += 1;
    }
    if start < bytes.len() {
        cells.push(cell(&line[start..]));
    }
    cells
}

fn cell(raw: &str) -> Cow<'_, str> {
    if raw.contains("\\|") {
        Cow::Owned(raw.replace("\\|", "|"))
    } else {
        Cow::Borrowed(raw)
    }
}

/// The code spans of one line: a run of backticks opens one and the next run of the same
/// length closes it. Runs are looked up by length, so this is linear however many there are.
fn code_spans(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    // (start, length, whether it may open: an escaped backtick cannot).
    let mut runs: Vec<(usize, usize, bool)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let len = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            runs.push((i, len, i == 0 || bytes[i - 1] != b'\\'));
            i += len;
        } else {
            i += 1;
        }
    }
    // For each run, the next one of the same length, found in one backward pass.
    let mut next_same = vec![None; runs.len()];
    let mut latest = std::collections::HashMap::new();
    for (r, &(_, len, _)) in runs.iter().enumerate().rev() {
        next_same[r] = latest.insert(len, r);
    }
    let mut spans = Vec::new();
    let mut r = 0;
    while let Some(&(start, _, opens)) = runs.get(r) {
        match next_same[r]
            .filter(|_| opens)
            .and_then(|k| Some((k, runs.get(k)?)))
        {
            Some((k, &(close, len, _))) => {
                spans.push(start..close + len);
                r = k + 1;
            }
            None => r += 1,
        }
    }
    spans
}

/// The number of columns a table's delimiter row (`|---|:--:|`) sets; `None` if `s` is not
/// one.
pub(super) fn delimiter_row(s: &str) -> Option<usize> {
    let s = s.trim_matches([' ', '\t']);
    // Without a pipe, `---` is a rule or an underline.
    if !s.contains('|') {
        return None;
    }
    let inner = s.strip_prefix('|').unwrap_or(s);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut columns = 0;
    for col in inner.split('|') {
        let col = col.trim_matches([' ', '\t']);
        let dashes = col.strip_prefix(':').unwrap_or(col);
        let dashes = dashes.strip_suffix(':').unwrap_or(dashes);
        if dashes.is_empty() || !dashes.bytes().all(|b| b == b'-') {
            return None;
        }
        columns += 1;
    }
    Some(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_count_to_the_next_stop_of_four() {
        let mut line = Line::new(" \tcode");
        assert_eq!(line.indent(), 4);
        line.skip_cols(2);
        assert_eq!(line.content(), "  code");
        assert!(Line::new(" \t ").is_blank());
    }

    #[test]
    fn table_cells_part_outside_code_spans_only() {
        let cells = |s| {
            table_cells(s)
                .iter()
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(cells("| a | `b|c` | d\\|e |"), ["a", "`b|c`", "d|e"]);
        assert_eq!(cells("a | ``x`|`` | `\\|`"), ["a", "``x`|``", "`|`"]);
        assert_eq!(cells("| a\\\\| b |"), ["a\\| b"]);
        assert_eq!(cells("| `open | b |"), ["`open", "b"]);
        assert_eq!(delimiter_row("|:--|--:| :-: |"), Some(3));
        assert_eq!(delimiter_row("--|--"), Some(2));
        assert_eq!(delimiter_row("---"), None);
        assert_eq!(delimiter_row("|--||"), None);
    }

    #[test]
    fn html_tags() {
        let tag = |s: &str| html_tag(s.as_bytes(), 0);
        assert_eq!(tag("<a href=\"x>y\" b c='d' e=f/>."), Some(27));
        assert_eq!(tag("</div >x"), Some(7));
        assert_eq!(tag("<a b=>"), None);
        assert_eq!(tag("< a>"), None);
        assert_eq!(tag("<a\nb>"), Some(5));
    }
}
