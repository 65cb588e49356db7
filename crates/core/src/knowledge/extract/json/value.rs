//! A JSON value that keeps object keys in document order, so the text reads in the order
//! the author wrote it without turning on serde_json's `preserve_order` feature for the
//! whole product.

use crate::knowledge::extract::clean::collapse_ws;
use std::fmt;

pub(super) enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

struct JsonVisitor;

impl<'de> serde::de::Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        // Rust prints 1e300 with all its zeros; scientific notation reads better.
        let s = if v != 0.0 && (v.abs() >= 1e16 || v.abs() < 1e-6) {
            format!("{v:e}")
        } else {
            v.to_string()
        };
        Ok(Json::Num(s))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Obj(entries))
    }
}

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

impl Json {
    pub(super) fn scalar(&self) -> Option<String> {
        match self {
            Json::Null => Some("null".to_string()),
            Json::Bool(b) => Some(b.to_string()),
            Json::Num(n) => Some(n.clone()),
            Json::Str(s) => Some(collapse_ws(s)),
            Json::Arr(_) | Json::Obj(_) => None,
        }
    }

    pub(super) fn is_scalar(&self) -> bool {
        !matches!(self, Json::Arr(_) | Json::Obj(_))
    }
}
