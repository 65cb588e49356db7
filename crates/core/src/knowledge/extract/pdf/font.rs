//! Fonts: splitting shown strings into character codes, mapping codes to
//! Unicode (ToUnicode CMaps, simple encodings with Differences) and glyph
//! widths, which the layout needs to tell word and column gaps apart.
//!
//! The tables are deliberately small: only what real documents' text needs,
//! instead of the full Adobe glyph list and every predefined CMap.

use super::file::Doc;
use super::objects::{Dict, Item, Lexer, Obj};
use crate::knowledge::extract::binary::FastMap;

enum Kind {
    Simple,
    Composite,
}

enum Widths {
    Simple {
        first: u32,
        w: Vec<f64>,
    },
    Cid {
        map: FastMap<u32, f64>,
        ranges: Vec<(u32, u32, f64)>,
    },
}

pub(crate) struct Font {
    kind: Kind,
    /// Code lengths for composite fonts: (low, high, bytes).
    codespace: Vec<(u32, u32, u8)>,
    to_unicode: Option<CMap>,
    /// Code-to-CID ranges from an embedded encoding CMap; identity when empty.
    cids: Vec<(u32, u32, u32)>,
    /// Composite fonts with a UCS-2 encoding CMap use Unicode as codes.
    ucs2: bool,
    /// Simple fonts: base encoding plus Differences.
    encoding: Vec<Option<Box<str>>>,
    widths: Widths,
    default_width: f64,
    std_widths: Option<&'static [u8; 95]>,
    /// Glyph-space to text-space factor (0.001 except for Type 3 fonts).
    scale: f64,
    /// Type 3 fonts may use a glyph space of any size; this corrects the
    /// apparent font size so layout thresholds still make sense.
    pub(crate) height_factor: f64,
    /// Bold text at body size hints at a heading.
    pub(crate) bold: bool,
}

impl Font {
    /// A stand-in for missing or broken font resources: plain Latin text is
    /// still the most likely content.
    pub(crate) fn fallback() -> Font {
        Font {
            kind: Kind::Simple,
            codespace: Vec::new(),
            to_unicode: None,
            cids: Vec::new(),
            ucs2: false,
            encoding: base_encoding(b"WinAnsiEncoding"),
            widths: Widths::Simple {
                first: 0,
                w: Vec::new(),
            },
            default_width: 500.0,
            std_widths: Some(&HELVETICA),
            scale: 0.001,
            height_factor: 1.0,
            bold: false,
        }
    }

