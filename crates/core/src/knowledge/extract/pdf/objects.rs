//! PDF objects and the lexer that reads them, from files and from content streams.

use std::rc::Rc;

#[derive(Clone)]
pub(crate) enum Obj {
    Null,
    /// Booleans never matter for text, only that they parse.
    Bool,
    Int(i64),
    Real(f64),
    Name(Vec<u8>),
    Str(Vec<u8>),
    Array(Rc<Vec<Obj>>),
    Dict(Rc<Dict>),
    Stream(Rc<Stream>),
    /// An indirect reference; generation numbers are ignored, as viewers do.
    Ref(u32),
}

#[derive(Default)]
pub(crate) struct Dict(pub(crate) Vec<(Vec<u8>, Obj)>);

/// Stream data is kept as a range of the file: streams never live inside
/// object streams, and copying every image just to ignore it would waste memory.
pub(crate) struct Stream {
    pub(crate) dict: Dict,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Dict {
    pub(crate) fn get(&self, key: &[u8]) -> Option<&Obj> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Obj {
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Obj::Int(i) => Some(*i),
            Obj::Real(r) if r.is_finite() => Some(*r as i64),
            _ => None,
        }
    }
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Obj::Int(i) => Some(*i as f64),
            Obj::Real(r) if r.is_finite() => Some(*r),
            _ => None,
        }
    }
    pub(crate) fn as_name(&self) -> Option<&[u8]> {
        match self {
            Obj::Name(n) => Some(n),
            _ => None,
        }
    }
    /// The dictionary of a dictionary or of a stream.
    pub(crate) fn as_dict(&self) -> Option<&Dict> {
        match self {
            Obj::Dict(d) => Some(d),
            Obj::Stream(s) => Some(&s.dict),
            _ => None,
        }
    }
    pub(crate) fn as_array(&self) -> Option<&[Obj]> {
        match self {
            Obj::Array(a) => Some(a),
            _ => None,
        }
    }
}

pub(crate) fn is_ws(c: u8) -> bool {
    matches!(c, 0 | 9 | 10 | 12 | 13 | 32)
}

fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

pub(crate) fn is_regular(c: u8) -> bool {
    !is_ws(c) && !is_delim(c)
}

pub(crate) enum Item<'a> {
    Obj(Obj),
    Kw(&'a [u8]),
    Close,
    Eof,
}

/// Arrays and dictionaries nest no deeper than this; deeper input is garbage
/// designed to blow the stack.
const MAX_DEPTH: u32 = 64;

