//! Reading typed fields out of a JSON request body. Unknown fields are ignored; a field of the
//! wrong type, or out of range, is a 400 that names it.

use crate::api::error::{ApiError, ApiResult};
use crate::string_enum::StringEnum;
use serde_json::{Map, Value};

/// Upper bounds on string inputs, in characters.
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_DESCRIPTION_CHARS: usize = 4_000;
pub const MAX_PROMPT_CHARS: usize = 20_000;
pub const MAX_MESSAGE_CHARS: usize = 2_000;
pub const MAX_LIST_ITEMS: usize = 1_000;

/// Parses a request body: it must be a JSON object. An empty body reads as `{}` so that
/// endpoints whose fields are all optional accept a bare POST.
/// A byte order mark before the JSON is allowed (RFC 8259 lets a parser ignore it), and so is
/// an escaped half of a UTF-16 surrogate pair without its other half (what JavaScript's
/// `JSON.stringify` writes for an emoji cut in two), read as U+FFFD.
pub fn parse_object(bytes: &[u8]) -> ApiResult<Map<String, Value>> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Map::new());
    }
    let parsed =
        serde_json::from_slice(bytes).or_else(|err| match without_lone_surrogates(bytes) {
            Some(mended) => serde_json::from_slice(&mended),
            None => Err(err),
        });
    let value: Value = parsed.map_err(|e| {
        ApiError::InvalidJson(if e.to_string().starts_with("recursion limit exceeded") {
            "The request body nests deeper than 128 levels.".to_string()
        } else {
            format!(
                "The request body is not valid JSON (line {}, column {}).",
                e.line(),
                e.column()
            )
        })
    })?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid_request(
            "The request body must be a JSON object.",
        )),
    }
}

/// `bytes` with each `\u` escape of a lone UTF-16 surrogate replaced by `\ufffd`; `None`
/// when there is none. Escapes are read in order, so an escaped backslash before a `u` is text.
fn without_lone_surrogates(bytes: &[u8]) -> Option<Vec<u8>> {
    let unit = |at: usize| -> Option<u16> {
        let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    };
    let high = |u: u16| (0xD800..=0xDBFF).contains(&u);
    let low = |u: u16| (0xDC00..=0xDFFF).contains(&u);
    let mut out = Vec::with_capacity(bytes.len());
    let mut mended = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let escaped = (bytes.get(i + 1) == Some(&b'u'))
            .then(|| unit(i + 2))
            .flatten();
        let taken = match escaped {
            Some(u)
                if high(u)
                    && bytes.get(i + 6..i + 8) == Some(b"\\u")
                    && unit(i + 8).is_some_and(low) =>
            {
                12
            }
            Some(u) if high(u) || low(u) => {
                out.extend_from_slice(b"\\ufffd");
                mended = true;
                i += 6;
                continue;
            }
            Some(_) => 6,
            None => 2,
        };
        let end = (i + taken).min(bytes.len());
        out.extend_from_slice(&bytes[i..end]);
        i = end;
    }
    mended.then_some(out)
}

/// A borrowed view of a request body with typed accessors.
pub struct Body<'a>(pub &'a Map<String, Value>);

fn type_error(field: &str, expected: &str) -> ApiError {
    ApiError::invalid(field, format!("`{field}` must be {expected}."))
}

impl<'a> Body<'a> {
    pub fn has(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    pub fn raw(&self, field: &str) -> Option<&'a Value> {
        self.0.get(field)
    }

