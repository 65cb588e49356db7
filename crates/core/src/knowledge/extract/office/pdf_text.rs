//! Content-stream interpretation and layout: turns positioned glyphs back
//! into lines, paragraphs, headings, list items and table rows.

use std::cell::RefCell;
use std::rc::Rc;

use super::pdf::{find, is_ws, Dict, Doc, Item, Lexer, Obj, TextItem};
use super::pdf_font::{pdf_doc_char, Font};
use super::{
    err, render, Block, Budget, ExtractError, Extracted, FastMap, FastSet, DECOMPRESS_BUDGET,
};

type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// Gap (in font sizes) above which two glyphs are separate words.
const SPACE_GAP: f64 = 0.15;
/// Gap above which two pieces of one line are separate table cells. Word
/// gaps, even in loosely justified text, stay well below a font size, while
/// cells are separated by padding on both sides plus the unused column width.
const CELL_GAP: f64 = 1.0;
/// Limits that keep hostile content streams from running forever.
const MAX_OPS: usize = 50_000_000;
const MAX_GLYPHS: usize = 20_000_000;
const MAX_PAGES: usize = 100_000;
const MAX_FORM_DEPTH: u32 = 12;

fn mul(a: &Matrix, b: &Matrix) -> Matrix {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    ]
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

pub(crate) fn extract(bytes: &[u8]) -> Result<Extracted, ExtractError> {
    let head = &bytes[..bytes.len().min(1024)];
    if find(head, b"%PDF-", 0).is_none() && find(bytes, b" obj", 0).is_none() {
        return err("the file is not a PDF: it has no %PDF header");
    }
    let budget = Budget::new(DECOMPRESS_BUDGET);
    let doc = Doc::open(bytes, &budget);
    if doc
        .trailer
        .get(b"Encrypt")
        .is_some_and(|e| !matches!(doc.resolve(e), Obj::Null))
    {
        return err("the PDF is encrypted (password-protected or copy-protected), so its text cannot be read");
    }
    let truncated = doc.repaired && looks_truncated(bytes);
    let root = doc.trailer.get(b"Root").map(|r| doc.resolve(r));
    let Some(root) = root.as_ref().and_then(Obj::as_dict) else {
        if truncated {
            return err("the PDF is truncated: the file ends early, so part of it is missing");
        }
        return err("the PDF is damaged: no cross-reference table or objects were found");
    };
    if truncated {
        // Text from the surviving part would silently index half a document.
        return err("the PDF is truncated: the file ends early, so part of it is missing");
    }
    let pages = collect_pages(&doc, root.get(b"Pages"));
    if pages.is_empty() {
        return err("the PDF is damaged: it has no readable pages");
    }

    let mut ex = Extractor::new(&doc);
    let mut page_lines = Vec::new();
    for p in &pages {
        if ex.ops > MAX_OPS || ex.glyphs > MAX_GLYPHS {
            break;
        }
        page_lines.push(ex.page(p));
    }
    let blocks = build_blocks(&page_lines);
    let text = render(&blocks);
    if text.trim().is_empty() {
        if budget.exhausted.get() {
            return err(
                "the PDF expands to more than 64 MiB of data; it may be a decompression bomb",
            );
        }
        if ex.glyphs > 0 && ex.mapped == 0 {
            return err("the PDF's fonts have no Unicode mapping, so its text cannot be extracted");
        }
        return err("the PDF has no extractable text (it may be scanned images)");
    }
    let title = doc
        .trailer
        .get(b"Info")
        .map(|i| doc.resolve(i))
        .and_then(|i| {
            i.as_dict()
                .and_then(|d| d.get(b"Title").map(|t| doc.resolve(t)))
        })
        .and_then(|t| match t {
            Obj::Str(s) => Some(text_string(&s)),
            _ => None,
        })
        .map(|t| super::tidy(&t))
        .filter(|t| !t.is_empty());
    Ok(Extracted { title, text })
}

/// A file that needed repair and has no end-of-file marker after its last
/// object was cut off (an interrupted upload or download).
fn looks_truncated(bytes: &[u8]) -> bool {
    let tail_obj = rfind_any(bytes, b"endobj");
    let eof = rfind_any(bytes, b"%%EOF");
    match (eof, tail_obj) {
        (None, _) => true,
        (Some(e), Some(o)) => e < o,
        (Some(_), None) => false,
    }
}

