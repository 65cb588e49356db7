//! Extraction from real fixtures (see tests/fixtures/make_fixtures.py) and
//! from small hand-built files that exercise one feature or defect each.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use edgechat_core::knowledge::extract::{
    docx_to_text, epub_to_text, odf_to_text, pdf_to_text, pptx_to_text, xlsx_to_text,
};
use edgechat_core::knowledge::extract::{ExtractError, Extracted};

mod common;
use common::stored_zip;

fn fixture(name: &str) -> Vec<u8> {
    common::fixture_bytes("office", name)
}

fn pdf(name: &str) -> Extracted {
    pdf_to_text(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn docx(name: &str) -> Extracted {
    docx_to_text(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Asserts that each item is a whole line of `text`, in the given order.
fn lines_in_order(text: &str, want: &[&str]) {
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    for w in want {
        match lines[from..].iter().position(|l| l == w) {
            Some(i) => from += i + 1,
            None => panic!("line {w:?} missing or out of order in:\n{text}"),
        }
    }
}

const TABLE: [&str; 5] = [
    "Name | Count | Colour",
    "Alpha | 12 | Red",
    "Beta | 7 | Green",
    "Gamma | 31 | Blue",
    "Delta | 45 | Yellow",
];

const INTRO: &str = "The survey covered three coastal regions during the spring season. Each team recorded the number of nesting sites, the dominant colour of the markers and the weather on the day of the visit, so that the results can be compared with the previous year.";

#[test]
fn fpdf_report_headings_paragraphs_table() {
    let e = pdf("report_fpdf.pdf");
    assert_eq!(e.title.as_deref(), Some("Quarterly Field Report"));
    lines_in_order(
        &e.text,
        &[
            "# Quarterly Field Report",
            "## Introduction",
            INTRO,
            "## Results",
        ],
    );
    lines_in_order(&e.text, &TABLE);
    lines_in_order(
        &e.text,
        &["Delta | 45 | Yellow", "## Discussion", "## Appendix"],
    );
    assert!(e
        .text
        .contains("Gamma had the highest count of the three regions surveyed in spring."));
    lines_in_order(
        &e.text,
        &[
            "Appendix note 1: the marker at site 1 was checked twice.",
            "Appendix note 40: the marker at site 40 was checked twice.",
        ],
    );
    // Paragraphs are separated by exactly one blank line.
    assert!(!e.text.contains("\n\n\n"));
}

#[test]
fn object_streams_and_xref_streams_give_the_same_text() {
    let plain = pdf("report_fpdf.pdf");
    let packed = pdf("objstreams.pdf");
    assert_eq!(plain, packed);
}

#[test]
fn linearized_file_gives_the_same_text() {
    assert_eq!(pdf("linearized.pdf"), pdf("report_fpdf.pdf"));
}

#[test]
fn incremental_update_replaces_objects() {
    let e = pdf("incremental.pdf");
    assert_eq!(e.title.as_deref(), Some("Revised Field Report"));
    assert!(e.text.starts_with("# Revised Field Report\n"), "{}", e.text);
    assert!(!e.text.contains("Quarterly"));
    lines_in_order(&e.text, &TABLE);
}

#[test]
fn truetype_type0_font_with_tounicode() {
    let e = pdf("unicode_ttf.pdf");
    assert_eq!(e.title, None);
    lines_in_order(
        &e.text,
        &[
            "# Überblick",
            "Grüße aus Zürich: naïve café, déjà vu, smörgåsbord.",
            "Ελληνικά κείμενα και Привет, мир — “quoted” text…",
            "Ort | Zahl | Farbe",
            "Zürich | 3 | Grün",
            "Genève | 9 | Rouge",
        ],
    );
}

#[test]
fn reportlab_ascii85_lists_and_table() {
    let e = pdf("reportlab_doc.pdf");
    assert_eq!(e.title.as_deref(), Some("Harbour Inspection Notes"));
    lines_in_order(
        &e.text,
        &[
            "# Harbour Inspection Notes",
            "# Scope of the inspection",
            INTRO,
            "## Findings",
            "- The north pier needs new railings.",
            "- Two mooring rings are loose.",
            "- The slipway is in good condition.",
        ],
    );
    lines_in_order(&e.text, &TABLE);
    lines_in_order(&e.text, &["Delta | 45 | Yellow", "# Follow-up"]);
}

#[test]
fn table_drawn_as_positioned_text_comes_out_row_by_row() {
    let e = pdf("positioned_table.pdf");
    lines_in_order(
        &e.text,
        &[
            "# Inventory by shelf",
            "Shelf | Item | Qty | Note",
            "A1 | Bolts | 250 | steel",
            "A2 | Nuts | 300 | brass",
            "B1 | Washers | 1200 | nylon",
            "Counted on the first Monday of the month.",
        ],
    );
}

#[test]
fn libreoffice_export_of_the_docx() {
    let e = pdf("document_lo.pdf");
    assert_eq!(e.title.as_deref(), Some("Project Handbook"));
    lines_in_order(
        &e.text,
        &["# Project Handbook", "## Getting started", INTRO],
    );
    lines_in_order(
        &e.text,
        &[
            "- Install the tools.",
            "- Read the safety notes.",
            "- Sign the form.",
            "- 1. First numbered step.",
            "- 2. Second numbered step.",
        ],
    );
    let mut rows = TABLE.to_vec();
    rows.push("Epsilon | 3 | Purple and white");
    lines_in_order(&e.text, &rows);
    assert!(e
        .text
        .contains("Line one of the address Line two of the address"));
}

#[test]
fn chromium_printed_web_page_with_drawn_bullets() {
    let e = pdf("chrome.pdf");
    assert_eq!(e.title.as_deref(), Some("Field Notes Web Page"));
    lines_in_order(
        &e.text,
        &[
            "# Field Notes Web Page",
            "## Summary",
            "The survey covered three coastal regions during the spring season. Each team recorded the number of nesting sites, the dominant colour of the markers and the weather on the day of the visit.",
            // Chromium draws list bullets as filled circles, not glyphs.
            "- Install the tools.",
            "- Read the safety notes.",
            "Name | Count | Colour",
            "Alpha | 12 | Red",
            "Beta | 7 | Green",
            "Grüße aus Zürich — “quoted” text.",
        ],
    );
}

#[test]
fn ghostscript_man_page_with_word_spaced_table_and_ligatures() {
    let e = pdf("groff_gs.pdf");
    lines_in_order(
        &e.text,
        &[
            "SURVEY(1) | Field Manual | SURVEY(1)",
            "# DESCRIPTION",
            "The survey covered three coastal regions during the spring season. Each team recorded the number of nesting sites.",
            "Name | Count | Colour",
            "Alpha | 12 | Red",
            "Beta | 7 | Green",
            "A final paragraph with fi and fl ligatures: efficient office flow.",
        ],
    );
}

#[test]
fn long_pdf_matches_its_docx_source_word_for_word() {
    let from_pdf = pdf("long_lo.pdf");
    let from_docx = docx("long.docx");
    assert_eq!(from_pdf.title.as_deref(), Some("Long Survey Archive"));
    // Heading levels differ by design (PDF ranks sizes, DOCX names styles).
    let strip = |t: &str| {
        t.lines()
            .map(|l| l.trim_start_matches('#').trim().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&from_pdf.text), strip(&from_docx.text));
    lines_in_order(&from_pdf.text, &["S60R5C0 | S60R5C1 | S60R5C2 | S60R5C3"]);
}

fn assert_err(res: Result<Extracted, ExtractError>, needle: &str) {
    match res {
        Ok(e) => panic!(
            "expected an error containing {needle:?}, got text:\n{}",
            e.text
        ),
        Err(e) => {
            assert!(e.0.contains(needle), "{e}");
            assert!(!e.to_string().is_empty());
        }
    }
}

#[test]
fn pdf_errors_are_clear() {
    assert_err(pdf_to_text(&fixture("truncated.pdf")), "truncated");
    assert_err(pdf_to_text(&fixture("encrypted.pdf")), "encrypted");
    assert_eq!(
        pdf_to_text(&fixture("image_only.pdf")),
        Err(ExtractError(
            "the PDF has no extractable text (it may be scanned images)".into()
        ))
    );
    assert_err(pdf_to_text(b""), "not a PDF");
    assert_err(pdf_to_text(&fixture("document.docx")), "not a PDF");
    assert_err(
        pdf_to_text(b"%PDF-1.7\nthis is not really a pdf\n%%EOF\n"),
        "damaged",
    );
}

#[test]
fn docx_structure() {
    let e = docx("document.docx");
    assert_eq!(e.title.as_deref(), Some("Project Handbook"));
    lines_in_order(
        &e.text,
        &[
            "# Project Handbook",
            "# Getting started",
            INTRO,
            "Runs are joined without extra spaces, and a tab separates words.",
            "## Checklist",
            "- Install the tools.",
            "- Read the safety notes.",
            "- Sign the form.",
            "- First numbered step.",
            "- Second numbered step.",
            "## Inventory",
        ],
    );
    let mut rows = TABLE.to_vec();
    rows.push("Epsilon | 3 | Purple and white");
    rows.push("# Notes");
    rows.push("Line one of the address");
    rows.push("Line two of the address");
    lines_in_order(&e.text, &rows);
    // Blocks: one blank line between paragraphs, none inside lists and tables.
    assert!(e
        .text
        .contains("\n\n- Install the tools.\n- Read the safety notes.\n"));
    assert!(e.text.contains("Name | Count | Colour\nAlpha | 12 | Red\n"));
    assert!(!e.text.contains("\n\n\n"));
}

#[test]
fn docx_from_libreoffice_and_stored_zip_read_the_same() {
    let base = docx("document.docx");
    assert_eq!(docx("document_stored.docx"), base);
    let lo = docx("document_lo.docx");
    assert_eq!(lo.title, base.title);
    assert_eq!(lo.text, base.text);
}

#[test]
fn docx_errors_are_clear() {
    assert_err(docx_to_text(&fixture("not_a_docx.docx")), "not a DOCX");
    assert_err(
        docx_to_text(&fixture("no_document.docx")),
        "word/document.xml",
    );
    assert_err(docx_to_text(&fixture("report_fpdf.pdf")), "not a DOCX");
    assert_err(docx_to_text(b""), "not a DOCX");
    let full = fixture("document.docx");
    assert_err(docx_to_text(&full[..full.len() * 2 / 3]), "truncated");
    assert_err(
        docx_to_text(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0]),
        "password-protected",
    );
}

#[test]
fn docx_title_falls_back_to_first_heading_and_handles_odd_markup() {
    let doc = r#"<?xml version="1.0" encoding="UTF-8"?>
<w:document xmlns:w="x" xmlns:mc="m"><w:body>
<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r><w:t>Fish &amp; Chips</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Kept </w:t></w:r><w:del><w:r><w:delText>deleted </w:delText></w:r></w:del><w:r><w:instrText>PAGE</w:instrText><w:t>text&#x21;</w:t></w:r><w:r><w:rPr><w:vanish/></w:rPr><w:t xml:space="preserve"> hidden words</w:t><w:tab/></w:r><w:r><w:rPr><w:vanish w:val="0"/></w:rPr><w:t xml:space="preserve"> Shown.</w:t></w:r></w:p>
<w:p><mc:AlternateContent><mc:Choice><w:r><w:t>new</w:t></w:r></mc:Choice><mc:Fallback><w:r><w:t>old</w:t></w:r></mc:Fallback></mc:AlternateContent></w:p>
<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>direct numbering</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>outer</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>in1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>in2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
</w:tc><w:tc><w:p><w:r><w:t>right</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
</w:body></w:document>"#;
    let bytes = stored_zip(&[("word/document.xml", doc)]);
    let e = docx_to_text(&bytes).expect("synthetic docx");
    assert_eq!(e.title.as_deref(), Some("Fish & Chips"));
    assert_eq!(
        e.text,
        "## Fish & Chips\n\nKept text! Shown.\n\nnew\n\n- direct numbering\n\nouter in1 in2 | right"
    );
}

// ---- hand-built PDFs ----

fn stream(extra: &str, data: &[u8]) -> Vec<u8> {
    let mut s = format!("<< /Length {} {extra} >>\nstream\n", data.len()).into_bytes();
    s.extend_from_slice(data);
    s.extend_from_slice(b"\nendstream");
    s
}

/// Objects are numbered from 1; object 1 is the catalog.
fn build_pdf(objs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objs.iter().enumerate() {
        offsets.push(out.len());
        writeln!(out, "{} 0 obj", i + 1).unwrap();
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    write!(out, "xref\n0 {}\n0000000000 65535 f \n", objs.len() + 1).unwrap();
    for o in offsets {
        writeln!(out, "{o:010} 00000 n ").unwrap();
    }
    write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objs.len() + 1
    )
    .unwrap();
    out
}

/// A one-page PDF: object 4 is the content, object 5 the font F1.
fn one_page(content: &[u8], font: &str, extra: Vec<Vec<u8>>) -> Vec<u8> {
    let mut objs = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /X1 6 0 R >> >> >>".to_vec(),
        stream("", content),
        font.as_bytes().to_vec(),
    ];
    objs.extend(extra);
    build_pdf(&objs)
}

const HELV: &str =
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";

#[test]
fn tj_kerning_gaps_become_spaces_only_when_large() {
    let c = b"BT /F1 12 Tf 72 700 Td [(Hel)-20(lo)-300(wor)10(ld)] TJ 0 -30 Td (Caf\\351 \\223ok\\224) Tj ET";
    let e = pdf_to_text(&one_page(c, HELV, vec![])).expect("pdf");
    assert_eq!(e.text, "Hello world\n\nCafé “ok”");
}

#[test]
fn type0_tounicode_bfrange_bfchar_and_ligature() {
    let cmap = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
        1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
        1 beginbfrange <0001> <0003> <0041> endbfrange\n\
        1 beginbfrange <0010> <0011> [<0078> <D83DDE00>] endbfrange\n\
        1 beginbfchar <0004> <00660069> endbfchar\n\
        endcmap end end";
    let font = "<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+Test /Encoding /Identity-H /DescendantFonts [7 0 R] /ToUnicode 8 0 R >>";
    let desc = b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+Test /DW 500 /W [1 [600 600 600] 16 17 700] >>".to_vec();
    let c = b"BT /F1 10 Tf 50 700 Td <000100020003> Tj ( ) Tj <00040010> Tj <0011> Tj ET";
    let pdf = one_page(c, font, vec![b"<< >>".to_vec(), desc, stream("", cmap)]);
    let e = pdf_to_text(&pdf).expect("pdf");
    assert_eq!(e.text, "ABC fix😀");
}

#[test]
fn differences_glyph_names_and_ligatures() {
    let font = "<< /Type /Font /Subtype /Type1 /BaseFont /Custom /FirstChar 65 /LastChar 69 /Widths [500 500 500 500 500] \
        /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding /Differences [65 /eacute /uni00FC /f_f /Omega /fi] >> >>";
    let c = b"BT /F1 10 Tf 50 700 Td (ABCD) Tj ( Ens) Tj ET";
    let e = pdf_to_text(&one_page(c, font, vec![])).expect("pdf");
    assert_eq!(e.text, "éüffΩ fins");
}

#[test]
fn fake_bold_overprint_is_read_once() {
    // Each glyph is drawn, stepped back, and drawn again slightly offset.
    let c = b"BT /F1 12 Tf 72 700 Td [(B) 650 (B) (o) 540 (o) (l) 210 (l) (d)] TJ ET";
    let e = pdf_to_text(&one_page(c, HELV, vec![])).expect("pdf");
    assert_eq!(e.text, "Bold");
}

#[test]
fn simple_font_with_one_byte_tounicode() {
    let cmap = b"begincmap 1 begincodespacerange <00> <FF> endcodespacerange\n\
        2 beginbfchar <01> <0416> <02> <0020> endbfchar 1 beginbfrange <03> <04> <0430> endbfrange endcmap";
    let font = "<< /Type /Font /Subtype /TrueType /BaseFont /ABCDEF+Sub /FirstChar 1 /LastChar 4 \
        /Widths [600 250 500 500] /ToUnicode 7 0 R >>";
    let c = b"BT /F1 10 Tf 50 700 Td <01020304> Tj (A) Tj ET";
    let e = pdf_to_text(&one_page(
        c,
        font,
        vec![b"<< >>".to_vec(), stream("", cmap)],
    ))
    .expect("pdf");
    // Codes without a mapping fall back to the font's simple encoding.
    assert_eq!(e.text, "Ж абA");
}

#[test]
fn filters_ascii_hex_and_run_length() {
    let hex: String = b"BT /F1 12 Tf 72 700 Td (hex works) Tj ET"
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let objs = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /Contents [4 0 R 6 0 R] /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        stream("/Filter /ASCIIHexDecode", format!("{hex}>").as_bytes()),
        HELV.as_bytes().to_vec(),
        // Run-length: a literal run of 36 bytes, then 128 (end).
        stream("/Filter /RunLengthDecode", &[&[35u8][..], b"BT /F1 12 Tf 72 600 Td (rle) Tj ET", &[128]].concat()),
    ];
    let e = pdf_to_text(&build_pdf(&objs)).expect("pdf");
    assert_eq!(e.text, "hex works\n\nrle");
}

#[test]
fn broken_xref_offsets_are_repaired_by_scanning() {
    let mut pdf = one_page(
        b"BT /F1 12 Tf 72 700 Td (still readable) Tj ET",
        HELV,
        vec![],
    );
    let pos = pdf
        .windows(9)
        .rposition(|w| w == b"startxref")
        .expect("startxref");
    pdf.truncate(pos);
    pdf.extend_from_slice(b"startxref\n999999\n%%EOF\n");
    let e = pdf_to_text(&pdf).expect("repaired pdf");
    assert_eq!(e.text, "still readable");
}

#[test]
fn rotated_page_reads_upright() {
    // Content for a page shown turned clockwise: text runs up the unrotated
    // page, and later lines sit further right.
    let c = b"BT /F1 12 Tf 0 1 -1 0 100 100 Tm (first line) Tj 0 1 -1 0 114 100 Tm (second) Tj 0 1 -1 0 114 142 Tm (part) Tj ET";
    let mut pdf = one_page(c, HELV, vec![]);
    let page = b"/Type /Page /Parent";
    let pos = pdf
        .windows(page.len())
        .position(|w| w == page)
        .expect("page");
    pdf.splice(pos..pos, b"/Rotate 90 ".iter().copied());
    // The inserted bytes shift offsets; the reader repairs that by scanning.
    let e = pdf_to_text(&pdf).expect("pdf");
    assert_eq!(e.text, "first line second part");
}

/// Runs `f` on another thread and fails if it does not finish in time, so
/// an endless loop shows up as a failure rather than a hung test run.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).expect("took too long or panicked")
}

