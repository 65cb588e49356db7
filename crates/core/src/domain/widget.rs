//! Site visitors: who may chat with a chatbot without its owner's API key, and the short-lived
//! token that says so. A token is minted per visitor by `POST /widget/{uuid}/token` when the
//! chatbot's visibility admits the embedding site, and it opens only that chatbot's chat: new
//! sessions, and messages in the visitor's own sessions.
//!
//! A token is `ecw_<payload>.<signature>`: the payload is base64url JSON (chatbot, visitor id,
//! embedding origin, expiry) and the signature is HMAC-SHA256 over `ecw_<payload>` with the
//! operator's `WIDGET_TOKEN_SECRET`. Nothing is stored per token; the chatbot's visibility
//! and allowed origins are checked again on every request, so closing a chatbot takes effect
//! at once.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::canonical_uuid;
use crate::domain::api_key::constant_time_eq;
use crate::domain::chatbot::Visibility;
use crate::domain::session::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Visitor tokens start with this; API keys start with `ec_` and a hex digit, so the two
/// never collide.
pub const TOKEN_PREFIX: &str = "ecw_";
/// How long a visitor token works.
pub const TOKEN_TTL_SECS: i64 = 30 * 60;
/// How long after expiry a token may still be traded for a new one that keeps the visitor's
/// sessions.
pub const RENEW_WINDOW_SECS: i64 = 24 * 60 * 60;
/// Most origins a hybrid chatbot may list.
pub const MAX_ALLOWED_ORIGINS: usize = 20;
/// A secret shorter than this is refused: HMAC keys need real entropy.
pub const MIN_SECRET_BYTES: usize = 32;

// ---------------------------------------------------------------------------------------------
// Origins

/// `scheme://host[:port]` as browsers send it in `Origin`: lower-case host, no default port.
/// `None` for anything with a path, query, fragment or credentials, or a scheme other than
/// http(s). One trailing slash is tolerated because people paste origins that way.
pub fn normalize_origin(input: &str) -> Option<String> {
    let trimmed = input.trim();
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    let url = crate::idn::parse_url(trimmed).ok()?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || !url.username().is_empty()
        || url.password().is_some()
        || url.path() != "/"
        || url.query().is_some()
        || url.fragment().is_some()
        // Only one trailing slash is forgiven: "https://a.com//" names a path.
        || trimmed.ends_with('/')
    {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

/// The `allowed_origins` field of a chatbot create or update body: each an origin, at most
/// `MAX_ALLOWED_ORIGINS`, duplicates dropped, order kept.
pub fn parse_allowed_origins(value: &Value) -> ApiResult<Vec<String>> {
    const FIELD: &str = "allowed_origins";
    let items = value.as_array().ok_or_else(|| {
        ApiError::invalid(
            FIELD,
            "`allowed_origins` must be an array of origins such as https://www.example.com.",
        )
    })?;
    if items.len() > MAX_ALLOWED_ORIGINS {
        return Err(ApiError::invalid(
            FIELD,
            format!("`allowed_origins` may hold at most {MAX_ALLOWED_ORIGINS} origins."),
        ));
    }
    let mut origins: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let text = item.as_str().ok_or_else(|| {
            ApiError::invalid(FIELD, "`allowed_origins` must be an array of strings.")
        })?;
        // A browser never sends a wildcard as its origin: such an entry would admit no one.
        if text.contains('*') || text.to_ascii_lowercase().contains("%2a") {
            return Err(ApiError::invalid(
                FIELD,
                format!(
                    "`allowed_origins` holds {:?}: wildcards are not supported; list each site's \
                     origin, such as https://shop.example.com and https://www.example.com.",
                    text.chars().take(200).collect::<String>()
                ),
            ));
        }
        let origin = normalize_origin(text).ok_or_else(|| {
            ApiError::invalid(
                FIELD,
                format!(
                    "`allowed_origins` holds {:?}, which is not an origin: write the scheme and host, \
                     and the port if it is not the default, such as https://www.example.com.",
                    text.chars().take(200).collect::<String>()
                ),
            )
        })?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

// ---------------------------------------------------------------------------------------------
// Who may chat

/// Why a chatbot turns a visitor away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The chatbot is private: only its owner's keys reach it. To anyone else it does not
    /// exist, so the answer is the same 404 as for a uuid that names nothing.
    Private,
    /// The chatbot is hybrid and the embedding site is not among its allowed origins.
    OriginNotAllowed(Option<String>),
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Private => ApiError::not_found("chatbot"),
            Refusal::OriginNotAllowed(Some(origin)) => ApiError::Forbidden(format!(
                "This chatbot does not take visitors from {origin}: its owner has not listed that site."
            )),
            Refusal::OriginNotAllowed(None) => ApiError::Forbidden(
                "This chatbot only takes visitors on its owner's sites, and this request names none."
                    .into(),
            ),
        }
    }
}

