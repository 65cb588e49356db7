//! The service's configuration: every secret, variable and binding it reads, declared once,
//! parsed once per request from whatever the runtime holds, and handed down as one typed value.
//!
//! Parsing never fails: a value that is malformed or out of range is reported as a `Problem`
//! (the shell logs it) and replaced by the safe default, so a typo in a variable degrades one
//! setting instead of turning requests into 500s.

use crate::knowledge::query::CANDIDATE_BUDGET;
use crate::knowledge::url_guard::PrivateAccess;
use std::time::Duration;

/// Names of the runtime bindings the Worker uses; `wrangler.toml` must declare each (the `AI`
/// binding is optional: without it Workers AI is simply not offered).
pub mod bindings {
    pub const DATABASE: &str = "DB";
    pub const FILES: &str = "FILES";
    pub const RATE_LIMITER: &str = "RATE_LIMITER";
    /// One object per chatbot holds its chunks' vectors (search by meaning).
    pub const VECTOR_INDEX: &str = "VECTOR_INDEX";
    /// One object per session runs its answers and keeps their events (`ChatSession`).
    pub const CHAT_SESSION: &str = "CHAT_SESSION";
    pub const AI: &str = "AI";
    /// The queue webhook deliveries wait in between attempts (`edgechat-webhooks`).
    pub const WEBHOOK_QUEUE: &str = "WEBHOOK_QUEUE";
    /// Producer of the ingestion queue (`queues::INGEST`).
    pub const INGEST_QUEUE: &str = "INGEST_QUEUE";
    /// The static files of `public/` (`[assets]`), the API description among them.
    pub const ASSETS: &str = "ASSETS";
    /// Every binding, for checks that compare the code with the deploy configuration
    /// (`scripts/deploy-check.sh` reads these two lists).
    pub const ALL: &[&str] = &[
        DATABASE,
        FILES,
        RATE_LIMITER,
        VECTOR_INDEX,
        CHAT_SESSION,
        AI,
        WEBHOOK_QUEUE,
        INGEST_QUEUE,
        ASSETS,
    ];
    /// Bindings the Worker works without (it checks for them at run time).
    pub const OPTIONAL: &[&str] = &[AI];
}

/// Queues the Worker consumes, by the names `wrangler.toml` gives them
/// (`[[queues.consumers]]`); a batch says which queue it came from and the consumer
/// dispatches on that.
pub mod queues {
    /// Webhook deliveries waiting for their next attempt.
    pub const WEBHOOKS: &str = "edgechat-webhooks";
    /// Ingestion steps (see `knowledge::steps`).
    pub const INGEST: &str = "edgechat-ingest";
    /// Ingestion steps that failed every retry; their sources end in `error`.
    pub const INGEST_DEAD: &str = "edgechat-ingest-dead";
}

