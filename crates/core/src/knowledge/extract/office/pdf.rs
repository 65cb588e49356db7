//! PDF objects, the file structure (xref tables and streams, object streams,
//! incremental updates) and stream filters.
//!
//! Damaged files are common in uploads, so the reader prefers recovering to
//! refusing: broken cross-reference data falls back to scanning the file for
//! `N G obj` headers, the way viewers do.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{inflate, Budget, FastMap, FastSet};

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

    fn hex_string(&mut self) -> Vec<u8> {
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

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
}

#[derive(Clone, Copy)]
enum Loc {
    Free,
    Offset(usize),
    InStream(u32, u32),
}

/// How deeply object loads may nest (a stream whose /Length is a reference
/// to an object in an object stream, and so on). Cycles end here.
const MAX_LOAD_DEPTH: u32 = 16;

pub(crate) struct Doc<'a> {
    pub(crate) buf: &'a [u8],
    xref: FastMap<u32, Loc>,
    pub(crate) trailer: Dict,
    cache: RefCell<FastMap<u32, Obj>>,
    scanned: RefCell<Option<Rc<FastMap<u32, usize>>>>,
    loading_objstm: RefCell<FastSet<u32>>,
    depth: Cell<u32>,
    endstream_memo: Cell<(usize, Option<usize>)>,
    pub(crate) budget: &'a Budget,
    /// Set when the cross-reference data had to be rebuilt by scanning.
    pub(crate) repaired: bool,
}