fn rfind_any(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Decodes a PDF text string (UTF-16BE or UTF-8 with BOM, else PDFDocEncoding).
fn text_string(s: &[u8]) -> String {
    if let Some(rest) = s.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = rest
            .chunks(2)
            .map(|c| (u16::from(c[0]) << 8) | u16::from(c.get(1).copied().unwrap_or(0)))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(rest) = s.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    s.iter().filter_map(|&c| pdf_doc_char(c)).collect()
}

struct Page {
    dict: Rc<Dict>,
    resources: Option<Obj>,
    rotate: i64,
    media_box: Option<Obj>,
}

fn collect_pages(doc: &Doc, root: Option<&Obj>) -> Vec<Page> {
    let mut out = Vec::new();
    let Some(root) = root else { return out };
    let mut seen = FastSet::default();
    let mut stack: Vec<(Obj, Option<Obj>, i64, Option<Obj>)> = vec![(root.clone(), None, 0, None)];
    while let Some((node, res, rot, mbox)) = stack.pop() {
        if out.len() >= MAX_PAGES || seen.len() > MAX_PAGES * 2 {
            break;
        }
        if let Obj::Ref(n) = node {
            if !seen.insert(n) {
                continue;
            }
        }
        let Obj::Dict(d) = doc.resolve(&node) else {
            continue;
        };
        let res = d.get(b"Resources").cloned().or(res);
        let rot = d
            .get(b"Rotate")
            .and_then(|r| doc.resolve(r).as_i64())
            .unwrap_or(rot);
        let mbox = d.get(b"CropBox").or(d.get(b"MediaBox")).cloned().or(mbox);
        let kids = d.get(b"Kids").map(|k| doc.resolve(k));
        let is_tree = d.get(b"Type").and_then(Obj::as_name) == Some(b"Pages");
        match kids.as_ref().and_then(Obj::as_array) {
            Some(kids) if is_tree || d.get(b"Contents").is_none() => {
                for k in kids.iter().rev() {
                    stack.push((k.clone(), res.clone(), rot, mbox.clone()));
                }
            }
            _ => out.push(Page {
                dict: d,
                resources: res,
                rotate: rot,
                media_box: mbox,
            }),
        }
    }
    out
}

#[derive(Clone)]
struct GState {
    ctm: Matrix,
    font: Option<Rc<Font>>,
    size: f64,
    char_space: f64,
    word_space: f64,
    hscale: f64,
    leading: f64,
    rise: f64,
}

/// A run of glyphs on one line; coordinates are in its direction's frame.
struct Span {
    x0: f64,
    x1: f64,
    y: f64,
    h: f64,
    text: String,
    frame: i32,
    bold: bool,
    /// Where the last glyph started, to spot overprinted copies.
    last_at: f64,
}

/// A stretch of a line without wide gaps: a table cell, or the whole line.
struct Seg {
    x0: f64,
    text: String,
}

struct Line {
    y: f64,
    /// Size of the text that carries most of the line's characters.
    h: f64,
    x0: f64,
    x1: f64,
    segs: Vec<Seg>,
    bold: bool,
    frame: i32,
    /// Drawn after a bullet shape, so it starts a list item.
    dot: bool,
}

impl Line {
    fn text(&self) -> String {
        let parts: Vec<&str> = self.segs.iter().map(|s| s.text.as_str()).collect();
        parts.join(" | ")
    }
    fn cells(&self) -> bool {
        self.segs.len() > 1
    }
}

/// A page's lines and the horizontal extent of its page box.
struct PageLines {
    lines: Vec<Line>,
    box_x: Option<(f64, f64)>,
}

struct Extractor<'d, 'a> {
    doc: &'d Doc<'a>,
    fonts: RefCell<FastMap<u32, Rc<Font>>>,
    forms: FastMap<u32, Rc<Vec<u8>>>,
    fallback: Rc<Font>,
    spans: Vec<Span>,
    /// Small filled shapes: browsers and some editors draw list bullets as
    /// paths rather than text.
    dots: Vec<(f64, f64, f64)>,
    ops: usize,
    glyphs: usize,
    mapped: usize,
    scratch: String,
}

impl<'d, 'a> Extractor<'d, 'a> {
    fn new(doc: &'d Doc<'a>) -> Self {
        Extractor {
            doc,
            fonts: RefCell::new(FastMap::default()),
            forms: FastMap::default(),
            fallback: Rc::new(Font::fallback()),
            spans: Vec::new(),
            dots: Vec::new(),
            ops: 0,
            glyphs: 0,
            mapped: 0,
            scratch: String::new(),
        }
    }

    fn page(&mut self, p: &Page) -> PageLines {
        let doc = self.doc;
        let mut data = Vec::new();
        let contents = p.dict.get(b"Contents").map(|c| doc.resolve(c));
        let parts: Vec<Obj> = match contents {
            Some(Obj::Array(a)) => a.iter().map(|c| doc.resolve(c)).collect(),
            Some(o) => vec![o],
            None => Vec::new(),
        };
        for part in parts {
            if let Obj::Stream(s) = part {
                if let Some(d) = doc.decode_stream(&s) {
                    data.extend_from_slice(&d);
                    // Streams of one page split only between tokens.
                    data.push(b'\n');
                }
            }
        }
        // Apply the page rotation so that "up" is up as the reader sees it.
        let ctm = match p.rotate.rem_euclid(360) {
            90 => [0.0, -1.0, 1.0, 0.0, 0.0, 0.0],
            180 => [-1.0, 0.0, 0.0, -1.0, 0.0, 0.0],
            270 => [0.0, 1.0, -1.0, 0.0, 0.0, 0.0],
            _ => IDENTITY,
        };
        let res = p.resources.as_ref().map(|r| doc.resolve(r));
        let mut active = FastSet::default();
        self.run(
            &data,
            res.as_ref().and_then(Obj::as_dict),
            ctm,
            0,
            &mut active,
        );
        let spans = std::mem::take(&mut self.spans);
        let dots = std::mem::take(&mut self.dots);
        let corners: Vec<f64> = p
            .media_box
            .as_ref()
            .map(|b| doc.resolve(b))
            .and_then(|b| {
                b.as_array()
                    .map(|a| a.iter().filter_map(|v| doc.resolve(v).as_f64()).collect())
            })
            .unwrap_or_default();
        let box_x = (corners.len() == 4).then(|| {
            let xs = [(corners[0], corners[1]), (corners[2], corners[3])]
                .map(|(x, y)| x * ctm[0] + y * ctm[2]);
            (xs[0].min(xs[1]), xs[0].max(xs[1]))
        });
        let mut lines = layout(spans);
        mark_bullets(&mut lines, &dots);
        PageLines { lines, box_x }
    }

    fn font(&self, res: Option<&Dict>, name: &[u8]) -> Rc<Font> {
        let doc = self.doc;
        let entry = res
            .and_then(|r| r.get(b"Font"))
            .map(|f| doc.resolve(f))
            .and_then(|f| f.as_dict().and_then(|d| d.get(name).cloned()));
        match entry {
            Some(Obj::Ref(n)) => {
                if let Some(f) = self.fonts.borrow().get(&n) {
                    return f.clone();
                }
                let f = Rc::new(Font::load(doc, &Obj::Ref(n)));
                self.fonts.borrow_mut().insert(n, f.clone());
                f
            }
            Some(o) => Rc::new(Font::load(doc, &o)),
            None => self.fallback.clone(),
        }
    }

    fn run(
        &mut self,
        data: &[u8],
        res: Option<&Dict>,
        ctm: Matrix,
        depth: u32,
        active: &mut FastSet<u32>,
    ) {
        let mut lx = Lexer::new(data, 0, false);
        let mut ops: Vec<Obj> = Vec::new();
        let mut gs = GState {
            ctm,
            font: None,
            size: 0.0,
            char_space: 0.0,
            word_space: 0.0,
            hscale: 1.0,
            leading: 0.0,
            rise: 0.0,
        };
        let mut stack: Vec<GState> = Vec::new();
        let mut tm = IDENTITY;
        let mut tlm = IDENTITY;
        let mut arena: Vec<u8> = Vec::new();
        let mut texts: Vec<TextItem> = Vec::new();
        let mut path = PathBox::default();
        loop {
            lx.skip_ws();
            if lx.buf.get(lx.pos) == Some(&b'[') {
                // Arrays only matter as TJ operands; read them without
                // building objects. A placeholder keeps operand counts right.
                lx.pos += 1;
                arena.clear();
                texts.clear();
                lx.text_array(&mut arena, &mut texts);
                if ops.len() >= 32 {
                    ops.clear();
                }
                ops.push(Obj::Null);
                continue;
            }
            let op = match lx.item(0) {
                Item::Eof => break,
                Item::Obj(o) => {
                    // Operators take at most six operands; more is garbage.
                    if ops.len() >= 32 {
                        ops.clear();
                    }
                    ops.push(o);
                    continue;
                }
                Item::Close => continue,
                Item::Kw(k) => k,
            };
            self.ops += 1;
            if self.ops > MAX_OPS || self.glyphs > MAX_GLYPHS {
                break;
            }
            let num = |i: usize| ops.get(i).and_then(Obj::as_f64).map_or(0.0, finite);
            match op {
                b"q" if stack.len() < 256 => {
                    stack.push(gs.clone());
                }
                b"Q" => {
                    if let Some(g) = stack.pop() {
                        gs = g;
                    }
                }
                b"cm" if ops.len() >= 6 => {
                    let m = [num(0), num(1), num(2), num(3), num(4), num(5)];
                    gs.ctm = mul(&m, &gs.ctm);
                }
                b"BT" => {
                    tm = IDENTITY;
                    tlm = IDENTITY;
                }
                b"Tf" => {
                    if let Some(Obj::Name(n)) = ops.first() {
                        gs.font = Some(self.font(res, n));
                    }
                    gs.size = num(1);
                }
                b"Tc" => gs.char_space = num(0),
                b"Tw" => gs.word_space = num(0),
                b"Tz" => gs.hscale = num(0) / 100.0,
                b"TL" => gs.leading = num(0),
                b"Ts" => gs.rise = num(0),
                b"Td" | b"TD" => {
                    if op == b"TD" {
                        gs.leading = -num(1);
                    }
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, num(0), num(1)], &tlm);
                    tm = tlm;
                }
                b"Tm" if ops.len() >= 6 => {
                    tlm = [num(0), num(1), num(2), num(3), num(4), num(5)];
                    tm = tlm;
                }
                b"T*" => {
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -gs.leading], &tlm);
                    tm = tlm;
                }
                b"Tj" | b"'" | b"\"" => {
                    if op != b"Tj" {
                        if op == b"\"" {
                            gs.word_space = num(0);
                            gs.char_space = num(1);
                        }
                        tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -gs.leading], &tlm);
                        tm = tlm;
                    }
                    if let Some(Obj::Str(s)) = ops.last() {
                        self.show(&gs, &mut tm, s);
                    }
                }
                b"TJ" => {
                    for item in &texts {
                        match *item {
                            TextItem::Text(a, b) => {
                                if let Some(s) = arena.get(a..b) {
                                    self.show(&gs, &mut tm, s);
                                }
                            }
                            TextItem::Adjust(adj) => {
                                let tx = -finite(adj) / 1000.0 * gs.size * gs.hscale;
                                tm[4] += tx * tm[0];
                                tm[5] += tx * tm[1];
                            }
                        }
                    }
                }
                b"Do" => {
                    if let Some(Obj::Name(n)) = ops.first() {
                        self.xobject(res, n, &gs.ctm, depth, active);
                    }
                }
                b"m" | b"l" if ops.len() >= 2 => path.add(&gs.ctm, num(0), num(1)),
                b"c" if ops.len() >= 6 => {
                    for i in [0, 2, 4] {
                        path.add(&gs.ctm, num(i), num(i + 1));
                    }
                }
                b"v" | b"y" if ops.len() >= 4 => {
                    path.add(&gs.ctm, num(0), num(1));
                    path.add(&gs.ctm, num(2), num(3));
                }
                b"re" if ops.len() >= 4 => {
                    let (x, y, w, h) = (num(0), num(1), num(2), num(3));
                    for (px, py) in [(x, y), (x + w, y), (x, y + h), (x + w, y + h)] {
                        path.add(&gs.ctm, px, py);
                    }
                }
                b"f" | b"F" | b"f*" | b"B" | b"B*" | b"b" | b"b*" => {
                    if let Some(dot) = path.dot() {
                        if self.dots.len() < 100_000 {
                            self.dots.push(dot);
                        }
                    }
                    path = PathBox::default();
                }
                b"S" | b"s" | b"n" => path = PathBox::default(),
                b"BI" => skip_inline_image(&mut lx),
                _ => {}
            }
            ops.clear();
            texts.clear();
        }
    }

    fn xobject(
        &mut self,
        res: Option<&Dict>,
        name: &[u8],
        ctm: &Matrix,
        depth: u32,
        active: &mut FastSet<u32>,
    ) {
        let doc = self.doc;
        if depth >= MAX_FORM_DEPTH {
            return;
        }
        let entry = res
            .and_then(|r| r.get(b"XObject"))
            .map(|x| doc.resolve(x))
            .and_then(|x| x.as_dict().and_then(|d| d.get(name).cloned()));
        let Some(Obj::Ref(num)) = entry else { return };
        // A form that draws itself, directly or not, would recurse forever.
        if active.contains(&num) {
            return;
        }
        let Obj::Stream(s) = doc.get(num) else { return };
        if s.dict.get(b"Subtype").and_then(Obj::as_name) != Some(b"Form") {
            return;
        }
        let data = match self.forms.get(&num) {
            Some(d) => d.clone(),
            None => {
                // Cached: logos and headers repeat on every page, and decoding
                // them again would also drain the decompression budget.
                let d = Rc::new(doc.decode_stream(&s).unwrap_or_default());
                self.forms.insert(num, d.clone());
                d
            }
        };
        let m: Vec<f64> = s
            .dict
            .get(b"Matrix")
            .and_then(Obj::as_array)
            .map(|a| a.iter().map(|v| v.as_f64().map_or(0.0, finite)).collect())
            .unwrap_or_default();
        let m = if m.len() == 6 {
            [m[0], m[1], m[2], m[3], m[4], m[5]]
        } else {
            IDENTITY
        };
        let own = s.dict.get(b"Resources").map(|r| doc.resolve(r));
        let res = own.as_ref().and_then(Obj::as_dict).or(res);
        active.insert(num);
        self.run(&data, res, mul(&m, ctm), depth + 1, active);
        active.remove(&num);
    }

    fn show(&mut self, gs: &GState, tm: &mut Matrix, s: &[u8]) {
        let font = gs.font.clone().unwrap_or_else(|| self.fallback.clone());
        let size = gs.size;
        // Within one string only the translation of the text matrix moves,
        // so the direction, frame and size are worked out once.
        let m = mul(&[tm[0], tm[1], tm[2], tm[3], 0.0, 0.0], &gs.ctm);
        let h = finite(size.abs() * (m[2] * m[2] + m[3] * m[3]).sqrt() * font.height_factor);
        // Positions are taken in the frame of the text direction, so rotated
        // text forms lines just like upright text.
        let len = (m[0] * m[0] + m[1] * m[1]).sqrt();
        let (dx, dy) = if len > 1e-9 {
            (m[0] / len, m[1] / len)
        } else {
            (1.0, 0.0)
        };
        let mirrored = m[0] * m[3] - m[1] * m[2] < 0.0;
        let angle = if dy == 0.0 && dx > 0.0 {
            0
        } else {
            finite(dy.atan2(dx).to_degrees()).round() as i32
        };
        let frame = match (angle, mirrored) {
            (0, false) => 0,
            (a, true) => a + 1000,
            (a, false) => a,
        };
        let ctm = gs.ctm;
        font.codes(s, |code, nbytes| {
            self.glyphs += 1;
            let w0 = font.width(code);
            let single_space = nbytes == 1 && code == 32;
            let tx = (w0 * size + gs.char_space + if single_space { gs.word_space } else { 0.0 })
                * gs.hscale;
            let ox = tm[4] + gs.rise * tm[2];
            let oy = tm[5] + gs.rise * tm[3];
            let x = ox * ctm[0] + oy * ctm[2] + ctm[4];
            let y = ox * ctm[1] + oy * ctm[3] + ctm[5];
            let mut text = std::mem::take(&mut self.scratch);
            text.clear();
            if font.unicode(code, &mut text) {
                self.mapped += 1;
            }
            let is_space = !text.is_empty() && text.chars().all(char::is_whitespace);
            // Spaces reach to the next glyph so justified word gaps are not
            // mistaken for column gaps; but a space stretched past a cell
            // gap by word spacing is how some writers (Ghostscript) place
            // table columns, so that one stays a gap.
            let ext = match is_space {
                true if (tx * len).abs() >= CELL_GAP * h => 0.0,
                true => tx,
                false => w0 * size * gs.hscale,
            };
            let along = x * dx + y * dy;
            let g = Glyph {
                along: finite(along),
                end: finite(along + ext * len),
                across: finite(y * dx - x * dy),
                h,
                frame,
                bold: font.bold,
            };
            self.push_glyph(&g, &text);
            self.scratch = text;
            tm[4] += tx * tm[0];
            tm[5] += tx * tm[1];
        });
    }

    fn push_glyph(&mut self, g: &Glyph, text: &str) {
        if text.is_empty() {
            return;
        }
        let h = if g.h > 0.01 { g.h } else { 1.0 };
        let is_space = text.chars().all(char::is_whitespace);
        if let Some(sp) = self.spans.last_mut() {
            let hh = sp.h.max(h);
            let gap = g.along - sp.x1;
            let joins = sp.frame == g.frame
                && (g.across - sp.y).abs() < 0.35 * hh
                && gap > -0.6 * hh
                && gap < 0.8 * hh;
            // Fake bold prints each glyph twice at a tiny offset: the copy
            // starts where the previous glyph started and repeats its text.
            let overprint = sp.frame == g.frame
                && (g.along - sp.last_at).abs() < 0.15 * hh
                && (g.across - sp.y).abs() < 0.15 * hh;
            if overprint && !is_space && sp.text.ends_with(text) {
                return;
            }
            if joins {
                if is_space {
                    if !sp.text.ends_with(' ') {
                        sp.text.push(' ');
                    }
                } else {
                    if gap > SPACE_GAP * hh && !sp.text.ends_with(' ') {
                        sp.text.push(' ');
                    }
                    sp.text.push_str(text);
                    sp.bold &= g.bold;
                    sp.last_at = g.along;
                }
                sp.x1 = sp.x1.max(g.end);
                return;
            }
        }
        if is_space {
            return;
        }
        let t = text.to_string();
        self.spans.push(Span {
            x0: g.along,
            x1: g.end.max(g.along),
            y: g.across,
            h,
            text: t,
            frame: g.frame,
            bold: g.bold,
            last_at: g.along,
        });
    }
}