/// Names of the secrets and variables read, each with its meaning in one place.
pub mod names {
    /// The operator's token; manages API keys only.
    pub const ADMIN_TOKEN: &str = "ADMIN_TOKEN";
    /// Signs site visitors' tokens; at least `MIN_WIDGET_SECRET_BYTES` long.
    pub const WIDGET_TOKEN_SECRET: &str = "WIDGET_TOKEN_SECRET";
    /// The secret before the last rotation: tokens it signed are still accepted (and renewed
    /// under the new one) while it is set, so rotating cuts no visitor off.
    pub const WIDGET_TOKEN_SECRET_PREVIOUS: &str = "WIDGET_TOKEN_SECRET_PREVIOUS";
    pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
    pub const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
    pub const ALLOW_PRIVATE_URLS: &str = "ALLOW_PRIVATE_URLS";
    pub const ALLOW_PRIVATE_HOSTS: &str = "ALLOW_PRIVATE_HOSTS";
    pub const MODEL_TIMEOUT_SECONDS: &str = "MODEL_TIMEOUT_SECONDS";
    pub const TOOL_TIMEOUT_SECONDS: &str = "TOOL_TIMEOUT_SECONDS";
    pub const MAX_UPLOAD_BYTES: &str = "MAX_UPLOAD_BYTES";
    pub const ORPHAN_GRACE_SECONDS: &str = "ORPHAN_GRACE_SECONDS";
    /// The embedding model: with `OPENAI_API_KEY`, served at `OPENAI_BASE_URL/embeddings`;
    /// with only the `AI` binding, a Workers AI model (default `@cf/baai/bge-m3`).
    pub const EMBEDDINGS_MODEL: &str = "EMBEDDINGS_MODEL";
    /// A reranking model; reranking is off unless this names one.
    pub const RERANK_MODEL: &str = "RERANK_MODEL";
    /// The longest wait for a question's embedding or a rerank before search goes on by words.
    pub const SEMANTIC_TIMEOUT_SECONDS: &str = "SEMANTIC_TIMEOUT_SECONDS";
    /// `requests/seconds` an API key may make unless its own `rate_limit` says otherwise.
    pub const API_KEY_RATE_LIMIT: &str = "API_KEY_RATE_LIMIT";
    /// `tokens/seconds` one client address may mint for site visitors.
    pub const VISITOR_TOKEN_RATE_LIMIT: &str = "VISITOR_TOKEN_RATE_LIMIT";
    /// The longest wait for a webhook receiver's answer.
    pub const WEBHOOK_TIMEOUT_SECONDS: &str = "WEBHOOK_TIMEOUT_SECONDS";
    /// The longest a session event stream stays open before the reader must reconnect.
    pub const SESSION_EVENTS_SECONDS: &str = "SESSION_EVENTS_SECONDS";
    /// How long a session's object keeps an ended answer's events for readers coming back.
    pub const ANSWER_REPLAY_SECONDS: &str = "ANSWER_REPLAY_SECONDS";
    /// The unit of the webhook retry schedule (`domain::webhook::RETRY_DELAYS`): a minute
    /// unless set; tests shorten it.
    pub const WEBHOOK_RETRY_UNIT_SECONDS: &str = "WEBHOOK_RETRY_UNIT_SECONDS";
    /// The webhook retry schedule itself: comma-separated seconds between attempts.
    pub const WEBHOOK_RETRY_DELAYS: &str = "WEBHOOK_RETRY_DELAYS";
    /// About how many chunks one search may score (`knowledge::query::CANDIDATE_BUDGET`).
    pub const SEARCH_CANDIDATE_BUDGET: &str = "SEARCH_CANDIDATE_BUDGET";
}

pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_TOOL_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_SEMANTIC_TIMEOUT_SECS: u64 = 5;
pub const DEFAULT_WEBHOOK_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_SESSION_EVENTS_SECS: u64 = 300;
pub const DEFAULT_ANSWER_REPLAY_SECS: u64 = 24 * 60 * 60;
/// The longest an operator may keep ended answers' events: 30 days.
pub const MAX_ANSWER_REPLAY_SECS: u64 = 30 * 24 * 60 * 60;
pub const DEFAULT_WEBHOOK_RETRY_UNIT_SECS: u32 = 60;
/// The longest a queue message may be delayed: 12 hours.
pub const MAX_QUEUE_DELAY_SECS: u32 = 43_200;
/// A webhook retry waits in the queue, so at most as long as a queue message may be delayed.
pub const MAX_WEBHOOK_RETRY_DELAY_SECS: u32 = MAX_QUEUE_DELAY_SECS;
/// The largest retry unit: with it the last wait (60 units) stays within the queue's delay.
pub const MAX_WEBHOOK_RETRY_UNIT_SECS: u32 = MAX_WEBHOOK_RETRY_DELAY_SECS / 60;
/// Most retries `WEBHOOK_RETRY_DELAYS` may list.
pub const MAX_WEBHOOK_RETRIES: usize = 20;

