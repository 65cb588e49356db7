//! The steps that read one source: fetch a web page, extract an upload from R2, chunk and
//! index one staged slice. Each stays within the call budget whatever the source's size, and
//! running it twice leaves what running it once did.

use super::{crawl, enqueue, Subrequests, PAGE_LIMITS};
use crate::handlers::new_uuid;
use crate::platform::files;
use crate::platform::outbound::{self, Outgoing};
use crate::storage::{NewMarks, PageLeft, PageMarks, Store};
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::Config;
use edgechat_core::domain::api_key::sha256_hex;
use edgechat_core::domain::data_source::{DataSource, SourceType, Status};
use edgechat_core::knowledge::chunk::{ChunkOptions, LayoutSlice};
use edgechat_core::knowledge::crawl::urls::{normalize, page_identity};
use edgechat_core::knowledge::crawl::USER_AGENT;
use edgechat_core::knowledge::encoding::unread_charset;
use edgechat_core::knowledge::extract::ExtractError;
use edgechat_core::knowledge::ingest::{
    begin_reading, detect_page, detect_upload, read_document, DocKind, Reading,
};
use edgechat_core::knowledge::steps::{
    slice_target, split_by_size, unmark_checked, SliceStep, StagedChunk, Step,
    DRAFT_STATEMENT_BYTES, MAX_SLICES, SLICE_POSITION_BITS,
};
use edgechat_core::time;
use serde_json::{json, Value};
use worker::{Env, Method};

/// What a step came to: done (whatever it found), or worth another try later, and why.
pub enum Outcome {
    Done,
    Retry(String),
}

/// What every step works with.
pub struct StepEnv<'a> {
    pub env: &'a Env,
    pub config: &'a Config,
    pub store: &'a Store,
    pub sent: &'a Subrequests,
}

/// Marks a source failed for good, keeping any text it had (a failed re-read keeps the old).
async fn fail(ctx: &StepEnv<'_>, source: DataSource, reason: String) -> ApiResult<Outcome> {
    fail_as(ctx, source, reason, false).await
}

/// `fail`, and with `withdraw` (a page its site took down: 404, 410) its text leaves the
/// index too (`Store::fail_source`).
async fn fail_as(
    ctx: &StepEnv<'_>,
    mut source: DataSource,
    reason: String,
    withdraw: bool,
) -> ApiResult<Outcome> {
    source.meta.insert("error".into(), Value::String(reason));
    source.meta.remove("resumed");
    let now = time::now();
    ctx.store
        .fail_source(&source.uuid, &source.meta, &now, withdraw)
        .await?;
    if withdraw {
        source.tokens = 0;
    }
    source.status = Status::Error;
    source.modified_at = now;
    super::source_ended(ctx.env, ctx.config, ctx.store, &source, ctx.sent).await?;
    Ok(Outcome::Done)
}