#[test]
fn hostile_structures_end_quickly() {
    let secs = Duration::from_secs(30);
    // A page tree whose kid is its own parent.
    let cyclic = build_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Pages /Kids [2 0 R] >>".to_vec(),
    ]);
    assert!(within(secs, move || pdf_to_text(&cyclic)).is_err());
    // A form XObject that draws itself.
    let self_form = one_page(
        b"BT /F1 12 Tf 72 700 Td (outer) Tj ET /X1 Do",
        HELV,
        vec![stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X1 6 0 R >> >>", b"/X1 Do")],
    );
    let e = within(secs, move || pdf_to_text(&self_form)).expect("text");
    assert_eq!(e.text, "outer");
    // Nesting deep enough to overflow a naive recursive parser.
    let deep = one_page(
        &[
            &b"BT /F1 12 Tf 72 700 Td (deep) Tj ET "[..],
            &[b'['; 200_000],
        ]
        .concat(),
        HELV,
        vec![],
    );
    assert_eq!(
        within(secs, move || pdf_to_text(&deep)).expect("text").text,
        "deep"
    );
    // Damage that would make a naive repair scan quadratic: unclosed
    // dictionaries, streams without an end, and endless trailers.
    for unit in [
        "{} 0 obj << /A [ ",
        "{} 0 obj << /Length 9 >> stream\nxx ",
        "trailer << /Size {} ",
    ] {
        let mut junk = b"%PDF-1.4\n".to_vec();
        for i in 1..60_000 {
            junk.extend_from_slice(unit.replace("{}", &i.to_string()).as_bytes());
        }
        let started = Instant::now();
        assert!(within(secs, move || pdf_to_text(&junk)).is_err());
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{unit}: {:?}",
            started.elapsed()
        );
    }
    let deep = format!("<w:document>{}", "<a>".repeat(200_000));
    let deep_docx = stored_zip(&[("word/document.xml", &deep)]);
    assert!(within(secs, move || docx_to_text(&deep_docx)).is_ok());
}

