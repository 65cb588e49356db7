//! The built-in engine as a provider: it composes the answer from the retrieved passages
//! (`edgechat_core::chat::engine`) and hands it over as the same events a model would send,
//! plus which sources it cites.

use super::upstream::AnswerStream;
use super::Grounding;
use edgechat_core::chat::completion::CompletionEvent;
use edgechat_core::chat::engine::compose;

pub fn open(grounding: &Grounding<'_>) -> AnswerStream {
    let composed = compose(grounding.query, grounding.ranked, grounding.show_citations);
    let mut events: Vec<CompletionEvent> = composed
        .pieces
        .into_iter()
        .map(CompletionEvent::Text)
        .collect();
    events.push(CompletionEvent::Cited(composed.cited));
    events.push(CompletionEvent::Answered(composed.answered));
    events.push(CompletionEvent::Finish("stop".into()));
    events.push(CompletionEvent::Done);
    AnswerStream::complete(events)
}
