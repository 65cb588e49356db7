use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::ingestion::{self, vectors};
use crate::platform::files;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::api_key::sha256_hex;
use edgechat_core::domain::crawl::{refresh_from_body, source_update_from_body};
use edgechat_core::domain::data_source::{
    qa_from_body, upload_file_name, upload_meta, url_from_body, uuid_list, DataSource, SourceType,
    Status,
};
use edgechat_core::knowledge::crawl::urls::page_identity;
use edgechat_core::knowledge::ingest::{detect_upload, qa_chunks, ACCEPTED_EXTENSIONS};
use edgechat_core::knowledge::steps::{Refresh, Step};
use edgechat_core::knowledge::tokens::estimate_tokens;
use edgechat_core::knowledge::url_guard::check_url;
use edgechat_core::time;
use serde_json::{json, Map, Value};
use worker::{FormEntry, Response};

/// Room for the multipart framing and the `meta_json` field around the file itself.
const MULTIPART_OVERHEAD: usize = 64 * 1024;

pub(super) fn new_source(
    chatbot_uuid: &str,
    source_type: SourceType,
    title: String,
    meta: Map<String, Value>,
) -> DataSource {
    let now = time::now();
    DataSource {
        uuid: new_uuid(),
        chatbot_uuid: chatbot_uuid.to_string(),
        source_type,
        title,
        file_name: String::new(),
        file_size: 0,
        tokens: 0,
        status: Status::Await,
        meta,
        object_key: None,
        created_at: now.clone(),
        modified_at: now,
    }
}

async fn source_json(call: &Call, source: &DataSource) -> ApiResult<Response> {
    let tags = call
        .store
        .tags_of_sources(std::slice::from_ref(&source.uuid))
        .await?;
    json_response(&source.to_json(tags.get(&source.uuid).map(Vec::as_slice).unwrap_or(&[])))
}

async fn owned_source(call: &Call) -> ApiResult<DataSource> {
    let uuid = call.uuid_param(0, "data source")?;
    call.store
        .get_source(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("data source"))
}

/// The caller's sources named in `uuids`; any missing or foreign one makes the whole call 404,
/// so nothing is half done.
async fn owned_sources(call: &Call, uuids: &[String]) -> ApiResult<Vec<DataSource>> {
    let sources = call.store.get_sources(call.account()?, uuids).await?;
    if let Some(missing) = uuids
        .iter()
        .find(|u| !sources.iter().any(|s| &s.uuid == *u))
    {
        return Err(ApiError::NotFound(format!(
            "No data source with uuid {missing} exists."
        )));
    }
    Ok(sources)
}

pub async fn create_qa(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let qa = qa_from_body(&body)?;
    let mut meta = Map::new();
    meta.insert("question".into(), json!(qa.question));
    meta.insert("answer".into(), json!(qa.answer));
    let mut source = new_source(&chatbot_uuid, SourceType::Qa, qa.question.clone(), meta);
    // A Q&A pair is short and already text: it is indexed in the same batch that stores it.
    let chunks = qa_chunks(&qa.question, &qa.answer);
    source.tokens = estimate_tokens(&format!("{}\n{}", qa.question, qa.answer)) as i64;
    source.status = Status::Success;
    // The same pair twice (a form sent twice) is one source, as the same file twice is.
    let content_hash = sha256_hex(format!("qa\n{}\n{}", qa.question, qa.answer).as_bytes());
    call.store
        .insert_source(&source, Some(&content_hash), chunks)
        .await?;
    call.log.record(&source.uuid);
    // Ready as it is stored: webhooks hear of it now, as they do when a reading ends.
    call.ctx.wait_until(crate::webhooks::notify(
        call.env.clone(),
        chatbot_uuid.clone(),
        edgechat_core::domain::webhook::Event::SourceReady,
        source.to_json(&[]),
    ));
    vectors::sync_later(&call.ctx, &call.env, &call.config);
    // A new source has no tags yet.
    json_response(&source.to_json(&[]))
}

pub async fn create_url(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let raw = url_from_body(&body)?;
    let url = check_url(&raw, &call.config.private_access)
        .map_err(|reason| ApiError::invalid("url", reason))?;
    let refresh = refresh_from_body(&body)?.unwrap_or(Refresh::Never);
    let mut meta = Map::new();
    meta.insert("url".into(), json!(url.as_str()));
    meta.insert("refresh".into(), json!(refresh.as_str()));
    let source = new_source(&chatbot_uuid, SourceType::Link, url.to_string(), meta);
    let next_check = refresh.next_after(&source.created_at);
    // The page's identity stands where an upload's bytes' hash does: the same page twice in
    // one chatbot is refused as the same file twice is.
    call.store
        .insert_page_source(
            &source,
            &page_identity(&url),
            refresh,
            next_check.as_deref(),
        )
        .await?;
    call.log.record(&source.uuid);
    ingestion::start(
        &call.env,
        Step::FetchPage {
            source: source.uuid.clone(),
            recheck: false,
        },
    )
    .await?;
    // A new source has no tags yet.
    json_response(&source.to_json(&[]))
}