#[test]
fn decompression_bombs_are_stopped() {
    let mut content = b"BT /F1 12 Tf 72 700 Td (bomb) Tj ET ".to_vec();
    content.resize(100 << 20, b' ');
    let packed = miniz_oxide::deflate::compress_to_vec_zlib(&content, 6);
    drop(content);
    assert!(packed.len() < 1 << 20);
    let objs = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_vec(),
        stream("/Filter /FlateDecode", &packed),
        HELV.as_bytes().to_vec(),
    ];
    let pdf = build_pdf(&objs);
    let res = within(Duration::from_secs(60), move || pdf_to_text(&pdf));
    assert_err(res, "64 MiB");
}

/// xorshift64*: deterministic, dependency-free randomness for mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut d = base.to_vec();
    for _ in 0..=rng.below(3) {
        let len = d.len();
        match rng.below(6) {
            0 => {
                for _ in 0..=rng.below(8) {
                    let i = rng.below(len);
                    if let Some(b) = d.get_mut(i) {
                        *b ^= 1 << rng.below(8);
                    }
                }
            }
            1 => d.truncate(rng.below(len)),
            2 => {
                // Structural bytes hurt parsers more than random ones.
                const SPECIAL: &[u8] = b"()<>[]/%0123456789 \nRobjendstreamxref";
                for _ in 0..=rng.below(8) {
                    let i = rng.below(len);
                    if let Some(b) = d.get_mut(i) {
                        *b = SPECIAL[rng.below(SPECIAL.len())];
                    }
                }
            }
            3 => {
                let a = rng.below(len);
                let n = rng.below(4096).min(len - a.min(len));
                let chunk = d[a..a + n].to_vec();
                let at = rng.below(d.len());
                d.splice(at..at, chunk);
            }
            4 => {
                let a = rng.below(len);
                let n = rng.below(64).min(len - a.min(len));
                d.drain(a..a + n);
            }
            _ => {
                let at = rng.below(len);
                let junk: Vec<u8> = (0..rng.below(32)).map(|_| rng.next() as u8).collect();
                d.splice(at..at, junk);
            }
        }
    }
    d
}

