//! Office Open XML: Word documents, PowerPoint presentations and Excel workbooks. All three
//! are ZIP packages of XML parts tied together by relationship parts; what they share (the
//! package, its relationships, its title) is here, and each format reads its own parts.
//! EPUB books (`super::epub`) and OpenDocument files (`super::odf`) are ZIP packages of XML
//! too and read theirs through `Package`.

pub mod docx;
pub mod pptx;
pub mod xlsx;
pub(crate) mod xml;
mod zip;

use super::binary::{Budget, DECOMPRESS_BUDGET};
use super::clean::squeeze_lines as tidy;
use super::csv::table_of;
use super::document::Block;
use super::ExtractError;
use xml::{attr, Ev, Reader};
use zip::Zip;

/// An opened package: its parts, and one decompression budget for all of them, so that a
/// document cannot expand past it by spreading itself over many parts.
pub(crate) struct Package<'a> {
    zip: Zip<'a>,
    budget: Budget,
}

/// A relationship of a part: its id, the last segment of its type URI ("slide",
/// "officeDocument") and the path of the part it points at.
pub(crate) struct Relationship {
    pub id: String,
    pub kind: String,
    pub target: String,
}

impl<'a> Package<'a> {
    pub(crate) fn open(bytes: &'a [u8], kind: &'static str) -> Result<Self, ExtractError> {
        Ok(Package {
            zip: Zip::open(bytes, kind)?,
            budget: Budget::new(DECOMPRESS_BUDGET),
        })
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.zip.names()
    }

    /// The text of the part at `path`; `Ok(None)` when the package has no such part.
    pub(crate) fn text(&self, path: &str) -> Result<Option<String>, ExtractError> {
        Ok(self
            .zip
            .read(path, &self.budget)?
            .map(|bytes| decode_xml_text(&bytes)))
    }

    /// The text of an optional part (properties, styles, notes): a document whose optional
    /// part is missing or unreadable still has its text.
    pub(crate) fn optional_text(&self, path: &str) -> Option<String> {
        self.text(path).ok().flatten()
    }

    /// The relationships of the part at `path` (the package's own for ""), with their
    /// targets resolved to part paths; external targets (links to web pages) are left out.
    pub(crate) fn relationships(&self, path: &str) -> Vec<Relationship> {
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
        let rels_path = if dir.is_empty() {
            format!("_rels/{file}.rels")
        } else {
            format!("{dir}/_rels/{file}.rels")
        };
        let Some(rels) = self.optional_text(&rels_path) else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for ev in Reader::new(&rels) {
            let Ev::Start("Relationship", a, _) = ev else {
                continue;
            };
            if attr(a, "TargetMode").is_some_and(|m| m == "External") {
                continue;
            }
            let (Some(id), Some(kind), Some(target)) =
                (attr(a, "Id"), attr(a, "Type"), attr(a, "Target"))
            else {
                continue;
            };
            found.push(Relationship {
                id: id.into_owned(),
                kind: kind.rsplit('/').next().unwrap_or("").to_string(),
                target: resolve(dir, &target),
            });
        }
        found
    }

    /// The package's main part, its path and text: found through the package's
    /// relationships, because producers may name it otherwise, else at `fallback`; an error
    /// unless its root element is `root` (a Word document's main part is no presentation).
    pub(crate) fn main_part(
        &self,
        fallback: &str,
        root: &str,
    ) -> Result<(String, String), ExtractError> {
        let path = self
            .relationships("")
            .into_iter()
            .find(|r| r.kind == "officeDocument" && self.has(&r.target))
            .map_or_else(|| fallback.to_string(), |r| r.target);
        let text = self
            .text(&path)?
            .filter(|xml| xml::root(xml).is_some_and(|(name, _)| name == root));
        match text {
            Some(text) => Ok((path, text)),
            None => Err(self.missing(fallback)),
        }
    }

    fn has(&self, path: &str) -> bool {
        self.zip.names().any(|n| n.eq_ignore_ascii_case(path))
    }

    /// The title set in the document's properties, when there is one.
    pub(crate) fn title(&self) -> Option<String> {
        title_in(&self.optional_text("docProps/core.xml")?)
    }

    /// The error for a package that lacks its main part `path`: when it is another Office
    /// format than the one expected, the message says which.
    fn missing(&self, path: &str) -> ExtractError {
        let other = [
            ("word/", "a Word document"),
            ("ppt/", "a presentation"),
            ("xl/", "a spreadsheet"),
        ]
        .into_iter()
        .find(|(dir, _)| !path.starts_with(dir) && self.names().any(|n| n.starts_with(dir)));
        let hint = other.map_or(String::new(), |(_, what)| {
            format!(" (it looks like {what})")
        });
        ExtractError(format!(
            "the file is not {}: it has no {path}{hint}",
            self.zip.kind()
        ))
    }
}

/// What the paragraphs of a slide's shape (a PPTX placeholder, an OpenDocument frame's
/// class) are.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Role {
    /// A free text box or shape, a subtitle, speaker notes: running text.
    Text,
    /// A content placeholder or outline: bullet points.
    Points,
    /// The slide's title.
    Title,
    /// Slide number, date, footer, header, the notes page's slide picture.
    Skipped,
}

/// A sheet of a workbook (XLSX or OpenDocument) as a section named after it, holding its
/// rows as one table (`csv::table_of`).
pub(crate) fn push_sheet(blocks: &mut Vec<Block>, name: &str, rows: Vec<Vec<String>>) {
    let name = name.trim();
    blocks.push(Block::Heading {
        level: 1,
        text: if name.is_empty() { "Sheet" } else { name }.to_string(),
    });
    blocks.push(Block::Table(table_of(rows)));
}

/// `target` as a part path, relative to the directory `dir` of the part that names it.
pub(crate) fn resolve(dir: &str, target: &str) -> String {
    if let Some(absolute) = target.strip_prefix('/') {
        return absolute.to_string();
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// OOXML parts are UTF-8 in practice, but the format allows UTF-16.
fn decode_xml_text(b: &[u8]) -> String {
    let utf16 = |le: bool| {
        let units: Vec<u16> = b[2..]
            .chunks_exact(2)
            .map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    match b {
        [0xFF, 0xFE, ..] => utf16(true),
        [0xFE, 0xFF, ..] => utf16(false),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => String::from_utf8_lossy(b).into_owned(),
    }
}

/// The text of the first `title` element of a properties part (Office's `docProps/core.xml`,
/// OpenDocument's `meta.xml`), when it has any.
pub(crate) fn title_in(xml: &str) -> Option<String> {
    let mut inside = false;
    let mut title = String::new();
    for ev in Reader::new(xml) {
        match ev {
            Ev::Start("title", _, false) => inside = true,
            Ev::End("title") => break,
            Ev::Text(t) if inside => title.push_str(&t),
            _ => {}
        }
    }
    let t = tidy(&title);
    (!t.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn relationship_targets_resolve_against_their_part() {
        assert_eq!(resolve("ppt", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(
            resolve("ppt/slides", "../notesSlides/notesSlide1.xml"),
            "ppt/notesSlides/notesSlide1.xml"
        );
        assert_eq!(resolve("", "word/document.xml"), "word/document.xml");
        assert_eq!(
            resolve("xl", "/xl/worksheets/sheet1.xml"),
            "xl/worksheets/sheet1.xml"
        );
        assert_eq!(resolve("xl", "./sharedStrings.xml"), "xl/sharedStrings.xml");
    }
}
