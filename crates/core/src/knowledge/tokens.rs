//! Token-count estimation tuned to OpenAI's `cl100k_base` encoding.
//!
//! The real encoder needs ~1.7 MB of merge ranks, too much for a Worker
//! bundle. Instead the text is cut exactly as cl100k's pre-tokeniser regex
//! would cut it (BPE never merges across those cuts, so the count is a sum
//! over pieces), and each piece's token count is estimated from its shape.

/// What the pre-tokeniser alternative that produced a piece was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d` (any case).
    Contraction,
    /// A letter run, optionally preceded by one non-letter, non-digit,
    /// non-newline character (usually a space).
    Word,
    /// One to three digits.
    Digits,
    /// Symbols/punctuation, optional leading space, trailing newlines.
    Punct,
    /// Whitespace ending in a newline.
    Newlines,
    /// Whitespace without newline.
    Spaces,
}

fn is_letter(c: char) -> bool {
    // Fast paths for blocks made only of letters; the general Unicode
    // lookup showed up as a tenth of chunking time on CJK and Cyrillic.
    match u32::from(c) {
        0..=0x7f => c.is_ascii_alphabetic(),
        0xc0..=0xd6 | 0xd8..=0xf6 | 0xf8..=0x24f => true,
        0x410..=0x44f | 0x3041..=0x3096 | 0x30a1..=0x30fa | 0x4e00..=0x9fff | 0xac00..=0xd7a3 => {
            true
        }
        _ => c.is_alphabetic(),
    }
}

fn is_number(c: char) -> bool {
    c.is_numeric()
}

fn is_newline(c: char) -> bool {
    c == '\n' || c == '\r'
}

fn is_symbol(c: char) -> bool {
    !c.is_whitespace() && !is_letter(c) && !is_number(c)
}

/// Byte length of a contraction suffix at the start of `s` (after the `'`).
fn contraction_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let lower = |i: usize| b.get(i).map(|x| x.to_ascii_lowercase());
    match (lower(0), lower(1)) {
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => Some(2),
        (Some(b's' | b't' | b'm' | b'd'), _) => Some(1),
        _ => None,
    }
}

/// End (byte offset) of the longest run starting at `from` whose chars
/// satisfy `pred`, consuming at most `limit` chars.
fn run_end(text: &str, from: usize, limit: usize, pred: impl Fn(char) -> bool) -> usize {
    let mut end = from;
    for (n, c) in text[from..].chars().enumerate() {
        if n >= limit || !pred(c) {
            break;
        }
        end += c.len_utf8();
    }
    end
}

/// Calls `f` for every piece that cl100k's pre-tokenisation regex
/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
///  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+` would produce,
/// reproducing its leftmost-first alternation and backtracking by hand so
/// that no regex engine (and no Unicode tables beyond std's) is needed.
pub(crate) fn for_each_piece(text: &str, mut f: impl FnMut(Kind, &str)) {
    let mut i = 0;
    while i < text.len() {
        let (kind, end) = ascii_word_at(text, i).unwrap_or_else(|| piece_at(text, i));
        f(kind, &text[i..end]);
        i = end;
    }
}

/// The piece at `i` when it is an ASCII word, with or without its leading space: most pieces
/// of most text, cut by byte where `piece_at` goes char by char to the same end.
fn ascii_word_at(text: &str, i: usize) -> Option<(Kind, usize)> {
    let bytes = text.as_bytes();
    let from = match bytes[i] {
        b if b.is_ascii_alphabetic() => i,
        b' ' if bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic) => i + 1,
        _ => return None,
    };
    let ascii_end = bytes[from..]
        .iter()
        .position(|b| !b.is_ascii_alphabetic())
        .map_or(bytes.len(), |n| from + n);
    let end = if bytes.get(ascii_end).is_some_and(|&b| b >= 0x80) {
        run_end(text, ascii_end, usize::MAX, is_letter)
    } else {
        ascii_end
    };
    Some((Kind::Word, end))
}

