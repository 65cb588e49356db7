//! From bytes to indexable chunks: which kind of document this is, its [`Document`], the
//! text that document renders to, and its chunks.

use super::chunk::{chunk_document, chunk_text, Chunk, ChunkOptions, DocumentChunks};
use super::encoding::decode_text;
use super::extract::{
    csv, docx, epub, html, json, markdown, odf, pdf, pptx, render, text, xlsx, Document,
    ExtractError, Extracted,
};
use super::steps::INLINE_TEXT_BYTES;
use super::tokens::estimate_tokens;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    Text,
    Markdown,
    /// Markdown with JSX: its `import` and `export` statements are left out.
    Mdx,
    Html,
    Csv,
    Json,
    Pdf,
    Docx,
    Pptx,
    Xlsx,
    Epub,
    /// OpenDocument text, spreadsheet or presentation (`.odt`, `.ods`, `.odp`).
    OpenDocument,
}

impl DocKind {
    pub fn media_type(self) -> &'static str {
        match self {
            DocKind::Text => "text/plain",
            DocKind::Markdown | DocKind::Mdx => "text/markdown",
            DocKind::Html => "text/html",
            DocKind::Csv => "text/csv",
            DocKind::Json => "application/json",
            DocKind::Pdf => "application/pdf",
            DocKind::Docx => DOCX_TYPE,
            DocKind::Pptx => PPTX_TYPE,
            DocKind::Xlsx => XLSX_TYPE,
            DocKind::Epub => EPUB_TYPE,
            DocKind::OpenDocument => ODT_TYPE,
        }
    }
}

const DOCX_TYPE: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const PPTX_TYPE: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const XLSX_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const EPUB_TYPE: &str = "application/epub+zip";
const ODT_TYPE: &str = "application/vnd.oasis.opendocument.text";
const ODS_TYPE: &str = "application/vnd.oasis.opendocument.spreadsheet";
const ODP_TYPE: &str = "application/vnd.oasis.opendocument.presentation";

impl DocKind {
    /// The media type of a file of this kind: an OpenDocument file names its own (text,
    /// spreadsheet or presentation) in the `mimetype` entry it starts with.
    pub fn media_type_of(self, bytes: &[u8]) -> &'static str {
        if self != DocKind::OpenDocument {
            return self.media_type();
        }
        let head = &bytes[..bytes.len().min(128)];
        let names = |t: &str| head.windows(t.len()).any(|w| w == t.as_bytes());
        [ODS_TYPE, ODP_TYPE]
            .into_iter()
            .find(|t| names(t))
            .unwrap_or(ODT_TYPE)
    }
}

/// The extensions an upload may have, for error messages.
pub const ACCEPTED_EXTENSIONS: &str =
    ".txt, .md, .mdx, .rst, .adoc, .html, .csv, .json, .pdf, .docx, .pptx, .xlsx, .epub, .odt, .ods, .odp";

fn extension(file_name: &str) -> Option<String> {
    let (_, ext) = file_name.rsplit_once('.')?;
    Some(ext.to_ascii_lowercase())
}

fn essence(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// How a PDF and a ZIP archive (Office documents, EPUB, OpenDocument) begin.
pub(super) const PDF_MAGIC: &[u8] = b"%PDF-";
pub(super) const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

fn sniff(bytes: &[u8]) -> Option<DocKind> {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    let head = &bytes[start..bytes.len().min(start + 512)];
    if head.starts_with(PDF_MAGIC) {
        return Some(DocKind::Pdf);
    }
    if bytes.starts_with(ZIP_MAGIC) {
        // An Office package names its main part's folder near the start of the archive.
        let window = &bytes[..bytes.len().min(64 * 1024)];
        let names = |folder: &[u8]| window.windows(folder.len()).any(|w| w == folder);
        // An EPUB or OpenDocument file opens with its media type, stored as the archive's
        // first entry.
        return [
            (&b"application/epub+zip"[..], DocKind::Epub),
            (
                b"application/vnd.oasis.opendocument.",
                DocKind::OpenDocument,
            ),
            (b"word/", DocKind::Docx),
            (b"ppt/", DocKind::Pptx),
            (b"xl/", DocKind::Xlsx),
        ]
        .into_iter()
        .find(|(folder, _)| names(folder))
        .map(|(_, kind)| kind);
    }
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return Some(DocKind::Html);
    }
    None
}

