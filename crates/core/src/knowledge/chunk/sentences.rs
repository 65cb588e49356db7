//! Sentence boundaries, for splitting paragraphs too big for one chunk and for the overlap
//! repeated between chunks.

use super::split::trim_range;
use std::ops::Range;

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
pub(super) fn sentence_ranges(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
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
}
