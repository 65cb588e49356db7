//! Embeddings and reranking, the providers' other capabilities: one file per provider, the
//! wire formats in the core (`knowledge::semantic`). Every call has a timeout, and every
//! answer is checked before use; a failure is returned as words for the log, never raised,
//! because search by meaning only ever adds to search by words.

mod openai;
mod workers_ai;

use edgechat_core::config::SemanticService;
use edgechat_core::knowledge::semantic::RerankScore;
use std::time::Duration;
use worker::Env;

/// Why a call to an embedding or rerank model gave nothing usable.
pub type Failure = String;

/// Embeds `texts` (at most `EMBED_BATCH`) in one call; one vector per text, in order.
pub async fn embed(
    env: &Env,
    service: &SemanticService,
    texts: &[&str],
    timeout: Duration,
) -> Result<Vec<Vec<f32>>, Failure> {
    match service {
        SemanticService::OpenAi { endpoint, model } => {
            openai::embed(endpoint, model, texts, timeout).await
        }
        SemanticService::WorkersAi { model } => workers_ai::embed(env, model, texts, timeout).await,
    }
}

/// Scores `documents` against `query`, best first.
pub async fn rerank(
    env: &Env,
    service: &SemanticService,
    query: &str,
    documents: &[&str],
    timeout: Duration,
) -> Result<Vec<RerankScore>, Failure> {
    match service {
        SemanticService::OpenAi { endpoint, model } => {
            openai::rerank(endpoint, model, query, documents, timeout).await
        }
        SemanticService::WorkersAi { model } => {
            workers_ai::rerank(env, model, query, documents, timeout).await
        }
    }
}

/// Waits for `call` at most `timeout`.
async fn within<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    use futures::future::{select, Either};
    let timer = worker::Delay::from(timeout);
    futures::pin_mut!(call);
    match select(call, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

thread_local! {
    /// What is failing now, per capability, so an outage is logged when it starts and when it
    /// ends rather than on every request in between.
    static FAILING: std::cell::RefCell<Vec<&'static str>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Notes a failed call to an embedding or rerank model; logged once per incident.
pub fn failed(what: &'static str, failure: &str) {
    let first = FAILING.with(|f| {
        let mut failing = f.borrow_mut();
        let first = !failing.contains(&what);
        if first {
            failing.push(what);
        }
        first
    });
    if first {
        crate::platform::log::upstream_failure(what, "", failure);
    }
}

/// Notes a call that worked: the next failure is a new incident.
pub fn recovered(what: &'static str) {
    let was_failing = FAILING.with(|f| {
        let mut failing = f.borrow_mut();
        let before = failing.len();
        failing.retain(|w| *w != what);
        failing.len() != before
    });
    if was_failing {
        crate::platform::log::report(
            "search by meaning recovered",
            serde_json::json!({"what": what}),
        );
    }
}
