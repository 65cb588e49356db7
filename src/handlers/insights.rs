//! What an owner reads about a chatbot as a whole: analytics, the questions its sources could
//! not answer, a session's transcript, and an export of every message.

use super::feedback::query_param;
use super::owned_chatbot;
use super::sessions::{owned_session, time_range_params};
use crate::app::http::json_response;
use crate::app::Call;
use crate::platform::log;
use crate::platform::stream::StreamSink;
use crate::storage::{Store, EARLIEST, LATEST};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::session::Message;
use edgechat_core::insights::{
    csv_line, csv_row, group_unanswered, jsonl_row, transcript, CSV_COLUMNS,
};
use serde_json::Value;
use worker::{Headers, Response};

/// Messages read per page of an export.
pub const EXPORT_PAGE: usize = 500;

/// `?start_timestamp=&end_timestamp=`, both inclusive; an open end reaches as far as there is.
fn time_range(call: &Call) -> ApiResult<(String, String)> {
    let (start, end) = time_range_params(call)?;
    Ok((
        start.unwrap_or_else(|| EARLIEST.to_string()),
        end.unwrap_or_else(|| LATEST.to_string()),
    ))
}

async fn owned_chatbot_param(call: &Call) -> ApiResult<String> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    Ok(chatbot_uuid)
}

/// `GET /chatbot/{uuid}/analytics?start_timestamp&end_timestamp`
pub async fn analytics(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = owned_chatbot_param(&call).await?;
    let (start, end) = time_range(&call)?;
    let mut report = call.store.analytics(&chatbot_uuid, &start, &end).await?;
    if let Some(fields) = report.as_object_mut() {
        fields.insert("start_timestamp".into(), Value::String(start));
        fields.insert("end_timestamp".into(), Value::String(end));
    }
    json_response(&report)
}

/// `GET /chatbot/{uuid}/unanswered?start_timestamp&end_timestamp`: similar questions the
/// sources could not answer, grouped, most frequent first.
pub async fn unanswered(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = owned_chatbot_param(&call).await?;
    let (start, end) = time_range(&call)?;
    let questions = call
        .store
        .unanswered_questions(&chatbot_uuid, &start, &end)
        .await?;
    let groups = group_unanswered(&questions);
    json_response(&Value::Array(groups.iter().map(|g| g.to_json()).collect()))
}

/// `GET /session/{uuid}/messages/plain-text`: the conversation as a person reads it.
pub async fn transcript_text(call: Call) -> ApiResult<Response> {
    let session = owned_session(&call).await?;
    let messages = call.store.list_messages(&session.uuid).await?;
    let headers = Headers::new();
    headers.set("Content-Type", "text/plain; charset=utf-8")?;
    Ok(Response::builder()
        .with_headers(headers)
        .fixed(transcript(&session, &messages).into_bytes()))
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Jsonl,
    Csv,
}

impl Format {
    fn row(self, m: &Message) -> String {
        match self {
            Format::Jsonl => jsonl_row(m),
            Format::Csv => csv_row(m),
        }
    }
}

/// `GET /chatbot/{uuid}/export?format=jsonl|csv&start_timestamp&end_timestamp`: every message
/// in the range, oldest first, streamed one page at a time so no export is held in memory.
pub async fn export(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = owned_chatbot_param(&call).await?;
    let format = match query_param(&call, "format")?.as_deref() {
        None | Some("jsonl") => Format::Jsonl,
        Some("csv") => Format::Csv,
        Some(_) => {
            return Err(ApiError::invalid(
                "format",
                "`format` must be jsonl or csv.",
            ))
        }
    };
    let (start, end) = time_range(&call)?;
    // The first page is read before answering, so a failing database is a proper error.
    let first = call
        .store
        .export_page(&chatbot_uuid, &start, &end, None, EXPORT_PAGE)
        .await?;
    let (sink, readable) = StreamSink::new().map_err(ApiError::internal)?;
    let headers = Headers::new();
    let (content_type, extension) = match format {
        Format::Jsonl => ("application/x-ndjson; charset=utf-8", "jsonl"),
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
    };
    headers.set("Content-Type", content_type)?;
    headers.set(
        "Content-Disposition",
        &format!("attachment; filename=\"chatbot-{chatbot_uuid}.{extension}\""),
    )?;
    headers.set("Cache-Control", "no-store")?;
    headers.set("Content-Encoding", "identity")?;
    let store = Store::new(&call.env)?;
    call.ctx.wait_until(async move {
        match write_export(&store, &sink, format, &chatbot_uuid, &start, &end, first).await {
            Ok(()) => sink.close().await,
            // The status went out long ago: a clean end would pass the rows so far off as
            // the whole export.
            Err(err) => {
                log::background_failure("streaming an export", &chatbot_uuid, &err);
                sink.abort().await;
            }
        }
    });
    Ok(Response::builder()
        .with_status(200)
        .with_headers(headers)
        .stream(readable))
}

async fn write_export(
    store: &Store,
    sink: &StreamSink,
    format: Format,
    chatbot_uuid: &str,
    start: &str,
    end: &str,
    first: Vec<Message>,
) -> ApiResult<()> {
    if format == Format::Csv && sink.write_str(&csv_line(CSV_COLUMNS)).await.is_err() {
        return Ok(());
    }
    let mut page = first;
    loop {
        let mut text = String::new();
        for m in &page {
            text.push_str(&format.row(m));
        }
        if sink.write_str(&text).await.is_err() {
            // The client left; nothing more to send.
            return Ok(());
        }
        let Some(last) = page.last().filter(|_| page.len() == EXPORT_PAGE) else {
            return Ok(());
        };
        let after = (last.created_at.clone(), last.started_ms, last.uuid.clone());
        page = store
            .export_page(
                chatbot_uuid,
                start,
                end,
                Some((&after.0, after.1, &after.2)),
                EXPORT_PAGE,
            )
            .await?;
    }
}