/// What an upload is, from its name, its declared type and its first bytes; `None` when it is
/// not a kind this service reads.
pub fn detect_upload(file_name: &str, content_type: Option<&str>, bytes: &[u8]) -> Option<DocKind> {
    let by_extension = match extension(file_name).as_deref() {
        // reStructuredText and AsciiDoc, what much documentation is written in, read as
        // text whose underlined and `==` titles are headings (`extract::text`).
        Some("txt" | "text" | "log" | "rst" | "rest" | "adoc" | "asciidoc") => Some(DocKind::Text),
        // MDX (Markdown with components, as documentation sites write it) reads as Markdown:
        // its component tags go as inline HTML does.
        Some("md" | "markdown") => Some(DocKind::Markdown),
        Some("mdx") => Some(DocKind::Mdx),
        Some("html" | "htm" | "xhtml") => Some(DocKind::Html),
        Some("csv") => Some(DocKind::Csv),
        Some("json" | "jsonl") => Some(DocKind::Json),
        Some("pdf") => Some(DocKind::Pdf),
        Some("docx") => Some(DocKind::Docx),
        Some("pptx") => Some(DocKind::Pptx),
        Some("xlsx") => Some(DocKind::Xlsx),
        Some("epub") => Some(DocKind::Epub),
        Some("odt" | "ods" | "odp") => Some(DocKind::OpenDocument),
        Some(_) => return None,
        None => None,
    };
    by_extension
        .or_else(|| sniff(bytes))
        .or_else(|| detect_by_media_type(&essence(content_type)))
}

fn detect_by_media_type(media: &str) -> Option<DocKind> {
    match media {
        "text/html" | "application/xhtml+xml" => Some(DocKind::Html),
        "text/markdown" | "text/x-markdown" => Some(DocKind::Markdown),
        "text/csv" => Some(DocKind::Csv),
        "application/json" | "application/ld+json" => Some(DocKind::Json),
        "application/pdf" => Some(DocKind::Pdf),
        DOCX_TYPE => Some(DocKind::Docx),
        PPTX_TYPE => Some(DocKind::Pptx),
        XLSX_TYPE => Some(DocKind::Xlsx),
        EPUB_TYPE => Some(DocKind::Epub),
        m if m.starts_with("application/vnd.oasis.opendocument.") => Some(DocKind::OpenDocument),
        m if m.starts_with("text/") => Some(DocKind::Text),
        _ => None,
    }
}

/// What a fetched web resource is, by its Content-Type, then by its bytes.
pub fn detect_page(content_type: Option<&str>, url_path: &str, bytes: &[u8]) -> Option<DocKind> {
    // A PDF's opening bytes are unmistakable; servers that label it `text/html` are not.
    if bytes.starts_with(PDF_MAGIC) {
        return Some(DocKind::Pdf);
    }
    detect_by_media_type(&essence(content_type))
        .or_else(|| sniff(bytes))
        .or_else(|| detect_upload(url_path.rsplit('/').next().unwrap_or(""), None, bytes))
}

/// A document read from its bytes, and the text it renders to.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    pub document: Document,
    pub text: String,
}

/// Text that was extracted elsewhere reads as plain text.
impl From<Extracted> for Extraction {
    fn from(extracted: Extracted) -> Extraction {
        let mut document = text::read(&extracted.text);
        document.title = extracted.title;
        Extraction {
            document,
            text: extracted.text,
        }
    }
}

/// Reads a document of `kind` from borrowed bytes and renders its text: `read_document` on
/// a copy of them.
pub fn extract(kind: DocKind, bytes: &[u8]) -> Result<Extraction, ExtractError> {
    let document = read_document(kind, bytes.to_vec())?;
    let text = render(&document);
    Ok(Extraction { document, text })
}

/// Reads a document of `kind`, taking its bytes so that they are let go as soon as they are
/// read.
pub fn read_document(kind: DocKind, bytes: Vec<u8>) -> Result<Document, ExtractError> {
    read_any(kind, bytes).map_err(ExtractError::as_sentence)
}