impl<'a> Doc<'a> {
    pub(crate) fn open(buf: &'a [u8], budget: &'a Budget) -> Doc<'a> {
        let mut doc = Doc {
            buf,
            xref: FastMap::default(),
            trailer: Dict::default(),
            cache: RefCell::new(FastMap::default()),
            scanned: RefCell::new(None),
            loading_objstm: RefCell::new(FastSet::default()),
            depth: Cell::new(0),
            endstream_memo: Cell::new((usize::MAX, None)),
            budget,
            repaired: false,
        };
        doc.read_xref_chain();
        let root_ok = doc
            .trailer
            .get(b"Root")
            .map(|r| doc.resolve(r))
            .is_some_and(|r| r.as_dict().is_some());
        if !root_ok {
            doc.repair();
        }
        doc
    }

    fn read_xref_chain(&mut self) {
        let Some(sx) = rfind(self.buf, b"startxref") else {
            return;
        };
        let mut lx = Lexer::new(self.buf, sx + 9, false);
        let Item::Obj(Obj::Int(first)) = lx.item(0) else {
            return;
        };
        let mut queue = vec![first];
        let mut seen = FastSet::default();
        let mut trailers: Vec<Dict> = Vec::new();
        while let Some(off) = queue.pop() {
            // Bounded: each section is visited once and chains are short.
            if seen.len() > 256 || !seen.insert(off) {
                continue;
            }
            let Ok(off) = usize::try_from(off) else {
                continue;
            };
            let Some(trailer) = self.read_xref_section(off) else {
                continue;
            };
            if let Some(prev) = trailer.get(b"Prev").and_then(Obj::as_i64) {
                queue.push(prev);
            }
            // Hybrid files keep extra entries in a stream that belongs to
            // this section, so it must be read before older sections.
            if let Some(stm) = trailer.get(b"XRefStm").and_then(Obj::as_i64) {
                queue.push(stm);
            }
            trailers.push(trailer);
        }
        // The newest trailer wins; older ones only fill in missing keys.
        let mut merged: Vec<(Vec<u8>, Obj)> = Vec::new();
        for t in trailers {
            for (k, v) in t.0 {
                if !merged.iter().any(|(mk, _)| *mk == k) {
                    merged.push((k, v));
                }
            }
        }
        self.trailer = Dict(merged);
    }

    fn read_xref_section(&mut self, off: usize) -> Option<Dict> {
        let mut lx = Lexer::new(self.buf, off, true);
        lx.skip_ws();
        if self.buf.get(lx.pos..)?.starts_with(b"xref") {
            lx.pos += 4;
            return self.read_xref_table(&mut lx);
        }
        let obj = self.parse_indirect_at(off, None)?;
        let Obj::Stream(s) = obj else { return None };
        if s.dict.get(b"Type").and_then(Obj::as_name) != Some(b"XRef") {
            return None;
        }
        self.read_xref_stream(&s);
        Some(Dict(s.dict.0.clone()))
    }

    fn read_xref_table(&mut self, lx: &mut Lexer) -> Option<Dict> {
        loop {
            let start = match lx.item(0) {
                Item::Obj(Obj::Int(n)) => n,
                Item::Kw(b"trailer") => break,
                _ => return None,
            };
            let Item::Obj(Obj::Int(count)) = lx.item(0) else {
                return None;
            };
            // Each entry takes 20 bytes, so a count beyond that is a lie.
            let max = (self.buf.len().saturating_sub(lx.pos) / 18) as i64 + 1;
            for i in 0..count.clamp(0, max) {
                let (Item::Obj(a), Item::Obj(_), Item::Kw(kind)) =
                    (lx.item(0), lx.item(0), lx.item(0))
                else {
                    return None;
                };
                let (Some(a), Ok(num)) = (a.as_i64(), u32::try_from(start.saturating_add(i)))
                else {
                    continue;
                };
                let loc = match kind {
                    b"n" => Loc::Offset(usize::try_from(a).unwrap_or(usize::MAX)),
                    _ => Loc::Free,
                };
                self.xref.entry(num).or_insert(loc);
            }
        }
        match lx.item(0) {
            Item::Obj(Obj::Dict(d)) => {
                Some(Rc::try_unwrap(d).unwrap_or_else(|d| Dict(d.0.clone())))
            }
            _ => None,
        }
    }

    fn read_xref_stream(&mut self, s: &Stream) {
        let Some(data) = self.decode_stream(s) else {
            return;
        };
        let w: Vec<usize> = s
            .dict
            .get(b"W")
            .and_then(Obj::as_array)
            .map(|a| {
                a.iter()
                    .map(|o| o.as_i64().unwrap_or(0).clamp(0, 8) as usize)
                    .collect()
            })
            .unwrap_or_default();
        if w.len() < 3 {
            return;
        }
        let row = w[0] + w[1] + w[2];
        if row == 0 {
            return;
        }
        let size = s.dict.get(b"Size").and_then(Obj::as_i64).unwrap_or(0);
        let index: Vec<i64> = match s.dict.get(b"Index").and_then(Obj::as_array) {
            Some(a) => a.iter().filter_map(Obj::as_i64).collect(),
            None => vec![0, size],
        };
        let field = |bytes: &[u8], width: usize, default: u64| -> u64 {
            if width == 0 {
                return default;
            }
            bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
        };
        let mut rows = data.chunks_exact(row);
        for pair in index.chunks_exact(2) {
            let (start, count) = (pair[0], pair[1]);
            for i in 0..count.max(0) {
                let Some(r) = rows.next() else { return };
                let t = field(&r[..w[0]], w[0], 1);
                let a = field(&r[w[0]..w[0] + w[1]], w[1], 0);
                let b = field(&r[w[0] + w[1]..], w[2], 0);
                let Ok(num) = u32::try_from(start.saturating_add(i)) else {
                    continue;
                };
                let loc = match t {
                    0 => Loc::Free,
                    1 => Loc::Offset(usize::try_from(a).unwrap_or(usize::MAX)),
                    2 => Loc::InStream(u32::try_from(a).unwrap_or(u32::MAX), b as u32),
                    // Unknown types are to be treated as null objects.
                    _ => Loc::Free,
                };
                self.xref.entry(num).or_insert(loc);
            }
        }
    }

    /// Offsets of every `N G obj` in the file; later definitions win, as in
    /// an incremental update.
    fn scan(&self) -> Rc<FastMap<u32, usize>> {
        if let Some(s) = self.scanned.borrow().as_ref() {
            return s.clone();
        }
        let mut map = FastMap::default();
        let buf = self.buf;
        let mut i = 0;
        while let Some(p) = find(buf, b"obj", i) {
            i = p + 3;
            if buf.get(p + 3).is_some_and(|&c| is_regular(c)) {
                continue;
            }
            // Walk back over "<num> <gen> " before the keyword.
            let mut j = p;
            let ws = |j: &mut usize| {
                let s = *j;
                while *j > 0 && is_ws(buf[*j - 1]) {
                    *j -= 1;
                }
                *j < s
            };
            let digits = |j: &mut usize| {
                let s = *j;
                while *j > 0 && buf[*j - 1].is_ascii_digit() && s - *j < 10 {
                    *j -= 1;
                }
                (*j < s).then_some((*j, s))
            };
            if !ws(&mut j) || digits(&mut j).is_none() || !ws(&mut j) {
                continue;
            }
            let Some((ns, ne)) = digits(&mut j) else {
                continue;
            };
            if ns > 0 && is_regular(buf[ns - 1]) {
                continue;
            }
            if let Some(Obj::Int(n)) = parse_number(&buf[ns..ne]) {
                if let Ok(n) = u32::try_from(n) {
                    map.insert(n, ns);
                }
            }
        }
        let rc = Rc::new(map);
        *self.scanned.borrow_mut() = Some(rc.clone());
        rc
    }

    /// Rebuilds the object index from a scan when the xref data is unusable.
    fn repair(&mut self) {
        self.repaired = true;
        let scanned = self.scan();
        self.cache.borrow_mut().clear();
        self.xref.clear();
        for (&n, &off) in scanned.iter() {
            self.xref.insert(n, Loc::Offset(off));
        }
        // Objects packed in object streams are invisible to the scan.
        let mut nums: Vec<u32> = scanned.keys().copied().collect();
        nums.sort_unstable();
        for n in nums {
            if let Obj::Stream(s) = self.get(n) {
                if s.dict.get(b"Type").and_then(Obj::as_name) == Some(b"ObjStm") {
                    for (inner, idx) in self.objstm_index(&s) {
                        self.xref.entry(inner).or_insert(Loc::InStream(n, idx));
                    }
                }
            }
        }
        let mut trailer: Vec<(Vec<u8>, Obj)> = Vec::new();
        // The newest trailer is the last one; looking at only a few from the
        // end keeps a file stuffed with "trailer" keywords from taking
        // quadratic time.
        let mut end = self.buf.len();
        for _ in 0..8 {
            let Some(p) = rfind(&self.buf[..end], b"trailer") else {
                break;
            };
            end = p;
            let mut lx = Lexer::new(self.buf, p + 7, true);
            if let Item::Obj(Obj::Dict(d)) = lx.item(0) {
                if d.get(b"Root").is_some() {
                    trailer = d.0.clone();
                    break;
                }
            }
        }
        let has_root = |t: &Vec<(Vec<u8>, Obj)>| t.iter().any(|(k, _)| k == b"Root");
        if !has_root(&trailer) {
            // Xref-stream files keep the trailer keys in the stream dictionary,
            // and as a last resort any catalog will do.
            let mut nums: Vec<u32> = self.xref.keys().copied().collect();
            nums.sort_unstable();
            for n in nums {
                let o = self.get(n);
                let Some(d) = o.as_dict() else { continue };
                let ty = d.get(b"Type").and_then(Obj::as_name);
                if ty == Some(b"XRef") && d.get(b"Root").is_some() {
                    trailer = d.0.clone();
                } else if ty == Some(b"Catalog") && !has_root(&trailer) {
                    trailer.push((b"Root".to_vec(), Obj::Ref(n)));
                }
            }
        }
        self.trailer = Dict(trailer);
    }

    pub(crate) fn resolve(&self, o: &Obj) -> Obj {
        let mut cur = o.clone();
        for _ in 0..8 {
            match cur {
                Obj::Ref(n) => cur = self.get(n),
                other => return other,
            }
        }
        Obj::Null
    }

    pub(crate) fn get(&self, num: u32) -> Obj {
        if let Some(o) = self.cache.borrow().get(&num) {
            return o.clone();
        }
        let depth = self.depth.get();
        if depth >= MAX_LOAD_DEPTH {
            return Obj::Null;
        }
        self.depth.set(depth + 1);
        let obj = self.load(num);
        self.depth.set(depth);
        self.cache.borrow_mut().insert(num, obj.clone());
        obj
    }

    fn load(&self, num: u32) -> Obj {
        match self.xref.get(&num).copied() {
            Some(Loc::Free) => Obj::Null,
            Some(Loc::InStream(stm, idx)) => {
                self.load_from_objstm(num, stm, idx).unwrap_or(Obj::Null)
            }
            Some(Loc::Offset(off)) => match self.parse_indirect_at(off, Some(num)) {
                Some(o) => o,
                // Wrong offsets are a classic defect; the scan finds the object anyway.
                None => self.load_scanned(num, Some(off)),
            },
            None => self.load_scanned(num, None),
        }
    }

    fn load_scanned(&self, num: u32, tried: Option<usize>) -> Obj {
        let scanned = self.scan();
        match scanned.get(&num) {
            Some(&off) if Some(off) != tried => {
                self.parse_indirect_at(off, Some(num)).unwrap_or(Obj::Null)
            }
            _ => Obj::Null,
        }
    }

    /// Parses `N G obj ... endobj` at `off`, checking the number when given.
    pub(crate) fn parse_indirect_at(&self, off: usize, want: Option<u32>) -> Option<Obj> {
        let mut lx = Lexer::new(self.buf, off, false);
        let Item::Obj(Obj::Int(n)) = lx.item(0) else {
            return None;
        };
        let Item::Obj(Obj::Int(_)) = lx.item(0) else {
            return None;
        };
        let Item::Kw(b"obj") = lx.item(0) else {
            return None;
        };
        if want.is_some_and(|w| i64::from(w) != n) {
            return None;
        }
        lx.refs = true;
        let obj = match lx.item(0) {
            Item::Obj(o) => o,
            _ => Obj::Null,
        };
        let Obj::Dict(dict) = obj else {
            return Some(obj);
        };
        lx.skip_ws();
        if !self
            .buf
            .get(lx.pos..)
            .is_some_and(|b| b.starts_with(b"stream"))
        {
            return Some(Obj::Dict(dict));
        }
        let mut start = lx.pos + 6;
        if self.buf.get(start) == Some(&b'\r') {
            start += 1;
        }
        if self.buf.get(start) == Some(&b'\n') {
            start += 1;
        }
        let declared = dict
            .get(b"Length")
            .map(|l| match l {
                Obj::Ref(_) => self.resolve(l),
                other => other.clone(),
            })
            .and_then(|l| l.as_i64())
            .and_then(|l| usize::try_from(l).ok());
        let end = declared
            .and_then(|len| {
                let end = start.checked_add(len)?;
                let mut after = Lexer::new(self.buf, end, false);
                after.skip_ws();
                self.buf
                    .get(after.pos..)?
                    .starts_with(b"endstream")
                    .then_some(end)
            })
            .or_else(|| {
                // The declared length is wrong or missing: trust the keyword.
                let e = self.next_endstream(start)?;
                let mut end = e;
                if end > start && self.buf[end - 1] == b'\n' {
                    end -= 1;
                }
                if end > start && self.buf[end - 1] == b'\r' {
                    end -= 1;
                }
                Some(end)
            })
            .unwrap_or(self.buf.len());
        let dict = Rc::try_unwrap(dict).unwrap_or_else(|d| Dict(d.0.clone()));
        Some(Obj::Stream(Rc::new(Stream { dict, start, end })))
    }

    /// The next `endstream` at or after `from`. The last answer is
    /// remembered: repair parses objects in file order, and a hostile file
    /// with many streams and no `endstream` would otherwise be rescanned to
    /// its end once per stream.
    fn next_endstream(&self, from: usize) -> Option<usize> {
        let (memo_from, memo) = self.endstream_memo.get();
        if from >= memo_from && memo.is_none_or(|m| m >= from) && memo_from != usize::MAX {
            return memo;
        }
        let found = find(self.buf, b"endstream", from);
        self.endstream_memo.set((from, found));
        found
    }

    /// Object numbers and their indexes inside an object stream.
    fn objstm_index(&self, s: &Stream) -> Vec<(u32, u32)> {
        let Some(data) = self.decode_stream(s) else {
            return Vec::new();
        };
        let n = objstm_count(s);
        let mut lx = Lexer::new(&data, 0, false);
        let mut out = Vec::new();
        for i in 0..n {
            let (Item::Obj(Obj::Int(num)), Item::Obj(Obj::Int(_))) = (lx.item(0), lx.item(0))
            else {
                break;
            };
            if let Ok(num) = u32::try_from(num) {
                out.push((num, i as u32));
            }
        }
        out
    }

    fn load_from_objstm(&self, num: u32, stm: u32, idx: u32) -> Option<Obj> {
        if !self.loading_objstm.borrow_mut().insert(stm) {
            return None;
        }
        let res = (|| {
            let Obj::Stream(s) = self.get(stm) else {
                return None;
            };
            let data = self.decode_stream(&s)?;
            let n = objstm_count(&s);
            let first = usize::try_from(s.dict.get(b"First").and_then(Obj::as_i64)?).ok()?;
            let mut lx = Lexer::new(&data, 0, false);
            let mut offsets = Vec::new();
            for _ in 0..n {
                let (Item::Obj(Obj::Int(a)), Item::Obj(Obj::Int(b))) = (lx.item(0), lx.item(0))
                else {
                    break;
                };
                offsets.push((a, b));
            }
            let mut found = None;
            // Parse all members at once: their neighbours are usually needed soon.
            for (i, (a, b)) in offsets.into_iter().enumerate() {
                let (Ok(member), Ok(rel)) = (u32::try_from(a), usize::try_from(b)) else {
                    continue;
                };
                let mut lx = Lexer::new(&data, first.saturating_add(rel), true);
                let Item::Obj(o) = lx.item(0) else { continue };
                // An object's current version may live elsewhere (a later update).
                let current =
                    matches!(self.xref.get(&member), Some(Loc::InStream(s2, _)) if *s2 == stm);
                if member == num && (i as u32 == idx || found.is_none()) {
                    found = Some(o.clone());
                }
                if current && member != num {
                    self.cache.borrow_mut().entry(member).or_insert(o);
                }
            }
            found
        })();
        self.loading_objstm.borrow_mut().remove(&stm);
        res
    }

    /// The decoded bytes of a stream, or None when a filter is unsupported,
    /// the data is broken beyond use, or the decompression budget is spent.
    pub(crate) fn decode_stream(&self, s: &Stream) -> Option<Vec<u8>> {
        let raw = self.buf.get(s.start..s.end.min(self.buf.len()))?;
        let filters: Vec<Obj> = match s.dict.get(b"Filter").map(|f| self.resolve(f)) {
            None | Some(Obj::Null) => Vec::new(),
            Some(Obj::Array(a)) => a.iter().map(|f| self.resolve(f)).collect(),
            Some(other) => vec![other],
        };
        let parms: Vec<Obj> = match s
            .dict
            .get(b"DecodeParms")
            .or_else(|| s.dict.get(b"DP"))
            .map(|p| self.resolve(p))
        {
            Some(Obj::Array(a)) => a.iter().map(|p| self.resolve(p)).collect(),
            Some(other) => vec![other],
            None => Vec::new(),
        };
        if filters.is_empty() {
            return self.budget.take(raw.len()).then(|| raw.to_vec());
        }
        let mut data: Option<Vec<u8>> = None;
        for (i, f) in filters.iter().enumerate() {
            let input: &[u8] = data.as_deref().unwrap_or(raw);
            let parm = parms.get(i).and_then(Obj::as_dict);
            let out = match f.as_name()? {
                b"FlateDecode" | b"Fl" => {
                    let out = inflate(input, true, true, self.budget).or_else(|| {
                        // Some writers omit the zlib header.
                        (!self.budget.exhausted.get())
                            .then(|| inflate(input, false, true, self.budget))
                            .flatten()
                    })?;
                    predict(out, parm)?
                }
                b"LZWDecode" | b"LZW" => {
                    let early = parm
                        .and_then(|p| p.get(b"EarlyChange"))
                        .and_then(Obj::as_i64)
                        != Some(0);
                    let out = lzw(input, early, self.budget)?;
                    predict(out, parm)?
                }
                b"ASCIIHexDecode" | b"AHx" => ascii_hex(input),
                b"ASCII85Decode" | b"A85" => ascii85(input),
                b"RunLengthDecode" | b"RL" => run_length(input, self.budget)?,
                // Image codecs and encryption filters carry no text we can use.
                _ => return None,
            };
            data = Some(out);
        }
        data
    }
}