pub(crate) struct Lexer<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
    /// `N G R` references are only meaningful in the file body, and looking
    /// ahead for them in content streams would waste time on every number.
    pub(crate) refs: bool,
    /// Set when a container runs into a file-structure keyword such as
    /// `endobj`: the container was never closed, and reading on would parse
    /// the rest of the file into it (once per broken object, in repair).
    halted: bool,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize, refs: bool) -> Self {
        Lexer {
            buf,
            pos,
            refs,
            halted: false,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    pub(crate) fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if is_ws(c) {
                self.pos += 1;
            } else if c == b'%' {
                while let Some(c) = self.peek() {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn regular_token(&mut self) -> &'a [u8] {
        let start = self.pos;
        while self.peek().is_some_and(is_regular) {
            self.pos += 1;
        }
        &self.buf[start..self.pos]
    }

    /// The next object, keyword, closing bracket or end of input. Always
    /// consumes at least one byte unless at the end, so callers cannot spin.
    pub(crate) fn item(&mut self, depth: u32) -> Item<'a> {
        self.skip_ws();
        let Some(c) = self.peek() else {
            return Item::Eof;
        };
        match c {
            b'/' => {
                self.pos += 1;
                let raw = self.regular_token();
                Item::Obj(Obj::Name(decode_name(raw)))
            }
            b'(' => {
                self.pos += 1;
                Item::Obj(Obj::Str(self.literal_string()))
            }
            b'<' if self.buf.get(self.pos + 1) == Some(&b'<') => {
                self.pos += 2;
                if depth >= MAX_DEPTH {
                    return Item::Obj(Obj::Null);
                }
                Item::Obj(Obj::Dict(Rc::new(self.dict_body(depth + 1))))
            }
            b'<' => {
                self.pos += 1;
                Item::Obj(Obj::Str(self.hex_string()))
            }
            b'>' if self.buf.get(self.pos + 1) == Some(&b'>') => {
                self.pos += 2;
                Item::Close
            }
            b']' => {
                self.pos += 1;
                Item::Close
            }
            b'[' => {
                self.pos += 1;
                if depth >= MAX_DEPTH {
                    return Item::Obj(Obj::Null);
                }
                let mut v = Vec::with_capacity(8);
                loop {
                    match self.item(depth + 1) {
                        Item::Obj(o) => v.push(o),
                        Item::Kw(_) => {}
                        Item::Close | Item::Eof => break,
                    }
                    if self.halted {
                        break;
                    }
                }
                Item::Obj(Obj::Array(Rc::new(v)))
            }
            _ if is_delim(c) => {
                self.pos += 1;
                Item::Kw(&self.buf[self.pos - 1..self.pos])
            }
            _ => {
                let tok = self.regular_token();
                match tok {
                    b"true" => Item::Obj(Obj::Bool),
                    b"false" => Item::Obj(Obj::Bool),
                    b"null" => Item::Obj(Obj::Null),
                    b"endobj" | b"obj" | b"stream" | b"endstream" | b"xref" | b"trailer"
                        if self.refs && depth > 0 =>
                    {
                        self.halted = true;
                        Item::Kw(tok)
                    }
                    _ => match parse_number(tok) {
                        Some(Obj::Int(n)) if self.refs && n >= 0 => Item::Obj(self.maybe_ref(n)),
                        Some(o) => Item::Obj(o),
                        None => Item::Kw(tok),
                    },
                }
            }
        }
    }

    pub(crate) fn dict_body(&mut self, depth: u32) -> Dict {
        let mut d = Vec::new();
        while !self.halted {
            match self.item(depth) {
                Item::Obj(Obj::Name(k)) => match self.item(depth) {
                    Item::Obj(v) => d.push((k, v)),
                    Item::Close | Item::Eof => break,
                    Item::Kw(_) => {}
                },
                Item::Close | Item::Eof => break,
                _ => {}
            }
        }
        Dict(d)
    }

    fn maybe_ref(&mut self, n: i64) -> Obj {
        let save = self.pos;
        self.skip_ws();
        let g_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos > g_start && self.pos - g_start < 6 {
            let gen = parse_number(&self.buf[g_start..self.pos]).and_then(|g| g.as_i64());
            self.skip_ws();
            let is_r = self.peek() == Some(b'R')
                && self.buf.get(self.pos + 1).is_none_or(|&c| !is_regular(c));
            if let (true, Some(_), Ok(num)) = (is_r, gen, u32::try_from(n)) {
                self.pos += 1;
                return Obj::Ref(num);
            }
        }
        self.pos = save;
        Obj::Int(n)
    }

    fn literal_string(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        self.literal_into(&mut out);
        out
    }

    /// Reads a `(...)` string body (after the parenthesis) onto `out`.
    fn literal_into(&mut self, out: &mut Vec<u8>) {
        let mut depth = 1u32;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'(' => {
                    depth += 1;
                    out.push(c);
                }
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                    out.push(c);
                }
                b'\\' => {
                    let Some(e) = self.peek() else { break };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(v as u8);
                        }
                        // A backslash at a line end continues the string.
                        b'\r' => {
                            if self.peek() == Some(b'\n') {
                                self.pos += 1;
                            }
                        }
                        b'\n' => {}
                        other => out.push(other),
                    }
                }
                _ => out.push(c),
            }
        }
    }

    pub(crate) fn hex_string(&mut self) -> Vec<u8> {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let len = rest.iter().position(|&c| c == b'>').unwrap_or(rest.len());
        let mut out = Vec::with_capacity(len / 2 + 1);
        self.hex_into(&mut out);
        out
    }

    /// Reads a `<...>` string body (after the bracket) onto `out`.
    fn hex_into(&mut self, out: &mut Vec<u8>) {
        let mut hi: Option<u8> = None;
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == b'>' {
                break;
            }
            let Some(v) = hex_val(c) else { continue };
            match hi.take() {
                Some(h) => out.push(h << 4 | v),
                None => hi = Some(v),
            }
        }
        if let Some(h) = hi {
            out.push(h << 4);
        }
    }

    /// Reads a `[...]` text array (after the bracket) into a reusable arena:
    /// text arrays are by far the most common array in content streams, and
    /// allocating every kerned fragment separately dominated the run time.
    pub(crate) fn text_array(&mut self, arena: &mut Vec<u8>, items: &mut Vec<TextItem>) {
        loop {
            self.skip_ws();
            let Some(c) = self.peek() else { return };
            match c {
                b']' => {
                    self.pos += 1;
                    return;
                }
                b'(' => {
                    self.pos += 1;
                    let start = arena.len();
                    self.literal_into(arena);
                    items.push(TextItem::Text(start, arena.len()));
                }
                b'<' if self.buf.get(self.pos + 1) != Some(&b'<') => {
                    self.pos += 1;
                    let start = arena.len();
                    self.hex_into(arena);
                    items.push(TextItem::Text(start, arena.len()));
                }
                _ => match self.item(1) {
                    Item::Obj(o) => {
                        if let Some(v) = o.as_f64() {
                            items.push(TextItem::Adjust(v));
                        }
                    }
                    Item::Eof => return,
                    // A stray `>>` or keyword inside the array: skip it.
                    Item::Close | Item::Kw(_) => {}
                },
            }
        }
    }
}