pub async fn fetch_page(ctx: &StepEnv<'_>, uuid: &str, recheck: bool) -> ApiResult<Outcome> {
    let now = time::now();
    let Some((mut source, marks)) = ctx.store.source_for_step(uuid, &now, !recheck).await? else {
        return Ok(Outcome::Done);
    };
    if source.source_type != SourceType::Link {
        return Ok(Outcome::Done);
    }
    // A re-read marked the page checked as it was queued; until it answers, it was not, and a
    // failure below must not say it was.
    if recheck && matches!(source.status, Status::Success | Status::Error) {
        unmark_checked(&mut source.meta, marks.checked_before.as_deref());
    }
    let url = source.url().unwrap_or_default().to_string();
    let scope = crawl::PageScope::of(&marks);
    // A crawled page is read only while the site's robots.txt, as last read, allows it: one
    // forbidden since leaves the crawl, counted as robots.txt's.
    if let (Some(crawl_uuid), Some(scope)) = (marks.crawl_uuid.as_deref(), &scope) {
        if !scope.robots_allow(&url) {
            ctx.store
                .remove_crawl_page(crawl_uuid, &source.uuid, PageLeft::Forbidden)
                .await?;
            return Ok(Outcome::Done);
        }
    }
    let mut headers = vec![
        (
            "Accept".to_string(),
            "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5".to_string(),
        ),
        ("User-Agent".to_string(), format!("{USER_AGENT}/1.0")),
    ];
    // A re-sync asks whether the page changed since the text it has; anything else reads it
    // afresh.
    let conditional = recheck && source.status == Status::Success && marks.page_hash.is_some();
    if conditional {
        if let Some(etag) = &marks.etag {
            headers.push(("If-None-Match".into(), etag.clone()));
        }
        if let Some(modified) = &marks.last_modified {
            headers.push(("If-Modified-Since".into(), modified.clone()));
        }
    }
    let fetched = outbound::fetch_scoped(
        Outgoing {
            method: Method::Get,
            url: &url,
            headers,
            body: None,
        },
        &ctx.config.private_access,
        PAGE_LIMITS,
        &|next| scope.as_ref().map_or(Ok(()), |scope| scope.redirect(next)),
    )
    .await;
    ctx.sent.add(fetched.as_ref().map_or(1, |f| f.requests));
    let page = match fetched {
        Err(e) if e.transient => return Ok(Outcome::Retry(e.reason)),
        Err(e) if e.out_of_scope => {
            let crawl_uuid = marks.crawl_uuid.as_deref().unwrap_or_default();
            crawl::redirected_out(ctx, crawl_uuid, &source.uuid, &url, &e.reason).await?;
            return Ok(Outcome::Done);
        }
        Err(e) => return fail(ctx, source, e.reason).await,
        Ok(page) => page,
    };
    match page.status {
        304 if conditional => return Ok(Outcome::Done),
        404 | 410 if marks.crawl_uuid.is_some() => {
            let crawl_uuid = marks.crawl_uuid.as_deref().unwrap_or_default();
            ctx.store
                .remove_crawl_page(crawl_uuid, &source.uuid, PageLeft::Gone)
                .await?;
            crawl::start_page_gone(ctx, crawl_uuid, &url, page.status).await?;
            return Ok(Outcome::Done);
        }
        404 | 410 => {
            // Only a page read before has text in the index to take out.
            let reason = if source.tokens > 0 {
                format!(
                    "The page answered HTTP {}: its text was taken out of the index.",
                    page.status
                )
            } else {
                format!(
                    "The page answered HTTP {}: there is nothing to read.",
                    page.status
                )
            };
            return fail_as(ctx, source, reason, true).await;
        }
        429 | 500..=599 => {
            return Ok(Outcome::Retry(format!(
                "The page answered HTTP {}.",
                page.status
            )))
        }
        200..=299 => {}
        other => return fail(ctx, source, format!("The page answered HTTP {other}.")).await,
    }
    // A crawled page is the page its redirects land on: stored under that address, so a link
    // straight to it finds it held, and dropped when the chatbot holds that page already.
    if let Some(crawl_uuid) = marks.crawl_uuid.as_deref() {
        let asked = url::Url::parse(&url).ok().and_then(|u| normalize(&u));
        let landed = url::Url::parse(&page.url).ok().and_then(|u| normalize(&u));
        if let Some(landed) = landed.filter(|l| Some(l) != asked.as_ref()) {
            let moved = ctx
                .store
                .move_crawl_page(&source.uuid, landed.as_str(), &page_identity(&landed))
                .await?;
            if !moved {
                ctx.store
                    .remove_crawl_page(crawl_uuid, &source.uuid, PageLeft::Gone)
                    .await?;
                return Ok(Outcome::Done);
            }
            source.meta.insert("url".into(), json!(landed.as_str()));
        }
    }
    let path = url::Url::parse(&page.url)
        .map(|u| u.path().to_string())
        .unwrap_or_default();
    let Some(kind) = detect_page(page.content_type.as_deref(), &path, &page.body) else {
        let reason = format!(
            "The page's content type ({}) is not one this service reads.",
            page.content_type.as_deref().unwrap_or("unknown")
        );
        return fail(ctx, source, reason).await;
    };
    if kind == DocKind::Html {
        if let Some(crawl_uuid) = &marks.crawl_uuid {
            crawl::follow_links(ctx, crawl_uuid, &marks, &page.url, &page.body).await?;
        }
    }
    if let Some(ExtractError(reason)) = unread_charset(page.content_type.as_deref(), &page.body) {
        return fail(ctx, source, reason).await;
    }
    let document = match read_document(kind, page.body) {
        Ok(d) => d,
        Err(ExtractError(reason)) => return fail(ctx, source, reason).await,
    };
    let reading = begin_reading(document);
    let page_hash = sha256_hex(reading.chunks.text().as_bytes());
    // The text is what is indexed already: nothing to write, unless the page is in `error`
    // since (it recovered: the record says so again) or only its title changed.
    let retitled =
        source.title_from_document() && reading.title.as_ref().is_some_and(|t| *t != source.title);
    if recheck
        && marks.page_hash.as_deref() == Some(page_hash.as_str())
        && source.status == Status::Success
        && !retitled
    {
        return Ok(Outcome::Done);
    }
    let validators = NewMarks {
        etag: page.etag,
        last_modified: page.last_modified,
        page_hash: Some(page_hash),
    };
    finish(ctx, source, &marks, reading, validators).await
}

