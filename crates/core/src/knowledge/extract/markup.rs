//! Turns uploaded or fetched documents into readable text for indexing.
//!
//! Every function writes the same light markdown, because the chunker that runs
//! afterwards splits on it:
//!
//! * a heading is a line `# text` … `###### text`;
//! * paragraphs are separated by one blank line, and whitespace inside a
//!   paragraph is collapsed to single spaces;
//! * list items are lines starting with `- ` or `1. `; nested items are
//!   indented by the width of their parent's marker, as in markdown;
//! * a table row is one line (see "Tables" below);
//! * no HTML entities are left.
//!
//! # Tables
//!
//! When a table has a header row, each data row is written as
//! `Header: value; Header2: value`. Retrieval works on chunks, and a chunk
//! often starts in the middle of a table: a row written as `Ada | 1815 | London`
//! means nothing once its header row is in another chunk, while
//! `Name: Ada; Born: 1815; City: London` still answers "when was Ada born" on
//! its own. The cost is repeating the header words on every row, which is small
//! next to losing the meaning of the row. Tables without any header keep the
//! plain `cell | cell | cell` form, since there is nothing to repeat. CSV and
//! markdown tables use the same row form so that all sources read alike.
//!
//! # Robustness
//!
//! Everything here runs on text that users and the web supply, inside a
//! WebAssembly worker where a panic kills the request. So nothing indexes by an
//! offset derived from input without checking it, no recursion follows input
//! nesting without a bound, and every scan is linear in the input length.

use super::{ExtractError, Extracted};
use std::collections::{HashMap, HashSet};
use std::fmt;

// ---------------------------------------------------------------------------
// Shared text helpers
// ---------------------------------------------------------------------------

/// Characters that take no room on screen; leaving them in would split words
/// in the index (a soft hyphen or zero-width space inside a word).
fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}' | '\u{feff}' | '\u{ad}' | '\u{200e}' | '\u{200f}' | '\u{2060}'
        )
}

fn collapse_ws(s: &str) -> String {
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

/// Final clean-up shared by every format: no trailing spaces, no run of blank
/// lines longer than one, nothing blank at either end.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for line in s.split('\n') {
        let line = line.trim_end();
        if line.is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
            if blank {
                out.push('\n');
            }
        }
        blank = false;
        out.push_str(line);
    }
    out
}