pub(crate) enum TextItem {
    /// A string, as a range of the arena.
    Text(usize, usize),
    /// A kerning adjustment in thousandths of text space.
    Adjust(f64),
}

pub(crate) fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn decode_name(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'#' {
            if let (Some(h), Some(l)) = (
                raw.get(i + 1).and_then(|&c| hex_val(c)),
                raw.get(i + 2).and_then(|&c| hex_val(c)),
            ) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Numbers are parsed by hand: `str::parse::<f64>` would pull a large
/// float-parsing routine into the wasm bundle for no gain in accuracy here.
pub(crate) fn parse_number(t: &[u8]) -> Option<Obj> {
    let mut i = 0;
    let mut neg = false;
    while let Some(&c) = t.get(i) {
        match c {
            b'-' => neg = !neg,
            b'+' => {}
            _ => break,
        }
        i += 1;
    }
    let mut int: i64 = 0;
    let mut val = 0f64;
    let mut digits = 0;
    let mut real = false;
    let mut scale = 1f64;
    for &c in &t[i..] {
        match c {
            b'0'..=b'9' => {
                let d = c - b'0';
                digits += 1;
                if real {
                    scale /= 10.0;
                    val += f64::from(d) * scale;
                } else {
                    int = int.saturating_mul(10).saturating_add(i64::from(d));
                    val = val * 10.0 + f64::from(d);
                }
            }
            b'.' if !real => real = true,
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    Some(if real {
        Obj::Real(if neg { -val } else { val })
    } else {
        Obj::Int(if neg { -int } else { int })
    })
}

pub(crate) fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let rel = hay[i..hay.len() + 1 - needle.len()]
            .iter()
            .position(|&c| c == first)?;
        i += rel;
        if hay[i..].starts_with(needle) {
            return Some(i);
        }
        i += 1;
    }
    None
}

pub(crate) fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
}
