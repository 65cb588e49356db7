//! From bytes to indexable chunks: which kind of document this is, its [`Document`], the
//! text that document renders to, and its chunks.

use super::chunk::{chunk_document, chunk_text, Chunk, ChunkOptions, DocumentChunks};
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
const PDF_MAGIC: &[u8] = b"%PDF-";
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

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

/// `decode_text` for UTF-8 and Windows-1252, on borrowed bytes, written the plain way: what
/// the tests hold it to.
#[cfg(test)]
fn decode_plainly(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| windows_1252(b)).collect(),
    }
}

fn windows_1252(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9f => HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
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

/// Text files in the wild are UTF-8 (perhaps with a BOM), UTF-16 (what Notepad and
/// spreadsheets call "Unicode", with a BOM or without), or, failing those, Windows-1252.
/// Bytes of another format sent under a text name (a PDF, a ZIP, anything holding NUL bytes
/// that is not UTF-16) are refused: indexed, they would fill search with noise. The bytes'
/// memory is reused when they are UTF-8 already: at the largest upload a second copy is a
/// good part of a Worker's memory.
fn not_read(charset: &str) -> ExtractError {
    ExtractError(format!(
        "The text is encoded as {charset}, which is not read: save it as UTF-8 (or UTF-16) and \
         send it again."
    ))
}

/// The failure of a page whose server names an encoding this reader lacks (`Content-Type:
/// text/html; charset=windows-1251`) and whose bytes are not UTF-8 or UTF-16 after all: read
/// as Windows-1252 it would fill the index with noise.
pub fn unread_charset(content_type: Option<&str>, bytes: &[u8]) -> Option<ExtractError> {
    let lower = content_type?.to_ascii_lowercase();
    let name = declared_charset(lower.as_bytes())?;
    let readable = reads_as_1252(&name)
        || utf16_order(bytes).is_some()
        || std::str::from_utf8(bytes).is_ok()
        || mostly_utf8(bytes);
    (!readable).then(|| not_read(&name))
}

/// The encoding a document names in its first kilobyte: an HTML `<meta charset="...">` (or
/// `content="text/html; charset=..."`) or an XML declaration's `encoding="..."`.
fn declared_charset(bytes: &[u8]) -> Option<String> {
    let head: String = bytes[..bytes.len().min(1024)]
        .iter()
        .map(|&b| char::from(b.to_ascii_lowercase()))
        .collect();
    let at = ["charset=", "encoding="]
        .iter()
        .filter_map(|key| head.find(key).map(|i| i + key.len()))
        .min()?;
    let name: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Whether an encoding's name is one this reader reads text in when it is not UTF-8:
/// Windows-1252 and the Latin-1 and ASCII it extends (UTF-8 and UTF-16 are read first).
fn reads_as_1252(name: &str) -> bool {
    matches!(
        name,
        "windows-1252"
            | "cp1252"
            | "iso-8859-1"
            | "iso8859-1"
            | "latin1"
            | "latin-1"
            | "l1"
            | "us-ascii"
            | "ascii"
            | "utf-8"
            | "utf8"
            | "utf-16"
            | "utf-16le"
            | "utf-16be"
    )
}

/// Whether bytes that are not UTF-8 look like Windows-1252 text: a language written in Latin
/// letters has few letters outside ASCII (French, German: under a tenth), where Windows-1251
/// Cyrillic or EUC-KR Hangul read that way is mostly accented noise; and Shift_JIS or GBK
/// double bytes keep landing on the five bytes Windows-1252 leaves undefined.
fn reads_as_western(bytes: &[u8]) -> bool {
    let (mut ascii_letters, mut high, mut undefined) = (0usize, 0usize, 0usize);
    for &b in bytes {
        match b {
            b if b.is_ascii_alphabetic() => ascii_letters += 1,
            0x81 | 0x8d | 0x8f | 0x90 | 0x9d => {
                high += 1;
                undefined += 1;
            }
            0x80.. => high += 1,
            _ => {}
        }
    }
    let letters = high + ascii_letters;
    undefined * 1000 <= bytes.len() && (letters < 20 || high * 2 <= letters)
}

fn decode_text(bytes: Vec<u8>) -> Result<String, ExtractError> {
    if let Some((big_endian, mark)) = utf16_order(&bytes) {
        let units = bytes[mark..].chunks_exact(2).map(|pair| {
            let pair = [pair[0], pair[1]];
            if big_endian {
                u16::from_be_bytes(pair)
            } else {
                u16::from_le_bytes(pair)
            }
        });
        return Ok(char::decode_utf16(units)
            .map(|c| c.unwrap_or('\u{fffd}'))
            .collect());
    }
    if bytes.starts_with(PDF_MAGIC) {
        return Err(ExtractError(
            "The content is a PDF, not text: send it as a .pdf file.".into(),
        ));
    }
    if bytes.starts_with(ZIP_MAGIC) {
        return Err(ExtractError(
            "The content is a ZIP archive (an Office document or an EPUB?), not text: send it \
             under its own extension."
                .into(),
        ));
    }
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(ExtractError(
            "The content holds binary data, not text.".into(),
        ));
    }
    let mut text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let mut bytes = e.into_bytes();
            if !mostly_utf8(&bytes) {
                // A document that says it is in an encoding this reader lacks (windows-1251,
                // Shift_JIS...) would be indexed as Windows-1252 noise: it fails with why.
                if let Some(name) = declared_charset(&bytes).filter(|name| !reads_as_1252(name)) {
                    return Err(not_read(&name));
                }
                if !reads_as_western(&bytes) {
                    return Err(ExtractError(
                        "The text is not UTF-8 or UTF-16, and it does not read as Windows-1252 \
                         either (Shift_JIS, GBK, EUC-KR or Windows-1251?): save it as UTF-8 and \
                         send it again."
                            .into(),
                    ));
                }
                return Ok(bytes.iter().map(|&b| windows_1252(b)).collect());
            }
            // A file cut short mid-character (a truncated download, a size limit) ends in
            // the first bytes of a character: dropped rather than shown as a stray mark.
            let cut = bytes
                .utf8_chunks()
                .last()
                .map(|chunk| chunk.invalid())
                .filter(
                    |tail| matches!(std::str::from_utf8(tail), Err(e) if e.error_len().is_none()),
                )
                .map_or(0, <[u8]>::len);
            bytes.truncate(bytes.len() - cut);
            match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
            }
        }
    };
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Whether bytes that are not valid UTF-8 are UTF-8 with a few damaged bytes (a stray
/// Windows-1252 letter pasted in, a cut-off last character) rather than Windows-1252. In
/// Windows-1252 text a valid multibyte sequence is a rare accident (a capital accented
/// letter right before a sign in 0x80-0xBF), while nearly every accented letter breaks one;
/// so a file holding at least ten valid multibyte sequences for each broken one is UTF-8.
fn mostly_utf8(bytes: &[u8]) -> bool {
    let (mut multibyte, mut broken) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        multibyte += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        broken += usize::from(!chunk.invalid().is_empty());
    }
    multibyte > 0 && broken * 10 <= multibyte
}

