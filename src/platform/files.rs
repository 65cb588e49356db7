//! Uploaded originals in R2, under keys derived from the chatbot and the source, so everything
//! a chatbot owns can also be found by prefix.

use edgechat_core::api::error::ApiResult;
use edgechat_core::config::bindings;
use std::collections::HashMap;
use worker::{Bucket, Env, HttpMetadata};

pub fn chatbot_prefix(chatbot_uuid: &str) -> String {
    format!("chatbots/{chatbot_uuid}/")
}

pub fn object_key(chatbot_uuid: &str, source_uuid: &str) -> String {
    format!("{}sources/{source_uuid}", chatbot_prefix(chatbot_uuid))
}

/// Where slice `slice` of a large reading waits between the step that read the source and
/// the step that indexes it.
pub fn staging_key(chatbot_uuid: &str, source_uuid: &str, run: &str, slice: u32) -> String {
    format!(
        "{}staging/{source_uuid}/{run}/{slice}",
        chatbot_prefix(chatbot_uuid)
    )
}

fn bucket(env: &Env) -> ApiResult<Bucket> {
    Ok(env.bucket(bindings::FILES)?)
}

pub async fn put(
    env: &Env,
    key: &str,
    bytes: Vec<u8>,
    content_type: &str,
    file_name: &str,
) -> ApiResult<()> {
    let metadata = HashMap::from([("file_name".to_string(), file_name.to_string())]);
    bucket(env)?
        .put(key, bytes)
        .http_metadata(HttpMetadata {
            content_type: Some(content_type.to_string()),
            ..HttpMetadata::default()
        })
        .custom_metadata(metadata)
        .execute()
        .await?;
    Ok(())
}

pub async fn get(env: &Env, key: &str) -> ApiResult<Option<Vec<u8>>> {
    match bucket(env)?.get(key).execute().await? {
        Some(object) => Ok(Some(
            object
                .body()
                .map(|b| b.bytes())
                .ok_or_else(|| {
                    edgechat_core::api::error::ApiError::internal("R2 object without a body")
                })?
                .await?,
        )),
        None => Ok(None),
    }
}

pub async fn delete(env: &Env, keys: Vec<String>) -> ApiResult<()> {
    if keys.is_empty() {
        return Ok(());
    }
    bucket(env)?.delete_multiple(keys).await?;
    Ok(())
}

/// Every key under `prefix`, page by page.
pub async fn list(env: &Env, prefix: &str) -> ApiResult<Vec<String>> {
    Ok(list_with_age(env, prefix)
        .await?
        .into_iter()
        .map(|(key, _)| key)
        .collect())
}

/// Every key under `prefix` with its upload time (ms since the epoch).
/// Up to `pages` pages (of 1000) of the objects under `prefix` after the key `after`, with
/// when each was stored (ms), and the last key listed when more follow.
pub async fn list_part_with_age(
    env: &Env,
    prefix: &str,
    after: Option<&str>,
    pages: usize,
) -> ApiResult<(Vec<(String, i64)>, Option<String>)> {
    let bucket = bucket(env)?;
    let mut keys: Vec<(String, i64)> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..pages {
        let mut listing = bucket.list().prefix(prefix).limit(1000);
        listing = match (cursor.take(), after) {
            (Some(c), _) => listing.cursor(c),
            (None, Some(key)) => listing.start_after(key),
            (None, None) => listing,
        };
        let page = listing.execute().await?;
        keys.extend(
            page.objects()
                .iter()
                .map(|o| (o.key(), o.uploaded().as_millis() as i64)),
        );
        match page.cursor() {
            Some(next) if page.truncated() => cursor = Some(next),
            _ => return Ok((keys, None)),
        }
    }
    let last = keys.last().map(|(key, _)| key.clone());
    Ok((keys, last))
}

pub async fn list_with_age(env: &Env, prefix: &str) -> ApiResult<Vec<(String, i64)>> {
    Ok(list_part_with_age(env, prefix, None, usize::MAX).await?.0)
}

pub async fn delete_prefix(env: &Env, prefix: &str) -> ApiResult<()> {
    let keys = list(env, prefix).await?;
    for batch in keys.chunks(1000) {
        delete(env, batch.to_vec()).await?;
    }
    Ok(())
}