/// Undoes PNG and TIFF predictors, used mostly by xref and object streams.
fn predict(data: Vec<u8>, parm: Option<&Dict>) -> Option<Vec<u8>> {
    let Some(p) = parm else { return Some(data) };
    let get = |k: &[u8], d: i64| p.get(k).and_then(Obj::as_i64).unwrap_or(d);
    let pred = get(b"Predictor", 1);
    if pred < 2 {
        return Some(data);
    }
    let colors = get(b"Colors", 1).clamp(1, 32) as usize;
    let bpc = get(b"BitsPerComponent", 8).clamp(1, 16) as usize;
    let columns = get(b"Columns", 1).clamp(1, 1 << 20) as usize;
    let bpp = (colors * bpc).div_ceil(8).max(1);
    // Clamped to the data so a forged /Columns cannot demand a huge row buffer.
    let row_len = (colors * bpc * columns).div_ceil(8).min(data.len().max(1));
    if pred == 2 {
        if bpc != 8 {
            return Some(data);
        }
        let mut out = data;
        for row in out.chunks_mut(row_len) {
            for i in bpp..row.len() {
                row[i] = row[i].wrapping_add(row[i - bpp]);
            }
        }
        return Some(out);
    }
    let mut out = Vec::with_capacity(data.len());
    let mut prev = vec![0u8; row_len];
    for chunk in data.chunks(row_len + 1) {
        let (&ty, row) = chunk.split_first()?;
        let mut cur = row.to_vec();
        cur.resize(row_len, 0);
        for i in 0..row_len {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let b = prev[i];
            let c = if i >= bpp { prev[i - bpp] } else { 0 };
            let add = match ty {
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => 0,
            };
            cur[i] = cur[i].wrapping_add(add);
        }
        out.extend_from_slice(&cur[..row.len().min(row_len)]);
        prev = cur;
    }
    Some(out)
}