/// How much of a text file is looked at to tell its encoding.
const SNIFF_BYTES: usize = 8 * 1024;

/// `Some((big_endian, mark))` when the bytes are UTF-16, `mark` being the length of its byte
/// order mark: a byte order mark, text with no BOM in which one byte of most pairs is zero
/// (Latin-script text, as such files mostly are), or text of another script
/// (`unmarked_utf16_order`).
fn utf16_order(bytes: &[u8]) -> Option<(bool, usize)> {
    match bytes.get(..2) {
        Some([0xFF, 0xFE]) => return Some((false, 2)),
        Some([0xFE, 0xFF]) => return Some((true, 2)),
        _ => {}
    }
    let head = &bytes[..bytes.len().min(SNIFF_BYTES) & !1];
    let pairs = head.len() / 2;
    if pairs < 2 {
        return None;
    }
    let zeros_at = |offset: usize| {
        head.iter()
            .skip(offset)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count()
    };
    let (even, odd) = (zeros_at(0), zeros_at(1));
    // Mostly zero on one side, almost never on the other.
    if odd * 10 >= pairs * 7 && even * 20 <= pairs {
        Some((false, 0))
    } else if even * 10 >= pairs * 7 && odd * 20 <= pairs {
        Some((true, 0))
    } else if bytes.len().is_multiple_of(2) {
        unmarked_utf16_order(head, head.len() < bytes.len()).map(|big_endian| (big_endian, 0))
    } else {
        None
    }
}

