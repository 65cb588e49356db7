//! The tokenizer: tags with the few attributes that matter, text, comments and raw-text
//! elements, fed straight into the tree builder.

use super::entities::decode_entities;
use super::tags::Tag;
use super::tree::{Builder, Dom};

#[derive(Clone, Copy, PartialEq, Default)]
pub(super) enum Role {
    #[default]
    None,
    Boilerplate,
    Main,
}

#[derive(Default)]
pub(super) struct Attrs {
    pub(super) hidden: bool,
    pub(super) role: Role,
    pub(super) start: Option<u32>,
    pub(super) colspan: Option<u16>,
    pub(super) open: bool,
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

pub(super) fn parse_html(src: &str) -> Dom {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_text_end_tags_ignore_case_and_prefixes() {
        let b = b"x</scripts></SCRIPT >y";
        assert_eq!(find_end_tag(b, 0, b"script"), Some(11));
        assert_eq!(find_end_tag(b"</scrip", 0, b"script"), None);
    }
}
