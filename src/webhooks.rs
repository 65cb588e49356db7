//! Webhook deliveries: when something happens in a chatbot, each of its enabled webhooks that
//! subscribed to the event gets a signed POST. A delivery is recorded first, then tried at
//! once; a failed attempt waits in the `edgechat-webhooks` queue for its next try, on the
//! schedule in `edgechat_core::domain::webhook`, until it is delivered or marked failed.
//!
//! All of it runs after the response (`waitUntil`) or in the queue consumer: sending never
//! delays or fails the request that caused it, and every failure is logged, not raised.

use crate::platform::config;
use crate::platform::log;
use crate::platform::outbound::{self, Limits, Outgoing};
use crate::storage::{DeliveryRow, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::config::{bindings, Config};
use edgechat_core::domain::webhook::{
    payload, retry_delay_secs, signature, DeliveryStatus, Event, Webhook, DELIVERY_HEADER,
    EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use edgechat_core::time;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker::{Env, MessageBatch, MessageBuilder, MessageExt, Method};

/// What waits in the queue: the delivery, and which attempt is due (so a message the queue
/// hands over twice is sent once).
#[derive(Serialize, Deserialize)]
struct Due {
    delivery: String,
    attempt: i64,
}

/// The most of a receiver's answer that is read (it is not kept).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

fn limits(config: &Config) -> Limits {
    Limits {
        timeout: config.webhook_timeout,
        max_bytes: MAX_ANSWER_BYTES,
        // A receiver answers where it was asked; a redirect counts as a failed attempt.
        max_redirects: 0,
    }
}

/// Tells every enabled webhook of `chatbot_uuid` that subscribed to `event`. Failures are
/// logged; this never fails its caller.
pub async fn notify(env: Env, chatbot_uuid: String, event: Event, data: Value) {
    let result = async {
        let store = Store::new(&env)?;
        let webhooks = store.webhooks_for_event(&chatbot_uuid, event).await?;
        if webhooks.is_empty() {
            return Ok(());
        }
        let config = config::read(&env);
        let now = time::now();
        let deliveries: Vec<(DeliveryRow, Webhook)> = webhooks
            .into_iter()
            .map(|webhook| {
                let uuid = crate::handlers::new_uuid();
                let body = payload(&uuid, event, &now, &chatbot_uuid, data.clone());
                (
                    DeliveryRow::new(uuid, webhook.uuid.clone(), event, body, &now),
                    webhook,
                )
            })
            .collect();
        let rows: Vec<DeliveryRow> = deliveries.iter().map(|(d, _)| d.clone()).collect();
        store.insert_deliveries(&rows).await?;
        let attempts = deliveries
            .into_iter()
            .map(|(delivery, webhook)| attempt_logged(&env, &config, &store, delivery, webhook));
        futures::future::join_all(attempts).await;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = result {
        log::background_failure(
            &format!("sending the {} webhook event", event.as_str()),
            &chatbot_uuid,
            &err,
        );
    }
}

/// Like [`notify`], for callers held to a per-invocation budget of D1 calls and subrequests
/// (the ingestion steps): the deliveries are recorded on `store` and their first attempts
/// queued on the webhook queue in one send, so however many webhooks there are it costs two
/// D1 calls and one subrequest. Returns the subrequests it made. Failures are logged; this
/// never fails its caller.
pub async fn notify_queued(
    env: &Env,
    store: &Store,
    chatbot_uuid: &str,
    event: Event,
    data: Value,
) -> u32 {
    let mut sent = 0;
    let result = async {
        let webhooks = store.webhooks_for_event(chatbot_uuid, event).await?;
        if webhooks.is_empty() {
            return Ok(());
        }
        let now = time::now();
        let rows: Vec<DeliveryRow> = webhooks
            .iter()
            .map(|webhook| {
                let uuid = crate::handlers::new_uuid();
                let body = payload(&uuid, event, &now, chatbot_uuid, data.clone());
                DeliveryRow::new(uuid, webhook.uuid.clone(), event, body, &now)
            })
            .collect();
        store.insert_deliveries(&rows).await?;
        let due: Vec<Due> = rows
            .iter()
            .map(|d| Due {
                delivery: d.uuid().to_string(),
                attempt: 1,
            })
            .collect();
        sent += 1;
        env.queue(bindings::WEBHOOK_QUEUE)?.send_batch(due).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = result {
        log::background_failure(
            &format!("queueing the {} webhook event", event.as_str()),
            chatbot_uuid,
            &err,
        );
    }
    sent
}

/// Records a `webhook.test` delivery to `webhook` and returns it; the attempt is made by the
/// future also returned, which the caller runs after its response.
pub fn test_delivery(
    env: Env,
    webhook: Webhook,
) -> (DeliveryRow, impl std::future::Future<Output = ()>) {
    let now = time::now();
    let uuid = crate::handlers::new_uuid();
    let data = serde_json::json!({
        "webhook_uuid": webhook.uuid,
        "message": "A test event, sent because someone asked for one.",
    });
    let body = payload(&uuid, Event::WebhookTest, &now, &webhook.chatbot_uuid, data);
    let delivery = DeliveryRow::new(uuid, webhook.uuid.clone(), Event::WebhookTest, body, &now);
    let pending = delivery.clone();
    let send = async move {
        let result = async {
            let store = Store::new(&env)?;
            let config = config::read(&env);
            attempt(&env, &config, &store, pending, webhook).await
        }
        .await;
        if let Err(err) = result {
            log::background_failure("sending a webhook test", "", &err);
        }
    };
    (delivery, send)
}

async fn attempt_logged(
    env: &Env,
    config: &Config,
    store: &Store,
    delivery: DeliveryRow,
    webhook: Webhook,
) {
    let uuid = delivery.uuid().to_string();
    if let Err(err) = attempt(env, config, store, delivery, webhook).await {
        log::background_failure("delivering a webhook event", &uuid, &err);
    }
}

/// Sends one attempt of `delivery` and records how it went; a failure that may be retried is
/// queued for its next attempt.
async fn attempt(
    env: &Env,
    config: &Config,
    store: &Store,
    mut delivery: DeliveryRow,
    webhook: Webhook,
) -> ApiResult<()> {
    if !webhook.enabled {
        // Nothing is sent, so no attempt is counted.
        delivery.give_up("The webhook was disabled.", &time::now());
        return store.update_delivery(&delivery).await;
    }
    let (code, error) = send(config, &webhook, &delivery).await;
    let attempts = delivery.attempts() + 1;
    let now_ms = time::now_ms();
    let now = time::now();
    if error.is_none() {
        delivery.record_attempt(DeliveryStatus::Delivered, code, None, None, &now);
        return store.update_delivery(&delivery).await;
    }
    let delay = u32::try_from(attempts)
        .ok()
        .and_then(|n| retry_delay_secs(n, &config.webhook_retry_delays));
    let Some(delay) = delay else {
        delivery.record_attempt(DeliveryStatus::Failed, code, error, None, &now);
        return store.update_delivery(&delivery).await;
    };
    let next_at = Some(time::format_ms(now_ms + i64::from(delay) * 1000));
    delivery.record_attempt(DeliveryStatus::Pending, code, error, next_at, &now);
    store.update_delivery(&delivery).await?;
    let due = Due {
        delivery: delivery.uuid().to_string(),
        attempt: attempts + 1,
    };
    let queued = async {
        env.queue(bindings::WEBHOOK_QUEUE)?
            .send(MessageBuilder::new(due).delay_seconds(delay).build())
            .await
    }
    .await;
    if let Err(err) = queued {
        delivery.record_attempt(
            DeliveryStatus::Failed,
            code,
            Some("The next attempt could not be queued.".into()),
            None,
            &time::now(),
        );
        store.update_delivery(&delivery).await?;
        return Err(ApiError::internal(format!(
            "queueing a webhook retry failed: {err}"
        )));
    }
    Ok(())
}

/// One signed POST; the answer's status code, and the failure in words (none when the
/// receiver answered 2xx).
async fn send(
    config: &Config,
    webhook: &Webhook,
    delivery: &DeliveryRow,
) -> (Option<u16>, Option<String>) {
    let timestamp = time::now_ms().div_euclid(1000);
    let headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("User-Agent".to_string(), "edgechat-webhooks/1".to_string()),
        (
            EVENT_HEADER.to_string(),
            delivery.event().as_str().to_string(),
        ),
        (DELIVERY_HEADER.to_string(), delivery.uuid().to_string()),
        (TIMESTAMP_HEADER.to_string(), timestamp.to_string()),
        (
            SIGNATURE_HEADER.to_string(),
            signature(&webhook.secret, timestamp, delivery.body()),
        ),
    ];
    let result = outbound::fetch_classified(
        Outgoing {
            method: Method::Post,
            url: &webhook.url,
            headers,
            body: Some(delivery.body().to_string()),
        },
        &config.private_access,
        limits(config),
    )
    .await;
    match result {
        Ok(answer) if (200..300).contains(&answer.status) => (Some(answer.status), None),
        Ok(answer) => (
            Some(answer.status),
            Some(format!("The receiver answered HTTP {}.", answer.status)),
        ),
        // A redirect is answered but not followed: what it answered is kept.
        Err(failure) => (failure.status, Some(failure.reason)),
    }
}

/// Queues again the attempts of deliveries left `pending` past `cutoff` (their queue message
/// lost, or a first attempt cut off with the request that made it), for the scheduled
/// handler; how many. The attempt number keeps one that does arrive late from being sent
/// twice.
pub async fn resume_overdue(env: &Env, store: &Store, cutoff: &str, now: &str) -> ApiResult<usize> {
    let overdue = store.take_overdue_deliveries(cutoff, now, 100).await?;
    if !overdue.is_empty() {
        let due: Vec<_> = overdue
            .iter()
            .map(|(delivery, attempts)| {
                MessageBuilder::new(Due {
                    delivery: delivery.clone(),
                    attempt: attempts + 1,
                })
                .build()
            })
            .collect();
        env.queue(bindings::WEBHOOK_QUEUE)?.send_batch(due).await?;
    }
    Ok(overdue.len())
}

/// The queue consumer: each message is one due attempt.
pub async fn consume(batch: MessageBatch<Value>, env: Env) -> worker::Result<()> {
    let config = config::read(&env);
    let store = Store::new(&env).map_err(|e| worker::Error::RustError(e.to_string()))?;
    for message in batch.messages()? {
        let due: Due = match serde_json::from_value(message.body().clone()) {
            Ok(due) => due,
            Err(err) => {
                log::background_failure(
                    "reading a queued webhook delivery",
                    "",
                    &ApiError::internal(format!("unreadable queue message: {err}")),
                );
                message.ack();
                continue;
            }
        };
        match run_due(&env, &config, &store, &due).await {
            Ok(()) => message.ack(),
            Err(err) => {
                log::background_failure("retrying a webhook delivery", &due.delivery, &err);
                message.retry();
            }
        }
    }
    Ok(())
}

async fn run_due(env: &Env, config: &Config, store: &Store, due: &Due) -> ApiResult<()> {
    // Deleted with its webhook, settled already, or an attempt made before: nothing to do.
    let Some((delivery, webhook)) = store.delivery_with_webhook(&due.delivery).await? else {
        return Ok(());
    };
    if delivery.status() != DeliveryStatus::Pending || delivery.attempts() + 1 != due.attempt {
        return Ok(());
    }
    attempt(env, config, store, delivery, webhook).await
}