/// Whether a chatbot of this visibility takes site visitors at all.
pub fn takes_visitors(visibility: &Visibility) -> bool {
    matches!(visibility, Visibility::Public | Visibility::Hybrid)
}

/// Whether a visitor embedded on `embedder` (an origin, or none) may chat with a chatbot of
/// this visibility and these allowed origins.
pub fn admits(
    visibility: &Visibility,
    allowed_origins: &[String],
    embedder: Option<&str>,
) -> Result<(), Refusal> {
    match visibility {
        Visibility::Public => Ok(()),
        Visibility::Hybrid => match embedder {
            Some(origin) if allowed_origins.iter().any(|o| o == origin) => Ok(()),
            other => Err(Refusal::OriginNotAllowed(other.map(str::to_string))),
        },
        Visibility::Private => Err(Refusal::Private),
    }
}

/// The site a token request comes from. A browser's `Origin` header names it for a
/// cross-origin call; a call from the service's own widget page (same origin, or no `Origin`
/// at all) names it in the body, as the page read it from its frame's ancestors.
pub fn embedder_origin(
    origin_header: Option<&str>,
    own_origin: &str,
    claimed: Option<&str>,
) -> Option<String> {
    match origin_header.map(str::trim) {
        Some(header) if header != "null" && header != own_origin => normalize_origin(header),
        _ => claimed.and_then(normalize_origin),
    }
}

/// A message as a visitor reads it: without `meta_json` (agent, model, tool calls and usage
/// are the owner's business), and without its sources when the chatbot does not show
/// citations.
pub fn visitor_message_json(message: &Message, show_citations: bool) -> Value {
    let mut value = message.to_json();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("meta_json");
        if !show_citations {
            fields.insert("cite_data_json".into(), Value::String("{}".into()));
        }
    }
    value
}

// ---------------------------------------------------------------------------------------------
// Tokens

/// What a visitor token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisitorClaims {
    #[serde(rename = "c")]
    pub chatbot_uuid: String,
    /// Random, 128 bits in hex: the sessions this visitor creates carry it.
    #[serde(rename = "v")]
    pub visitor_id: String,
    /// The site the visitor was on when the token was minted.
    #[serde(rename = "o")]
    pub origin: Option<String>,
    /// Unix seconds.
    #[serde(rename = "e")]
    pub expires_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not a visitor token, or altered, or signed with another secret.
    Invalid,
    /// Genuine but past its expiry; the claims allow a renewal within the window.
    Expired(VisitorClaims),
}

impl From<TokenError> for ApiError {
    fn from(err: TokenError) -> Self {
        match err {
            TokenError::Invalid => ApiError::Unauthorized(
                "The visitor token is not valid; get a new one from POST /api/v1/widget/{uuid}/token."
                    .into(),
            ),
            TokenError::Expired(_) => ApiError::Unauthorized(
                "The visitor token has expired; get a new one from POST /api/v1/widget/{uuid}/token."
                    .into(),
            ),
        }
    }
}

/// The visitor id a token request keeps when it presents the visitor's previous token
/// (`previous`), so a visitor whose token ran out continues the same sessions. The old token
/// must be genuine, for the same chatbot and site, and expired no longer than
/// `RENEW_WINDOW_SECS` ago.
pub fn renewed_visitor_id(
    previous: &str,
    secret: &[u8],
    now_secs: i64,
    chatbot_uuid: &str,
    embedder: Option<&str>,
) -> ApiResult<String> {
    let claims = match verify(previous, secret, now_secs) {
        Ok(claims) => claims,
        Err(TokenError::Expired(claims)) if now_secs - claims.expires_at <= RENEW_WINDOW_SECS => {
            claims
        }
        Err(TokenError::Expired(_)) => return Err(ApiError::Unauthorized(
            "The previous visitor token is too old to renew; ask for a new one without `token`."
                .into(),
        )),
        Err(err) => return Err(err.into()),
    };
    if claims.chatbot_uuid != chatbot_uuid {
        return Err(ApiError::Forbidden(
            "The previous visitor token is for another chatbot.".into(),
        ));
    }
    if claims.origin.as_deref() != embedder {
        return Err(ApiError::Forbidden(
            "The previous visitor token was issued on another site.".into(),
        ));
    }
    Ok(claims.visitor_id)
}