/// Fewest characters that UTF-16 with few zero bytes is told by: in a shorter run of
/// Windows-1252 letters, chance too often makes one byte order read as ideographs and the
/// other not.
const UTF16_MIN_CHARS: usize = 16;

/// Whether `head` (the start of a file, cut there when `cut`) is UTF-16 of a script other
/// than Latin, with no byte order mark, and in which order. Read in the right order such
/// text is characters of one script with spaces and punctuation; read in the wrong one it
/// scatters over unrelated blocks or breaks on unpaired surrogates. Single-byte text read as
/// UTF-16 looks alike in both orders (its even and odd bytes are alike), so one order has to
/// read clearly better than the other; binary data reads as neither.
fn unmarked_utf16_order(head: &[u8], cut: bool) -> Option<bool> {
    if reads_as_utf8_text(head) {
        return None;
    }
    // A pair of two ASCII letters or spaces is a CJK ideograph read as UTF-16, and in
    // single-byte text nearly every pair is one; in CJK text well under half are.
    let wordy = |b: u8| b == b' ' || b.is_ascii_alphabetic();
    let pairs = head.len() / 2;
    let wordy_pairs = head
        .chunks_exact(2)
        .filter(|pair| wordy(pair[0]) && wordy(pair[1]))
        .count();
    if wordy_pairs * 2 > pairs {
        return None;
    }
    let little = Utf16Reading::of(head, false, cut);
    let big = Utf16Reading::of(head, true, cut);
    if little.chars < UTF16_MIN_CHARS {
        return None;
    }
    if little.is_text() && little.clearly_beats(&big) {
        Some(false)
    } else if big.is_text() && big.clearly_beats(&little) {
        Some(true)
    } else {
        None
    }
}

/// Whether bytes are UTF-8 text (perhaps cut mid-character at their end): valid, and with no
/// control characters but tabs, line and page breaks, which UTF-16 of many scripts reads as.
fn reads_as_utf8_text(bytes: &[u8]) -> bool {
    let valid = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() => {
            // The sniffed start may end mid-character.
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !valid
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}'))
}

/// Characters that text of any script holds: ASCII, Latin-1 signs, common punctuation and
/// currency signs, CJK and fullwidth punctuation.
const COMMON_CHARS: &[(u16, u16)] = &[
    (0x09, 0x0A),
    (0x0C, 0x0D),
    (0x20, 0x7E),
    (0xA0, 0xBF),
    (0xD7, 0xD7),
    (0xF7, 0xF7),
    (0x2010, 0x2027),
    (0x2030, 0x203A),
    (0x20A0, 0x20C0),
    (0x2116, 0x2116),
    (0x2122, 0x2122),
    (0x3000, 0x303F),
    (0xFF01, 0xFF65),
];

/// The letters of the scripts text files are written in, by the number of the script:
/// Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, ten of India and Sri Lanka, Thai, Lao,
/// Georgian, Chinese and Japanese (ideographs and kana), Korean.
const SCRIPT_LETTERS: &[(u16, u16, usize)] = &[
    (0x00C0, 0x024F, 0),
    (0x0300, 0x036F, 0),
    (0x1E00, 0x1EFF, 0),
    (0x0370, 0x03FF, 1),
    (0x0400, 0x052F, 2),
    (0x0530, 0x058F, 3),
    (0x0590, 0x05FF, 4),
    (0x0600, 0x06FF, 5),
    (0x0900, 0x097F, 6),
    (0x0980, 0x09FF, 7),
    (0x0A00, 0x0A7F, 8),
    (0x0A80, 0x0AFF, 9),
    (0x0B00, 0x0B7F, 10),
    (0x0B80, 0x0BFF, 11),
    (0x0C00, 0x0C7F, 12),
    (0x0C80, 0x0CFF, 13),
    (0x0D00, 0x0D7F, 14),
    (0x0D80, 0x0DFF, 15),
    (0x0E00, 0x0E7F, 16),
    (0x0E80, 0x0EFF, 17),
    (0x10A0, 0x10FF, 18),
    (0x3040, 0x30FF, 19),
    (0x4E00, 0x9FFF, 19),
    (0xF900, 0xFAFF, 19),
    (0xFF66, 0xFF9F, 19),
    (0xAC00, 0xD7A3, 20),
];
const SCRIPTS: usize = 21;

