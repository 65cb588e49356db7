//! Reading a source as bounded steps, each one queue message. A step does a bounded amount of
//! work (one page fetched, one file extracted, one slice of chunks written) and may run twice
//! (a retried message): every step is written so that running it again changes nothing more.
//!
//! A new kind of work is a new variant here and an arm in the consumer's dispatch.

use super::chunk::Chunk;
use crate::string_enum::string_enum;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One unit of ingestion work, as it travels on the queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Fetch a web-page source and index it, or stage its chunks when they are many. `recheck`
    /// is a scheduled re-read: the page is asked for conditionally and left alone when it is
    /// unchanged.
    FetchPage {
        source: String,
        #[serde(default)]
        recheck: bool,
    },
    /// Read an upload's original from R2, extract and chunk it. `file_bytes` is the upload's
    /// size when whoever queued the step knew it: a small file is read in one step of a small
    /// bound (`reads_inline`), so more of them share an invocation.
    ExtractFile {
        source: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_bytes: Option<u64>,
    },
    /// Chunk one staged slice of a large reading's layout and write its chunks as drafts; the
    /// slice that completes the reading swaps all of them in at once.
    IndexSlice(SliceStep),
    /// Read a crawl's robots.txt and sitemaps, and queue its start page; with `resync`, also
    /// ask again for every page it has.
    CrawlStart {
        crawl: String,
        #[serde(default)]
        resync: bool,
    },
    /// Read one sitemap (or sitemap index) of a crawl.
    CrawlSitemap {
        crawl: String,
        url: String,
        /// How many sitemap indexes led here; bounded so a loop of indexes ends.
        nesting: u32,
    },
    /// Bring the vector indexes up to date with the chunks (search by meaning): embed what
    /// is new, remove what is gone, within one invocation's budget.
    SyncVectors,
}

/// Where a large reading's slice is and what the whole reading holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceStep {
    pub source: String,
    /// The source's chatbot, which names where the slices are staged.
    pub chatbot: String,
    /// The reading this slice belongs to; only the source's current reading may be swapped in.
    pub run: String,
    pub slice: u32,
    /// Slices in the whole reading: when this many are written, it is complete.
    pub slices: u32,
    pub tokens: i64,
    pub title: Option<String>,
    /// Hash of the reading's text, kept to tell a later re-read whether anything changed.
    pub page_hash: Option<String>,
}

impl Step {
    /// The data source the step reads, if it reads one.
    pub fn source(&self) -> Option<&str> {
        match self {
            Step::FetchPage { source, .. } | Step::ExtractFile { source, .. } => Some(source),
            Step::IndexSlice(slice) => Some(&slice.source),
            Step::CrawlStart { .. } | Step::CrawlSitemap { .. } | Step::SyncVectors => None,
        }
    }

    /// The crawl the step works for, if it is a crawl's own step.
    pub fn crawl(&self) -> Option<&str> {
        match self {
            Step::CrawlStart { crawl, .. } | Step::CrawlSitemap { crawl, .. } => Some(crawl),
            _ => None,
        }
    }

    /// The most D1 calls plus subrequests the step can make, where that is known tightly:
    /// reading an upload (claim, the file, then either its batch and what follows a reading's
    /// end, or a run of at most `MAX_SLICES` staged slices and their queue send, then the
    /// failure's record) and indexing a slice (the slice, its drafts, the swap, the staged
    /// slices' removal, the source, what follows its end, the failure's record). The other
    /// steps' calls grow with what they find on the web or in the index, up to the budget.
    /// A small upload's step never stages: its reading is indexed in the step, or, when its
    /// text turns out longer than `INLINE_TEXT_BYTES` (a compressed PDF, say), handed to a
    /// step of the full bound (claim, the file, the send, the failure's record). Either way
    /// it makes at most the claim, the file, its batch, what follows a reading's end (the
    /// webhooks read, their deliveries written and queued, the vector step queued) and the
    /// failure's record.
    pub fn call_bound(&self) -> Option<u32> {
        match self {
            Step::ExtractFile { .. } if self.reads_inline() => Some(INLINE_STEP_CALLS),
            Step::ExtractFile { .. } => Some(MAX_SLICES as u32 + 5),
            Step::IndexSlice(_) => Some(10),
            _ => None,
        }
    }

    /// Whether the step may run in an invocation that has made `used` of its `budget` calls,
    /// keeping one for the queue send that passes on whatever the invocation leaves.
    pub fn fits_after(&self, used: u32, budget: u32) -> bool {
        self.call_bound().is_some_and(|bound| used + bound < budget)
    }