fn read_any(kind: DocKind, bytes: Vec<u8>) -> Result<Document, ExtractError> {
    let document = match kind {
        DocKind::Pdf => pdf::read(&bytes)?,
        DocKind::Docx => docx::read(&bytes)?,
        DocKind::Pptx => pptx::read(&bytes)?,
        DocKind::Xlsx => xlsx::read(&bytes)?,
        DocKind::Epub => epub::read(&bytes)?,
        DocKind::OpenDocument => odf::read(&bytes)?,
        DocKind::Html => html::read(&decode_text(bytes)?),
        DocKind::Markdown => markdown::read(&decode_text(bytes)?),
        DocKind::Mdx => markdown::read_mdx(&decode_text(bytes)?),
        DocKind::Csv => csv::read(&decode_text(bytes)?)?,
        DocKind::Json => json::read(&decode_text(bytes)?)?,
        DocKind::Text => text::read_owned(decode_text(bytes)?),
    };
    if document.is_blank() {
        return Err(ExtractError(
            "The document holds no readable text.".to_string(),
        ));
    }
    let rendered = render::rendered_bytes(&document);
    if rendered > MAX_RENDERED_BYTES {
        return Err(ExtractError(format!(
            "The document's text is about {} MiB once written out (each table row with its \
             column names), more than the {} MiB one source may hold; split it into smaller files.",
            rendered >> 20,
            MAX_RENDERED_BYTES >> 20
        )));
    }
    Ok(document)
}

/// The most text one document may be written out as. The step that reads it holds the
/// document and its text at once (and a table's rows twice while they are written), within a
/// Worker's 128 MB.
pub const MAX_RENDERED_BYTES: usize = 28 << 20;

/// A document on its way to the index: its title, its token count, and its chunks to be
/// taken a slice at a time (the document itself is let go).
pub struct Reading {
    pub title: Option<String>,
    pub tokens: usize,
    pub chunks: DocumentChunks,
}

impl Reading {
    /// Whether the reading is too long to index in the step that read it, and is staged in
    /// slices instead (`INLINE_TEXT_BYTES`).
    pub fn is_staged(&self) -> bool {
        self.chunks.text().len() > INLINE_TEXT_BYTES
    }
}

/// Starts reading a document into chunks.
pub fn begin_reading(document: Document) -> Reading {
    let chunks = DocumentChunks::new(&document, &ChunkOptions::default());
    let title = document.title.filter(|t| !t.trim().is_empty());
    // The blocks' text is a copy of the rendered text the chunks are cut from.
    drop(document.blocks);
    Reading {
        title,
        tokens: estimate_tokens(chunks.text()),
        chunks,
    }
}

/// A document ready for the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub title: Option<String>,
    pub tokens: usize,
    pub chunks: Vec<Chunk>,
}

/// Chunks a document from its blocks and counts the tokens of its text.
pub fn prepare(extraction: impl Into<Extraction>) -> Prepared {
    let Extraction { document, text } = extraction.into();
    // Counted and let go before chunking, which renders its own copy: at the largest upload
    // the two copies at once are a good part of a Worker's memory.
    let tokens = estimate_tokens(&text);
    drop(text);
    let chunks = chunk_document(&document, &ChunkOptions::default());
    Prepared {
        title: document.title.filter(|t| !t.trim().is_empty()),
        tokens,
        chunks,
    }
}

