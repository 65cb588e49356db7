//! Follow-up questions. "And how long does that take?" means nothing alone: it is about what
//! the conversation was about. A question that reads as a follow-up is searched with the
//! previous question's terms beside its own, and keeps the agent that answered.

use crate::chat::completion::ChatMessage;
use crate::domain::session::{Message, MessageKind};
use crate::knowledge::cjk::is_cjk;
use crate::knowledge::query::{content_terms, is_stop_word, words};

/// What a follow-up is searched with beside its own words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// The previous question's content terms the follow-up does not hold: searched and ranked
    /// as if the follow-up had said them (it means them), but never compared with a stored
    /// question.
    pub terms: Vec<String>,
    /// The content terms of questions further back that the previous one continued ("how
    /// much does Starter cost?" before "and for bigger teams?"): searched and ranked with
    /// the rest, but a passage is not measured against them, so a follow-up deep in a
    /// conversation is not held to every word said before it.
    pub earlier: Vec<String>,
}

impl Context {
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.earlier.is_empty()
    }

    /// Every term of the conversation a follow-up is searched and ranked with.
    pub fn searched(&self) -> impl Iterator<Item = &String> {
        self.terms.iter().chain(&self.earlier)
    }
}

/// The context of `query` in a conversation whose messages are `history` (oldest first):
/// empty unless `query` reads as a follow-up of an earlier answered question.
///
/// Only the previous question is taken, not what its answer cited: those sources are right
/// only as often as the first search was, and favouring them carried a wrong first answer
/// into every follow-up (README, "Evaluation").
pub fn conversation_context(query: &str, history: &[Message]) -> Context {
    let Some(mut previous) = previous_exchange(query, history) else {
        return Context::default();
    };
    let terms = context_terms(query, Some(&previous.query));
    // A previous question that itself continued the one before it ("and for bigger teams?"
    // after a question on the Starter plan's price) was about that one's subject too, so
    // "what about Enterprise?" after it is.
    let mut earlier: Vec<String> = Vec::new();
    let mut before_previous = messages_before(history, previous);
    for _ in 0..MAX_CHAINED_FOLLOW_UPS {
        if !refers_back(&previous.query) {
            break;
        }
        let Some(before) = previous_exchange(&previous.query, before_previous) else {
            break;
        };
        for term in context_terms(query, Some(&before.query)) {
            if !terms.contains(&term) && !earlier.contains(&term) {
                earlier.push(term);
            }
        }
        before_previous = messages_before(before_previous, before);
        previous = before;
    }
    Context { terms, earlier }
}

/// The messages of `history` before `message`, one of them.
fn messages_before<'a>(history: &'a [Message], message: &Message) -> &'a [Message] {
    let at = history
        .iter()
        .rposition(|m| std::ptr::eq(m, message))
        .unwrap_or(0);
    &history[..at]
}

/// How many follow-ups back, each continuing the one before, a follow-up's context reaches.
const MAX_CHAINED_FOLLOW_UPS: usize = 3;

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

/// Words that point back at something said before, beside the pronouns that stand for its
/// subject (`STANDS_FOR_SUBJECT`).
const BACK_REFERENCES: &[&str] = &[
    "there", "one", "ones", "too", "instead", "else", "lui", "leur", "dort", "ihn", "ihm",
];

/// Opens the request that asks a model to rewrite a follow-up; the reply is the question only.
pub const REWRITE_INSTRUCTION: &str = "You rewrite follow-up questions. Given the previous \
question, the previous answer and a follow-up, write the follow-up as one standalone question \
in the follow-up's language that names what it is about. Reply with that question only.";

/// The longest reply a rewrite may have; anything longer is not a question.
pub const MAX_REWRITE_CHARS: usize = 400;

/// How much of the previous answer a rewrite request carries.
const PREVIOUS_ANSWER_CHARS: usize = 600;

/// The messages asking a model to rewrite `query`, a follow-up of `previous`.
pub fn rewrite_messages(previous: &Message, query: &str) -> Vec<ChatMessage> {
    let answer: String = previous
        .response
        .chars()
        .take(PREVIOUS_ANSWER_CHARS)
        .collect();
    vec![
        ChatMessage::system(REWRITE_INSTRUCTION),
        ChatMessage::user(&format!(
            "Previous question: {}\nPrevious answer: {}\nFollow-up: {}",
            previous.query.trim(),
            answer.trim(),
            query.trim()
        )),
    ]
}