/// The kind and end (byte offset) of the piece starting at `i`, a char boundary.
fn piece_at(text: &str, i: usize) -> (Kind, usize) {
    let rest = &text[i..];
    let mut chars = rest.chars();
    let Some(c) = chars.next() else {
        return (Kind::Spaces, text.len());
    };
    let next = chars.next();
    let clen = c.len_utf8();
    if c == '\'' {
        if let Some(n) = contraction_len(&rest[1..]) {
            return (Kind::Contraction, i + 1 + n);
        }
    }
    let (kind, end) = if is_letter(c) {
        (Kind::Word, run_end(text, i, usize::MAX, is_letter))
    } else if !is_newline(c) && !is_number(c) && next.is_some_and(is_letter) {
        (Kind::Word, run_end(text, i + clen, usize::MAX, is_letter))
    } else if is_number(c) {
        (Kind::Digits, run_end(text, i, 3, is_number))
    } else if is_symbol(c) || (c == ' ' && next.is_some_and(is_symbol)) {
        let start = if c == ' ' { i + 1 } else { i };
        let sym_end = run_end(text, start, usize::MAX, is_symbol);
        (Kind::Punct, run_end(text, sym_end, usize::MAX, is_newline))
    } else {
        whitespace_piece(text, i)
    };
    // A defensive guard: every branch above consumes at least `c`, but
    // an infinite loop here would hang a Worker, so never risk it.
    (kind, end.max(i + clen))
}

/// Resolves the three whitespace alternatives for a run starting at `i`.
fn whitespace_piece(text: &str, i: usize) -> (Kind, usize) {
    let mut run_end_pos = i;
    let mut last_nl_end = None;
    let mut last_char_start = i;
    let mut count = 0usize;
    for c in text[i..].chars() {
        if !c.is_whitespace() {
            break;
        }
        last_char_start = run_end_pos;
        run_end_pos += c.len_utf8();
        count += 1;
        if is_newline(c) {
            last_nl_end = Some(run_end_pos);
        }
    }
    if let Some(e) = last_nl_end {
        // `\s*[\r\n]+` backtracks to the last newline of the run.
        return (Kind::Newlines, e);
    }
    if run_end_pos == text.len() || count == 1 {
        (Kind::Spaces, run_end_pos)
    } else {
        // `\s+(?!\S)` leaves the final space to prefix the next word.
        (Kind::Spaces, last_char_start)
    }
}

/// Estimated number of cl100k_base tokens in `text`.
#[must_use]
pub fn estimate_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let foreign = foreignness(text);
    let mut total = 0.0f64;
    for_each_piece(text, |kind, piece| {
        total += piece_cost(kind, piece, foreign)
    });
    // Any non-empty text encodes to at least one token.
    (total.round() as usize).max(1)
}

