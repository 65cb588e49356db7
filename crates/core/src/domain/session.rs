//! Chat sessions and messages: records and what clients may send.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::Body;
use crate::string_enum::string_enum;
use serde_json::{json, Map, Value};

pub const MAX_QUERY_CHARS: usize = 8_000;
/// Most text one answer keeps, in UTF-8 bytes. A model that ignores its token limit is cut
/// off here (`fit_answer`) and the answer ends with `finish_reason: length`: its message must
/// fit one D1 row (2 MB, beside its sources and metadata), and a reader wants no more anyway.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// The part of `piece` that fits after `so_far` bytes of answer (cut at a character
/// boundary), and whether the answer is full: what did not fit is dropped.
pub fn fit_answer(so_far: usize, piece: &str) -> (&str, bool) {
    let room = MAX_ANSWER_BYTES.saturating_sub(so_far);
    if piece.len() <= room {
        return (piece, false);
    }
    let mut cut = room;
    while !piece.is_char_boundary(cut) {
        cut -= 1;
    }
    (&piece[..cut], true)
}

pub const MAX_VARIABLES: usize = 100;
pub const MAX_VARIABLE_CHARS: usize = 2_000;

#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub initial_variables: Option<Map<String, Value>>,
    pub meta: Map<String, Value>,
    pub created_at: String,
    pub modified_at: String,
}

impl Session {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "meta": self.meta,
        });
        if let (Some(vars), Some(obj)) = (&self.initial_variables, v.as_object_mut()) {
            obj.insert("initial_variables".into(), Value::Object(vars.clone()));
        }
        v
    }
}

impl Session {
    /// `meta[key]`'s list `times` (when a session asked for a person, when its live-chat
    /// rounds started) with `at` added, the latest `MAX_EVENT_TIMES` kept. The object keeps
    /// only the latest of each beside it; analytics counts a session whose event of any round
    /// falls in a range from this list.
    pub fn event_times(&self, key: &str, times: &str, at: &str) -> Value {
        let mut list: Vec<Value> = self
            .meta
            .get(key)
            .and_then(|v| v.get(times))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        list.push(Value::from(at));
        let excess = list.len().saturating_sub(MAX_EVENT_TIMES);
        list.drain(..excess);
        Value::Array(list)
    }
}

pub const MAX_EVENT_TIMES: usize = 100;

/// The most sessions one page of a chatbot's session list holds (`limit`'s bound and default):
/// a chatbot with a widget gathers thousands a day, and one answer holding them all would not
/// fit a Worker's memory.
pub const MAX_SESSIONS_PAGE: usize = 1_000;

/// A page of a chatbot's sessions, which are listed by creation time, then as stored: at most
/// `limit`, those after `after` (the last session of the page before).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionPage {
    pub limit: usize,
    pub after: Option<SessionCursor>,
}

/// Where a page of sessions starts: after the session created at `created_at` that was stored
/// as number `seq` (sessions of one moment are listed in the order they were stored), whether
/// or not that session still exists. Written `created_at,seq` in the `after` parameter, which
/// the next page's link holds.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionCursor {
    pub created_at: String,
    pub seq: i64,
}

impl SessionCursor {
    pub fn to_param(&self) -> String {
        format!("{},{}", self.created_at, self.seq)
    }
}

impl SessionPage {
    /// The page `limit` and `after` ask for (query parameters, absent when `None`).
    pub fn from_params(limit: Option<&str>, after: Option<&str>) -> ApiResult<SessionPage> {
        let limit = match limit.map(str::trim).filter(|v| !v.is_empty()) {
            None => MAX_SESSIONS_PAGE,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_SESSIONS_PAGE).contains(n))
                .ok_or_else(|| {
                    ApiError::invalid(
                        "limit",
                        format!("`limit` must be a whole number from 1 to {MAX_SESSIONS_PAGE}."),
                    )
                })?,
        };
        let after = match after.map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => Some(parse_cursor(v).ok_or_else(|| {
                ApiError::invalid(
                    "after",
                    "`after` must be the value a session list's `Link: rel=\"next\"` gave.",
                )
            })?),
        };
        Ok(SessionPage { limit, after })
    }
}

fn parse_cursor(text: &str) -> Option<SessionCursor> {
    let (created_at, seq) = text.rsplit_once(',')?;
    let timestamp_like = !created_at.is_empty()
        && created_at.len() <= 40
        && created_at
            .bytes()
            .all(|b| b.is_ascii_digit() || b"-:.TZ+".contains(&b));
    Some(SessionCursor {
        created_at: timestamp_like.then(|| created_at.to_string())?,
        seq: seq.parse().ok().filter(|n: &i64| *n > 0)?,
    })
}

