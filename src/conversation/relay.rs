//! The answer on its way: read from the provider, written to the client as it comes (or only
//! collected), with the tool-call loop when a model asks for functions; then handed to
//! `record` to be stored once, however it ended.

use super::{record, tools, Exchange};
use crate::platform::chat_session::LiveAnswer;
use crate::platform::log;
use crate::platform::stream::StreamSink;
use crate::providers::AnswerStream;
use crate::storage::Store;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::completion::{tool_round_messages, CompletionEvent, Usage};
use edgechat_core::chat::tools::{round_separator, ToolCallCollector};
use edgechat_core::chat::wire::{AnswerEvent, Encoder};
use edgechat_core::config::Config;
use edgechat_core::domain::session::{fit_answer, FinishReason, Message};
use futures::future::{select, Either};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use worker::{Delay, Env};

/// Most rounds of tool calls in one answer. A model that still asks for tools after the last
/// one is told they are spent and called once more, allowed none, to answer with what it has.
pub const MAX_TOOL_ROUNDS: usize = 3;

/// Most calls run in one round: each is a subrequest of the invocation (a Worker has 50 on
/// the free plan, redirects included), and one model asking for many at once would spend them.
const MAX_CALLS_PER_ROUND: usize = 8;

/// What the model hears of a call made after its rounds are spent.
const ROUNDS_SPENT: &str = "Error: no more tool calls in this answer; answer with what you have.";

/// Where the answer goes: a client's stream, encoded in the format it chose (the answer ends
/// when that client leaves); the session's object, which keeps the answer's events for any
/// number of readers and produces it to the end whoever reads; or nowhere but the stored
/// message.
pub enum Output {
    Stream {
        sink: StreamSink,
        encoder: RefCell<Encoder>,
    },
    Live(Rc<LiveAnswer>),
    Collect,
}

impl Output {
    pub fn stream(sink: StreamSink, encoder: Encoder) -> Self {
        Output::Stream {
            sink,
            encoder: RefCell::new(encoder),
        }
    }

    /// `false` once the client has gone away.
    async fn emit(&self, event: AnswerEvent) -> bool {
        match self {
            Output::Stream { sink, encoder } => {
                let bytes = encoder.borrow_mut().encode(&event);
                sink.write_str(&bytes).await.is_ok()
            }
            Output::Live(live) => {
                live.push(event);
                true
            }
            Output::Collect => true,
        }
    }

    async fn close(&self) {
        match self {
            Output::Stream { sink, .. } => sink.close().await,
            Output::Live(live) => live.end(),
            Output::Collect => {}
        }
    }

    /// The answer the session's object keeps, when this output is one.
    pub fn kept(&self) -> Option<Rc<LiveAnswer>> {
        self.live().cloned()
    }

    fn live(&self) -> Option<&Rc<LiveAnswer>> {
        match self {
            Output::Live(live) => Some(live),
            _ => None,
        }
    }

    fn stop_requested(&self) -> bool {
        self.live().is_some_and(|l| l.stop_requested())
    }

    /// What `work` gives, or `None` when the answer is stopped first; once stopped, `work` is
    /// not started. Only a kept answer can be stopped.
    async fn unless_stopped<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        match self.live() {
            Some(live) if live.stop_requested() => None,
            Some(live) => match select(Box::pin(work), live.stopped()).await {
                Either::Left((done, _)) => Some(done),
                Either::Right(_) => None,
            },
            None => Some(work.await),
        }
    }
}

/// What `functions_called` records of a call the answer was stopped in the middle of.
const STOPPED_CALL: &str = "Error: the answer was stopped before the tool answered.";

/// How an answer ended, and what it said.
pub struct Outcome {
    pub text: String,
    pub finish: FinishReason,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    /// Indices into the exchange's ranked sources, in citation-number order.
    pub cited: Vec<usize>,
    pub functions_called: Vec<Value>,
    /// Whether the sources held an answer, when the engine says (the built-in one does).
    pub answered: Option<bool>,
}

/// Opens the answer: the escalation agent's fixed reply, or the provider's. A provider failure
/// before any output is an `Upstream` error (502).
pub async fn open(env: &Env, config: &Config, ex: &Exchange) -> ApiResult<AnswerStream> {
    if let Some(reply) = &ex.escalation_reply {
        return Ok(AnswerStream::complete([
            CompletionEvent::Text(reply.clone()),
            CompletionEvent::Cited(Vec::new()),
            CompletionEvent::Finish("stop".into()),
            CompletionEvent::Done,
        ]));
    }
    let messages = ex.prompt.messages();
    let tools = ex.tool_specs();
    ex.provider
        .open(env, config, &ex.turn(&messages, &tools))
        .await
}

