//! Character references: named (the common ones), numeric, and the legacy forms browsers
//! still accept without a semicolon.

use std::borrow::Cow;

const LATIN1: [&str; 96] = [
    "nbsp", "iexcl", "cent", "pound", "curren", "yen", "brvbar", "sect", "uml", "copy", "ordf",
    "laquo", "not", "shy", "reg", "macr", "deg", "plusmn", "sup2", "sup3", "acute", "micro",
    "para", "middot", "cedil", "sup1", "ordm", "raquo", "frac14", "frac12", "frac34", "iquest",
    "Agrave", "Aacute", "Acirc", "Atilde", "Auml", "Aring", "AElig", "Ccedil", "Egrave", "Eacute",
    "Ecirc", "Euml", "Igrave", "Iacute", "Icirc", "Iuml", "ETH", "Ntilde", "Ograve", "Oacute",
    "Ocirc", "Otilde", "Ouml", "times", "Oslash", "Ugrave", "Uacute", "Ucirc", "Uuml", "Yacute",
    "THORN", "szlig", "agrave", "aacute", "acirc", "atilde", "auml", "aring", "aelig", "ccedil",
    "egrave", "eacute", "ecirc", "euml", "igrave", "iacute", "icirc", "iuml", "eth", "ntilde",
    "ograve", "oacute", "ocirc", "otilde", "ouml", "divide", "oslash", "ugrave", "uacute", "ucirc",
    "uuml", "yacute", "thorn", "yuml",
];

// Index i is U+0391 + i; U+03A2 is unassigned, hence the gap.
const GREEK_UPPER: [&str; 25] = [
    "Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta", "Theta", "Iota", "Kappa",
    "Lambda", "Mu", "Nu", "Xi", "Omicron", "Pi", "Rho", "", "Sigma", "Tau", "Upsilon", "Phi",
    "Chi", "Psi", "Omega",
];

// Index i is U+03B1 + i.
const GREEK_LOWER: [&str; 25] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigmaf", "sigma", "tau", "upsilon", "phi",
    "chi", "psi", "omega",
];

fn from_table(table: &[&str], base: u32, name: &str) -> Option<char> {
    let i = table.iter().position(|n| !n.is_empty() && *n == name)?;
    char::from_u32(base + i as u32)
}

fn named_entity(name: &str) -> Option<char> {
    let c = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "sbquo" => '‚',
        "bdquo" => '„',
        "bull" => '•',
        "trade" => '™',
        "euro" => '€',
        "dagger" => '†',
        "Dagger" => '‡',
        "permil" => '‰',
        "prime" => '′',
        "Prime" => '″',
        "lsaquo" => '‹',
        "rsaquo" => '›',
        "oline" => '‾',
        "frasl" => '⁄',
        "ensp" => '\u{2002}',
        "emsp" => '\u{2003}',
        "thinsp" => '\u{2009}',
        "zwnj" => '\u{200c}',
        "zwj" => '\u{200d}',
        "lrm" => '\u{200e}',
        "rlm" => '\u{200f}',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        "harr" => '↔',
        "lArr" => '⇐',
        "rArr" => '⇒',
        "hArr" => '⇔',
        "minus" => '−',
        "le" => '≤',
        "ge" => '≥',
        "ne" => '≠',
        "asymp" => '≈',
        "infin" => '∞',
        "sum" => '∑',
        "prod" => '∏',
        "radic" => '√',
        "forall" => '∀',
        "exist" => '∃',
        "isin" => '∈',
        "notin" => '∉',
        "empty" => '∅',
        "equiv" => '≡',
        "sdot" => '⋅',
        "check" => '✓',
        "cross" => '✗',
        "star" => '☆',
        "starf" => '★',
        "hearts" => '♥',
        "spades" => '♠',
        "clubs" => '♣',
        "diams" => '♦',
        "loz" => '◊',
        "OElig" => 'Œ',
        "oelig" => 'œ',
        "Scaron" => 'Š',
        "scaron" => 'š',
        "Yuml" => 'Ÿ',
        "fnof" => 'ƒ',
        "circ" => 'ˆ',
        "tilde" => '˜',
        "NewLine" => '\n',
        "Tab" => '\t',
        "hyphen" | "dash" => '‐',
        "colon" => ':',
        "comma" => ',',
        "period" => '.',
        "excl" => '!',
        "quest" => '?',
        "num" => '#',
        "dollar" => '$',
        "percent" => '%',
        "lpar" => '(',
        "rpar" => ')',
        "ast" => '*',
        "plus" => '+',
        "sol" => '/',
        "bsol" => '\\',
        "lsqb" => '[',
        "rsqb" => ']',
        "lcub" => '{',
        "rcub" => '}',
        "verbar" => '|',
        "equals" => '=',
        "lowbar" => '_',
        "grave" => '`',
        "Hat" => '^',
        "commat" => '@',
        "semi" => ';',
        _ => {
            return from_table(&LATIN1, 0xa0, name)
                .or_else(|| from_table(&GREEK_UPPER, 0x391, name))
                .or_else(|| from_table(&GREEK_LOWER, 0x3b1, name))
        }
    };
    Some(c)
}