/// Unifies line endings and removes control characters, so later stages only
/// ever see `\n` and `\t`. Form feeds mark page breaks in text exported from
/// PDFs and office files, so they become paragraph breaks rather than vanish.
fn normalise(text: &str) -> String {
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

fn word_count(s: &str) -> usize {
    s.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// One table row in the `Header: value; Header2: value` form described in the
/// module docs. `cells` carries each value's column so that spanning cells in
/// HTML land under the right header.
fn keyed_row(headers: &[String], cells: &[(usize, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for &(col, value) in cells {
        if value.is_empty() {
            continue;
        }
        match headers.get(col) {
            Some(h) if !h.is_empty() && h != value => parts.push(format!("{h}: {value}")),
            _ => parts.push(value.to_string()),
        }
    }
    parts.join("; ")
}

fn plain_row<'s>(cells: impl Iterator<Item = &'s str>) -> String {
    cells
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

// ---------------------------------------------------------------------------
// Character references
// ---------------------------------------------------------------------------

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
fn parse_entity(b: &[u8]) -> Option<(char, usize)> {
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

fn decode_entities(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return std::borrow::Cow::Borrowed(s);
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
    std::borrow::Cow::Owned(out)
}

// ---------------------------------------------------------------------------
// HTML: tags
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Tag {
    Root,
    Html,
    Head,
    Body,
    Title,
    Meta,
    Link,
    Base,
    Script,
    Style,
    Noscript,
    Template,
    Svg,
    Math,
    Canvas,
    Iframe,
    Object,
    Embed,
    Video,
    Audio,
    Nav,
    Header,
    Footer,
    Aside,
    Form,
    Button,
    Select,
    OptionEl,
    Optgroup,
    Datalist,
    Textarea,
    Input,
    Dialog,
    Main,
    Article,
    Section,
    Div,
    P,
    H(u8),
    Ul,
    Ol,
    Li,
    Menu,
    Dir,
    Dl,
    Dt,
    Dd,
    Table,
    Caption,
    Thead,
    Tbody,
    Tfoot,
    Tr,
    Td,
    Th,
    Colgroup,
    Col,
    Pre,
    Xmp,
    Listing,
    Plaintext,
    Blockquote,
    Br,
    Hr,
    Img,
    Area,
    Map,
    Param,
    Source,
    Track,
    Wbr,
    Keygen,
    Figure,
    Figcaption,
    Address,
    Details,
    Summary,
    Center,
    Fieldset,
    Legend,
    Hgroup,
    Noembed,
    Noframes,
    Frameset,
    Frame,
    A,
    B,
    I,
    Em,
    Strong,
    Span,
    Code,
    Small,
    Big,
    U,
    S,
    Strike,
    Tt,
    Font,
    Nobr,
    Label,
    /// Any other element, identified by a hash of its lower-cased name so that
    /// end tags still find their start tag without an allocation per tag.
    Other(u32),
}

fn fnv(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(b.to_ascii_lowercase());
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

impl Tag {
    fn from_name(raw: &[u8]) -> Tag {
        let mut buf = [0u8; 12];
        if raw.is_empty() || raw.len() > buf.len() {
            return Tag::Other(fnv(raw));
        }
        let name = &mut buf[..raw.len()];
        for (d, s) in name.iter_mut().zip(raw) {
            *d = s.to_ascii_lowercase();
        }
        match &*name {
            b"html" => Tag::Html,
            b"head" => Tag::Head,
            b"body" => Tag::Body,
            b"title" => Tag::Title,
            b"meta" => Tag::Meta,
            b"link" => Tag::Link,
            b"base" => Tag::Base,
            b"script" => Tag::Script,
            b"style" => Tag::Style,
            b"noscript" => Tag::Noscript,
            b"template" => Tag::Template,
            b"svg" => Tag::Svg,
            b"math" => Tag::Math,
            b"canvas" => Tag::Canvas,
            b"iframe" => Tag::Iframe,
            b"object" => Tag::Object,
            b"embed" => Tag::Embed,
            b"video" => Tag::Video,
            b"audio" => Tag::Audio,
            b"nav" => Tag::Nav,
            b"header" => Tag::Header,
            b"footer" => Tag::Footer,
            b"aside" => Tag::Aside,
            b"form" => Tag::Form,
            b"button" => Tag::Button,
            b"select" => Tag::Select,
            b"option" => Tag::OptionEl,
            b"optgroup" => Tag::Optgroup,
            b"datalist" => Tag::Datalist,
            b"textarea" => Tag::Textarea,
            b"input" => Tag::Input,
            b"dialog" => Tag::Dialog,
            b"main" => Tag::Main,
            b"article" => Tag::Article,
            b"section" => Tag::Section,
            b"div" => Tag::Div,
            b"p" => Tag::P,
            b"h1" => Tag::H(1),
            b"h2" => Tag::H(2),
            b"h3" => Tag::H(3),
            b"h4" => Tag::H(4),
            b"h5" => Tag::H(5),
            b"h6" => Tag::H(6),
            b"ul" => Tag::Ul,
            b"ol" => Tag::Ol,
            b"li" => Tag::Li,
            b"menu" => Tag::Menu,
            b"dir" => Tag::Dir,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"dd" => Tag::Dd,
            b"table" => Tag::Table,
            b"caption" => Tag::Caption,
            b"thead" => Tag::Thead,
            b"tbody" => Tag::Tbody,
            b"tfoot" => Tag::Tfoot,
            b"tr" => Tag::Tr,
            b"td" => Tag::Td,
            b"th" => Tag::Th,
            b"colgroup" => Tag::Colgroup,
            b"col" => Tag::Col,
            b"pre" => Tag::Pre,
            b"xmp" => Tag::Xmp,
            b"listing" => Tag::Listing,
            b"plaintext" => Tag::Plaintext,
            b"blockquote" => Tag::Blockquote,
            b"br" => Tag::Br,
            b"hr" => Tag::Hr,
            b"img" | b"image" => Tag::Img,
            b"area" => Tag::Area,
            b"map" => Tag::Map,
            b"param" => Tag::Param,
            b"source" => Tag::Source,
            b"track" => Tag::Track,
            b"wbr" => Tag::Wbr,
            b"keygen" => Tag::Keygen,
            b"figure" => Tag::Figure,
            b"figcaption" => Tag::Figcaption,
            b"address" => Tag::Address,
            b"details" => Tag::Details,
            b"summary" => Tag::Summary,
            b"center" => Tag::Center,
            b"fieldset" => Tag::Fieldset,
            b"legend" => Tag::Legend,
            b"hgroup" => Tag::Hgroup,
            b"noembed" => Tag::Noembed,
            b"noframes" => Tag::Noframes,
            b"frameset" => Tag::Frameset,
            b"frame" => Tag::Frame,
            b"a" => Tag::A,
            b"b" => Tag::B,
            b"i" => Tag::I,
            b"em" => Tag::Em,
            b"strong" => Tag::Strong,
            b"span" => Tag::Span,
            b"code" => Tag::Code,
            b"small" => Tag::Small,
            b"big" => Tag::Big,
            b"u" => Tag::U,
            b"s" => Tag::S,
            b"strike" => Tag::Strike,
            b"tt" => Tag::Tt,
            b"font" => Tag::Font,
            b"nobr" => Tag::Nobr,
            b"label" => Tag::Label,
            _ => Tag::Other(fnv(name)),
        }
    }

    /// Elements whose content the tokenizer must not read as markup, with the
    /// name that ends them.
    fn raw_text_name(self) -> Option<&'static [u8]> {
        Some(match self {
            Tag::Script => b"script",
            Tag::Style => b"style",
            Tag::Noscript => b"noscript",
            Tag::Iframe => b"iframe",
            Tag::Noembed => b"noembed",
            Tag::Noframes => b"noframes",
            Tag::Textarea => b"textarea",
            Tag::Title => b"title",
            Tag::Xmp => b"xmp",
            _ => return None,
        })
    }

    fn is_void(self) -> bool {
        matches!(
            self,
            Tag::Area
                | Tag::Base
                | Tag::Br
                | Tag::Col
                | Tag::Embed
                | Tag::Hr
                | Tag::Img
                | Tag::Input
                | Tag::Link
                | Tag::Meta
                | Tag::Param
                | Tag::Source
                | Tag::Track
                | Tag::Wbr
                | Tag::Keygen
                | Tag::Frame
        )
    }

    fn is_block(self) -> bool {
        matches!(
            self,
            Tag::Root
                | Tag::Html
                | Tag::Body
                | Tag::Address
                | Tag::Article
                | Tag::Aside
                | Tag::Blockquote
                | Tag::Center
                | Tag::Details
                | Tag::Dialog
                | Tag::Dir
                | Tag::Div
                | Tag::Dl
                | Tag::Dt
                | Tag::Dd
                | Tag::Fieldset
                | Tag::Figcaption
                | Tag::Figure
                | Tag::Footer
                | Tag::Form
                | Tag::H(_)
                | Tag::Header
                | Tag::Hgroup
                | Tag::Hr
                | Tag::Li
                | Tag::Main
                | Tag::Menu
                | Tag::Nav
                | Tag::Ol
                | Tag::P
                | Tag::Pre
                | Tag::Section
                | Tag::Summary
                | Tag::Table
                | Tag::Caption
                | Tag::Thead
                | Tag::Tbody
                | Tag::Tfoot
                | Tag::Tr
                | Tag::Td
                | Tag::Th
                | Tag::Ul
                | Tag::Xmp
                | Tag::Listing
                | Tag::Plaintext
                | Tag::Legend
                | Tag::OptionEl
                | Tag::Optgroup
                | Tag::Frameset
                | Tag::Colgroup
        )
    }

    /// Start tags that end an open `<p>`, as browsers do.
    fn closes_p(self) -> bool {
        matches!(
            self,
            Tag::Address
                | Tag::Article
                | Tag::Aside
                | Tag::Blockquote
                | Tag::Center
                | Tag::Details
                | Tag::Dialog
                | Tag::Dir
                | Tag::Div
                | Tag::Dl
                | Tag::Dt
                | Tag::Dd
                | Tag::Fieldset
                | Tag::Figcaption
                | Tag::Figure
                | Tag::Footer
                | Tag::Form
                | Tag::H(_)
                | Tag::Header
                | Tag::Hgroup
                | Tag::Hr
                | Tag::Li
                | Tag::Main
                | Tag::Menu
                | Tag::Nav
                | Tag::Ol
                | Tag::P
                | Tag::Pre
                | Tag::Section
                | Tag::Summary
                | Tag::Table
                | Tag::Ul
                | Tag::Xmp
                | Tag::Listing
                | Tag::Plaintext
        )
    }

    /// Elements an unrelated end tag must not close across, so that a stray
    /// `</div>` inside a table cell cannot end the table.
    fn is_scope_boundary(self) -> bool {
        matches!(
            self,
            Tag::Root
                | Tag::Html
                | Tag::Table
                | Tag::Td
                | Tag::Th
                | Tag::Caption
                | Tag::Template
                | Tag::Object
                | Tag::Svg
                | Tag::Math
        )
    }

    fn is_table_part(self) -> bool {
        matches!(
            self,
            Tag::Tr
                | Tag::Td
                | Tag::Th
                | Tag::Thead
                | Tag::Tbody
                | Tag::Tfoot
                | Tag::Caption
                | Tag::Colgroup
        )
    }

    /// May appear in `<head>`; anything else there means the body has begun.
    fn is_head_content(self) -> bool {
        matches!(
            self,
            Tag::Title
                | Tag::Meta
                | Tag::Link
                | Tag::Base
                | Tag::Style
                | Tag::Script
                | Tag::Noscript
                | Tag::Template
        )
    }
}

// ---------------------------------------------------------------------------
// HTML: tokenizer
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Default)]
enum Role {
    #[default]
    None,
    Boilerplate,
    Main,
}

#[derive(Default)]
struct Attrs {
    hidden: bool,
    role: Role,
    start: Option<u32>,
    colspan: Option<u16>,
    open: bool,
}

fn leading_number(v: &[u8]) -> Option<u32> {
    let digits: Vec<u32> = v
        .iter()
        .skip_while(|c| c.is_ascii_whitespace())
        .take_while(|c| c.is_ascii_digit())
        .map(|c| u32::from(c - b'0'))
        .collect();
    if digits.is_empty() {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0u32, |acc, d| acc.saturating_mul(10).saturating_add(*d)),
    )
}

fn contains_seq(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl Attrs {
    fn set(&mut self, name: &[u8], value: &[u8]) {
        let trimmed = value.trim_ascii();
        if name.eq_ignore_ascii_case(b"hidden") {
            // `until-found` content is shown by find-in-page, so it is real text.
            if !trimmed.eq_ignore_ascii_case(b"until-found") {
                self.hidden = true;
            }
        } else if name.eq_ignore_ascii_case(b"aria-hidden") {
            if trimmed.eq_ignore_ascii_case(b"true") {
                self.hidden = true;
            }
        } else if name.eq_ignore_ascii_case(b"style") {
            let squashed: Vec<u8> = value
                .iter()
                .filter(|c| !c.is_ascii_whitespace())
                .map(u8::to_ascii_lowercase)
                .collect();
            if contains_seq(&squashed, b"display:none")
                || contains_seq(&squashed, b"visibility:hidden")
            {
                self.hidden = true;
            }
        } else if name.eq_ignore_ascii_case(b"role") {
            let first = trimmed
                .split(|c| c.is_ascii_whitespace())
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            self.role = match first.as_slice() {
                b"navigation" | b"banner" | b"contentinfo" | b"complementary" => Role::Boilerplate,
                b"main" => Role::Main,
                _ => Role::None,
            };
        } else if name.eq_ignore_ascii_case(b"start") {
            self.start = leading_number(value);
        } else if name.eq_ignore_ascii_case(b"colspan") {
            self.colspan = leading_number(value).map(|n| n.clamp(1, 64) as u16);
        } else if name.eq_ignore_ascii_case(b"open") {
            self.open = true;
        }
    }
}

struct TagToken {
    tag: Tag,
    attrs: Attrs,
    self_closing: bool,
    end: usize,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}

fn find_byte(bytes: &[u8], from: usize, b: u8) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&c| c == b)
        .map(|p| p + from)
}

fn find_seq(bytes: &[u8], mut from: usize, seq: &[u8]) -> Option<usize> {
    let first = *seq.first()?;
    loop {
        let p = find_byte(bytes, from, first)?;
        if bytes.get(p..p + seq.len()) == Some(seq) {
            return Some(p);
        }
        from = p + 1;
    }
}

/// Positions of the last quote characters. A quote that opens after the last
/// one of its kind can never close; knowing that up front keeps a page with an
/// unbalanced quote from costing a scan to the end for every tag.
struct QuoteLimits {
    last_double: Option<usize>,
    last_single: Option<usize>,
}

/// Parses a tag from just after `<` or `</` up to and including its `>`.
/// Returns None when the input ends inside the tag.
fn parse_tag(bytes: &[u8], mut i: usize, quotes: &QuoteLimits) -> Option<TagToken> {
    let n = bytes.len();
    let name_start = i;
    while i < n && !is_space(bytes[i]) && bytes[i] != b'/' && bytes[i] != b'>' {
        i += 1;
    }
    let tag = Tag::from_name(&bytes[name_start..i]);
    let mut attrs = Attrs::default();
    let mut self_closing = false;
    loop {
        while i < n && is_space(bytes[i]) {
            i += 1;
        }
        match bytes.get(i) {
            None => return None,
            Some(b'>') => {
                i += 1;
                break;
            }
            Some(b'/') => {
                i += 1;
                if bytes.get(i) == Some(&b'>') {
                    self_closing = true;
                    i += 1;
                    break;
                }
                continue;
            }
            Some(_) => {}
        }
        let attr_start = i;
        i += 1;
        while i < n && !is_space(bytes[i]) && !matches!(bytes[i], b'/' | b'>' | b'=') {
            i += 1;
        }
        let name = &bytes[attr_start..i];
        let mut j = i;
        while j < n && is_space(bytes[j]) {
            j += 1;
        }
        let mut value: &[u8] = b"";
        if bytes.get(j) == Some(&b'=') {
            j += 1;
            while j < n && is_space(bytes[j]) {
                j += 1;
            }
            match bytes.get(j) {
                None => return None,
                Some(&q @ (b'"' | b'\'')) => {
                    let last = if q == b'"' {
                        quotes.last_double
                    } else {
                        quotes.last_single
                    };
                    let close = if last.is_some_and(|l| l > j) {
                        find_byte(bytes, j + 1, q)
                    } else {
                        None
                    };
                    match close {
                        Some(c) => {
                            value = &bytes[j + 1..c];
                            i = c + 1;
                        }
                        None => {
                            // An unbalanced quote would swallow the rest of
                            // the page; read the value as if unquoted instead.
                            let mut k = j + 1;
                            while k < n && !is_space(bytes[k]) && bytes[k] != b'>' {
                                k += 1;
                            }
                            value = &bytes[j + 1..k];
                            i = k;
                        }
                    }
                }
                Some(b'>') => i = j,
                Some(_) => {
                    let mut k = j;
                    while k < n && !is_space(bytes[k]) && bytes[k] != b'>' {
                        k += 1;
                    }
                    value = &bytes[j..k];
                    i = k;
                }
            }
        }
        attrs.set(name, value);
    }
    Some(TagToken {
        tag,
        attrs,
        self_closing,
        end: i,
    })
}

/// Finds `</name` (any case) followed by a character that ends a tag name.
fn find_end_tag(bytes: &[u8], mut from: usize, name: &[u8]) -> Option<usize> {
    loop {
        let p = find_seq(bytes, from, b"</")?;
        let s = p + 2;
        let matches_name = bytes
            .get(s..s + name.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(name));
        if matches_name
            && bytes
                .get(s + name.len())
                .is_none_or(|&c| is_space(c) || c == b'>' || c == b'/')
        {
            return Some(p);
        }
        from = s;
    }
}

fn comment_end(bytes: &[u8], s: usize) -> usize {
    let rest = bytes.get(s..).unwrap_or_default();
    if rest.starts_with(b">") {
        return s + 1;
    }
    if rest.starts_with(b"->") {
        return s + 2;
    }
    find_seq(bytes, s, b"-->").map_or(bytes.len(), |e| e + 3)
}

fn parse_html(src: &str) -> Dom {
    let bytes = src.as_bytes();
    let n = bytes.len();
    let mut b = Builder::new();
    let quotes = QuoteLimits {
        last_double: bytes.iter().rposition(|&c| c == b'"'),
        last_single: bytes.iter().rposition(|&c| c == b'\''),
    };
    let last_gt = bytes.iter().rposition(|&c| c == b'>');
    let mut i = 0;
    let mut text_from = 0;
    // Offsets below only ever move forward and land on ASCII bytes, so every
    // slice of `src` is on a character boundary.
    while i < n {
        let Some(lt) = find_byte(bytes, i, b'<') else {
            break;
        };
        // After the last `>` no tag can be complete. Browsers drop a tag cut
        // off by the end of input, so text stops where the first one starts.
        if last_gt.is_none_or(|g| g < lt) {
            let cut = (lt..n)
                .find(|&p| {
                    bytes[p] == b'<'
                        && bytes.get(p + 1).is_some_and(|&c| {
                            c.is_ascii_alphabetic()
                                || c == b'!'
                                || (c == b'/'
                                    && bytes.get(p + 2).is_some_and(u8::is_ascii_alphabetic))
                        })
                })
                .unwrap_or(n);
            b.text(&decode_entities(&src[text_from..cut]));
            text_from = n;
            break;
        }
        let Some(&next) = bytes.get(lt + 1) else {
            break;
        };
        match next {
            b'!' => {
                b.text(&decode_entities(&src[text_from..lt]));
                let end = if bytes[lt..].starts_with(b"<!--") {
                    comment_end(bytes, lt + 4)
                } else if bytes[lt..].starts_with(b"<![CDATA[") {
                    let s = lt + 9;
                    match find_seq(bytes, s, b"]]>") {
                        Some(e) => {
                            b.text(&src[s..e]);
                            e + 3
                        }
                        None => {
                            b.text(&src[s..]);
                            n
                        }
                    }
                } else {
                    find_byte(bytes, lt + 2, b'>').map_or(n, |e| e + 1)
                };
                i = end;
                text_from = end;
            }
            b'?' => {
                b.text(&decode_entities(&src[text_from..lt]));
                i = find_byte(bytes, lt + 2, b'>').map_or(n, |e| e + 1);
                text_from = i;
            }
            b'/' => {
                b.text(&decode_entities(&src[text_from..lt]));
                i = match bytes.get(lt + 2) {
                    Some(c) if c.is_ascii_alphabetic() => match parse_tag(bytes, lt + 2, &quotes) {
                        Some(t) => {
                            b.end(t.tag);
                            t.end
                        }
                        None => n,
                    },
                    Some(b'>') => lt + 3,
                    _ => find_byte(bytes, lt + 2, b'>').map_or(n, |e| e + 1),
                };
                text_from = i;
            }
            c if c.is_ascii_alphabetic() => {
                b.text(&decode_entities(&src[text_from..lt]));
                let Some(t) = parse_tag(bytes, lt + 1, &quotes) else {
                    // Browsers drop a tag cut off by the end of input.
                    text_from = n;
                    break;
                };
                i = t.end;
                if let Some(name) = t.tag.raw_text_name() {
                    let (content_end, after) = match find_end_tag(bytes, i, name) {
                        Some(p) => (p, parse_tag(bytes, p + 2, &quotes).map_or(n, |e| e.end)),
                        None => (n, n),
                    };
                    let content = &src[i..content_end];
                    match t.tag {
                        Tag::Title => b.title(&decode_entities(content)),
                        Tag::Xmp => {
                            b.start(Tag::Xmp, &t.attrs, false);
                            b.text(content);
                            b.end(Tag::Xmp);
                        }
                        // Scripts, styles, frames and form fields: nothing readable.
                        _ => {}
                    }
                    i = after;
                } else if t.tag == Tag::Plaintext {
                    b.start(Tag::Plaintext, &t.attrs, false);
                    b.text(&src[i..]);
                    i = n;
                } else {
                    b.start(t.tag, &t.attrs, t.self_closing);
                }
                text_from = i;
            }
            _ => i = lt + 1,
        }
    }
    if text_from < n {
        b.text(&decode_entities(&src[text_from..]));
    }
    b.dom
}

// ---------------------------------------------------------------------------
// HTML: tree
// ---------------------------------------------------------------------------

const NONE: u32 = u32::MAX;
/// Deeper nesting than this is treated as flat. Real pages stay far below it;
/// the cap keeps end-tag searches and the recursive renderer bounded on hostile
/// input (thousands of unclosed `<div>`s).
const MAX_DEPTH: usize = 256;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Drop {
    Keep,
    Always,
    /// `<form>`: dropped normally, kept when a page wraps everything in one.
    Form,
}

struct Elem {
    tag: Tag,
    drop: Drop,
    start: u32,
    span: u16,
}

enum Data {
    Elem(Elem),
    /// Byte range into `Dom::text`; one arena keeps a 5 MB page from making a
    /// separate allocation per text node.
    Text(u32, u32),
}

struct Node {
    data: Data,
    first: u32,
    last: u32,
    next: u32,
}

struct Dom {
    nodes: Vec<Node>,
    text: String,
    body: Option<u32>,
    main: Option<u32>,
    articles: Vec<u32>,
    first_h1: Option<u32>,
    title: Option<String>,
}

struct Open {
    id: u32,
    tag: Tag,
    /// This element or an ancestor is always dropped: its text is not kept.
    dropped: bool,
    /// Inside article/main/section, where `<header>` holds the headline
    /// rather than site chrome.
    content: bool,
    article: bool,
    foreign: bool,
}

struct Builder {
    dom: Dom,
    stack: Vec<Open>,
    head_open: bool,
    head_seen: bool,
    /// How many elements of each kind are open, so an end tag with nothing to
    /// close (`</i>` a million times) is dismissed without walking the stack.
    open_count: HashMap<Tag, u32>,
}

impl Builder {
    fn new() -> Builder {
        let root = Node {
            data: Data::Elem(Elem {
                tag: Tag::Root,
                drop: Drop::Keep,
                start: 1,
                span: 1,
            }),
            first: NONE,
            last: NONE,
            next: NONE,
        };
        Builder {
            dom: Dom {
                nodes: vec![root],
                text: String::new(),
                body: None,
                main: None,
                articles: Vec::new(),
                first_h1: None,
                title: None,
            },
            stack: vec![Open {
                id: 0,
                tag: Tag::Root,
                dropped: false,
                content: false,
                article: false,
                foreign: false,
            }],
            head_open: false,
            head_seen: false,
            open_count: HashMap::new(),
        }
    }

    fn top(&self) -> &Open {
        // The root entry is never popped (see `truncate`).
        &self.stack[self.stack.len() - 1]
    }

    fn add_node(&mut self, parent: u32, data: Data) -> Option<u32> {
        let id = u32::try_from(self.dom.nodes.len())
            .ok()
            .filter(|&id| id < NONE)?;
        self.dom.nodes.push(Node {
            data,
            first: NONE,
            last: NONE,
            next: NONE,
        });
        let last = self.dom.nodes.get(parent as usize)?.last;
        if last == NONE {
            self.dom.nodes.get_mut(parent as usize)?.first = id;
        } else {
            self.dom.nodes.get_mut(last as usize)?.next = id;
        }
        self.dom.nodes.get_mut(parent as usize)?.last = id;
        Some(id)
    }

    fn truncate(&mut self, len: usize) {
        while self.stack.len() > len.max(1) {
            if let Some(o) = self.stack.pop() {
                if o.tag == Tag::Head {
                    self.head_open = false;
                }
                if let Some(count) = self.open_count.get_mut(&o.tag) {
                    *count = count.saturating_sub(1);
                }
            }
        }
    }

    /// Pops through the nearest open element in `targets`, looking no further
    /// down than an element in `stops` or a scope boundary. With `outermost`
    /// it keeps looking for a lower match before the boundary (closing a whole
    /// row including its cells).
    fn close_to(&mut self, targets: &[Tag], stops: &[Tag], outermost: bool) {
        let mut found = None;
        for idx in (1..self.stack.len()).rev() {
            let t = self.stack[idx].tag;
            if targets.contains(&t) {
                found = Some(idx);
                if !outermost {
                    break;
                }
                continue;
            }
            if stops.contains(&t) || t.is_scope_boundary() {
                break;
            }
        }
        if let Some(idx) = found {
            self.truncate(idx);
        }
    }

    fn close_head(&mut self) {
        if self.head_open {
            if let Some(pos) = self.stack.iter().rposition(|o| o.tag == Tag::Head) {
                self.truncate(pos);
            }
            self.head_open = false;
        }
    }

    fn is_open(&self, tag: Tag) -> bool {
        self.open_count.get(&tag).is_some_and(|&c| c > 0)
    }

    fn close_p(&mut self) {
        if self.is_open(Tag::P) {
            self.close_to(&[Tag::P], &[Tag::Button], false);
        }
    }

    fn title(&mut self, text: &str) {
        if self.dom.title.is_none() && !self.top().foreign {
            self.dom.title = Some(text.to_string());
        }
    }

    fn start(&mut self, tag: Tag, attrs: &Attrs, self_closing: bool) {
        match tag {
            Tag::Html => return,
            Tag::Head => {
                if !self.head_seen && self.dom.body.is_none() {
                    self.head_seen = true;
                    if self.push_element(tag, attrs, false).is_some() {
                        self.head_open = true;
                    }
                }
                return;
            }
            Tag::Body => {
                if self.dom.body.is_none() {
                    self.close_head();
                    self.dom.body = self.push_element(tag, attrs, false);
                }
                return;
            }
            _ => {}
        }
        if !tag.is_head_content() {
            self.close_head();
        }
        if tag.closes_p() {
            self.close_p();
        }
        match tag {
            Tag::H(_) => {
                if matches!(self.top().tag, Tag::H(_)) {
                    let len = self.stack.len() - 1;
                    self.truncate(len);
                }
            }
            Tag::Li => self.close_to(&[Tag::Li], &[Tag::Ul, Tag::Ol, Tag::Menu], false),
            Tag::Dt | Tag::Dd => self.close_to(&[Tag::Dt, Tag::Dd], &[Tag::Dl], false),
            Tag::Tr => self.close_to(&[Tag::Tr, Tag::Td, Tag::Th], &[Tag::Table], true),
            Tag::Td | Tag::Th => self.close_to(&[Tag::Td, Tag::Th], &[Tag::Tr, Tag::Table], false),
            Tag::Thead | Tag::Tbody | Tag::Tfoot | Tag::Caption | Tag::Colgroup => self.close_to(
                &[
                    Tag::Td,
                    Tag::Th,
                    Tag::Tr,
                    Tag::Thead,
                    Tag::Tbody,
                    Tag::Tfoot,
                    Tag::Caption,
                    Tag::Colgroup,
                ],
                &[Tag::Table],
                true,
            ),
            Tag::OptionEl | Tag::Optgroup if self.top().tag == Tag::OptionEl => {
                let len = self.stack.len() - 1;
                self.truncate(len);
            }
            _ => {}
        }
        self.push_element(tag, attrs, self_closing);
    }

    fn push_element(&mut self, tag: Tag, attrs: &Attrs, self_closing: bool) -> Option<u32> {
        let parent = self.top();
        let parent_id = parent.id;
        let foreign = parent.foreign || matches!(tag, Tag::Svg | Tag::Math);
        let mut drop = match tag {
            Tag::Script
            | Tag::Style
            | Tag::Noscript
            | Tag::Template
            | Tag::Svg
            | Tag::Canvas
            | Tag::Iframe
            | Tag::Nav
            | Tag::Footer
            | Tag::Aside
            | Tag::Button
            | Tag::Select
            | Tag::OptionEl
            | Tag::Optgroup
            | Tag::Datalist
            | Tag::Textarea
            | Tag::Input
            | Tag::Video
            | Tag::Audio
            | Tag::Head
            | Tag::Noembed
            | Tag::Noframes
            | Tag::Frameset
            | Tag::Map => Drop::Always,
            // A page or section header is site chrome; the header of an
            // article holds its headline and byline, which are content.
            Tag::Header if !parent.content => Drop::Always,
            Tag::Dialog if !attrs.open => Drop::Always,
            Tag::Form => Drop::Form,
            _ => Drop::Keep,
        };
        if attrs.hidden || attrs.role == Role::Boilerplate {
            drop = Drop::Always;
        }
        let dropped = parent.dropped || drop == Drop::Always;
        let content = parent.content
            || matches!(tag, Tag::Article | Tag::Main | Tag::Section)
            || attrs.role == Role::Main;
        let article = parent.article || tag == Tag::Article;
        let inside_article = parent.article;
        let id = self.add_node(
            parent_id,
            Data::Elem(Elem {
                tag,
                drop,
                start: attrs.start.unwrap_or(1),
                span: attrs.colspan.unwrap_or(1),
            }),
        )?;
        if !dropped {
            if (tag == Tag::Main || attrs.role == Role::Main) && self.dom.main.is_none() {
                self.dom.main = Some(id);
            }
            if tag == Tag::Article && !inside_article {
                self.dom.articles.push(id);
            }
            if tag == Tag::H(1) && self.dom.first_h1.is_none() {
                self.dom.first_h1 = Some(id);
            }
        }
        let leaf = tag.is_void()
            || (self_closing && (foreign || matches!(tag, Tag::Other(_))))
            || self.stack.len() >= MAX_DEPTH;
        if !leaf {
            *self.open_count.entry(tag).or_default() += 1;
            self.stack.push(Open {
                id,
                tag,
                dropped,
                content,
                article,
                foreign,
            });
        }
        Some(id)
    }

    fn end(&mut self, tag: Tag) {
        match tag {
            // Content after `</body>` still belongs to the body in browsers.
            Tag::Html | Tag::Body | Tag::Root | Tag::Title => return,
            Tag::Head => {
                self.close_head();
                return;
            }
            Tag::Br => {
                self.start(Tag::Br, &Attrs::default(), false);
                return;
            }
            Tag::P => {
                self.close_p();
                return;
            }
            _ => {}
        }
        if !self.is_open(tag) {
            return;
        }
        // Inline elements never close across a block: `<b><p>x</b>` keeps the
        // paragraph whole instead of ending it early.
        let inline =
            !tag.is_block() && !tag.is_table_part() && !matches!(tag, Tag::Svg | Tag::Math);
        let table_part = tag.is_table_part();
        for idx in (1..self.stack.len()).rev() {
            let t = self.stack[idx].tag;
            if t == tag {
                self.truncate(idx);
                return;
            }
            if inline && t.is_block() {
                return;
            }
            let stop = if table_part {
                t == Tag::Table
            } else if tag == Tag::Table {
                false
            } else {
                t.is_scope_boundary()
                    || (tag == Tag::Li && matches!(t, Tag::Ul | Tag::Ol))
                    || (matches!(tag, Tag::Dt | Tag::Dd) && t == Tag::Dl)
            };
            if stop {
                return;
            }
        }
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.head_open {
            if s.trim().is_empty() {
                return;
            }
            self.close_head();
        }
        let top = self.top();
        if top.dropped {
            return;
        }
        let parent = top.id;
        let Some(last) = self.dom.nodes.get(parent as usize).map(|n| n.last) else {
            return;
        };
        // Text split by a comment or a skipped script joins its neighbour when
        // that neighbour is the most recent text in the arena.
        if let Some(Node {
            data: Data::Text(_, end),
            ..
        }) = self.dom.nodes.get_mut(last as usize)
        {
            if *end as usize == self.dom.text.len() {
                self.dom.text.push_str(s);
                *end = u32::try_from(self.dom.text.len()).unwrap_or(*end);
                return;
            }
        }
        let (Ok(start), Ok(end)) = (
            u32::try_from(self.dom.text.len()),
            u32::try_from(self.dom.text.len() + s.len()),
        ) else {
            return;
        };
        self.dom.text.push_str(s);
        self.add_node(parent, Data::Text(start, end));
    }
}

// ---------------------------------------------------------------------------
// HTML: rendering
// ---------------------------------------------------------------------------

enum Ctx {
    Quote,
    Item { marker: String, used: bool },
}

struct ListState {
    ordered: bool,
    next: u32,
}

struct Row {
    cells: Vec<(u32, bool, u16)>,
    head: bool,
    loose: bool,
}

struct Renderer<'a> {
    nodes: &'a [Node],
    text: &'a str,
    lenient: bool,
    out: String,
    /// Inline text of the block being built, already whitespace-collapsed.
    buf: String,
    space: bool,
    /// A block boundary seen while flattening (inside a cell or heading).
    sep: bool,
    flat: u32,
    flat_sep: &'static str,
    pre: u32,
    ctx: Vec<Ctx>,
    lists: Vec<ListState>,
    last_tight: bool,
}