    pub(crate) fn load(doc: &Doc, obj: &Obj) -> Font {
        let obj = doc.resolve(obj);
        let Some(d) = obj.as_dict() else {
            return Font::fallback();
        };
        let subtype = d
            .get(b"Subtype")
            .and_then(Obj::as_name)
            .unwrap_or(b"Type1")
            .to_vec();
        let base = d
            .get(b"BaseFont")
            .and_then(Obj::as_name)
            .unwrap_or(b"")
            .to_vec();
        let to_unicode = d
            .get(b"ToUnicode")
            .map(|t| doc.resolve(t))
            .and_then(|t| match t {
                Obj::Stream(s) => doc.decode_stream(&s).map(|data| CMap::parse(&data)),
                _ => None,
            });
        let mut font = Font::fallback();
        font.to_unicode = to_unicode;
        font.std_widths = None;
        font.bold = is_bold(doc, d, &base);
        if subtype == b"Type0" {
            font.kind = Kind::Composite;
            font.encoding = Vec::new();
            font.default_width = 1000.0;
            match d.get(b"Encoding").map(|e| doc.resolve(e)) {
                Some(Obj::Name(n)) => {
                    font.ucs2 = contains(&n, b"UCS2") || contains(&n, b"UTF16");
                }
                Some(Obj::Stream(s)) => {
                    if let Some(data) = doc.decode_stream(&s) {
                        let cm = CMap::parse(&data);
                        font.codespace = cm.codespace;
                        font.cids = cm.cids;
                    }
                }
                _ => {}
            }
            if font.codespace.is_empty() {
                font.codespace.push((0, 0xFFFF, 2));
            }
            let desc = d
                .get(b"DescendantFonts")
                .map(|a| doc.resolve(a))
                .and_then(|a| a.as_array().and_then(|a| a.first().cloned()))
                .map(|f| doc.resolve(&f));
            if let Some(dd) = desc.as_ref().and_then(Obj::as_dict) {
                if let Some(dw) = dd
                    .get(b"DW")
                    .map(|v| doc.resolve(v))
                    .and_then(|v| v.as_f64())
                {
                    font.default_width = dw;
                }
                let w = dd.get(b"W").map(|v| doc.resolve(v));
                font.widths = cid_widths(doc, w.as_ref().and_then(Obj::as_array).unwrap_or(&[]));
            } else {
                font.widths = Widths::Cid {
                    map: FastMap::default(),
                    ranges: Vec::new(),
                };
            }
            return font;
        }
        if subtype == b"Type3" {
            let m: Vec<f64> = d
                .get(b"FontMatrix")
                .map(|m| doc.resolve(m))
                .and_then(|m| {
                    m.as_array()
                        .map(|a| a.iter().filter_map(Obj::as_f64).collect())
                })
                .unwrap_or_default();
            if m.len() == 6 && m[0].abs() > 1e-9 && m[3].abs() > 1e-9 {
                font.scale = m[0].abs();
                font.height_factor = (m[3].abs() * 1000.0).clamp(0.01, 100.0);
            }
        }
        let plain = strip_subset(&base);
        let symbolic = contains(plain, b"Symbol") || contains(plain, b"Dingbats");
        let default_enc: &[u8] = if subtype == b"Type1" && !symbolic {
            b"StandardEncoding"
        } else {
            b"WinAnsiEncoding"
        };
        match d.get(b"Encoding").map(|e| doc.resolve(e)) {
            Some(Obj::Name(n)) => font.encoding = base_encoding(&n),
            Some(Obj::Dict(ed)) => {
                let be = ed
                    .get(b"BaseEncoding")
                    .and_then(Obj::as_name)
                    .unwrap_or(default_enc);
                font.encoding = base_encoding(be);
                if let Some(diffs) = ed.get(b"Differences").map(|x| doc.resolve(x)) {
                    apply_differences(&mut font.encoding, diffs.as_array().unwrap_or(&[]));
                }
            }
            _ => font.encoding = base_encoding(default_enc),
        }
        let first = d
            .get(b"FirstChar")
            .and_then(|v| doc.resolve(v).as_i64())
            .unwrap_or(0);
        let widths: Vec<f64> = d
            .get(b"Widths")
            .map(|w| doc.resolve(w))
            .and_then(|w| {
                w.as_array().map(|a| {
                    a.iter()
                        .map(|x| doc.resolve(x).as_f64().unwrap_or(0.0))
                        .collect()
                })
            })
            .unwrap_or_default();
        if widths.is_empty() {
            font.std_widths = standard_widths(plain);
        }
        font.widths = Widths::Simple {
            first: first.clamp(0, 255) as u32,
            w: widths,
        };
        let missing = d
            .get(b"FontDescriptor")
            .map(|f| doc.resolve(f))
            .and_then(|f| {
                f.as_dict()
                    .and_then(|fd| fd.get(b"MissingWidth").and_then(Obj::as_f64))
            });
        if let Some(m) = missing.filter(|&m| m > 0.0) {
            font.default_width = m;
        } else if font.scale != 0.001 {
            // Type 3 glyph spaces are arbitrary; half an em of *that* space.
            font.default_width = 0.5 / font.scale;
        }
        // One-byte fonts get a single code table, so showing a glyph is one
        // index instead of a map lookup plus a fallback.
        if let Some(tu) = font.to_unicode.take() {
            for (code, slot) in font.encoding.iter_mut().enumerate() {
                let mut s = String::new();
                if tu.lookup(code as u32, &mut s) {
                    *slot = Some(s.into_boxed_str());
                }
            }
        }
        font
    }

    pub(crate) fn is_simple(&self) -> bool {
        matches!(self.kind, Kind::Simple)
    }

    /// Calls `f(code, byte_len)` for each character code in a shown string.
    pub(crate) fn codes(&self, s: &[u8], mut f: impl FnMut(u32, usize)) {
        if self.is_simple() {
            for &b in s {
                f(u32::from(b), 1);
            }
            return;
        }
        let mut i = 0;
        while i < s.len() {
            let mut taken = None;
            for n in 1..=4usize {
                let Some(bytes) = s.get(i..i + n) else { break };
                let code = be(bytes);
                if self
                    .codespace
                    .iter()
                    .any(|&(lo, hi, len)| usize::from(len) == n && code >= lo && code <= hi)
                {
                    taken = Some((code, n));
                    break;
                }
            }
            let (code, n) = taken.unwrap_or_else(|| {
                let n =
                    usize::from(self.codespace.first().map_or(2, |c| c.2)).clamp(1, s.len() - i);
                (be(&s[i..i + n]), n)
            });
            f(code, n);
            i += n;
        }
    }

