//! What an owner reads about a chatbot as a whole: unanswered questions grouped into the list
//! that becomes new Q&A pairs, a session as a readable transcript, and the rows of an export.

use crate::domain::session::{Message, MessageKind, Session};
use crate::knowledge::retrieve::stems;
use serde_json::{json, Value};
use std::collections::HashSet;

/// One question the sources could not answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Unanswered {
    pub message_uuid: String,
    pub session_uuid: String,
    pub query: String,
    pub created_at: String,
}

/// Similar unanswered questions: how many, and the latest one asked.
#[derive(Clone, Debug, PartialEq)]
pub struct QuestionGroup {
    pub count: usize,
    pub latest: Unanswered,
    /// The stemmed words the group's questions share (those of its first question, narrowed
    /// by each question that joined).
    pub terms: Vec<String>,
}

impl QuestionGroup {
    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "question": self.latest.query,
            "latest_at": self.latest.created_at,
            "latest_message_uuid": self.latest.message_uuid,
            "latest_session_uuid": self.latest.session_uuid,
            "terms": self.terms,
        })
    }
}

/// Two questions are alike when they share at least half of the stemmed words of the shorter
/// one, and at least one word.
fn alike(a: &HashSet<String>, b: &HashSet<String>) -> bool {
    let shared = a.intersection(b).count();
    let shorter = a.len().min(b.len());
    shared > 0 && shared * 2 >= shorter
}

/// Groups `questions` (newest first where their timestamps tie) by shared stemmed words: most frequent group first, ties by
/// the latest question. A question joins the first group it is alike with.
pub fn group_unanswered(questions: &[Unanswered]) -> Vec<QuestionGroup> {
    let mut ordered: Vec<&Unanswered> = questions.iter().collect();
    // Newest first, so each group's first member is its latest.
    ordered.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    // Each group: its first question's words, which a question must be alike with to join
    // (measured against what the members share instead, a group narrowed to one common word
    // would take every question holding it), the words all members share, and the group.
    let mut groups: Vec<(HashSet<String>, HashSet<String>, QuestionGroup)> = Vec::new();
    for question in ordered {
        let words = stems(&question.query);
        let words = if words.is_empty() {
            HashSet::from([question.query.trim().to_lowercase()])
        } else {
            words
        };
        match groups.iter_mut().find(|(first, _, _)| alike(first, &words)) {
            Some((_, terms, group)) => {
                group.count += 1;
                let narrowed: HashSet<String> = terms.intersection(&words).cloned().collect();
                if !narrowed.is_empty() {
                    *terms = narrowed;
                }
            }
            None => groups.push((
                words.clone(),
                words,
                QuestionGroup {
                    count: 1,
                    latest: question.clone(),
                    terms: Vec::new(),
                },
            )),
        }
    }
    let mut out: Vec<QuestionGroup> = groups
        .into_iter()
        .map(|(_, terms, mut group)| {
            let mut terms: Vec<String> = terms.into_iter().collect();
            terms.sort();
            group.terms = terms;
            group
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| b.latest.created_at.cmp(&a.latest.created_at))
    });
    out
}

/// A session as a person reads it: who said what, and when.
pub fn transcript(session: &Session, messages: &[Message]) -> String {
    let mut out = format!(
        "Session {}\nChatbot {}\nStarted {}\n",
        session.uuid, session.chatbot_uuid, session.created_at
    );
    for m in messages {
        let mut lines: Vec<(String, &str)> = Vec::new();
        match m.kind {
            MessageKind::Answer => {
                lines.push(("User".into(), &m.query));
                let agent = m
                    .meta
                    .get("agent")
                    .and_then(|a| a.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("Assistant");
                lines.push((agent.to_string(), &m.response));
            }
            MessageKind::User => lines.push(("User".into(), &m.query)),
            MessageKind::Operator => lines.push(("Operator".into(), &m.response)),
            MessageKind::Announcement => lines.push(("Notice".into(), &m.response)),
        }
        for (who, text) in lines {
            out.push_str(&format!("\n[{}] {who}:\n", m.created_at));
            for line in text.trim_end().lines() {
                out.push_str("  ");
                out.push_str(line);
                out.push('\n');
            }
        }
        if let Some(rating) = m
            .feedback
            .as_ref()
            .and_then(|f| f.get("rating"))
            .and_then(Value::as_str)
        {
            out.push_str(&format!("  (rated {rating})\n"));
        }
    }
    out
}

/// The columns of a CSV export, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "message_uuid",
    "session_uuid",
    "created_at",
    "kind",
    "query",
    "response",
    "finish_reason",
    "answered",
    "rating",
    "comment",
];

