//! Inline Markdown to plain text: the syntax goes, the words stay.
//!
//! The text is cut into pieces in one pass; emphasis and links are then resolved the way
//! CommonMark describes (a stack of delimiter runs and one of brackets), which only ever
//! hides pieces or shortens runs. Code spans, autolinks and inline HTML are taken whole
//! where they start, so nothing inside them is read as markup.
//!
//! Linear in the text: a code span's closing run is looked up by its length, searches for
//! the end of a comment or instruction remember where they stopped, and each delimiter run
//! leaves the stack once.

use super::super::html::parse_entity;
use super::links::{self, Labels};
use std::collections::HashMap;

/// The plain text of a paragraph, heading or table cell. Line breaks stay; the caller
/// collapses whitespace.
pub(super) fn text(src: &str, labels: &Labels) -> String {
    let mut reader = Inlines {
        src,
        bytes: src.as_bytes(),
        labels,
        pieces: Vec::new(),
        delims: Vec::new(),
        top: None,
        brackets: Vec::new(),
        links_below: 0,
        backtick_runs: None,
        ends: HashMap::new(),
    };
    reader.scan();
    reader.finish()
}

enum Piece<'a> {
    Text(&'a str),
    Char(char),
    /// A run of `*`, `_` or `~`: what emphasis leaves of it is written.
    Run {
        mark: u8,
        left: usize,
    },
    /// Markup that a link turned out to be.
    Hidden,
    /// An image: nothing from here up to the piece at this index is written.
    SkipTo(usize),
}

/// A run of `*`, `_` or `~` that may open or close emphasis, kept in a list linked in both
/// directions so that runs leave it in constant time.
struct Delim {
    piece: usize,
    mark: u8,
    /// The run's length as written, which the rule of three looks at.
    len: usize,
    can_open: bool,
    can_close: bool,
    prev: Option<usize>,
    next: Option<usize>,
}

struct Bracket {
    piece: usize,
    image: bool,
    /// How many delimiter runs had been seen: those after it belong to its text.
    delims: usize,
    /// Where the text inside the brackets starts.
    text_start: usize,
}

struct Inlines<'a> {
    src: &'a str,
    bytes: &'a [u8],
    labels: &'a Labels,
    pieces: Vec<Piece<'a>>,
    delims: Vec<Delim>,
    /// The last run still on the stack.
    top: Option<usize>,
    brackets: Vec<Bracket>,
    /// Brackets below this index cannot open a link: links do not nest.
    links_below: usize,
    /// Start offsets of the runs of backticks, by length.
    backtick_runs: Option<HashMap<usize, Vec<usize>>>,
    /// For each closing marker (`-->`, `?>`, …): where the last search for it started and
    /// what it found.
    ends: HashMap<&'static str, (usize, Option<usize>)>,
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace())
}

impl<'a> Inlines<'a> {
    fn scan(&mut self) {
        let bytes = self.bytes;
        let mut text_from = 0;
        let mut i = 0;
        while i < bytes.len() {
            if !matches!(
                bytes[i],
                b'\\' | b'`' | b'*' | b'_' | b'~' | b'[' | b']' | b'!' | b'<' | b'&'
            ) {
                i += 1;
                continue;
            }
            self.push_text(text_from, i);
            i = match bytes[i] {
                b'\\' => self.escape(i),
                b'`' => self.code_span(i),
                b'[' => self.open_bracket(i),
                // `![^1]` is a `!` before a footnote reference.
                b'!' if bytes.get(i + 1) == Some(&b'[') && bytes.get(i + 2) != Some(&b'^') => {
                    self.open_image(i)
                }
                b']' => self.close_bracket(i),
                b'<' => self.angle(i),
                b'&' => self.entity(i),
                b'!' => {
                    self.push_text(i, i + 1);
                    i + 1
                }
                _ => self.delimiter_run(i),
            };
            text_from = i;
        }
        self.push_text(text_from, bytes.len());
        self.process_emphasis(0);
    }

