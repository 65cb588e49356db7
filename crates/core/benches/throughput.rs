//! Native throughput of the two heaviest pure steps of ingestion, in the release profile:
//! chunking 10 MB of real text and extracting a long PDF. `make bench` runs it
//! (`cargo bench -p edgechat-core --bench throughput`) and prints the figures; the Worker's own
//! ingestion MB/s, end to end, is in `bench/knowledge.mjs`. It also checks that the chunks of
//! the large input keep their invariants, so a speed-up that breaks them is not reported.

use edgechat_core::knowledge::chunk::{chunk_text, ChunkOptions, LayoutSlice};
use edgechat_core::knowledge::extract::pdf_to_text;
use edgechat_core::knowledge::ingest::{begin_reading, read_document, DocKind};
use edgechat_core::knowledge::steps::{
    slice_target, split_by_size, StagedChunk, DRAFT_STATEMENT_BYTES, MAX_SLICES,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The heap in use and its high-water mark, to report the most a step holds at once (in the
/// Worker, that is the module's memory, which never shrinks, against 128 MB per isolate).
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grown = new_size - layout.size();
                let now = IN_USE.fetch_add(grown, Ordering::Relaxed) + grown;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Nanoseconds this thread has spent on a CPU (Linux's `/proc/thread-self/schedstat`), so that
/// other work on the machine does not count against a step; elsewhere, wall time.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

/// CPU time of `f` in ms (wall time where the system does not say), and what it returned.
fn cpu_ms<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let (cpu, wall) = (thread_cpu_ns(), Instant::now());
    let out = f();
    let ms = match (cpu, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e6,
        _ => wall.elapsed().as_secs_f64() * 1000.0,
    };
    (ms, out)
}

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

/// A PDF of about `target` bytes: pages of Helvetica text in Flate-compressed streams.
fn typeset_pdf(text: &str, target: usize) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = vec![
        Vec::new(),
        Vec::new(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    let mut kids = Vec::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut size = 0;
    let mut at = 0;
    while size < target {
        let mut content = String::from("BT /F1 10 Tf 40 760 Td 13 TL ");
        for _ in 0..56 {
            let line = lines[at % lines.len()];
            at += 1;
            let line: String = line
                .chars()
                .take(110)
                .filter(|c| c.is_ascii() && !matches!(c, '(' | ')' | '\\'))
                .collect();
            content.push_str(&format!("({line}) Tj T* "));
        }
        content.push_str("ET");
        let data = miniz_oxide::deflate::compress_to_vec_zlib(content.as_bytes(), 6);
        let mut stream = format!(
            "<< /Length {} /Filter /FlateDecode >>\nstream\n",
            data.len()
        )
        .into_bytes();
        stream.extend_from_slice(&data);
        stream.extend_from_slice(b"\nendstream");
        size += stream.len() + 200;
        objects.push(stream);
        let content_id = objects.len();
        objects.push(format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>").into_bytes());
        kids.push(objects.len());
    }
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>".to_vec();
    let kids_list: Vec<String> = kids.iter().map(|k| format!("{k} 0 R")).collect();
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids_list.join(" "),
        kids.len()
    )
    .into_bytes();
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref_at = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref_at}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// The largest ingestion steps for an upload of the largest accepted size (20 MiB), as
/// `src/ingestion/read.rs` runs them: the step that reads the file (its bytes go into the
/// reading, whose layout is staged slice by slice as JSON) and the steps that each chunk one
/// slice and serialise its chunks. The CPU time in ms (this thread's, so other work on the
/// machine does not count) of the reading step and of the longest slice step, the slices, and
/// the most heap the reading step held at once, the file's bytes included.
fn largest_step(kind: DocKind, bytes: &[u8]) -> (f64, f64, usize, usize) {
    // The reading step as the Worker runs it: each slice goes to R2 as soon as it is made, so
    // it is let go here.
    let read = |bytes: Vec<u8>, keep: bool| {
        let document = read_document(kind, bytes).expect("the document extracts");
        let mut reading = begin_reading(document);
        let target = slice_target(reading.chunks.text().len());
        let (mut slices, mut kept) = (0, Vec::new());
        loop {
            let max = if slices + 1 >= MAX_SLICES {
                usize::MAX
            } else {
                target
            };
            let Some(slice) = reading.chunks.next_layout_slice(max) else {
                break;
            };
            let body = serde_json::to_vec(&slice).expect("slices serialise");
            slices += 1;
            if keep {
                kept.push(body);
            }
        }
        assert!(slices > 0 && slices <= MAX_SLICES);
        kept
    };
    let base = IN_USE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    // The file as the step has it, read from R2.
    let file = bytes.to_vec();
    let (ms, _) = cpu_ms(|| read(file, false));
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    // Again, keeping the slices, for the steps that chunk them.
    let staged = read(bytes.to_vec(), true);
    let mut slice_ms: f64 = 0.0;
    for body in &staged {
        let (ms, ()) = cpu_ms(|| {
            let slice: LayoutSlice = serde_json::from_slice(body).expect("a slice reads back");
            let chunks: Vec<StagedChunk> = slice
                .chunks(&ChunkOptions::default())
                .into_iter()
                .map(|c| {
                    let mut s = StagedChunk::from(c);
                    s.index_pairs();
                    s
                })
                .collect();
            let parts = split_by_size(&chunks, DRAFT_STATEMENT_BYTES, usize::MAX);
            let json: usize = parts
                .iter()
                .map(|p| serde_json::to_string(p).expect("drafts serialise").len())
                .sum();
            assert!(json > 0);
        });
        slice_ms = slice_ms.max(ms);
    }
    (ms, slice_ms, staged.len(), peak)
}

/// The vector index's scan: p50 of a top-40 query over `n` vectors of 1,024 dimensions
/// (bge-m3's width), signs first and then the candidates' full codes, and the memory the
/// index keeps (the signs and ids; the full codes stay in storage). Vectors are pseudo-random: a scan's cost
/// does not depend on what they hold.
fn vector_scan(n: usize) -> (f64, usize) {
    use edgechat_core::knowledge::semantic::vector::{Quantised, VectorSet};
    const DIMENSIONS: usize = 1024;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut set = VectorSet::new(DIMENSIONS);
    // The full codes, as the index's storage holds them for the exact comparison.
    let mut stored = Vec::with_capacity(n);
    for id in 0..n {
        let v: Vec<f32> = (0..DIMENSIONS).map(|_| next()).collect();
        let q = Quantised::from_f32(&v).expect("a non-zero vector");
        set.push(id as i64, &q);
        stored.push(q);
    }
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let q: Vec<f32> = (0..DIMENSIONS).map(|_| next()).collect();
            let q = Quantised::from_f32(&q).expect("a non-zero vector");
            let started = Instant::now();
            let found = set.nearest(
                &q,
                40,
                |_| true,
                |ids| {
                    ids.iter()
                        .map(|id| (*id, stored[*id as usize].clone()))
                        .collect()
                },
            );
            assert_eq!(found.len(), 40.min(n));
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], set.memory_bytes())
}

fn main() {
    let scans: Vec<(usize, f64, usize)> = [1_000, 10_000, 100_000]
        .into_iter()
        .map(|n| {
            let (p50, memory) = vector_scan(n);
            println!(
                "vector index scan, {n} chunks x 1024 dimensions: p50 {p50:.2} ms, {:.1} MiB",
                memory as f64 / 1048576.0
            );
            (n, p50, memory)
        })
        .collect();
    const MAX_UPLOAD: usize = 20 * 1024 * 1024;
    let text = corpus_text(MAX_UPLOAD);
    let text = &text[..text.floor_char_boundary(MAX_UPLOAD)];
    let (text_step_ms, text_slice_ms, text_slices, text_peak) =
        largest_step(DocKind::Text, text.as_bytes());
    let pdf_bytes = typeset_pdf(text, MAX_UPLOAD - 64 * 1024);
    let (pdf_step_ms, pdf_slice_ms, pdf_slices, pdf_peak) = largest_step(DocKind::Pdf, &pdf_bytes);
    const MIB: f64 = 1048576.0;
    println!(
        "largest step, 20 MiB text: reading {text_step_ms:.0} ms CPU ({text_slices} slices, {:.1} MiB heap at most), longest slice step {text_slice_ms:.0} ms CPU",
        text_peak as f64 / MIB
    );
    println!(
        "largest step, {:.1} MiB PDF: reading {pdf_step_ms:.0} ms CPU ({pdf_slices} slices, {:.1} MiB heap at most), longest slice step {pdf_slice_ms:.0} ms CPU",
        pdf_bytes.len() as f64 / MIB,
        pdf_peak as f64 / MIB
    );
    let (chunk_mbs, chunks) = chunking();
    let (pdf_mbs, pdf_ms) = pdf();
    println!("chunking 10 MB of the text corpus: {chunk_mbs:.1} MB/s ({chunks} chunks)");
    println!("PDF extraction (long_lo.pdf): {pdf_mbs:.1} MB/s, {pdf_ms:.1} ms per file");
    if let Some(path) = std::env::args().skip_while(|a| a != "--json").nth(1) {
        let vector_scans = scans
            .iter()
            .map(|(n, p50, memory)| {
                format!("{{\"chunks\": {n}, \"p50_ms\": {p50:.3}, \"memory_bytes\": {memory}}}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let json = format!(
            "{{\"vector_scan\": [{vector_scans}], \"chunking_mb_per_s\": {chunk_mbs:.2}, \"chunks\": {chunks}, \"pdf_mb_per_s\": {pdf_mbs:.2}, \"pdf_ms_per_file\": {pdf_ms:.2}, \"largest_step_text_ms\": {:.1}, \"largest_step_text_read_ms\": {text_step_ms:.1}, \"largest_step_text_slice_ms\": {text_slice_ms:.1}, \"largest_step_text_slices\": {text_slices}, \"largest_step_pdf_ms\": {:.1}, \"largest_step_pdf_read_ms\": {pdf_step_ms:.1}, \"largest_step_pdf_slice_ms\": {pdf_slice_ms:.1}, \"largest_step_pdf_slices\": {pdf_slices}, \"largest_step_pdf_bytes\": {}, \"largest_step_text_peak_bytes\": {text_peak}, \"largest_step_pdf_peak_bytes\": {pdf_peak}}}\n",
            text_step_ms.max(text_slice_ms),
            pdf_step_ms.max(pdf_slice_ms),
            pdf_bytes.len()
        );
        std::fs::write(&path, json).expect("the JSON output is writable");
    }
}
