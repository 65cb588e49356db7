//! Checks against the real cl100k encoder (a dev-dependency), plus an
//! ignored report used when re-fitting the estimator's constants:
//! `CALIBRATION_DUMP=/tmp/pieces.tsv cargo test --lib report -- --ignored --nocapture`
//! writes one line per pre-token with its real and estimated cost.

use super::*;
use std::fmt::Write as _;

fn corpus() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("corpus dir") {
        let p = e.expect("dir entry").path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if name.ends_with(".txt") && name.contains("__") {
            out.push((
                name,
                std::fs::read_to_string(&p).expect("UTF-8 corpus file"),
            ));
        }
    }
    out.sort();
    out
}

/// BPE never merges across pre-tokens, so if our split matches cl100k's
/// regex, encoding piece by piece gives exactly the whole-text count.
#[test]
fn pretokeniser_matches_cl100k_split() {
    let bpe = tiktoken_rs::cl100k_base().expect("bundled ranks");
    let mut extra = vec![
        "it's I'LL we'd 'sdf '' x'y".to_string(),
        "  leading\n\n   indented\t\ttabs \n trailing  ".to_string(),
        "a1b22c333d4444 ١٢٣ ½ ²".to_string(),
        "(( )) ?!.\n\n...\r\n-- ==>".to_string(),
        "😀x 👍🏽 e\u{301} 日本語のテキスト。\u{3000}全角".to_string(),
    ];
    extra.extend(corpus().into_iter().map(|(_, t)| t));
    for text in extra {
        let whole = bpe.encode_ordinary(&text).len();
        let mut sum = 0;
        for_each_piece(&text, |_, p| sum += bpe.encode_ordinary(p).len());
        assert_eq!(
            whole,
            sum,
            "{:?}",
            text.chars().take(60).collect::<String>()
        );
    }
}

#[test]
#[ignore]
fn report() {
    let bpe = tiktoken_rs::cl100k_base().expect("bundled ranks");
    let mut dump = String::new();
    for (name, text) in corpus() {
        let cat = name.split("__").next().unwrap_or_default().to_string();
        let real = bpe.encode_ordinary(&text).len() as f64;
        let est = estimate_tokens(&text) as f64;
        println!(
            "{name:45} real={real:7} est={est:7} err={:+.1}%",
            (est - real) / real * 100.0
        );
        let f = foreignness(&text);
        for_each_piece(&text, |k, p| {
            let n = bpe.encode_ordinary(p).len();
            let c = piece_cost(k, p, f);
            let esc = p
                .replace('\\', "\\\\")
                .replace('\n', "\\n")
                .replace('\r', "\\r")
                .replace('\t', "\\t");
            let _ = writeln!(dump, "{cat}\t{name}\t{k:?}\t{n}\t{c:.3}\t{f:.3}\t{esc}");
        });
    }
    if let Ok(path) = std::env::var("CALIBRATION_DUMP") {
        std::fs::write(path, dump).expect("writable dump path");
    }
}
