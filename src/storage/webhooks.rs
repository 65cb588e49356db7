use super::table::{table, Sql};
use super::{batch_rows, flag, Arg, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::domain::webhook::{
    events_from_json, events_to_json, DeliveryStatus, Event, Webhook, LISTED_DELIVERIES,
};
use serde_json::{json, Value};

table! {
    pub(super) struct WebhookRow in WEBHOOKS = "webhooks" {
        key uuid: String,
        fixed chatbot_uuid: String,
        set url: String,
        set events_json: String,
        set description: String,
        set enabled: i64,
        set secret: String,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl From<&Webhook> for WebhookRow {
    fn from(w: &Webhook) -> Self {
        WebhookRow {
            uuid: w.uuid.clone(),
            chatbot_uuid: w.chatbot_uuid.clone(),
            url: w.url.clone(),
            events_json: events_to_json(&w.events),
            description: w.description.clone(),
            enabled: flag(w.enabled),
            secret: w.secret.clone(),
            created_at: w.created_at.clone(),
            modified_at: w.modified_at.clone(),
        }
    }
}

impl From<WebhookRow> for Webhook {
    fn from(r: WebhookRow) -> Self {
        Webhook {
            events: events_from_json(&r.events_json),
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            url: r.url,
            description: r.description,
            enabled: r.enabled != 0,
            secret: r.secret,
            created_at: r.created_at,
            modified_at: r.modified_at,
        }
    }
}

table! {
    /// One event sent to one webhook.
    #[derive(Clone)]
    pub struct DeliveryRow in WEBHOOK_DELIVERIES = "webhook_deliveries" {
        key uuid: String,
        fixed webhook_uuid: String,
        fixed event: Event,
        fixed body: String,
        set status: DeliveryStatus,
        set attempts: i64,
        set response_code: Option<i64>,
        set last_error: Option<String>,
        set next_retry_at: Option<String>,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl DeliveryRow {
    pub fn new(uuid: String, webhook_uuid: String, event: Event, body: String, now: &str) -> Self {
        DeliveryRow {
            uuid,
            webhook_uuid,
            event,
            body,
            status: DeliveryStatus::Pending,
            attempts: 0,
            response_code: None,
            last_error: None,
            next_retry_at: None,
            created_at: now.to_string(),
            modified_at: now.to_string(),
        }
    }

    pub fn uuid(&self) -> &str {
        &self.uuid
    }

    pub fn event(&self) -> Event {
        self.event
    }

    pub fn body(&self) -> &str {
        &self.body
    }

    pub fn attempts(&self) -> i64 {
        self.attempts
    }

    pub fn status(&self) -> DeliveryStatus {
        self.status
    }

    /// Records one attempt: its answer's status code (none when it never answered), the
    /// failure in words, and when the next attempt is due (none when this one settled it).
    pub fn record_attempt(
        &mut self,
        status: DeliveryStatus,
        response_code: Option<u16>,
        error: Option<String>,
        next_retry_at: Option<String>,
        now: &str,
    ) {
        self.attempts += 1;
        self.status = status;
        self.response_code = response_code.map(i64::from);
        self.last_error = error;
        self.next_retry_at = next_retry_at;
        self.modified_at = now.to_string();
    }

    /// Ends the delivery as failed without another attempt (its webhook was disabled): what
    /// the attempts so far got stays, beside why it ended.
    pub fn give_up(&mut self, reason: &str, now: &str) {
        self.status = DeliveryStatus::Failed;
        self.last_error = Some(match &self.last_error {
            Some(last) => format!("{reason} Last attempt: {last}"),
            None => reason.to_string(),
        });
        self.next_retry_at = None;
        self.modified_at = now.to_string();
    }

    pub fn to_json(&self) -> Value {
        json!({
            "uuid": self.uuid,
            "webhook_uuid": self.webhook_uuid,
            "event": self.event.as_str(),
            "status": self.status.as_str(),
            "attempts": self.attempts,
            "response_code": self.response_code,
            "error": self.last_error,
            "next_retry_at": self.next_retry_at,
            "created_at": self.created_at,
            "modified_at": self.modified_at,
        })
    }
}

impl Store {
    pub async fn insert_webhook(&self, w: &Webhook) -> ApiResult<()> {
        let row = WebhookRow::from(w);
        let insert = Sql::insert(&row, Vec::new());
        self.execute(insert.text(), insert.args()).await.map(|_| ())
    }

    /// Writes what `after` changed of `before` (`Sql::update_changed`).
    pub async fn update_webhook(&self, before: &Webhook, after: &Webhook) -> ApiResult<()> {
        let was = WebhookRow::from(before);
        let row = WebhookRow::from(after);
        let patches = Sql::json_patches(&was, &row);
        let update = Sql::update_changed(&was, &row, &patches);
        self.execute(update.text(), update.args()).await.map(|_| ())
    }

    /// A webhook, if its chatbot belongs to `account_uuid`.
    pub async fn get_webhook(&self, account_uuid: &str, uuid: &str) -> ApiResult<Option<Webhook>> {
        let row: Option<WebhookRow> = self
            .row(
                &format!(
                    "SELECT {} FROM webhooks w JOIN chatbots c ON c.uuid = w.chatbot_uuid \
                     WHERE w.uuid = ?1 AND c.account_uuid = ?2",
                    WEBHOOKS.select("w")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        Ok(row.map(Webhook::from))
    }

    /// A chatbot's webhooks, oldest first.
    pub async fn list_webhooks(&self, chatbot_uuid: &str) -> ApiResult<Vec<Webhook>> {
        let rows: Vec<WebhookRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM webhooks w WHERE w.chatbot_uuid = ?1 ORDER BY w.created_at, w.rowid",
                    WEBHOOKS.select("w")
                ),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        Ok(rows.into_iter().map(Webhook::from).collect())
    }

    /// The enabled webhooks of a chatbot that subscribed to `event`.
    pub async fn webhooks_for_event(
        &self,
        chatbot_uuid: &str,
        event: Event,
    ) -> ApiResult<Vec<Webhook>> {
        let rows: Vec<WebhookRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM webhooks w WHERE w.chatbot_uuid = ?1 AND w.enabled = 1 \
                     AND EXISTS (SELECT 1 FROM json_each(w.events_json) e WHERE e.value = ?2)",
                    WEBHOOKS.select("w")
                ),
                &[Arg::Text(chatbot_uuid), Arg::Text(event.as_str())],
            )
            .await?;
        Ok(rows.into_iter().map(Webhook::from).collect())
    }

    pub async fn delete_webhook(&self, uuid: &str) -> ApiResult<bool> {
        Ok(self
            .execute("DELETE FROM webhooks WHERE uuid = ?1", &[Arg::Text(uuid)])
            .await?
            > 0)
    }

    pub async fn insert_deliveries(&self, rows: &[DeliveryRow]) -> ApiResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        // A chatbot with many webhooks needs more parameters than one statement binds. A
        // webhook deleted since it was read gets no delivery.
        let statements = rows
            .chunks(Sql::rows_per_insert::<DeliveryRow>())
            .map(|group| {
                self.prepare(&Sql::insert_rows_with_parent(
                    group,
                    "webhook_uuid",
                    "webhooks",
                ))
            })
            .collect::<ApiResult<Vec<_>>>()?;
        self.batch(statements, || {
            edgechat_core::api::error::ApiError::internal("a webhook delivery was recorded twice")
        })
        .await
        .map(|_| ())
    }

    pub async fn update_delivery(&self, row: &DeliveryRow) -> ApiResult<()> {
        let update = Sql::update(row);
        self.execute(update.text(), update.args()).await.map(|_| ())
    }

    /// Deliveries still `pending` whose attempt was due before `cutoff` (at most `limit`, the
    /// longest overdue first), as (uuid, attempts made): their queued attempt never came. Each
    /// is marked due `now`, so the next run asks again only if this attempt is lost too.
    pub async fn take_overdue_deliveries(
        &self,
        cutoff: &str,
        now: &str,
        limit: i64,
    ) -> ApiResult<Vec<(String, i64)>> {
        #[derive(serde::Deserialize)]
        struct Overdue {
            uuid: String,
            attempts: i64,
        }
        let rows: Vec<Overdue> = self
            .rows(
                "UPDATE webhook_deliveries SET next_retry_at = ?2 WHERE uuid IN \
                 (SELECT uuid FROM webhook_deliveries WHERE status = 'pending' \
                 AND coalesce(next_retry_at, modified_at) < ?1 \
                 ORDER BY coalesce(next_retry_at, modified_at) LIMIT ?3) \
                 RETURNING uuid, attempts",
                &[Arg::Text(cutoff), Arg::Text(now), Arg::Int(limit)],
            )
            .await?;
        Ok(rows.into_iter().map(|r| (r.uuid, r.attempts)).collect())
    }

    /// A delivery and the webhook it goes to (none when either was deleted since).
    pub async fn delivery_with_webhook(
        &self,
        uuid: &str,
    ) -> ApiResult<Option<(DeliveryRow, Webhook)>> {
        let results = self
            .read_batch(vec![
                self.statement(
                    &format!(
                        "SELECT {} FROM webhook_deliveries d WHERE d.uuid = ?1",
                        WEBHOOK_DELIVERIES.select("d")
                    ),
                    &[Arg::Text(uuid)],
                )?,
                self.statement(
                    &format!(
                        "SELECT {} FROM webhooks w WHERE w.uuid = \
                         (SELECT webhook_uuid FROM webhook_deliveries WHERE uuid = ?1)",
                        WEBHOOKS.select("w")
                    ),
                    &[Arg::Text(uuid)],
                )?,
            ])
            .await?;
        let delivery = batch_rows::<DeliveryRow>(&results, 0)?.into_iter().next();
        let webhook = batch_rows::<WebhookRow>(&results, 1)?.into_iter().next();
        Ok(delivery.zip(webhook.map(Webhook::from)))
    }

    /// A webhook's newest deliveries, newest first.
    pub async fn list_deliveries(&self, webhook_uuid: &str) -> ApiResult<Vec<DeliveryRow>> {
        self.rows(
            &format!(
                "SELECT {} FROM webhook_deliveries d WHERE d.webhook_uuid = ?1 \
                 ORDER BY d.created_at DESC, d.rowid DESC LIMIT ?2",
                WEBHOOK_DELIVERIES.select("d")
            ),
            &[Arg::Text(webhook_uuid), Arg::Int(LISTED_DELIVERIES as i64)],
        )
        .await
    }
}