impl<'a> Renderer<'a> {
    fn new(dom: &'a Dom, lenient: bool) -> Renderer<'a> {
        Renderer {
            nodes: &dom.nodes,
            text: &dom.text,
            lenient,
            out: String::new(),
            buf: String::new(),
            space: false,
            sep: false,
            flat: 0,
            flat_sep: " ",
            pre: 0,
            ctx: Vec::new(),
            lists: Vec::new(),
            last_tight: false,
        }
    }

    fn get(&self, id: u32) -> Option<&'a Node> {
        self.nodes.get(id as usize)
    }

    fn elem_of(&self, id: u32) -> Option<&'a Elem> {
        match &self.get(id)?.data {
            Data::Elem(e) => Some(e),
            Data::Text(..) => None,
        }
    }

    fn first_child(&self, id: u32) -> u32 {
        self.get(id).map_or(NONE, |n| n.first)
    }

    fn next_sibling(&self, id: u32) -> u32 {
        self.get(id).map_or(NONE, |n| n.next)
    }

    fn skipped(&self, e: &Elem) -> bool {
        match e.drop {
            Drop::Always => true,
            Drop::Form => !self.lenient,
            Drop::Keep => false,
        }
    }

    fn in_item(&self) -> bool {
        self.ctx.iter().any(|c| matches!(c, Ctx::Item { .. }))
    }

    fn children(&mut self, id: u32) {
        let mut c = self.first_child(id);
        while c != NONE {
            self.node(c);
            c = self.next_sibling(c);
        }
    }

    fn node(&mut self, id: u32) {
        let Some(node) = self.get(id) else { return };
        match &node.data {
            Data::Text(s, e) => {
                let text = self.text.get(*s as usize..*e as usize).unwrap_or_default();
                self.push_text(text);
            }
            Data::Elem(e) => self.elem(id, e),
        }
    }

    fn elem(&mut self, id: u32, e: &Elem) {
        if self.skipped(e) {
            return;
        }
        let tag = e.tag;
        if self.pre > 0 && self.flat == 0 {
            // Inside <pre> every element is inline; blocks only start a line.
            if tag == Tag::Br {
                self.buf.push('\n');
                return;
            }
            let block = tag.is_block();
            if block && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
            self.children(id);
            if block && !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
            return;
        }
        match tag {
            Tag::Br => self.line_break(),
            Tag::H(level) => self.heading(id, level),
            Tag::Ul | Tag::Ol | Tag::Menu | Tag::Dir => self.list(id, e),
            Tag::Li => self.item(id),
            Tag::Dl => self.definitions(id),
            Tag::Table => self.table(id),
            Tag::Pre | Tag::Xmp | Tag::Listing | Tag::Plaintext => self.preformatted(id),
            Tag::Blockquote => self.quote(id),
            Tag::Head | Tag::Title | Tag::Img => {}
            _ if tag.is_block() => {
                self.boundary();
                self.children(id);
                self.boundary();
            }
            _ => self.children(id),
        }
    }

    fn push_text(&mut self, s: &str) {
        if self.pre > 0 && self.flat == 0 {
            for c in s.chars() {
                match c {
                    '\n' | '\t' => self.buf.push(c),
                    '\u{a0}' => self.buf.push(' '),
                    c if is_invisible(c) => {}
                    c => self.buf.push(c),
                }
            }
            return;
        }
        for c in s.chars() {
            if c.is_whitespace() {
                if !self.buf.is_empty() && !self.buf.ends_with('\n') {
                    self.space = true;
                }
                continue;
            }
            if is_invisible(c) {
                continue;
            }
            if self.sep {
                if !self.buf.is_empty() {
                    let sep = if self.buf.ends_with(['.', ',', ';', ':', '!', '?']) {
                        " "
                    } else {
                        self.flat_sep
                    };
                    self.buf.push_str(sep);
                }
                self.sep = false;
                self.space = false;
            } else if self.space {
                self.buf.push(' ');
                self.space = false;
            }
            self.buf.push(c);
        }
    }

    fn soft_break(&mut self) {
        if !self.buf.is_empty() {
            self.sep = true;
        }
    }

    fn boundary(&mut self) {
        if self.flat > 0 {
            self.soft_break();
        } else {
            self.flush();
        }
    }

    fn line_break(&mut self) {
        if self.flat > 0 {
            self.soft_break();
            return;
        }
        if !self.buf.is_empty() {
            self.buf.push('\n');
        }
        self.space = false;
    }

    fn prefix(&self, first: bool) -> String {
        let innermost = self.ctx.iter().rposition(|c| matches!(c, Ctx::Item { .. }));
        let mut p = String::new();
        for (i, c) in self.ctx.iter().enumerate() {
            match c {
                Ctx::Quote => p.push_str("> "),
                Ctx::Item { marker, used } => {
                    if first && !used && Some(i) == innermost {
                        p.push_str(marker);
                    } else {
                        p.extend(std::iter::repeat_n(' ', marker.chars().count()));
                    }
                }
            }
        }
        p
    }

    /// Writes finished lines. `tight` blocks (list items, table rows,
    /// definitions) follow each other with a single newline.
    fn emit(&mut self, lines: &[&str], tight: bool) {
        if lines.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push_str(if tight && self.last_tight {
                "\n"
            } else {
                "\n\n"
            });
        }
        for (k, line) in lines.iter().enumerate() {
            if k > 0 {
                self.out.push('\n');
            }
            let p = self.prefix(k == 0);
            if line.is_empty() {
                self.out.push_str(p.trim_end());
            } else {
                self.out.push_str(&p);
                self.out.push_str(line);
            }
        }
        for c in &mut self.ctx {
            if let Ctx::Item { used, .. } = c {
                *used = true;
            }
        }
        self.last_tight = tight;
    }

    fn flush(&mut self) {
        self.space = false;
        self.sep = false;
        if self.buf.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.buf);
        let mut lines: Vec<&str> = Vec::new();
        let mut blank = false;
        for l in text.split('\n') {
            let l = l.trim();
            if l.is_empty() {
                blank = !lines.is_empty();
                continue;
            }
            if blank {
                lines.push("");
                blank = false;
            }
            lines.push(l);
        }
        let tight = self.in_item();
        self.emit(&lines, tight);
    }

    /// Renders an element's content as one collapsed line: for headings, table
    /// cells and definitions, which must stay on a single line.
    fn inline_text(&mut self, id: u32, sep: &'static str) -> String {
        let saved_buf = std::mem::take(&mut self.buf);
        let saved = (self.space, self.sep, self.flat_sep);
        self.space = false;
        self.sep = false;
        self.flat_sep = sep;
        self.flat += 1;
        self.children(id);
        self.flat -= 1;
        let got = std::mem::replace(&mut self.buf, saved_buf);
        (self.space, self.sep, self.flat_sep) = saved;
        got.trim().to_string()
    }

    fn flattened(&mut self, id: u32) {
        self.soft_break();
        self.children(id);
        self.soft_break();
    }

    fn heading(&mut self, id: u32, level: u8) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let text = self.inline_text(id, " ");
        if text.is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push_str("\n\n");
        }
        for _ in 0..level.clamp(1, 6) {
            self.out.push('#');
        }
        self.out.push(' ');
        self.out.push_str(&text);
        self.last_tight = false;
    }

    fn list(&mut self, id: u32, e: &Elem) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        self.lists.push(ListState {
            ordered: e.tag == Tag::Ol,
            next: e.start,
        });
        self.children(id);
        self.flush();
        self.lists.pop();
        if !self.in_item() {
            self.last_tight = false;
        }
    }

    fn item(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let marker = match self.lists.last_mut() {
            Some(l) if l.ordered => {
                let m = format!("{}. ", l.next);
                l.next = l.next.saturating_add(1);
                m
            }
            _ => "- ".to_string(),
        };
        self.ctx.push(Ctx::Item {
            marker,
            used: false,
        });
        self.children(id);
        self.flush();
        self.ctx.pop();
    }

    fn quote(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        self.ctx.push(Ctx::Quote);
        self.children(id);
        self.flush();
        self.ctx.pop();
    }

    fn preformatted(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        self.pre += 1;
        self.children(id);
        self.pre -= 1;
        let text = std::mem::take(&mut self.buf);
        let lines: Vec<&str> = text.split('\n').map(str::trim_end).collect();
        let first = lines.iter().position(|l| !l.is_empty());
        let last = lines.iter().rposition(|l| !l.is_empty());
        if let (Some(f), Some(l)) = (first, last) {
            let tight = self.in_item();
            // Fenced, so a code line such as `# comment` is never read as a heading later.
            let mut fenced: Vec<&str> = Vec::with_capacity(l - f + 3);
            fenced.push("```");
            fenced.extend_from_slice(&lines[f..=l]);
            fenced.push("```");
            self.emit(&fenced, tight);
        }
    }

    fn collect_defs(&self, id: u32, out: &mut Vec<(bool, u32)>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Dt => out.push((true, c)),
                        Tag::Dd => out.push((false, c)),
                        Tag::Dl => {}
                        _ => self.collect_defs(c, out),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    /// Each definition becomes `Term: definition`, one line each, so a term
    /// and its meaning never end up in different chunks.
    fn definitions(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let mut entries = Vec::new();
        self.collect_defs(id, &mut entries);
        let mut terms: Vec<String> = Vec::new();
        let mut answered = false;
        for (is_term, node) in entries {
            if is_term {
                if answered {
                    terms.clear();
                    answered = false;
                }
                let t = self.inline_text(node, ", ");
                if !t.is_empty() {
                    terms.push(t);
                }
                continue;
            }
            let d = self.inline_text(node, ", ");
            if d.is_empty() {
                continue;
            }
            let line = if terms.is_empty() {
                d
            } else {
                format!("{}: {}", terms.join(" / "), d)
            };
            self.emit(&[line.as_str()], true);
            answered = true;
        }
        if !answered && !terms.is_empty() {
            let line = terms.join(" / ");
            self.emit(&[line.as_str()], true);
        }
        if !self.in_item() {
            self.last_tight = false;
        }
    }

    fn collect_rows(&self, id: u32, head: bool, rows: &mut Vec<Row>, caption: &mut Option<u32>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Tr => {
                            let mut cells = Vec::new();
                            self.collect_cells(c, &mut cells);
                            rows.push(Row {
                                cells,
                                head,
                                loose: false,
                            });
                        }
                        Tag::Thead => self.collect_rows(c, true, rows, caption),
                        Tag::Tbody | Tag::Tfoot => self.collect_rows(c, false, rows, caption),
                        Tag::Td | Tag::Th => {
                            let cell = (c, e.tag == Tag::Th, e.span);
                            match rows.last_mut() {
                                Some(r) if r.loose => r.cells.push(cell),
                                _ => rows.push(Row {
                                    cells: vec![cell],
                                    head,
                                    loose: true,
                                }),
                            }
                        }
                        Tag::Caption => {
                            if caption.is_none() {
                                *caption = Some(c);
                            }
                        }
                        Tag::Table | Tag::Colgroup | Tag::Col => {}
                        _ => self.collect_rows(c, head, rows, caption),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    fn collect_cells(&self, id: u32, cells: &mut Vec<(u32, bool, u16)>) {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e) {
                    match e.tag {
                        Tag::Td | Tag::Th => cells.push((c, e.tag == Tag::Th, e.span)),
                        Tag::Table | Tag::Tr => {}
                        _ => self.collect_cells(c, cells),
                    }
                }
            }
            c = self.next_sibling(c);
        }
    }

    /// A cell holding a nested table or a heading means the table lays out the
    /// page rather than holding data. Nested tables are not entered, so each
    /// node is looked at by one table only.
    fn has_structure(&self, id: u32) -> bool {
        let mut c = self.first_child(id);
        while c != NONE {
            if let Some(e) = self.elem_of(c) {
                if !self.skipped(e)
                    && (matches!(e.tag, Tag::Table | Tag::H(_)) || self.has_structure(c))
                {
                    return true;
                }
            }
            c = self.next_sibling(c);
        }
        false
    }

    fn table(&mut self, id: u32) {
        if self.flat > 0 {
            return self.flattened(id);
        }
        self.flush();
        let mut rows = Vec::new();
        let mut caption = None;
        self.collect_rows(id, false, &mut rows, &mut caption);
        if let Some(cap) = caption {
            let text = self.inline_text(cap, ", ");
            if !text.is_empty() {
                let tight = self.in_item();
                self.emit(&[text.as_str()], tight);
            }
        }
        let widest = rows.iter().map(|r| r.cells.len()).max().unwrap_or(0);
        let layout = widest <= 1
            || rows
                .iter()
                .any(|r| r.cells.iter().any(|&(c, _, _)| self.has_structure(c)));
        if layout {
            for row in &rows {
                for &(cell, _, _) in &row.cells {
                    self.flush();
                    self.children(cell);
                    self.flush();
                }
            }
            return;
        }
        let mut header: Option<Vec<String>> = None;
        // The header row itself is only written when no data row used it.
        let mut unused_header: Option<String> = None;
        let mut lines: Vec<String> = Vec::new();
        for row in &rows {
            let cells: Vec<(String, bool, u16)> = row
                .cells
                .iter()
                .map(|&(c, th, span)| (self.inline_text(c, ", "), th, span))
                .collect();
            if cells.iter().all(|c| c.0.is_empty()) {
                continue;
            }
            let all_th = cells.iter().all(|c| c.1);
            if (row.head || all_th) && cells.len() >= 2 {
                if let Some(h) = unused_header.take() {
                    lines.push(h);
                }
                let mut cols = Vec::new();
                for (text, _, span) in &cells {
                    for _ in 0..*span {
                        cols.push(text.clone());
                    }
                }
                unused_header = Some(plain_row(cells.iter().map(|c| c.0.as_str())));
                header = Some(cols);
                continue;
            }
            unused_header = None;
            let line = match &header {
                Some(h) if cells.len() == 1 && usize::from(cells[0].2) >= h.len() => {
                    cells[0].0.clone()
                }
                Some(h) => {
                    let mut col = 0;
                    let mut placed = Vec::new();
                    for (text, _, span) in &cells {
                        placed.push((col, text.as_str()));
                        col += usize::from(*span);
                    }
                    keyed_row(h, &placed)
                }
                None => {
                    // A row that starts with a header cell (an infobox) reads
                    // as `Label: value`.
                    if cells.len() >= 2
                        && cells[0].1
                        && !cells[0].0.is_empty()
                        && !cells[1..].iter().any(|c| c.1)
                    {
                        let rest = plain_row(cells[1..].iter().map(|c| c.0.as_str()));
                        if rest.is_empty() {
                            cells[0].0.clone()
                        } else {
                            format!("{}: {}", cells[0].0, rest)
                        }
                    } else {
                        plain_row(cells.iter().map(|c| c.0.as_str()))
                    }
                }
            };
            if !line.is_empty() {
                lines.push(line);
            }
        }
        if let Some(h) = unused_header {
            lines.push(h);
        }
        for line in &lines {
            self.emit(&[line.as_str()], true);
        }
        if !self.in_item() {
            self.last_tight = false;
        }
    }

    fn finish(mut self) -> String {
        self.flush();
        tidy(&self.out)
    }
}