    pub fn opt_str(&self, field: &str, max_chars: usize) -> ApiResult<Option<String>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => {
                check_len(field, s, max_chars)?;
                Ok(Some(s.clone()))
            }
            Some(_) => Err(type_error(field, "a string")),
        }
    }

    /// A string that must be present and not blank.
    pub fn req_str(&self, field: &str, max_chars: usize) -> ApiResult<String> {
        match self.opt_str(field, max_chars)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(ApiError::invalid(
                field,
                format!("`{field}` must not be empty."),
            )),
            None => Err(ApiError::invalid(field, format!("`{field}` is required."))),
        }
    }

    /// An optional string which, when sent, must not be blank (names).
    pub fn opt_nonblank_str(&self, field: &str, max_chars: usize) -> ApiResult<Option<String>> {
        match self.opt_str(field, max_chars)? {
            Some(s) if s.trim().is_empty() => Err(ApiError::invalid(
                field,
                format!("`{field}` must not be empty."),
            )),
            other => Ok(other.map(|s| s.trim().to_string())),
        }
    }

    pub fn opt_bool(&self, field: &str) -> ApiResult<Option<bool>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(type_error(field, "true or false")),
        }
    }

    pub fn opt_f64(&self, field: &str, min: f64, max: f64) -> ApiResult<Option<f64>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                let v = n.as_f64().ok_or_else(|| type_error(field, "a number"))?;
                if v < min || v > max {
                    return Err(ApiError::invalid(
                        field,
                        format!("`{field}` must be between {min} and {max}."),
                    ));
                }
                Ok(Some(v))
            }
            Some(_) => Err(type_error(field, "a number")),
        }
    }

    /// A whole number from `min` to `max` (`3` or `3.0`, not `2.5`); absent or null is `None`.
    pub fn opt_whole(&self, field: &str, min: i64, max: i64) -> ApiResult<Option<i64>> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => match as_whole_number(value) {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::invalid(
                    field,
                    format!("`{field}` must be a whole number from {min} to {max}."),
                )),
            },
        }
    }

    pub fn opt_enum(&self, field: &str, allowed: &[&str]) -> ApiResult<Option<String>> {
        match self.opt_str(field, 100)? {
            None => Ok(None),
            Some(s) if allowed.contains(&s.as_str()) => Ok(Some(s)),
            Some(_) => Err(ApiError::invalid(
                field,
                format!("`{field}` must be one of: {}.", allowed.join(", ")),
            )),
        }
    }

    /// An optional string that must spell a variant of `E`.
    pub fn opt_variant<E: StringEnum>(&self, field: &str) -> ApiResult<Option<E>> {
        Ok(self
            .opt_enum(field, E::NAMES)?
            .and_then(|name| E::parse(&name)))
    }

    pub fn opt_string_array(
        &self,
        field: &str,
        max_items: usize,
    ) -> ApiResult<Option<Vec<String>>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => {
                if items.len() > max_items {
                    return Err(ApiError::invalid(
                        field,
                        format!("`{field}` may hold at most {max_items} items."),
                    ));
                }
                items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => Ok(s.clone()),
                        _ => Err(type_error(field, "an array of strings")),
                    })
                    .collect::<ApiResult<Vec<_>>>()
                    .map(Some)
            }
            Some(_) => Err(type_error(field, "an array of strings")),
        }
    }

    pub fn opt_array(&self, field: &str, max_items: usize) -> ApiResult<Option<&'a Vec<Value>>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) if items.len() > max_items => Err(ApiError::invalid(
                field,
                format!("`{field}` may hold at most {max_items} items."),
            )),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(type_error(field, "an array")),
        }
    }

    pub fn opt_object(&self, field: &str) -> ApiResult<Option<&'a Map<String, Value>>> {
        match self.0.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(type_error(field, "an object")),
        }
    }
}

pub fn check_len(field: &str, s: &str, max_chars: usize) -> ApiResult<()> {
    if s.chars().count() > max_chars {
        return Err(ApiError::invalid(
            field,
            format!("`{field}` must be at most {max_chars} characters."),
        ));
    }
    Ok(())
}

/// A uuid in canonical hyphenated form, lower-cased; `None` for anything else.
pub fn canonical_uuid(s: &str) -> Option<String> {
    if s.len() != 36 {
        return None;
    }
    uuid::Uuid::parse_str(s)
        .ok()
        .map(|u| u.hyphenated().to_string())
}

/// Uuids in canonical form, without repeats; any other value is a 400 naming `field`.
pub fn canonical_uuid_list(field: &str, items: &[String]) -> ApiResult<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let uuid = canonical_uuid(item).ok_or_else(|| {
            ApiError::invalid(
                field,
                format!("`{field}` holds a value that is not a uuid: {item:?}."),
            )
        })?;
        if !out.contains(&uuid) {
            out.push(uuid);
        }
    }
    Ok(out)
}

/// `#rgb` or `#rrggbb`.
pub fn is_hex_color(s: &str) -> bool {
    s.strip_prefix('#').is_some_and(|hex| {
        matches!(hex.len(), 3 | 6) && hex.chars().all(|ch| ch.is_ascii_hexdigit())
    })
}

/// An integral JSON number (`3` or `3.0`), as i64.
pub fn as_whole_number(value: &Value) -> Option<i64> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 1e15).then_some(f as i64)
}