/// Reads the answer to the end, writing it to `out`, running tool calls between rounds.
async fn relay(
    env: &Env,
    config: &Config,
    ex: &Exchange,
    first: AnswerStream,
    out: &Output,
) -> Outcome {
    let mut text = String::new();
    let mut finish = None;
    let mut usage: Option<Usage> = None;
    let mut error = None;
    let mut cited = None;
    let mut answered = None;
    let mut functions_called = Vec::new();
    let mut messages = ex.prompt.messages();
    let tool_specs = ex.tool_specs();
    let mut answer = first;
    // Set once the answer's tool rounds are spent: the model is called once more, allowed no
    // tool, and what it asks for then is not run.
    let mut tools_withdrawn = false;
    'rounds: for round in 0.. {
        let mut calls = ToolCallCollector::default();
        let mut round_text = String::new();
        loop {
            // Someone may stop the answer while the model is silent: waiting ends at once.
            let next = out.unless_stopped(answer.next()).await.flatten();
            if out.stop_requested() {
                finish = Some(FinishReason::Stopped);
                break;
            }
            let Some(event) = next else { break };
            match event {
                Ok(CompletionEvent::Text(piece)) => {
                    // A later round's first words do not run on from an earlier round's: the
                    // separator is written too, so readers get what is stored.
                    let opening = round > 0 && round_text.is_empty();
                    round_text.push_str(&piece);
                    let piece = if opening {
                        format!("{}{piece}", round_separator(&text, &piece))
                    } else {
                        piece
                    };
                    // A model that ignores its token limit is not read past what a message
                    // can hold; the rest of its stream is let go.
                    let (fits, full) = fit_answer(text.len(), &piece);
                    let piece = if full { fits.to_string() } else { piece };
                    text.push_str(&piece);
                    if !out.emit(AnswerEvent::Delta(piece)).await {
                        finish = Some(FinishReason::Aborted);
                        break;
                    }
                    if full {
                        finish = Some(FinishReason::Length);
                        break 'rounds;
                    }
                }
                Ok(CompletionEvent::Cited(indices)) => cited = Some(indices),
                Ok(CompletionEvent::Answered(flag)) => answered = Some(flag),
                Ok(CompletionEvent::Finish(reason)) => {
                    finish = Some(FinishReason::from_provider(&reason))
                }
                Ok(CompletionEvent::Usage(u)) => {
                    let total = usage.get_or_insert_with(Usage::default);
                    total.prompt_tokens += u.prompt_tokens;
                    total.completion_tokens += u.completion_tokens;
                    total.total_tokens += u.total_tokens;
                }
                Ok(CompletionEvent::Done) => break,
                Ok(CompletionEvent::ToolCall(delta)) => calls.add(delta),
                Ok(CompletionEvent::Error(e)) | Err(e) => {
                    error = Some(e);
                    finish = Some(FinishReason::Error);
                    break;
                }
            }
        }
        // Dropping the stream aborts the upstream call when it is still open.
        drop(answer);
        if calls.is_empty()
            || tools_withdrawn
            || matches!(
                finish,
                Some(FinishReason::Aborted | FinishReason::Error | FinishReason::Stopped)
            )
        {
            break;
        }
        let calls = calls.take();
        tools_withdrawn = round == MAX_TOOL_ROUNDS;
        let mut results = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            // Every call gets its result, run or not: a call without one has no place in the
            // conversation the model is sent. One not run is recorded with why, as a run
            // that failed is.
            let refused = if tools_withdrawn {
                Some(ROUNDS_SPENT.to_string())
            } else if i >= MAX_CALLS_PER_ROUND {
                Some(format!(
                    "Error: at most {MAX_CALLS_PER_ROUND} tools are called in one round; this one was not."
                ))
            } else {
                None
            };
            if let Some(refusal) = refused {
                functions_called.push(
                    json!({"name": call.name, "arguments": call.arguments, "content": refusal}),
                );
                results.push(refusal);
                continue;
            }
            if out.stop_requested() {
                break;
            }
            // A stop while a tool runs ends the answer then, not when the tool answers (up to
            // its time limit); its call is dropped, and the model is not asked again.
            let Some(result) = out
                .unless_stopped(tools::run(config, &ex.tools, call))
                .await
            else {
                functions_called.push(
                    json!({"name": call.name, "arguments": call.arguments, "content": STOPPED_CALL}),
                );
                break;
            };
            functions_called
                .push(json!({"name": call.name, "arguments": call.arguments, "content": result}));
            results.push(result);
        }
        if out.stop_requested() {
            finish = Some(FinishReason::Stopped);
            break;
        }
        messages.extend(tool_round_messages(&round_text, &calls, &results));
        finish = None;
        let mut turn = ex.turn(&messages, &tool_specs);
        turn.request.may_call_tools = !tools_withdrawn;
        let opened = out
            .unless_stopped(ex.provider.open(env, config, &turn))
            .await;
        answer = match opened {
            None => {
                finish = Some(FinishReason::Stopped);
                break;
            }
            Some(Ok(next)) => next,
            Some(Err(err)) => {
                error = Some(err.to_string());
                finish = Some(FinishReason::Error);
                break;
            }
        };
    }
    Outcome {
        text,
        finish: finish.unwrap_or(FinishReason::Stop),
        usage,
        error,
        // A model cites the sources its prompt carried.
        cited: cited.unwrap_or_else(|| (0..ex.prompt.sources_used).collect()),
        functions_called,
        answered,
    }
}