fn ascii_hex(input: &[u8]) -> Vec<u8> {
    let mut lx = Lexer::new(input, 0, false);
    lx.hex_string()
}

fn ascii85(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() * 4 / 5);
    let mut group = [0u8; 5];
    let mut n = 0;
    let body = input.strip_prefix(b"<~").unwrap_or(input);
    for &c in body {
        match c {
            b'~' => break,
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[n] = c - b'!';
                n += 1;
                if n == 5 {
                    let v = group.iter().fold(0u32, |acc, &d| {
                        acc.wrapping_mul(85).wrapping_add(u32::from(d))
                    });
                    out.extend_from_slice(&v.to_be_bytes());
                    n = 0;
                }
            }
            _ => {}
        }
    }
    if n > 1 {
        for g in group.iter_mut().skip(n) {
            *g = 84;
        }
        let v = group.iter().fold(0u32, |acc, &d| {
            acc.wrapping_mul(85).wrapping_add(u32::from(d))
        });
        out.extend_from_slice(&v.to_be_bytes()[..n - 1]);
    }
    out
}

fn run_length(input: &[u8], budget: &Budget) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&len) = input.get(i) {
        if len == 128 {
            break;
        }
        if len < 128 {
            let n = len as usize + 1;
            let chunk = input.get(i + 1..(i + 1 + n).min(input.len()))?;
            out.extend_from_slice(chunk);
            i += 1 + n;
        } else {
            let b = *input.get(i + 1)?;
            out.extend(std::iter::repeat_n(b, 257 - len as usize));
            i += 2;
        }
        if out.len() > budget.left() {
            budget.take(usize::MAX);
            return None;
        }
    }
    budget.take(out.len()).then_some(out)
}

