//! Layout: lines from positioned runs, then headings, paragraphs, list items and table
//! rows from lines.

use super::content::{is_bullet, Span, CELL_GAP, SPACE_GAP};
use crate::knowledge::extract::binary::FastMap;
use crate::knowledge::extract::clean::squeeze_lines;
use crate::knowledge::extract::document::{Block, PushFlat, Row};

/// A stretch of a line without wide gaps: a table cell, or the whole line.
pub(super) struct Seg {
    pub(super) x0: f64,
    /// Where its last run ends.
    pub(super) x1: f64,
    pub(super) text: String,
}

/// A line as one page's layout finds it, before the page's lines are packed.
pub(super) struct Line {
    pub(super) y: f64,
    /// Size of the text that carries most of the line's characters.
    pub(super) h: f64,
    pub(super) x0: f64,
    pub(super) x1: f64,
    pub(super) segs: Vec<Seg>,
    pub(super) bold: bool,
    pub(super) frame: i32,
    /// Drawn after a bullet shape, so it starts a list item.
    pub(super) dot: bool,
}

/// A page's lines and the horizontal extent of its page box, packed: the text of all its
/// segments is one string, and each segment and line only says where it ends. Every page's
/// lines are held until the document's body and heading sizes are known, and with a
/// `String` and a `Vec` per line they took several times the size of their text.
pub(super) struct PageLines {
    text: String,
    segs: Vec<PackedSeg>,
    lines: Vec<PackedLine>,
    pub(super) box_x: Option<(f64, f64)>,
}

struct PackedSeg {
    x0: f64,
    /// Where the segment's text ends in the page's text; it starts where the previous one
    /// ends.
    end: usize,
}

struct PackedLine {
    y: f64,
    h: f64,
    x0: f64,
    x1: f64,
    /// Where the line's segments end in the page's segments; they start where the previous
    /// line's end.
    segs_end: usize,
    bold: bool,
    dot: bool,
}

impl PageLines {
    pub(super) fn pack(lines: Vec<Line>, box_x: Option<(f64, f64)>) -> PageLines {
        let all_segs = || lines.iter().flat_map(|l| &l.segs);
        let mut text = String::with_capacity(all_segs().map(|s| s.text.len()).sum());
        let mut segs = Vec::with_capacity(all_segs().count());
        let mut packed = Vec::with_capacity(lines.len());
        for l in &lines {
            for s in &l.segs {
                text.push_str(&s.text);
                segs.push(PackedSeg {
                    x0: s.x0,
                    end: text.len(),
                });
            }
            packed.push(PackedLine {
                y: l.y,
                h: l.h,
                x0: l.x0,
                x1: l.x1,
                segs_end: segs.len(),
                bold: l.bold,
                dot: l.dot,
            });
        }
        PageLines {
            text,
            segs,
            lines: packed,
            box_x,
        }
    }

    /// The page's lines, in order.
    fn lines(&self) -> impl Iterator<Item = LineRef<'_>> + '_ {
        let (mut first_seg, mut start) = (0, 0);
        self.lines.iter().map(move |l| {
            let segs = self.segs.get(first_seg..l.segs_end).unwrap_or_default();
            let line = LineRef {
                y: l.y,
                h: l.h,
                x0: l.x0,
                x1: l.x1,
                bold: l.bold,
                dot: l.dot,
                segs,
                start,
                text: &self.text,
            };
            first_seg = l.segs_end;
            start = segs.last().map_or(start, |s| s.end);
            line
        })
    }
}

/// One line of a packed page.
#[derive(Clone, Copy)]
struct LineRef<'p> {
    y: f64,
    h: f64,
    x0: f64,
    x1: f64,
    bold: bool,
    dot: bool,
    segs: &'p [PackedSeg],
    /// Where the first segment's text starts in `text`, the page's text.
    start: usize,
    text: &'p str,
}

impl<'p> LineRef<'p> {
    /// Each segment's left edge and text.
    fn segs(self) -> impl Iterator<Item = (f64, &'p str)> {
        let mut start = self.start;
        self.segs.iter().map(move |s| {
            let text = self.text.get(start..s.end).unwrap_or_default();
            start = s.end;
            (s.x0, text)
        })
    }