    /// Appends the text of `code` to `out`; false when the font gives no mapping.
    pub(crate) fn unicode(&self, code: u32, out: &mut String) -> bool {
        if let Some(tu) = &self.to_unicode {
            if tu.lookup(code, out) {
                return true;
            }
        }
        match self.kind {
            Kind::Simple => match self.encoding.get(code as usize) {
                Some(Some(s)) => {
                    out.push_str(s);
                    true
                }
                _ => false,
            },
            Kind::Composite if self.ucs2 => match char::from_u32(code) {
                Some(c) => {
                    let before = out.len();
                    clean(out, c.encode_utf8(&mut [0; 4]));
                    out.len() > before
                }
                None => false,
            },
            Kind::Composite => false,
        }
    }

    /// Advance width in text-space units for a font size of 1.
    pub(crate) fn width(&self, code: u32) -> f64 {
        let w = match &self.widths {
            Widths::Simple { first, w } => code
                .checked_sub(*first)
                .and_then(|i| w.get(i as usize))
                .copied()
                .filter(|&w| w > 0.0)
                .or_else(|| {
                    let table = self.std_widths?;
                    let i = code.checked_sub(32)?;
                    table.get(i as usize).map(|&w| f64::from(w) * 4.0)
                }),
            Widths::Cid { map, ranges } => {
                let cid = self.cid(code);
                map.get(&cid).copied().or_else(|| {
                    ranges
                        .iter()
                        .find(|r| cid >= r.0 && cid <= r.1)
                        .map(|r| r.2)
                })
            }
        };
        w.unwrap_or(self.default_width) * self.scale
    }

    fn cid(&self, code: u32) -> u32 {
        self.cids
            .iter()
            .find(|r| code >= r.0 && code <= r.1)
            .map_or(code, |r| r.2.saturating_add(code - r.0))
    }
}

fn is_bold(doc: &Doc, d: &Dict, base: &[u8]) -> bool {
    let name = strip_subset(base);
    if [
        &b"Bold"[..],
        b"Black",
        b"Heavy",
        b"Semibold",
        b"SemiBold",
        b"Demi",
    ]
    .iter()
    .any(|w| contains(name, w))
    {
        return true;
    }
    // Composite fonts keep the descriptor on the descendant font.
    let desc = d
        .get(b"FontDescriptor")
        .map(|f| doc.resolve(f))
        .or_else(|| {
            let df = d.get(b"DescendantFonts").map(|a| doc.resolve(a))?;
            let first = doc.resolve(df.as_array()?.first()?);
            first
                .as_dict()?
                .get(b"FontDescriptor")
                .map(|f| doc.resolve(f))
        });
    let Some(fd) = desc.as_ref().and_then(Obj::as_dict) else {
        return false;
    };
    let weight = fd.get(b"FontWeight").and_then(Obj::as_f64).unwrap_or(400.0);
    let flags = fd.get(b"Flags").and_then(Obj::as_i64).unwrap_or(0);
    weight >= 600.0 || flags & (1 << 18) != 0
}

fn cid_widths(doc: &Doc, w: &[Obj]) -> Widths {
    let mut map = FastMap::default();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < w.len() {
        let Some(first) = doc.resolve(&w[i]).as_i64() else {
            break;
        };
        match w.get(i + 1).map(|x| doc.resolve(x)) {
            Some(Obj::Array(list)) => {
                for (k, v) in list.iter().enumerate() {
                    if let (Some(v), Ok(c)) = (
                        doc.resolve(v).as_f64(),
                        u32::try_from(first.saturating_add(k as i64)),
                    ) {
                        map.insert(c, v);
                    }
                }
                i += 2;
            }
            Some(last) => {
                let width = w
                    .get(i + 2)
                    .map(|x| doc.resolve(x))
                    .and_then(|x| x.as_f64());
                if let (Some(last), Some(width)) = (last.as_i64(), width) {
                    if let (Ok(a), Ok(b)) = (u32::try_from(first), u32::try_from(last)) {
                        ranges.push((a, b, width));
                    }
                }
                i += 3;
            }
            None => break,
        }
    }
    Widths::Cid { map, ranges }
}

fn be(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b))
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Subset fonts are named like `ABCDEF+Helvetica`.
fn strip_subset(name: &[u8]) -> &[u8] {
    match name.get(6) {
        Some(b'+') => &name[7..],
        _ => name,
    }
}