#[test]
fn mutated_fixtures_never_panic_or_hang() {
    type Read = fn(&[u8]) -> Result<Extracted, ExtractError>;
    let cases: Vec<(&str, Read, usize)> = vec![
        ("report_fpdf.pdf", pdf_to_text, 150),
        ("incremental.pdf", pdf_to_text, 300),
        ("objstreams.pdf", pdf_to_text, 200),
        ("unicode_ttf.pdf", pdf_to_text, 100),
        ("reportlab_doc.pdf", pdf_to_text, 150),
        ("positioned_table.pdf", pdf_to_text, 100),
        ("document_lo.pdf", pdf_to_text, 60),
        ("encrypted.pdf", pdf_to_text, 50),
        ("image_only.pdf", pdf_to_text, 50),
        ("linearized.pdf", pdf_to_text, 50),
        ("chrome.pdf", pdf_to_text, 60),
        ("groff_gs.pdf", pdf_to_text, 60),
        ("long_lo.pdf", pdf_to_text, 10),
        ("document.docx", docx_to_text, 100),
        ("document_stored.docx", docx_to_text, 300),
        ("document_lo.docx", docx_to_text, 60),
        ("deck.pptx", pptx_to_text, 150),
        ("book.xlsx", xlsx_to_text, 150),
        ("guide.epub", epub_to_text, 150),
        ("minutes.odt", odf_to_text, 100),
        ("budget.ods", odf_to_text, 100),
        ("talk.odp", odf_to_text, 100),
    ];
    // OFFICE_FUZZ_SCALE=20 (say) runs a longer campaign; the seed can vary too.
    let scale: usize = std::env::var("OFFICE_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let seed: u64 = std::env::var("OFFICE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);
    let mut rng = Rng(seed | 1);
    let mut outcomes = (0, 0);
    for (name, read, rounds) in cases {
        let rounds = rounds * scale;
        let base = fixture(name);
        for round in 0..rounds {
            let data = mutate(&mut rng, &base);
            let started = Instant::now();
            let res = within(Duration::from_secs(20), move || read(&data));
            let took = started.elapsed();
            assert!(
                took < Duration::from_secs(20),
                "{name} round {round} took {took:?}"
            );
            match res {
                Ok(_) => outcomes.0 += 1,
                Err(e) => {
                    assert!(!e.0.is_empty());
                    outcomes.1 += 1;
                }
            }
        }
    }
    println!("mutations: {} ok, {} errors", outcomes.0, outcomes.1);
}

