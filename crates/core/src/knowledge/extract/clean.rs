//! Whitespace and control-character clean-up shared by the readers, so that spacing
//! artefacts of a producer never reach the index.

/// Characters that take no room on screen; leaving them in would split words in the index
/// (a soft hyphen or zero-width space inside a word).
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}' | '\u{feff}' | '\u{ad}' | '\u{200e}' | '\u{200f}' | '\u{2060}'
        )
}

/// One line of text: every run of whitespace becomes one space, invisible characters go,
/// and nothing blank is left at either end.
pub(crate) fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if is_invisible(c) {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// Unifies line endings and removes control characters, so later stages only ever see
/// `\n` and `\t`. Form feeds mark page breaks in text exported from PDFs and office files,
/// so they become paragraph breaks rather than vanish.
/// Whether [`normalise`] would leave `text` as it is (most text files), so that a caller
/// holding a large one need not copy it.
pub(crate) fn is_normal(text: &str) -> bool {
    !text.chars().any(|c| match c {
        '\n' | '\t' => false,
        '\r' | '\u{b}' | '\u{2028}' | '\u{c}' | '\u{2029}' => true,
        c => is_invisible(c),
    })
}

pub(crate) fn normalise(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                s.push('\n');
            }
            '\n' | '\t' => s.push(c),
            '\u{b}' | '\u{2028}' => s.push('\n'),
            '\u{c}' | '\u{2029}' => s.push_str("\n\n"),
            c if is_invisible(c) => {}
            c => s.push(c),
        }
    }
    s
}

/// Words that carry a letter or digit, the measure of how much a page says.
pub(crate) fn word_count(s: &str) -> usize {
    s.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Collapses runs of spaces, tabs and control characters into one space and trims each
/// line, keeping the line breaks.
pub(crate) fn squeeze_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut space = false;
        for c in line.trim().chars() {
            if c.is_whitespace() || c.is_control() {
                space = true;
            } else {
                if space && !out.is_empty() && !out.ends_with('\n') {
                    out.push(' ');
                }
                space = false;
                out.push(c);
            }
        }
    }
    out.trim().to_string()
}