fn too_large(limit: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "The file is larger than the {} MiB limit.",
        limit as f64 / (1024.0 * 1024.0)
    ))
}

pub async fn upload(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let limit = call.config.max_upload_bytes;
    let content_type = call.req.headers().get("Content-Type")?.unwrap_or_default();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("multipart/form-data")
    {
        return Err(ApiError::UnsupportedMediaType(
            "Uploads are multipart/form-data with the file in the `file` field.".into(),
        ));
    }
    let declared = call
        .req
        .headers()
        .get("Content-Length")?
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit + MULTIPART_OVERHEAD) {
        return Err(too_large(limit));
    }
    let form = call
        .req
        .form_data()
        .await
        .map_err(|_| ApiError::invalid_request("The multipart body could not be read."))?;
    let meta = upload_meta(meta_json_part(&form).await?.as_deref())?;
    let mut parts = form.get_all("file").unwrap_or_default();
    if parts.len() > 1 {
        return Err(ApiError::invalid(
            "file",
            "Send one `file` per upload; each file is a source of its own.",
        ));
    }
    let file = match parts.pop() {
        Some(FormEntry::File(file)) => file,
        Some(FormEntry::Field(_)) => {
            return Err(ApiError::invalid(
                "file",
                // The runtime's form reader takes a part as a file by its `filename` alone;
                // one named only by RFC 5987's `filename*` arrives as a text field.
                "`file` must be a file: its part needs a `filename` (`filename*` alone is not \
                 read).",
            ));
        }
        None => return Err(ApiError::invalid("file", "`file` is required.")),
    };
    if file.size() > limit {
        return Err(too_large(limit));
    }
    let bytes = file.bytes().await?;
    if bytes.is_empty() {
        return Err(ApiError::invalid("file", "The file is empty."));
    }
    let file_name = upload_file_name(&file.name())?;
    let declared_type = Some(file.type_()).filter(|t| !t.is_empty());
    let kind = detect_upload(&file_name, declared_type.as_deref(), &bytes).ok_or_else(|| {
        ApiError::UnsupportedMediaType(format!(
            "This file type is not supported; send one of {ACCEPTED_EXTENSIONS}."
        ))
    })?;
    let content_hash = sha256_hex(&bytes);
    let media_type = kind.media_type_of(&bytes);

    let mut source = new_source(&chatbot_uuid, SourceType::File, file_name.clone(), meta);
    source.meta.insert("content_type".into(), json!(media_type));
    source.file_name = file_name.clone();
    source.file_size = bytes.len() as i64;
    let key = files::object_key(&chatbot_uuid, &source.uuid);
    source.object_key = Some(key.clone());
    // The original is stored first: a source record never points at a missing file.
    files::put(&call.env, &key, bytes, media_type, &file_name).await?;
    if let Err(err) = call
        .store
        .insert_source(&source, Some(&content_hash), Vec::new())
        .await
    {
        files::delete(&call.env, vec![key]).await?;
        return Err(err);
    }
    // The consumer reads the original back from R2: the upload's bytes end with this request.
    ingestion::start(
        &call.env,
        Step::ExtractFile {
            source: source.uuid.clone(),
            file_bytes: Some(source.file_size as u64),
        },
    )
    .await?;
    // A new source has no tags yet.
    json_response(&source.to_json(&[]))
}

/// The upload's `meta_json` part as text. Common HTTP clients send a JSON value as a file part
/// (`curl -F meta_json=@meta.json`, a `files=` entry in Python's requests), so its bytes are
/// read as the text field would be rather than passed over.
async fn meta_json_part(form: &worker::FormData) -> ApiResult<Option<String>> {
    let mut parts = form.get_all("meta_json").unwrap_or_default();
    if parts.len() > 1 {
        return Err(ApiError::invalid(
            "meta_json",
            "Send `meta_json` once per upload.",
        ));
    }
    match parts.pop() {
        None => Ok(None),
        Some(FormEntry::Field(text)) => Ok(Some(text)),
        Some(FormEntry::File(file)) => {
            let bytes = file.bytes().await?;
            String::from_utf8(bytes).map(Some).map_err(|_| {
                ApiError::invalid("meta_json", "`meta_json` must be UTF-8 text holding JSON.")
            })
        }
    }
}

