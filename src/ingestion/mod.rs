//! Reading sources after the create call has answered (`waitUntil`): a web page is fetched, an
//! upload's text extracted, then chunked and indexed. A source ends in `success`, or in `error`
//! with the reason in its meta; the scheduled handler fails any source whose reader was cut off.

pub mod maintenance;

use crate::platform::log;
use crate::platform::outbound::{self, Limits, Outgoing};
use crate::storage::Store;
use crate::webhooks;
use edgechat_core::api::error::ApiResult;
use edgechat_core::config::Config;
use edgechat_core::domain::data_source::{DataSource, Status};
use edgechat_core::domain::webhook::Event;
use edgechat_core::knowledge::extract::ExtractError;
use edgechat_core::knowledge::ingest::{detect_page, extract, prepare, DocKind};
use edgechat_core::time;
use serde_json::Value;
use std::time::Duration;
use worker::{Env, Method};

/// Web pages: 15 s, 5 MiB, 5 redirects.
pub const PAGE_LIMITS: Limits = Limits {
    timeout: Duration::from_secs(15),
    max_bytes: 5 * 1024 * 1024,
    max_redirects: 5,
};

/// How long a source may sit in `await` or `running` before it counts as interrupted.
pub const STALE_AFTER_SECS: i64 = 15 * 60;

/// Indexes what was read, or records why nothing could be; the source as it ended.
async fn finish(
    store: &Store,
    mut source: DataSource,
    result: Result<(DocKind, Vec<u8>), String>,
) -> ApiResult<DataSource> {
    let outcome = result
        .and_then(|(kind, bytes)| extract(kind, &bytes).map_err(|ExtractError(reason)| reason));
    let now = time::now();
    match outcome {
        Ok(extracted) => {
            let prepared = prepare(extracted);
            if let Some(title) = prepared.title.filter(|_| source.title_from_document()) {
                source.title = title;
            }
            source.tokens = prepared.tokens as i64;
            source.meta.remove("error");
            source.status = Status::Success;
            source.modified_at = now;
            store.finish_source(&source, &prepared.chunks).await?;
        }
        Err(reason) => {
            source.meta.insert("error".into(), Value::String(reason));
            store.fail_source(&source.uuid, &source.meta, &now).await?;
            source.status = Status::Error;
            source.modified_at = now;
        }
    }
    Ok(source)
}

/// Tells webhooks that a source is ready (`success`) or failed (`error`).
async fn announce(env: &Env, source: &DataSource) {
    let event = if source.status == Status::Success {
        Event::SourceReady
    } else {
        Event::SourceFailed
    };
    webhooks::notify(
        env.clone(),
        source.chatbot_uuid.clone(),
        event,
        source.to_json(&[]),
    )
    .await;
}

/// Fetches a web-page source and indexes it, replacing any earlier text.
pub async fn read_link(env: Env, config: Config, source: DataSource) {
    let source_uuid = source.uuid.clone();
    let result = async {
        let store = Store::new(&env)?;
        if !store.claim_source(&source.uuid, &time::now()).await? {
            return Ok(());
        }
        let url = source.url().unwrap_or_default().to_string();
        let fetched = outbound::fetch(
            Outgoing {
                method: Method::Get,
                url: &url,
                headers: vec![(
                    "Accept".into(),
                    "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5".into(),
                )],
                body: None,
            },
            &config.private_access,
            PAGE_LIMITS,
        )
        .await;
        let page = fetched.and_then(|f| {
            if !(200..300).contains(&f.status) {
                return Err(format!("The page answered HTTP {}.", f.status));
            }
            let path = url::Url::parse(&f.url)
                .map(|u| u.path().to_string())
                .unwrap_or_default();
            let kind = detect_page(f.content_type.as_deref(), &path, &f.body).ok_or_else(|| {
                format!(
                    "The page's content type ({}) is not one this service reads.",
                    f.content_type.as_deref().unwrap_or("unknown")
                )
            })?;
            Ok((kind, f.body))
        });
        let source = finish(&store, source, page).await?;
        announce(&env, &source).await;
        Ok(())
    }
    .await;
    if let Err(err) = result {
        log::background_failure("reading a web page source", &source_uuid, &err);
    }
}

/// Extracts and indexes an upload whose original is already in R2.
pub async fn read_upload(env: Env, source: DataSource, kind: DocKind, bytes: Vec<u8>) {
    let source_uuid = source.uuid.clone();
    let result = async {
        let store = Store::new(&env)?;
        if !store.claim_source(&source.uuid, &time::now()).await? {
            return Ok(());
        }
        let source = finish(&store, source, Ok((kind, bytes))).await?;
        announce(&env, &source).await;
        Ok(())
    }
    .await;
    if let Err(err) = result {
        log::background_failure("reading an uploaded source", &source_uuid, &err);
    }
}