#[test]
fn pptx_reads_slides_in_shown_order_with_notes_and_tables() {
    let e = pptx_to_text(&fixture("deck.pptx")).expect("deck.pptx");
    assert_eq!(e.title.as_deref(), Some("Riverside Library Services"));
    assert_eq!(
        e.text,
        "# Riverside Library Services\n\nWhat members can borrow, and when\n\n\
         # Slide 2\n\nLate returns cost 20 cents per item per day.\n\n\
         # Opening hours\n\n- Monday to Friday: 9:00 to 19:00\n- Saturday: 10:00 to 16:00\n\
         - Sunday: closed\n\n\
         Remind visitors that the book drop beside the main door is open all night.\n\n\
         # Loan periods\n\nItem: Books; Days: 21\nItem: DVDs; Days: 7\nItem: Magazines; Days: 14"
    );
    assert!(!e.text.contains("Staff rota"), "a hidden slide is not read");
}

#[test]
fn xlsx_reads_visible_sheets_as_tables_of_shown_values() {
    let e = xlsx_to_text(&fixture("book.xlsx")).expect("book.xlsx");
    assert_eq!(e.title.as_deref(), Some("Membership plans"));
    assert_eq!(
        e.text,
        "# Plans\n\n\
         Plan: Basic; Monthly price: 4.5; Discount: 10%; Renews on: 2025-01-31\n\
         Plan: Family; Monthly price: 9.99; Discount: 15%; Renews on: 2025-01-28\n\
         Plan: Student; Monthly price: 0.3; Renews on: 2025-03-01 09:30:00\n\n\
         # Branches\n\nBranch: Riverside; Address: 2 Quay Street\nParking behind the building"
    );
    assert!(!e.text.contains("x-17"), "a hidden sheet is not read");
}

