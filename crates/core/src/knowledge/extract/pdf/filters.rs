//! Stream filters other than Flate (which `miniz_oxide` does), and the predictors that
//! xref and object streams use.

use super::objects::{Dict, Lexer, Obj};
use crate::knowledge::extract::binary::Budget;

/// Undoes PNG and TIFF predictors, used mostly by xref and object streams.
pub(super) fn predict(data: Vec<u8>, parm: Option<&Dict>) -> Option<Vec<u8>> {
    let Some(p) = parm else { return Some(data) };
    let get = |k: &[u8], d: i64| p.get(k).and_then(Obj::as_i64).unwrap_or(d);
    let pred = get(b"Predictor", 1);
    if pred < 2 {
        return Some(data);
    }
    let colors = get(b"Colors", 1).clamp(1, 32) as usize;
    let bpc = get(b"BitsPerComponent", 8).clamp(1, 16) as usize;
    let columns = get(b"Columns", 1).clamp(1, 1 << 20) as usize;
    let bpp = (colors * bpc).div_ceil(8).max(1);
    // Clamped to the data so a forged /Columns cannot demand a huge row buffer.
    let row_len = (colors * bpc * columns).div_ceil(8).min(data.len().max(1));
    if pred == 2 {
        if bpc != 8 {
            return Some(data);
        }
        let mut out = data;
        for row in out.chunks_mut(row_len) {
            for i in bpp..row.len() {
                row[i] = row[i].wrapping_add(row[i - bpp]);
            }
        }
        return Some(out);
    }
    let mut out = Vec::with_capacity(data.len());
    let mut prev = vec![0u8; row_len];
    for chunk in data.chunks(row_len + 1) {
        let (&ty, row) = chunk.split_first()?;
        let mut cur = row.to_vec();
        cur.resize(row_len, 0);
        for i in 0..row_len {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let b = prev[i];
            let c = if i >= bpp { prev[i - bpp] } else { 0 };
            let add = match ty {
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => 0,
            };
            cur[i] = cur[i].wrapping_add(add);
        }
        out.extend_from_slice(&cur[..row.len().min(row_len)]);
        prev = cur;
    }
    Some(out)
}

pub(super) fn ascii_hex(input: &[u8]) -> Vec<u8> {
    let mut lx = Lexer::new(input, 0, false);
    lx.hex_string()
}

pub(super) fn ascii85(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() * 4 / 5);
    let mut group = [0u8; 5];
    let mut n = 0;
    let body = input.strip_prefix(b"<~").unwrap_or(input);
    for &c in body {
        match c {
            b'~' => break,
            b'z' if n == 0 => out.extend_from_slice(&[0; 4]),
            b'!'..=b'u' => {
                group[n] = c - b'!';
                n += 1;
                if n == 5 {
                    let v = group.iter().fold(0u32, |acc, &d| {
                        acc.wrapping_mul(85).wrapping_add(u32::from(d))
                    });
                    out.extend_from_slice(&v.to_be_bytes());
                    n = 0;
                }
            }
            _ => {}
        }
    }
    if n > 1 {
        for g in group.iter_mut().skip(n) {
            *g = 84;
        }
        let v = group.iter().fold(0u32, |acc, &d| {
            acc.wrapping_mul(85).wrapping_add(u32::from(d))
        });
        out.extend_from_slice(&v.to_be_bytes()[..n - 1]);
    }
    out
}

pub(super) fn run_length(input: &[u8], budget: &Budget) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&len) = input.get(i) {
        if len == 128 {
            break;
        }
        if len < 128 {
            let n = len as usize + 1;
            let chunk = input.get(i + 1..(i + 1 + n).min(input.len()))?;
            out.extend_from_slice(chunk);
            i += 1 + n;
        } else {
            let b = *input.get(i + 1)?;
            out.extend(std::iter::repeat_n(b, 257 - len as usize));
            i += 2;
        }
        if out.len() > budget.left() {
            budget.take(usize::MAX);
            return None;
        }
    }
    budget.take(out.len()).then_some(out)
}

pub(super) fn lzw(input: &[u8], early: bool, budget: &Budget) -> Option<Vec<u8>> {
    let limit = budget.left();
    let mut out: Vec<u8> = Vec::new();
    // Each entry is (prefix code, last byte, length); strings are rebuilt on
    // output, which keeps the table small.
    let mut table: Vec<(u16, u8, u32)> = (0..256u16).map(|i| (u16::MAX, i as u8, 1)).collect();
    table.push((u16::MAX, 0, 0));
    table.push((u16::MAX, 0, 0));
    let mut width = 9u32;
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut prev: Option<u16> = None;
    let mut tmp: Vec<u8> = Vec::new();
    let emit = |code: u16, table: &Vec<(u16, u8, u32)>, tmp: &mut Vec<u8>| -> Option<u8> {
        tmp.clear();
        let mut c = code;
        while c != u16::MAX {
            let (p, b, _) = *table.get(c as usize)?;
            tmp.push(b);
            c = p;
            if tmp.len() > 4096 {
                return None;
            }
        }
        tmp.reverse();
        tmp.first().copied()
    };
    for &byte in input {
        acc = (acc << 8) | u32::from(byte);
        bits += 8;
        while bits >= width {
            let code = ((acc >> (bits - width)) & ((1 << width) - 1)) as u16;
            bits -= width;
            match code {
                256 => {
                    table.truncate(258);
                    width = 9;
                    prev = None;
                    continue;
                }
                257 => return budget.take(out.len()).then_some(out),
                _ => {}
            }
            if (code as usize) < table.len() {
                let f = emit(code, &table, &mut tmp)?;
                if let Some(p) = prev {
                    let len = table.get(p as usize)?.2 + 1;
                    table.push((p, f, len));
                }
            } else {
                // The code being defined right now: previous string plus its first byte.
                let p = prev?;
                let f = emit(p, &table, &mut tmp)?;
                let len = table.get(p as usize)?.2 + 1;
                table.push((p, f, len));
                emit(code, &table, &mut tmp)?;
            }
            out.extend_from_slice(&tmp);
            if out.len() > limit {
                budget.take(usize::MAX);
                return None;
            }
            prev = Some(code);
            let next = table.len() + usize::from(early);
            if next >= (1 << width) && width < 12 {
                width += 1;
            }
            if table.len() >= 4096 {
                // Writers must clear before the table overflows; stop growing if not.
                prev = None;
            }
        }
    }
    budget.take(out.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzw_spec_example() {
        // The worked example from the PDF specification (section 7.4.4.2).
        let budget = Budget::new(1 << 20);
        let out = lzw(
            &[0x80, 0x0B, 0x60, 0x50, 0x22, 0x0C, 0x0C, 0x85, 0x01],
            true,
            &budget,
        );
        assert_eq!(
            out.as_deref(),
            Some(&b"\x2D\x2D\x2D\x2D\x2D\x41\x2D\x2D\x2D\x42"[..])
        );
    }

    #[test]
    fn png_up_predictor() {
        let parm = Dict(vec![
            (b"Predictor".to_vec(), Obj::Int(12)),
            (b"Columns".to_vec(), Obj::Int(2)),
        ]);
        let data = vec![2, 1, 2, 2, 1, 1];
        assert_eq!(predict(data, Some(&parm)), Some(vec![1, 2, 2, 3]));
    }

    #[test]
    fn ascii85_with_padding_and_z() {
        assert_eq!(ascii85(b"<~87cURDZ~>"), b"Hello");
        assert_eq!(ascii85(b"z~>"), vec![0; 4]);
    }
}
