//! edgechat: a chatbot service that runs as a Cloudflare Worker. This crate is the Worker
//! shell: it reads requests, talks to D1, R2, Durable Objects and outside parties, and hands
//! what it read to `edgechat_core`, the pure core that decides everything else (the compiler
//! keeps that core free of the runtime: it does not depend on `worker`).
//!
//! The exported entry points sit behind the default `entry` feature.

pub mod app;
pub mod conversation;
pub mod handlers;
pub mod ingestion;
pub mod platform;
pub mod providers;
pub mod storage;
pub mod webhooks;

#[cfg(feature = "panic-probe")]
mod probe;

#[cfg(feature = "entry")]
mod entry {
    use edgechat_core::config::queues;
    use edgechat_core::domain::rate_limit::{
        admit, admit_in_window, parse_limit, release, Decision, Window,
    };
    use worker::{
        durable_object, event, Context, DurableObject, Env, MessageBatch, Request, Response,
        Result, ScheduleContext, ScheduledEvent, State,
    };

    #[event(start)]
    fn start() {
        console_error_panic_hook::set_once();
    }

    #[event(fetch)]
    async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
        #[cfg(feature = "panic-probe")]
        let req = match crate::probe::intercept(req, &env).await? {
            Ok(answer) => return Ok(answer),
            Err(req) => req,
        };
        Ok(crate::app::handle(req, env, ctx).await)
    }

    #[event(scheduled)]
    async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
        let config = crate::platform::config::read(&env);
        match crate::ingestion::maintenance::run(&env, &config).await {
            Ok(report) => crate::platform::log::report("maintenance", serde_json::json!(report)),
            Err(err) => crate::platform::log::background_failure("scheduled maintenance", "", &err),
        }
    }

    /// Every queue this Worker consumes, told apart by name.
    #[event(queue)]
    async fn queue(batch: MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
        match batch.queue().as_str() {
            queues::WEBHOOKS => crate::webhooks::consume(batch, env).await,
            queues::INGEST => crate::ingestion::consumer::consume(batch, env).await,
            queues::INGEST_DEAD => crate::ingestion::consumer::consume_dead(batch, env).await,
            other => {
                // A queue wired to this Worker by mistake: its messages go back, to end in
                // its dead-letter queue rather than be lost.
                crate::platform::log::background_failure(
                    "consuming a queue",
                    other,
                    &edgechat_core::api::error::ApiError::internal(format!(
                        "no consumer for queue {other}"
                    )),
                );
                batch.retry_all();
                Ok(())
            }
        }
    }

    /// Holds one count (see `domain::rate_limit`): a chatbot's log of admitted messages, a
    /// visitor's, or the fixed window of an API key's requests. `/admit` uses the log,
    /// `/window` the window; each object only ever gets one of the two (its name says which).
    #[durable_object]
    pub struct RateLimiter {
        state: State,
    }

    impl DurableObject for RateLimiter {
        fn new(state: State, _env: Env) -> Self {
            RateLimiter { state }
        }

        async fn fetch(&self, mut req: Request) -> Result<Response> {
            let storage = self.state.storage();
            if req.path() == "/release" {
                let mut log: Vec<i64> = storage.get("log").await?.unwrap_or_default();
                release(&mut log);
                storage.put("log", &log).await?;
                return Response::empty();
            }
            // The Worker only ever sends a valid limit; anything else is the caller's mistake,
            // answered as one instead of thrown.
            let limit = match parse_limit(&req.bytes().await?) {
                Ok(limit) => limit,
                Err(message) => {
                    return Ok(
                        Response::from_json(&serde_json::json!({ "error": message }))?
                            .with_status(400),
                    )
                }
            };
            let now = edgechat_core::time::now_ms();
            if req.path() == "/window" {
                let mut window: Window = storage.get("window").await?.unwrap_or_default();
                let decision = admit_in_window(&mut window, now, limit);
                if decision.admitted {
                    storage.put("window", &window).await?;
                }
                return Response::from_json(&decision);
            }
            let mut log: Vec<i64> = storage.get("log").await?.unwrap_or_default();
            let decision = admit(&mut log, now, limit);
            if matches!(decision, Decision::Admitted { .. }) {
                storage.put("log", &log).await?;
            }
            Response::from_json(&decision)
        }
    }

    /// Runs one chat session's answers and keeps their events (see `platform::chat_session`).
    #[durable_object]
    pub struct ChatSession {
        state: State,
        env: Env,
        room: std::rc::Rc<crate::platform::chat_session::Room>,
    }

    impl DurableObject for ChatSession {
        fn new(state: State, env: Env) -> Self {
            let room = crate::platform::chat_session::Room::new(state.storage(), env.clone());
            ChatSession {
                state,
                env,
                room: std::rc::Rc::new(room),
            }
        }

        async fn fetch(&self, req: Request) -> Result<Response> {
            use wasm_bindgen::JsCast;
            // An answer a previous instance left running is closed before anything is read;
            // a message request does not wait for that (the check itself runs before its
            // turn can start, and the object's storage stays off the way to the first byte).
            if req.path().starts_with("/api/") {
                let room = self.room.clone();
                wasm_bindgen_futures::spawn_local(async move { room.recover().await });
            } else {
                self.room.recover().await;
            }
            // The object's state offers `waitUntil` as a request's context does.
            let raw: &wasm_bindgen::JsValue = self.state.as_raw().as_ref();
            let ctx = Context::new(raw.clone().unchecked_into());
            Ok(crate::app::handle_in_session(req, self.env.clone(), ctx, self.room.clone()).await)
        }

        async fn alarm(&self) -> Result<Response> {
            self.room.alarm().await;
            Response::empty()
        }
    }

    /// Holds one chatbot's chunk vectors (see `platform::vector_index`).
    #[durable_object]
    pub struct VectorIndex {
        keeper: crate::platform::vector_index::VectorKeeper,
    }

    impl DurableObject for VectorIndex {
        fn new(state: State, _env: Env) -> Self {
            VectorIndex {
                keeper: crate::platform::vector_index::VectorKeeper::new(&state),
            }
        }

        async fn fetch(&self, req: Request) -> Result<Response> {
            self.keeper.fetch(req).await
        }
    }
}
