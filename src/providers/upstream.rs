//! Reading an answer as it is produced. A model's answer arrives as server-sent events in
//! pieces of any size; each provider supplies the decoder for its own events. The built-in
//! engine's answer is already whole and is replayed as the same events.

use crate::platform::outbound::AbortOnDrop;
use edgechat_core::chat::completion::CompletionEvent;
use edgechat_core::chat::sse::{SseEvent, SseParser};
use futures::future::{select, Either};
use futures::StreamExt;
use std::collections::VecDeque;
use std::time::Duration;
use worker::{ByteStream, Delay};

/// How long the rest of a stream is waited for once the model has given its finish reason:
/// long enough for a trailing usage chunk (OpenAI's `stream_options.include_usage`), not the
/// whole silence timeout for a server that holds the connection open without `[DONE]`.
const AFTER_FINISH: Duration = Duration::from_secs(2);

/// A provider's decoder: one server-sent event to what it means.
pub type Decoder = fn(&SseEvent) -> Vec<CompletionEvent>;

/// A streamed body from a model service.
pub struct UpstreamBody {
    body: ByteStream,
    parser: SseParser,
    decode: Decoder,
    ended: bool,
    /// Whether the model said its answer ended ([DONE] or a finish reason): some servers
    /// close the stream after the finish without a [DONE].
    finished: bool,
    /// Aborts the upstream call when the answer is dropped, so a client that leaves stops it.
    _controller: Option<AbortOnDrop>,
    /// The longest wait for the next piece of the answer.
    timeout: Duration,
}

impl UpstreamBody {
    pub fn new(
        body: ByteStream,
        decode: Decoder,
        controller: Option<AbortOnDrop>,
        timeout: Duration,
    ) -> Self {
        UpstreamBody {
            body,
            parser: SseParser::new(),
            decode,
            ended: false,
            finished: false,
            _controller: controller,
            timeout,
        }
    }

    /// Decodes `events` of the body onto `pending`, noting whether the answer ended.
    fn decode_into(&mut self, events: Vec<SseEvent>, pending: &mut VecDeque<CompletionEvent>) {
        for event in events {
            for decoded in (self.decode)(&event) {
                self.finished |=
                    matches!(decoded, CompletionEvent::Done | CompletionEvent::Finish(_));
                pending.push_back(decoded);
            }
        }
    }

    /// Reads more of the body into `pending`; `Err` when the stream broke or went silent
    /// before the model's finish (silence after it ends the answer).
    async fn fill(&mut self, pending: &mut VecDeque<CompletionEvent>) -> Result<(), String> {
        let read = self.body.next();
        let wait = if self.finished {
            AFTER_FINISH.min(self.timeout)
        } else {
            self.timeout
        };
        let timer = Delay::from(wait);
        futures::pin_mut!(read);
        match select(read, timer).await {
            Either::Right(_) if self.finished => {
                self.ended = true;
                Ok(())
            }
            Either::Right(_) => {
                self.ended = true;
                Err(format!(
                    "the model sent nothing for {} seconds",
                    self.timeout.as_secs()
                ))
            }
            Either::Left((Some(Ok(bytes)), _)) => {
                let events = self.parser.feed(&bytes);
                self.decode_into(events, pending);
                Ok(())
            }
            Either::Left((Some(Err(err)), _)) => {
                self.ended = true;
                Err(format!("the model's stream broke: {err}"))
            }
            Either::Left((None, _)) => {
                self.ended = true;
                let events = self.parser.finish();
                self.decode_into(events, pending);
                // A stream that ends without [DONE] or a finish reason was cut off.
                if !self.finished {
                    pending.push_back(CompletionEvent::Error(
                        "the model's stream ended early".into(),
                    ));
                }
                Ok(())
            }
        }
    }
}

/// An answer being read, whoever produces it.
pub struct AnswerStream {
    pending: VecDeque<CompletionEvent>,
    /// `None` once everything there is sits in `pending`.
    upstream: Option<UpstreamBody>,
}

impl AnswerStream {
    /// An answer that is already complete (the built-in engine, a fixed reply).
    pub fn complete(events: impl IntoIterator<Item = CompletionEvent>) -> Self {
        AnswerStream {
            pending: events.into_iter().collect(),
            upstream: None,
        }
    }

    pub fn upstream(body: UpstreamBody) -> Self {
        AnswerStream {
            pending: VecDeque::new(),
            upstream: Some(body),
        }
    }

    /// The next event; `Err` when the stream broke or went silent. After the end it returns
    /// `None`.
    pub async fn next(&mut self) -> Option<Result<CompletionEvent, String>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            let upstream = self.upstream.as_mut().filter(|u| !u.ended)?;
            if let Err(err) = upstream.fill(&mut self.pending).await {
                return Some(Err(err));
            }
        }
    }

    /// Reads until the first piece of output (or the end), keeping what it read, so a
    /// failure before any output can still be reported as an error response.
    pub(super) async fn peek_first_output(&mut self) -> Result<(), String> {
        let mut seen = VecDeque::new();
        loop {
            match self.next().await {
                None => break,
                Some(Err(e)) => return Err(e),
                Some(Ok(CompletionEvent::Error(e))) => return Err(e),
                Some(Ok(event)) => {
                    let output = matches!(
                        event,
                        CompletionEvent::Text(_)
                            | CompletionEvent::Done
                            | CompletionEvent::Finish(_)
                            | CompletionEvent::ToolCall(_)
                    );
                    seen.push_back(event);
                    if output {
                        break;
                    }
                }
            }
        }
        seen.extend(self.pending.drain(..));
        self.pending = seen;
        Ok(())
    }
}