    fn finish(self) -> String {
        let mut out = String::with_capacity(self.src.len());
        let mut i = 0;
        while let Some(piece) = self.pieces.get(i) {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Char(c) => out.push(*c),
                Piece::Run { mark, left } => {
                    out.extend(std::iter::repeat_n(char::from(*mark), *left));
                }
                Piece::Hidden => {}
                Piece::SkipTo(end) => {
                    i = (*end).max(i + 1);
                    continue;
                }
            }
            i += 1;
        }
        out
    }

    fn push_text(&mut self, from: usize, to: usize) {
        if from < to {
            self.pieces.push(Piece::Text(&self.src[from..to]));
        }
    }

    /// A backslash before punctuation makes it literal; before a line end, it is a break.
    fn escape(&mut self, i: usize) -> usize {
        match self.bytes.get(i + 1) {
            Some(b) if b.is_ascii_punctuation() => {
                self.push_text(i + 1, i + 2);
                i + 2
            }
            Some(b'\n') => {
                self.push_text(i + 1, i + 2);
                i + 2
            }
            _ => {
                self.push_text(i, i + 1);
                i + 1
            }
        }
    }

    /// A code span runs to the next run of backticks of the same length; without one, the
    /// backticks are text.
    fn code_span(&mut self, i: usize) -> usize {
        let bytes = self.bytes;
        let len = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let runs = self.backtick_runs.get_or_insert_with(|| {
            let mut runs: HashMap<usize, Vec<usize>> = HashMap::new();
            let mut j = 0;
            while j < bytes.len() {
                let run = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                if run > 0 {
                    runs.entry(run).or_default().push(j);
                    j += run;
                } else {
                    j += 1;
                }
            }
            runs
        });
        let close = runs.get(&len).and_then(|starts| {
            let k = starts.partition_point(|&s| s < i + len);
            starts.get(k).copied()
        });
        match close {
            Some(close) => {
                self.push_text(i + len, close);
                close + len
            }
            None => {
                self.push_text(i, i + len);
                i + len
            }
        }
    }

    fn delimiter_run(&mut self, i: usize) -> usize {
        let mark = self.bytes[i];
        let len = self.bytes[i..].iter().take_while(|&&b| b == mark).count();
        let before = self.src[..i].chars().next_back();
        let after = self.src[i + len..].chars().next();
        let space = |c: Option<char>| c.is_none_or(char::is_whitespace);
        let punct = |c: Option<char>| c.is_some_and(is_punctuation);
        let left = !space(after) && (!punct(after) || space(before) || punct(before));
        let right = !space(before) && (!punct(before) || space(after) || punct(after));
        // `*` and `~~` may be inside a word; `_` and `~` not, so snake_case stays as it is.
        let (can_open, can_close) = match (mark, len) {
            (b'*', _) => (left, right),
            (b'~', 2) => (!space(after), !space(before)),
            (b'~', 3..) => (false, false),
            _ => (
                left && (!right || punct(before)),
                right && (!left || punct(after)),
            ),
        };
        if !can_open && !can_close {
            self.push_text(i, i + len);
            return i + len;
        }
        let d = self.delims.len();
        self.delims.push(Delim {
            piece: self.pieces.len(),
            mark,
            len,
            can_open,
            can_close,
            prev: self.top,
            next: None,
        });
        if let Some(t) = self.top {
            self.delims[t].next = Some(d);
        }
        self.top = Some(d);
        self.pieces.push(Piece::Run { mark, left: len });
        i + len
    }

    /// `[^label]` is a footnote reference and stays as written; any other `[` may open a
    /// link.
    fn open_bracket(&mut self, i: usize) -> usize {
        if self.bytes.get(i + 1) == Some(&b'^') {
            if let Some(len) = super::scan::footnote_label(&self.src[i + 2..]) {
                let end = i + 2 + len + 1;
                self.push_text(i, end);
                return end;
            }
        }
        self.push_bracket(i, 1, false)
    }

    fn open_image(&mut self, i: usize) -> usize {
        self.push_bracket(i, 2, true)
    }

    fn push_bracket(&mut self, i: usize, len: usize, image: bool) -> usize {
        // A bracket opened after a link may open one itself, whatever came before.
        self.links_below = self.links_below.min(self.brackets.len());
        self.brackets.push(Bracket {
            piece: self.pieces.len(),
            image,
            delims: self.delims.len(),
            text_start: i + len,
        });
        self.push_text(i, i + len);
        i + len
    }

    /// A `]` closes the last open bracket if a destination or a label follows: a link keeps
    /// its text, an image goes whole. `[text][label]` and `[text][]` are links even when the
    /// label is defined nowhere (a README cut short still reads as text); a bare `[text]` is
    /// one only when its label is defined.
    fn close_bracket(&mut self, i: usize) -> usize {
        let Some(opener) = self.brackets.pop() else {
            self.push_text(i, i + 1);
            return i + 1;
        };
        if !opener.image && self.brackets.len() < self.links_below {
            self.push_text(i, i + 1);
            return i + 1;
        }
        let bytes = self.bytes;
        let inline = match bytes.get(i + 1) {
            Some(b'(') => links::inline_link_end(bytes, i + 1),
            _ => None,
        };
        let reference = || match bytes.get(i + 1) {
            Some(b'[') if bytes.get(i + 2) == Some(&b']') => Some(i + 3),
            Some(b'[') if bytes.get(i + 2) != Some(&b'^') => links::label_end(bytes, i + 1),
            _ => None,
        };
        let shortcut = || {
            let label = &self.src[opener.text_start..i];
            let known = !self.labels.is_empty()
                && label.len() <= 4 * 999
                && self.labels.contains(&links::normalise_label(label));
            known.then_some(i + 1)
        };
        let Some(end) = inline.or_else(reference).or_else(shortcut) else {
            self.push_text(i, i + 1);
            return i + 1;
        };
        self.process_emphasis(opener.delims);
        if opener.image {
            self.pieces[opener.piece] = Piece::SkipTo(self.pieces.len());
        } else {
            self.pieces[opener.piece] = Piece::Hidden;
            self.links_below = self.brackets.len();
        }
        end
    }

    /// An autolink keeps its address as text; inline HTML goes, except that a `<br>` still
    /// parts the words around it.
    fn angle(&mut self, i: usize) -> usize {
        if let Some(end) = self.autolink(i) {
            self.push_text(i + 1, end - 1);
            return end;
        }
        if let Some(end) = self.inline_html(i) {
            let tag = &self.src[i + 1..end];
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            if name.eq_ignore_ascii_case("br") {
                self.pieces.push(Piece::Char(' '));
            }
            return end;
        }
        self.push_text(i, i + 1);
        i + 1
    }

    /// `<scheme:address>` or `<name@example.com>`: the end just past `>`.
    fn autolink(&self, i: usize) -> Option<usize> {
        let bytes = self.bytes;
        let rest = bytes.get(i + 1..)?;
        let scheme = rest
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
            .count();
        if (2..=32).contains(&scheme)
            && rest[0].is_ascii_alphabetic()
            && rest.get(scheme) == Some(&b':')
        {
            let len = rest[scheme..]
                .iter()
                .take_while(|&&b| b > b' ' && b != b'<' && b != b'>' && b != 0x7f)
                .count();
            if rest.get(scheme + len) == Some(&b'>') {
                return Some(i + 1 + scheme + len + 1);
            }
        }
        let local = rest
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || b".!#$%&'*+/=?^_`{|}~-".contains(b))
            .count();
        if local == 0 || rest.get(local) != Some(&b'@') {
            return None;
        }
        let domain = &rest[local + 1..];
        let len = domain
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
            .count();
        let valid = len > 0
            && domain.get(len) == Some(&b'>')
            && domain[..len].split(|&b| b == b'.').all(|part| {
                (1..=63).contains(&part.len())
                    && part.first().is_some_and(u8::is_ascii_alphanumeric)
                    && part.last().is_some_and(u8::is_ascii_alphanumeric)
            });
        valid.then_some(i + 1 + local + 1 + len + 1)
    }

    /// A tag, comment, processing instruction, declaration or CDATA section at `i`: the end
    /// just past it.
    fn inline_html(&mut self, i: usize) -> Option<usize> {
        let rest = &self.src[i..];
        let ending = |end: &'static str, skip: usize| (end, i + skip);
        let (end, from) = if rest.starts_with("<!-->") {
            return Some(i + 5);
        } else if rest.starts_with("<!--->") {
            return Some(i + 6);
        } else if rest.starts_with("<!--") {
            ending("-->", 4)
        } else if rest.starts_with("<?") {
            ending("?>", 2)
        } else if rest.starts_with("<![CDATA[") {
            ending("]]>", 9)
        } else if rest.starts_with("<!")
            && rest.as_bytes().get(2).is_some_and(u8::is_ascii_alphabetic)
        {
            ending(">", 2)
        } else {
            return super::scan::html_tag(self.bytes, i).map(|len| i + len);
        };
        self.find_end(end, from).map(|at| at + end.len())
    }

    /// The next `end` at or after `from`. Searches start further on each time, so the last
    /// answer is kept: it holds for any start between the last start and what it found.
    fn find_end(&mut self, end: &'static str, from: usize) -> Option<usize> {
        if let Some(&(last_from, found)) = self.ends.get(end) {
            if last_from <= from && found.is_none_or(|f| from <= f) {
                return found;
            }
        }
        let found = self.src.get(from..)?.find(end).map(|at| from + at);
        self.ends.insert(end, (from, found));
        found
    }

    /// A character reference ending with `;`, decoded; anything else is text. Numeric ones
    /// have at most seven decimal or six hexadecimal digits.
    fn entity(&mut self, i: usize) -> usize {
        let digits = match self.bytes.get(i + 1..i + 3) {
            Some([b'#', b'x' | b'X']) => Some((3, 6)),
            Some([b'#', _]) => Some((2, 7)),
            _ => None,
        };
        let fits = digits.is_none_or(|(skip, most)| {
            self.bytes[i + skip..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count()
                <= most
        });
        if let Some((c, len)) = parse_entity(&self.bytes[i..]).filter(|_| fits) {
            if self.bytes.get(i + len - 1) == Some(&b';') {
                self.pieces.push(Piece::Char(c));
                return i + len;
            }
        }
        self.push_text(i, i + 1);
        i + 1
    }

    /// Pairs the delimiter runs above `bottom` into emphasis, as CommonMark's "process
    /// emphasis" does, and takes them all off the stack. Matched marks are removed from
    /// their runs; whatever is left is text.
    fn process_emphasis(&mut self, bottom: usize) {
        let mut first = None;
        let mut d = self.top;
        while let Some(at) = d.filter(|&at| at >= bottom) {
            first = Some(at);
            d = self.delims[at].prev;
        }
        // Per mark, closer length modulo 3 and whether the closer can open: below which
        // index no opener is worth looking for again.
        let mut openers_bottom = [[bottom; 6]; 3];
        let mut closer = first;
        while let Some(c) = closer {
            let (mark, len, can_open, can_close, prev, next) = {
                let d = &self.delims[c];
                (d.mark, d.len, d.can_open, d.can_close, d.prev, d.next)
            };
            if !can_close {
                closer = next;
                continue;
            }
            let kind = match mark {
                b'*' => 0,
                b'_' => 1,
                _ => 2,
            };
            let slot = len % 3 + if can_open { 3 } else { 0 };
            let floor = openers_bottom[kind][slot];
            let mut opener = prev;
            while let Some(o) = opener.filter(|&o| o >= floor) {
                let d = &self.delims[o];
                // Strikethrough pairs runs of one length. Emphasis follows the rule of three:
                // where either run could both open and close, lengths summing to a multiple
                // of three do not pair unless both are multiples ("*foo**bar*").
                let pairs = if mark == b'~' {
                    d.len == len
                } else {
                    let odd = (d.can_close || can_open)
                        && (d.len + len).is_multiple_of(3)
                        && !(d.len.is_multiple_of(3) && len.is_multiple_of(3));
                    !odd
                };
                if d.mark == mark && d.can_open && pairs {
                    break;
                }
                opener = d.prev;
            }
            let Some(o) = opener.filter(|&o| o >= floor) else {
                openers_bottom[kind][slot] = prev.map_or(bottom, |p| (p + 1).max(bottom));
                if !can_open {
                    self.remove(c);
                }
                closer = next;
                continue;
            };
            let (opener_left, closer_left) = (self.left(o), self.left(c));
            let used = if mark == b'~' {
                closer_left
            } else if opener_left >= 2 && closer_left >= 2 {
                2
            } else {
                1
            };
            self.set_left(o, opener_left.saturating_sub(used));
            self.set_left(c, closer_left.saturating_sub(used));
            let mut between = self.delims[c].prev;
            while let Some(b) = between.filter(|&b| b != o) {
                between = self.delims[b].prev;
                self.remove(b);
            }
            if self.left(o) == 0 {
                self.remove(o);
            }
            if self.left(c) == 0 {
                closer = self.delims[c].next;
                self.remove(c);
            }
        }
        while let Some(t) = self.top.filter(|&t| t >= bottom) {
            self.remove(t);
        }
    }

    fn left(&self, d: usize) -> usize {
        match self.pieces.get(self.delims[d].piece) {
            Some(Piece::Run { left, .. }) => *left,
            _ => 0,
        }
    }

    fn set_left(&mut self, d: usize, n: usize) {
        if let Some(Piece::Run { left, .. }) = self.pieces.get_mut(self.delims[d].piece) {
            *left = n;
        }
    }

    fn remove(&mut self, d: usize) {
        let (prev, next) = (self.delims[d].prev, self.delims[d].next);
        if let Some(p) = prev {
            self.delims[p].next = next;
        }
        match next {
            Some(n) => self.delims[n].prev = prev,
            None => self.top = prev,
        }
    }
}