fn standard_widths(name: &[u8]) -> Option<&'static [u8; 95]> {
    if contains(name, b"Courier") || contains(name, b"Symbol") || contains(name, b"Dingbats") {
        return None;
    }
    let bold = contains(name, b"Bold");
    let serif = contains(name, b"Times");
    Some(match (serif, bold) {
        (true, true) => &TIMES_BOLD,
        (true, false) => &TIMES,
        (false, true) => &HELVETICA_BOLD,
        (false, false) => &HELVETICA,
    })
}

/// A ToUnicode or encoding CMap. Small ranges are expanded into the map for
/// fast lookups; big ones stay ranges so a forged `<0000> <FFFF>` costs nothing.
#[derive(Default)]
pub(crate) struct CMap {
    map: FastMap<u32, Box<str>>,
    ranges: Vec<(u32, u32, Vec<u16>)>,
    codespace: Vec<(u32, u32, u8)>,
    cids: Vec<(u32, u32, u32)>,
}

impl CMap {
    pub(crate) fn parse(data: &[u8]) -> CMap {
        let mut cm = CMap::default();
        let mut lx = Lexer::new(data, 0, false);
        let mut operands: Vec<Obj> = Vec::new();
        // Which section we are in decides how many operands make an entry.
        let mut section: &[u8] = b"";
        loop {
            match lx.item(0) {
                Item::Eof => break,
                Item::Obj(o) => {
                    operands.push(o);
                    let need = match section {
                        b"codespacerange" | b"bfchar" | b"cidchar" => 2,
                        b"bfrange" | b"cidrange" => 3,
                        _ => {
                            if operands.len() > 16 {
                                operands.clear();
                            }
                            continue;
                        }
                    };
                    if operands.len() == need {
                        cm.entry(section, &operands);
                        operands.clear();
                    }
                }
                Item::Kw(k) => {
                    operands.clear();
                    section = match k {
                        b"begincodespacerange" => b"codespacerange",
                        b"beginbfchar" => b"bfchar",
                        b"beginbfrange" => b"bfrange",
                        b"begincidchar" => b"cidchar",
                        b"begincidrange" => b"cidrange",
                        _ => b"",
                    };
                }
                Item::Close => {}
            }
        }
        cm
    }

    fn entry(&mut self, section: &[u8], ops: &[Obj]) {
        let code = |o: &Obj| match o {
            Obj::Str(s) if !s.is_empty() && s.len() <= 4 => Some((be(s), s.len() as u8)),
            _ => None,
        };
        match section {
            b"codespacerange" => {
                if let (Some((lo, n)), Some((hi, _))) = (code(&ops[0]), code(&ops[1])) {
                    self.codespace.push((lo, hi, n));
                }
            }
            b"bfchar" => {
                if let Some((c, _)) = code(&ops[0]) {
                    let dst = match &ops[1] {
                        Obj::Str(s) => utf16(s),
                        Obj::Name(n) => {
                            let mut s = String::new();
                            glyph_unicode(n, &mut s);
                            s
                        }
                        _ => String::new(),
                    };
                    self.map.insert(c, cleaned(&dst));
                }
            }
            b"bfrange" => {
                let (Some((lo, _)), Some((hi, _))) = (code(&ops[0]), code(&ops[1])) else {
                    return;
                };
                if hi < lo {
                    return;
                }
                match &ops[2] {
                    Obj::Array(list) => {
                        for (i, d) in list.iter().enumerate().take(
                            usize::try_from(hi - lo)
                                .unwrap_or(usize::MAX)
                                .saturating_add(1),
                        ) {
                            if let Obj::Str(s) = d {
                                self.map.insert(lo + i as u32, cleaned(&utf16(s)));
                            }
                        }
                    }
                    Obj::Str(s) => {
                        let units = utf16_units(s);
                        if hi - lo <= 256 {
                            for c in lo..=hi {
                                self.map
                                    .insert(c, range_text(&units, c - lo).into_boxed_str());
                            }
                        } else if self.ranges.len() < 10_000 {
                            self.ranges.push((lo, hi, units));
                        }
                    }
                    _ => {}
                }
            }
            b"cidchar" => {
                if let (Some((c, _)), Some(cid)) = (code(&ops[0]), ops[1].as_i64()) {
                    self.cids.push((c, c, cid.clamp(0, u32::MAX as i64) as u32));
                }
            }
            b"cidrange" => {
                if let (Some((lo, _)), Some((hi, _)), Some(cid)) =
                    (code(&ops[0]), code(&ops[1]), ops[2].as_i64())
                {
                    self.cids
                        .push((lo, hi, cid.clamp(0, u32::MAX as i64) as u32));
                }
            }
            _ => {}
        }
    }

