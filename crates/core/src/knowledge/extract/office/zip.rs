//! Just enough ZIP to read the parts of an Office, OpenDocument or EPUB package.
//!
//! Hand-written because the `zip` crate carries writers, many codecs and time
//! handling that a reader of deflated XML parts never needs.

use crate::knowledge::extract::binary::{inflate, Budget};
use crate::knowledge::extract::ExtractError;

struct Entry {
    name: String,
    method: u16,
    flags: u16,
    csize: u64,
    local: u64,
}

pub(crate) struct Zip<'a> {
    data: &'a [u8],
    entries: Vec<Entry>,
    /// The format the package should be ("DOCX"), for error messages.
    kind: &'static str,
}

/// Upper bound on directory entries; real packages have dozens, and the cap
/// keeps a forged count from making us walk gigabytes of directory.
const MAX_ENTRIES: usize = 100_000;

fn with_article(kind: &str) -> String {
    // "an EPUB", "an XLSX", "an OpenDocument file", "a DOCX".
    let article = if kind.starts_with(['A', 'E', 'F', 'O', 'X']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}

fn le(data: &[u8], at: usize, n: usize) -> Option<u64> {
    let b = data.get(at..at.checked_add(n)?)?;
    Some(
        b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)),
    )
}

fn sig(data: &[u8], at: usize, s: u32) -> bool {
    le(data, at, 4) == Some(u64::from(s))
}

impl<'a> Zip<'a> {
    /// Opens the package of a `kind` document ("DOCX", "PPTX", "XLSX").
    pub(crate) fn open(data: &'a [u8], kind: &'static str) -> Result<Zip<'a>, ExtractError> {
        if data.starts_with(&[0xD0, 0xCF, 0x11, 0xE0]) {
            return Err(ExtractError(format!(
                "the file is a password-protected {kind} or an old binary Office file (.doc, .ppt, .xls), which cannot be read"
            )));
        }
        if !data.starts_with(b"PK") {
            return Err(ExtractError(format!(
                "the file is not {}: it is not a ZIP package",
                with_article(kind)
            )));
        }
        match central_directory(data) {
            Some(entries) if !entries.is_empty() => Ok(Zip {
                data,
                entries,
                kind,
            }),
            // The directory sits at the end, so a package without one was
            // cut short; reading the parts before the cut would silently
            // index part of a document.
            _ => Err(ExtractError(format!(
                "the {kind} is truncated or damaged: its ZIP directory is missing"
            ))),
        }
    }

    /// The format the package should be, with its article ("an XLSX").
    pub(crate) fn kind(&self) -> String {
        with_article(self.kind)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// Reads a part by name (case-insensitive fallback, as some producers
    /// vary the case). `Ok(None)` means the part is absent.
    pub(crate) fn read(
        &self,
        name: &str,
        budget: &Budget,
    ) -> Result<Option<Vec<u8>>, ExtractError> {
        let entry = self
            .entries
            .iter()
            .rev()
            .find(|e| e.name == name)
            .or_else(|| {
                self.entries
                    .iter()
                    .find(|e| e.name.eq_ignore_ascii_case(name))
            });
        let Some(e) = entry else {
            return Ok(None);
        };
        if e.flags & 1 != 0 {
            return Err(ExtractError(format!(
                "the {} is encrypted, so its text cannot be read",
                self.kind
            )));
        }
        let damaged = || {
            ExtractError(format!(
                "the {} is damaged: the part {name} cannot be read",
                self.kind
            ))
        };
        let local = usize::try_from(e.local).map_err(|_| damaged())?;
        if !sig(self.data, local, 0x0403_4b50) {
            return Err(damaged());
        }
        let nlen = le(self.data, local + 26, 2).ok_or_else(damaged)? as usize;
        let elen = le(self.data, local + 28, 2).ok_or_else(damaged)? as usize;
        let start = local + 30 + nlen + elen;
        let rest = self.data.get(start..).ok_or_else(damaged)?;
        let clen = usize::try_from(e.csize)
            .unwrap_or(usize::MAX)
            .min(rest.len());
        let raw = &rest[..clen];
        match e.method {
            0 => {
                if budget.take(raw.len()) {
                    Ok(Some(raw.to_vec()))
                } else {
                    Err(self.too_big())
                }
            }
            8 => match inflate(raw, false, false, budget) {
                Some(v) => Ok(Some(v)),
                None if budget.exhausted.get() => Err(self.too_big()),
                None => Err(damaged()),
            },
            _ => Err(ExtractError(format!(
                "the {} uses an unsupported compression method ({}) for {name}",
                self.kind, e.method
            ))),
        }
    }

    fn too_big(&self) -> ExtractError {
        ExtractError(format!(
            "the {} expands to more than 64 MiB of data; it may be a zip bomb",
            self.kind
        ))
    }
}

