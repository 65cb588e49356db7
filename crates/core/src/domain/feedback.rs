//! Feedback on answers: one rating per message, by the account or by the visitor whose
//! session it is, changed in place.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{Body, MAX_DESCRIPTION_CHARS};
use crate::string_enum::string_enum;
use serde_json::{json, Value};

string_enum! {
    pub enum Rating {
        Up = "up",
        Down = "down",
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Feedback {
    pub message_uuid: String,
    pub chatbot_uuid: String,
    pub session_uuid: String,
    pub rating: Rating,
    pub comment: Option<String>,
    pub created_at: String,
    pub modified_at: String,
}

impl Feedback {
    pub fn to_json(&self) -> Value {
        json!({
            "message_uuid": self.message_uuid,
            "session_uuid": self.session_uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "rating": self.rating.as_str(),
            "comment": self.comment,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }
}

/// `{rating: "up" | "down", comment?}`; a `null` comment is none, as the record shows it.
pub fn from_body(body: &Body) -> ApiResult<(Rating, Option<String>)> {
    let rating = body
        .opt_variant::<Rating>("rating")?
        .ok_or_else(|| ApiError::invalid("rating", "`rating` is required: \"up\" or \"down\"."))?;
    let comment = match body.raw("comment") {
        Some(serde_json::Value::Null) => None,
        _ => body.opt_str("comment", MAX_DESCRIPTION_CHARS)?,
    }
    .map(|c| c.trim().to_string())
    .filter(|c| !c.is_empty());
    Ok((rating, comment))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rating_is_required_and_spelled_up_or_down() {
        let ok = json!({"rating": "down", "comment": "  wrong price "});
        let (rating, comment) = from_body(&Body(ok.as_object().unwrap())).unwrap();
        assert_eq!(rating, Rating::Down);
        assert_eq!(comment.as_deref(), Some("wrong price"));
        let none = json!({"rating": "up", "comment": null});
        let (_, comment) = from_body(&Body(none.as_object().unwrap())).unwrap();
        assert_eq!(comment, None);
        for bad in [
            json!({}),
            json!({"rating": "meh"}),
            json!({"rating": 1}),
            json!({"rating": "up", "comment": 5}),
        ] {
            let err = from_body(&Body(bad.as_object().unwrap())).unwrap_err();
            assert!(matches!(err.field(), Some("rating" | "comment")), "{bad}");
        }
    }
}