/// Share (0..1) of evidence that ASCII words belong to a non-English Latin
/// language. cl100k's vocabulary is English-heavy: a 9-letter English word
/// is usually one token, a 9-letter German or Spanish one about two, and
/// nothing in the word's shape alone tells them apart. Function words do.
pub(crate) fn foreignness(text: &str) -> f64 {
    let (mut english, mut other) = (0.0f64, 0.0f64);
    let bytes = text.as_bytes();
    // Only whole words count: "com" in "example.com" or "et" in "et_EE"
    // are not function words.
    let glue = |b: u8| {
        b.is_ascii_alphanumeric() || b >= 0x80 || matches!(b, b'_' | b'.' | b'/' | b'@' | b'-')
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !b.is_ascii_alphabetic() {
            // Lead bytes of U+00C0..U+017F: accented Latin letters, rare in
            // English but everywhere in Polish, Czech, Hungarian...
            if (0xc3..=0xc5).contains(&b) {
                other += ACCENT_EVIDENCE;
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let before = start.checked_sub(1).map(|p| bytes[p]);
        let after = bytes.get(i).copied();
        if i - start > 6
            || before.is_some_and(glue)
            || after.is_some_and(|b| glue(b) && b != b'.' && b != b'-')
        {
            continue;
        }
        let mut buf = [0u8; 6];
        for (d, s) in buf.iter_mut().zip(&bytes[start..i]) {
            *d = s.to_ascii_lowercase();
        }
        match function_word(&buf[..i - start]) {
            Some(true) => english += 1.0,
            Some(false) => other += 1.0,
            None => {}
        }
    }
    // The prior keeps a stray "die" or "del" in English text, or a short
    // snippet, from flipping the verdict.
    other / (other + english + 4.0)
}

/// Foreign evidence carried by one accented Latin letter.
const ACCENT_EVIDENCE: f64 = 0.3;

/// `Some(true)` for a frequent English function word, `Some(false)` for a
/// frequent German/French/Spanish/Italian/Dutch/Portuguese one. Words that
/// are common in both (e.g. "in", "an", "on", "per") are left out.
fn function_word(w: &[u8]) -> Option<bool> {
    match w {
        b"the" | b"and" | b"of" | b"to" | b"is" | b"that" | b"for" | b"with" | b"this" | b"are"
        | b"be" | b"by" | b"it" | b"or" | b"as" | b"from" | b"which" | b"not" | b"was" | b"you"
        | b"your" | b"can" | b"will" | b"if" | b"have" | b"has" => Some(true),
        b"der" | b"die" | b"das" | b"und" | b"ist" | b"nicht" | b"mit" | b"von" | b"zu"
        | b"den" | b"des" | b"dem" | b"ein" | b"eine" | b"auf" | b"sich" | b"oder" | b"wird"
        | b"werden" | b"le" | b"la" | b"les" | b"et" | b"est" | b"une" | b"pour" | b"dans"
        | b"du" | b"sur" | b"qui" | b"que" | b"ne" | b"pas" | b"el" | b"los" | b"las" | b"del"
        | b"por" | b"una" | b"para" | b"con" | b"se" | b"lo" | b"como" | b"het" | b"een"
        | b"van" | b"niet" | b"il" | b"della" | b"che" | b"di" | b"sono" | b"uma" | b"em"
        | b"nie" | b"jest" | b"oraz" | b"lub" | b"przez" | b"dla" | b"jako" | b"nebo" | b"jsou"
        | b"och" | b"att" | b"som" | b"inte" | b"og" | b"ikke" | b"ve" | b"bir" | b"ile" => {
            Some(false)
        }
        _ => None,
    }
}

fn piece_cost(kind: Kind, piece: &str, foreign: f64) -> f64 {
    match kind {
        Kind::Contraction | Kind::Digits => 1.0,
        // cl100k has single tokens for long runs of spaces and newlines.
        Kind::Spaces => 1.0 + ((piece.len() - 1) / 128) as f64,
        Kind::Newlines => 1.0 + ((piece.len() - 1) / 24) as f64,
        Kind::Punct => punct_cost(piece),
        Kind::Word => word_cost(piece, foreign),
    }
}

/// Cost of a symbol run (with its optional leading space and trailing
/// newlines, which BPE almost always folds into the symbols).
fn punct_cost(piece: &str) -> f64 {
    let core = piece.trim_start_matches(' ').trim_end_matches(['\r', '\n']);
    if core.is_empty() {
        return 1.0;
    }
    if core.is_ascii() {
        return ascii_symbols_cost(core.as_bytes());
    }
    let cost: f64 = core
        .chars()
        .map(|c| match c.len_utf8() {
            1 => PUNCT_ASCII_MIXED,
            2 | 3 => PUNCT_WIDE,
            _ => PUNCT_ASTRAL,
        })
        .sum();
    cost.max(1.0)
}

/// Long runs of one character ("-----", "=====", table borders) are a few
/// long tokens each; other symbol sequences fragment after two characters.
fn ascii_symbols_cost(b: &[u8]) -> f64 {
    let plain_cost = |n: usize| match n {
        0 => 0.0,
        1 | 2 => 1.0,
        n => PUNCT_3 + (n - 3) as f64 * PUNCT_EXTRA,
    };
    let (mut total, mut plain, mut i) = (0.0, 0, 0);
    while i < b.len() {
        let run = b[i..].iter().take_while(|&&x| x == b[i]).count();
        if run >= 4 {
            total += plain_cost(plain) + 1.0 + run as f64 / 48.0;
            plain = 0;
        } else {
            plain += run;
        }
        i += run;
    }
    (total + plain_cost(plain)).max(1.0)
}

const PUNCT_3: f64 = 1.2;
const PUNCT_EXTRA: f64 = 0.5;
const PUNCT_ASCII_MIXED: f64 = 0.8;
const PUNCT_WIDE: f64 = 0.9;
const PUNCT_ASTRAL: f64 = 2.4;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prefix {
    None,
    Space,
    Other(char),
}

fn word_cost(piece: &str, foreign: f64) -> f64 {
    let mut chars = piece.chars();
    let (prefix, letters) = match chars.next() {
        Some(c) if !is_letter(c) => (
            if c == ' ' {
                Prefix::Space
            } else {
                Prefix::Other(c)
            },
            chars.as_str(),
        ),
        _ => (Prefix::None, piece),
    };
    if letters.is_ascii() {
        ascii_word_cost(letters, prefix, foreign)
    } else {
        script_word_cost(letters, prefix)
    }
}

/// Costs for words containing non-ASCII letters, fitted by least squares
/// against cl100k per script: its merges cover common Latin-1 and lowercase
/// Cyrillic syllables, while most CJK characters, uppercase Cyrillic and
/// the smaller scripts come out near a token per character.
fn script_word_cost(letters: &str, prefix: Prefix) -> f64 {
    let mut script = Script::Latin;
    let mut per_char = 0.0;
    for c in letters.chars() {
        let (s, cost) = letter_cost(c);
        script = script.max(s);
        per_char += cost;
    }
    let base = match (script, prefix) {
        (Script::Latin, Prefix::Space) => 0.0,
        (Script::Latin, _) => 1.1,
        (Script::Cyrillic, Prefix::Space) => 0.33,
        (Script::Cyrillic, Prefix::None) => 0.7,
        (Script::Cyrillic, Prefix::Other(_)) => 2.0,
        (Script::Cjk, Prefix::Space) => 0.77,
        (Script::Cjk, Prefix::None) => 0.23,
        (Script::Cjk, Prefix::Other(_)) => 0.96,
        (Script::Other, Prefix::None) => 0.0,
        (Script::Other, _) => 0.5,
    };
    (base + per_char).max(1.0)
}

/// Which base cost applies to a mixed-script word: the most "exotic"
/// script present wins, since it dominates how BPE fragments the word.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Script {
    Latin,
    Cyrillic,
    Cjk,
    Other,
}

fn letter_cost(c: char) -> (Script, f64) {
    let upper = c.is_uppercase();
    match u32::from(c) {
        0..=0x7f => (Script::Latin, if upper { 0.26 } else { 0.23 }),
        0x80..=0xff => (Script::Latin, if upper { 1.37 } else { 0.59 }),
        // Central European letters (ł, ę, ř, ő...) merge far less often.
        0x100..=0x24f | 0x1e00..=0x1eff => (Script::Latin, if upper { 1.37 } else { 0.9 }),
        0x400..=0x52f => (Script::Cyrillic, if upper { 1.01 } else { 0.35 }),
        0x3040..=0x30ff => (Script::Cjk, 0.94),
        0xac00..=0xd7af => (Script::Cjk, 0.8),
        0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0x20000..=0x3ffff => {
            (Script::Cjk, 0.99)
        }
        // Greek, Arabic, Hebrew, Hangul, Indic, Thai...: roughly one token
        // per character, more for supplementary-plane letters.
        _ => (
            Script::Other,
            match c.len_utf8() {
                2 => 0.9,
                3 => 1.1,
                _ => 2.5,
            },
        ),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Lower,
    Capital,
    Upper,
}

/// Curve for one ASCII segment: 1 token up to `knee` letters, then
/// `slope` tokens per extra letter.
#[derive(Clone, Copy)]
struct Curve {
    knee: f64,
    slope: f64,
}

impl Curve {
    const fn new(knee: f64, slope: f64) -> Self {
        Curve { knee, slope }
    }
    fn at(self, len: f64) -> f64 {
        1.0 + self.slope * (len - self.knee).max(0.0)
    }
}

/// `[with leading space, without][lower, Capital, UPPER]`
const ENGLISH: [[Curve; 3]; 2] = [
    [
        Curve::new(6.0, 0.04),
        Curve::new(4.0, 0.05),
        Curve::new(1.0, 0.07),
    ],
    [
        Curve::new(3.0, 0.08),
        Curve::new(3.0, 0.07),
        Curve::new(2.0, 0.21),
    ],
];
const FOREIGN: [[Curve; 3]; 2] = [
    [
        Curve::new(4.0, 0.19),
        Curve::new(3.0, 0.24),
        Curve::new(3.0, 0.42),
    ],
    [
        Curve::new(3.0, 0.22),
        Curve::new(3.0, 0.26),
        Curve::new(2.0, 0.42),
    ],
];
/// Beyond this many letters even English words fragment quickly.
const LONG_WORD: f64 = 14.0;
const LONG_SLOPE: f64 = 0.25;
/// camelCase pieces merge more often than separate words would.
const MULTI_SEGMENT: f64 = 0.8;

fn ascii_word_cost(letters: &str, prefix: Prefix, foreign: f64) -> f64 {
    let b = letters.as_bytes();
    let mut total = 0.0;
    let mut segments = 0;
    let mut start = 0;
    for i in 1..=b.len() {
        let boundary = i == b.len()
            || (b[i].is_ascii_uppercase()
                && (b[i - 1].is_ascii_lowercase()
                    || (b[i - 1].is_ascii_uppercase()
                        && b.get(i + 1).is_some_and(u8::is_ascii_lowercase))));
        if !boundary {
            continue;
        }
        let seg = &b[start..i];
        let case = if seg.len() > 1 && seg.iter().all(u8::is_ascii_uppercase) {
            Case::Upper
        } else if seg[0].is_ascii_uppercase() {
            Case::Capital
        } else {
            Case::Lower
        };
        let spaced = segments == 0 && prefix == Prefix::Space;
        total += segment_cost(seg.len() as f64, spaced, case, foreign);
        segments += 1;
        start = i;
    }
    if segments > 1 {
        total *= MULTI_SEGMENT;
    }
    if let Prefix::Other(c) = prefix {
        total += prefix_extra(c, b.first().is_some_and(u8::is_ascii_uppercase));
    }
    total.max(1.0)
}

fn segment_cost(len: f64, spaced: bool, case: Case, foreign: f64) -> f64 {
    let row = usize::from(!spaced);
    let col = case as usize;
    let e = ENGLISH[row][col].at(len);
    let f = FOREIGN[row][col].at(len);
    e + (f - e) * foreign + LONG_SLOPE * (len - LONG_WORD).max(0.0)
}

/// Extra cost of a non-space character glued to the front of a word.
/// Code-ish prefixes (`_name`, `.method`, `(self`, `/path`) usually merge
/// with a lowercase word; before a capital, or for `,`, tab or quotes, the
/// prefix is nearly always a token of its own.
fn prefix_extra(c: char, capital: bool) -> f64 {
    let (lower, upper) = match c {
        '.' | '#' | '\\' | '\'' | '\u{2019}' | '$' | '%' | ')' => (0.0, 0.0),
        '_' => (0.0, 1.0),
        '(' => (0.1, 0.3),
        '<' | '@' | '=' => (0.25, 0.25),
        '[' => (0.2, 0.6),
        '-' => (0.25, 0.7),
        ':' => (0.45, 0.45),
        '/' => (0.4, 1.5),
        _ => (1.1, 1.1),
    };
    if capital {
        upper
    } else {
        lower
    }
}

#[cfg(test)]
mod calibration;

#[cfg(test)]
mod tests {
    use super::*;

    /// Wherever the byte-wise cut of ASCII words applies, it ends where the char-wise one does.
    #[test]
    fn ascii_words_are_cut_as_the_general_path_cuts_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
        let mut texts: Vec<String> = std::fs::read_dir(dir)
            .expect("tests/corpus exists")
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .collect();
        texts.push(
            "café naïve Straße x\u{300}y don't I'M ab12 a\u{2019}s \ttab  two\r\nword \u{4e2d}\u{6587}a \
             a\u{3042}b over-the-top e.g. x_y \u{0410}b ".repeat(3),
        );
        let mut compared = 0;
        for text in &texts {
            for i in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
                if let Some(fast) = ascii_word_at(text, i) {
                    assert_eq!(fast, piece_at(text, i), "at byte {i}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 10_000, "only {compared} positions compared");
    }
}