fn central_directory(data: &[u8]) -> Option<Vec<Entry>> {
    let last = data.len().checked_sub(22)?;
    let first = last.saturating_sub(65_535);
    let eocd = (first..=last).rev().find(|&i| sig(data, i, 0x0605_4b50))?;
    let mut count = le(data, eocd + 10, 2)?;
    let mut off = le(data, eocd + 16, 4)?;
    if off == 0xFFFF_FFFF || count == 0xFFFF {
        // ZIP64: the real numbers live in a second record found via a locator.
        let loc = eocd.checked_sub(20)?;
        if sig(data, loc, 0x0706_4b50) {
            let z = usize::try_from(le(data, loc + 8, 8)?).ok()?;
            if sig(data, z, 0x0606_4b50) {
                count = le(data, z + 32, 8)?;
                off = le(data, z + 48, 8)?;
            }
        }
    }
    let mut p = usize::try_from(off).ok()?;
    let mut out = Vec::new();
    for _ in 0..count.min(MAX_ENTRIES as u64) {
        if !sig(data, p, 0x0201_4b50) {
            break;
        }
        let flags = le(data, p + 8, 2)? as u16;
        let method = le(data, p + 10, 2)? as u16;
        let mut csize = le(data, p + 20, 4)?;
        let usize_ = le(data, p + 24, 4)?;
        let nlen = le(data, p + 28, 2)? as usize;
        let elen = le(data, p + 30, 2)? as usize;
        let clen = le(data, p + 32, 2)? as usize;
        let mut local = le(data, p + 42, 4)?;
        let name = data.get(p + 46..p + 46 + nlen)?;
        let extra = data.get(p + 46 + nlen..p + 46 + nlen + elen).unwrap_or(&[]);
        if csize == 0xFFFF_FFFF || local == 0xFFFF_FFFF {
            zip64_extra(extra, usize_ == 0xFFFF_FFFF, &mut csize, &mut local);
        }
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            method,
            flags,
            csize,
            local,
        });
        p += 46 + nlen + elen + clen;
    }
    Some(out)
}

/// Fills 64-bit sizes from the ZIP64 extra field; its values appear only for
/// the header fields that were saturated, in a fixed order.
fn zip64_extra(mut extra: &[u8], has_usize: bool, csize: &mut u64, local: &mut u64) {
    while extra.len() >= 4 {
        let id = le(extra, 0, 2).unwrap_or(0);
        let len = le(extra, 2, 2).unwrap_or(0) as usize;
        let body = extra.get(4..4 + len).unwrap_or(&[]);
        if id == 1 {
            let mut at = if has_usize { 8 } else { 0 };
            if *csize == 0xFFFF_FFFF {
                if let Some(v) = le(body, at, 8) {
                    *csize = v;
                }
                at += 8;
            }
            if *local == 0xFFFF_FFFF {
                if let Some(v) = le(body, at, 8) {
                    *local = v;
                }
            }
            return;
        }
        extra = extra.get(4 + len..).unwrap_or(&[]);
    }
}