/// `WEBHOOK_RETRY_DELAYS`: "2,4,8,16,32".
fn parse_retry_delays(value: &str) -> Option<Vec<u32>> {
    let delays: Vec<u32> = value
        .split(',')
        .map(|d| {
            d.trim()
                .parse::<u32>()
                .ok()
                .filter(|&s| s <= MAX_WEBHOOK_RETRY_DELAY_SECS)
        })
        .collect::<Option<_>>()?;
    (1..=MAX_WEBHOOK_RETRIES)
        .contains(&delays.len())
        .then_some(delays)
}
/// The largest candidate budget: past it a search over common words would score most of any
/// index a Worker can search within its CPU time.
pub const MAX_CANDIDATE_BUDGET: u64 = 100_000;
/// Timeouts the operator may set, in whole seconds.
pub const TIMEOUT_RANGE_SECS: std::ops::RangeInclusive<u64> = 1..=600;
/// The longest wait for a webhook receiver. A delivery sent from a request (a Q&A pair added,
/// feedback, a test) runs in its `waitUntil`, which the platform cuts off 30 s after the
/// response; and the webhook queue's consumer sends up to ten of them in turn.
pub const MAX_WEBHOOK_TIMEOUT_SECS: u64 = 25;
pub const DEFAULT_MAX_UPLOAD_BYTES: usize = 20 * 1024 * 1024;
/// Uploads larger than this are refused whatever the variable says: the Worker holds an upload
/// in memory while it stores it.
pub const MAX_UPLOAD_BYTES_CEILING: usize = 100 * 1024 * 1024;
/// How old an R2 object without a record must be before the cron removes it: an upload writes
/// the object before its row, so a young orphan may be an upload in flight.
pub const DEFAULT_ORPHAN_GRACE_SECS: i64 = 60 * 60;
pub use crate::domain::widget::MIN_SECRET_BYTES as MIN_WIDGET_SECRET_BYTES;
/// Requests per window an API key may make by default: ten a second on average, far above
/// any person and most integrations, low enough that one leaked key cannot flood the service.
pub const DEFAULT_API_KEY_RATE_LIMIT: Limit = Limit {
    count: 600,
    window_secs: 60,
};
/// Visitor tokens one client address may mint per window: a visitor needs one per 30 minutes
/// (renewals included), a page of tabs a few; a script rotating visitor ids needs many more.
pub const DEFAULT_VISITOR_TOKEN_RATE_LIMIT: Limit = Limit {
    count: 30,
    window_secs: 60,
};
use crate::domain::api_key::{KEY_RATE_LIMIT_COUNT_RANGE, KEY_RATE_LIMIT_WINDOW_RANGE};
use crate::domain::rate_limit::Limit;
use crate::domain::webhook::retry_schedule;

/// An OpenAI-compatible Chat Completions endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAiEndpoint {
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: String,
}

/// Who serves a model for search by meaning (embeddings or reranking).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SemanticService {
    OpenAi {
        endpoint: OpenAiEndpoint,
        model: String,
    },
    WorkersAi {
        model: String,
    },
}

impl SemanticService {
    pub fn model(&self) -> &str {
        match self {
            SemanticService::OpenAi { model, .. } | SemanticService::WorkersAi { model } => model,
        }
    }

    pub fn provider(&self) -> &'static str {
        match self {
            SemanticService::OpenAi { .. } => "openai",
            SemanticService::WorkersAi { .. } => "workers-ai",
        }
    }
}

/// Search by meaning beside search by words; both `None` when no model is configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Semantic {
    pub embeddings: Option<SemanticService>,
    pub rerank: Option<SemanticService>,
    /// The longest wait for each query-time call (one embedding, one rerank).
    pub timeout: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub admin_token: Option<String>,
    /// `None` when unset or too short to be safe: then no visitor is admitted.
    pub widget_token_secret: Option<String>,
    /// The secret before the last rotation, still accepted for tokens it signed.
    pub widget_token_previous_secret: Option<String>,
    /// Set when `OPENAI_API_KEY` is.
    pub openai: Option<OpenAiEndpoint>,
    /// Whether the `AI` (Workers AI) binding exists.
    pub workers_ai: bool,
    pub private_access: PrivateAccess,
    /// The longest wait for a model's first output and for each next piece.
    pub model_timeout: Duration,
    /// The longest wait for a tool function's endpoint.
    pub tool_timeout: Duration,
    pub max_upload_bytes: usize,
    pub orphan_grace_secs: i64,
    pub semantic: Semantic,
    /// Each API key's requests per window, unless the key has its own.
    pub api_key_rate_limit: Limit,
    /// Visitor tokens per window and client address.
    pub visitor_token_rate_limit: Limit,
    /// The longest wait for a webhook receiver's answer.
    pub webhook_timeout: Duration,
    /// How long one session event stream stays open. Reconnecting checks the caller again, so
    /// a deleted key, a chatbot made private or an expired visitor token loses the stream
    /// within this.
    pub session_events_lifetime: Duration,
    /// How long a session's object keeps an ended answer's events (then it is replayed from
    /// its stored message, and a deleted session's or chatbot's text is gone from the object).
    pub answer_replay: Duration,
    /// Seconds to wait before each retry of a failed webhook delivery.
    pub webhook_retry_delays: Vec<u32>,
    /// About how many chunks one search may score before its rarer words gate the rest.
    pub search_candidate_budget: u64,
}

