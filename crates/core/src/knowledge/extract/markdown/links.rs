//! Link syntax that inline links and reference definitions share: labels, destinations and
//! titles. Each scanner stops at the first character that cannot belong to what it reads,
//! and a destination's parentheses nest at most 32 deep, so none reads far past its own
//! text.

use crate::knowledge::extract::clean::collapse_ws;
use std::collections::HashSet;

/// The labels of the document's reference definitions, normalised.
pub(super) type Labels = HashSet<String>;

/// A label as CommonMark matches it: case aside, and runs of whitespace as one space.
pub(super) fn normalise_label(label: &str) -> String {
    collapse_ws(label).to_lowercase()
}

/// The end (just past `]`) of a link label starting at `at` with `[`: at most 999
/// characters, no unescaped bracket inside, not blank.
pub(super) fn label_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut i = at + 1;
    let mut chars = 0;
    let mut blank = true;
    while chars <= 999 {
        match *bytes.get(i)? {
            b'\\' if bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation) => {
                blank = false;
                chars += 2;
                i += 2;
            }
            b'[' => return None,
            b']' => return (!blank).then_some(i + 1),
            b => {
                blank &= b.is_ascii_whitespace();
                // Count characters, not bytes: continuation bytes are not counted.
                chars += usize::from(b & 0xc0 != 0x80);
                i += 1;
            }
        }
    }
    None
}

/// The end of a link destination starting at `at`: `<…>` on one line, or a run without
/// spaces or control characters whose parentheses balance. A bare destination is never
/// empty.
pub(super) fn destination_end(bytes: &[u8], at: usize) -> Option<usize> {
    let escaped = |i: usize| bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation);
    if bytes.get(at) == Some(&b'<') {
        let mut i = at + 1;
        loop {
            match *bytes.get(i)? {
                b'\\' if escaped(i) => i += 2,
                b'>' => return Some(i + 1),
                b'<' | b'\n' => return None,
                _ => i += 1,
            }
        }
    }
    let mut depth = 0;
    let mut i = at;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' if escaped(i) => i += 2,
            b'(' => {
                depth += 1;
                if depth > 32 {
                    return None;
                }
                i += 1;
            }
            b')' if depth == 0 => break,
            b')' => {
                depth -= 1;
                i += 1;
            }
            b if b <= b' ' || b == 0x7f => break,
            _ => i += 1,
        }
    }
    (i > at && depth == 0).then_some(i)
}

/// The end of a link title starting at `at`: `"…"`, `'…'` or `(…)`.
pub(super) fn title_end(bytes: &[u8], at: usize) -> Option<usize> {
    let close = match bytes.get(at)? {
        b'"' => b'"',
        b'\'' => b'\'',
        b'(' => b')',
        _ => return None,
    };
    let mut i = at + 1;
    loop {
        match *bytes.get(i)? {
            b'\\' if bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation) => i += 2,
            b if b == close => return Some(i + 1),
            b'(' if close == b')' => return None,
            _ => i += 1,
        }
    }
}

/// Spaces, tabs and line breaks from `i` on.
pub(super) fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n'))
    {
        i += 1;
    }
    i
}

/// The end (just past `)`) of an inline link's `(destination "title")`, which opens at `at`.
pub(super) fn inline_link_end(bytes: &[u8], at: usize) -> Option<usize> {
    let start = skip_space(bytes, at + 1);
    if bytes.get(start) == Some(&b')') {
        return Some(start + 1);
    }
    let dest = destination_end(bytes, start)?;
    let mut end = skip_space(bytes, dest);
    if end > dest {
        if let Some(title) = title_end(bytes, end) {
            end = skip_space(bytes, title);
        }
    }
    (bytes.get(end) == Some(&b')')).then_some(end + 1)
}

/// A reference definition, `[label]: destination "title"`, at the start of a paragraph's
/// text: its normalised label and how many bytes it takes, through the end of its line.
pub(super) fn definition(text: &str) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    // Footnote definitions never get here: the block reader has taken them.
    let label = label_end(bytes, 0)?;
    if bytes.get(label) != Some(&b':') {
        return None;
    }
    let dest = destination_end(bytes, skip_space(bytes, label + 1))?;
    // Only spaces may follow on the line that ends the definition.
    let line_end = |i: usize| {
        let j = i + bytes[i..]
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        match bytes.get(j) {
            None => Some(j),
            Some(b'\n') => Some(j + 1),
            Some(_) => None,
        }
    };
    let spaced = skip_space(bytes, dest);
    let with_title = (spaced > dest)
        .then(|| title_end(bytes, spaced))
        .flatten()
        .and_then(line_end);
    let end = with_title.or_else(|| line_end(dest))?;
    Some((normalise_label(&text[1..label - 1]), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_and_their_extent() {
        fn def(s: &str) -> Option<(String, &str)> {
            definition(s).map(|(label, len)| (label, &s[len..]))
        }
        assert_eq!(
            def("[Foo  Bar]: /url \"title\"\nrest"),
            Some(("foo bar".into(), "rest"))
        );
        assert_eq!(
            def("[a]:\n<b c>\n'multi\nline'\nx"),
            Some(("a".into(), "x"))
        );
        // A title followed by more text is not one: the definition ends with its destination.
        assert_eq!(def("[a]: /u\n\"t\" x"), Some(("a".into(), "\"t\" x")));
        assert_eq!(def("[a]: /u \"t\" x"), None);
        assert_eq!(def("[a]:"), None);
    }

    #[test]
    fn destinations_balance_parentheses() {
        let end = |s: &str| inline_link_end(s.as_bytes(), 0);
        assert_eq!(end("(a_(b))x"), Some(7));
        assert_eq!(end("( <a b> 'c' )"), Some(13));
        assert_eq!(end("(a b)"), None);
        assert_eq!(end(&("(".repeat(40) + &")".repeat(40))), None);
    }
}
