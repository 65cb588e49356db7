//! Native throughput of the two heaviest pure steps of ingestion, in the release profile:
//! chunking 10 MB of real text and extracting a long PDF. `make bench` runs it
//! (`cargo bench -p edgechat-core --bench throughput`) and prints the figures; the Worker's own
//! ingestion MB/s, end to end, is in `bench/knowledge.mjs`. It also checks that the chunks of
//! the large input keep their invariants, so a speed-up that breaks them is not reported.

use edgechat_core::knowledge::chunk::{chunk_text, ChunkOptions};
use edgechat_core::knowledge::extract::pdf_to_text;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

fn corpus_text(target_bytes: usize) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let mut seed = String::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/corpus exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    paths.sort();
    for p in paths {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        seed.push_str(&format!("\n\n# {name}\n\n"));
        seed.push_str(&std::fs::read_to_string(&p).expect("corpus file"));
    }
    let mut doc = String::new();
    while doc.len() < target_bytes {
        doc.push_str(&seed);
    }
    doc
}

fn chunking() -> (f64, usize) {
    let doc = corpus_text(10_000_000);
    let options = ChunkOptions::default();
    let started = Instant::now();
    let chunks = chunk_text(&doc, &options);
    let secs = started.elapsed().as_secs_f64();
    common::check_chunk_invariants(&chunks, &options);
    (doc.len() as f64 / 1e6 / secs, chunks.len())
}

fn pdf() -> (f64, f64) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/office/long_lo.pdf");
    let data = std::fs::read(&path).expect("tests/fixtures/office/long_lo.pdf");
    let started = Instant::now();
    let mut runs = 0;
    while runs < 3 || started.elapsed() < Duration::from_secs(1) {
        let extracted = pdf_to_text(&data).expect("the long PDF extracts");
        assert!(extracted.text.len() > 100_000);
        runs += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    let mb = (data.len() * runs) as f64 / 1e6;
    (mb / secs, secs * 1000.0 / runs as f64)
}

fn main() {
    let (chunk_mbs, chunks) = chunking();
    let (pdf_mbs, pdf_ms) = pdf();
    println!("chunking 10 MB of the text corpus: {chunk_mbs:.1} MB/s ({chunks} chunks)");
    println!("PDF extraction (long_lo.pdf): {pdf_mbs:.1} MB/s, {pdf_ms:.1} ms per file");
    if let Some(path) = std::env::args().skip_while(|a| a != "--json").nth(1) {
        let json = format!(
            "{{\"chunking_mb_per_s\": {chunk_mbs:.2}, \"chunks\": {chunks}, \"pdf_mb_per_s\": {pdf_mbs:.2}, \"pdf_ms_per_file\": {pdf_ms:.2}}}\n"
        );
        std::fs::write(&path, json).expect("the JSON output is writable");
    }
}
