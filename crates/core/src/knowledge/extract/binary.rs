//! What the binary formats (PDF, DOCX) share: a decompression budget, inflate, and a fast
//! hasher for their maps.
//!
//! Everything here is hand-written on top of `miniz_oxide` (inflate only) because the code
//! ships inside a size-budgeted WebAssembly Worker: the usual PDF and ZIP crates bring in
//! far more code than text extraction needs. Input is untrusted, so every parser is bounded
//! in depth, size and work and reports problems as [`ExtractError`] instead of panicking.

use std::cell::Cell;

use super::ExtractError;

pub(crate) fn err<T>(msg: &str) -> Result<T, ExtractError> {
    Err(ExtractError(msg.to_string()))
}

/// Total decompressed bytes one document may produce. Shared by all streams
/// of a document so that many small bombs cannot add up to a big one either.
pub(crate) const DECOMPRESS_BUDGET: usize = 64 << 20;

/// What the cells of one spreadsheet may take once their shared strings and repeats are
/// written out (a small part can name one long string a million times): their text and
/// `CELL_COST` for each, since a sheet of short cells takes many times its text in memory.
/// Measured on CSV tables read under `wrangler dev`: 500,000 short cells and their rows
/// written out took the module to 60 MiB, a million to 117 MiB.
pub(crate) const CELL_TEXT_BUDGET: usize = 24 << 20;

/// What one cell costs besides its text: its string, its place in the row, and the
/// allocator's share.
pub(crate) const CELL_COST: usize = 48;

/// Columns of a spreadsheet past this are not read: one stray cell in the last column (or a
/// row's trailing "1,024 empty cells") would otherwise give every row thousands of cells.
pub(crate) const MAX_SHEET_COLUMNS: usize = 256;

/// The error for a spreadsheet whose cells hold more text than `CELL_TEXT_BUDGET`.
pub(crate) fn too_much_cell_text() -> super::ExtractError {
    super::ExtractError(
        "the spreadsheet's cells take more than 24 MiB once read (their text, and 48 bytes for \
         each cell); split it into smaller files"
            .into(),
    )
}

pub(crate) struct Budget {
    left: Cell<usize>,
    pub(crate) exhausted: Cell<bool>,
}

impl Budget {
    pub(crate) fn new(total: usize) -> Self {
        Budget {
            left: Cell::new(total),
            exhausted: Cell::new(false),
        }
    }

    pub(crate) fn left(&self) -> usize {
        self.left.get()
    }

    /// Charges `n` bytes; returns false (and remembers it) once the budget is spent.
    pub(crate) fn take(&self, n: usize) -> bool {
        let left = self.left.get();
        if n > left {
            self.left.set(0);
            self.exhausted.set(true);
            false
        } else {
            self.left.set(left - n);
            true
        }
    }
}

/// Inflates zlib-wrapped (`zlib == true`) or raw deflate data within the budget.
/// With `partial`, damaged streams still yield what decoded before the
/// damage: PDF writers often leave slightly broken streams, and a partly
/// readable page beats none.
pub(crate) fn inflate(data: &[u8], zlib: bool, partial: bool, budget: &Budget) -> Option<Vec<u8>> {
    let limit = budget.left();
    // A small stream is kept as it is read. A larger one is measured first, then written into
    // a buffer of its size: a vector grown while decompressing holds its old and new buffers
    // at once, which took twice the budget to find a bomb over it.
    let mut small = Vec::new();
    let read = inflate_into(data, zlib, limit, |piece| {
        if small.len() + piece.len() <= KEPT_WHILE_MEASURING {
            small.extend_from_slice(piece);
        }
    });
    let (len, whole) = match read {
        Inflated::TooBig => {
            budget.take(usize::MAX);
            return None;
        }
        Inflated::Whole(len) => (len, true),
        Inflated::Damaged(len) => (len, false),
    };
    if !whole && (len == 0 || !partial) {
        return None;
    }
    let out = if len <= KEPT_WHILE_MEASURING {
        small
    } else {
        drop(small);
        let mut out = Vec::with_capacity(len);
        inflate_into(data, zlib, len, |piece| out.extend_from_slice(piece));
        out
    };
    if budget.take(out.len()) {
        Some(out)
    } else {
        None
    }
}