    fn lookup(&self, code: u32, out: &mut String) -> bool {
        let before = out.len();
        if let Some(s) = self.map.get(&code) {
            out.push_str(s);
        } else if let Some((lo, _, units)) = self.ranges.iter().find(|r| code >= r.0 && code <= r.1)
        {
            clean(out, &range_text(units, code - lo));
        }
        out.len() > before
    }
}

/// Appends glyph text as it should reach the index: symbol-font private-use
/// codes (as Word's bullets come out) become real characters, control codes
/// go, and ligatures are spelled out because "ﬁnd" would never match "find".
/// Applied once when a font's tables are built, not per glyph.
pub(crate) fn clean(out: &mut String, text: &str) {
    for c in text.chars() {
        let c = match u32::from(c) {
            0xF0B7 | 0xF0A7 | 0xF06C | 0xF0FC | 0xF0D8 | 0xF076 | 0xF06E | 0xF0A8 => '\u{2022}',
            v @ 0xF020..=0xF07E => char::from_u32(v - 0xF000).unwrap_or(' '),
            0xF000..=0xF0FF | 0xFFFD => continue,
            0xFB00..=0xFB06 => {
                let spelled = ["ff", "fi", "fl", "ffi", "ffl", "st", "st"];
                out.push_str(
                    spelled
                        .get((u32::from(c) - 0xFB00) as usize)
                        .copied()
                        .unwrap_or(""),
                );
                continue;
            }
            0x00AD | 0x2010 | 0x2011 => '-',
            0 => continue,
            _ if c.is_control() => ' ',
            _ => c,
        };
        out.push(c);
    }
}

fn cleaned(s: &str) -> Box<str> {
    let mut out = String::with_capacity(s.len());
    clean(&mut out, s);
    out.into_boxed_str()
}

fn utf16_units(s: &[u8]) -> Vec<u16> {
    if s.len() == 1 {
        // Some writers put a single byte here; read it as Latin-1.
        return vec![u16::from(s[0])];
    }
    s.chunks(2)
        .map(|c| (u16::from(c[0]) << 8) | u16::from(c.get(1).copied().unwrap_or(0)))
        .collect()
}

fn utf16(s: &[u8]) -> String {
    String::from_utf16_lossy(&utf16_units(s))
}

/// A bfrange destination advanced by `offset`: the last UTF-16 unit counts up.
fn range_text(units: &[u16], offset: u32) -> String {
    let mut u = units.to_vec();
    if let Some(last) = u.last_mut() {
        *last = (u32::from(*last).wrapping_add(offset) & 0xFFFF) as u16;
    }
    String::from_utf16_lossy(&u)
}

fn base_encoding(name: &[u8]) -> Vec<Option<Box<str>>> {
    (0..256u32)
        .map(|c| {
            let ch = match name {
                b"MacRomanEncoding" | b"MacExpertEncoding" => mac_roman(c as u8),
                b"StandardEncoding" => standard(c as u8),
                _ => win_ansi(c as u8),
            };
            ch.map(|c| cleaned(c.encode_utf8(&mut [0; 4])))
        })
        .collect()
}

fn apply_differences(enc: &mut [Option<Box<str>>], diffs: &[Obj]) {
    let mut code: i64 = 0;
    for d in diffs {
        match d {
            Obj::Int(n) => code = *n,
            Obj::Name(n) => {
                if let Some(slot) = usize::try_from(code).ok().and_then(|c| enc.get_mut(c)) {
                    let mut s = String::new();
                    *slot = glyph_unicode(n, &mut s).then(|| cleaned(&s));
                }
                code = code.saturating_add(1);
            }
            _ => {}
        }
    }
}

pub(crate) fn win_ansi(c: u8) -> Option<char> {
    match c {
        0x20..=0x7E => Some(c as char),
        // Unused codes in WinAnsiEncoding show the bullet glyph.
        0x7F => Some('\u{2022}'),
        0x80..=0x9F => char::from_u32(u32::from(WIN_80[(c - 0x80) as usize])),
        0xAD => Some('-'),
        0xA0..=0xFF => Some(c as char),
        _ => None,
    }
}