/// The standalone question in a model's reply to `rewrite_messages`: its first non-empty
/// line without quotes or a "Question:" label; `None` when there is none or it is too long.
pub fn parse_rewrite(reply: &str) -> Option<String> {
    let line = reply.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .strip_prefix("Standalone question:")
        .or_else(|| line.strip_prefix("Question:"))
        .unwrap_or(line)
        .trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '“' | '”' | '«' | '»'))
        .trim();
    (!line.is_empty() && line.chars().count() <= MAX_REWRITE_CHARS && !words(line).is_empty())
        .then(|| line.to_string())
}

/// The previous question of `history` when `query` reads as its follow-up: the last one
/// answered, or written to a person in live chat (the conversation went on there).
pub fn previous_exchange<'a>(query: &str, history: &'a [Message]) -> Option<&'a Message> {
    history
        .iter()
        .rev()
        .find(|m| matches!(m.kind, MessageKind::Answer | MessageKind::User))
        .filter(|_| is_follow_up(query))
}

/// At most this many content terms, and a question is short enough to lean on what came
/// before even without a word pointing back.
const SHORT_QUESTION_TERMS: usize = 1;

/// Whether `query` reads as a continuation of the previous question.
pub fn is_follow_up(query: &str) -> bool {
    // Counted without the stop words `content_terms` keeps for a question of nothing else
    // ("ok, and what then?" is as short as a question gets).
    let all = words(query);
    let own = all.iter().filter(|w| !is_stop_word(w)).count();
    refers_back(query) || (!all.is_empty() && own <= SHORT_QUESTION_TERMS)
}

/// Whether `query` says in so many words that it continues ("and ...", "what about ...") or
/// points back ("it", "that"): the follow-ups worth a model's rewrite. A merely short
/// question is searched with its context but not rewritten.
pub fn refers_back(query: &str) -> bool {
    let all = words(query);
    let joined = all.join(" ");
    let continues = CONTINUATIONS
        .iter()
        .any(|c| joined == *c || joined.starts_with(&format!("{c} ")));
    continues
        || continues_in_cjk(query)
        || all.iter().any(|w| {
            BACK_REFERENCES.contains(&w.as_str()) || STANDS_FOR_SUBJECT.contains(&w.as_str())
        })
}

/// Chinese, Japanese and Korean ask "what about X?" with a particle after X ("网页版呢？",
/// "ウェブ版は？", "웹 버전은요?"), or open it with "and then" ("那么企业版？"), which their
/// words (character pairs) never show on their own.
const CJK_CONTINUATION_ENDINGS: &[&str] = &["呢", "は", "은요", "는요"];
const CJK_CONTINUATION_OPENINGS: &[&str] =
    &["那么", "那", "还有", "じゃあ", "それで", "그럼", "그러면"];

/// Most characters, punctuation aside, of a question such a particle makes a follow-up: a
/// longer one ending in "呢" asks something of its own ("你们的退款政策是什么呢？").
const CJK_SHORT_QUESTION_CHARS: usize = 10;

/// Whether `query` is a short Chinese, Japanese or Korean question that continues the one
/// before (`CJK_CONTINUATION_ENDINGS`, `CJK_CONTINUATION_OPENINGS`).
fn continues_in_cjk(query: &str) -> bool {
    let core = query.trim().trim_end_matches(|c: char| {
        c.is_whitespace() || matches!(c, '?' | '？' | '。' | '.' | '!' | '！' | '…')
    });
    let chars = core.chars().filter(|c| !c.is_whitespace()).count();
    core.chars().any(is_cjk)
        && chars <= CJK_SHORT_QUESTION_CHARS
        && (CJK_CONTINUATION_ENDINGS.iter().any(|e| core.ends_with(e))
            || CJK_CONTINUATION_OPENINGS
                .iter()
                .any(|o| core.starts_with(o)))
}

/// Pronouns that stand for the thing talked about ("how long does that take?"); not
/// "there", "one" or "too", which as often start a question of its own ("is there a fee?").
const STANDS_FOR_SUBJECT: &[&str] = &[
    "it", "its", "that", "this", "these", "those", "them", "they", "ça", "cela", "ceci", "dies",
    "diese", "dabei", "dafür", "davon",
];

/// Most content words a question may name of its own and still be taken to be about the
/// conversation's subject when it has a pronoun for it: "how long does that take?" names
/// two, "is it possible to cancel my subscription?" a subject of its own.
const AT_MOST_OWN_TERMS: usize = 2;