/// One CSV field, quoted when it must be (RFC 4180). A field a spreadsheet would run as a
/// formula (a visitor's "=HYPERLINK(...)") is kept as text by a leading `'`.
fn csv_field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

pub fn csv_line(fields: &[&str]) -> String {
    let mut line = fields
        .iter()
        .map(|f| csv_field(f))
        .collect::<Vec<_>>()
        .join(",");
    line.push_str("\r\n");
    line
}

fn feedback_field<'a>(m: &'a Message, name: &str) -> &'a str {
    m.feedback
        .as_ref()
        .and_then(|f| f.get(name))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// One message as an export row.
pub fn csv_row(m: &Message) -> String {
    let answered = match m.answered {
        Some(true) => "1",
        Some(false) => "0",
        None => "",
    };
    csv_line(&[
        &m.uuid,
        &m.session_uuid,
        &m.created_at,
        m.kind.as_str(),
        &m.query,
        &m.response,
        m.finish_reason.as_str(),
        answered,
        feedback_field(m, "rating"),
        feedback_field(m, "comment"),
    ])
}

/// One message as a JSON Lines export row.
pub fn jsonl_row(m: &Message) -> String {
    let mut line = m.to_json().to_string();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(uuid: &str, query: &str, at: &str) -> Unanswered {
        Unanswered {
            message_uuid: uuid.into(),
            session_uuid: "s".into(),
            query: query.into(),
            created_at: at.into(),
        }
    }

    #[test]
    fn similar_questions_group_most_frequent_first_with_the_latest_example() {
        let groups = group_unanswered(&[
            q(
                "1",
                "Do you have a loyalty programme?",
                "2026-01-01T10:00:00Z",
            ),
            q("2", "What are your opening hours?", "2026-01-01T11:00:00Z"),
            q(
                "3",
                "Is there a loyalty programme for members?",
                "2026-01-02T10:00:00Z",
            ),
            q("4", "loyalty programme points", "2026-01-03T10:00:00Z"),
            q(
                "5",
                "When are you open? opening hours on Sunday",
                "2026-01-04T10:00:00Z",
            ),
            q("6", "Can I pay with bitcoin?", "2026-01-05T10:00:00Z"),
        ]);
        let summary: Vec<(usize, &str)> = groups
            .iter()
            .map(|g| (g.count, g.latest.message_uuid.as_str()))
            .collect();
        assert_eq!(summary, vec![(3, "4"), (2, "5"), (1, "6")]);
        assert!(groups[0].terms.contains(&"loyalty".to_string()));
        assert_eq!(groups[0].to_json()["question"], "loyalty programme points");
    }

    #[test]
    fn a_group_takes_questions_alike_its_first_not_only_a_word_its_members_share() {
        let asked = [
            q("1", "credit card fees", "2026-01-01T10:00:00Z"),
            q("2", "gift card balance", "2026-01-01T11:00:00Z"),
            q("3", "Can I buy a gift card online?", "2026-01-01T12:00:00Z"),
        ];
        let summary = |groups: Vec<QuestionGroup>| -> Vec<(usize, String)> {
            groups
                .iter()
                .map(|g| (g.count, g.latest.message_uuid.clone()))
                .collect()
        };
        let expected = vec![(2, "3".to_string()), (1, "1".to_string())];
        assert_eq!(summary(group_unanswered(&asked)), expected);
        // The same questions asked in the other order group the same way.
        let reversed = [
            q("1", "credit card fees", "2026-01-01T12:00:00Z"),
            q("2", "gift card balance", "2026-01-01T11:00:00Z"),
            q("3", "Can I buy a gift card online?", "2026-01-01T10:00:00Z"),
        ];
        let groups = group_unanswered(&reversed);
        assert_eq!(
            groups.iter().map(|g| g.count).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(groups[0].terms, vec!["card", "gift"]);
    }

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(
            csv_line(&["a", "b,c", "say \"hi\"", "x\ny"]),
            "a,\"b,c\",\"say \"\"hi\"\"\",\"x\ny\"\r\n"
        );
        assert_eq!(
            csv_line(&["=HYPERLINK(\"http://x\",\"y\")", "+1", "@sum", "-2", "a=b"]),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'+1,'@sum,'-2,a=b\r\n"
        );
    }
}
