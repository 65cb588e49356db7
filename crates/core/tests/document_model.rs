//! The typed document every format reads into: what each reader produces, that one table
//! reads the same from every format that can say which row is its header, and that the
//! chunker takes structure from the blocks rather than from their text.

use edgechat_core::knowledge::chunk::{chunk_document, chunk_text, ChunkOptions};
use edgechat_core::knowledge::extract::document::MAX_NESTING;
use edgechat_core::knowledge::extract::{
    csv, docx, html, json, markdown, pdf, render, text, Block, Cell, Code, Definition, Document,
    List, Row, Table,
};
use edgechat_core::knowledge::ingest::{extract, prepare, DocKind};

mod common;
use common::{fixture_bytes, stored_zip};

fn para(text: &str) -> Block {
    Block::Paragraph(text.to_string())
}

fn heading(level: u8, text: &str) -> Block {
    Block::Heading {
        level,
        text: text.to_string(),
    }
}

fn list(start: Option<u64>, items: Vec<Vec<Block>>) -> Block {
    Block::List(List { start, items })
}

/// An HTML header row: its cells are `<th>`.
fn th_row(cells: &[&str]) -> Row {
    Row {
        header: true,
        cells: cells
            .iter()
            .map(|t| Cell {
                label: true,
                ..Cell::new(*t)
            })
            .collect(),
    }
}

/// A minimal Word package (stored, not deflated) around a document body.
fn docx_with_body(body: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="x"><w:body>{body}</w:body></w:document>"#
    );
    stored_zip(&[("word/document.xml", document.as_str())])
}