    /// The characters of all its segments.
    fn chars(self) -> usize {
        let end = self.segs.last().map_or(self.start, |s| s.end);
        self.text
            .get(self.start..end)
            .map_or(0, |t| t.chars().count())
    }

    fn text(self) -> String {
        let parts: Vec<&str> = self.segs().map(|(_, t)| t).collect();
        parts.join(" | ")
    }

    fn cells(self) -> bool {
        self.segs.len() > 1
    }
}

/// Size bucket used to compare font sizes across lines.
fn bucket(h: f64) -> i64 {
    (h * 2.0).round() as i64
}

pub(super) fn layout(spans: Vec<Span>) -> Vec<Line> {
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
            let mut frame_lines = Vec::new();
            layout_frame(v, k, &mut frame_lines);
            lines.extend(unweave_columns(frame_lines));
        }
    }
    lines
}

/// Fewest lines split in two at one gutter that make a stretch of two columns.
const MIN_COLUMN_LINES: usize = 3;
/// Fewest characters the lines of each column hold on average: columns of prose run most of
/// a line's width, where a table's cells, also split at gutters, are mostly short.
const MIN_COLUMN_CHARS: usize = 25;

/// Where a line stands against a gutter whose right column starts at `x`.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// A line of each column, side by side.
    Both,
    Left,
    Right,
    /// Text across the gutter: the stretch of columns ends.
    Across,
}

fn side(l: &Line, x: f64) -> Side {
    let near = |at: f64| (at - x).abs() <= 0.6 * l.h;
    match l.segs.as_slice() {
        [a, b] if near(b.x0) && a.x1 < x => Side::Both,
        [a] if near(a.x0) => Side::Right,
        [a] if a.x1 < x => Side::Left,
        _ => Side::Across,
    }
}

