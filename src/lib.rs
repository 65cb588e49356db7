//! edgechat: a chatbot service that runs as a Cloudflare Worker.
//!
//! Pure logic (validation, records, routing, errors) lives in modules that never touch the
//! Worker runtime and is tested natively; `app`, `http`, `storage` and `handlers` run in the
//! Worker. The exported entry points sit behind the default `entry` feature.

pub mod app;
pub mod chat;
pub mod conversation;
pub mod domain;
pub mod error;
pub mod files;
pub mod handlers;
pub mod http;
pub mod ingestion;
pub mod knowledge;
pub mod maintenance;
pub mod models;
pub mod outbound;
pub mod providers;
pub mod ratelimit;
pub mod retrieval;
pub mod routes;
pub mod storage;
pub mod stream;
pub mod time;
pub mod tools;
pub mod validate;
pub mod widget;

#[cfg(feature = "entry")]
mod entry {
    use crate::ratelimit::{admit, Decision, Limit};
    use worker::{
        durable_object, event, Context, DurableObject, Env, Request, Response, Result,
        ScheduleContext, ScheduledEvent, State,
    };

    #[event(start)]
    fn start() {
        console_error_panic_hook::set_once();
    }

    #[event(fetch)]
    async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
        Ok(crate::app::handle(req, env, ctx).await)
    }

    #[event(scheduled)]
    async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
        match crate::maintenance::run(&env).await {
            Ok(report) => worker::console_log!("maintenance: {report:?}"),
            Err(err) => worker::console_error!("maintenance failed: {err:?}"),
        }
    }

    /// Holds one chatbot's log of admitted messages (see `ratelimit`).
    #[durable_object]
    pub struct RateLimiter {
        state: State,
    }

    impl DurableObject for RateLimiter {
        fn new(state: State, _env: Env) -> Self {
            RateLimiter { state }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let limit: Limit = req.json().await?;
            let storage = self.state.storage();
            let mut log: Vec<i64> = storage.get("log").await?.unwrap_or_default();
            let decision = admit(&mut log, crate::time::now_ms(), limit);
            if matches!(decision, Decision::Admitted { .. }) {
                storage.put("log", &log).await?;
            }
            Response::from_json(&decision)
        }
    }
}
