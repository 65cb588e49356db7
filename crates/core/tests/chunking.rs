//! Behaviour of `chunk_text` through the public API.

use edgechat_core::knowledge::chunk::{chunk_text, ChunkOptions};
use edgechat_core::knowledge::tokens::estimate_tokens;

mod common;
use common::{check_chunk_invariants, preview};

fn opts(target: usize, max: usize, overlap: usize) -> ChunkOptions {
    ChunkOptions {
        target_tokens: target,
        max_tokens: max,
        overlap_tokens: overlap,
    }
}

/// Small deterministic xorshift generator: no rand dependency needed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PROSE: &str =
    "Retrieval works best when chunks are coherent. Each chunk should cover one idea. \
Dr. Smith measured 3.14 units, e.g. in the lab. The U.S. team agreed! Was it enough? \
Nobody knew for sure. Results were published in Vol. 3 of the journal.";

#[test]
fn empty_and_whitespace_inputs_give_no_chunks() {
    for s in ["", " ", "\n\n\t  \r\n", "\u{3000}\u{a0}"] {
        assert!(chunk_text(s, &ChunkOptions::default()).is_empty(), "{s:?}");
    }
}

#[test]
fn defaults_are_sensible() {
    let d = ChunkOptions::default();
    assert!(d.overlap_tokens < d.target_tokens && d.target_tokens < d.max_tokens);
}

#[test]
fn heading_paths_follow_nesting() {
    let doc = "Preface text.\n\n# Installation\n\nGeneral notes.\n\n## Linux\n\nUse apt.\n\n### Debian\n\nUse apt-get.\n\n\
## Windows ##\n\nUse the installer.\n\n# Usage\n\nRun it.\n";
    let chunks = chunk_text(doc, &ChunkOptions::default());
    let got: Vec<(Option<&str>, &str)> = chunks
        .iter()
        .map(|c| (c.heading.as_deref(), c.text.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (None, "Preface text."),
            (Some("Installation"), "General notes."),
            (Some("Installation > Linux"), "Use apt."),
            (Some("Installation > Linux > Debian"), "Use apt-get."),
            (Some("Installation > Windows"), "Use the installer."),
            (Some("Usage"), "Run it."),
        ]
    );
    check_chunk_invariants(&chunks, &ChunkOptions::default());
}

#[test]
fn heading_only_content_becomes_its_own_chunk() {
    let chunks = chunk_text("# Lonely title\n", &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "Lonely title");
    assert_eq!(chunks[0].heading.as_deref(), Some("Lonely title"));

    // A parent heading directly followed by a child adds nothing the
    // child's path does not already say; an empty sibling is kept.
    let chunks = chunk_text("# A\n## B\ntext\n## C\n# D\nmore", &ChunkOptions::default());
    let got: Vec<_> = chunks
        .iter()
        .map(|c| (c.heading.clone().unwrap_or_default(), c.text.clone()))
        .collect();
    let want: Vec<(String, String)> = [("A > B", "text"), ("A > C", "C"), ("D", "more")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn not_headings() {
    // No space after #, more than six #, and # inside code fences.
    let doc = "#hashtag here\n\n####### seven\n\n```\n# comment in code\n```\n";
    let chunks = chunk_text(doc, &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].heading.is_none());
    assert!(chunks[0].text.contains("# comment in code"));
}

#[test]
fn small_paragraphs_are_packed_whole() {
    let doc = "First paragraph.\n\nSecond paragraph.\n\n- item one\n- item two\n\nLast.";
    let chunks = chunk_text(doc, &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, doc);
}

#[test]
fn big_paragraph_splits_at_sentence_boundaries() {
    let para = PROSE.repeat(6);
    let o = opts(40, 60, 0);
    let chunks = chunk_text(&para, &o);
    assert!(chunks.len() > 3);
    check_chunk_invariants(&chunks, &o);
    for c in &chunks {
        assert!(
            c.text.ends_with(['.', '!', '?']),
            "not a sentence end: {:?}",
            c.text
        );
        // Abbreviations and decimals never end a chunk.
        for bad in ["Dr.", "e.g.", "U.S.", "Vol.", "3."] {
            assert!(!c.text.ends_with(bad), "split after {bad}: {:?}", c.text);
        }
    }
    let joined: String = chunks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(joined, para.trim());
}

#[test]
fn cjk_sentences_split_on_fullwidth_punctuation() {
    let para = "今天天气很好。我们去公园散步吧！你觉得怎么样？".repeat(20);
    let o = opts(30, 40, 0);
    let chunks = chunk_text(&para, &o);
    check_chunk_invariants(&chunks, &o);
    assert!(chunks.len() > 2);
    for c in &chunks {
        assert!(c.text.ends_with(['。', '！', '？']), "{:?}", c.text);
    }
    assert_eq!(
        chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
        para
    );
}

#[test]
fn overlap_repeats_last_sentences_within_section_only() {
    let doc = format!(
        "# One\n\n{}\n\n# Two\n\n{}",
        PROSE.repeat(4),
        PROSE.repeat(4)
    );
    let o = opts(50, 80, 20);
    let chunks = chunk_text(&doc, &o);
    check_chunk_invariants(&chunks, &o);
    let mut overlaps = 0;
    for pair in chunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.heading != b.heading {
            // Never across headings: the new section starts fresh.
            assert!(b.text.starts_with("Retrieval works"), "{:?}", b.text);
            continue;
        }
        // The shared text is a suffix of `a` that `b` starts with.
        let shared = (1..=a.text.len())
            .filter(|&k| a.text.is_char_boundary(a.text.len() - k))
            .map(|k| &a.text[a.text.len() - k..])
            .filter(|s| b.text.starts_with(s))
            .max_by_key(|s| s.len());
        if let Some(s) = shared.filter(|s| s.len() > 10) {
            overlaps += 1;
            assert!(
                estimate_tokens(s) <= o.overlap_tokens + 2,
                "overlap too big: {s:?}"
            );
            assert!(
                s.len() < a.text.len(),
                "overlap must not repeat a whole chunk"
            );
            assert!(s.ends_with(['.', '!', '?']));
        }
    }
    assert!(overlaps >= 2, "expected overlapping chunks, got {overlaps}");
}