#[test]
fn pptx_and_xlsx_errors_are_clear() {
    let docx = fixture("document.docx");
    assert_err(pptx_to_text(&docx), "it looks like a Word document");
    assert_err(
        xlsx_to_text(&docx),
        "not an XLSX: it has no xl/workbook.xml",
    );
    assert_err(
        xlsx_to_text(&fixture("deck.pptx")),
        "it looks like a presentation",
    );
    assert_err(pptx_to_text(b"plain text"), "not a PPTX");
    let deck = fixture("deck.pptx");
    assert_err(pptx_to_text(&deck[..deck.len() / 2]), "PPTX is truncated");
    assert_err(
        xlsx_to_text(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0]),
        "old binary Office file",
    );
}

#[test]
fn pptx_without_a_slide_list_reads_slides_by_number() {
    let slide = |text: &str| {
        format!(
            r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree><p:sp><p:txBody><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#
        )
    };
    let (one, two, ten) = (slide("one"), slide("two"), slide("ten"));
    let bytes = stored_zip(&[
        ("ppt/presentation.xml", "<p:presentation xmlns:p=\"p\"/>"),
        ("ppt/slides/slide10.xml", &ten),
        ("ppt/slides/slide2.xml", &two),
        ("ppt/slides/slide1.xml", &one),
    ]);
    let e = pptx_to_text(&bytes).expect("synthetic pptx");
    assert_eq!(
        e.text,
        "# Slide 1\n\none\n\n# Slide 2\n\ntwo\n\n# Slide 3\n\nten"
    );
}