/// The event an answer whose model failed midway sends before its `end`.
pub fn failed_midway() -> AnswerEvent {
    AnswerEvent::Error {
        code: "upstream_error".into(),
        message: "The model stopped answering midway.".into(),
    }
}

/// How long a model may take to answer before its answer's `streaming` record is written
/// while it waits. One that answers sooner has the record written beside its first words,
/// off the way to the first byte.
const SLOW_MODEL: std::time::Duration = std::time::Duration::from_millis(100);

/// Opens an answer the session's object keeps (`live`). A stop before the model answers ends
/// it before its first word. When the model takes its time (a reasoning model), the answer's
/// `streaming` record is written while it waits and its `start` is sent, so the answer is
/// already listed, and can be followed and stopped, and its asker can be answered at once
/// (`LiveAnswer::on_listed`); if the model then cannot be reached, the call fails and nothing
/// of it stays: the record goes again and anyone already following hears the call's error.
pub async fn open_kept(
    store: &Store,
    env: &Env,
    config: &Config,
    ex: &Exchange,
    live: &Rc<LiveAnswer>,
) -> ApiResult<AnswerStream> {
    let mut opening = Box::pin(async {
        match select(Box::pin(open(env, config, ex)), live.stopped()).await {
            Either::Left((opened, _)) => opened,
            Either::Right(_) => Ok(AnswerStream::complete([])),
        }
    });
    let opened = match select(opening.as_mut(), Box::pin(Delay::from(SLOW_MODEL))).await {
        Either::Left((opened, _)) => opened,
        Either::Right(_) => {
            let listing = async {
                list_started(store, ex, live).await;
                live.push(start_event(ex));
            };
            futures::join!(listing, opening).1
        }
    };
    if let Err(err) = &opened {
        live.abandon(err);
        if live.listed() {
            let uuids = std::slice::from_ref(&ex.message_uuid);
            match store.delete_messages(uuids).await {
                // Gone already (its session deleted meanwhile) is what was wanted.
                Ok(_) | Err(ApiError::NotFound(_)) => {}
                Err(err) => log::background_failure(
                    "removing a failed answer's record",
                    &ex.message_uuid,
                    &err,
                ),
            }
        }
    }
    opened
}

/// The first event of an answer: which message, session and agent it is.
fn start_event(ex: &Exchange) -> AnswerEvent {
    AnswerEvent::Start {
        message_uuid: ex.message_uuid.clone(),
        session_uuid: ex.session.uuid.clone(),
        agent_uuid: Some(ex.agent.uuid.clone()),
    }
}

/// Stores a kept answer as it starts (`streaming`), so a reader can find it and a restart
/// leaves a record of it; a failure is logged, and the answer goes on.
async fn list_started(store: &Store, ex: &Exchange, live: &LiveAnswer) {
    match store.insert_message(&record::started(ex)).await {
        Ok(()) => live.mark_listed(),
        Err(err) => log::background_failure("storing a started answer", &ex.message_uuid, &err),
    }
}

/// Streams the answer to `out`, then stores the message. Returns the stored message.
pub async fn deliver(
    store: &Store,
    env: &Env,
    config: &Config,
    ex: Exchange,
    answer: AnswerStream,
    out: Output,
) -> ApiResult<Message> {
    let citations_on = ex.chatbot.settings.show_citations;
    // A kept answer whose model was slow to answer has sent its start already.
    if !out.live().is_some_and(|live| live.has_events()) {
        out.emit(start_event(&ex)).await;
    }
    let kept = out.live().is_some();
    let outcome = match out.live() {
        // Beside its first words, unless `open_kept` listed it while a slow model was waited
        // for.
        Some(live) if !live.listed() => {
            futures::join!(
                list_started(store, &ex, live),
                relay(env, config, &ex, answer, &out)
            )
            .1
        }
        _ => relay(env, config, &ex, answer, &out).await,
    };
    let message = record::message(&ex, &outcome);
    if outcome.finish != FinishReason::Aborted {
        if let Some(error) = &outcome.error {
            log::upstream_failure("streaming a model's answer", &ex.message_uuid, error);
            out.emit(failed_midway()).await;
        }
        if citations_on && outcome.finish != FinishReason::Error {
            out.emit(AnswerEvent::Citations(message.cite_data.clone()))
                .await;
        }
        out.emit(AnswerEvent::End {
            message_uuid: ex.message_uuid.clone(),
            finish_reason: outcome.finish.as_str().to_string(),
            usage: message.meta["usage"].clone(),
            answered: message.meta.get("answered").and_then(|a| a.as_bool()),
        })
        .await;
    }
    // Stored before the stream closes: a reader that saw the end finds the message stored.
    let stored = record::store(store, &ex, message, kept).await;
    out.close().await;
    stored
}
