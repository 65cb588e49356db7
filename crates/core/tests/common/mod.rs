//! Helpers shared by the integration tests and the benchmark. Each of them includes this
//! module and uses only part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

use edgechat_core::knowledge::chunk::{Chunk, ChunkOptions, MIN_MAX_TOKENS};
use edgechat_core::knowledge::tokens::estimate_tokens;

fn fixture_path(dir: &str, name: &str) -> String {
    format!(
        "{}/../../tests/fixtures/{dir}/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The bytes of `tests/fixtures/{dir}/{name}` at the repository root.
pub fn fixture_bytes(dir: &str, name: &str) -> Vec<u8> {
    let path = fixture_path(dir, name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The text of `tests/fixtures/{dir}/{name}` at the repository root.
pub fn fixture_text(dir: &str, name: &str) -> String {
    let path = fixture_path(dir, name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Invariants every output of the chunker must satisfy, whatever the input.
pub fn check_chunk_invariants(chunks: &[Chunk], o: &ChunkOptions) {
    let max = o.max_tokens.max(MIN_MAX_TOKENS);
    for (i, c) in chunks.iter().enumerate() {
        assert_eq!(c.position, i, "positions must be sequential");
        assert_eq!(
            c.tokens,
            estimate_tokens(&c.text),
            "tokens must be estimate_tokens(text)"
        );
        assert!(
            c.tokens <= max,
            "chunk {i} has {} tokens > max {max}: {:?}",
            c.tokens,
            preview(&c.text)
        );
        assert!(!c.text.trim().is_empty(), "chunk {i} is blank");
    }
}

pub fn preview(s: &str) -> String {
    s.chars().take(80).collect()
}

/// Builds a ZIP with stored (uncompressed) entries.
pub fn stored_zip(files: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, body) in files {
        let off = out.len() as u32;
        let head = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            h.extend_from_slice(&(body.len() as u32).to_le_bytes());
            h.extend_from_slice(&(body.len() as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            if central {
                // Comment length, disk, internal and external attributes.
                h.extend_from_slice(&[0; 10]);
                h.extend_from_slice(&off.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend(head(0x0403_4b50, false));
        out.extend_from_slice(body.as_bytes());
        central.extend(head(0x0201_4b50, true));
    }
    let cd_off = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_off.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}