/// Device-space bounding box of the path being built.
#[derive(Default)]
struct PathBox {
    bbox: Option<(f64, f64, f64, f64)>,
    points: usize,
}

impl PathBox {
    fn add(&mut self, ctm: &Matrix, x: f64, y: f64) {
        let (dx, dy) = (
            x * ctm[0] + y * ctm[2] + ctm[4],
            x * ctm[1] + y * ctm[3] + ctm[5],
        );
        self.points += 1;
        self.bbox = Some(match self.bbox {
            None => (dx, dy, dx, dy),
            Some((a, b, c, d)) => (a.min(dx), b.min(dy), c.max(dx), d.max(dy)),
        });
    }

    /// Centre and size of a filled shape small and square enough to be a bullet.
    fn dot(&self) -> Option<(f64, f64, f64)> {
        let (x0, y0, x1, y1) = self.bbox?;
        let (w, h) = (x1 - x0, y1 - y0);
        let size = w.max(h);
        let square = w > 0.0 && h > 0.0 && w < 2.0 * h && h < 2.0 * w;
        (square && size <= 10.0 && self.points <= 200).then_some((
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0,
            size,
        ))
    }
}

/// Marks lines that start just right of a small dot drawn at their height.
fn mark_bullets(lines: &mut [Line], dots: &[(f64, f64, f64)]) {
    if dots.is_empty() {
        return;
    }
    for l in lines.iter_mut().filter(|l| l.frame == 0) {
        let h = l.h;
        l.dot = dots.iter().any(|&(cx, cy, size)| {
            size <= 0.8 * h
                && cx < l.x0
                && cx > l.x0 - 3.0 * h
                && cy > l.y - 0.1 * h
                && cy < l.y + 0.8 * h
        });
    }
}