/// Browsers read numeric references in 0x80..0x9F as Windows-1252, and old
/// pages rely on it (`&#150;` for an en dash).
fn windows_1252(v: u32) -> Option<char> {
    let c = match v {
        0x80 => '€',
        0x82 => '‚',
        0x83 => 'ƒ',
        0x84 => '„',
        0x85 => '…',
        0x86 => '†',
        0x87 => '‡',
        0x88 => 'ˆ',
        0x89 => '‰',
        0x8a => 'Š',
        0x8b => '‹',
        0x8c => 'Œ',
        0x8e => 'Ž',
        0x91 => '‘',
        0x92 => '’',
        0x93 => '“',
        0x94 => '”',
        0x95 => '•',
        0x96 => '–',
        0x97 => '—',
        0x98 => '˜',
        0x99 => '™',
        0x9a => 'š',
        0x9b => '›',
        0x9c => 'œ',
        0x9e => 'ž',
        0x9f => 'Ÿ',
        _ => return None,
    };
    Some(c)
}

/// Reads one character reference at the start of `b` (which starts with `&`)
/// and returns the character and how many bytes it used.
pub(crate) fn parse_entity(b: &[u8]) -> Option<(char, usize)> {
    if b.get(1) == Some(&b'#') {
        let hex = matches!(b.get(2), Some(b'x' | b'X'));
        let start = if hex { 3 } else { 2 };
        let mut i = start;
        let mut value: u32 = 0;
        while let Some(&c) = b.get(i) {
            let d = if hex {
                (c as char).to_digit(16)
            } else {
                (c as char).to_digit(10)
            };
            let Some(d) = d else { break };
            // Saturate instead of overflowing: anything this large is invalid anyway.
            value = value
                .saturating_mul(if hex { 16 } else { 10 })
                .saturating_add(d);
            i += 1;
        }
        if i == start {
            return None;
        }
        if b.get(i) == Some(&b';') {
            i += 1;
        }
        let c = match value {
            0 => '\u{fffd}',
            0x80..=0x9f => windows_1252(value).unwrap_or('\u{fffd}'),
            v => char::from_u32(v).unwrap_or('\u{fffd}'),
        };
        return Some((c, i));
    }
    let mut end = 1;
    while end < b.len() && end <= 33 && b[end].is_ascii_alphanumeric() {
        end += 1;
    }
    if end == 1 {
        return None;
    }
    let name = std::str::from_utf8(&b[1..end]).ok()?;
    if b.get(end) == Some(&b';') {
        if let Some(c) = named_entity(name) {
            return Some((c, end + 1));
        }
    }
    // Browsers also accept the oldest references without a semicolon
    // (`&copy 2024`, `a &amp b`); letters right after would make it a
    // different word, so only accept it when none follow.
    for legacy in ["amp", "lt", "gt", "quot", "nbsp", "copy", "reg"] {
        if name.starts_with(legacy)
            && !b
                .get(1 + legacy.len())
                .is_some_and(|c| c.is_ascii_alphabetic())
        {
            let c = named_entity(legacy)?;
            return Some((c, 1 + legacy.len()));
        }
    }
    None
}

pub(crate) fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'&') {
        let amp = i + off;
        out.push_str(&s[last..amp]);
        match parse_entity(&b[amp..]) {
            Some((c, len)) => {
                out.push(c);
                i = amp + len;
            }
            None => {
                out.push('&');
                i = amp + 1;
            }
        }
        last = i;
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_lengths_and_fallbacks() {
        assert_eq!(parse_entity(b"&amp;x"), Some(('&', 5)));
        assert_eq!(parse_entity(b"&amp x"), Some(('&', 4)));
        assert_eq!(parse_entity(b"&ampere;"), None);
        assert_eq!(parse_entity(b"&copy2024"), Some(('©', 5)));
        assert_eq!(parse_entity(b"&#x1F600;"), Some(('😀', 9)));
        assert_eq!(parse_entity(b"&#38"), Some(('&', 4)));
        assert_eq!(parse_entity(b"&#;"), None);
        assert_eq!(parse_entity(b"&"), None);
        assert_eq!(parse_entity(b"&Auml;"), Some(('Ä', 6)));
        assert_eq!(parse_entity(b"&sigmaf;"), Some(('ς', 8)));
        assert_eq!(decode_entities("no refs"), "no refs");
    }
}