/// A fresh visitor id: 128 random bits in hex.
pub fn new_visitor_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub fn is_visitor_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub fn sign(claims: &VisitorClaims, secret: &[u8]) -> String {
    // Serialising a struct of strings and an integer cannot fail.
    let json = serde_json::to_vec(claims).unwrap_or_default();
    let signed = format!("{TOKEN_PREFIX}{}", base64url_encode(&json));
    let signature = base64url_encode(&hmac_sha256(secret, signed.as_bytes()));
    format!("{signed}.{signature}")
}

/// Checks a token's signature, shape and expiry against `now_secs`.
pub fn verify(token: &str, secret: &[u8], now_secs: i64) -> Result<VisitorClaims, TokenError> {
    let (signed, signature) = token.rsplit_once('.').ok_or(TokenError::Invalid)?;
    let payload = signed
        .strip_prefix(TOKEN_PREFIX)
        .ok_or(TokenError::Invalid)?;
    let given = base64url_decode(signature).ok_or(TokenError::Invalid)?;
    let expected = hmac_sha256(secret, signed.as_bytes());
    if !constant_time_eq(&given, &expected) {
        return Err(TokenError::Invalid);
    }
    let json = base64url_decode(payload).ok_or(TokenError::Invalid)?;
    let claims: VisitorClaims = serde_json::from_slice(&json).map_err(|_| TokenError::Invalid)?;
    let well_formed = canonical_uuid(&claims.chatbot_uuid).as_deref()
        == Some(claims.chatbot_uuid.as_str())
        && is_visitor_id(&claims.visitor_id);
    if !well_formed {
        return Err(TokenError::Invalid);
    }
    if now_secs >= claims.expires_at {
        return Err(TokenError::Expired(claims));
    }
    Ok(claims)
}

/// HMAC-SHA256 (RFC 2104) over the SHA-256 the service already carries.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block_key = [0u8; BLOCK];
    if key.len() > BLOCK {
        block_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block_key[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block_key.map(|b| b ^ 0x36));
    inner.update(message);
    let inner_hash = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block_key.map(|b| b ^ 0x5c));
    outer.update(inner_hash);
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer.finalize());
    out
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding (RFC 4648 §5).
pub fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(BASE64URL[((n >> (18 - 6 * i)) & 0x3f) as usize] as char);
        }
    }
    out
}