/// `lines` (one frame's, top to bottom) with each stretch of two columns of prose read a
/// column at a time: a newsletter's or a paper's columns, which line by line read as the
/// halves of two sentences side by side ("… Family | the children's corner in August").
/// A stretch starts at a line split at a gutter and runs while lines keep to one side of it,
/// the longer column's last lines included while they follow at a line's distance.
fn unweave_columns(lines: Vec<Line>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::with_capacity(lines.len());
    let mut rest = lines.into_iter().peekable();
    while let Some(first) = rest.next() {
        let Some(gutter) = (first.segs.len() == 2).then(|| first.segs[1].x0) else {
            out.push(first);
            continue;
        };
        if side(&first, gutter) != Side::Both {
            out.push(first);
            continue;
        }
        let mut stretch = vec![first];
        while let Some(next) = rest.peek() {
            let prev = &stretch[stretch.len() - 1];
            match side(next, gutter) {
                Side::Across => break,
                Side::Both => {}
                // A line of one column alone (the longer column's last lines) follows at a
                // line's distance.
                _ if prev.y - next.y > 1.6 * prev.h.max(next.h) => break,
                _ => {}
            }
            stretch.extend(rest.next());
        }
        let both: Vec<&Line> = stretch
            .iter()
            .filter(|l| side(l, gutter) == Side::Both)
            .collect();
        let mean_chars = |i: usize| {
            both.iter()
                .map(|l| l.segs[i].text.chars().count())
                .sum::<usize>()
                / both.len().max(1)
        };
        if both.len() < MIN_COLUMN_LINES
            || mean_chars(0) < MIN_COLUMN_CHARS
            || mean_chars(1) < MIN_COLUMN_CHARS
        {
            // Not columns (a table, most likely): as it was.
            out.extend(stretch);
            continue;
        }
        let mut right: Vec<Line> = Vec::new();
        for mut l in stretch {
            match side(&l, gutter) {
                Side::Both => {
                    let second = l.segs.pop();
                    let x1 = l.segs.first().map_or(l.x1, |s| s.x1);
                    if let Some(seg) = second {
                        right.push(Line {
                            x0: seg.x0,
                            segs: vec![seg],
                            ..l
                        });
                    }
                    out.push(Line {
                        x1,
                        segs: std::mem::take(&mut l.segs),
                        ..l
                    });
                }
                Side::Right => right.push(l),
                _ => out.push(l),
            }
        }
        out.extend(right);
    }
    out
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
                    x1: s.x1,
                    text: String::new(),
                });
            }
            if let Some(seg) = segs.last_mut() {
                seg.text.push_str(&s.text);
                seg.x1 = seg.x1.max(s.x1);
            }
            prev = Some(s);
            kept += 1;
        }
        let segs: Vec<Seg> = segs
            .into_iter()
            .map(|s| Seg {
                x0: s.x0,
                x1: s.x1,
                text: squeeze_lines(&s.text),
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
    segs: Vec<Seg>,
    y: f64,
    h: f64,
    pitch: Option<f64>,
}

/// The document's blocks from its pages' lines, which are let go page by page as their
/// blocks are built.
pub(super) fn build_blocks(pages: Vec<PageLines>) -> Vec<Block> {
    // Body size: the size carrying the most characters.
    let mut weight: FastMap<i64, usize> = FastMap::default();
    for l in pages.iter().flat_map(PageLines::lines) {
        *weight.entry(bucket(l.h)).or_default() += l.chars();
    }
    let body = weight
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map_or(10.0, |(&b, _)| b as f64 / 2.0);
    let is_heading = |l: LineRef| {
        !l.cells()
            && l.y.is_finite()
            && l.chars() <= 200
            && (l.h >= body * 1.15 || (l.bold && l.h >= body * 1.05))
    };
    let mut heading_sizes: Vec<i64> = pages
        .iter()
        .flat_map(PageLines::lines)
        .filter(|&l| is_heading(l))
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
        let left = page
            .lines()
            .map(|l| l.x0)
            .filter(|x| x.is_finite())
            .fold(f64::MAX, f64::min);
        let widest = page
            .lines()
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
        for l in page.lines() {
            if let Some(r) = row.as_mut() {
                if continues_row(r, l) {
                    for (x0, text) in l.segs() {
                        let target = r
                            .segs
                            .iter_mut()
                            .min_by(|a, b| (a.x0 - x0).abs().total_cmp(&(b.x0 - x0).abs()));
                        if let Some(t) = target {
                            t.text.push(' ');
                            t.text.push_str(text);
                        }
                    }
                    if let Some(Block::Table(table)) = blocks.last_mut() {
                        if let Some(last) = table.rows.last_mut() {
                            *last = Row::data(r.segs.iter().map(|s| s.text.clone()));
                        }
                    }
                    r.y = l.y;
                    continue;
                }
            }
            if l.cells() {
                flush(&mut cur, &mut blocks);
                last_heading = None;
                let pitch = row.as_ref().map(|r| r.y - l.y).filter(|p| *p > 0.0);
                blocks.push_row(Row::data(l.segs().map(|(_, text)| text.to_string())));
                let segs = l
                    .segs()
                    .map(|(x0, text)| Seg {
                        x0,
                        x1: x0,
                        text: text.to_string(),
                    })
                    .collect();
                row = Some(RowAcc {
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
                if let (
                    Some((hy, hh)),
                    Some(Block::Heading {
                        level: plv,
                        text: t,
                    }),
                ) = (last_heading, blocks.last_mut())
                {
                    if *plv == lv && (hy - l.y) < 1.3 * hh && (hh - l.h).abs() < 0.1 * hh {
                        t.push(' ');
                        t.push_str(&text);
                        last_heading = Some((l.y, l.h));
                        continue;
                    }
                }
                blocks.push(Block::Heading { level: lv, text });
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
fn continues_row(r: &RowAcc, l: LineRef) -> bool {
    let gap = r.y - l.y;
    let h = l.h.max(r.h);
    let aligned = |x0: f64, c: &Seg| (c.x0 - x0).abs() < 0.6 * h;
    let tighter = r.pitch.is_none_or(|p| gap < 0.9 * p);
    let no_first = r
        .segs
        .first()
        .is_some_and(|c| !l.segs.iter().any(|s| aligned(s.x0, c)));
    gap > 0.0
        && gap <= 1.6 * h
        && (tighter || no_first)
        && l.segs.len() < r.segs.len()
        && l.segs
            .iter()
            .all(|s| r.segs.iter().any(|c| aligned(s.x0, c)))
}

fn flush(cur: &mut Option<Acc>, blocks: &mut Vec<Block>) {
    if let Some(a) = cur.take() {
        if a.item {
            blocks.push_item(a.text);
        } else {
            blocks.push(Block::Paragraph(a.text));
        }
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