/// One glyph in the coordinates of its text direction.
struct Glyph {
    along: f64,
    end: f64,
    across: f64,
    h: f64,
    /// Direction class: the rounded angle in degrees, plus 1000 when mirrored.
    frame: i32,
    bold: bool,
}

/// Appends glyph text, turning symbol-font private-use codes (as Word's
/// bullets come out) into real characters and dropping control codes.
fn skip_inline_image(lx: &mut Lexer) {
    // Skip the parameter dictionary up to the ID keyword.
    loop {
        match lx.item(0) {
            Item::Kw(b"ID") => break,
            Item::Eof => return,
            _ => {}
        }
    }
    lx.pos += 1;
    let buf = lx.buf;
    let mut from = lx.pos;
    // Binary data ends at an EI that stands alone between whitespace.
    while let Some(p) = find(buf, b"EI", from) {
        let before = p == 0 || is_ws(buf[p - 1]);
        let after = buf.get(p + 2).is_none_or(|&c| is_ws(c));
        if before && after {
            lx.pos = p + 2;
            return;
        }
        from = p + 1;
    }
    lx.pos = buf.len();
}

fn is_bullet(c: char) -> bool {
    matches!(
        c,
        '\u{2022}'
            | '\u{25E6}'
            | '\u{25AA}'
            | '\u{25A0}'
            | '\u{25CF}'
            | '\u{25CB}'
            | '\u{2023}'
            | '\u{2043}'
            | '\u{00B7}'
            | '\u{2219}'
            | '\u{27A2}'
            | '\u{2713}'
            | '\u{25C6}'
            | '\u{2756}'
    )
}

