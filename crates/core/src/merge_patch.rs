//! JSON merge patches (RFC 7396) between two versions of a stored JSON object, so that an
//! update writes only the keys it changed and two updates of different keys of one object at
//! the same moment both stand (SQLite's `json_patch` applies the patch to the stored value).

use serde_json::{Map, Value};

/// The merge patch that turns `before` into `after`, when both are JSON objects: changed and
/// added keys with their new values, removed keys as `null`, objects on both sides patched key
/// by key. `None` when either is not an object (an array or a scalar is written whole).
pub fn between(before: &str, after: &str) -> Option<String> {
    match (
        serde_json::from_str::<Value>(before).ok()?,
        serde_json::from_str::<Value>(after).ok()?,
    ) {
        (Value::Object(was), Value::Object(now)) => Some(diff(&was, &now).to_string()),
        _ => None,
    }
}

fn diff(was: &Map<String, Value>, now: &Map<String, Value>) -> Value {
    let mut patch = Map::new();
    for (key, value) in now {
        match (was.get(key), value) {
            (Some(old), new) if old == new => {}
            // A null cannot be set through a merge patch (it removes the key), which reads
            // the same.
            (None, Value::Null) => {}
            (Some(Value::Object(old)), Value::Object(new)) => {
                patch.insert(key.clone(), diff(old, new));
            }
            _ => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    for key in was.keys() {
        if !now.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 7396's own algorithm, to check that a patch gives back `after`.
    fn apply(target: &Value, patch: &Value) -> Value {
        let Value::Object(patch) = patch else {
            return patch.clone();
        };
        let mut out = target.as_object().cloned().unwrap_or_default();
        for (key, value) in patch {
            if value.is_null() {
                out.remove(key);
            } else {
                let merged = apply(out.get(key).unwrap_or(&Value::Null), value);
                out.insert(key.clone(), merged);
            }
        }
        Value::Object(out)
    }

    #[test]
    fn a_patch_holds_only_what_changed_and_gives_back_the_new_object() {
        let before = json!({"temperature": 0.2, "bias": 0.1, "gone": "x",
            "settings": {"a": "1", "b": "2"}, "list": [1, 2]});
        let after = json!({"temperature": 0.7, "bias": 0.1, "new": true,
            "settings": {"a": "1", "b": "3"}, "list": [1]});
        let patch: Value =
            serde_json::from_str(&between(&before.to_string(), &after.to_string()).unwrap())
                .unwrap();
        assert_eq!(
            patch,
            json!({"temperature": 0.7, "new": true, "gone": null,
                "settings": {"b": "3"}, "list": [1]})
        );
        assert_eq!(apply(&before, &patch), after);
    }

    #[test]
    fn two_patches_of_different_keys_both_stand() {
        let stored = json!({"temperature": 0.2, "bias": 0.1});
        let one = between(&stored.to_string(), r#"{"temperature":0.5,"bias":0.1}"#).unwrap();
        let two = between(&stored.to_string(), r#"{"temperature":0.2,"bias":0.9}"#).unwrap();
        let merged = apply(
            &apply(&stored, &serde_json::from_str(&one).unwrap()),
            &serde_json::from_str(&two).unwrap(),
        );
        assert_eq!(merged, json!({"temperature": 0.5, "bias": 0.9}));
    }

    #[test]
    fn values_that_are_not_objects_are_written_whole() {
        assert_eq!(between("[1]", "[2]"), None);
        assert_eq!(between("{}", "null"), None);
        assert_eq!(between("not json", "{}"), None);
        assert_eq!(between("{}", "{}").as_deref(), Some("{}"));
    }
}