    /// Whether the step promises to read its source in one step, never staging slices: an
    /// upload queued with a size of at most `SMALL_FILE_BYTES`.
    pub fn reads_inline(&self) -> bool {
        matches!(self, Step::ExtractFile { file_bytes: Some(bytes), .. } if *bytes <= SMALL_FILE_BYTES)
    }

    /// A short name for logs and benchmark figures.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::FetchPage { .. } => "fetch_page",
            Step::ExtractFile { .. } => "extract_file",
            Step::IndexSlice(_) => "index_slice",
            Step::CrawlStart { .. } => "crawl_start",
            Step::CrawlSitemap { .. } => "crawl_sitemap",
            Step::SyncVectors => "sync_vectors",
        }
    }
}

/// A reading whose text is at most this long (about 600 chunks) is chunked and written in the
/// step that read it, in one batch; a longer one is staged in slices of its layout, each
/// chunked and written by a step of its own, so no step does all of a large file's chunking.
pub const INLINE_TEXT_BYTES: usize = 450 * 1024;

/// An upload at most this large is read in one step (`Step::reads_inline`). Its text is
/// usually shorter than the file, so it is rarely handed on to be staged.
pub const SMALL_FILE_BYTES: u64 = INLINE_TEXT_BYTES as u64;

/// The most D1 calls plus subrequests of a small upload's step (`Step::call_bound`).
pub const INLINE_STEP_CALLS: u32 = 8;

/// Target size of one staged slice, in bytes of its text. A slice is one R2 object and one D1
/// batch; at 1 MiB the largest accepted file makes a few dozen.
pub const SLICE_BYTES: usize = 1024 * 1024;

/// A slice's drafts are numbered from `slice << SLICE_POSITION_BITS` (a slice is chunked on its
/// own, not knowing how many chunks come before it); the swap numbers them from 0 in order.
pub const SLICE_POSITION_BITS: u32 = 20;

/// At most this many slices per reading, whatever its size: the step that stages them writes
/// each one to R2, and a step stays within its budget of calls.
pub const MAX_SLICES: usize = 30;

/// Largest JSON text bound to one draft INSERT (D1 caps a string's size well above this).
pub const DRAFT_STATEMENT_BYTES: usize = 400 * 1024;

/// A chunk as a slice's step writes it, as a draft, until the reading is swapped in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedChunk {
    pub position: u32,
    pub heading: String,
    pub text: String,
    pub tokens: u32,
    /// The chunk's CJK character pairs (`knowledge::cjk::cjk_pairs`), when it holds CJK
    /// text: worked out by the step that writes the slice, indexed when the reading is swapped in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<String>,
}

impl From<Chunk> for StagedChunk {
    fn from(c: Chunk) -> Self {
        StagedChunk {
            position: c.position as u32,
            heading: c.heading.unwrap_or_default(),
            text: c.text,
            tokens: c.tokens as u32,
            pairs: None,
        }
    }
}

impl StagedChunk {
    /// Works out the chunk's CJK pairs from its heading and text, as a chunk written in one
    /// step has them.
    pub fn index_pairs(&mut self) {
        self.pairs = super::cjk::cjk_pairs(&format!("{}\n{}", self.heading, self.text));
    }
}

/// Bytes of text per staged slice for a reading whose text is `text_bytes` long: the target
/// size, or more when the reading would need more than `MAX_SLICES` slices (with room to
/// spare, as a slice ends at a whole span).
pub fn slice_target(text_bytes: usize) -> usize {
    SLICE_BYTES.max((text_bytes * 3 / 2).div_ceil(MAX_SLICES))
}

fn staged_size(c: &StagedChunk) -> usize {
    // The JSON around the strings; escapes make it a little more, which the limits allow for.
    c.heading.len() + c.text.len() + 64
}

/// Groups chunks into consecutive parts of about `target` bytes each, at most `max_parts`
/// (the target grows when the text is too large for that many).
pub fn split_by_size(
    chunks: &[StagedChunk],
    target: usize,
    max_parts: usize,
) -> Vec<&[StagedChunk]> {
    let total: usize = chunks.iter().map(staged_size).sum();
    let target = target.max(total.div_ceil(max_parts.max(1)));
    let mut parts = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, c) in chunks.iter().enumerate() {
        let s = staged_size(c);
        if size > 0 && size + s > target {
            parts.push(&chunks[start..i]);
            start = i;
            size = 0;
        }
        size += s;
    }
    if start < chunks.len() {
        parts.push(&chunks[start..]);
    }
    parts
}

string_enum! {
    /// How often a web page (or a whole crawl) is read again on its own.
    pub enum Refresh {
        Never = "never",
        Daily = "daily",
        Weekly = "weekly",
        Monthly = "monthly",
    }
}