fn standard(c: u8) -> Option<char> {
    match c {
        0x27 => Some('\u{2019}'),
        0x60 => Some('\u{2018}'),
        0x20..=0x7E => Some(c as char),
        _ => STANDARD_HIGH
            .iter()
            .find(|(k, _)| *k == c)
            .and_then(|(_, u)| char::from_u32(u32::from(*u))),
    }
}

fn mac_roman(c: u8) -> Option<char> {
    match c {
        0x20..=0x7E => Some(c as char),
        0x80..=0xFF => MAC_ROMAN_HIGH.chars().nth((c - 0x80) as usize),
        _ => None,
    }
}

/// PDFDocEncoding, used by text strings such as the document title.
pub(crate) fn pdf_doc_char(c: u8) -> Option<char> {
    match c {
        0x09 | 0x0A | 0x0D => Some(' '),
        0x18..=0x1F => char::from_u32(u32::from(PDFDOC_18[(c - 0x18) as usize])),
        0x20..=0x7E => Some(c as char),
        0x80..=0xA0 => char::from_u32(u32::from(PDFDOC_80[(c - 0x80) as usize])),
        0xA1..=0xFF => Some(c as char),
        _ => None,
    }
}

/// Maps a glyph name to text, appending to `out`. Handles `uniXXXX`,
/// `uXXXX`, ligature names joined by `_`, suffixes like `.sc`, and the
/// names of the Latin characters documents actually use.
pub(crate) fn glyph_unicode(name: &[u8], out: &mut String) -> bool {
    let Ok(name) = std::str::from_utf8(name) else {
        return false;
    };
    let base = name.split('.').next().unwrap_or("");
    if base.is_empty() {
        return false;
    }
    if base.contains('_') {
        let mut any = false;
        for part in base.split('_') {
            any |= glyph_unicode(part.as_bytes(), out);
        }
        return any;
    }
    if let Some(hex) = base.strip_prefix("uni") {
        if hex.len() >= 4 && hex.len() % 4 == 0 && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            let units: Vec<u16> = (0..hex.len() / 4)
                .filter_map(|i| u16::from_str_radix(&hex[i * 4..i * 4 + 4], 16).ok())
                .collect();
            out.push_str(&String::from_utf16_lossy(&units));
            return true;
        }
    }
    if let Some(hex) = base.strip_prefix('u') {
        if (4..=6).contains(&hex.len()) && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            if let Some(c) = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                out.push(c);
                return true;
            }
        }
    }
    let found = position(ASCII_NAMES, base)
        .map(|i| 0x20 + i as u32)
        .or_else(|| position(LATIN1_NAMES, base).map(|i| 0xA0 + i as u32))
        .or_else(|| position(WIN_NAMES, base).map(|i| u32::from(WIN_80[i])))
        .or_else(|| {
            EXTRA_NAMES
                .iter()
                .find(|(n, _)| *n == base)
                .map(|(_, u)| u32::from(*u))
        });
    match found.and_then(char::from_u32) {
        Some(c) => {
            out.push(c);
            true
        }
        None => false,
    }
}

fn position(list: &str, name: &str) -> Option<usize> {
    list.split(' ').position(|n| n == name)
}

const ASCII_NAMES: &str = "space exclam quotedbl numbersign dollar percent ampersand quotesingle \
parenleft parenright asterisk plus comma hyphen period slash zero one two three four five six seven \
eight nine colon semicolon less equal greater question at A B C D E F G H I J K L M N O P Q R S T U V \
W X Y Z bracketleft backslash bracketright asciicircum underscore grave a b c d e f g h i j k l m n o p \
q r s t u v w x y z braceleft bar braceright asciitilde";

const LATIN1_NAMES: &str = "nbspace exclamdown cent sterling currency yen brokenbar section dieresis \
copyright ordfeminine guillemotleft logicalnot sfthyphen registered macron degree plusminus twosuperior \
threesuperior acute mu paragraph periodcentered cedilla onesuperior ordmasculine guillemotright \
onequarter onehalf threequarters questiondown Agrave Aacute Acircumflex Atilde Adieresis Aring AE \
Ccedilla Egrave Eacute Ecircumflex Edieresis Igrave Iacute Icircumflex Idieresis Eth Ntilde Ograve \
Oacute Ocircumflex Otilde Odieresis multiply Oslash Ugrave Uacute Ucircumflex Udieresis Yacute Thorn \
germandbls agrave aacute acircumflex atilde adieresis aring ae ccedilla egrave eacute ecircumflex \
edieresis igrave iacute icircumflex idieresis eth ntilde ograve oacute ocircumflex otilde odieresis \
divide oslash ugrave uacute ucircumflex udieresis yacute thorn ydieresis";

