//! Accuracy of `estimate_tokens` against the real cl100k_base encoder
//! (tiktoken-rs bundles the ranks, so this runs offline).

use edgechat_core::knowledge::tokens::estimate_tokens;
use std::collections::BTreeMap;
use std::path::Path;

/// `(category, file name, text)` for every `CATEGORY__name.txt` file.
fn corpus() -> Vec<(String, String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/corpus exists") {
        let path = entry.expect("readable dir entry").path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let Some((cat, _)) = name.split_once("__") else {
            continue;
        };
        if !name.ends_with(".txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("corpus files are UTF-8");
        out.push((cat.to_string(), name, text));
    }
    out.sort();
    out
}

fn rel_err(est: usize, real: usize) -> f64 {
    (est as f64 - real as f64) / real as f64
}

#[test]
fn estimate_within_5_percent_over_corpus() {
    let bpe = tiktoken_rs::cl100k_base().expect("bundled cl100k ranks");
    let docs = corpus();
    let bytes: usize = docs.iter().map(|d| d.2.len()).sum();
    assert!(bytes >= 200_000, "corpus too small: {bytes} bytes");

    let mut by_cat: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut prose_failures = Vec::new();
    for (cat, name, text) in &docs {
        let real = bpe.encode_ordinary(text).len();
        let est = estimate_tokens(text);
        let err = rel_err(est, real);
        println!(
            "{name:42} {:>6} B real {real:>6} est {est:>6} {:+6.1}%",
            text.len(),
            err * 100.0
        );
        let e = by_cat.entry(cat.clone()).or_default();
        e.0 += real;
        e.1 += est;
        if cat == "prose" && text.len() > 2048 && err.abs() > 0.10 {
            prose_failures.push(format!("{name}: {:+.1}%", err * 100.0));
        }
    }
    let (mut real_total, mut est_total) = (0, 0);
    let mut cat_failures = Vec::new();
    for (cat, (real, est)) in &by_cat {
        let err = rel_err(*est, *real);
        println!(
            "category {cat:10} real {real:>7} est {est:>7} {:+6.2}%",
            err * 100.0
        );
        if err.abs() > 0.10 {
            cat_failures.push(format!("{cat}: {:+.1}%", err * 100.0));
        }
        real_total += real;
        est_total += est;
    }
    let total_err = rel_err(est_total, real_total);
    println!(
        "TOTAL {bytes} B real {real_total} est {est_total} {:+.2}%",
        total_err * 100.0
    );
    assert!(
        total_err.abs() <= 0.05,
        "total error {:+.2}%",
        total_err * 100.0
    );
    assert!(
        cat_failures.is_empty(),
        "categories off by >10%: {cat_failures:?}"
    );
    assert!(
        prose_failures.is_empty(),
        "English prose docs off by >10%: {prose_failures:?}"
    );
}

#[test]
fn small_inputs() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens(" "), 1);
    assert_eq!(estimate_tokens("a"), 1);
    assert_eq!(estimate_tokens("Hello world"), 2);
    assert_eq!(estimate_tokens("123456789"), 3);
    // Short common snippets should be close to exact.
    let bpe = tiktoken_rs::cl100k_base().expect("bundled cl100k ranks");
    for s in [
        "The quick brown fox jumps over the lazy dog.",
        "fn main() { println!(\"hello\"); }",
        "{\"id\": 42, \"name\": \"Alice\", \"tags\": [\"a\", \"b\"]}",
        "Die Installation ist abgeschlossen.",
        "今天天气很好。",
        "Привет, мир!",
    ] {
        let real = bpe.encode_ordinary(s).len();
        let est = estimate_tokens(s);
        assert!(
            est.abs_diff(real) <= 1 + real / 5,
            "{s:?}: real {real} est {est}"
        );
    }
}

#[test]
fn never_panics_on_odd_text() {
    let samples = [
        "\u{0}\u{1}\u{7f}",
        "'s'S'LL'll'",
        "\r\n\r\n\t \u{a0}\u{3000}",
        "😀👍🏽👨‍👩‍👧\u{fe0f}",
        "e\u{301}\u{301}\u{301}",
        "ሰላም नमस्ते مرحبا שלום 안녕하세요 ประเทศไทย",
        "\u{10ffff}\u{fffd}",
    ];
    for s in samples {
        let n = estimate_tokens(s);
        assert!(n >= 1 && n <= 4 * s.chars().count(), "{s:?} -> {n}");
    }
}