/// The start of a file read as UTF-16 in one byte order.
struct Utf16Reading {
    chars: usize,
    /// Unpaired surrogates, control characters, private-use characters and noncharacters,
    /// none of which text holds.
    broken: usize,
    /// Common characters and the letters of the script most of them are in.
    fitting: usize,
    /// How many blocks of 256 code points its characters beyond ASCII come from.
    blocks: usize,
}

impl Utf16Reading {
    fn of(head: &[u8], big_endian: bool, cut: bool) -> Utf16Reading {
        let mut units: Vec<u16> = head
            .chunks_exact(2)
            .map(|pair| {
                let pair = [pair[0], pair[1]];
                if big_endian {
                    u16::from_be_bytes(pair)
                } else {
                    u16::from_le_bytes(pair)
                }
            })
            .collect();
        // A pair cut in two where the sniffed start ends is not a broken one.
        if cut && units.last().is_some_and(|u| (0xD800..0xDC00).contains(u)) {
            units.pop();
        }
        let (mut chars, mut broken, mut common) = (0, 0, 0);
        let mut letters = [0usize; SCRIPTS];
        let mut blocks = [false; 256];
        for c in char::decode_utf16(units) {
            chars += 1;
            let Ok(c) = c else {
                broken += 1;
                continue;
            };
            let Ok(unit) = u16::try_from(u32::from(c)) else {
                // Beyond the Basic Multilingual Plane: emoji, rare ideographs.
                common += 1;
                continue;
            };
            let nonchar = (0xFDD0..=0xFDEF).contains(&unit) || unit >= 0xFFFE;
            let private = (0xE000..=0xF8FF).contains(&unit);
            if (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}')) || nonchar || private
            {
                broken += 1;
                continue;
            }
            if unit >= 0x80 {
                blocks[usize::from(unit >> 8)] = true;
            }
            if COMMON_CHARS.iter().any(|&(a, b)| (a..=b).contains(&unit)) {
                common += 1;
            } else if let Some(&(_, _, script)) = SCRIPT_LETTERS
                .iter()
                .find(|&&(a, b, _)| (a..=b).contains(&unit))
            {
                letters[script] += 1;
            }
        }
        Utf16Reading {
            chars,
            broken,
            fitting: common + letters.iter().max().copied().unwrap_or(0),
            blocks: blocks.iter().filter(|&&b| b).count(),
        }
    }

    /// Whether this reads as text: nothing broken, and all of it fitting (nine in ten
    /// characters, from 32 on: a rarer sign or a word in another script).
    fn is_text(&self) -> bool {
        let needed = if self.chars < 32 {
            self.chars
        } else {
            (self.chars * 9).div_ceil(10)
        };
        self.broken == 0 && self.fitting >= needed
    }

    /// Whether this reading is clearly better than the other byte order's: a quarter more of
    /// it fits, or (an alphabet read the wrong way round, which can land on the letters of
    /// one other script) its letters come from one or two blocks and the other's from many.
    fn clearly_beats(&self, other: &Utf16Reading) -> bool {
        other.fitting * 4 <= self.fitting * 3 || (self.blocks <= 2 && other.blocks >= 4)
    }
}