/// A Q&A pair is indexed with its question as the heading, which the search weighs above body
/// text, so a question asked in other words still finds it; a long answer spans chunks that
/// all carry the question.
pub fn qa_chunks(question: &str, answer: &str) -> Vec<Chunk> {
    let mut chunks = chunk_text(answer, &ChunkOptions::default());
    if chunks.is_empty() {
        chunks.push(Chunk {
            position: 0,
            heading: None,
            text: answer.to_string(),
            tokens: estimate_tokens(answer),
        });
    }
    for chunk in &mut chunks {
        chunk.heading = Some(question.to_string());
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::encoding::{decode_plainly, unread_charset};

    #[test]
    fn a_table_whose_rows_write_out_too_long_is_refused() {
        // Few cells, long column names: each row repeats them.
        let title = |i: usize| {
            format!("Quantity_ordered_for_the_warehouse_region_north_and_south_in_units_{i}")
        };
        let header: Vec<String> = (0..5).map(title).collect();
        let table = |rows: usize| {
            let mut csv = header.join(",") + "\n";
            for i in 0..rows {
                csv.push_str(&format!("{i},a,b,c,d\n"));
            }
            csv.into_bytes()
        };
        assert!(read_document(DocKind::Csv, table(20_000)).is_ok());
        match read_document(DocKind::Csv, table(90_000)) {
            Err(err) => assert!(err.0.contains("more than the 28 MiB"), "{err}"),
            Ok(_) => panic!("90,000 rows under 70-character titles write out to over 28 MiB"),
        }
    }

    #[test]
    fn every_accepted_extension_is_documented_and_offered() {
        let openapi = include_str!("../../../../public/openapi.json");
        let page = include_str!("../../../../public/index.html");
        let readme = include_str!("../../../../README.md");
        for ext in ACCEPTED_EXTENSIONS.split(", ") {
            assert!(
                detect_upload(&format!("a{ext}"), None, b"").is_some(),
                "{ext}"
            );
            assert!(openapi.contains(ext), "{ext} in the upload's description");
            assert!(
                page.contains(&format!("{ext},")) || page.contains(&format!("{ext}\"")),
                "{ext} in the chat page's file input"
            );
            assert!(readme.contains(&format!("`{ext}`")), "{ext} in the README");
        }
    }

    #[test]
    fn uploads_are_recognised_by_name_then_content() {
        // File name, declared type, first bytes, and what the upload is read as.
        type Case<'a> = (&'a str, Option<&'a str>, &'a [u8], Option<DocKind>);
        let cases: &[Case] = &[
            ("notes.TXT", None, b"hi", Some(DocKind::Text)),
            ("index.rst", None, b"Title\n=====\n", Some(DocKind::Text)),
            ("guide.adoc", None, b"= Guide\n", Some(DocKind::Text)),
            ("intro.mdx", None, b"# Intro\n", Some(DocKind::Mdx)),
            ("README.md", None, b"# hi", Some(DocKind::Markdown)),
            ("a.pdf", None, b"%PDF-1.7", Some(DocKind::Pdf)),
            ("a.docx", None, b"PK\x03\x04", Some(DocKind::Docx)),
            ("Deck.PPTX", None, b"PK\x03\x04", Some(DocKind::Pptx)),
            ("plans.xlsx", None, b"PK\x03\x04", Some(DocKind::Xlsx)),
            (
                "slides",
                None,
                b"PK\x03\x04\0\0ppt/slides/slide1.xml",
                Some(DocKind::Pptx),
            ),
            (
                "sheet",
                None,
                b"PK\x03\x04\0\0xl/workbook.xml",
                Some(DocKind::Xlsx),
            ),
            (
                "letter",
                None,
                b"PK\x03\x04\0\0word/document.xml",
                Some(DocKind::Docx),
            ),
            ("plans", Some(XLSX_TYPE), b"\0", Some(DocKind::Xlsx)),
            ("guide.epub", None, b"PK\x03\x04", Some(DocKind::Epub)),
            (
                "book",
                None,
                b"PK\x03\x04mimetypeapplication/epub+zip",
                Some(DocKind::Epub),
            ),
            ("blob", None, b"  %PDF-1.4 ...", Some(DocKind::Pdf)),
            ("page", None, b"<!DOCTYPE html><p>x", Some(DocKind::Html)),
            (
                "data",
                Some("text/csv; charset=utf-8"),
                b"a,b",
                Some(DocKind::Csv),
            ),
            ("photo.png", Some("image/png"), b"\x89PNG", None),
            ("archive.zip", None, b"PK\x03\x04", None),
            ("blob", Some("application/octet-stream"), b"\x00\x01", None),
        ];
        for (name, content_type, bytes, kind) in cases {
            assert_eq!(detect_upload(name, *content_type, bytes), *kind, "{name}");
        }
    }

    #[test]
    fn pages_are_recognised_by_content_type() {
        assert_eq!(
            detect_page(Some("text/html; charset=utf-8"), "/", b""),
            Some(DocKind::Html)
        );
        assert_eq!(
            detect_page(Some("application/pdf"), "/x", b""),
            Some(DocKind::Pdf)
        );
        assert_eq!(
            detect_page(None, "/doc.md", b"# x"),
            Some(DocKind::Markdown)
        );
        assert_eq!(detect_page(Some("image/jpeg"), "/a.jpg", b"\xff\xd8"), None);
        assert_eq!(
            detect_page(Some("text/html"), "/report", b"%PDF-1.7\n"),
            Some(DocKind::Pdf),
            "a PDF labelled as HTML"
        );
    }

    #[test]
    fn a_document_in_an_encoding_not_read_fails_with_its_name() {
        // "Красный самовар" in windows-1251, as a page that says so.
        let mut page =
            b"<html><head><meta charset=\"windows-1251\"><title>x</title></head><body>".to_vec();
        page.extend_from_slice(&[
            0xCA, 0xF0, 0xE0, 0xF1, 0xED, 0xFB, 0xE9, 0x20, 0xF1, 0xE0, 0xEC, 0xEE,
        ]);
        page.extend_from_slice(b"</body></html>");
        let err = extract(DocKind::Html, &page).expect_err("refused");
        assert!(err.0.contains("windows-1251"), "{}", err.0);
        let xml = [
            &b"<?xml version='1.0' encoding='Shift_JIS'?><a>"[..],
            &[0x93, 0x8c, 0x8b, 0x9e],
            b"</a>",
        ]
        .concat();
        assert!(decode_text(xml)
            .expect_err("refused")
            .0
            .contains("shift_jis"));
        // Latin-1 pages read as before, and a page whose bytes are UTF-8 whatever it says.
        let latin =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">caf\xE9";
        assert!(decode_text(latin.to_vec()).expect("read").ends_with("café"));
        let utf8 = "<meta charset=\"windows-1251\">Красный".as_bytes().to_vec();
        assert!(decode_text(utf8).expect("read").ends_with("Красный"));
        // The server's word for a page's encoding counts as the page's own.
        let cp1251 = [0xCA, 0xF0, 0xE0, 0xF1, 0xED, 0xFB, 0xE9];
        let named = unread_charset(Some("text/html; charset=Windows-1251"), &cp1251);
        assert!(named.expect("refused").0.contains("windows-1251"));
        assert!(unread_charset(
            Some("text/html; charset=windows-1251"),
            "Красный".as_bytes()
        )
        .is_none());
        assert!(unread_charset(Some("text/html; charset=iso-8859-1"), b"caf\xE9").is_none());
        assert!(unread_charset(Some("text/html"), &cp1251).is_none());
    }

    #[test]
    fn empty_documents_are_an_error() {
        assert!(extract(DocKind::Text, b"   \n\n ").is_err());
        assert!(extract(DocKind::Html, b"<html><script>x()</script></html>").is_err());
        let e = extract(DocKind::Text, b"Hello there.").unwrap();
        assert_eq!(e.text, "Hello there.");
    }

    #[test]
    fn prepare_chunks_and_counts_tokens() {
        let p = prepare(Extracted {
            title: Some("  ".into()),
            text: "# Setup\n\nRun the installer.\n\n# Use\n\nOpen the app.".into(),
        });
        assert_eq!(p.title, None);
        assert_eq!(p.chunks.len(), 2);
        assert_eq!(p.chunks[1].heading.as_deref(), Some("Use"));
        assert!(p.tokens > 0);
    }

    #[test]
    fn a_reading_in_slices_gives_the_chunks_of_the_whole() {
        let mut text = String::new();
        for s in 0..40 {
            text.push_str(&format!("# Part {s}\n\n"));
            for p in 0..6 {
                text.push_str(&format!(
                    "Paragraph {p} of part {s} tells of harbours and ledgers. {}\n\n",
                    "The tide turns twice a day. ".repeat(p + 3)
                ));
            }
        }
        let whole = prepare(extract(DocKind::Text, text.as_bytes()).unwrap());
        let doc = read_document(DocKind::Text, text.clone().into_bytes()).unwrap();
        let mut reading = begin_reading(doc);
        assert_eq!(reading.tokens, whole.tokens);
        assert_eq!(reading.chunks.text(), render(&text::read(&text)));
        let mut slices = Vec::new();
        while !reading.chunks.is_done() {
            let slice = reading.chunks.next_slice(2_000);
            assert!(!slice.is_empty());
            slices.push(slice);
        }
        assert!(slices.len() > 5, "{} slices", slices.len());
        assert!(reading.chunks.next_slice(2_000).is_empty());
        let flat: Vec<Chunk> = slices.into_iter().flatten().collect();
        assert_eq!(
            flat, whole.chunks,
            "sections whole in a slice chunk as the whole does"
        );
    }

    #[test]
    fn layout_slices_chunk_elsewhere_as_the_reading_would() {
        let mut text = String::from("Intro paragraph before any heading.\n\n");
        for s in 0..30 {
            text.push_str(&format!("# Part {s}\n\n"));
            for p in 0..(s % 7 + 1) * 3 {
                text.push_str(&format!(
                    "Paragraph {p} of part {s} tells of harbours. {}\n\n",
                    "The tide turns twice a day and the gulls return. ".repeat(p % 5 + 1)
                ));
            }
        }
        // A table without a header row whose first row reads like titles: its later chunks
        // repeat that row, also in slices after the one holding it.
        let mut html = String::from(
            "<html><body><h1>Fleet</h1><table><tr><td>Name</td><td>Port</td><td>Rig</td></tr>",
        );
        for r in 0..150 {
            html.push_str(&format!(
                "<tr><td>Vessel {r}</td><td>Harbour {}</td><td>{} tonnes</td></tr>",
                r % 9,
                100 + r
            ));
        }
        html.push_str("</table><p>After the table.</p></body></html>");
        for (kind, bytes) in [(DocKind::Text, text), (DocKind::Html, html)] {
            let read = || begin_reading(read_document(kind, bytes.clone().into_bytes()).unwrap());
            for max in [700, 3_000, usize::MAX] {
                let mut whole = read();
                let mut expected = Vec::new();
                while !whole.chunks.is_done() {
                    expected.extend(whole.chunks.next_slice(max));
                }
                let mut sliced = read();
                let mut got = Vec::new();
                let mut slices = 0;
                while let Some(slice) = sliced.chunks.next_layout_slice(max) {
                    // As it travels between steps.
                    let json = serde_json::to_string(&slice).unwrap();
                    let slice: crate::knowledge::chunk::LayoutSlice =
                        serde_json::from_str(&json).unwrap();
                    for mut c in slice.chunks(&ChunkOptions::default()) {
                        c.position = got.len();
                        got.push(c);
                    }
                    slices += 1;
                }
                assert!(sliced.chunks.is_done());
                assert!(max == usize::MAX || slices > 1, "{kind:?} {max}: {slices}");
                assert_eq!(got, expected, "{kind:?} at {max} bytes a slice");
            }
        }
    }

    #[test]
    fn a_section_longer_than_a_slice_is_cut_at_spans() {
        let text: String = (0..200)
            .map(|p| format!("Paragraph {p} has a few words of its own here.\n\n"))
            .collect();
        let doc = read_document(DocKind::Text, text.into_bytes()).unwrap();
        let mut reading = begin_reading(doc);
        let first = reading.chunks.next_slice(1_000);
        assert!(!first.is_empty() && !reading.chunks.is_done());
        let mut all = first;
        while !reading.chunks.is_done() {
            all.extend(reading.chunks.next_slice(1_000));
        }
        let positions: Vec<usize> = all.iter().map(|c| c.position).collect();
        assert_eq!(positions, (0..all.len()).collect::<Vec<_>>());
        for p in [0, 99, 199] {
            let needle = format!("Paragraph {p} has");
            assert!(all.iter().any(|c| c.text.contains(&needle)), "{needle}");
        }
    }

    #[test]
    fn owned_bytes_decode_like_borrowed_ones() {
        for bytes in [
            &b"\xEF\xBB\xBFcaf\xC3\xA9"[..],
            b"caf\xE9 \x93q\x94",
            b"plain",
        ] {
            assert_eq!(decode_text(bytes.to_vec()), Ok(decode_plainly(bytes)));
        }
        assert!(read_document(DocKind::Text, b"  \n ".to_vec()).is_err());
    }

    #[test]
    fn qa_chunks_carry_the_question() {
        let chunks = qa_chunks("How do refunds work?", "Refunds take five days.");
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].heading.as_deref(), Some("How do refunds work?"));
        assert_eq!(chunks[0].text, "Refunds take five days.");
        let long = "Sentence number one is here. ".repeat(200);
        let chunks = qa_chunks("Q?", &long);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| c.heading.as_deref() == Some("Q?")));
    }
}
