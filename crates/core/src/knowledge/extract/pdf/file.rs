//! The file structure: xref tables and streams, object streams, incremental updates,
//! and decoding a stream through its filters.
//!
//! Damaged files are common in uploads, so the reader prefers recovering to
//! refusing: broken cross-reference data falls back to scanning the file for
//! `N G obj` headers, the way viewers do.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::filters::{ascii85, ascii_hex, lzw, predict, run_length};
use super::objects::{
    find, is_regular, is_ws, parse_number, rfind, Dict, Item, Lexer, Obj, Stream,
};
use crate::knowledge::extract::binary::{inflate, Budget, FastMap, FastSet};

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
        self.follow(o.clone(), 8)
    }

    /// Like [`Doc::resolve`], for an object read once (a page, its content streams): it is
    /// taken out of the cache rather than kept there, so that a long document's pages are
    /// not all held at once.
    pub(crate) fn resolve_once(&self, o: &Obj) -> Obj {
        match o {
            Obj::Ref(n) => {
                let cached = self.cache.borrow_mut().remove(n);
                match cached.or_else(|| self.load_nested(*n)) {
                    Some(first) => self.follow(first, 7),
                    None => Obj::Null,
                }
            }
            other => other.clone(),
        }
    }

    /// Follows references from `cur`, at most `hops` of them.
    fn follow(&self, mut cur: Obj, hops: usize) -> Obj {
        for _ in 0..hops {
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
        let Some(obj) = self.load_nested(num) else {
            return Obj::Null;
        };
        self.cache.borrow_mut().insert(num, obj.clone());
        obj
    }

    /// Loads an object from the file; `None` (not a null object to remember) when loads
    /// already nest too deeply.
    fn load_nested(&self, num: u32) -> Option<Obj> {
        let depth = self.depth.get();
        if depth >= MAX_LOAD_DEPTH {
            return None;
        }
        self.depth.set(depth + 1);
        let obj = self.load(num);
        self.depth.set(depth);
        Some(obj)
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

/// How many objects an object stream says it holds, within a sane bound.
fn objstm_count(s: &Stream) -> i64 {
    s.dict
        .get(b"N")
        .and_then(Obj::as_i64)
        .unwrap_or(0)
        .clamp(0, 1_000_000)
}