/// `bytes` in standard base64 (`+`, `/` and `=` padding), as HTTP's Basic credentials are.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out: String = base64url_encode(bytes)
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// The inverse of `base64url_encode`; `None` for anything it would not have produced.
pub fn base64url_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| BASE64URL.iter().position(|&x| x == c).map(|p| p as u32);
    let bytes = text.as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let produced = chunk.len() - 1;
        // Bits below the last whole byte must be zero, so each text decodes from one encoding.
        if n & ((1 << (24 - 8 * produced)) - 1) != 0 {
            return None;
        }
        for i in 0..produced {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const BOT: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

    fn claims(expires_at: i64) -> VisitorClaims {
        VisitorClaims {
            chatbot_uuid: BOT.into(),
            visitor_id: "00112233445566778899aabbccddeeff".into(),
            origin: Some("https://shop.example".into()),
            expires_at,
        }
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 1.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], b"Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn base64url_round_trips_and_rejects_non_canonical_text() {
        for (raw, encoded) in [
            (&b""[..], ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg"),
            (b"\xfb\xff", "-_8"),
        ] {
            assert_eq!(base64url_encode(raw), encoded);
            assert_eq!(base64url_decode(encoded).as_deref(), Some(raw));
        }
        assert_eq!(base64url_decode("Zh"), None, "stray low bits");
        assert_eq!(base64url_decode("Z"), None);
        assert_eq!(base64url_decode("Zm9v+g"), None, "standard alphabet");
        assert_eq!(base64url_decode("Zm9=v"), None);
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let token = sign(&claims(1_000), SECRET);
        assert!(token.starts_with(TOKEN_PREFIX));
        assert_eq!(verify(&token, SECRET, 999), Ok(claims(1_000)));
        assert_eq!(
            verify(&token, SECRET, 1_000),
            Err(TokenError::Expired(claims(1_000)))
        );
    }

    #[test]
    fn altered_or_foreign_tokens_are_invalid() {
        let token = sign(&claims(1_000), SECRET);
        assert_eq!(
            verify(&token, b"another secret of enough length!!", 0),
            Err(TokenError::Invalid)
        );
        // Every single-character change anywhere is caught.
        for i in 0..token.len() {
            let mut bytes = token.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            if altered != token {
                assert_eq!(verify(&altered, SECRET, 0), Err(TokenError::Invalid), "{i}");
            }
        }
        // A payload with a longer expiry, re-encoded but not re-signed.
        let (_, signature) = token.rsplit_once('.').unwrap();
        let forged = format!(
            "{TOKEN_PREFIX}{}.{signature}",
            base64url_encode(&serde_json::to_vec(&claims(9_999_999_999)).unwrap())
        );
        assert_eq!(verify(&forged, SECRET, 0), Err(TokenError::Invalid));
        for junk in ["", "ecw_", "ecw_.", "ec_abc", "ecw_abc.def", "ecw_a.b.c"] {
            assert_eq!(verify(junk, SECRET, 0), Err(TokenError::Invalid), "{junk}");
        }
    }

    #[test]
    fn renewal_keeps_the_visitor_within_the_window_only() {
        let old = sign(&claims(1_000), SECRET);
        let site = Some("https://shop.example");
        let id = "00112233445566778899aabbccddeeff";
        assert_eq!(
            renewed_visitor_id(&old, SECRET, 500, BOT, site).unwrap(),
            id
        );
        assert_eq!(
            renewed_visitor_id(&old, SECRET, 1_000 + RENEW_WINDOW_SECS, BOT, site).unwrap(),
            id
        );
        let status = |r: ApiResult<String>| r.unwrap_err().status();
        assert_eq!(
            status(renewed_visitor_id(
                &old,
                SECRET,
                1_001 + RENEW_WINDOW_SECS,
                BOT,
                site
            )),
            401
        );
        assert_eq!(
            status(renewed_visitor_id("ecw_x.y", SECRET, 500, BOT, site)),
            401
        );
        assert_eq!(
            status(renewed_visitor_id(
                &old,
                SECRET,
                500,
                "00000000-0000-4000-8000-000000000000",
                site
            )),
            403
        );
        assert_eq!(
            status(renewed_visitor_id(
                &old,
                SECRET,
                500,
                BOT,
                Some("https://evil.example")
            )),
            403
        );
        assert_eq!(
            status(renewed_visitor_id(&old, SECRET, 500, BOT, None)),
            403
        );
    }

    #[test]
    fn signed_claims_must_be_well_formed() {
        let mut odd = claims(1_000);
        odd.chatbot_uuid = "not-a-uuid".into();
        assert_eq!(
            verify(&sign(&odd, SECRET), SECRET, 0),
            Err(TokenError::Invalid)
        );
        let mut odd = claims(1_000);
        odd.visitor_id = "short".into();
        assert_eq!(
            verify(&sign(&odd, SECRET), SECRET, 0),
            Err(TokenError::Invalid)
        );
    }

    #[test]
    fn visitor_ids_are_random_hex() {
        let a = new_visitor_id().unwrap();
        assert!(is_visitor_id(&a));
        assert_ne!(a, new_visitor_id().unwrap());
        assert!(!is_visitor_id("00112233445566778899AABBCCDDEEFF"));
    }

    #[test]
    fn origins_are_normalised_or_refused() {
        for (input, expected) in [
            ("https://www.example.com", "https://www.example.com"),
            ("https://WWW.Example.com/", "https://www.example.com"),
            ("https://example.com:443", "https://example.com"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("  https://shop.example  ", "https://shop.example"),
            ("https://bücher.example", "https://xn--bcher-kva.example"),
        ] {
            assert_eq!(
                normalize_origin(input).as_deref(),
                Some(expected),
                "{input}"
            );
        }
        for input in [
            "",
            "*",
            "example.com",
            "https://example.com/shop",
            "https://example.com//",
            "https://example.com?x=1",
            "https://example.com#top",
            "https://user:pw@example.com",
            "ftp://example.com",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "https://",
        ] {
            assert_eq!(normalize_origin(input), None, "{input}");
        }
    }

    #[test]
    fn allowed_origins_are_validated_and_deduplicated() {
        let ok = parse_allowed_origins(&json!([
            "https://a.example/",
            "https://A.example",
            "http://b.example:8080"
        ]))
        .unwrap();
        assert_eq!(ok, vec!["https://a.example", "http://b.example:8080"]);
        assert_eq!(
            parse_allowed_origins(&json!([])).unwrap(),
            Vec::<String>::new()
        );
        for bad in [
            json!("https://a.example"),
            json!([1]),
            json!(["https://a.example/path"]),
            json!(["https://*.example"]),
            json!(["https://%2A.example"]),
            json!((0..21)
                .map(|i| format!("https://{i}.example"))
                .collect::<Vec<_>>()),
        ] {
            assert_eq!(
                parse_allowed_origins(&bad).unwrap_err().field(),
                Some("allowed_origins"),
                "{bad}"
            );
        }
    }

    #[test]
    fn visibility_decides_who_may_chat() {
        let listed = vec!["https://shop.example".to_string()];
        assert!(
            takes_visitors(&Visibility::Public)
                && takes_visitors(&Visibility::Hybrid)
                && !takes_visitors(&Visibility::Private)
        );
        assert_eq!(admits(&Visibility::Public, &[], None), Ok(()));
        assert_eq!(
            admits(&Visibility::Public, &[], Some("https://any.example")),
            Ok(())
        );
        assert_eq!(
            admits(&Visibility::Hybrid, &listed, Some("https://shop.example")),
            Ok(())
        );
        assert_eq!(
            admits(&Visibility::Hybrid, &listed, Some("https://other.example")),
            Err(Refusal::OriginNotAllowed(Some(
                "https://other.example".into()
            )))
        );
        assert_eq!(
            admits(&Visibility::Hybrid, &listed, None),
            Err(Refusal::OriginNotAllowed(None))
        );
        assert_eq!(
            admits(&Visibility::Private, &listed, Some("https://shop.example")),
            Err(Refusal::Private)
        );
        assert_eq!(
            ApiError::from(Refusal::Private),
            ApiError::not_found("chatbot"),
            "a private chatbot looks exactly like a missing one"
        );
        assert_eq!(
            ApiError::from(Refusal::OriginNotAllowed(None)).status(),
            403
        );
    }

    #[test]
    fn visitors_read_messages_without_the_owners_details() {
        use crate::domain::session::{sample_message, FinishReason};
        let message = sample_message(
            "r [1]",
            FinishReason::Stop,
            json!({"1": {"title": "Returns", "text": "Within 30 days."}}),
            json!({"functions_called": [{"name": "crm", "content": "secret"}]}),
        );
        let shown = visitor_message_json(&message, true);
        assert!(shown.get("meta_json").is_none());
        assert_eq!(shown["cite_data_json"], message.to_json()["cite_data_json"]);
        assert_eq!(shown["response"], "r [1]");
        let hidden = visitor_message_json(&message, false);
        assert_eq!(hidden["cite_data_json"], "{}");
        assert!(!hidden.to_string().contains("secret"));
    }

    #[test]
    fn the_embedder_is_the_cross_origin_caller_else_what_the_widget_page_reports() {
        let own = "https://chat.example";
        assert_eq!(
            embedder_origin(
                Some("https://shop.example"),
                own,
                Some("https://evil.example")
            )
            .as_deref(),
            Some("https://shop.example"),
            "a browser's Origin beats any claim in the body"
        );
        assert_eq!(
            embedder_origin(Some(own), own, Some("https://shop.example/")).as_deref(),
            Some("https://shop.example")
        );
        assert_eq!(
            embedder_origin(None, own, Some("https://shop.example")).as_deref(),
            Some("https://shop.example")
        );
        assert_eq!(embedder_origin(Some("null"), own, None), None);
        assert_eq!(embedder_origin(Some(own), own, Some("nonsense")), None);
    }
}
