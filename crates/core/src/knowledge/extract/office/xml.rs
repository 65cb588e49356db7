//! A small non-validating XML pull parser, enough for the parts of Office, OpenDocument
//! and EPUB packages.
//!
//! Names are reported without their namespace prefix: OOXML producers almost
//! always use `w:`, but nothing forces them to, and local names are unique
//! enough within one part for text extraction.

use std::borrow::Cow;

pub(crate) enum Ev<'a> {
    /// Local name, raw attribute text, and whether the tag closes itself.
    Start(&'a str, &'a str, bool),
    End(&'a str),
    Text(Cow<'a, str>),
}

pub(crate) struct Reader<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(s: &'a str) -> Self {
        Reader { s, pos: 0 }
    }

    fn find_from(&self, pat: &str) -> Option<usize> {
        self.s.get(self.pos..)?.find(pat).map(|i| i + self.pos)
    }

    /// Skips past `end`, or to the end of input when the construct is unterminated.
    fn skip_past(&mut self, end: &str) {
        self.pos = self.find_from(end).map_or(self.s.len(), |i| i + end.len());
    }
}

fn local(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

impl<'a> Iterator for Reader<'a> {
    type Item = Ev<'a>;

    // One copy of the parser, not one inlined into every loop that reads a part.
    #[inline(never)]
    fn next(&mut self) -> Option<Ev<'a>> {
        let bytes = self.s.as_bytes();
        loop {
            let rest = self.s.get(self.pos..)?;
            if rest.is_empty() {
                return None;
            }
            if !rest.starts_with('<') {
                let end = rest.find('<').map_or(self.s.len(), |i| i + self.pos);
                let text = self.s.get(self.pos..end)?;
                self.pos = end;
                return Some(Ev::Text(unescape(text)));
            }
            if rest.starts_with("<!--") {
                self.skip_past("-->");
                continue;
            }
            if let Some(body) = rest.strip_prefix("<![CDATA[") {
                let len = body.find("]]>").unwrap_or(body.len());
                let text = body.get(..len)?;
                self.pos += 9 + len + 3;
                self.pos = self.pos.min(self.s.len());
                return Some(Ev::Text(Cow::Borrowed(text)));
            }
            if rest.starts_with("<?") {
                self.skip_past("?>");
                continue;
            }
            if rest.starts_with("<!") {
                self.skip_past(">");
                continue;
            }
            // Find the closing '>' while ignoring any inside quoted attribute values.
            let mut quote = 0u8;
            let mut end = None;
            for (i, &b) in bytes.iter().enumerate().skip(self.pos + 1) {
                if quote != 0 {
                    if b == quote {
                        quote = 0;
                    }
                } else if b == b'"' || b == b'\'' {
                    quote = b;
                } else if b == b'>' {
                    end = Some(i);
                    break;
                }
            }
            let Some(end) = end else {
                self.pos = self.s.len();
                return None;
            };
            let inner = self.s.get(self.pos + 1..end)?;
            self.pos = end + 1;
            if let Some(name) = inner.strip_prefix('/') {
                return Some(Ev::End(local(name.trim())));
            }
            let (inner, empty) = match inner.strip_suffix('/') {
                Some(i) => (i, true),
                None => (inner, false),
            };
            let split = inner
                .find(|c: char| c.is_ascii_whitespace())
                .unwrap_or(inner.len());
            let (name, attrs) = inner.split_at(split);
            return Some(Ev::Start(local(name), attrs, empty));
        }
    }
}

impl<'a> Reader<'a> {
    /// The same events without the content of any element `skipped` names (deleted
    /// revisions, comments): those elements' own start and end included.
    pub(crate) fn skipping(self, skipped: fn(&str) -> bool) -> Skipping<'a> {
        Skipping {
            events: self,
            skipped,
            depth: 0,
        }
    }
}

pub(crate) struct Skipping<'a> {
    events: Reader<'a>,
    skipped: fn(&str) -> bool,
    /// How deep inside a skipped element the reader is; 0 outside any.
    depth: usize,
}

impl<'a> Iterator for Skipping<'a> {
    type Item = Ev<'a>;

    fn next(&mut self) -> Option<Ev<'a>> {
        loop {
            let ev = self.events.next()?;
            match (&ev, self.depth) {
                (Ev::Start(name, _, false), 0) if (self.skipped)(name) => self.depth = 1,
                (_, 0) => return Some(ev),
                (Ev::Start(_, _, false), _) => self.depth += 1,
                (Ev::End(_), _) => self.depth -= 1,
                _ => {}
            }
        }
    }
}

/// The root element of a part: its local name and raw attributes.
pub(crate) fn root(xml: &str) -> Option<(&str, &str)> {
    Reader::new(xml).find_map(|ev| match ev {
        Ev::Start(name, attrs, _) => Some((name, attrs)),
        _ => None,
    })
}

/// Value of the attribute whose local name is `want`, entity-decoded.
pub(crate) fn attr<'a>(attrs: &'a str, want: &str) -> Option<Cow<'a, str>> {
    find_attr(attrs, want, false)
}

/// Value of the namespaced attribute whose local name is `want` (`r:id`, not `id`).
pub(crate) fn prefixed_attr<'a>(attrs: &'a str, want: &str) -> Option<Cow<'a, str>> {
    find_attr(attrs, want, true)
}

fn find_attr<'a>(attrs: &'a str, want: &str, prefixed: bool) -> Option<Cow<'a, str>> {
    let mut rest = attrs;
    loop {
        let eq = rest.find('=')?;
        let name = rest.get(..eq)?.trim();
        let after = rest.get(eq + 1..)?.trim_start();
        let q = after.chars().next()?;
        if q != '"' && q != '\'' {
            return None;
        }
        let body = after.get(1..)?;
        let close = body.find(q)?;
        let value = body.get(..close)?;
        if local(name) == want && (!prefixed || name.contains(':')) {
            return Some(unescape(value));
        }
        rest = body.get(close + 1..)?;
    }
}

pub(crate) fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let semi = tail.get(..12).unwrap_or(tail).find(';');
        let decoded = semi.and_then(|semi| {
            let ent = &tail[1..semi];
            let c = match ent {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => {
                    let num = ent.strip_prefix('#')?;
                    let v = match num.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                        None => num.parse::<u32>().ok()?,
                    };
                    char::from_u32(v)
                }
            }?;
            Some((c, semi + 1))
        });
        match decoded {
            Some((c, used)) => {
                out.push(c);
                rest = &tail[used..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}