/// Size bucket used to compare font sizes across lines.
fn bucket(h: f64) -> i64 {
    (h * 2.0).round() as i64
}

fn layout(spans: Vec<Span>) -> Vec<Line> {
    let mut frames: FastMap<i32, Vec<Span>> = FastMap::default();
    for s in spans {
        frames.entry(s.frame).or_default().push(s);
    }
    // Upright text first; rotated text (stamps, axis labels, sideways
    // tables) follows as its own lines.
    let mut keys: Vec<i32> = frames.keys().copied().collect();
    keys.sort_unstable_by_key(|&k| (k != 0, k));
    let mut lines = Vec::new();
    for k in keys {
        if let Some(v) = frames.remove(&k) {
            layout_frame(v, k, &mut lines);
        }
    }
    lines
}

fn layout_frame(mut upright: Vec<Span>, frame: i32, lines: &mut Vec<Line>) {
    upright.sort_unstable_by(|a, b| b.y.total_cmp(&a.y).then(a.x0.total_cmp(&b.x0)));
    let mut groups: Vec<Vec<Span>> = Vec::new();
    let mut line_y = f64::NAN;
    let mut line_h: f64 = 0.0;
    for s in upright {
        // Half a font size of baseline tolerance keeps superscripts on their
        // line, but never more than the smaller text's own size.
        let tol = 0.5 * line_h.max(s.h).min(2.0 * line_h.min(s.h));
        match groups.last_mut() {
            Some(g) if (line_y - s.y).abs() <= tol => {
                line_h = line_h.max(s.h);
                g.push(s);
            }
            _ => {
                line_y = s.y;
                line_h = s.h;
                groups.push(vec![s]);
            }
        }
    }
    for mut g in groups {
        g.sort_unstable_by(|a, b| a.x0.total_cmp(&b.x0));
        let mut chars_by_size: FastMap<i64, (usize, f64)> = FastMap::default();
        for s in &g {
            let e = chars_by_size.entry(bucket(s.h)).or_insert((0, s.h));
            e.0 += s.text.chars().count();
        }
        // Gap thresholds follow the main text size, so a big bullet or a small
        // superscript does not distort them.
        let h = chars_by_size
            .values()
            .max_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)))
            .map_or(1.0, |v| v.1);
        let mut segs: Vec<Seg> = Vec::new();
        let mut prev: Option<&Span> = None;
        let mut kept = 0;
        for s in &g {
            let mut new_seg = prev.is_none();
            if let Some(p) = prev {
                // Fake bold draws the same text twice, slightly offset.
                if p.text == s.text && (s.x0 - p.x0).abs() < 0.3 * h {
                    continue;
                }
                let gap = s.x0 - p.x1;
                let bullet_first = kept == 1 && {
                    let t = p.text.trim();
                    t.chars().count() == 1 && t.chars().all(is_bullet)
                };
                let cur = segs.last_mut().map(|s| &mut s.text);
                if gap >= CELL_GAP * h && !bullet_first {
                    new_seg = true;
                } else if let Some(t) = cur {
                    if bullet_first
                        || (gap > SPACE_GAP * h && !t.ends_with(' ') && !s.text.starts_with(' '))
                    {
                        t.push(' ');
                    }
                }
            }
            if new_seg {
                segs.push(Seg {
                    x0: s.x0,
                    text: String::new(),
                });
            }
            if let Some(seg) = segs.last_mut() {
                seg.text.push_str(&s.text);
            }
            prev = Some(s);
            kept += 1;
        }
        let segs: Vec<Seg> = segs
            .into_iter()
            .map(|s| Seg {
                x0: s.x0,
                text: super::tidy(&s.text),
            })
            .filter(|s| !s.text.is_empty())
            .collect();
        if segs.is_empty() {
            continue;
        }
        let bold = g
            .iter()
            .filter(|s| !s.text.trim().is_empty())
            .all(|s| s.bold);
        let y = g.first().map_or(0.0, |s| s.y);
        let x0 = segs.first().map_or(0.0, |s| s.x0);
        let x1 = g.iter().map(|s| s.x1).fold(f64::MIN, f64::max);
        lines.push(Line {
            y,
            h,
            x0,
            x1,
            segs,
            bold,
            frame,
            dot: false,
        });
    }
}