fn render(dom: &Dom, roots: &[u32], lenient: bool) -> String {
    let mut r = Renderer::new(dom, lenient);
    for &root in roots {
        r.node(root);
        r.flush();
        r.last_tight = false;
    }
    r.finish()
}

/// Below this many words a page's main/article is treated as "almost nothing"
/// and the body is tried instead (e.g. a `<main>` that only holds a search box).
const MIN_WORDS: usize = 20;

/// Extracts the readable text of a web page.
pub fn html_to_text(html: &str) -> Extracted {
    let dom = parse_html(html);
    let body = dom.body.unwrap_or(0);
    let candidates: Vec<u32> = match dom.main {
        Some(m) => vec![m],
        None => dom.articles.clone(),
    };
    let mut text = if candidates.is_empty() {
        render(&dom, &[body], false)
    } else {
        render(&dom, &candidates, false)
    };
    if !candidates.is_empty() && word_count(&text) < MIN_WORDS {
        let whole = render(&dom, &[body], false);
        if word_count(&whole) > 2 * word_count(&text) {
            text = whole;
        }
    }
    // Some sites (ASP.NET WebForms) wrap the entire page in one <form>.
    if word_count(&text) < MIN_WORDS {
        let lenient = render(&dom, &[body], true);
        if word_count(&lenient) > 2 * word_count(&text) {
            text = lenient;
        }
    }
    let title = dom
        .title
        .as_deref()
        .map(collapse_ws)
        .filter(|t| !t.is_empty())
        .or_else(|| {
            let h1 = dom.first_h1?;
            let t = Renderer::new(&dom, false).inline_text(h1, " ");
            (!t.is_empty()).then_some(t)
        });
    Extracted { title, text }
}