/// Whether `query` is about the conversation's subject rather than one of its own: it stands
/// for it with a pronoun and names little else (`AT_MOST_OWN_TERMS` content words), as "how
/// long does that take?" does, and "what about returns?" does not.
pub fn points_back(query: &str) -> bool {
    let all = words(query);
    all.iter().any(|w| STANDS_FOR_SUBJECT.contains(&w.as_str()))
        && all.iter().filter(|w| !is_stop_word(w)).count() <= AT_MOST_OWN_TERMS
}

/// Whether `query`, asked with the conversation's `context`, names a subject of its own
/// ("Refunds?", "what about returns?", "can it carry a signed message?") rather than pointing
/// back at the conversation's: passages about that subject rank first, the conversation's
/// words narrowing the search but not replacing it.
pub fn names_own_subject(query: &str, context: &Context) -> bool {
    !context.is_empty() && !points_back(query)
}

/// Whether `query`, asked with the conversation's `context`, is about its own words alone,
/// with no pronoun standing for the conversation's subject ("Refunds?", "what about
/// returns?"): whether a passage answers it is measured against those words. "Can it carry a
/// signed message?" still means the thing talked about, which the answer must hold too.
pub fn stands_alone(query: &str, context: &Context) -> bool {
    !context.is_empty()
        && !words(query)
            .iter()
            .any(|w| STANDS_FOR_SUBJECT.contains(&w.as_str()))
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
            "那企业版呢？",
            "网页版呢?",
            "那么年度会员？",
            "ウェブ版は？",
            "웹 버전은요?",
        ] {
            assert!(is_follow_up(q), "{q}");
        }
        for q in [
            "What is the refund window?",
            "How do I reset my password?",
            "Quels papiers faut-il pour s'inscrire ?",
            "",
            "你们的退款政策是什么呢？",
            "如何申请发票？",
            "パスワードを忘れた場合はどうすればいいですか？",
        ] {
            assert!(!is_follow_up(q), "{q}");
        }
    }

    fn answer(query: &str, cite_data: serde_json::Value) -> Message {
        let mut m = crate::domain::session::sample_message(
            "We do.",
            crate::domain::session::FinishReason::Stop,
            cite_data,
            serde_json::json!({}),
        );
        m.query = query.to_string();
        m
    }

    #[test]
    fn a_follow_up_is_searched_with_the_previous_question() {
        let history = [answer(
            "How do I put my unfinished changes aside?",
            serde_json::json!({"1": {"data_source_uuid": "d-stash", "title": "git-stash(1)"}}),
        )];
        let c = conversation_context("And how do I get them back later?", &history);
        assert_eq!(c.terms, ["put", "unfinished", "changes", "aside"]);
        // A new question keeps nothing of the conversation.
        assert!(conversation_context("How do I rename a branch?", &history).is_empty());
    }

    #[test]
    fn a_follow_up_of_a_follow_up_keeps_the_conversation_s_subject() {
        let history = [
            answer(
                "How much does the Starter plan cost per month?",
                serde_json::json!({}),
            ),
            answer("and for bigger teams?", serde_json::json!({})),
        ];
        let c = conversation_context("what about enterprise?", &history);
        assert_eq!(c.terms, ["bigger", "teams"]);
        assert_eq!(c.earlier, ["starter", "plan", "cost", "month"]);
        // A follow-up naming a subject of its own starts the chain afresh.
        let history = [
            answer("How long does shipping take?", serde_json::json!({})),
            answer("Refunds?", serde_json::json!({})),
        ];
        let c = conversation_context("and how long does that take?", &history);
        assert_eq!(c.terms, ["refunds"]);
        assert!(c.earlier.is_empty());
    }

    #[test]
    fn a_follow_up_after_live_chat_leans_on_what_was_written_there() {
        let mut line = answer("My order 777 has not arrived", serde_json::json!({}));
        line.kind = MessageKind::User;
        line.response.clear();
        let history = [answer("How do I pay by card?", serde_json::json!({})), line];
        let c = conversation_context("and when does it ship?", &history);
        assert!(c.terms.iter().any(|t| t == "arrived"), "{:?}", c.terms);
    }

    #[test]
    fn a_model_s_rewrite_is_read_from_its_first_line() {
        assert_eq!(
            parse_rewrite("\n  \"How long does a refund take?\"\nBecause...").as_deref(),
            Some("How long does a refund take?")
        );
        assert_eq!(
            parse_rewrite("Question: Combien de temps dure un prêt ?").as_deref(),
            Some("Combien de temps dure un prêt ?")
        );
        assert_eq!(parse_rewrite("   \n"), None);
        assert_eq!(parse_rewrite("\"?!\""), None);
        assert_eq!(parse_rewrite(&"word ".repeat(100)), None);
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