pub async fn get(call: Call) -> ApiResult<Response> {
    let source = owned_source(&call).await?;
    source_json(&call, &source).await
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let sources = call.store.list_sources(&chatbot_uuid).await?;
    let uuids: Vec<String> = sources.iter().map(|s| s.uuid.clone()).collect();
    let tags = call.store.tags_of_sources(&uuids).await?;
    let records = sources
        .iter()
        .map(|s| s.to_json(tags.get(&s.uuid).map(Vec::as_slice).unwrap_or(&[])))
        .collect();
    json_response(&Value::Array(records))
}

/// Sets a source's title and, for a single web page, how often it is read again (a crawl's
/// pages follow their crawl's setting).
pub async fn retitle(mut call: Call) -> ApiResult<Response> {
    let mut source = owned_source(&call).await?;
    let body = call.json_body().await?;
    let update = source_update_from_body(&body)?;
    let now = time::now();
    if let Some(refresh) = update.refresh {
        if source.source_type != SourceType::Link {
            return Err(ApiError::invalid(
                "refresh",
                "Only a web-page source is read again: a file or a Q&A pair has no `refresh`.",
            ));
        }
        if let Some(crawl_uuid) = source.meta.get("crawl_uuid").and_then(Value::as_str) {
            return Err(ApiError::invalid(
                "refresh",
                format!(
                    "A crawl's pages are read again when their crawl is: set `refresh` on the \
                     crawl (POST /api/v1/crawl/{crawl_uuid}/update)."
                ),
            ));
        }
        source
            .meta
            .insert("refresh".into(), json!(refresh.as_str()));
    }
    let next_check = update.refresh.and_then(|r| r.next_after(&now));
    call.store
        .set_source_settings(
            &source.uuid,
            update.title.as_deref(),
            update.refresh.map(|r| (r, next_check.as_deref())),
            &now,
        )
        .await?;
    if let Some(title) = update.title {
        source.title = title;
    }
    source.modified_at = now;
    source_json(&call, &source).await
}

async fn delete_all(call: &Call, sources: &[DataSource]) -> ApiResult<()> {
    let uuids: Vec<String> = sources.iter().map(|s| s.uuid.clone()).collect();
    call.store.delete_sources(&uuids).await?;
    vectors::sync_later(&call.ctx, &call.env, &call.config);
    // After the rows: an interrupted delete leaves an orphan object (found by the scheduled
    // sweep), never a record pointing at nothing.
    let keys: Vec<String> = sources
        .iter()
        .filter_map(|s| s.object_key.clone())
        .collect();
    files::delete(&call.env, keys).await
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let source = owned_source(&call).await?;
    delete_all(&call, &[source]).await?;
    success_response()
}

pub async fn delete_many(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let uuids = uuid_list(&body, "uuids")?;
    let sources = owned_sources(&call, &uuids).await?;
    delete_all(&call, &sources).await?;
    success_response()
}

pub async fn rescrape(mut call: Call) -> ApiResult<Response> {
    let body = call.json_body().await?;
    let uuids = uuid_list(&body, "uuids")?;
    let sources = owned_sources(&call, &uuids).await?;
    if let Some(not_link) = sources.iter().find(|s| s.source_type != SourceType::Link) {
        return Err(ApiError::invalid(
            "uuids",
            format!(
                "Only web-page sources can be re-scraped; {} is a {} source.",
                not_link.uuid,
                not_link.source_type.as_str()
            ),
        ));
    }
    let now = time::now();
    let mut records = Vec::with_capacity(sources.len());
    let mut steps = Vec::new();
    // One already being read is left to finish; it reads the page afresh anyway.
    let named: Vec<String> = sources.iter().map(|s| s.uuid.clone()).collect();
    let queued = call.store.queue_sources(&named, &now).await?;
    for mut source in sources {
        if queued.contains(&source.uuid) {
            source.status = Status::Await;
            source.modified_at = now.clone();
            steps.push(Step::FetchPage {
                source: source.uuid.clone(),
                recheck: false,
            });
        }
        records.push(source);
    }
    ingestion::enqueue(&call.env, steps, &ingestion::Subrequests::default()).await?;
    let uuids: Vec<String> = records.iter().map(|s| s.uuid.clone()).collect();
    let tags = call.store.tags_of_sources(&uuids).await?;
    let records: Vec<Value> = records
        .iter()
        .map(|s| s.to_json(tags.get(&s.uuid).map(Vec::as_slice).unwrap_or(&[])))
        .collect();
    json_response(&json!({ "success": true, "data_sources": records }))
}