#[test]
fn epub_reads_chapters_in_reading_order_without_the_navigation() {
    let e = epub_to_text(&fixture("guide.epub")).expect("guide.epub");
    assert_eq!(
        e.title.as_deref(),
        Some("A Member's Guide to Riverside Library")
    );
    assert_eq!(
        e.text,
        "# Joining\n\nBring a proof of address to any desk; membership is free for residents.\n\n\
         # Borrowing\n\n## How many items\n\nMembers may hold twelve items at once.\n\n\
         - Books: 21 days\n- DVDs: 7 days"
    );
    assert_err(epub_to_text(&fixture("deck.pptx")), "not an EPUB");
    assert_err(epub_to_text(b"plain text"), "not an EPUB");
}

#[test]
fn epub_chapter_without_a_heading_takes_its_title() {
    let bytes = stored_zip(&[
        (
            "META-INF/container.xml",
            r#"<container><rootfiles><rootfile full-path="OPS/book.opf"/></rootfiles></container>"#,
        ),
        (
            "OPS/book.opf",
            r#"<package><metadata><dc:title>Notes</dc:title></metadata><manifest>
<item id="a" href="Text/part%201.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="a"/><itemref idref="missing"/></spine></package>"#,
        ),
        (
            "OPS/Text/part 1.xhtml",
            "<html><head><title>Part one</title></head><body><p>Plain text.</p></body></html>",
        ),
    ]);
    let e = epub_to_text(&bytes).expect("synthetic epub");
    assert_eq!(e.text, "# Part one\n\nPlain text.");
}

