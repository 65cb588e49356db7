//! Content-stream interpretation: runs a page's operators and collects positioned runs of
//! glyphs (and the small dots some producers draw as bullets).

use std::cell::RefCell;
use std::rc::Rc;

use super::file::Doc;
use super::font::Font;
use super::layout::{layout, Line, PageLines};
use super::objects::{find, is_ws, Dict, Item, Lexer, Obj, TextItem};
use super::Page;
use crate::knowledge::extract::binary::{FastMap, FastSet};

type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// Gap (in font sizes) above which two glyphs are separate words.
pub(super) const SPACE_GAP: f64 = 0.15;
/// Gap above which two pieces of one line are separate table cells. Word
/// gaps, even in loosely justified text, stay well below a font size, while
/// cells are separated by padding on both sides plus the unused column width.
pub(super) const CELL_GAP: f64 = 1.0;
/// Limits that keep hostile content streams from running forever.
pub(super) const MAX_OPS: usize = 50_000_000;
pub(super) const MAX_GLYPHS: usize = 20_000_000;
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
pub(super) struct Span {
    pub(super) x0: f64,
    pub(super) x1: f64,
    pub(super) y: f64,
    pub(super) h: f64,
    pub(super) text: String,
    pub(super) frame: i32,
    pub(super) bold: bool,
    /// Where the last glyph started, to spot overprinted copies.
    pub(super) last_at: f64,
}

pub(super) struct Extractor<'d, 'a> {
    doc: &'d Doc<'a>,
    fonts: RefCell<FastMap<u32, Rc<Font>>>,
    forms: FastMap<u32, Rc<Vec<u8>>>,
    fallback: Rc<Font>,
    spans: Vec<Span>,
    /// Small filled shapes: browsers and some editors draw list bullets as
    /// paths rather than text.
    dots: Vec<(f64, f64, f64)>,
    pub(super) ops: usize,
    pub(super) glyphs: usize,
    pub(super) mapped: usize,
    scratch: String,
}

impl<'d, 'a> Extractor<'d, 'a> {
    pub(super) fn new(doc: &'d Doc<'a>) -> Self {
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

    pub(super) fn page(&mut self, p: &Page) -> PageLines {
        let doc = self.doc;
        let mut data = Vec::new();
        // A page's content streams are read once, so they are not kept in the document's
        // cache.
        let contents = p.contents.as_ref().map(|c| doc.resolve_once(c));
        let parts: Vec<Obj> = match contents {
            Some(Obj::Array(a)) => a.iter().map(|c| doc.resolve_once(c)).collect(),
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
        PageLines::pack(lines, box_x)
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

/// Skips an inline image (`BI … ID data EI`): its data is pixels, which read as
/// operators could be anything.
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

pub(super) fn is_bullet(c: char) -> bool {
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