// ---------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------

/// Splits CSV text into records. Quotes may hold delimiters, doubled quotes
/// and line breaks; a stray quote inside an unquoted field is kept as text,
/// and an unterminated quote runs to the end, as spreadsheet programs do.
fn parse_csv(text: &str, delim: char, limit: usize) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            // Spaces before an opening quote (`a, "b, c"`) are common in
            // hand-written files and should not stop the quote counting.
            '"' if !was_quoted && field.trim().is_empty() => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                was_quoted = false;
                if rows.len() >= limit {
                    return rows;
                }
            }
            c if c == delim => {
                row.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() || was_quoted {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// Picks the delimiter that splits the first records into the same number of
/// fields most often; ties go to the one giving more fields.
fn detect_delimiter(text: &str) -> char {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sample = &text[..end];
    let mut best = (',', 0usize, 0usize);
    for delim in [',', ';', '\t', '|'] {
        let counts: Vec<usize> = parse_csv(sample, delim, 30)
            .iter()
            .filter(|r| r.iter().any(|f| !f.trim().is_empty()))
            .map(Vec::len)
            .collect();
        let mut freq: HashMap<usize, usize> = HashMap::new();
        for &c in &counts {
            *freq.entry(c).or_default() += 1;
        }
        let Some((&fields, &agree)) = freq.iter().max_by_key(|&(fields, agree)| (*agree, *fields))
        else {
            continue;
        };
        if fields >= 2 && (agree, fields) > (best.1, best.2) {
            best = (delim, agree, fields);
        }
    }
    best.0
}

fn looks_numeric(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
        && s.chars().all(|c| {
            c.is_ascii_digit()
                || matches!(
                    c,
                    '.' | ','
                        | '-'
                        | '+'
                        | '%'
                        | '$'
                        | '€'
                        | '£'
                        | '¥'
                        | ' '
                        | '/'
                        | ':'
                        | 'e'
                        | 'E'
                )
        })
}

fn looks_like_header(row: &[String]) -> bool {
    !row.is_empty()
        && row
            .iter()
            .all(|c| !c.is_empty() && !looks_numeric(c) && c.chars().count() <= 80)
}

/// Turns CSV (comma, semicolon, tab or pipe separated) into one line per row.
pub fn csv_to_text(text: &str) -> Result<String, ExtractError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ExtractError("the CSV file is empty".to_string()));
    }
    let delim = detect_delimiter(text);
    let rows: Vec<Vec<String>> = parse_csv(text, delim, usize::MAX)
        .into_iter()
        .map(|r| r.iter().map(|c| collapse_ws(c)).collect::<Vec<_>>())
        .filter(|r| r.iter().any(|c| !c.is_empty()))
        .collect();
    let Some(first) = rows.first() else {
        return Err(ExtractError("the CSV file has no rows".to_string()));
    };
    let mut lines: Vec<String> = Vec::with_capacity(rows.len());
    if rows.len() > 1 && looks_like_header(first) {
        for row in &rows[1..] {
            let cells: Vec<(usize, &str)> = row.iter().map(String::as_str).enumerate().collect();
            let line = keyed_row(first, &cells);
            if !line.is_empty() {
                lines.push(line);
            }
        }
    } else {
        for row in &rows {
            lines.push(plain_row(row.iter().map(String::as_str)));
        }
    }
    Ok(lines.join("\n"))
}

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