/// How a line starts a list item: the marker's byte length and whether the
/// marker is kept (numbers carry meaning, bullets do not).
fn list_marker(text: &str) -> Option<(usize, bool)> {
    let first = text.chars().next()?;
    let rest = &text[first.len_utf8()..];
    if is_bullet(first) && !rest.trim().is_empty() {
        return Some((first.len_utf8(), false));
    }
    if matches!(first, '-' | '*' | '\u{2013}') && rest.starts_with(' ') {
        return Some((first.len_utf8(), false));
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let after = &text.as_bytes()[digits..];
        if matches!(after.first(), Some(b'.' | b')')) && after.get(1) == Some(&b' ') {
            return Some((0, true));
        }
    }
    None
}

struct Acc {
    item: bool,
    text: String,
    y: f64,
    h: f64,
    pitch: Option<f64>,
    x1: f64,
    x0: f64,
}

/// The table row most recently emitted, kept so that wrapped cell text on
/// the following lines can be folded back into its cell.
struct RowAcc {
    idx: usize,
    segs: Vec<Seg>,
    y: f64,
    h: f64,
    pitch: Option<f64>,
}

fn build_blocks(pages: &[PageLines]) -> Vec<Block> {
    // Body size: the size carrying the most characters.
    let mut weight: FastMap<i64, usize> = FastMap::default();
    for l in pages.iter().flat_map(|p| &p.lines) {
        *weight.entry(bucket(l.h)).or_default() +=
            l.segs.iter().map(|s| s.text.chars().count()).sum::<usize>();
    }
    let body = weight
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map_or(10.0, |(&b, _)| b as f64 / 2.0);
    let is_heading = |l: &Line| {
        !l.cells()
            && l.y.is_finite()
            && l.segs.iter().map(|s| s.text.chars().count()).sum::<usize>() <= 200
            && (l.h >= body * 1.15 || (l.bold && l.h >= body * 1.05))
    };
    let mut heading_sizes: Vec<i64> = pages
        .iter()
        .flat_map(|p| &p.lines)
        .filter(|l| is_heading(l))
        .map(|l| bucket(l.h))
        .collect();
    heading_sizes.sort_unstable_by(|a, b| b.cmp(a));
    heading_sizes.dedup();
    let level = |h: f64| -> u8 {
        let b = bucket(h);
        let rank = heading_sizes.iter().position(|&s| s <= b + 1).unwrap_or(0);
        rank.min(2) as u8 + 1
    };

    let mut blocks: Vec<Block> = Vec::new();
    let mut carry: Option<Acc> = None;
    for page in pages {
        let lines = &page.lines;
        let left = lines
            .iter()
            .map(|l| l.x0)
            .filter(|x| x.is_finite())
            .fold(f64::MAX, f64::min);
        let widest = lines
            .iter()
            .map(|l| l.x1)
            .filter(|x| x.is_finite())
            .fold(f64::MIN, f64::max);
        // Margins are usually symmetric, so the page box tells where full
        // lines end even on a page whose lines are all short.
        let right = match page.box_x {
            Some((bx0, bx1)) if bx1 > bx0 && left >= bx0 && left < bx1 => bx1 - (left - bx0),
            _ => widest,
        };
        let width = (right - left).max(1.0);
        // A paragraph cut by the page break may continue on this page.
        let mut cur: Option<Acc> = carry.take();
        let mut from_prev_page = cur.is_some();
        let mut row: Option<RowAcc> = None;
        let mut last_heading: Option<(f64, f64)> = None;
        for l in lines {
            if let Some(r) = row.as_mut() {
                if continues_row(r, l) {
                    for seg in &l.segs {
                        let target = r
                            .segs
                            .iter_mut()
                            .min_by(|a, b| (a.x0 - seg.x0).abs().total_cmp(&(b.x0 - seg.x0).abs()));
                        if let Some(t) = target {
                            t.text.push(' ');
                            t.text.push_str(&seg.text);
                        }
                    }
                    let joined: Vec<&str> = r.segs.iter().map(|s| s.text.as_str()).collect();
                    if let Some(b) = blocks.get_mut(r.idx) {
                        *b = Block::Row(joined.join(" | "));
                    }
                    r.y = l.y;
                    continue;
                }
            }
            if l.cells() {
                flush(&mut cur, &mut blocks);
                last_heading = None;
                let pitch = row.as_ref().map(|r| r.y - l.y).filter(|p| *p > 0.0);
                blocks.push(Block::Row(l.text()));
                let segs = l
                    .segs
                    .iter()
                    .map(|s| Seg {
                        x0: s.x0,
                        text: s.text.clone(),
                    })
                    .collect();
                row = Some(RowAcc {
                    idx: blocks.len() - 1,
                    segs,
                    y: l.y,
                    h: l.h,
                    pitch,
                });
                continue;
            }
            row = None;
            let text = l.text();
            if is_heading(l) {
                flush(&mut cur, &mut blocks);
                let lv = level(l.h);
                // A heading that wraps continues on the next line in the same size.
                if let (Some((hy, hh)), Some(Block::Heading(plv, t))) =
                    (last_heading, blocks.last_mut())
                {
                    if *plv == lv && (hy - l.y) < 1.3 * hh && (hh - l.h).abs() < 0.1 * hh {
                        t.push(' ');
                        t.push_str(&text);
                        last_heading = Some((l.y, l.h));
                        continue;
                    }
                }
                blocks.push(Block::Heading(lv, text));
                last_heading = Some((l.y, l.h));
                continue;
            }
            last_heading = None;
            if let Some((skip, _)) = list_marker(&text).or(l.dot.then_some((0, false))) {
                flush(&mut cur, &mut blocks);
                let rest = text[skip..].trim().to_string();
                cur = Some(Acc {
                    item: true,
                    text: rest,
                    y: l.y,
                    h: l.h,
                    pitch: None,
                    x1: l.x1,
                    x0: l.x0,
                });
                continue;
            }
            if let (true, Some(a)) = (from_prev_page, cur.as_mut()) {
                from_prev_page = false;
                let same_size = (a.h - l.h).abs() <= 0.15 * a.h.max(l.h);
                if same_size && text.chars().next().is_some_and(char::is_lowercase) {
                    join_line(&mut a.text, &text);
                    (a.y, a.x1) = (l.y, l.x1);
                    continue;
                }
            }
            if let Some(a) = cur.as_mut() {
                let gap = a.y - l.y;
                let same_size = (a.h - l.h).abs() <= 0.15 * a.h.max(l.h);
                let limit = a.pitch.map_or(1.75 * a.h.max(l.h), |p| p * 1.3);
                let prev_short = a.x1 < right - 0.2 * width;
                let ended = a.text.ends_with(['.', '!', '?', ':']);
                // List items continue only with lines indented past the marker.
                let item_ok = !a.item || l.x0 > a.x0 + 0.5 * a.h;
                if same_size && gap > 0.0 && gap <= limit && !(prev_short && ended) && item_ok {
                    join_line(&mut a.text, &text);
                    a.pitch.get_or_insert(gap);
                    a.y = l.y;
                    a.x1 = l.x1;
                    continue;
                }
            }
            flush(&mut cur, &mut blocks);
            cur = Some(Acc {
                item: false,
                text,
                y: l.y,
                h: l.h,
                pitch: None,
                x1: l.x1,
                x0: l.x0,
            });
        }
        match cur {
            Some(a) if !a.item && !a.text.ends_with(['.', '!', '?', ':']) => carry = Some(a),
            _ => flush(&mut cur, &mut blocks),
        }
    }
    flush(&mut carry, &mut blocks);
    blocks
}

