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
    use miniz_oxide::inflate::{
        decompress_to_vec_with_limit, decompress_to_vec_zlib_with_limit, TINFLStatus,
    };
    let limit = budget.left();
    let res = if zlib {
        decompress_to_vec_zlib_with_limit(data, limit)
    } else {
        decompress_to_vec_with_limit(data, limit)
    };
    let out = match res {
        Ok(v) => v,
        Err(e) => {
            if e.status == TINFLStatus::HasMoreOutput {
                budget.take(usize::MAX);
                return None;
            }
            if e.output.is_empty() || !partial {
                return None;
            }
            e.output
        }
    };
    if budget.take(out.len()) {
        Some(out)
    } else {
        None
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