fn docx_paragraph(style: Option<&str>, text: &str) -> String {
    let style = style
        .map(|s| format!(r#"<w:pPr><w:pStyle w:val="{s}"/></w:pPr>"#))
        .unwrap_or_default();
    format!("<w:p>{style}<w:r><w:t>{text}</w:t></w:r></w:p>")
}

fn docx_table(rows: &[&[&str]], header_rows: usize) -> String {
    let mut xml = String::from("<w:tbl>");
    for (i, row) in rows.iter().enumerate() {
        xml.push_str("<w:tr>");
        if i < header_rows {
            xml.push_str("<w:trPr><w:tblHeader/></w:trPr>");
        }
        for cell in *row {
            xml.push_str(&format!("<w:tc>{}</w:tc>", docx_paragraph(None, cell)));
        }
        xml.push_str("</w:tr>");
    }
    xml.push_str("</w:tbl>");
    xml
}

/// The first table anywhere in the blocks.
fn first_table(blocks: &[Block]) -> Option<&Table> {
    blocks.iter().find_map(|b| match b {
        Block::Table(t) => Some(t),
        Block::Quote(inner) => first_table(inner),
        Block::List(l) => l.items.iter().find_map(|item| first_table(item)),
        _ => None,
    })
}

/// A table as plain strings: whether each row is a header, and its cells' text.
fn shape(table: &Table) -> Vec<(bool, Vec<String>)> {
    table
        .rows
        .iter()
        .map(|r| (r.header, r.cells.iter().map(|c| c.text.clone()).collect()))
        .collect()
}

fn depth(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            Block::Quote(inner) => 1 + depth(inner),
            Block::List(l) => 1 + l.items.iter().map(|i| depth(i)).max().unwrap_or(0),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// The blocks of the small guide the HTML and Markdown readers are given, from its first
/// heading to its table: they differ only in that heading, whether the code block is fenced,
/// and how the table's header row is marked.
fn guide_blocks(first: Block, code_fenced: bool, header: Row) -> Vec<Block> {
    vec![
        first,
        para("Run it."),
        list(
            None,
            vec![vec![para("a"), list(None, vec![vec![para("b")]])]],
        ),
        list(Some(3), vec![vec![para("c")]]),
        Block::Code(Code {
            text: "x = 1".into(),
            fenced: code_fenced,
        }),
        Block::Quote(vec![para("quoted")]),
        Block::Table(Table {
            rows: vec![header, Row::data(["1", "2"])],
        }),
    ]
}

#[test]
fn html_reads_into_blocks() {
    let doc = html::read(
        "<title>Guide</title><h2>Setup</h2><p>Run <b>it</b>.</p>\
         <ul><li>a<ul><li>b</li></ul></li></ul><ol start=3><li>c</li></ol>\
         <pre>x = 1</pre><blockquote><p>quoted</p></blockquote>\
         <table><tr><th>K</th><th>V</th></tr><tr><td>1</td><td>2</td></tr></table>\
         <dl><dt>Term</dt><dd>Meaning</dd></dl>",
    );
    assert_eq!(doc.title.as_deref(), Some("Guide"));
    let mut want = guide_blocks(heading(2, "Setup"), true, th_row(&["K", "V"]));
    want.push(Block::Definitions(vec![Definition {
        terms: vec!["Term".into()],
        details: Some("Meaning".into()),
    }]));
    assert_eq!(doc.blocks, want);
}

#[test]
fn markdown_reads_into_blocks() {
    let doc = markdown::read(
        "# Guide\n\nRun *it*.\n\n- a\n  - b\n\n3. c\n\n```sh\nx = 1\n```\n\n> quoted\n\n\
         | K | V |\n|---|---|\n| 1 | 2 |\n",
    );
    assert_eq!(doc.title.as_deref(), Some("Guide"));
    assert_eq!(
        doc.blocks,
        guide_blocks(heading(1, "Guide"), false, Row::header(["K", "V"]))
    );
}

#[test]
fn csv_json_and_text_read_into_blocks() {
    let doc = csv::read("K,V\n1,2\n").expect("valid CSV");
    assert_eq!(
        doc.blocks,
        vec![Block::Table(Table {
            rows: vec![Row::header(["K", "V"]), Row::data(["1", "2"])]
        })]
    );
    let doc = csv::read("1,2\n3,4\n").expect("valid CSV");
    assert_eq!(
        doc.blocks,
        vec![Block::Table(Table {
            rows: vec![Row::data(["1", "2"]), Row::data(["3", "4"])]
        })]
    );

    let doc = json::read(r#"{"shop": {"name": "X", "open": true}, "tags": ["a", "b"]}"#)
        .expect("valid JSON");
    assert_eq!(
        doc.blocks,
        vec![para("shop.name: X\nshop.open: true"), para("tags: a, b")]
    );
    // Records are a table; a record fills only the columns it has.
    let doc = json::read(r#"[{"a": 1, "b": 2}, {"b": 3}]"#).expect("valid JSON");
    let Some(Block::Table(table)) = doc.blocks.first() else {
        panic!("records make a table: {doc:?}");
    };
    assert_eq!(
        shape(table),
        vec![
            (true, vec!["a".into(), "b".into()]),
            (false, vec!["1".into(), "2".into()]),
            (false, vec![String::new(), "3".into()]),
        ]
    );
    assert_eq!(render(&doc), "a: 1; b: 2\nb: 3");

    let doc =
        text::read("# Notes\n\nline one\n  line two\n\n```sh\nls | wc -l\n```\nafter | that\n");
    assert_eq!(
        doc.blocks,
        vec![
            heading(1, "Notes"),
            para("line one\n  line two"),
            Block::Code(Code {
                text: "```sh\nls | wc -l\n```".into(),
                fenced: false
            }),
            para("after | that"),
        ]
    );
}

#[test]
fn docx_reads_into_blocks() {
    let body = [
        docx_paragraph(Some("Heading1"), "Handbook"),
        docx_paragraph(None, "Intro text."),
        docx_paragraph(Some("ListParagraph"), "First step"),
        docx_paragraph(Some("ListParagraph"), "Second step"),
        docx_table(&[&["K", "V"], &["1", "2"]], 1),
    ]
    .concat();
    let doc = docx::read(&docx_with_body(&body)).expect("synthetic DOCX");
    assert_eq!(doc.title.as_deref(), Some("Handbook"));
    assert_eq!(
        doc.blocks,
        vec![
            heading(1, "Handbook"),
            para("Intro text."),
            list(
                None,
                vec![vec![para("First step")], vec![para("Second step")]]
            ),
            Block::Table(Table {
                rows: vec![Row::header(["K", "V"]), Row::data(["1", "2"])]
            }),
        ]
    );
}

#[test]
fn pdf_reads_into_blocks_and_its_tables_have_no_header() {
    let doc = pdf::read(&fixture_bytes("office", "report_fpdf.pdf")).expect("fixture PDF");
    assert_eq!(doc.title.as_deref(), Some("Quarterly Field Report"));
    assert_eq!(
        doc.blocks.first(),
        Some(&heading(1, "Quarterly Field Report"))
    );
    let table = first_table(&doc.blocks).expect("a table");
    assert!(!table.has_header());
    assert_eq!(
        shape(table)[..2],
        [
            (false, vec!["Name".into(), "Count".into(), "Colour".into()]),
            (false, vec!["Alpha".into(), "12".into(), "Red".into()]),
        ]
    );
}

#[test]
fn a_pdf_in_two_columns_is_read_a_column_at_a_time() {
    let doc = pdf::read(&fixture_bytes("office", "columns_fpdf.pdf")).expect("fixture PDF");
    let text = render(&doc);
    for sentence in [
        "Family memberships cover two adults and up to three children and cost 90 euros per year.",
        "The library closes for refurbishment from the tenth of June until the end of July.",
        "During the closure, returns can be dropped in the box outside the main entrance.",
    ] {
        assert!(
            text.contains(sentence),
            "{sentence:?} not whole in:\n{text}"
        );
    }
    assert!(
        !text.contains(" | "),
        "columns read across as cells:\n{text}"
    );
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s:?} in:\n{text}"));
    assert!(at("Library newsletter") < at("Membership renewals"));
    assert!(at("cost 90 euros per year.") < at("The library closes"));
    assert!(at("children's corner in August.") < at("Questions about either notice"));
    assert!(first_table(&doc.blocks).is_none(), "{:?}", doc.blocks);
}

const ROWS: [[&str; 3]; 3] = [
    ["Name", "Count", "Colour"],
    ["Alpha", "12", "Red"],
    ["Beta", "7", "Green"],
];

#[test]
fn one_table_reads_the_same_from_every_format_that_knows_its_header() {
    let html_doc = html::read(
        "<table><thead><tr><th>Name</th><th>Count</th><th>Colour</th></tr></thead>\
         <tbody><tr><td>Alpha</td><td>12</td><td>Red</td></tr>\
         <tr><td>Beta</td><td>7</td><td>Green</td></tr></tbody></table>",
    );
    let markdown_doc = markdown::read(
        "| Name | Count | Colour |\n|------|------:|--------|\n| Alpha | 12 | Red |\n| Beta | 7 | Green |\n",
    );
    let csv_doc = csv::read("Name,Count,Colour\nAlpha,12,Red\nBeta,7,Green\n").expect("CSV");
    let rows: Vec<&[&str]> = ROWS.iter().map(|r| &r[..]).collect();
    let docx_doc = docx::read(&docx_with_body(&docx_table(&rows, 1))).expect("DOCX");

    let want_shape: Vec<(bool, Vec<String>)> = ROWS
        .iter()
        .enumerate()
        .map(|(i, r)| (i == 0, r.iter().map(|c| c.to_string()).collect()))
        .collect();
    let want_text = "Name: Alpha; Count: 12; Colour: Red\nName: Beta; Count: 7; Colour: Green";
    let options = ChunkOptions::default();
    let want_chunks = chunk_document(&csv_doc, &options);
    for (format, doc) in [
        ("HTML", &html_doc),
        ("Markdown", &markdown_doc),
        ("CSV", &csv_doc),
        ("DOCX", &docx_doc),
    ] {
        let table = first_table(&doc.blocks).unwrap_or_else(|| panic!("{format}: no table"));
        assert_eq!(shape(table), want_shape, "{format}");
        assert_eq!(render(doc), want_text, "{format}");
        assert_eq!(chunk_document(doc, &options), want_chunks, "{format}");
    }

    // Without a header row the same cells read as plain rows, whichever format: a Word
    // table that marks no header, and the PDF printed from that very document.
    let docx_plain = docx::read(&fixture_bytes("office", "document.docx")).expect("fixture DOCX");
    let pdf_plain = pdf::read(&fixture_bytes("office", "document_lo.pdf")).expect("fixture PDF");
    let names_table = |blocks: &[Block]| -> Option<Table> {
        blocks.iter().find_map(|b| match b {
            Block::Table(t) if t.rows.first().is_some_and(|r| r.cells[0].text == "Name") => {
                Some(t.clone())
            }
            _ => None,
        })
    };
    let from_docx = names_table(&docx_plain.blocks).expect("DOCX table");
    let from_pdf = names_table(&pdf_plain.blocks).expect("PDF table");
    assert!(!from_docx.has_header() && !from_pdf.has_header());
    assert_eq!(shape(&from_docx), shape(&from_pdf));
    let plain = render(&Document {
        title: None,
        blocks: vec![Block::Table(from_pdf)],
    });
    assert!(
        plain.starts_with("Name | Count | Colour\nAlpha | 12 | Red\n"),
        "{plain}"
    );
}

#[test]
fn chunks_take_table_headers_from_the_block() {
    let options = ChunkOptions {
        target_tokens: 60,
        max_tokens: 90,
        overlap_tokens: 20,
    };
    // A header the format named is written into every row: nothing needs repeating.
    let mut csv_text = String::from("Name,Count,Price\n");
    for i in 0..120 {
        csv_text.push_str(&format!("widget {i},{},{}.99\n", i * 7, i % 50));
    }
    let chunks = chunk_document(&csv::read(&csv_text).expect("CSV"), &options);
    assert!(chunks.len() > 5);
    for c in &chunks {
        for line in c.text.lines() {
            assert!(line.starts_with("Name: widget "), "{line:?}");
        }
    }
    // A table that names no header, but whose first row reads like column titles, has
    // that row repeated on each later chunk of the table.
    let mut rows = vec![Row::data(["Name", "Count", "Price"])];
    for i in 0..120 {
        rows.push(Row::data([
            format!("widget {i}"),
            format!("{}", i * 7),
            format!("{}.99", i % 50),
        ]));
    }
    let doc = Document {
        title: None,
        blocks: vec![Block::Table(Table { rows })],
    };
    let chunks = chunk_document(&doc, &options);
    assert!(chunks.len() > 5);
    for c in &chunks {
        assert!(c.text.starts_with("Name | Count | Price\n"), "{:?}", c.text);
    }
    // A numeric first row is data, not titles.
    let rows = (0..200)
        .map(|i| Row::data([format!("{i}"), format!("{}", i * 2)]))
        .collect();
    let doc = Document {
        title: None,
        blocks: vec![Block::Table(Table { rows })],
    };
    let chunks = chunk_document(&doc, &options);
    assert!(chunks[1..].iter().all(|c| !c.text.starts_with("0 | 0")));
}

#[test]
fn chunks_take_headings_from_the_blocks_not_from_text_that_looks_like_one() {
    // A page whose paragraph starts with "# " has no heading there.
    let doc = html::read("<h1>Real</h1><p># not a heading</p><p>Body.</p>");
    let chunks = chunk_document(&doc, &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].heading.as_deref(), Some("Real"));
    assert_eq!(chunks[0].text, "# not a heading\n\nBody.");
    // The same text with no document behind it is read as light markdown.
    let chunks = chunk_text(&render(&doc), &ChunkOptions::default());
    assert_eq!(
        chunks.last().and_then(|c| c.heading.as_deref()),
        Some("not a heading")
    );
    // A definition mentioning a shell pipe is a definition, not a table row.
    let doc = html::read(
        "<dl><dt>--stdin</dt><dd>Read names, as in <code>ls | git add</code>.</dd></dl>",
    );
    let chunks = chunk_document(&doc, &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "--stdin: Read names, as in ls | git add.");
}

#[test]
fn ingest_chunks_the_document_it_read() {
    let read = extract(
        DocKind::Html,
        b"<title>T</title><h2>Prices</h2><table><tr><th>Item</th><th>Price</th></tr>\
          <tr><td>Tea</td><td>2</td></tr></table>",
    )
    .expect("readable");
    assert_eq!(read.text, "## Prices\n\nItem: Tea; Price: 2");
    let prepared = prepare(read);
    assert_eq!(prepared.title.as_deref(), Some("T"));
    assert_eq!(prepared.chunks.len(), 1);
    assert_eq!(prepared.chunks[0].heading.as_deref(), Some("Prices"));
    assert_eq!(prepared.chunks[0].text, "Item: Tea; Price: 2");
}

#[test]
fn nesting_stays_bounded_whatever_the_input() {
    for doc in [
        markdown::read(&("> ".repeat(50_000) + "deep")),
        markdown::read(&("- ".repeat(50_000) + "deep")),
        markdown::read(&("1. > - ".repeat(20_000) + "deep")),
        html::read(&("<blockquote><ul><li>".repeat(20_000) + "deep")),
    ] {
        assert!(
            depth(&doc.blocks) <= MAX_NESTING + 1,
            "{}",
            depth(&doc.blocks)
        );
        assert!(render(&doc).ends_with("deep"));
        assert!(!chunk_document(&doc, &ChunkOptions::default()).is_empty());
    }
}

#[test]
fn rendering_is_tidy_by_construction() {
    let doc = Document {
        title: None,
        blocks: vec![
            para("\n\n  indented  \n\n\n\nnext   \n"),
            Block::Quote(vec![
                para("one\n\ntwo"),
                Block::Code(Code {
                    text: "a\n\n\n\nb".into(),
                    fenced: true,
                }),
            ]),
            list(
                Some(9),
                vec![
                    vec![para("nine"), para("more\n\n\nlines")],
                    vec![],
                    vec![heading(7, "Level clamps")],
                ],
            ),
            Block::Table(Table {
                rows: vec![Row::data(["", "a\nb", " "])],
            }),
            para("   "),
        ],
    };
    assert_eq!(
        render(&doc),
        "  indented\n\nnext\n\n> one\n>\n> two\n\n> ```\n> a\n>\n>\n>\n> b\n> ```\n\n\
         9. nine\n   more\n\n   lines\n\n###### Level clamps\n\na b"
    );
}