/// A JSON value that keeps object keys in document order, so the text reads
/// in the order the author wrote it without turning on serde_json's
/// `preserve_order` feature for the whole product.
enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // Rust prints 1e300 with all its zeros; scientific notation reads better.
        let s = if v != 0.0 && (v.abs() >= 1e16 || v.abs() < 1e-6) {
            format!("{v:e}")
        } else {
            v.to_string()
        };
        Ok(Json::Num(s))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Obj(entries))
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

impl Json {
    fn scalar(&self) -> Option<String> {
        match self {
            Json::Null => Some("null".to_string()),
            Json::Bool(b) => Some(b.to_string()),
            Json::Num(n) => Some(n.clone()),
            Json::Str(s) => Some(collapse_ws(s)),
            Json::Arr(_) | Json::Obj(_) => None,
        }
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Json::Arr(_) | Json::Obj(_))
    }
}

fn json_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Flattens one object into `key: value` pairs for a single row; empty values
/// are left out because they only add noise to a row.
fn json_pairs(v: &Json, key: &str, pairs: &mut Vec<(String, String)>) {
    match v {
        Json::Null => {}
        Json::Obj(entries) => {
            for (k, x) in entries {
                json_pairs(x, &json_key(key, k), pairs);
            }
        }
        Json::Arr(items) if items.iter().all(Json::is_scalar) => {
            let joined: Vec<String> = items.iter().filter_map(Json::scalar).collect();
            if !joined.is_empty() {
                pairs.push((key.to_string(), joined.join(", ")));
            }
        }
        Json::Arr(items) => {
            for (i, x) in items.iter().enumerate() {
                json_pairs(x, &format!("{key}[{i}]"), pairs);
            }
        }
        scalar => {
            if let Some(s) = scalar.scalar().filter(|s| !s.is_empty()) {
                pairs.push((key.to_string(), s));
            }
        }
    }
}

fn json_row(v: &Json) -> String {
    let mut pairs = Vec::new();
    json_pairs(v, "", &mut pairs);
    pairs
        .into_iter()
        .map(|(k, v)| if k.is_empty() { v } else { format!("{k}: {v}") })
        .collect::<Vec<_>>()
        .join("; ")
}

fn json_lines(v: &Json, path: &str, out: &mut Vec<String>) {
    let labelled = |s: String| {
        if path.is_empty() {
            s
        } else {
            format!("{path}: {s}")
        }
    };
    match v {
        Json::Obj(entries) if entries.is_empty() => {
            if !path.is_empty() {
                out.push(labelled("(empty)".to_string()));
            }
        }
        Json::Obj(entries) => {
            for (k, x) in entries {
                json_lines(x, &json_key(path, k), out);
            }
        }
        Json::Arr(items) if items.is_empty() => {
            if !path.is_empty() {
                out.push(labelled("(empty)".to_string()));
            }
        }
        Json::Arr(items) if items.iter().all(Json::is_scalar) => {
            let values = items.iter().filter_map(Json::scalar);
            if path.is_empty() {
                out.extend(values);
            } else {
                out.push(labelled(values.collect::<Vec<_>>().join(", ")));
            }
        }
        // Records: one line each, so every row can be read on its own.
        Json::Arr(items) if items.iter().all(|x| matches!(x, Json::Obj(_))) => {
            for (i, x) in items.iter().enumerate() {
                let row = json_row(x);
                if row.is_empty() {
                    continue;
                }
                out.push(if path.is_empty() {
                    row
                } else {
                    format!("{path}[{i}]: {row}")
                });
            }
        }
        Json::Arr(items) => {
            for (i, x) in items.iter().enumerate() {
                json_lines(x, &format!("{path}[{i}]"), out);
            }
        }
        scalar => {
            if let Some(s) = scalar.scalar() {
                out.push(labelled(s));
            }
        }
    }
}

/// Renders a JSON document (or JSON Lines) as `key.path: value` lines.
pub fn json_to_text(text: &str) -> Result<String, ExtractError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ExtractError("the JSON document is empty".to_string()));
    }
    let mut values = Vec::new();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Json>() {
        match v {
            Ok(v) => values.push(v),
            Err(e) => {
                let mut msg = e.to_string();
                if let Some(p) = msg.rfind(" at line ") {
                    msg.truncate(p);
                }
                return Err(ExtractError(format!(
                    "the JSON document is not valid at line {}, column {}: {}",
                    e.line(),
                    e.column(),
                    msg
                )));
            }
        }
    }
    // JSON Lines: several documents read as the rows of one array.
    let root = if values.len() == 1 {
        values.pop().unwrap_or(Json::Null)
    } else {
        Json::Arr(values)
    };
    let mut blocks: Vec<String> = Vec::new();
    match &root {
        // Each top-level section becomes its own paragraph so the chunker can
        // split between them; runs of plain values stay together.
        Json::Obj(entries) if !entries.is_empty() => {
            let mut plain: Vec<String> = Vec::new();
            for (k, v) in entries {
                let mut lines = Vec::new();
                json_lines(v, k, &mut lines);
                if v.is_scalar() || lines.len() <= 1 {
                    plain.extend(lines);
                } else {
                    if !plain.is_empty() {
                        blocks.push(plain.join("\n"));
                        plain.clear();
                    }
                    blocks.push(lines.join("\n"));
                }
            }
            if !plain.is_empty() {
                blocks.push(plain.join("\n"));
            }
        }
        other => {
            let mut lines = Vec::new();
            json_lines(other, "", &mut lines);
            if !lines.is_empty() {
                blocks.push(lines.join("\n"));
            }
        }
    }
    let text = blocks.join("\n\n");
    if text.trim().is_empty() {
        return Err(ExtractError(
            "the JSON document holds no values to read".to_string(),
        ));
    }
    Ok(text)
}

// ---------------------------------------------------------------------------
// Plain text
// ---------------------------------------------------------------------------

/// Normalises line endings, strips control characters and collapses every run
/// of blank lines to a single blank line (the paragraph break the chunker
/// expects). Indentation and single line breaks are kept, since in plain text
/// they often carry meaning (addresses, poems, code).
pub fn plain_to_text(text: &str) -> String {
    tidy(&normalise(text))
}

// ---------------------------------------------------------------------------
// Markdown: inline syntax
// ---------------------------------------------------------------------------

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_whitespace())
}

/// How far `<` may look for its `>`: a tag or autolink longer than this is
/// taken as a literal `<`.
const MAX_ANGLE: usize = 2048;

/// Removes markdown inline syntax from one paragraph. Matching brackets,
/// parentheses and code spans are found up front in single passes, so a
/// paragraph full of unmatched `[` or backticks stays linear.
struct MdInline<'a> {
    c: &'a [char],
    /// Opening backtick run -> (run length, start of the closing run).
    code: HashMap<usize, (usize, usize)>,
    brackets: HashMap<usize, usize>,
    parens: HashMap<usize, usize>,
    defs: &'a HashSet<String>,
}

enum Piece {
    Text(String),
    Delim {
        ch: char,
        len: usize,
        open: bool,
        close: bool,
    },
}