fn lzw(input: &[u8], early: bool, budget: &Budget) -> Option<Vec<u8>> {
    let limit = budget.left();
    let mut out: Vec<u8> = Vec::new();
    // Each entry is (prefix code, last byte, length); strings are rebuilt on
    // output, which keeps the table small.
    let mut table: Vec<(u16, u8, u32)> = (0..256u16).map(|i| (u16::MAX, i as u8, 1)).collect();
    table.push((u16::MAX, 0, 0));
    table.push((u16::MAX, 0, 0));
    let mut width = 9u32;
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut prev: Option<u16> = None;
    let mut tmp: Vec<u8> = Vec::new();
    let emit = |code: u16, table: &Vec<(u16, u8, u32)>, tmp: &mut Vec<u8>| -> Option<u8> {
        tmp.clear();
        let mut c = code;
        while c != u16::MAX {
            let (p, b, _) = *table.get(c as usize)?;
            tmp.push(b);
            c = p;
            if tmp.len() > 4096 {
                return None;
            }
        }
        tmp.reverse();
        tmp.first().copied()
    };
    for &byte in input {
        acc = (acc << 8) | u32::from(byte);
        bits += 8;
        while bits >= width {
            let code = ((acc >> (bits - width)) & ((1 << width) - 1)) as u16;
            bits -= width;
            match code {
                256 => {
                    table.truncate(258);
                    width = 9;
                    prev = None;
                    continue;
                }
                257 => return budget.take(out.len()).then_some(out),
                _ => {}
            }
            if (code as usize) < table.len() {
                let f = emit(code, &table, &mut tmp)?;
                if let Some(p) = prev {
                    let len = table.get(p as usize)?.2 + 1;
                    table.push((p, f, len));
                }
            } else {
                // The code being defined right now: previous string plus its first byte.
                let p = prev?;
                let f = emit(p, &table, &mut tmp)?;
                let len = table.get(p as usize)?.2 + 1;
                table.push((p, f, len));
                emit(code, &table, &mut tmp)?;
            }
            out.extend_from_slice(&tmp);
            if out.len() > limit {
                budget.take(usize::MAX);
                return None;
            }
            prev = Some(code);
            let next = table.len() + usize::from(early);
            if next >= (1 << width) && width < 12 {
                width += 1;
            }
            if table.len() >= 4096 {
                // Writers must clear before the table overflows; stop growing if not.
                prev = None;
            }
        }
    }
    budget.take(out.len()).then_some(out)
}

