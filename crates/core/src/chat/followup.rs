//! Follow-up questions. "And how long does that take?" means nothing alone: it is about what
//! the conversation was about. A question that reads as a follow-up is searched with the
//! previous question's terms beside its own (weighted down, see
//! `knowledge::retrieve::CONTEXT_WEIGHT`), and keeps the agent that answered.

use crate::domain::session::{Message, MessageKind};
use crate::knowledge::query::{content_terms, words};

/// What a follow-up is searched with beside its own words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// Terms of the previous question.
    pub terms: Vec<String>,
    /// The source the previous answer cited first: the conversation's topic, favoured.
    pub sources: Vec<String>,
}

impl Context {
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.sources.is_empty()
    }
}

/// The context of `query` in a conversation whose messages are `history` (oldest first):
/// empty unless `query` reads as a follow-up of an earlier answered question.
pub fn conversation_context(query: &str, history: &[Message]) -> Context {
    let Some(previous) = history
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Answer)
        .filter(|_| is_follow_up(query))
    else {
        return Context::default();
    };
    let first_cited = previous.cite_data.get("1");
    let terms = context_terms(query, Some(&previous.query));
    let sources = first_cited
        .and_then(|c| c.get("data_source_uuid"))
        .and_then(|u| u.as_str())
        .map(|u| vec![u.to_string()])
        .unwrap_or_default();
    Context { terms, sources }
}

/// Openings that continue the previous question rather than start a new one.
const CONTINUATIONS: &[&str] = &[
    "and",
    "also",
    "but",
    "so",
    "then",
    "what about",
    "how about",
    "same",
    "et",
    "mais",
    "aussi",
    "und",
    "aber",
    "auch",
];

/// Words that point back at something said before.
const BACK_REFERENCES: &[&str] = &[
    "it", "its", "that", "this", "these", "those", "them", "they", "there", "one", "ones", "too",
    "instead", "else", "ça", "cela", "ceci", "lui", "leur", "dies", "diese", "dort", "ihn", "ihm",
    "dabei", "dafür", "davon",
];

/// At most this many content terms, and a question is short enough to lean on what came
/// before even without a word pointing back.
const SHORT_QUESTION_TERMS: usize = 1;

/// Whether `query` reads as a continuation of the previous question.
pub fn is_follow_up(query: &str) -> bool {
    let all = words(query);
    if all.is_empty() {
        return false;
    }
    let joined = all.join(" ");
    let continues = CONTINUATIONS
        .iter()
        .any(|c| joined == *c || joined.starts_with(&format!("{c} ")));
    let points_back = all.iter().any(|w| BACK_REFERENCES.contains(&w.as_str()));
    continues || points_back || content_terms(query).len() <= SHORT_QUESTION_TERMS
}

/// The terms of the conversation a follow-up `query` is searched with: the content terms of
/// the previous question that `query` does not already hold. Empty when `query` is not a
/// follow-up or there is no previous question.
pub fn context_terms(query: &str, previous_query: Option<&str>) -> Vec<String> {
    let Some(previous) = previous_query.filter(|_| is_follow_up(query)) else {
        return Vec::new();
    };
    let own = content_terms(query);
    content_terms(previous)
        .into_iter()
        .filter(|t| !own.contains(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_ups_are_recognised() {
        for q in [
            "And how long does that take?",
            "what about returns?",
            "Can I skip it once?",
            "How do I get rid of it when I'm done?",
            "Et le dimanche ?",
            "Und wie lange dauert das?",
            "refunds?",
        ] {
            assert!(is_follow_up(q), "{q}");
        }
        for q in [
            "What is the refund window?",
            "How do I reset my password?",
            "Quels papiers faut-il pour s'inscrire ?",
            "",
        ] {
            assert!(!is_follow_up(q), "{q}");
        }
    }

    #[test]
    fn a_follow_up_takes_the_previous_question_s_terms() {
        assert_eq!(
            context_terms(
                "And how long does that take?",
                Some("Do you ship to Norway?")
            ),
            ["ship", "norway"]
        );
        assert_eq!(
            context_terms("What about Norway?", Some("Do you ship to Norway?")),
            ["ship"]
        );
        assert!(context_terms("What is the refund window?", Some("Weather in Oslo?")).is_empty());
        assert!(context_terms("And that?", None).is_empty());
    }
}