/// A setting that could not be used as given, and what was used instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub name: &'static str,
    pub reason: String,
    /// What the service uses instead, in words.
    pub fallback: String,
}

impl Default for Config {
    /// The configuration of a Worker with nothing set.
    fn default() -> Self {
        Config::parse(|_| None, false).0
    }
}

impl Config {
    /// Reads every setting through `lookup` (a secret or variable by name; empty counts as
    /// unset). `workers_ai` says whether the `AI` binding exists.
    pub fn parse(
        lookup: impl Fn(&str) -> Option<String>,
        workers_ai: bool,
    ) -> (Config, Vec<Problem>) {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut problems = Vec::new();

        let mut signing_secret = |name: &'static str, fallback: &str| match get(name) {
            Some(secret) if secret.len() < MIN_WIDGET_SECRET_BYTES => {
                problems.push(Problem {
                    name,
                    reason: format!(
                        "is {} bytes long; at least {MIN_WIDGET_SECRET_BYTES} are needed",
                        secret.len()
                    ),
                    fallback: fallback.into(),
                });
                None
            }
            other => other,
        };
        let widget_token_secret =
            signing_secret(names::WIDGET_TOKEN_SECRET, "no site visitor is admitted");
        let widget_token_previous_secret = signing_secret(
            names::WIDGET_TOKEN_SECRET_PREVIOUS,
            "tokens signed before the rotation are refused",
        );

        let openai = get(names::OPENAI_API_KEY).map(|api_key| {
            let base_url = match get(names::OPENAI_BASE_URL) {
                Some(url) if url.starts_with("http://") || url.starts_with("https://") => url,
                Some(url) => {
                    problems.push(Problem {
                        name: names::OPENAI_BASE_URL,
                        reason: format!("{url:?} is not an http(s) URL"),
                        fallback: DEFAULT_OPENAI_BASE_URL.into(),
                    });
                    DEFAULT_OPENAI_BASE_URL.to_string()
                }
                None => DEFAULT_OPENAI_BASE_URL.to_string(),
            };
            OpenAiEndpoint {
                base_url: base_url.trim_end_matches('/').to_string(),
                api_key,
            }
        });

        let allow_private_urls = match get(names::ALLOW_PRIVATE_URLS) {
            None => false,
            Some(v) if v.trim().eq_ignore_ascii_case("true") => true,
            Some(v) if v.trim().eq_ignore_ascii_case("false") => false,
            Some(v) => {
                problems.push(Problem {
                    name: names::ALLOW_PRIVATE_URLS,
                    reason: format!("{v:?} is neither \"true\" nor \"false\""),
                    fallback: "false (private addresses stay closed)".into(),
                });
                false
            }
        };
        let private_access = PrivateAccess::from_settings(
            allow_private_urls,
            &get(names::ALLOW_PRIVATE_HOSTS).unwrap_or_default(),
        );

