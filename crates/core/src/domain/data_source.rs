//! Data sources (Q&A pairs, web pages, uploaded files) and source tags: records and the
//! validation of what clients send.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{
    canonical_uuid_list, check_len, is_hex_color, Body, MAX_LIST_ITEMS, MAX_NAME_CHARS,
};
use crate::string_enum::string_enum;
use serde_json::{json, Map, Value};

pub const MAX_QUESTION_CHARS: usize = 2_000;
pub const MAX_ANSWER_CHARS: usize = 20_000;
pub const MAX_URL_CHARS: usize = 2_048;
pub const MAX_TITLE_CHARS: usize = 500;
/// Meta key recording that a person retitled the source, so a re-scrape keeps their title.
pub const TITLE_SET_KEY: &str = "title_set";

string_enum! {
    /// Where a source's text comes from: a Q&A pair, a web page or an uploaded file.
    pub enum SourceType {
        Qa = "qa",
        Link = "link",
        File = "file",
    }
}

string_enum! {
    /// `await` until work starts, `running` while it is read, then `success` or `error`.
    pub enum Status {
        Await = "await",
        Running = "running",
        Success = "success",
        Error = "error",
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataSource {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub source_type: SourceType,
    pub title: String,
    pub file_name: String,
    pub file_size: i64,
    pub tokens: i64,
    pub status: Status,
    /// Kept as an object; the record shows it JSON-encoded, as the seed says.
    pub meta: Map<String, Value>,
    pub object_key: Option<String>,
    pub created_at: String,
    pub modified_at: String,
}

impl DataSource {
    pub fn to_json(&self, tag_uuids: &[String]) -> Value {
        // Whether a person set the title is the service's own bookkeeping, not the caller's.
        let mut meta = self.meta.clone();
        meta.remove(TITLE_SET_KEY);
        json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "title": self.title,
            "file_name": self.file_name,
            "file_size": self.file_size,
            "tokens": self.tokens,
            "type": self.source_type.as_str(),
            "status": self.status.as_str(),
            "meta_json": Value::Object(meta).to_string(),
            "source_tag_uuids": tag_uuids,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }

    pub fn url(&self) -> Option<&str> {
        self.meta.get("url").and_then(Value::as_str)
    }

    /// A web page names itself; a title a person set through the API is kept.
    pub fn title_from_document(&self) -> bool {
        self.source_type == SourceType::Link
            && self.meta.get(TITLE_SET_KEY) != Some(&Value::Bool(true))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct QaPair {
    pub question: String,
    pub answer: String,
}

pub fn qa_from_body(body: &Map<String, Value>) -> ApiResult<QaPair> {
    let b = Body(body);
    Ok(QaPair {
        question: b
            .req_str("question", MAX_QUESTION_CHARS)?
            .trim()
            .to_string(),
        answer: b.req_str("answer", MAX_ANSWER_CHARS)?.trim().to_string(),
    })
}

/// The raw URL string; `url_guard` decides whether it may be fetched.
pub fn url_from_body(body: &Map<String, Value>) -> ApiResult<String> {
    Ok(Body(body).req_str("url", MAX_URL_CHARS)?.trim().to_string())
}

pub fn title_from_body(body: &Map<String, Value>) -> ApiResult<String> {
    Ok(Body(body)
        .req_str("title", MAX_TITLE_CHARS)?
        .trim()
        .to_string())
}

/// A non-empty list of uuids (`uuids` in bulk calls), canonical and without repeats.
pub fn uuid_list(body: &Map<String, Value>, field: &str) -> ApiResult<Vec<String>> {
    let items = Body(body)
        .opt_string_array(field, MAX_LIST_ITEMS)?
        .ok_or_else(|| ApiError::invalid(field, format!("`{field}` is required.")))?;
    if items.is_empty() {
        return Err(ApiError::invalid(
            field,
            format!("`{field}` must not be empty."),
        ));
    }
    canonical_uuid_list(field, &items)
}

/// The longest file name an upload may carry: what file systems allow (255), well within the
/// stored file's metadata limit (2 KB) and the source's title (`MAX_TITLE_CHARS`).
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// An uploaded file's name as its source keeps it: the last part of whatever path the client
/// sent ("C:\\Users\\ada\\notes.txt", "../../notes.txt" are "notes.txt"), or "upload".
pub fn upload_file_name(sent: &str) -> ApiResult<String> {
    let sent = unescape_form_file_name(sent);
    let name = sent.rsplit(['/', '\\']).next().unwrap_or_default().trim();
    if name.is_empty() || name == "." || name == ".." {
        return Ok("upload".to_string());
    }
    if name.chars().count() > MAX_FILE_NAME_CHARS {
        return Err(ApiError::invalid(
            "file",
            format!("The file's name must be at most {MAX_FILE_NAME_CHARS} characters."),
        ));
    }
    Ok(name.to_string())
}

/// Browsers and curl write `"`, CR and LF in a multipart `filename` as `%22`, `%0D` and `%0A`
/// (the HTML standard's form encoding) and leave every other `%` as it is, so those three
/// escapes alone are undone: a name holding "%41" was written so. A line break has no place
/// in a name shown as a title: it becomes a space.
fn unescape_form_file_name(sent: &str) -> String {
    let mut name = String::with_capacity(sent.len());
    let mut rest = sent;
    while let Some(at) = rest.find('%') {
        name.push_str(&rest[..at]);
        let escaped = match rest.get(at..at + 3) {
            Some("%22") => Some('"'),
            Some("%0D" | "%0A") => Some(' '),
            _ => None,
        };
        match escaped {
            // CR LF is one break, one space.
            Some(' ') if name.ends_with(' ') => rest = &rest[at + 3..],
            Some(c) => {
                name.push(c);
                rest = &rest[at + 3..];
            }
            None => {
                name.push('%');
                rest = &rest[at + 1..];
            }
        }
    }
    name.push_str(rest);
    name
}

/// The optional `meta_json` form field of an upload: a JSON object whose one known key is
/// `reference_source_link` (a string); other keys are ignored.
pub fn upload_meta(raw: Option<&str>) -> ApiResult<Map<String, Value>> {
    let mut meta = Map::new();
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(meta);
    };
    let parsed: Value = serde_json::from_str(raw).map_err(|_| {
        ApiError::invalid(
            "meta_json",
            "`meta_json` must be a JSON object encoded as a string.",
        )
    })?;
    let obj = parsed.as_object().ok_or_else(|| {
        ApiError::invalid(
            "meta_json",
            "`meta_json` must be a JSON object encoded as a string.",
        )
    })?;
    match obj.get("reference_source_link") {
        None | Some(Value::Null) => {}
        Some(Value::String(link)) => {
            check_len("meta_json", link, MAX_URL_CHARS)?;
            // Shown to readers as where the file came from: a web address, never a script.
            // Stored as parsed, so a link a browser would read another way ("https:host",
            // a bare space) is the address it was taken for.
            let web = crate::idn::parse_url(link.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| {
                    ApiError::invalid(
                        "meta_json",
                        "`meta_json.reference_source_link` must be an http or https URL.",
                    )
                })?;
            meta.insert(
                "reference_source_link".into(),
                Value::String(web.to_string()),
            );
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "meta_json",
                "`meta_json.reference_source_link` must be a string.",
            ))
        }
    }
    Ok(meta)
}

#[derive(Clone, Debug, PartialEq)]
pub struct SourceTag {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub name: String,
    pub color: String,
    pub data_source_uuids: Vec<String>,
    pub created_at: String,
    pub modified_at: String,
}

impl SourceTag {
    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "name": self.name,
            "color": self.color,
            "data_source_uuids": self.data_source_uuids,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }
}

