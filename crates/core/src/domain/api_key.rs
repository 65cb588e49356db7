//! API keys: how a key looks, how it is stored (only its SHA-256), and constant-time checks.
//! A key holds 256 random bits, so a fast hash is enough: there is nothing to brute-force.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

pub const KEY_PREFIX: &str = "ec_";

/// A fresh key: the prefix and 64 hex digits of randomness.
pub fn generate_key() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{KEY_PREFIX}{}", hex(&bytes)))
}

pub fn hash_key(key: &str) -> String {
    sha256_hex(key.as_bytes())
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The first characters of a key, kept so a person can tell keys apart in a list.
pub fn display_prefix(key: &str) -> String {
    key.chars().take(KEY_PREFIX.len() + 6).collect()
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

/// Equality whose time does not depend on where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `Authorization: Bearer <token>`; `None` when absent or of another scheme.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let value = header?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A stored key, never with its secret.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKey {
    pub uuid: String,
    pub account_uuid: String,
    pub name: String,
    pub prefix: String,
    pub created_at: String,
}

impl ApiKey {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "name": self.name,
            "account_uuid": self.account_uuid,
            "prefix": self.prefix,
            "created_at": self.created_at,
        })
    }

    /// The create answer: the only time the key itself is shown.
    pub fn to_json_with_secret(&self, key: &str) -> Value {
        let mut v = self.to_json();
        v["key"] = Value::String(key.to_string());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_prefixed_and_hash_stably() {
        let a = generate_key().unwrap();
        let b = generate_key().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(KEY_PREFIX));
        assert_eq!(a.len(), KEY_PREFIX.len() + 64);
        assert_eq!(hash_key(&a), hash_key(&a));
        assert_ne!(hash_key(&a), hash_key(&b));
        assert!(!hash_key(&a).contains(&a[KEY_PREFIX.len()..]));
        // SHA-256 of "abc", a published test vector.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(display_prefix(&a).len(), KEY_PREFIX.len() + 6);
    }

    #[test]
    fn constant_time_eq_compares_whole_inputs() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer   abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(Some("Bearer ")), None);
        assert_eq!(bearer_token(Some("abc")), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn listed_keys_carry_no_secret() {
        let k = ApiKey {
            uuid: "u".into(),
            account_uuid: "a".into(),
            name: "n".into(),
            prefix: "ec_123456".into(),
            created_at: "t".into(),
        };
        assert!(k.to_json().get("key").is_none());
        assert_eq!(k.to_json_with_secret("ec_secret")["key"], "ec_secret");
    }
}