/// Output up to this size is kept while a stream is measured (`inflate`).
const KEPT_WHILE_MEASURING: usize = 1 << 20;

/// How far a stream decompressed.
enum Inflated {
    /// To its end, this many bytes.
    Whole(usize),
    /// This many bytes before it broke off (truncated or damaged).
    Damaged(usize),
    /// Past the limit.
    TooBig,
}

/// Decompresses `data` a piece at a time into `sink`, stopping past `limit` bytes.
fn inflate_into(data: &[u8], zlib: bool, limit: usize, mut sink: impl FnMut(&[u8])) -> Inflated {
    use miniz_oxide::inflate::stream::{inflate, InflateState};
    use miniz_oxide::{DataFormat, MZFlush, MZStatus};
    let format = if zlib {
        DataFormat::Zlib
    } else {
        DataFormat::Raw
    };
    let mut state = InflateState::new_boxed(format);
    let mut piece = vec![0u8; 64 * 1024];
    let mut input = data;
    let mut total = 0usize;
    loop {
        let step = inflate(&mut state, input, &mut piece, MZFlush::None);
        input = &input[step.bytes_consumed.min(input.len())..];
        let written = step.bytes_written.min(piece.len());
        if total + written > limit {
            return Inflated::TooBig;
        }
        sink(&piece[..written]);
        total += written;
        match step.status {
            Ok(MZStatus::StreamEnd) => return Inflated::Whole(total),
            // Stuck: the input ended before the stream did.
            Ok(_) | Err(_) if step.bytes_consumed == 0 && written == 0 => {
                return Inflated::Damaged(total)
            }
            Ok(_) => {}
            Err(_) => return Inflated::Damaged(total),
        }
    }
}

/// Hasher for all maps here. Keys are object numbers, character codes and
/// style names from one bounded document; SipHash's strength buys little
/// there, costs time per glyph and code size in the bundle. The finalizer
/// still spreads high bits into the low bits that pick buckets.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^ (x >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

pub(crate) type FastSet<K> =
    std::collections::HashSet<K, std::hash::BuildHasherDefault<FastHasher>>;

pub(crate) type FastMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use miniz_oxide::deflate::{compress_to_vec, compress_to_vec_zlib};

    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"the quick brown fox "[i % 20] ^ (i / 7919) as u8)
            .collect()
    }

    #[test]
    fn streams_small_and_large_come_back_whole() {
        for len in [
            0,
            10,
            KEPT_WHILE_MEASURING,
            KEPT_WHILE_MEASURING + 1,
            3 << 20,
        ] {
            let plain = text(len);
            let budget = Budget::new(DECOMPRESS_BUDGET);
            let raw = inflate(&compress_to_vec(&plain, 6), false, false, &budget);
            assert_eq!(raw.as_deref(), Some(plain.as_slice()), "{len}");
            let zlib = inflate(&compress_to_vec_zlib(&plain, 6), true, false, &budget);
            assert_eq!(zlib.as_deref(), Some(plain.as_slice()), "{len}");
            assert_eq!(budget.left(), DECOMPRESS_BUDGET - 2 * len);
        }
    }

    #[test]
    fn a_stream_past_the_budget_spends_it_and_gives_nothing() {
        let bomb = compress_to_vec(&vec![b'A'; 8 << 20], 10);
        let budget = Budget::new(4 << 20);
        assert_eq!(inflate(&bomb, false, true, &budget), None);
        assert!(budget.exhausted.get());
        assert_eq!(budget.left(), 0);
    }

    #[test]
    fn a_broken_stream_gives_what_came_before_only_when_asked() {
        let plain = text(2 << 20);
        let packed = compress_to_vec_zlib(&plain, 6);
        let cut = &packed[..packed.len() / 2];
        let budget = Budget::new(DECOMPRESS_BUDGET);
        assert_eq!(inflate(cut, true, false, &budget), None);
        let partial = inflate(cut, true, true, &budget).expect("what decoded before the cut");
        assert!(partial.len() > 1 << 19 && partial.len() < plain.len());
        assert_eq!(partial[..], plain[..partial.len()]);
        assert_eq!(inflate(b"not deflate at all", true, true, &budget), None);
    }
}