/// `inline`: the step promised to read the file in one step (`Step::reads_inline`); a reading
/// too long for that is handed to a step that may stage it.
pub async fn extract_file(ctx: &StepEnv<'_>, uuid: &str, inline: bool) -> ApiResult<Outcome> {
    let now = time::now();
    let Some((source, marks)) = ctx.store.source_for_step(uuid, &now, true).await? else {
        return Ok(Outcome::Done);
    };
    let Some(key) = source.object_key.clone() else {
        return fail(
            ctx,
            source,
            "This source has no stored file to read.".into(),
        )
        .await;
    };
    ctx.sent.add(1);
    let Some(bytes) = files::get(ctx.env, &key).await? else {
        return fail(ctx, source, "The stored file is missing.".into()).await;
    };
    let declared = source
        .meta
        .get("content_type")
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(kind) = detect_upload(&source.file_name, declared.as_deref(), &bytes) else {
        return fail(ctx, source, "This file type is not supported.".into()).await;
    };
    // The bytes go into the reading and are let go there: the file is never in memory twice.
    let document = match read_document(kind, bytes) {
        Ok(d) => d,
        Err(ExtractError(reason)) => return fail(ctx, source, reason).await,
    };
    let reading = begin_reading(document);
    if inline && reading.is_staged() {
        let step = Step::ExtractFile {
            source: source.uuid,
            file_bytes: None,
        };
        enqueue(ctx.env, vec![step], ctx.sent).await?;
        return Ok(Outcome::Done);
    }
    finish(ctx, source, &marks, reading, NewMarks::default()).await
}

/// Indexes a reading: in this step when it is small, else staged in slices of its layout for
/// steps of their own to chunk and write, so a large reading never holds all its chunks and no
/// step does all of its chunking.
async fn finish(
    ctx: &StepEnv<'_>,
    mut source: DataSource,
    marks: &PageMarks,
    mut reading: Reading,
    validators: NewMarks,
) -> ApiResult<Outcome> {
    let now = time::now();
    let title = reading
        .title
        .take()
        .filter(|_| source.title_from_document());
    if reading.is_staged() {
        stage(ctx, &source, reading, title, validators.page_hash).await?;
        return Ok(Outcome::Done);
    }
    let first = reading.chunks.next_slice(usize::MAX);
    drop(reading.chunks);
    if let Some(title) = title {
        source.title = title;
    }
    source.tokens = reading.tokens as i64;
    source.meta.remove("error");
    source.meta.remove("resumed");
    if source.source_type == SourceType::Link {
        source.meta.insert("last_checked_at".into(), json!(now));
        // A re-scrape re-indexes the page whatever it holds; it changed only if its text did.
        let unchanged = marks.page_hash.is_some() && marks.page_hash == validators.page_hash;
        if !unchanged || !source.meta.contains_key("last_changed_at") {
            source.meta.insert("last_changed_at".into(), json!(now));
        }
        source
            .meta
            .insert("refresh".into(), json!(marks.refresh().as_str()));
    }
    source.status = Status::Success;
    source.modified_at = now;
    ctx.store
        .finish_reading(&source, first, &validators)
        .await?;
    super::source_ended(ctx.env, ctx.config, ctx.store, &source, ctx.sent).await?;
    Ok(Outcome::Done)
}