        let mut seconds_within = |name: &'static str, default: u64, max: u64| -> Duration {
            let low = *TIMEOUT_RANGE_SECS.start();
            let secs = match get(name) {
                None => default,
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(s) if (low..=max).contains(&s) => s,
                    _ => {
                        problems.push(Problem {
                            name,
                            reason: format!(
                                "{v:?} is not a whole number of seconds from {low} to {max}"
                            ),
                            fallback: format!("{default} seconds"),
                        });
                        default
                    }
                },
            };
            Duration::from_secs(secs)
        };
        let mut seconds = |name: &'static str, default: u64| {
            seconds_within(name, default, *TIMEOUT_RANGE_SECS.end())
        };
        let model_timeout = seconds(names::MODEL_TIMEOUT_SECONDS, DEFAULT_MODEL_TIMEOUT_SECS);
        let tool_timeout = seconds(names::TOOL_TIMEOUT_SECONDS, DEFAULT_TOOL_TIMEOUT_SECS);
        let semantic_timeout = seconds(
            names::SEMANTIC_TIMEOUT_SECONDS,
            DEFAULT_SEMANTIC_TIMEOUT_SECS,
        );
        let session_events_lifetime =
            seconds(names::SESSION_EVENTS_SECONDS, DEFAULT_SESSION_EVENTS_SECS);
        let webhook_timeout = seconds_within(
            names::WEBHOOK_TIMEOUT_SECONDS,
            DEFAULT_WEBHOOK_TIMEOUT_SECS,
            MAX_WEBHOOK_TIMEOUT_SECS,
        );

        // A count of `unit`s from 1 to `max`, or `default` (reported) when it is anything else.
        let mut count = |name: &'static str, default: u64, max: u64, unit: &str| -> u64 {
            let Some(v) = get(name) else {
                return default;
            };
            match v.trim().parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => n,
                _ => {
                    problems.push(Problem {
                        name,
                        reason: format!("{v:?} is not a whole number of {unit} from 1 to {max}"),
                        fallback: format!("{default} {unit}"),
                    });
                    default
                }
            }
        };
        let max_upload_bytes = count(
            names::MAX_UPLOAD_BYTES,
            DEFAULT_MAX_UPLOAD_BYTES as u64,
            MAX_UPLOAD_BYTES_CEILING as u64,
            "bytes",
        ) as usize;
        let search_candidate_budget = count(
            names::SEARCH_CANDIDATE_BUDGET,
            CANDIDATE_BUDGET,
            MAX_CANDIDATE_BUDGET,
            "chunks",
        );

        let answer_replay = Duration::from_secs(count(
            names::ANSWER_REPLAY_SECONDS,
            DEFAULT_ANSWER_REPLAY_SECS,
            MAX_ANSWER_REPLAY_SECS,
            "seconds",
        ));

        let orphan_grace_secs = match get(names::ORPHAN_GRACE_SECONDS) {
            None => DEFAULT_ORPHAN_GRACE_SECS,
            Some(v) => match v.trim().parse::<i64>() {
                Ok(n) if n >= 0 => n,
                _ => {
                    problems.push(Problem {
                        name: names::ORPHAN_GRACE_SECONDS,
                        reason: format!("{v:?} is not a whole number of seconds (0 or more)"),
                        fallback: format!("{DEFAULT_ORPHAN_GRACE_SECS} seconds"),
                    });
                    DEFAULT_ORPHAN_GRACE_SECS
                }
            },
        };

        let service =
            |model: Option<String>, workers_ai_default: Option<&str>| match (&openai, model) {
                (Some(endpoint), Some(model)) => Some(SemanticService::OpenAi {
                    endpoint: endpoint.clone(),
                    model,
                }),
                (_, model) if workers_ai => model
                    .or(workers_ai_default.map(str::to_string))
                    .map(|model| SemanticService::WorkersAi { model }),
                _ => None,
            };
        let embeddings_model = get(names::EMBEDDINGS_MODEL).map(|m| m.trim().to_string());
        let rerank_model = get(names::RERANK_MODEL).map(|m| m.trim().to_string());
        for (name, model) in [
            (names::EMBEDDINGS_MODEL, &embeddings_model),
            (names::RERANK_MODEL, &rerank_model),
        ] {
            if model.is_some() && openai.is_none() && !workers_ai {
                problems.push(Problem {
                    name,
                    reason: "is set, but neither OPENAI_API_KEY nor the AI binding is".into(),
                    fallback: "search by words only".into(),
                });
            }
        }
        let semantic = Semantic {
            embeddings: service(
                embeddings_model,
                Some(crate::knowledge::semantic::workers_ai::DEFAULT_EMBEDDINGS_MODEL),
            ),
            rerank: service(rerank_model, None),
            timeout: semantic_timeout,
        };

        let mut limit = |name: &'static str, default: Limit| -> Limit {
            let Some(v) = get(name) else { return default };
            let parsed = v.trim().split_once('/').and_then(|(count, secs)| {
                let count = count.trim().parse::<i64>().ok()?;
                let secs = secs.trim().parse::<i64>().ok()?;
                let within = |x: i64, (lo, hi): (i64, i64)| (lo..=hi).contains(&x);
                (within(count, KEY_RATE_LIMIT_COUNT_RANGE)
                    && within(secs, KEY_RATE_LIMIT_WINDOW_RANGE))
                .then_some(Limit {
                    count: count as u32,
                    window_secs: secs as u32,
                })
            });
            parsed.unwrap_or_else(|| {
                problems.push(Problem {
                    name,
                    reason: format!(
                        "{v:?} is not `count/seconds` with count from {} to {} and seconds from {} to {}",
                        KEY_RATE_LIMIT_COUNT_RANGE.0, KEY_RATE_LIMIT_COUNT_RANGE.1,
                        KEY_RATE_LIMIT_WINDOW_RANGE.0, KEY_RATE_LIMIT_WINDOW_RANGE.1
                    ),
                    fallback: format!("{}/{}", default.count, default.window_secs),
                });
                default
            })
        };
        let api_key_rate_limit = limit(names::API_KEY_RATE_LIMIT, DEFAULT_API_KEY_RATE_LIMIT);
        let visitor_token_rate_limit = limit(
            names::VISITOR_TOKEN_RATE_LIMIT,
            DEFAULT_VISITOR_TOKEN_RATE_LIMIT,
        );
        let webhook_retry_unit_secs = match get(names::WEBHOOK_RETRY_UNIT_SECONDS) {
            None => DEFAULT_WEBHOOK_RETRY_UNIT_SECS,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n <= MAX_WEBHOOK_RETRY_UNIT_SECS => n,
                _ => {
                    problems.push(Problem {
                        name: names::WEBHOOK_RETRY_UNIT_SECONDS,
                        reason: format!(
                            "{v:?} is not a whole number of seconds from 0 to {MAX_WEBHOOK_RETRY_UNIT_SECS}"
                        ),
                        fallback: format!("{DEFAULT_WEBHOOK_RETRY_UNIT_SECS} seconds"),
                    });
                    DEFAULT_WEBHOOK_RETRY_UNIT_SECS
                }
            },
        };
        let webhook_retry_delays = match get(names::WEBHOOK_RETRY_DELAYS) {
            None => retry_schedule(webhook_retry_unit_secs),
            Some(v) => match parse_retry_delays(&v) {
                Some(delays) => delays,
                None => {
                    problems.push(Problem {
                        name: names::WEBHOOK_RETRY_DELAYS,
                        reason: format!(
                            "{v:?} is not a comma-separated list of 1 to {MAX_WEBHOOK_RETRIES} whole numbers of seconds, each at most {MAX_WEBHOOK_RETRY_DELAY_SECS}"
                        ),
                        fallback: "the default schedule".into(),
                    });
                    retry_schedule(webhook_retry_unit_secs)
                }
            },
        };

        let config = Config {
            admin_token: get(names::ADMIN_TOKEN),
            widget_token_secret,
            widget_token_previous_secret,
            openai,
            workers_ai,
            private_access,
            model_timeout,
            tool_timeout,
            max_upload_bytes,
            orphan_grace_secs,
            semantic,
            api_key_rate_limit,
            visitor_token_rate_limit,
            webhook_timeout,
            session_events_lifetime,
            answer_replay,
            webhook_retry_delays,
            search_candidate_budget,
        };
        (config, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> (Config, Vec<Problem>) {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::parse(|name| map.get(name).cloned(), false)
    }

    #[test]
    fn request_limits_read_count_slash_seconds() {
        let (config, problems) = parse(&[
            ("API_KEY_RATE_LIMIT", "5/10"),
            ("VISITOR_TOKEN_RATE_LIMIT", " 3 / 60 "),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            config.api_key_rate_limit,
            Limit {
                count: 5,
                window_secs: 10
            }
        );
        assert_eq!(
            config.visitor_token_rate_limit,
            Limit {
                count: 3,
                window_secs: 60
            }
        );
        for bad in ["5", "0/10", "5/0", "5/3601", "a/b", "100001/1"] {
            let (config, problems) = parse(&[("API_KEY_RATE_LIMIT", bad)]);
            assert_eq!(
                config.api_key_rate_limit, DEFAULT_API_KEY_RATE_LIMIT,
                "{bad}"
            );
            assert_eq!(problems.len(), 1, "{bad}");
        }
    }

    #[test]
    fn webhook_retries_follow_the_schedule_given_or_the_unit() {
        let (config, problems) = parse(&[("WEBHOOK_RETRY_DELAYS", "2, 4,8,16,32")]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.webhook_retry_delays, vec![2, 4, 8, 16, 32]);
        let (config, _) = parse(&[("WEBHOOK_RETRY_UNIT_SECONDS", "0")]);
        assert_eq!(config.webhook_retry_delays, vec![0; 5]);
        for bad in ["2,,4", "-1", "a", "43201", &vec!["1"; 21].join(",")] {
            let (config, problems) = parse(&[("WEBHOOK_RETRY_DELAYS", bad)]);
            assert_eq!(
                config.webhook_retry_delays,
                vec![60, 300, 900, 1800, 3600],
                "{bad}"
            );
            assert_eq!(problems.len(), 1, "{bad}");
        }
    }

    #[test]
    fn nothing_set_gives_the_documented_defaults() {
        let (config, problems) = parse(&[]);
        assert!(problems.is_empty());
        assert_eq!(config.admin_token, None);
        assert_eq!(config.widget_token_secret, None);
        assert_eq!(config.openai, None);
        assert!(!config.workers_ai);
        assert_eq!(config.model_timeout, Duration::from_secs(60));
        assert_eq!(config.tool_timeout, Duration::from_secs(10));
        assert_eq!(config.max_upload_bytes, 20 * 1024 * 1024);
        assert_eq!(config.orphan_grace_secs, 3600);
        assert_eq!(config.webhook_timeout, Duration::from_secs(10));
        assert_eq!(config.session_events_lifetime, Duration::from_secs(300));
        assert_eq!(config.answer_replay, Duration::from_secs(86_400));
        assert_eq!(config.webhook_retry_delays, vec![60, 300, 900, 1800, 3600]);
        assert_eq!(config, Config::default());
    }

    #[test]
    fn good_values_are_taken() {
        let secret = "s".repeat(40);
        let (config, problems) = parse(&[
            ("ADMIN_TOKEN", "adm"),
            ("WIDGET_TOKEN_SECRET", &secret),
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"),
            ("ALLOW_PRIVATE_URLS", "TRUE"),
            ("MODEL_TIMEOUT_SECONDS", " 2 "),
            ("TOOL_TIMEOUT_SECONDS", "600"),
            ("MAX_UPLOAD_BYTES", "1024"),
            ("ORPHAN_GRACE_SECONDS", "0"),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.admin_token.as_deref(), Some("adm"));
        assert_eq!(config.widget_token_secret, Some(secret));
        assert_eq!(
            config.openai,
            Some(OpenAiEndpoint {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: "sk-1".into()
            })
        );
        assert_eq!(config.model_timeout, Duration::from_secs(2));
        assert_eq!(config.tool_timeout, Duration::from_secs(600));
        assert_eq!(config.max_upload_bytes, 1024);
        assert_eq!(config.orphan_grace_secs, 0);
    }

    #[test]
    fn malformed_values_fall_back_and_are_reported_once_each() {
        let (config, problems) = parse(&[
            ("WIDGET_TOKEN_SECRET", "short"),
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_BASE_URL", "ftp://x"),
            ("ALLOW_PRIVATE_URLS", "yes"),
            ("MODEL_TIMEOUT_SECONDS", "0"),
            ("TOOL_TIMEOUT_SECONDS", "ten"),
            ("MAX_UPLOAD_BYTES", "-5"),
            ("ORPHAN_GRACE_SECONDS", "soon"),
            ("WEBHOOK_TIMEOUT_SECONDS", "26"),
        ]);
        let named: Vec<&str> = problems.iter().map(|p| p.name).collect();
        assert_eq!(
            named,
            vec![
                "WIDGET_TOKEN_SECRET",
                "OPENAI_BASE_URL",
                "ALLOW_PRIVATE_URLS",
                "MODEL_TIMEOUT_SECONDS",
                "TOOL_TIMEOUT_SECONDS",
                "WEBHOOK_TIMEOUT_SECONDS",
                "MAX_UPLOAD_BYTES",
                "ORPHAN_GRACE_SECONDS"
            ]
        );
        assert_eq!(config.widget_token_secret, None);
        assert_eq!(
            config.openai.map(|o| o.base_url).as_deref(),
            Some(DEFAULT_OPENAI_BASE_URL)
        );
        assert_eq!(config.model_timeout, Duration::from_secs(60));
        assert_eq!(config.tool_timeout, Duration::from_secs(10));
        assert_eq!(config.max_upload_bytes, DEFAULT_MAX_UPLOAD_BYTES);
        assert_eq!(config.orphan_grace_secs, DEFAULT_ORPHAN_GRACE_SECS);
        assert_eq!(config.webhook_timeout, Duration::from_secs(10));
        assert!(problems
            .iter()
            .all(|p| !p.reason.is_empty() && !p.fallback.is_empty()));
    }

    #[test]
    fn search_by_meaning_follows_the_configured_provider() {
        let (config, _) = parse(&[]);
        assert_eq!(config.semantic.embeddings, None);
        assert_eq!(config.semantic.rerank, None);
        assert_eq!(config.semantic.timeout, Duration::from_secs(5));

        // An OpenAI-compatible server embeds only when a model is named.
        let (config, _) = parse(&[("OPENAI_API_KEY", "k")]);
        assert_eq!(config.semantic.embeddings, None);
        let (config, problems) = parse(&[
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("EMBEDDINGS_MODEL", "nomic-embed-text"),
            ("RERANK_MODEL", "bge-reranker"),
            ("SEMANTIC_TIMEOUT_SECONDS", "2"),
        ]);
        assert!(problems.is_empty());
        let embeddings = config.semantic.embeddings.unwrap();
        assert_eq!(embeddings.model(), "nomic-embed-text");
        assert_eq!(embeddings.provider(), "openai");
        assert_eq!(config.semantic.rerank.unwrap().model(), "bge-reranker");
        assert_eq!(config.semantic.timeout, Duration::from_secs(2));

        // Workers AI embeds by default; reranks only when asked.
        let (config, _) = Config::parse(|_| None, true);
        assert_eq!(
            config.semantic.embeddings,
            Some(SemanticService::WorkersAi {
                model: "@cf/baai/bge-m3".into()
            })
        );
        assert_eq!(config.semantic.rerank, None);

        // A model with nobody to serve it is reported.
        let (config, problems) = parse(&[("EMBEDDINGS_MODEL", "m")]);
        assert_eq!(config.semantic.embeddings, None);
        assert_eq!(problems[0].name, "EMBEDDINGS_MODEL");
    }

    #[test]
    fn search_candidate_budget_is_a_count_within_bounds() {
        assert_eq!(Config::default().search_candidate_budget, CANDIDATE_BUDGET);
        let (config, problems) = parse(&[("SEARCH_CANDIDATE_BUDGET", " 3 ")]);
        assert!(problems.is_empty());
        assert_eq!(config.search_candidate_budget, 3);
        for bad in ["0", "-5", "many", "100001"] {
            let (config, problems) = parse(&[("SEARCH_CANDIDATE_BUDGET", bad)]);
            assert_eq!(config.search_candidate_budget, CANDIDATE_BUDGET, "{bad}");
            assert_eq!(problems[0].name, "SEARCH_CANDIDATE_BUDGET", "{bad}");
        }
    }

    #[test]
    fn empty_values_count_as_unset() {
        let (config, problems) = parse(&[("OPENAI_API_KEY", "  "), ("MODEL_TIMEOUT_SECONDS", "")]);
        assert!(problems.is_empty());
        assert_eq!(config.openai, None);
        assert_eq!(config.model_timeout, Duration::from_secs(60));
    }
}
