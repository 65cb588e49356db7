//! What a client sends to start a site crawl, or to change how often a web page is read again.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::Body;
use crate::domain::data_source::{MAX_TITLE_CHARS, MAX_URL_CHARS};
use crate::knowledge::crawl::{
    DEFAULT_MAX_DEPTH, DEFAULT_MAX_PAGES, MAX_DEPTH_CEILING, MAX_PAGES_CEILING,
};
use crate::knowledge::steps::Refresh;
use serde_json::{Map, Value};

/// Include and exclude patterns per crawl, and their length.
pub const MAX_PATTERNS: usize = 50;
pub const MAX_PATTERN_CHARS: usize = 500;

#[derive(Clone, Debug, PartialEq)]
pub struct CrawlRequest {
    /// The start page as sent; the URL guard decides whether it may be fetched.
    pub url: String,
    pub max_pages: u32,
    pub max_depth: u32,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub refresh: Refresh,
}

fn opt_count(body: &Body, field: &str, default: u32, max: u32, min: u32) -> ApiResult<u32> {
    Ok(body
        .opt_whole(field, i64::from(min), i64::from(max))?
        .map_or(default, |n| n as u32))
}

fn patterns(body: &Body, field: &str) -> ApiResult<Vec<String>> {
    let list = body
        .opt_string_array(field, MAX_PATTERNS)?
        .unwrap_or_default();
    for p in &list {
        if p.trim().is_empty() || p.chars().count() > MAX_PATTERN_CHARS {
            return Err(ApiError::invalid(
                field,
                format!("Each `{field}` pattern must be a path fragment of 1 to {MAX_PATTERN_CHARS} characters."),
            ));
        }
    }
    Ok(list.into_iter().map(|p| p.trim().to_string()).collect())
}

pub fn crawl_from_body(body: &Map<String, Value>) -> ApiResult<CrawlRequest> {
    let b = Body(body);
    Ok(CrawlRequest {
        url: b.req_str("url", MAX_URL_CHARS)?.trim().to_string(),
        max_pages: opt_count(&b, "max_pages", DEFAULT_MAX_PAGES, MAX_PAGES_CEILING, 1)?,
        max_depth: opt_count(&b, "max_depth", DEFAULT_MAX_DEPTH, MAX_DEPTH_CEILING, 0)?,
        include: patterns(&b, "include")?,
        exclude: patterns(&b, "exclude")?,
        refresh: b.opt_variant("refresh")?.unwrap_or(Refresh::Never),
    })
}

/// What a crawl update sets: how often the crawl reads its site again. What it reads (its
/// start page, filters and limits) stays as created: changing it would leave the pages read
/// under the old settings behind, so another crawl is the way.
pub fn crawl_update_from_body(body: &Map<String, Value>) -> ApiResult<Refresh> {
    for field in ["url", "include", "exclude", "max_pages", "max_depth"] {
        if body.contains_key(field) {
            return Err(ApiError::invalid(
                field,
                format!("A crawl's `{field}` is set when it is created; start another crawl to read the site otherwise."),
            ));
        }
    }
    refresh_from_body(body)?.ok_or_else(|| ApiError::invalid("refresh", "`refresh` is required."))
}

/// `refresh` when sent.
pub fn refresh_from_body(body: &Map<String, Value>) -> ApiResult<Option<Refresh>> {
    Body(body).opt_variant("refresh")
}

/// What a source update sets: a title, how often a web page is read again, or both.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceUpdate {
    pub title: Option<String>,
    pub refresh: Option<Refresh>,
}

pub fn source_update_from_body(body: &Map<String, Value>) -> ApiResult<SourceUpdate> {
    let b = Body(body);
    let title = b.opt_nonblank_str("title", MAX_TITLE_CHARS)?;
    let refresh = refresh_from_body(body)?;
    if title.is_none() && refresh.is_none() {
        return Err(ApiError::invalid(
            "title",
            "Send `title`, `refresh` (a web page's), or both.",
        ));
    }
    Ok(SourceUpdate { title, refresh })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_and_limits() {
        let r = crawl_from_body(&obj(json!({"url": " https://e.com/ "}))).unwrap();
        assert_eq!(r.url, "https://e.com/");
        assert_eq!(
            (r.max_pages, r.max_depth, r.refresh),
            (100, 3, Refresh::Never)
        );
        let r = crawl_from_body(&obj(
            json!({"url": "https://e.com", "max_pages": 1000, "max_depth": 0,
            "include": ["/docs/*"], "exclude": ["/docs/old"], "refresh": "weekly"}),
        ))
        .unwrap();
        assert_eq!(
            (r.max_pages, r.max_depth, r.refresh),
            (1000, 0, Refresh::Weekly)
        );
        assert_eq!(r.include, ["/docs/*"]);
        for bad in [
            json!({"url": "https://e.com", "max_pages": 1001}),
            json!({"url": "https://e.com", "max_pages": 0}),
            json!({"url": "https://e.com", "max_depth": -1}),
            json!({"url": "https://e.com", "max_depth": 1.5}),
            json!({"url": "https://e.com", "refresh": "hourly"}),
            json!({"url": "https://e.com", "include": [""]}),
            json!({"url": "https://e.com", "exclude": "x"}),
            json!({}),
        ] {
            assert!(crawl_from_body(&obj(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn updates_need_a_title_or_a_refresh() {
        assert!(source_update_from_body(&obj(json!({}))).is_err());
        assert!(source_update_from_body(&obj(json!({"title": " "}))).is_err());
        let u = source_update_from_body(&obj(json!({"refresh": "daily"}))).unwrap();
        assert_eq!(
            u,
            SourceUpdate {
                title: None,
                refresh: Some(Refresh::Daily)
            }
        );
        let u = source_update_from_body(&obj(json!({"title": " New "}))).unwrap();
        assert_eq!(u.title.as_deref(), Some("New"));
    }
}
