//! PDF: the file's objects, its pages' content streams, and the layout that turns
//! positioned glyphs back into headings, paragraphs, list items and table rows.
//!
//! A PDF has no tables or headings of its own, only glyphs at positions: headings are told
//! by size, list items by their markers, and table rows by wide gaps between the pieces of
//! a line. Nothing on the page says which row of a table names its columns, so a PDF table
//! has no header and its rows come out in the plain `a | b | c` form.

mod content;
mod file;
mod filters;
mod font;
mod layout;
mod objects;

use super::binary::{err, Budget, FastSet, DECOMPRESS_BUDGET};
use super::clean::squeeze_lines;
use super::document::Document;
use super::ExtractError;
use content::{Extractor, MAX_GLYPHS, MAX_OPS};
use file::Doc;
use font::pdf_doc_char;
use layout::build_blocks;
use objects::{find, Obj};

const MAX_PAGES: usize = 100_000;

/// Reads a PDF, page by page.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
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
    let mut pages = PageTree::new(&doc, root.get(b"Pages"));
    let Some(first) = pages.next() else {
        return err("the PDF is damaged: it has no readable pages");
    };

    let mut ex = Extractor::new(&doc);
    let mut page_lines = Vec::new();
    let mut next = Some(first);
    while let Some(page) = next {
        page_lines.push(ex.page(&page));
        // Checked before the tree is walked to the next page, which may read more objects.
        if ex.ops > MAX_OPS || ex.glyphs > MAX_GLYPHS {
            break;
        }
        next = pages.next();
    }
    let blocks = build_blocks(page_lines);
    if blocks.iter().all(|b| b.is_blank()) {
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
        .map(|t| squeeze_lines(&t))
        .filter(|t| !t.is_empty());
    Ok(Document { title, blocks })
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

/// What the reader needs of a page, rather than its whole dictionary: its content streams,
/// and its resources, rotation and page box (its own, or inherited from the page tree).
struct Page {
    contents: Option<Obj>,
    resources: Option<Obj>,
    rotate: i64,
    media_box: Option<Obj>,
}

/// The page tree, walked in reading order one page at a time, so that only the page being
/// read is held however long the document is.
struct PageTree<'d, 'a> {
    doc: &'d Doc<'a>,
    /// Nodes still to visit, last first, with the resources, rotation and page box they
    /// inherit.
    stack: Vec<(Obj, Option<Obj>, i64, Option<Obj>)>,
    seen: FastSet<u32>,
    pages: usize,
}

impl<'d, 'a> PageTree<'d, 'a> {
    fn new(doc: &'d Doc<'a>, root: Option<&Obj>) -> Self {
        PageTree {
            doc,
            stack: root
                .map(|r| (r.clone(), None, 0, None))
                .into_iter()
                .collect(),
            seen: FastSet::default(),
            pages: 0,
        }
    }
}

impl Iterator for PageTree<'_, '_> {
    type Item = Page;

    fn next(&mut self) -> Option<Page> {
        let doc = self.doc;
        while let Some((node, res, rot, mbox)) = self.stack.pop() {
            if self.pages >= MAX_PAGES || self.seen.len() > MAX_PAGES * 2 {
                self.stack.clear();
                return None;
            }
            if let Obj::Ref(n) = node {
                if !self.seen.insert(n) {
                    continue;
                }
            }
            // Each node is read once, so it is not kept in the document's cache.
            let Obj::Dict(d) = doc.resolve_once(&node) else {
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
                        self.stack.push((k.clone(), res.clone(), rot, mbox.clone()));
                    }
                }
                _ => {
                    self.pages += 1;
                    return Some(Page {
                        contents: d.get(b"Contents").cloned(),
                        resources: res,
                        rotate: rot,
                        media_box: mbox,
                    });
                }
            }
        }
        None
    }
}
