//! Whether an answer came from the sources: the flag every answer is stored with, which the
//! unanswered-questions list and the analytics' answered share read. Decided here, once, for
//! every kind of answer.

use super::engine::{compose, QA_MATCH};
use crate::domain::session::FinishReason;
use crate::knowledge::retrieve::Ranked;

/// The least share of the question a retrieved chunk must hold for a model's answer to count
/// as drawn from the sources (a matching Q&A question counts too).
pub const MIN_SOURCE_COVERAGE: f64 = 0.34;

/// Who wrote the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answerer {
    /// The built-in engine, answering from the retrieved chunks.
    Engine,
    /// A model, given the retrieved chunks in its prompt.
    Model,
    /// The escalation agent's fixed reply: a person will answer, so the question is not one
    /// the sources failed.
    Escalation,
}

/// Whether the sources held an answer to `query`. The built-in engine knows (it declines when
/// they do not); a model's answer counts as unanswered when neither retrieval nor a tool
/// function (`tool_answered`: one of its calls returned a result, not an error) found
/// anything for the question, or when the model said it does not know. An answer that failed
/// (`finish` error) before it said anything answered nothing, whatever was found for it.
pub fn decide(
    answerer: Answerer,
    query: &str,
    (ranked, tool_answered): (&[Ranked], bool),
    (response, finish): (&str, FinishReason),
) -> bool {
    if finish == FinishReason::Error && response.trim().is_empty() {
        return false;
    }
    match answerer {
        Answerer::Escalation => true,
        // The engine is pure and deterministic: asking it again gives the very flag it
        // answered with.
        Answerer::Engine => compose(query, ranked, false).answered,
        Answerer::Model => (tool_answered || found_sources(ranked)) && !model_declined(response),
    }
}

/// Retrieval found something above the threshold.
pub fn found_sources(ranked: &[Ranked]) -> bool {
    ranked
        .iter()
        .any(|r| r.coverage >= MIN_SOURCE_COVERAGE || r.question_match >= QA_MATCH)
}

/// Phrases a model uses when the sources it was given do not hold the answer (its prompt asks
/// it to say so plainly).
const DECLINING: &[&str] = &[
    "i don't know",
    "i do not know",
    "i'm not sure",
    "i am not sure",
    "don't have information",
    "do not have information",
    "don't have any information",
    "do not have any information",
    "no information about",
    "not mentioned in",
    "sources do not",
    "sources don't",
    "do not contain",
    "does not contain",
    "doesn't contain",
    "don't contain",
    "couldn't find",
    "could not find",
    "cannot find",
    "can't find",
    "unable to find",
    "not able to find",
];

/// Whether a model's answer says it does not know.
pub fn model_declined(response: &str) -> bool {
    let text = response.to_lowercase().replace('’', "'");
    DECLINING.iter().any(|phrase| text.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escalations_count_as_answered_and_nothing_retrieved_is_unanswered() {
        assert!(decide(
            Answerer::Escalation,
            "a person please",
            (&[], false),
            ("hold on", FinishReason::Stop)
        ));
        assert!(!decide(
            Answerer::Engine,
            "what is the refund policy",
            (&[], false),
            ("", FinishReason::Stop)
        ));
        assert!(!decide(
            Answerer::Model,
            "what is the refund policy",
            (&[], false),
            ("Refunds take 5 days.", FinishReason::Stop)
        ));
    }

    #[test]
    fn a_model_answering_from_a_tools_result_answered() {
        let query = "what is the status of my order A123?";
        assert!(decide(
            Answerer::Model,
            query,
            (&[], true),
            ("It has shipped.", FinishReason::Stop)
        ));
        assert!(!decide(
            Answerer::Model,
            query,
            (&[], true),
            ("I don't know where it is.", FinishReason::Stop)
        ));
    }

    #[test]
    fn an_answer_that_failed_before_saying_anything_answered_nothing() {
        let query = "what is the status of my order A123?";
        for text in ["", " \n"] {
            assert!(!decide(
                Answerer::Model,
                query,
                (&[], true),
                (text, FinishReason::Error)
            ));
        }
        // What it said before failing is judged as any answer.
        assert!(decide(
            Answerer::Model,
            query,
            (&[], true),
            ("It has shipped", FinishReason::Error)
        ));
        assert!(decide(
            Answerer::Model,
            query,
            (&[], true),
            ("", FinishReason::Stop)
        ));
    }

    #[test]
    fn a_model_saying_it_does_not_know_declines() {
        assert!(model_declined("I'm sorry, but I don't know that."));
        assert!(model_declined(
            "The sources do not say when the shop opens."
        ));
        assert!(model_declined("I couldn’t find anything about that."));
        assert!(!model_declined("We ship to 40 countries within 5 days."));
    }
}