/// Reads a document of `kind`, taking its bytes so that they are let go as soon as they are
/// read.
pub fn read_document(kind: DocKind, bytes: Vec<u8>) -> Result<Document, ExtractError> {
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
    fn text_decoding_falls_back_to_windows_1252() {
        assert_eq!(decode_plainly(b"\xEF\xBB\xBFcaf\xC3\xA9"), "café");
        assert_eq!(decode_plainly(b"caf\xE9 \x93quoted\x94"), "café “quoted”");
    }

    #[test]
    fn text_in_an_undeclared_legacy_encoding_fails_rather_than_read_as_noise() {
        let refused: [&[u8]; 4] = [
            // Shift_JIS, GBK, Windows-1251 and EUC-KR, none saying so (each an odd number of
            // bytes: even, double-byte text may read as UTF-16 without a mark, tried first).
            b"\n\x94z\x91\x97\x82\xc9\x82\xc2\x82\xa2\x82\xc4\x81B\x82\xb2\x92\x8d\x95\xb6\x82\xcd\x8eO\x93\xfa\x88\xc8\x93\xe0\x82\xc9\x94\xad\x91\x97\x82\xb5\x82\xdc\x82\xb7\x81B",
            b"\n\xcd\xcb\xbb\xf5\xd5\xfe\xb2\xdf\xa3\xba\xb9\xcb\xbf\xcd\xbf\xc9\xd2\xd4\xd4\xda\xca\xd5\xb5\xbd\xc9\xcc\xc6\xb7\xba\xf3\xc6\xdf\xcc\xec\xc4\xda\xc9\xea\xc7\xeb\xcd\xcb\xbb\xf5\xa1\xa3",
            b"\xc4\xee\xf1\xf2\xe0\xe2\xea\xe0 \xef\xee \xcc\xee\xf1\xea\xe2\xe5 \xe1\xe5\xf1\xef\xeb\xe0\xf2\xed\xee \xef\xf0\xe8 \xe7\xe0\xea\xe0\xe7\xe5 \xee\xf2 \xf2\xf0\xb8\xf5 \xf2\xfb\xf1\xff\xf7 \xf0\xf3\xe1\xeb\xe5\xe9.",
            b"\n\xb9\xe8\xbc\xdb\xc0\xba \xc1\xd6\xb9\xae \xc8\xc4 \xbb\xef\xc0\xcf \xc0\xcc\xb3\xbb\xbf\xa1 \xbd\xc3\xc0\xdb\xb5\xcb\xb4\xcf\xb4\xd9.",
        ];
        for bytes in refused {
            let err = decode_text(bytes.to_vec()).expect_err(&String::from_utf8_lossy(bytes));
            assert!(err.0.contains("save it as UTF-8"), "{}", err.0);
        }
        let german = b"\xdcber die R\xfccksendung: Sie k\xf6nnen Waren innerhalb von 14 Tagen zur\xfcckgeben, \xe7a va.";
        assert!(decode_text(german.to_vec())
            .expect("read")
            .starts_with("Über die Rücksendung"));
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
    fn utf16_text_is_read_with_or_without_its_byte_order_mark() {
        let text = "Produkt\tPreis\nKaffeebohnen\t5 €\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        for bytes in [
            [&[0xFF, 0xFE][..], &le].concat(),
            [&[0xFE, 0xFF][..], &be].concat(),
            le.clone(),
            be.clone(),
        ] {
            assert_eq!(decode_text(bytes).as_deref(), Ok(text));
        }
    }

    #[test]
    fn utf8_with_a_few_broken_bytes_stays_utf8() {
        let good = "Die Übergrößen für Mäntel sind verfügbar. ".repeat(20);
        let cut = [good.as_bytes(), &"ü".as_bytes()[..1]].concat();
        assert_eq!(decode_text(cut), Ok(good.clone()));
        let stray = [good.as_bytes(), b"Stray \xE9t\xE9."].concat();
        assert_eq!(
            decode_text(stray),
            Ok(format!("{good}Stray \u{fffd}t\u{fffd}."))
        );
        let marked = [b"\xEF\xBB\xBF", good.as_bytes(), b"\xFF"].concat();
        assert_eq!(decode_text(marked), Ok(format!("{good}\u{fffd}")));
    }

    #[test]
    fn windows_1252_is_not_taken_for_broken_utf8() {
        let text = "Die Übergrößen für Mäntel sind verfügbar. ".repeat(20);
        let bytes = b"Die \xDCbergr\xF6\xDFen f\xFCr M\xE4ntel sind verf\xFCgbar. ".repeat(20);
        assert_eq!(decode_text(bytes.clone()), Ok(text.clone()));
        // Two bytes that happen to be a valid sequence ("Ã©" is UTF-8's "é") among many that
        // are not.
        let accident = [&bytes[..], b"\xC3\xA9"].concat();
        assert_eq!(decode_text(accident), Ok(format!("{text}Ã©")));
        assert_eq!(
            decode_text(b"Stray \xE9t\xE9".to_vec()).as_deref(),
            Ok("Stray été")
        );
    }

    fn utf16_of(text: &str, big_endian: bool) -> Vec<u8> {
        text.encode_utf16()
            .flat_map(|u| {
                if big_endian {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                }
            })
            .collect()
    }

    #[test]
    fn utf16_of_other_scripts_is_read_without_a_byte_order_mark() {
        let long = "Медведь любит малину и мёд в сибирской тайге. ".repeat(200);
        for text in [
            "Медведь любит малину и мёд в сибирской тайге.",
            "東京の猫カフェは午前十時に開店します。",
            "北京是中华人民共和国的首都，也是全国的政治中心。",
            "서울은 대한민국의 수도이며 가장 큰 도시입니다.",
            "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
            "القاهرة هي عاصمة مصر وأكبر مدنها.",
            "ירושלים היא עיר הבירה של ישראל.",
            "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
            "नई दिल्ली भारत की राजधानी है और एक बड़ा शहर है।",
            "Hà Nội là thủ đô của nước Cộng hòa Xã hội chủ nghĩa Việt Nam.",
            "Emoji 🐻🍯 und Umlaute: Bär, Größe, Höhle.",
            &long,
        ] {
            for big_endian in [false, true] {
                let bytes = utf16_of(text, big_endian);
                assert_eq!(utf16_order(&bytes), Some((big_endian, 0)), "{text}");
                assert_eq!(decode_text(bytes).as_deref(), Ok(text));
            }
        }
    }

    #[test]
    fn single_byte_text_and_binary_are_not_taken_for_utf16() {
        let windows_1252 = [
            &b"Die \xDCbergr\xF6\xDFen f\xFCr M\xE4ntel sind verf\xFCgbar. Le caf\xE9 \xE9tait \
               tr\xE8s anim\xE9, o\xF9 l'on servait des cr\xEApes. \x93Quoted\x94 \x96 \x85 \x80 5"
                [..],
            b"Name;Stra\xDFe;PLZ;Ort\r\nM\xFCller;Hauptstra\xDFe 5;80331;M\xFCnchen\r\n\
              Sch\xE4fer;G\xE4rtnerweg 12;50667;K\xF6ln\r\n\xD6zdemir;Bahnhofstra\xDFe 1;10115",
            b"Lecaf\xE9\xE9taittr\xE8sanim\xE9cematin,o\xF9l'onservaitdescr\xEApes.Stra\xDFe",
            b"\xC9\xC9\xC0\xC0\xC7\xC7 \xDC\xD6\xC4 \xDF\xDF \xE9\xE9 \xE8\xE8 \xE0\xE0 \xF9\xF9",
        ];
        for text in windows_1252 {
            for len in (2..=text.len()).step_by(2) {
                for start in 0..=text.len() - len {
                    let bytes = &text[start..start + len];
                    assert_eq!(utf16_order(bytes), None, "{bytes:?}");
                }
            }
        }
        // UTF-8 of these scripts with a broken byte is not UTF-16 either.
        for text in [
            "東京の猫カフェは午前十時に開店します。",
            "Медведь любит малину.",
        ] {
            for broken in [&b"\xFF"[..], b"\xFF\xFE"] {
                let bytes = [text.as_bytes(), broken].concat();
                assert_eq!(utf16_order(&bytes), None, "{text}");
            }
        }
        // Random bytes of every even length up to 2 KiB, and at the length sniffed.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut random = |len: usize| -> Vec<u8> {
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes()[3]
                })
                .collect()
        };
        for len in (2..=2048).step_by(2).chain([SNIFF_BYTES, 3 * SNIFF_BYTES]) {
            for _ in 0..2 {
                let bytes = random(len);
                assert_eq!(utf16_order(&bytes), None, "{bytes:?}");
            }
        }
        let err = decode_text(random(3 * SNIFF_BYTES)).expect_err("random bytes");
        assert!(err.0.contains("binary"), "{}", err.0);
    }

    #[test]
    fn other_formats_under_a_text_name_are_refused() {
        for (bytes, said) in [
            (&b"%PDF-1.7\n%\xE2\xE3"[..], "PDF"),
            (b"PK\x03\x04\x14\x00\x06\x00", "ZIP"),
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary"),
        ] {
            let err = decode_text(bytes.to_vec()).expect_err(said);
            assert!(err.0.contains(said), "{}", err.0);
        }
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