impl Refresh {
    /// Seconds between scheduled re-reads; `None` for never.
    pub fn interval_secs(self) -> Option<i64> {
        match self {
            Refresh::Never => None,
            Refresh::Daily => Some(86_400),
            Refresh::Weekly => Some(7 * 86_400),
            Refresh::Monthly => Some(30 * 86_400),
        }
    }

    /// When the next scheduled re-read is due after `now` (RFC 3339), if any.
    pub fn next_after(self, now: &str) -> Option<String> {
        let secs = self.interval_secs()?;
        let at = crate::time::seconds_of(now)?;
        Some(crate::time::format_secs(at + secs))
    }
}

/// Why a source's reading was given up on when no step said why.
pub const GIVEN_UP: &str = "Reading this source failed again and again.";

/// A re-read (a re-sync, or a page's own `refresh`) marks its page checked in `meta` as it is
/// queued, so a page that answers unchanged costs no write; `before` is the page's
/// `last_checked_at` until then. A re-read that fails puts it back (or takes the mark out when
/// the page had none): the page was not checked.
pub fn unmark_checked(meta: &mut Map<String, Value>, before: Option<&str>) {
    match before {
        Some(at) => meta.insert("last_checked_at".into(), Value::from(at)),
        None => meta.remove("last_checked_at"),
    };
}