/// Names for WinAnsi 0x80..0x9F in order; `-` marks unused codes.
const WIN_NAMES: &str = "Euro - quotesinglbase florin quotedblbase ellipsis dagger daggerdbl \
circumflex perthousand Scaron guilsinglleft OE - Zcaron - - quoteleft quoteright quotedblleft \
quotedblright bullet endash emdash tilde trademark scaron guilsinglright oe - zcaron Ydieresis";

const WIN_80: [u16; 32] = [
    0x20AC, 0x2022, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0x2022, 0x017D, 0x2022, 0x2022, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x2022, 0x017E, 0x0178,
];

const EXTRA_NAMES: &[(&str, u16)] = &[
    ("fi", 0xFB01),
    ("fl", 0xFB02),
    ("ff", 0xFB00),
    ("ffi", 0xFB03),
    ("ffl", 0xFB04),
    ("dotlessi", 0x0131),
    ("Lslash", 0x0141),
    ("lslash", 0x0142),
    ("fraction", 0x2044),
    ("minus", 0x2212),
    ("breve", 0x02D8),
    ("caron", 0x02C7),
    ("dotaccent", 0x02D9),
    ("hungarumlaut", 0x02DD),
    ("ogonek", 0x02DB),
    ("ring", 0x02DA),
    ("space", 0x0020),
    ("nonbreakingspace", 0x00A0),
    ("middot", 0x00B7),
    ("Omega", 0x03A9),
    ("Delta", 0x2206),
    ("mu", 0x03BC),
    ("pi", 0x03C0),
    ("arrowright", 0x2192),
    ("arrowleft", 0x2190),
    ("checkmark", 0x2713),
    ("lozenge", 0x25CA),
    ("notequal", 0x2260),
    ("lessequal", 0x2264),
    ("greaterequal", 0x2265),
    ("infinity", 0x221E),
    ("Gcaron", 0x01E6),
    ("gcaron", 0x01E7),
    ("Ccaron", 0x010C),
    ("ccaron", 0x010D),
    ("Rcaron", 0x0158),
    ("rcaron", 0x0159),
    ("Ecaron", 0x011A),
    ("ecaron", 0x011B),
];

const STANDARD_HIGH: &[(u8, u16)] = &[
    (0xA1, 0x00A1),
    (0xA2, 0x00A2),
    (0xA3, 0x00A3),
    (0xA4, 0x2044),
    (0xA5, 0x00A5),
    (0xA6, 0x0192),
    (0xA7, 0x00A7),
    (0xA8, 0x00A4),
    (0xA9, 0x0027),
    (0xAA, 0x201C),
    (0xAB, 0x00AB),
    (0xAC, 0x2039),
    (0xAD, 0x203A),
    (0xAE, 0xFB01),
    (0xAF, 0xFB02),
    (0xB1, 0x2013),
    (0xB2, 0x2020),
    (0xB3, 0x2021),
    (0xB4, 0x00B7),
    (0xB6, 0x00B6),
    (0xB7, 0x2022),
    (0xB8, 0x201A),
    (0xB9, 0x201E),
    (0xBA, 0x201D),
    (0xBB, 0x00BB),
    (0xBC, 0x2026),
    (0xBD, 0x2030),
    (0xBF, 0x00BF),
    (0xC1, 0x0060),
    (0xC2, 0x00B4),
    (0xC3, 0x02C6),
    (0xC4, 0x02DC),
    (0xC5, 0x00AF),
    (0xC6, 0x02D8),
    (0xC7, 0x02D9),
    (0xC8, 0x00A8),
    (0xCA, 0x02DA),
    (0xCB, 0x00B8),
    (0xCD, 0x02DD),
    (0xCE, 0x02DB),
    (0xCF, 0x02C7),
    (0xD0, 0x2014),
    (0xE1, 0x00C6),
    (0xE3, 0x00AA),
    (0xE8, 0x0141),
    (0xE9, 0x00D8),
    (0xEA, 0x0152),
    (0xEB, 0x00BA),
    (0xF1, 0x00E6),
    (0xF5, 0x0131),
    (0xF8, 0x0142),
    (0xF9, 0x00F8),
    (0xFA, 0x0153),
    (0xFB, 0x00DF),
];