/// Writes a large reading's layout to R2 in slices and queues a step for each. The run is
/// named first, so slices of an earlier attempt at this reading can no longer be swapped in.
async fn stage(
    ctx: &StepEnv<'_>,
    source: &DataSource,
    mut reading: Reading,
    title: Option<String>,
    page_hash: Option<String>,
) -> ApiResult<()> {
    let run = new_uuid();
    ctx.store.begin_run(&source.uuid, &run).await?;
    let target = slice_target(reading.chunks.text().len());
    let mut slices = 0u32;
    loop {
        // The last slice the budget allows takes whatever is left.
        let max = if slices as usize + 1 >= MAX_SLICES {
            usize::MAX
        } else {
            target
        };
        let Some(slice) = reading.chunks.next_layout_slice(max) else {
            break;
        };
        let body = serde_json::to_vec(&slice)?;
        drop(slice);
        let key = files::staging_key(&source.chatbot_uuid, &source.uuid, &run, slices);
        ctx.sent.add(1);
        files::put(ctx.env, &key, body, "application/json", "slice.json").await?;
        slices += 1;
    }
    let tokens = reading.tokens as i64;
    drop(reading);
    let steps = (0..slices)
        .map(|i| {
            Step::IndexSlice(SliceStep {
                source: source.uuid.clone(),
                chatbot: source.chatbot_uuid.clone(),
                run: run.clone(),
                slice: i,
                slices,
                tokens,
                title: title.clone(),
                page_hash: page_hash.clone(),
            })
        })
        .collect();
    enqueue(ctx.env, steps, ctx.sent).await
}

pub async fn index_slice(ctx: &StepEnv<'_>, step: &SliceStep) -> ApiResult<Outcome> {
    let key = files::staging_key(&step.chatbot, &step.source, &step.run, step.slice);
    ctx.sent.add(1);
    // Gone: the run was swapped in already (this is a repeat) or the source was deleted.
    let Some(bytes) = files::get(ctx.env, &key).await? else {
        return Ok(Outcome::Done);
    };
    let layout: LayoutSlice = serde_json::from_slice(&bytes)?;
    drop(bytes);
    // Numbered after the slices before it; the swap numbers the whole reading from 0.
    let first = step.slice << SLICE_POSITION_BITS;
    let chunks: Vec<StagedChunk> = layout
        .chunks(&ChunkOptions::default())
        .into_iter()
        .map(|chunk| {
            let mut staged = StagedChunk::from(chunk);
            staged.position += first;
            staged.index_pairs();
            staged
        })
        .collect();
    drop(layout);
    let parts = split_by_size(&chunks, DRAFT_STATEMENT_BYTES, usize::MAX)
        .into_iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    let written = ctx.store.write_slice(step, &parts).await?;
    if written == i64::from(step.slices) {
        ctx.store.swap_run(step, &time::now()).await?;
        let keys = (0..step.slices)
            .map(|i| files::staging_key(&step.chatbot, &step.source, &step.run, i))
            .collect();
        ctx.sent.add(1);
        files::delete(ctx.env, keys).await?;
        if let Some((source, _)) = ctx
            .store
            .source_for_step(&step.source, &time::now(), false)
            .await?
        {
            super::source_ended(ctx.env, ctx.config, ctx.store, &source, ctx.sent).await?;
        }
    }
    Ok(Outcome::Done)
}