/// A re-read given up on after its retries (the server kept answering 5xx, or could not be
/// reached): the page keeps the text it had, says why in `error` (the last step's reason),
/// and is not marked checked.
pub fn recheck_given_up(meta: &mut Map<String, Value>, reason: Option<&str>, before: Option<&str>) {
    meta.insert("error".into(), Value::from(reason.unwrap_or(GIVEN_UP)));
    meta.remove("resumed");
    unmark_checked(meta, before);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_re_read_says_why_and_keeps_the_last_real_check() {
        let marked = json!({"url": "https://e.com/a", "last_checked_at": "2025-03-02T00:00:00Z",
            "last_changed_at": "2025-01-01T00:00:00Z", "resumed": true});
        let mut meta = marked.as_object().unwrap().clone();
        recheck_given_up(
            &mut meta,
            Some("The page answered HTTP 500."),
            Some("2025-03-01T00:00:00Z"),
        );
        assert_eq!(
            Value::Object(meta),
            json!({"url": "https://e.com/a", "last_checked_at": "2025-03-01T00:00:00Z",
                "last_changed_at": "2025-01-01T00:00:00Z", "error": "The page answered HTTP 500."})
        );
        // Never checked before the re-read: no check is claimed; no reason: the general one.
        let mut meta = marked.as_object().unwrap().clone();
        recheck_given_up(&mut meta, None, None);
        assert_eq!(meta.get("last_checked_at"), None);
        assert_eq!(meta["error"], GIVEN_UP);
    }

    /// How many copies of `step`, each making 4 calls, one invocation of 50 runs in turn, and
    /// the calls they make.
    fn run_in_one_invocation(step: &Step) -> (usize, u32) {
        let (mut ran, mut used) = (0, 0);
        while ran == 0 || step.fits_after(used, 50) {
            used += 4;
            ran += 1;
        }
        (ran, used)
    }

    #[test]
    fn an_invocation_runs_more_steps_only_while_their_bounds_fit_its_budget() {
        let extract = Step::ExtractFile {
            source: "s".into(),
            file_bytes: None,
        };
        // Small uploads cost 4 calls each: four of them fit 50 with a send to spare.
        let (ran, used) = run_in_one_invocation(&extract);
        assert_eq!(ran, 4);
        assert!(used + extract.call_bound().unwrap_or(0) + 1 > 50);
        // A step whose calls depend on what it finds never follows another.
        let crawl = Step::CrawlStart {
            crawl: "c".into(),
            resync: false,
        };
        assert!(!crawl.fits_after(0, 50));
        assert_eq!(crawl.call_bound(), None);
        // Whatever ran first, the second step's bound still fits under the budget.
        assert!(extract.call_bound().unwrap_or(u32::MAX) < 50);
    }

    #[test]
    fn a_small_upload_promises_a_small_bound_so_more_share_an_invocation() {
        let small = |n: u64| Step::ExtractFile {
            source: "s".into(),
            file_bytes: Some(n),
        };
        let large = Step::ExtractFile {
            source: "l".into(),
            file_bytes: Some(SMALL_FILE_BYTES + 1),
        };
        let unknown = Step::ExtractFile {
            source: "u".into(),
            file_bytes: None,
        };
        assert!(small(SMALL_FILE_BYTES).reads_inline());
        assert!(!large.reads_inline() && !unknown.reads_inline());
        assert_eq!(large.call_bound(), unknown.call_bound());
        assert_eq!(small(1).call_bound(), Some(INLINE_STEP_CALLS));
        // Small uploads cost 4 calls each: eleven of them share 50 with a send to spare,
        // where steps of unknown size stop at four.
        assert_eq!(run_in_one_invocation(&small(1000)).0, 11);
        assert_eq!(run_in_one_invocation(&unknown).0, 4);
        // Messages queued before steps carried a size still read, with the full bound.
        let old: Step =
            serde_json::from_str(r#"{"step":"extract_file","source":"u"}"#).expect("old step");
        assert_eq!(old, unknown);
    }

    fn chunk(position: u32, bytes: usize) -> StagedChunk {
        StagedChunk {
            position,
            heading: String::new(),
            text: "x".repeat(bytes),
            tokens: 1,
            pairs: None,
        }
    }

    #[test]
    fn steps_travel_as_tagged_json() {
        let step = Step::FetchPage {
            source: "s".into(),
            recheck: false,
        };
        let json = serde_json::to_string(&step).unwrap();
        assert_eq!(
            json,
            r#"{"step":"fetch_page","source":"s","recheck":false}"#
        );
        let back: Step = serde_json::from_str(r#"{"step":"fetch_page","source":"s"}"#).unwrap();
        assert_eq!(
            back,
            Step::FetchPage {
                source: "s".into(),
                recheck: false
            }
        );
        let slice = Step::IndexSlice(SliceStep {
            source: "s".into(),
            chatbot: "c".into(),
            run: "r".into(),
            slice: 1,
            slices: 3,
            tokens: 99,
            title: None,
            page_hash: None,
        });
        let again: Step = serde_json::from_str(&serde_json::to_string(&slice).unwrap()).unwrap();
        assert_eq!(again, slice);
        assert_eq!(again.source(), Some("s"));
        assert_eq!(again.kind(), "index_slice");
        let crawl = Step::CrawlStart {
            crawl: "c".into(),
            resync: false,
        };
        assert_eq!(crawl.crawl(), Some("c"));
        assert_eq!(crawl.source(), None);
    }

    #[test]
    fn slices_are_consecutive_bounded_and_complete() {
        let chunks: Vec<StagedChunk> = (0..100).map(|i| chunk(i, 1000)).collect();
        let parts = split_by_size(&chunks, 10_000, 30);
        assert_eq!(parts.len(), 12, "nine chunks of 1064 bytes fit 10 000");
        let flat: Vec<u32> = parts
            .iter()
            .flat_map(|p| p.iter().map(|c| c.position))
            .collect();
        assert_eq!(flat, (0..100).collect::<Vec<_>>());
        // Too many parts at the target size: the target grows instead.
        let parts = split_by_size(&chunks, 1000, 7);
        assert!(parts.len() <= 8, "{}", parts.len());
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), 100);
        // One chunk larger than the target is a part of its own.
        let big = vec![chunk(0, 50), chunk(1, 5000), chunk(2, 50)];
        assert_eq!(split_by_size(&big, 1000, 30).len(), 3);
        assert!(split_by_size(&[], 1000, 30).is_empty());
    }

    #[test]
    fn staged_chunks_carry_cjk_pairs_only_when_they_have_cjk_text() {
        let mut latin = chunk(0, 10);
        latin.index_pairs();
        assert_eq!(latin.pairs, None);
        assert!(!serde_json::to_string(&latin).unwrap().contains("pairs"));
        let mut cjk = StagedChunk {
            text: "東京の天気".into(),
            ..chunk(1, 0)
        };
        cjk.index_pairs();
        let pairs = cjk.pairs.clone().unwrap();
        assert!(pairs.contains("東京"), "{pairs}");
        let back: StagedChunk =
            serde_json::from_str(&serde_json::to_string(&cjk).unwrap()).unwrap();
        assert_eq!(back, cjk);
        assert_eq!(slice_target(1000), SLICE_BYTES);
        assert!(slice_target(60 << 20) * MAX_SLICES >= (60 << 20) * 3 / 2);
    }

    #[test]
    fn refresh_intervals() {
        assert_eq!(Refresh::Never.next_after("2026-01-01T00:00:00Z"), None);
        assert_eq!(
            Refresh::Daily.next_after("2026-01-01T00:00:00Z").as_deref(),
            Some("2026-01-02T00:00:00Z")
        );
        assert_eq!(
            Refresh::Weekly
                .next_after("2026-01-01T00:00:00Z")
                .as_deref(),
            Some("2026-01-08T00:00:00Z")
        );
        assert_eq!(Refresh::parse("monthly"), Some(Refresh::Monthly));
    }
}