/// `initial_variables`: a flat object whose values are strings, numbers, booleans or null.
pub fn initial_variables(body: &Map<String, Value>) -> ApiResult<Option<Map<String, Value>>> {
    const FIELD: &str = "initial_variables";
    let Some(vars) = Body(body).opt_object(FIELD)? else {
        return Ok(None);
    };
    if vars.len() > MAX_VARIABLES {
        return Err(ApiError::invalid(
            FIELD,
            format!("`{FIELD}` may hold at most {MAX_VARIABLES} variables."),
        ));
    }
    for (name, value) in vars {
        match value {
            Value::Object(_) | Value::Array(_) => {
                return Err(ApiError::invalid(
                    FIELD,
                    format!("`{FIELD}` must be a flat object; `{name}` holds a nested value."),
                ))
            }
            Value::String(s) if s.chars().count() > MAX_VARIABLE_CHARS => {
                return Err(ApiError::invalid(
                    FIELD,
                    format!("`{FIELD}.{name}` must be at most {MAX_VARIABLE_CHARS} characters."),
                ))
            }
            _ => {}
        }
        if name.is_empty() || name.chars().count() > 64 {
            return Err(ApiError::invalid(
                FIELD,
                "Variable names must be 1 to 64 characters.",
            ));
        }
    }
    Ok(Some(vars.clone()))
}

pub fn query_from_body(body: &Map<String, Value>) -> ApiResult<String> {
    let query = Body(body).req_str("query", MAX_QUERY_CHARS)?;
    Ok(query.trim().to_string())
}

string_enum! {
    /// How an answer ended: `error` when the model failed midway (what it said so far is
    /// kept), `aborted` when the client left a call that is not kept going (the
    /// OpenAI-compatible stream), `stopped` when a caller stopped it on purpose,
    /// `interrupted` when the runtime went away mid-answer; `streaming` while it is still
    /// being produced.
    pub enum FinishReason {
        Stop = "stop",
        Length = "length",
        Error = "error",
        Aborted = "aborted",
        Stopped = "stopped",
        Interrupted = "interrupted",
        Streaming = "streaming",
    }
}

impl FinishReason {
    /// A provider's finish reason, as ours.
    pub fn from_provider(reason: &str) -> Self {
        match reason {
            "length" | "max_tokens" => FinishReason::Length,
            _ => FinishReason::Stop,
        }
    }
}

string_enum! {
    /// What a message is: an exchange with an agent, or live-chat traffic.
    pub enum MessageKind {
        Answer = "answer",
        /// The user wrote while a person was answering; `query` holds it, `response` is empty.
        User = "user",
        /// A person answered; `response` holds it.
        Operator = "operator",
        /// Live chat started or ended; `response` holds the announcement.
        Announcement = "announcement",
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub uuid: String,
    pub kind: MessageKind,
    pub session_uuid: String,
    pub chatbot_uuid: String,
    pub started_ms: i64,
    pub query: String,
    pub response: String,
    pub finish_reason: FinishReason,
    pub cite_data: Value,
    pub meta: Value,
    /// Whether the sources held an answer (`chat::answered`); `None` for live-chat traffic.
    pub answered: Option<bool>,
    /// The rating given to this answer, when there is one (`domain::feedback`); read, never
    /// written with the message.
    pub feedback: Option<Value>,
    pub created_at: String,
    pub modified_at: String,
}

impl Message {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "session_uuid": self.session_uuid,
            "kind": self.kind.as_str(),
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "query": self.query,
            "response": self.response,
            "finish_reason": self.finish_reason.as_str(),
            "cite_data_json": self.cite_data.to_string(),
            "meta_json": self.meta.to_string(),
            "answered": self.answered,
            "feedback": self.feedback,
        })
    }
}