#[test]
fn zero_overlap_repeats_nothing() {
    let para = PROSE.repeat(5);
    let o = opts(40, 60, 0);
    let total: usize = chunk_text(&para, &o).iter().map(|c| c.text.len()).sum();
    let words = para.split_whitespace().count();
    let chunk_words: usize = chunk_text(&para, &o)
        .iter()
        .map(|c| c.text.split_whitespace().count())
        .sum();
    assert_eq!(words, chunk_words);
    assert!(total <= para.len());
}

#[test]
fn giant_sentence_splits_at_word_boundaries() {
    let words: Vec<String> = (0..600).map(|i| format!("word{i}")).collect();
    let sentence = words.join(" ");
    let o = opts(50, 64, 10);
    let chunks = chunk_text(&sentence, &o);
    check_chunk_invariants(&chunks, &o);
    let rejoined: Vec<&str> = chunks
        .iter()
        .flat_map(|c| c.text.split_whitespace())
        .collect();
    assert_eq!(
        rejoined,
        words.iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[test]
fn token_less_giant_string_splits_by_characters() {
    let mut rng = Rng(42);
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let blob: String = (0..200_000).map(|_| B64[rng.below(64)] as char).collect();
    for o in [ChunkOptions::default(), opts(8, 8, 0), opts(100, 120, 30)] {
        let chunks = chunk_text(&blob, &o);
        check_chunk_invariants(&chunks, &o);
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            blob
        );
    }
}

#[test]
fn pipe_table_header_is_repeated() {
    let mut doc = String::from("# Inventory\n\nName | Count | Price\n--- | --- | ---\n");
    for i in 0..120 {
        doc.push_str(&format!("widget {i} | {} | {}.99\n", i * 7, i % 50));
    }
    let o = opts(60, 90, 20);
    let chunks = chunk_text(&doc, &o);
    check_chunk_invariants(&chunks, &o);
    assert!(chunks.len() > 5);
    for c in &chunks {
        assert!(
            c.text
                .starts_with("Name | Count | Price\n--- | --- | ---\n"),
            "{:?}",
            preview(&c.text)
        );
        for line in c.text.lines().skip(2) {
            // Rows are never cut.
            assert!(
                line.starts_with("widget ") && line.ends_with(".99"),
                "{line:?}"
            );
        }
    }
    let rows: usize = chunks.iter().map(|c| c.text.lines().count() - 2).sum();
    assert_eq!(rows, 120);
}

#[test]
fn header_is_not_left_dangling_at_a_chunk_end() {
    let intro = "Some introduction sentence that takes up room. ".repeat(7);
    let mut doc = format!("{intro}\n\nCol A | Col B\n");
    for i in 0..40 {
        doc.push_str(&format!("value {i} | {}\n", i * 3));
    }
    let o = opts(70, 100, 0);
    let chunks = chunk_text(&doc, &o);
    check_chunk_invariants(&chunks, &o);
    for c in &chunks {
        assert!(!c.text.ends_with("Col A | Col B"), "{:?}", c.text);
    }
    let headers = chunks
        .iter()
        .filter(|c| c.text.starts_with("Col A | Col B\n"))
        .count();
    assert_eq!(headers, chunks.len() - 1);
}

#[test]
fn numeric_first_row_is_not_a_header() {
    let doc: String = (0..200)
        .map(|i| format!("{i} | {} | {}\n", i * 2, i * 3))
        .collect();
    let o = opts(40, 60, 10);
    let chunks = chunk_text(&doc, &o);
    check_chunk_invariants(&chunks, &o);
    assert!(chunks.len() > 3);
    for c in &chunks[1..] {
        assert!(!c.text.starts_with("0 | 0 | 0"), "{:?}", preview(&c.text));
    }
    let rows: usize = chunks.iter().map(|c| c.text.lines().count()).sum();
    assert_eq!(rows, 200, "table rows are neither lost nor overlapped");
}

#[test]
fn key_value_rows_stay_whole() {
    let doc: String = (0..150)
        .map(|i| format!("Name: item {i}; Colour: blue; Weight: {i} kg\n"))
        .collect();
    let o = opts(40, 60, 10);
    let chunks = chunk_text(&doc, &o);
    check_chunk_invariants(&chunks, &o);
    for c in &chunks {
        for line in c.text.lines() {
            assert!(
                line.starts_with("Name: item ") && line.ends_with(" kg"),
                "{line:?}"
            );
        }
    }
}

#[test]
fn unicode_is_never_cut_badly() {
    let samples = [
        "e\u{301}".repeat(3000),
        "👨‍👩‍👧‍👦".repeat(500),
        "👍🏽".repeat(2000),
        "日本語のテキスト".repeat(400),
        "Привет мир ".repeat(400),
        "ﷺ".repeat(3000),
    ];
    for s in &samples {
        for o in [opts(8, 8, 0), opts(30, 40, 10)] {
            let chunks = chunk_text(s, &o);
            check_chunk_invariants(&chunks, &o);
            // At max 8 a family emoji (~12 tokens) cannot stay whole.
            if o.max_tokens < 16 {
                continue;
            }
            for c in &chunks {
                let first = c.text.chars().next().unwrap_or(' ');
                assert!(
                    first != '\u{301}' && first != '\u{200d}' && first != '\u{1f3fd}',
                    "{:?}",
                    preview(&c.text)
                );
            }
        }
    }
}

#[test]
fn crlf_input_is_normalised() {
    let doc = "# Title\r\n\r\nLine one.\r\n\r\nLine two.\r\n";
    let chunks = chunk_text(doc, &ChunkOptions::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].text, "Line one.\n\nLine two.");
    assert_eq!(chunks[0].heading.as_deref(), Some("Title"));
}