/// `Ok` for a JSON media type or none at all (the body is then tried as JSON).
pub fn check_json_content_type(content_type: Option<&str>) -> ApiResult<()> {
    let Some(ct) = content_type else {
        return Ok(());
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence.is_empty() || essence == "application/json" || essence.ends_with("+json") {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType(format!(
            "This endpoint takes a JSON body (Content-Type: application/json), not {essence}."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn parse_object_errors() {
        assert_eq!(parse_object(b"").map(|m| m.len()), Ok(0));
        assert_eq!(parse_object(b"  \n").map(|m| m.len()), Ok(0));
        assert!(matches!(parse_object(b"{"), Err(ApiError::InvalidJson(_))));
        assert!(matches!(
            parse_object(b"{\"a\":}"),
            Err(ApiError::InvalidJson(_))
        ));
        assert!(matches!(
            parse_object(b"[1,2]"),
            Err(ApiError::InvalidRequest { field: None, .. })
        ));
        assert_eq!(parse_object(br#"{"a":1}"#).map(|m| m.len()), Ok(1));
    }

    #[test]
    fn a_byte_order_mark_and_half_a_surrogate_pair_are_read() {
        let text = |raw: &[u8]| parse_object(raw).map(|m| m["t"].as_str().map(String::from));
        assert_eq!(text(b"\xEF\xBB\xBF{\"t\":\"x\"}"), Ok(Some("x".into())));
        assert_eq!(
            text(br#"{"t":"a\ud83d b"}"#),
            Ok(Some("a\u{fffd} b".into()))
        );
        assert_eq!(
            text(br#"{"t":"\ude00\ud83d"}"#),
            Ok(Some("\u{fffd}\u{fffd}".into()))
        );
        // A whole pair, and an escaped backslash before a "u", are left as they are.
        assert_eq!(
            text(br#"{"t":"\ud83d\ude00 \\ud83d"}"#),
            Ok(Some("😀 \\ud83d".into()))
        );
        assert!(matches!(
            parse_object(br#"{"t":"\ud83d"#),
            Err(ApiError::InvalidJson(_))
        ));
        let deep = format!("{{\"t\":{}{}}}", "[".repeat(200), "]".repeat(200));
        match parse_object(deep.as_bytes()) {
            Err(ApiError::InvalidJson(message)) => {
                assert!(message.contains("128 levels"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn typed_accessors_name_the_field() {
        let m = body(json!({"name": 5, "ok": "yes", "n": "1", "list": [1], "obj": []}));
        let b = Body(&m);
        assert_eq!(b.opt_str("name", 10).unwrap_err().field(), Some("name"));
        assert_eq!(b.opt_bool("ok").unwrap_err().field(), Some("ok"));
        assert_eq!(b.opt_f64("n", 0.0, 1.0).unwrap_err().field(), Some("n"));
        assert_eq!(
            b.opt_string_array("list", 5).unwrap_err().field(),
            Some("list")
        );
        assert_eq!(b.opt_object("obj").unwrap_err().field(), Some("obj"));
        assert_eq!(
            b.req_str("missing", 10).unwrap_err().field(),
            Some("missing")
        );
    }

    #[test]
    fn ranges_and_lengths() {
        let m = body(json!({"t": 2.5, "s": "abcdef", "blank": "  ", "e": "public", "x": "secret"}));
        let b = Body(&m);
        assert!(b.opt_f64("t", 0.0, 2.0).is_err());
        assert_eq!(b.opt_f64("t", 0.0, 3.0), Ok(Some(2.5)));
        assert!(b.opt_str("s", 5).is_err());
        assert!(b.req_str("blank", 5).is_err());
        assert!(b.opt_nonblank_str("blank", 5).is_err());
        assert_eq!(
            b.opt_enum("e", &["private", "public"]),
            Ok(Some("public".to_string()))
        );
        assert_eq!(
            b.opt_enum("x", &["private"]).unwrap_err().field(),
            Some("x")
        );
        // Length counts characters, not bytes.
        let m = body(json!({"u": "ééééé"}));
        assert!(Body(&m).opt_str("u", 5).is_ok());
    }

    #[test]
    fn uuids_and_whole_numbers() {
        assert_eq!(
            canonical_uuid("6F9619FF-8B86-4011-B42D-00C04FC964FF").as_deref(),
            Some("6f9619ff-8b86-4011-b42d-00c04fc964ff")
        );
        assert_eq!(canonical_uuid("6f9619ff8b864011b42d00c04fc964ff"), None);
        assert_eq!(canonical_uuid("models"), None);
        assert_eq!(as_whole_number(&json!(3)), Some(3));
        assert_eq!(as_whole_number(&json!(3.0)), Some(3));
        assert_eq!(as_whole_number(&json!(3.5)), None);
        assert_eq!(as_whole_number(&json!("3")), None);
    }

    #[test]
    fn json_content_types() {
        assert!(check_json_content_type(None).is_ok());
        assert!(check_json_content_type(Some("application/json")).is_ok());
        assert!(check_json_content_type(Some("Application/JSON; charset=utf-8")).is_ok());
        assert!(check_json_content_type(Some("application/merge-patch+json")).is_ok());
        let err = check_json_content_type(Some("text/plain")).unwrap_err();
        assert_eq!(err.status(), 415);
        assert_eq!(
            check_json_content_type(Some("application/x-www-form-urlencoded"))
                .unwrap_err()
                .status(),
            415
        );
    }
}