/// Whether `l` is wrapped text of the cells of the row above: fewer pieces,
/// each starting under a cell, and either closer than rows are to each other
/// or missing the first column, which a new row would almost always fill.
fn continues_row(r: &RowAcc, l: &Line) -> bool {
    let gap = r.y - l.y;
    let h = l.h.max(r.h);
    let aligned = |s: &Seg, c: &Seg| (c.x0 - s.x0).abs() < 0.6 * h;
    let tighter = r.pitch.is_none_or(|p| gap < 0.9 * p);
    let no_first = r
        .segs
        .first()
        .is_some_and(|c| !l.segs.iter().any(|s| aligned(s, c)));
    gap > 0.0
        && gap <= 1.6 * h
        && (tighter || no_first)
        && l.segs.len() < r.segs.len()
        && l.segs.iter().all(|s| r.segs.iter().any(|c| aligned(s, c)))
}

fn flush(cur: &mut Option<Acc>, blocks: &mut Vec<Block>) {
    if let Some(a) = cur.take() {
        blocks.push(if a.item {
            Block::Item(a.text)
        } else {
            Block::Para(a.text)
        });
    }
}

/// Joins a wrapped line to its paragraph, undoing end-of-line hyphenation
/// when a lowercase word was clearly split in two.
fn join_line(text: &mut String, next: &str) {
    let mut tail = text.chars().rev();
    let hyphenated = tail.next() == Some('-')
        && tail.next().is_some_and(|c| c.is_lowercase())
        && next.chars().next().is_some_and(|c| c.is_lowercase());
    if hyphenated {
        text.pop();
    } else {
        text.push(' ');
    }
    text.push_str(next);
}