const MAC_ROMAN_HIGH: &str = "ÄÅÇÉÑÖÜáàâäãåçéèêëíìîïñóòôöõúùûü†°¢£§•¶ß®©™´¨≠ÆØ∞±≤≥¥µ∂∑∏π∫ªºΩæø\
¿¡¬√ƒ≈∆«»…\u{A0}ÀÃÕŒœ–—“”‘’÷◊ÿŸ⁄€‹›ﬁﬂ‡·‚„‰ÂÊÁËÈÍÎÏÌÓÔ\u{F8FF}ÒÚÛÙıˆ˜¯˘˙˚¸˝˛ˇ";

const PDFDOC_18: [u16; 8] = [
    0x02D8, 0x02C7, 0x02C6, 0x02D9, 0x02DD, 0x02DB, 0x02DA, 0x02DC,
];

const PDFDOC_80: [u16; 33] = [
    0x2022, 0x2020, 0x2021, 0x2026, 0x2014, 0x2013, 0x0192, 0x2044, 0x2039, 0x203A, 0x2212, 0x2030,
    0x201E, 0x201C, 0x201D, 0x2018, 0x2019, 0x201A, 0x2122, 0xFB01, 0xFB02, 0x0141, 0x0152, 0x0160,
    0x0178, 0x017D, 0x0131, 0x0142, 0x0153, 0x0161, 0x017E, 0xFFFD, 0x20AC,
];

// Advance widths of the standard fonts for ASCII 32..126, in units of 4/1000
// em, from the published font metrics. Old PDFs omit /Widths for these fonts,
// and word and column gaps cannot be judged without some width.
const HELVETICA: [u8; 95] = [
    70, 70, 89, 139, 139, 222, 167, 48, 83, 83, 97, 146, 70, 83, 70, 70, 139, 139, 139, 139, 139,
    139, 139, 139, 139, 139, 70, 70, 146, 146, 146, 139, 254, 167, 167, 180, 180, 167, 153, 194,
    180, 70, 125, 167, 139, 208, 180, 194, 167, 194, 180, 167, 153, 180, 167, 236, 167, 167, 153,
    70, 70, 70, 117, 139, 83, 139, 139, 125, 139, 139, 70, 139, 139, 56, 56, 125, 56, 208, 139,
    139, 139, 139, 83, 125, 70, 139, 125, 180, 125, 125, 125, 84, 65, 84, 146,
];
const HELVETICA_BOLD: [u8; 95] = [
    70, 83, 118, 139, 139, 222, 180, 60, 83, 83, 97, 146, 70, 83, 70, 70, 139, 139, 139, 139, 139,
    139, 139, 139, 139, 139, 83, 83, 146, 146, 146, 153, 244, 180, 180, 180, 180, 167, 153, 194,
    180, 70, 139, 180, 153, 208, 180, 194, 167, 194, 180, 167, 153, 180, 167, 236, 167, 167, 153,
    83, 70, 83, 146, 139, 83, 139, 153, 139, 153, 139, 83, 153, 153, 70, 70, 139, 70, 222, 153,
    153, 153, 153, 97, 139, 83, 153, 139, 194, 139, 139, 125, 97, 70, 97, 146,
];
const TIMES: [u8; 95] = [
    62, 83, 102, 125, 125, 208, 194, 45, 83, 83, 125, 141, 62, 83, 62, 70, 125, 125, 125, 125, 125,
    125, 125, 125, 125, 125, 70, 70, 141, 141, 141, 111, 230, 180, 167, 167, 180, 153, 139, 180,
    180, 83, 97, 180, 153, 222, 180, 180, 139, 180, 167, 139, 153, 180, 180, 236, 180, 180, 153,
    83, 70, 83, 117, 125, 83, 111, 125, 111, 125, 111, 83, 125, 125, 70, 70, 125, 70, 194, 125,
    125, 125, 125, 83, 97, 70, 125, 125, 180, 125, 125, 111, 120, 50, 120, 135,
];
const TIMES_BOLD: [u8; 95] = [
    62, 83, 139, 125, 125, 250, 208, 70, 83, 83, 125, 142, 62, 83, 62, 70, 125, 125, 125, 125, 125,
    125, 125, 125, 125, 125, 83, 83, 142, 142, 142, 125, 232, 180, 167, 180, 180, 167, 153, 194,
    194, 97, 125, 194, 167, 236, 180, 194, 153, 194, 180, 139, 167, 180, 180, 250, 180, 180, 167,
    83, 70, 83, 145, 125, 83, 125, 139, 111, 139, 111, 83, 125, 139, 70, 83, 139, 70, 208, 139,
    125, 139, 139, 111, 97, 83, 139, 125, 180, 125, 125, 111, 98, 55, 98, 130,
];