impl<'a> MdInline<'a> {
    fn new(c: &'a [char], defs: &'a HashSet<String>) -> MdInline<'a> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while i < c.len() {
            if c[i] == '`' {
                let s = i;
                while i < c.len() && c[i] == '`' {
                    i += 1;
                }
                runs.push((s, i - s));
            } else {
                i += 1;
            }
        }
        let mut by_len: HashMap<usize, Vec<usize>> = HashMap::new();
        for (ri, &(_, len)) in runs.iter().enumerate() {
            by_len.entry(len).or_default().push(ri);
        }
        let mut code = HashMap::new();
        let mut covered = 0;
        for (ri, &(s, len)) in runs.iter().enumerate() {
            if s < covered {
                continue;
            }
            let Some(same) = by_len.get(&len) else {
                continue;
            };
            let pos = same.partition_point(|&x| x <= ri);
            if let Some(&(cs, _)) = same.get(pos).and_then(|&rj| runs.get(rj)) {
                code.insert(s, (len, cs));
                covered = cs + len;
            }
        }
        let mut brackets = HashMap::new();
        let mut parens = HashMap::new();
        let (mut open_b, mut open_p) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < c.len() {
            if let Some(&(len, cs)) = code.get(&i) {
                i = cs + len;
                continue;
            }
            match c[i] {
                '\\' => i += 1,
                '[' => open_b.push(i),
                ']' => {
                    if let Some(o) = open_b.pop() {
                        brackets.insert(o, i);
                    }
                }
                '(' => open_p.push(i),
                ')' => {
                    if let Some(o) = open_p.pop() {
                        parens.insert(o, i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        MdInline {
            c,
            code,
            brackets,
            parens,
            defs,
        }
    }

    /// Where a link or image starting with `[` at `open` ends, if it is one.
    fn link_end(&self, open: usize, hi: usize) -> Option<usize> {
        let close = *self.brackets.get(&open)?;
        if close >= hi {
            return None;
        }
        let next = close + 1;
        if next < hi {
            let target = match self.c.get(next) {
                Some('(') => self.parens.get(&next),
                Some('[') => self.brackets.get(&next),
                _ => None,
            };
            if let Some(&end) = target.filter(|&&e| e < hi) {
                return Some(end + 1);
            }
        }
        if self.defs.is_empty() || close - open > 100 {
            return None;
        }
        let label: String = self.c[open + 1..close].iter().collect();
        self.defs
            .contains(&collapse_ws(&label).to_lowercase())
            .then_some(close + 1)
    }

    /// An autolink (`<https://…>`) keeps its address; an inline HTML tag or
    /// comment disappears (`<br>` becomes a space).
    fn angle(&self, i: usize, hi: usize) -> Option<(usize, &'static str, bool)> {
        let c = self.c;
        let limit = (i + MAX_ANGLE).min(hi);
        let mut j = i + 1;
        // Stopping at the next `<` keeps the scans of successive `<` disjoint.
        while j < limit && c[j] != '>' && c[j] != '<' {
            j += 1;
        }
        if j >= limit || c[j] != '>' {
            return None;
        }
        let inner = &c[i + 1..j];
        let first = *inner.first()?;
        let no_space = inner.iter().all(|x| !x.is_whitespace());
        let scheme = inner
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric() || matches!(x, '+' | '.' | '-'))
            .count();
        if no_space && first.is_ascii_alphabetic() && scheme >= 2 && inner.get(scheme) == Some(&':')
        {
            return Some((j + 1, "", true));
        }
        if no_space && inner.contains(&'@') && inner.contains(&'.') {
            return Some((j + 1, "", true));
        }
        let name_from = usize::from(first == '/');
        let tagish = match first {
            '!' | '?' => true,
            _ => inner.get(name_from).is_some_and(char::is_ascii_alphabetic),
        };
        if !tagish {
            return None;
        }
        let name: String = inner[name_from..]
            .iter()
            .take_while(|x| x.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        Some((j + 1, if name == "br" { " " } else { "" }, false))
    }

    fn render(&self, lo: usize, hi: usize, depth: usize) -> String {
        let c = self.c;
        let mut pieces: Vec<Piece> = Vec::new();
        let mut text = String::new();
        let mut i = lo;
        while i < hi {
            if let Some(&(len, cs)) = self.code.get(&i) {
                if cs + len <= hi {
                    let inner: String = c[i + len..cs]
                        .iter()
                        .map(|&ch| if ch == '\n' { ' ' } else { ch })
                        .collect();
                    let trimmed = match inner.strip_prefix(' ').and_then(|s| s.strip_suffix(' ')) {
                        Some(s) if !inner.trim().is_empty() => s,
                        _ => inner.as_str(),
                    };
                    text.push_str(trimmed);
                    i = cs + len;
                    continue;
                }
            }
            let ch = c[i];
            let next = if i + 1 < hi {
                c.get(i + 1).copied()
            } else {
                None
            };
            match ch {
                '\\' if next.is_some_and(|n| n.is_ascii_punctuation()) => {
                    text.extend(next);
                    i += 2;
                }
                '!' if next == Some('[') => match self.link_end(i + 1, hi) {
                    // Images carry no readable text worth indexing.
                    Some(end) => i = end,
                    None => {
                        text.push('!');
                        i += 1;
                    }
                },
                '[' => match (self.link_end(i, hi), self.brackets.get(&i)) {
                    (Some(end), Some(&close)) => {
                        if depth < 8 {
                            text.push_str(&self.render(i + 1, close, depth + 1));
                        } else {
                            text.extend(&c[i + 1..close]);
                        }
                        i = end;
                    }
                    _ => {
                        text.push('[');
                        i += 1;
                    }
                },
                '<' => match self.angle(i, hi) {
                    Some((end, replacement, autolink)) => {
                        if autolink {
                            text.extend(&c[i + 1..end - 1]);
                        } else {
                            text.push_str(replacement);
                        }
                        i = end;
                    }
                    None => {
                        text.push('<');
                        i += 1;
                    }
                },
                '&' => {
                    let probe: String = c[i..hi.min(i + 40)]
                        .iter()
                        .take_while(|x| x.is_ascii())
                        .collect();
                    match parse_entity(probe.as_bytes()) {
                        Some((decoded, used)) => {
                            text.push(decoded);
                            i += used;
                        }
                        None => {
                            text.push('&');
                            i += 1;
                        }
                    }
                }
                '*' | '_' | '~' => {
                    let s = i;
                    while i < hi && c[i] == ch {
                        i += 1;
                    }
                    let prev = if s == 0 { ' ' } else { c[s - 1] };
                    let after = if i < hi { c[i] } else { ' ' };
                    let left = !after.is_whitespace()
                        && (!is_punct(after) || prev.is_whitespace() || is_punct(prev));
                    let right = !prev.is_whitespace()
                        && (!is_punct(prev) || after.is_whitespace() || is_punct(after));
                    let (open, close) = match ch {
                        // `_` inside a word (snake_case) is never emphasis.
                        '_' => (
                            left && (!right || is_punct(prev)),
                            right && (!left || is_punct(after)),
                        ),
                        '~' if i - s > 2 => (false, false),
                        _ => (left, right),
                    };
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Delim {
                        ch,
                        len: i - s,
                        open,
                        close,
                    });
                }
                _ => {
                    text.push(ch);
                    i += 1;
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        resolve_emphasis(&pieces)
    }
}

/// Pairs emphasis delimiters with a stack per character, dropping matched
/// pairs and keeping unmatched ones as literal text (`2 * 3`, `a_b`).
fn resolve_emphasis(pieces: &[Piece]) -> String {
    let mut matched = vec![false; pieces.len()];
    let mut stacks: [Vec<usize>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (idx, p) in pieces.iter().enumerate() {
        let Piece::Delim {
            ch, open, close, ..
        } = p
        else {
            continue;
        };
        let slot = match ch {
            '*' => 0,
            '_' => 1,
            _ => 2,
        };
        if *close {
            if let Some(o) = stacks[slot].pop() {
                matched[o] = true;
                matched[idx] = true;
                continue;
            }
        }
        if *open {
            stacks[slot].push(idx);
        }
    }
    let mut out = String::new();
    for (p, m) in pieces.iter().zip(matched) {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Delim { ch, len, .. } => {
                if !m {
                    out.extend(std::iter::repeat_n(*ch, *len));
                }
            }
        }
    }
    out
}

fn md_inline(s: &str, defs: &HashSet<String>) -> String {
    let chars: Vec<char> = s.chars().collect();
    let inline = MdInline::new(&chars, defs);
    collapse_ws(&inline.render(0, chars.len(), 0))
}

// ---------------------------------------------------------------------------
// Markdown: blocks
// ---------------------------------------------------------------------------

fn indent_cols(line: &str) -> usize {
    let mut cols = 0;
    for c in line.chars() {
        match c {
            ' ' => cols += 1,
            '\t' => cols += 4 - cols % 4,
            _ => break,
        }
    }
    cols
}

fn strip_indent(line: &str, cols: usize) -> &str {
    let mut rest = line;
    let mut taken = 0;
    while taken < cols {
        if let Some(r) = rest.strip_prefix(' ') {
            taken += 1;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\t') {
            taken += 4 - taken % 4;
            rest = r;
        } else {
            break;
        }
    }
    rest
}

fn strip_quote(line: &str) -> (usize, &str) {
    let mut depth = 0;
    let mut rest = line;
    loop {
        let t = rest.trim_start_matches(' ');
        if rest.len() - t.len() > 3 {
            break;
        }
        match t.strip_prefix('>') {
            Some(r) => {
                depth += 1;
                rest = r.strip_prefix(' ').unwrap_or(r);
            }
            None => break,
        }
    }
    (depth, rest)
}

fn atx_heading(t: &str) -> Option<(usize, &str)> {
    let level = t.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    let body = rest.trim();
    let without_closing = body.trim_end_matches('#');
    let body = if without_closing.is_empty() {
        ""
    } else if without_closing.ends_with([' ', '\t']) {
        without_closing.trim_end()
    } else {
        body
    };
    Some((level, body))
}

fn setext_level(t: &str) -> Option<usize> {
    if t.chars().all(|c| c == '=') {
        Some(1)
    } else if t.chars().all(|c| c == '-') {
        Some(2)
    } else {
        None
    }
}

fn is_hr(t: &str) -> bool {
    let mut marks = t.chars().filter(|c| !c.is_whitespace());
    let Some(first) = marks.next() else {
        return false;
    };
    matches!(first, '*' | '-' | '_')
        && t.chars().all(|c| c == first || c.is_whitespace())
        && t.chars().filter(|&c| c == first).count() >= 3
}

fn fence_open(t: &str) -> Option<(char, usize)> {
    let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let run = t.chars().take_while(|&c| c == ch).count();
    if run < 3 || (ch == '`' && t[run..].contains('`')) {
        return None;
    }
    Some((ch, run))
}

/// A list marker: bullet (`None`) or the number of an ordered item.
fn list_item(content: &str) -> Option<(usize, Option<u64>, &str)> {
    let indent = indent_cols(content);
    let t = content.trim_start();
    if let Some(rest) = t.strip_prefix(['-', '*', '+']) {
        if rest.is_empty() || rest.starts_with([' ', '\t']) {
            return Some((indent, None, rest.trim()));
        }
        return None;
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if (1..=9).contains(&digits) {
        let rest = t[digits..].strip_prefix(['.', ')'])?;
        if rest.is_empty() || rest.starts_with([' ', '\t']) {
            let n = t[..digits].parse::<u64>().ok()?;
            return Some((indent, Some(n), rest.trim()));
        }
    }
    None
}

fn is_delim_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('|')
        && t.contains('-')
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

fn split_row(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = match t.strip_suffix('|') {
        Some(s) if !s.ends_with('\\') => s,
        _ => t,
    };
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut in_code = false;
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '`' => {
                in_code = !in_code;
                cur.push(c);
            }
            '|' if !in_code => cells.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    cells.push(cur);
    cells
}

/// Lines starting with one of these tags open an HTML block, which is handed
/// to the HTML extractor whole (READMEs often centre a heading or logo this way).
const MD_HTML_BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "center",
    "details",
    "dialog",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "iframe",
    "legend",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "script",
    "style",
    "textarea",
    "picture",
    "video",
    "audio",
    "noscript",
];

fn html_block_tag(t: &str) -> Option<String> {
    let rest = t.strip_prefix('<')?;
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let len = rest.chars().take_while(char::is_ascii_alphanumeric).count();
    let name = rest[..len].to_ascii_lowercase();
    let after = rest[len..].chars().next();
    if !after.is_none_or(|c| c.is_whitespace() || c == '>' || c == '/') {
        return None;
    }
    MD_HTML_BLOCKS.contains(&name.as_str()).then_some(name)
}

/// `[label]: destination` lines define reference links; footnotes (`[^1]:`)
/// are content and stay.
fn ref_def(t: &str) -> Option<String> {
    let rest = t.strip_prefix('[')?;
    let p = rest.find("]:")?;
    let label = &rest[..p];
    if label.is_empty()
        || label.starts_with('^')
        || label.contains(['[', ']'])
        || rest[p + 2..].trim().is_empty()
    {
        return None;
    }
    Some(collapse_ws(label).to_lowercase())
}

/// Drops YAML front matter, keeping its `title:` as a fallback title.
fn front_matter(s: &str) -> (&str, Option<String>) {
    let Some(rest) = s.strip_prefix("---\n") else {
        return (s, None);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "---" || l == "..." {
            let title = rest[..offset]
                .lines()
                .find_map(|l| l.strip_prefix("title:"))
                .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
                .filter(|t| !t.is_empty());
            return (&rest[offset + line.len()..], title);
        }
        // Anything that is not YAML-shaped means the `---` was a rule.
        let yaml = l.is_empty() || l.starts_with([' ', '-', '#']) || l.contains(':');
        if !yaml || offset > 16 * 1024 {
            break;
        }
        offset += line.len();
    }
    (s, None)
}

enum MdOpen {
    None,
    Para {
        lines: Vec<String>,
        quote: usize,
    },
    Item {
        prefix: String,
        lines: Vec<String>,
        group: u32,
    },
}

struct MdParser<'a> {
    lines: Vec<&'a str>,
    defs: HashSet<String>,
    /// Finished blocks; blocks sharing a non-zero group (one list, one table)
    /// are joined by a single newline, everything else by a blank line.
    blocks: Vec<(String, u32)>,
    title: Option<String>,
    open: MdOpen,
    /// Indent, next number and kind (ordered or not) of each open list level.
    list: Vec<(usize, u64, bool)>,
    list_group: u32,
    groups: u32,
    item_cont: String,
    blank: bool,
    in_comment: bool,
}

impl<'a> MdParser<'a> {
    fn push(&mut self, text: String, group: u32) {
        if !text.trim().is_empty() {
            self.blocks.push((text, group));
        }
    }

    fn close(&mut self) {
        match std::mem::replace(&mut self.open, MdOpen::None) {
            MdOpen::None => {}
            MdOpen::Para { lines, quote } => {
                let text = md_inline(&lines.join(" "), &self.defs);
                if !text.is_empty() {
                    self.push(format!("{}{}", "> ".repeat(quote), text), 0);
                }
            }
            MdOpen::Item {
                prefix,
                lines,
                group,
            } => {
                let text = md_inline(&lines.join(" "), &self.defs);
                if !text.is_empty() {
                    self.push(format!("{prefix}{text}"), group);
                }
            }
        }
    }

    fn end_list(&mut self) {
        self.list.clear();
        self.list_group = 0;
    }

    fn heading(&mut self, level: usize, raw: &str) {
        let text = md_inline(raw, &self.defs);
        if text.is_empty() {
            return;
        }
        if level == 1 && self.title.is_none() {
            self.title = Some(text.clone());
        }
        self.push(format!("{} {}", "#".repeat(level), text), 0);
    }

    fn start_item(&mut self, indent: usize, quote: usize, number: Option<u64>, body: &str) {
        let ordered = number.is_some();
        let mut fresh = match self.list.last_mut() {
            None => {
                self.list.push((indent, 0, ordered));
                true
            }
            Some(&mut (top, _, _)) if indent > top => {
                self.list.push((indent, 0, ordered));
                true
            }
            Some(_) => {
                while self.list.len() > 1
                    && self.list.last().is_some_and(|&(top, _, _)| indent < top)
                {
                    self.list.pop();
                }
                if let Some(last) = self.list.last_mut() {
                    last.0 = last.0.min(indent);
                }
                false
            }
        };
        // A different kind of marker at the same level starts a new list.
        if let Some(last) = self.list.last_mut() {
            if last.2 != ordered {
                *last = (last.0, 0, ordered);
                fresh = true;
            }
        }
        if fresh && self.list.len() == 1 {
            self.groups += 1;
            self.list_group = self.groups;
        }
        let level = self.list.len().saturating_sub(1);
        let marker = match (number, self.list.last_mut()) {
            (Some(n), Some(entry)) => {
                let num = if fresh || entry.1 == 0 { n } else { entry.1 };
                entry.1 = num.saturating_add(1);
                format!("{num}. ")
            }
            _ => "- ".to_string(),
        };
        let lead = format!("{}{}", "> ".repeat(quote), "  ".repeat(level));
        self.item_cont = format!("{lead}{}", " ".repeat(marker.len()));
        self.open = MdOpen::Item {
            prefix: format!("{lead}{marker}"),
            lines: vec![body.to_string()],
            group: self.list_group,
        };
    }

    fn fence(&mut self, i: usize, quote: usize, ch: char, len: usize, indent: usize) -> usize {
        let mut j = i + 1;
        let mut code: Vec<&str> = Vec::new();
        while j < self.lines.len() {
            let line = self.lines[j];
            j += 1;
            let content = if quote > 0 { strip_quote(line).1 } else { line };
            let t = content.trim_start();
            if indent_cols(content) < 4 && t.starts_with(ch) {
                let run = t.chars().take_while(|&c| c == ch).count();
                if run >= len && t[run..].trim().is_empty() {
                    break;
                }
            }
            code.push(strip_indent(content, indent).trim_end());
        }
        self.code_block(&code, quote);
        j
    }

    fn code_block(&mut self, code: &[&str], quote: usize) {
        let first = code.iter().position(|l| !l.is_empty());
        let last = code.iter().rposition(|l| !l.is_empty());
        if let (Some(f), Some(l)) = (first, last) {
            let prefix = "> ".repeat(quote);
            let body: Vec<String> = code[f..=l].iter().map(|l| format!("{prefix}{l}")).collect();
            self.push(body.join("\n"), 0);
        }
    }

    fn indented_code(&mut self, i: usize) -> usize {
        let mut j = i;
        let mut code: Vec<&str> = Vec::new();
        while j < self.lines.len() {
            let l = self.lines[j];
            if l.trim().is_empty() {
                code.push("");
            } else if indent_cols(l) >= 4 {
                code.push(strip_indent(l, 4).trim_end());
            } else {
                break;
            }
            j += 1;
        }
        self.code_block(&code, 0);
        j
    }

    fn table(&mut self, i: usize) -> usize {
        let header: Vec<String> = split_row(self.lines[i])
            .iter()
            .map(|c| md_inline(c, &self.defs))
            .collect();
        self.groups += 1;
        let group = self.groups;
        let mut j = i + 2;
        let mut any = false;
        while let Some(line) = self.lines.get(j) {
            if line.trim().is_empty() || !line.contains('|') {
                break;
            }
            let cells: Vec<String> = split_row(line)
                .iter()
                .map(|c| md_inline(c, &self.defs))
                .collect();
            let placed: Vec<(usize, &str)> = cells.iter().map(String::as_str).enumerate().collect();
            let row = keyed_row(&header, &placed);
            if !row.is_empty() {
                self.push(row, group);
                any = true;
            }
            j += 1;
        }
        if !any {
            self.push(plain_row(header.iter().map(String::as_str)), group);
        }
        j
    }

    fn html_block(&mut self, i: usize, name: &str) -> usize {
        let closing =
            matches!(name, "script" | "style" | "pre" | "textarea").then(|| format!("</{name}"));
        let mut j = i;
        let mut chunk = String::new();
        while let Some(&line) = self.lines.get(j) {
            if closing.is_none() && line.trim().is_empty() {
                break;
            }
            chunk.push_str(line);
            chunk.push('\n');
            j += 1;
            if closing
                .as_deref()
                .is_some_and(|c| line.to_ascii_lowercase().contains(c))
            {
                break;
            }
        }
        let ex = html_to_text(&chunk);
        if self.title.is_none() && chunk.to_ascii_lowercase().contains("<h1") {
            self.title = ex.title.clone();
        }
        for block in ex.text.split("\n\n") {
            self.push(block.to_string(), 0);
        }
        j
    }

    fn run(&mut self) {
        let mut i = 0;
        while i < self.lines.len() {
            let mut raw: &str = self.lines[i];
            if self.in_comment {
                match raw.find("-->") {
                    Some(p) => {
                        self.in_comment = false;
                        raw = &raw[p + 3..];
                    }
                    None => {
                        i += 1;
                        continue;
                    }
                }
            }
            if let Some(p) = raw.find("<!--") {
                if !raw[p..].contains("-->") {
                    self.in_comment = true;
                    raw = &raw[..p];
                }
            }
            let (quote, content) = strip_quote(raw);
            let t = content.trim();
            if t.is_empty() {
                self.close();
                self.blank = true;
                i += 1;
                continue;
            }
            let indent = indent_cols(content);
            if indent < 4 || !self.list.is_empty() {
                if let Some((ch, len)) = fence_open(t) {
                    self.close();
                    i = self.fence(
                        i,
                        quote,
                        ch,
                        len,
                        content.len() - content.trim_start().len(),
                    );
                    self.blank = false;
                    continue;
                }
            }
            if indent >= 4
                && self.list.is_empty()
                && quote == 0
                && matches!(self.open, MdOpen::None)
            {
                i = self.indented_code(i);
                self.blank = true;
                continue;
            }
            if indent < 4 {
                if let Some((level, h)) = atx_heading(t) {
                    self.close();
                    self.end_list();
                    self.heading(level, h);
                    self.blank = false;
                    i += 1;
                    continue;
                }
                let setext = match &self.open {
                    MdOpen::Para { quote: q, .. } if *q == quote => setext_level(t),
                    _ => None,
                };
                if let Some(level) = setext {
                    if let MdOpen::Para { lines, .. } =
                        std::mem::replace(&mut self.open, MdOpen::None)
                    {
                        self.heading(level, &lines.join(" "));
                    }
                    i += 1;
                    continue;
                }
                if is_hr(t) {
                    self.close();
                    self.end_list();
                    self.blank = false;
                    i += 1;
                    continue;
                }
                if quote == 0
                    && t.contains('|')
                    && self.lines.get(i + 1).is_some_and(|n| is_delim_row(n))
                {
                    self.close();
                    self.end_list();
                    i = self.table(i);
                    self.blank = false;
                    continue;
                }
                if let Some(name) = html_block_tag(t) {
                    self.close();
                    i = self.html_block(i, &name);
                    self.blank = false;
                    continue;
                }
                if matches!(self.open, MdOpen::None) && ref_def(t).is_some() {
                    i += 1;
                    continue;
                }
            }
            if let Some((ind, number, body)) = list_item(content) {
                if ind < 4 || !self.list.is_empty() {
                    self.close();
                    self.start_item(ind, quote, number, body);
                    self.blank = false;
                    i += 1;
                    continue;
                }
            }
            let after_blank = std::mem::replace(&mut self.blank, false);
            let appended = match &mut self.open {
                // A deeper `>` opens a nested quote; a shallower one is a lazy
                // continuation of the same paragraph.
                MdOpen::Para { lines, quote: q } if *q >= quote => {
                    lines.push(t.to_string());
                    true
                }
                MdOpen::Item { lines, .. } if !after_blank => {
                    lines.push(t.to_string());
                    true
                }
                _ => false,
            };
            if !appended {
                self.close();
                if !self.list.is_empty() && indent >= 2 {
                    self.open = MdOpen::Item {
                        prefix: self.item_cont.clone(),
                        lines: vec![t.to_string()],
                        group: self.list_group,
                    };
                } else {
                    self.end_list();
                    self.open = MdOpen::Para {
                        lines: vec![t.to_string()],
                        quote,
                    };
                }
            }
            i += 1;
        }
        self.close();
    }

    fn finish(self) -> String {
        let mut out = String::new();
        let mut prev: Option<u32> = None;
        for (text, group) in &self.blocks {
            if let Some(p) = prev {
                out.push_str(if *group != 0 && *group == p {
                    "\n"
                } else {
                    "\n\n"
                });
            }
            out.push_str(text);
            prev = Some(*group);
        }
        tidy(&out)
    }
}

/// Turns markdown into the shared light markdown: headings stay `#` lines,
/// emphasis and link syntax go, code is kept as plain text, images are dropped.
pub fn markdown_to_text(text: &str) -> Extracted {
    let norm = normalise(text);
    let (body, front_title) = front_matter(&norm);
    let lines: Vec<&str> = body.split('\n').collect();
    let defs = lines.iter().filter_map(|l| ref_def(l.trim())).collect();
    let mut p = MdParser {
        lines,
        defs,
        blocks: Vec::new(),
        title: None,
        open: MdOpen::None,
        list: Vec::new(),
        list_group: 0,
        groups: 0,
        item_cont: String::new(),
        blank: false,
        in_comment: false,
    };
    p.run();
    let title = p.title.take().or(front_title);
    Extracted {
        title,
        text: p.finish(),
    }
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

    #[test]
    fn delimiter_detection() {
        assert_eq!(detect_delimiter("a;b;c\n1,5;2,5;3\n4;5;6,1\n"), ';');
        assert_eq!(detect_delimiter("a\tb\n1\t2\n"), '\t');
        assert_eq!(detect_delimiter("a,b\n\"x;y\",2\n"), ',');
        assert_eq!(detect_delimiter("only one column\nsecond\n"), ',');
    }

    #[test]
    fn raw_text_end_tags_ignore_case_and_prefixes() {
        let b = b"x</scripts></SCRIPT >y";
        assert_eq!(find_end_tag(b, 0, b"script"), Some(11));
        assert_eq!(find_end_tag(b"</scrip", 0, b"script"), None);
    }

    #[test]
    fn keyed_rows_skip_empty_and_redundant_labels() {
        let headers = vec!["Name".to_string(), String::new(), "City".to_string()];
        let cells = [(0, "Ada"), (1, "x"), (2, ""), (3, "extra")];
        assert_eq!(keyed_row(&headers, &cells), "Name: Ada; x; extra");
        assert_eq!(keyed_row(&["Yes".to_string()], &[(0, "Yes")]), "Yes");
    }

    #[test]
    fn nesting_is_capped() {
        let html = "<div>".repeat(MAX_DEPTH * 4) + "deep";
        let dom = parse_html(&html);
        let mut depth = 0;
        let mut id = 0u32;
        while let Some(n) = dom.nodes.get(id as usize) {
            if n.first == NONE {
                break;
            }
            id = n.first;
            depth += 1;
        }
        assert!(depth <= MAX_DEPTH + 1, "depth {depth}");
        assert_eq!(html_to_text(&html).text, "deep");
    }

    #[test]
    fn code_spans_match_runs_of_equal_length() {
        let defs = HashSet::new();
        assert_eq!(md_inline("``a`b`` and `c`` d`", &defs), "a`b and c`` d");
        assert_eq!(md_inline("`unclosed *em*", &defs), "`unclosed em");
    }

    #[test]
    fn tidy_collapses_blank_runs() {
        assert_eq!(tidy("\n\na  \n\n\n\nb\n \n"), "a\n\nb");
    }
}