/// How many objects an object stream says it holds, within a sane bound.
fn objstm_count(s: &Stream) -> i64 {
    s.dict
        .get(b"N")
        .and_then(Obj::as_i64)
        .unwrap_or(0)
        .clamp(0, 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzw_spec_example() {
        // The worked example from the PDF specification (section 7.4.4.2).
        let budget = Budget::new(1 << 20);
        let out = lzw(
            &[0x80, 0x0B, 0x60, 0x50, 0x22, 0x0C, 0x0C, 0x85, 0x01],
            true,
            &budget,
        );
        assert_eq!(
            out.as_deref(),
            Some(&b"\x2D\x2D\x2D\x2D\x2D\x41\x2D\x2D\x2D\x42"[..])
        );
    }

    #[test]
    fn png_up_predictor() {
        let parm = Dict(vec![
            (b"Predictor".to_vec(), Obj::Int(12)),
            (b"Columns".to_vec(), Obj::Int(2)),
        ]);
        let data = vec![2, 1, 2, 2, 1, 1];
        assert_eq!(predict(data, Some(&parm)), Some(vec![1, 2, 2, 3]));
    }

    #[test]
    fn ascii85_with_padding_and_z() {
        assert_eq!(ascii85(b"<~87cURDZ~>"), b"Hello");
        assert_eq!(ascii85(b"z~>"), vec![0; 4]);
    }
}
