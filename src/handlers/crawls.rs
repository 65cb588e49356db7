use super::{new_uuid, owned_chatbot};
use crate::app::http::{json_response, success_response};
use crate::app::Call;
use crate::ingestion;
use crate::storage::Crawl;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::crawl::{crawl_from_body, crawl_update_from_body};
use edgechat_core::knowledge::crawl::urls::normalize;
use edgechat_core::knowledge::steps::Step;
use edgechat_core::knowledge::url_guard::check_url;
use edgechat_core::time;
use serde_json::Value;
use worker::Response;

async fn owned_crawl(call: &Call) -> ApiResult<Crawl> {
    let uuid = call.uuid_param(0, "crawl")?;
    call.store
        .get_crawl(call.account()?, &uuid)
        .await?
        .ok_or_else(|| ApiError::not_found("crawl"))
}

async fn crawl_json(call: &Call, crawl: &Crawl) -> ApiResult<Response> {
    let progress = call.store.crawl_progress(&crawl.uuid).await?;
    json_response(&crawl.to_json(&progress))
}

pub async fn create(mut call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let body = call.json_body().await?;
    let request = crawl_from_body(&body)?;
    let url = check_url(&request.url, &call.config.private_access)
        .map_err(|reason| ApiError::invalid("url", reason))?;
    let url = normalize(&url).ok_or_else(|| {
        ApiError::invalid("url", "The crawl must start at an http or https page.")
    })?;
    let now = time::now();
    let crawl = Crawl {
        uuid: new_uuid(),
        chatbot_uuid,
        url: url.to_string(),
        max_pages: i64::from(request.max_pages),
        max_depth: i64::from(request.max_depth),
        include: request.include,
        exclude: request.exclude,
        refresh: request.refresh,
        robots_json: "{}".into(),
        error: None,
        next_sync_at: request.refresh.next_after(&now),
        last_synced_at: None,
        created_at: now.clone(),
        modified_at: now,
    };
    call.store.insert_crawl(&crawl).await?;
    call.log.record(&crawl.uuid);
    ingestion::start(
        &call.env,
        Step::CrawlStart {
            crawl: crawl.uuid.clone(),
            resync: false,
        },
    )
    .await?;
    crawl_json(&call, &crawl).await
}

pub async fn get(call: Call) -> ApiResult<Response> {
    let crawl = owned_crawl(&call).await?;
    crawl_json(&call, &crawl).await
}

pub async fn list(call: Call) -> ApiResult<Response> {
    let chatbot_uuid = call.uuid_param(0, "chatbot")?;
    owned_chatbot(&call.store, call.account()?, &chatbot_uuid).await?;
    let crawls = call.store.list_crawls(&chatbot_uuid).await?;
    json_response(&Value::Array(
        crawls.iter().map(|(c, p)| c.to_json(p)).collect(),
    ))
}

/// `POST /crawl/{uuid}/sync`: reads the site again now: robots.txt and sitemaps (new pages
/// are added) and every page, asked for conditionally. A crawl still reading is a 409: a
/// second pass at once would only ask for every page twice.
pub async fn sync(call: Call) -> ApiResult<Response> {
    let crawl = owned_crawl(&call).await?;
    let progress = call.store.crawl_progress(&crawl.uuid).await?;
    if crawl.status(&progress) == "running" {
        return Err(ApiError::Conflict(
            "This crawl is still reading its site; sync it again once it is done.".into(),
        ));
    }
    ingestion::start(
        &call.env,
        Step::CrawlStart {
            crawl: crawl.uuid.clone(),
            resync: true,
        },
    )
    .await?;
    let mut started = crawl.to_json(&progress);
    started["status"] = Value::from("running");
    json_response(&started)
}

/// `POST /crawl/{uuid}/update {refresh}`: how often the crawl reads its site again, counted
/// from now.
pub async fn update(mut call: Call) -> ApiResult<Response> {
    let mut crawl = owned_crawl(&call).await?;
    let body = call.json_body().await?;
    let refresh = crawl_update_from_body(&body)?;
    let now = time::now();
    crawl.refresh = refresh;
    crawl.next_sync_at = refresh.next_after(&now);
    crawl.modified_at = now;
    call.store.set_crawl_refresh(&crawl).await?;
    crawl_json(&call, &crawl).await
}

pub async fn delete(call: Call) -> ApiResult<Response> {
    let crawl = owned_crawl(&call).await?;
    call.store.delete_crawl(&crawl.uuid).await?;
    success_response()
}