/// What a source-tag create or update body sets; `None` leaves a field as it is.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SourceTagChange {
    pub name: Option<String>,
    pub color: Option<String>,
    pub data_source_uuids: Option<Vec<String>>,
}

pub fn source_tag_change(body: &Map<String, Value>, creating: bool) -> ApiResult<SourceTagChange> {
    let b = Body(body);
    let name = if creating {
        Some(b.req_str("name", MAX_NAME_CHARS)?.trim().to_string())
    } else {
        b.opt_nonblank_str("name", MAX_NAME_CHARS)?
    };
    let color = match b.opt_str("color", 16)? {
        Some(c) if is_hex_color(&c) => Some(c.to_ascii_lowercase()),
        Some(_) => {
            return Err(ApiError::invalid(
                "color",
                "`color` must be a hex colour such as #1a7f37.",
            ))
        }
        None if creating => Err(ApiError::invalid("color", "`color` is required."))?,
        None => None,
    };
    let data_source_uuids = match b.opt_string_array("data_source_uuids", MAX_LIST_ITEMS)? {
        None => None,
        Some(items) if items.is_empty() => Some(Vec::new()),
        Some(_) => Some(uuid_list(body, "data_source_uuids")?),
    };
    if name.is_none() && color.is_none() && data_source_uuids.is_none() {
        return Err(ApiError::invalid(
            "name",
            "Send name, color, data_source_uuids, or some of them.",
        ));
    }
    Ok(SourceTagChange {
        name,
        color,
        data_source_uuids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn qa_needs_both_halves() {
        assert_eq!(
            qa_from_body(&obj(json!({"question": "q"})))
                .unwrap_err()
                .field(),
            Some("answer")
        );
        assert_eq!(
            qa_from_body(&obj(json!({"answer": "a"})))
                .unwrap_err()
                .field(),
            Some("question")
        );
        assert_eq!(
            qa_from_body(&obj(json!({"question": 1, "answer": "a"})))
                .unwrap_err()
                .field(),
            Some("question")
        );
        let qa = qa_from_body(&obj(json!({"question": " Where? ", "answer": " Here. "}))).unwrap();
        assert_eq!(
            (qa.question.as_str(), qa.answer.as_str()),
            ("Where?", "Here.")
        );
    }

    #[test]
    fn uuid_lists() {
        let u = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
        assert_eq!(
            uuid_list(&obj(json!({"uuids": [u, u.to_uppercase()]})), "uuids").unwrap(),
            vec![u]
        );
        assert_eq!(
            uuid_list(&obj(json!({"uuids": []})), "uuids")
                .unwrap_err()
                .field(),
            Some("uuids")
        );
        assert_eq!(
            uuid_list(&obj(json!({})), "uuids").unwrap_err().field(),
            Some("uuids")
        );
        assert_eq!(
            uuid_list(&obj(json!({"uuids": ["x"]})), "uuids")
                .unwrap_err()
                .field(),
            Some("uuids")
        );
        assert_eq!(
            uuid_list(&obj(json!({"uuids": "x"})), "uuids")
                .unwrap_err()
                .field(),
            Some("uuids")
        );
    }

    #[test]
    fn an_uploaded_file_keeps_its_name_not_its_path() {
        let name = |sent: &str| upload_file_name(sent).expect("a name");
        assert_eq!(name("handbook.pdf"), "handbook.pdf");
        assert_eq!(name("C:\\Users\\ada\\notes.txt"), "notes.txt");
        assert_eq!(name("../../etc/passwd.txt"), "passwd.txt");
        assert_eq!(name("  "), "upload");
        assert_eq!(name("docs/"), "upload");
        assert_eq!(name("Prix été 2026.xlsx"), "Prix été 2026.xlsx");
        let longest = format!("{}.txt", "🤖".repeat(MAX_FILE_NAME_CHARS - 4));
        assert_eq!(name(&format!("dir/{longest}")), longest);
        let err = upload_file_name(&format!("{}.txt", "h".repeat(2100))).unwrap_err();
        assert_eq!(err.status(), 400);
    }

    #[test]
    fn a_file_name_escaped_by_the_form_is_unescaped() {
        let name = |sent: &str| upload_file_name(sent).expect("a name");
        assert_eq!(name("we%22ird.txt"), "we\"ird.txt");
        assert_eq!(name("%22quoted%22 notes.md"), "\"quoted\" notes.md");
        assert_eq!(name("two%0D%0Alines.txt"), "two lines.txt");
        assert_eq!(name("two%0Alines%0D.txt"), "two lines .txt");
        assert_eq!(name("%0D%0Anotes.txt%0A"), "notes.txt");
        // Only the three the form escapes: any other `%` is part of the name.
        for kept in [
            "%41.txt",
            "50%.txt",
            "100%25.txt",
            "a%2fb.txt",
            "x%0a.txt",
            "end%2",
            "%",
            "%E6%97%A5.txt",
        ] {
            assert_eq!(name(kept), kept);
        }
        assert_eq!(name("dir%22/%22a.txt"), "\"a.txt");
        assert_eq!(name("ü%22ß%0A€.txt"), "ü\"ß €.txt");
    }

    #[test]
    fn upload_meta_keeps_the_reference_link_only() {
        let m = upload_meta(Some(
            r#"{"reference_source_link":"https://example.com/a.pdf","other":1}"#,
        ))
        .unwrap();
        assert_eq!(
            Value::Object(m).to_string(),
            r#"{"reference_source_link":"https://example.com/a.pdf"}"#
        );
        let spaced = upload_meta(Some(
            r#"{"reference_source_link":"  https://ex.com/a \t\n"}"#,
        ))
        .unwrap();
        assert_eq!(spaced["reference_source_link"], "https://ex.com/a");
        for (sent, stored) in [
            ("https:example.com", "https://example.com/"),
            ("https:/example.com/a b", "https://example.com/a%20b"),
            (
                "HTTPS://Example.COM/Guide.pdf",
                "https://example.com/Guide.pdf",
            ),
        ] {
            let raw = json!({ "reference_source_link": sent }).to_string();
            assert_eq!(
                upload_meta(Some(&raw)).unwrap()["reference_source_link"],
                stored
            );
        }
        assert!(upload_meta(None).unwrap().is_empty());
        assert!(upload_meta(Some("  ")).unwrap().is_empty());
        assert_eq!(
            upload_meta(Some("{")).unwrap_err().field(),
            Some("meta_json")
        );
        assert_eq!(
            upload_meta(Some("[1]")).unwrap_err().field(),
            Some("meta_json")
        );
        assert_eq!(
            upload_meta(Some(r#"{"reference_source_link":5}"#))
                .unwrap_err()
                .field(),
            Some("meta_json")
        );
        for link in [
            "javascript:alert(1)",
            "handbook.pdf",
            "ftp://example.com/a.pdf",
        ] {
            let raw = json!({ "reference_source_link": link }).to_string();
            assert_eq!(
                upload_meta(Some(&raw)).unwrap_err().field(),
                Some("meta_json"),
                "{link}"
            );
        }
    }

    #[test]
    fn source_tag_rules() {
        let c = source_tag_change(&obj(json!({"name": "Docs", "color": "#ABCDEF"})), true).unwrap();
        assert_eq!(
            (c.name.as_deref(), c.color.as_deref()),
            (Some("Docs"), Some("#abcdef"))
        );
        assert_eq!(
            source_tag_change(&obj(json!({"color": "#fff"})), true)
                .unwrap_err()
                .field(),
            Some("name")
        );
        assert_eq!(
            source_tag_change(&obj(json!({"name": "x"})), true)
                .unwrap_err()
                .field(),
            Some("color")
        );
        assert_eq!(
            source_tag_change(&obj(json!({"name": "x", "color": "red"})), true)
                .unwrap_err()
                .field(),
            Some("color")
        );
        let nothing = source_tag_change(&obj(json!({})), false).expect_err("refused");
        assert!(nothing.public_message().contains("Send name, color"));
        let u = source_tag_change(&obj(json!({"data_source_uuids": []})), false).unwrap();
        assert_eq!(
            u,
            SourceTagChange {
                data_source_uuids: Some(vec![]),
                ..Default::default()
            }
        );
    }

    #[test]
    fn record_encodes_meta_as_a_string() {
        let mut meta = Map::new();
        meta.insert("question".into(), json!("q"));
        let s = DataSource {
            uuid: "u".into(),
            chatbot_uuid: "c".into(),
            source_type: SourceType::Qa,
            title: "q".into(),
            file_name: String::new(),
            file_size: 0,
            tokens: 3,
            status: Status::Success,
            meta,
            object_key: None,
            created_at: "t".into(),
            modified_at: "t".into(),
        };
        let v = s.to_json(&[]);
        assert_eq!(v["meta_json"], r#"{"question":"q"}"#);
        assert_eq!(v["type"], "qa");
        assert_eq!(v["status"], "success");
    }
}