/// A stored answer with every field filled, for tests that shape messages.
#[cfg(test)]
pub(crate) fn sample_message(
    response: &str,
    finish_reason: FinishReason,
    cite_data: Value,
    meta: Value,
) -> Message {
    Message {
        uuid: "m".into(),
        kind: MessageKind::Answer,
        session_uuid: "s".into(),
        chatbot_uuid: "c".into(),
        started_ms: 1,
        query: "q".into(),
        response: response.into(),
        finish_reason,
        cite_data,
        meta,
        answered: Some(true),
        feedback: None,
        created_at: "t".into(),
        modified_at: "t".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank_session() -> Session {
        Session {
            uuid: "s".into(),
            chatbot_uuid: "c".into(),
            initial_variables: None,
            meta: Map::new(),
            created_at: "t".into(),
            modified_at: "t".into(),
        }
    }

    #[test]
    fn event_times_grow_from_the_stored_list_and_keep_the_latest() {
        let mut session = blank_session();
        assert_eq!(
            session.event_times("live_chat", "started_times", "a"),
            json!(["a"])
        );
        let many: Vec<String> = (0..MAX_EVENT_TIMES).map(|i| format!("{i:03}")).collect();
        session
            .meta
            .insert("live_chat".into(), json!({"started_times": many}));
        let grown = session.event_times("live_chat", "started_times", "new");
        let grown = grown.as_array().unwrap();
        assert_eq!(grown.len(), MAX_EVENT_TIMES);
        assert_eq!(
            (grown[0].as_str(), grown[MAX_EVENT_TIMES - 1].as_str()),
            (Some("001"), Some("new"))
        );
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn session_pages_read_limit_and_cursor() {
        let page = SessionPage::from_params(None, None).unwrap();
        assert_eq!(page.limit, MAX_SESSIONS_PAGE);
        assert_eq!(page.after, None);
        let two = SessionPage::from_params(Some(" 2 "), Some("")).unwrap();
        assert_eq!((two.limit, two.after), (2, None));
        for bad in ["0", "1001", "-1", "2.5", "ten"] {
            let err = SessionPage::from_params(Some(bad), None).unwrap_err();
            assert_eq!(err.field(), Some("limit"), "{bad}");
        }
        let cursor = SessionCursor {
            created_at: "2026-11-28T01:00:00.123Z".into(),
            seq: 42,
        };
        let read = SessionPage::from_params(None, Some(&cursor.to_param())).unwrap();
        assert_eq!(read.after, Some(cursor));
        for bad in [
            "x",
            "2026-11-28T01:00:00Z",
            ",42",
            "2026-11-28 01:00,42",
            "2026-11-28T01:00:00Z,nope",
            "2026-11-28T01:00:00Z,0",
            "2026-11-28T01:00:00Z,-3",
        ] {
            let err = SessionPage::from_params(None, Some(bad)).unwrap_err();
            assert_eq!(err.field(), Some("after"), "{bad}");
        }
    }

    #[test]
    fn initial_variables_must_be_flat() {
        assert_eq!(initial_variables(&obj(json!({}))).unwrap(), None);
        let v = initial_variables(&obj(
            json!({"initial_variables": {"name": "Ada", "age": 36, "vip": true, "note": null}}),
        ))
        .unwrap();
        assert_eq!(v.unwrap().len(), 4);
        for bad in [
            json!({"a": {"b": 1}}),
            json!({"a": [1]}),
            json!("x"),
            json!([]),
        ] {
            assert_eq!(
                initial_variables(&obj(json!({"initial_variables": bad})))
                    .unwrap_err()
                    .field(),
                Some("initial_variables")
            );
        }
    }

    #[test]
    fn query_is_required() {
        assert_eq!(
            query_from_body(&obj(json!({}))).unwrap_err().field(),
            Some("query")
        );
        assert_eq!(
            query_from_body(&obj(json!({"query": "  "})))
                .unwrap_err()
                .field(),
            Some("query")
        );
        assert_eq!(
            query_from_body(&obj(json!({"query": 5})))
                .unwrap_err()
                .field(),
            Some("query")
        );
        assert_eq!(
            query_from_body(&obj(json!({"query": " hi "}))).unwrap(),
            "hi"
        );
    }

    #[test]
    fn records_encode_json_fields_as_strings() {
        let m = sample_message(
            "r",
            FinishReason::Aborted,
            json!({"1": {"title": "t"}}),
            json!({"model": "x"}),
        );
        let v = m.to_json();
        assert_eq!(v["finish_reason"], "aborted");
        assert_eq!(v["cite_data_json"], r#"{"1":{"title":"t"}}"#);
        assert_eq!(v["meta_json"], r#"{"model":"x"}"#);
        let s = blank_session();
        assert!(s.to_json().get("initial_variables").is_none());
        assert_eq!(FinishReason::from_provider("length"), FinishReason::Length);
        assert_eq!(FinishReason::from_provider("stop"), FinishReason::Stop);
    }

    #[test]
    fn an_answer_is_cut_where_it_is_full_and_never_inside_a_character() {
        assert_eq!(fit_answer(0, "hello"), ("hello", false));
        assert_eq!(fit_answer(MAX_ANSWER_BYTES - 5, "hello"), ("hello", false));
        assert_eq!(fit_answer(MAX_ANSWER_BYTES - 3, "hello"), ("hel", true));
        assert_eq!(fit_answer(MAX_ANSWER_BYTES, "x"), ("", true));
        // "é" takes two bytes: one byte of room keeps none of it.
        assert_eq!(fit_answer(MAX_ANSWER_BYTES - 2, "aé"), ("a", true));
        assert_eq!(fit_answer(MAX_ANSWER_BYTES + 10, ""), ("", false));
    }
}