#[test]
fn max_respected_on_adversarial_input() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let fragments = [
        "# ",
        "## ",
        "###### ",
        "\n",
        "\n\n",
        " ",
        "\t",
        "| ",
        " | ",
        "|",
        "- ",
        "1. ",
        "```\n",
        "~~~",
        "Key: v; K2: w",
        ". ",
        "! ",
        "? ",
        "。",
        "e.g. ",
        "Dr. ",
        "3.14",
        "...",
        "—",
        "word",
        "Wörter",
        "слово",
        "漢字",
        "かな",
        "😀",
        "\u{301}",
        "\u{200d}",
        "\u{0}",
        "\r",
        "'s",
        "AAAAAAAAAAAAAAAA",
        "https://example.com/x?y=1",
        "{\"k\": [1, 2]}",
        "-----",
        "#",
        "\u{fffd}",
    ];
    let mut docs: Vec<String> = Vec::new();
    for _ in 0..60 {
        let n = 1 + rng.below(4000);
        docs.push(
            (0..n)
                .map(|_| fragments[rng.below(fragments.len())])
                .collect(),
        );
    }
    // Random code points, including rarely seen planes.
    for _ in 0..10 {
        docs.push(
            (0..5000)
                .filter_map(|_| char::from_u32(rng.below(0x3_0000) as u32))
                .collect(),
        );
    }
    docs.push("#".repeat(100_000));
    docs.push("# h\n".repeat(5000));
    docs.push("a ".repeat(50_000));
    docs.push("x".repeat(100_000));
    docs.push(".".repeat(100_000));
    docs.push("\u{1f600}".repeat(20_000));
    docs.push("| a | b |\n".repeat(3000));
    docs.push(format!("# {}\n", "long heading ".repeat(2000)));
    let options = [
        ChunkOptions::default(),
        opts(1, 1, 1),
        opts(0, 0, 0),
        opts(8, 12, 50),
        opts(500, 100, 400),
        opts(usize::MAX, usize::MAX, usize::MAX),
        opts(64, 64, 32),
    ];
    for doc in &docs {
        for o in &options {
            let chunks = chunk_text(doc, o);
            check_chunk_invariants(&chunks, o);
            if !doc.trim().is_empty() {
                assert!(
                    !chunks.is_empty(),
                    "non-blank input lost: {:?}",
                    preview(doc)
                );
            }
        }
    }
}

#[test]
fn every_word_of_the_input_survives() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    for name in [
        "markdown__regex_readme.txt",
        "prose__gpl3.txt",
        "nonen__zh_man.txt",
        "csv__pipe_table.txt",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect("corpus file");
        let o = ChunkOptions::default();
        let chunks = chunk_text(&text, &o);
        check_chunk_invariants(&chunks, &o);
        // Heading lines live in `heading`, not in `text`.
        let all: String = chunks
            .iter()
            .map(|c| format!("{}\n{}", c.heading.as_deref().unwrap_or(""), c.text))
            .collect::<Vec<_>>()
            .join("\n");
        let mut from = 0;
        for word in text.split_whitespace().filter(|w| !w.starts_with('#')) {
            // Words appear in order (overlap may repeat some).
            match all[from..].find(word) {
                Some(p) => from += p,
                None => panic!("{name}: lost {word:?}"),
            }
        }
    }
}