#[test]
fn opendocument_text_spreadsheet_and_presentation_are_read() {
    let odt = odf_to_text(&fixture("minutes.odt")).expect("minutes.odt");
    assert_eq!(odt.title.as_deref(), Some("Committee minutes"));
    assert_eq!(
        odt.text,
        "# Decisions\n\nThe reading room opens at nine\nfrom the first of March.\n\n\
         Two spaces kept as one.\n\n## Actions\n\n- Order new chairs.\n- Repaint the entrance.\n\n\
         Motion: Chairs; Result: Carried\nMotion: Paint; Result: Deferred"
    );
    let ods = odf_to_text(&fixture("budget.ods")).expect("budget.ods");
    assert_eq!(
        ods.text,
        "# Budget\n\nItem: Chairs; Cost: 1200\nItem: Paint; Cost: 300\n\n\
         # Staff\n\nName: Ada; Role: Librarian"
    );
    let odp = odf_to_text(&fixture("talk.odp")).expect("talk.odp");
    assert_eq!(
        odp.text,
        "# Summer reading\n\n- Starts in June\n- Prizes for every ten books\n\n\
         Mention that sign-up is online.\n\n# Slide 2\n\nQuestions welcome at the desk."
    );
    assert_err(
        odf_to_text(&fixture("deck.pptx")),
        "not an OpenDocument file",
    );
}

#[test]
fn pptx_smartart_boxes_read_as_points() {
    let rels = |body: &str| {
        format!(
            r#"<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{body}</Relationships>"#
        )
    };
    let package_rels = rels(
        r#"<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/>"#,
    );
    let presentation_rels = rels(
        r#"<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/>"#,
    );
    let slide_rels = rels(
        r#"<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData" Target="../diagrams/data1.xml"/>"#,
    );
    let bytes = stored_zip(&[
        ("_rels/.rels", &package_rels),
        (
            "ppt/presentation.xml",
            r#"<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst></p:presentation>"#,
        ),
        ("ppt/_rels/presentation.xml.rels", &presentation_rels),
        (
            "ppt/slides/slide1.xml",
            r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree><p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>How to join</a:t></a:r></a:p></p:txBody></p:sp></p:spTree></p:cSld></p:sld>"#,
        ),
        ("ppt/slides/_rels/slide1.xml.rels", &slide_rels),
        (
            "ppt/diagrams/data1.xml",
            r#"<dgm:dataModel xmlns:dgm="d" xmlns:a="a"><dgm:ptLst>
<dgm:pt modelId="1" type="doc"><dgm:t><a:bodyPr/><a:p><a:endParaRPr/></a:p></dgm:t></dgm:pt>
<dgm:pt modelId="2"><dgm:t><a:bodyPr/><a:p><a:r><a:t>Fill in the form</a:t></a:r></a:p></dgm:t></dgm:pt>
<dgm:pt modelId="3" type="parTrans"><dgm:t><a:bodyPr/><a:p><a:endParaRPr/></a:p></dgm:t></dgm:pt>
<dgm:pt modelId="4"><dgm:t><a:bodyPr/><a:p><a:r><a:t>Show a proof of address</a:t></a:r></a:p></dgm:t></dgm:pt>
</dgm:ptLst></dgm:dataModel>"#,
        ),
    ]);
    let e = pptx_to_text(&bytes).expect("synthetic pptx");
    assert_eq!(
        e.text,
        "# How to join\n\n- Fill in the form\n- Show a proof of address"
    );
}
