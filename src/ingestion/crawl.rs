//! A site crawl's own steps: its start (robots.txt, the sitemaps it names, the start page) and
//! each sitemap; and following a crawled page's links, which `read::fetch_page` asks for.
//! Every URL goes through the outbound guard when it is fetched, redirects included.

use super::read::{Outcome, StepEnv};
use super::{enqueue, PAGE_LIMITS};
use crate::handlers::new_uuid;
use crate::platform::outbound::{self, Outgoing};
use crate::storage::{Crawl, FoundPage, PageLeft, PageMarks};
use edgechat_core::api::error::ApiResult;
use edgechat_core::idn;
use edgechat_core::knowledge::crawl::robots::{self, Robots};
use edgechat_core::knowledge::crawl::sitemap::{self, Sitemap};
use edgechat_core::knowledge::crawl::urls::{
    normalize, page_identity, passes_filters, resolve, same_site,
};
use edgechat_core::knowledge::crawl::{
    answer, links, not_reached, Answer, MAX_SITEMAP_NESTING, USER_AGENT,
};
use edgechat_core::knowledge::steps::Step;
use edgechat_core::time;
use url::Url;
use worker::Method;

/// Links taken from one page: enough for any real page, few enough for one statement.
const MAX_LINKS_PER_PAGE: usize = 500;
/// A gzipped sitemap may inflate to this much.
const MAX_SITEMAP_BYTES: usize = 50 * 1024 * 1024;

/// What a GET of a crawl's own resource (robots.txt, a sitemap, the start page read for its
/// links) came to.
enum Got {
    Body(Vec<u8>),
    /// Not there, or refused: the crawl goes on without it.
    Missing,
    /// It answered this status, 404 or 410: as `Missing`, but a start page checked before
    /// anything is stored fails the crawl.
    Gone(u16),
    /// It redirects where `scope` does not go; why, in a sentence.
    OutOfScope(String),
    Retry(String),
}

/// `what` names the resource in a failure's reason: "robots.txt", "The start page …".
async fn get(
    ctx: &StepEnv<'_>,
    what: &str,
    url: &str,
    accept: &str,
    scope: outbound::Scope<'_>,
) -> Got {
    let fetched = outbound::fetch_scoped(
        Outgoing {
            method: Method::Get,
            url,
            headers: vec![
                ("Accept".into(), accept.into()),
                ("User-Agent".into(), format!("{USER_AGENT}/1.0")),
            ],
            body: None,
        },
        &ctx.config.private_access,
        PAGE_LIMITS,
        scope,
    )
    .await;
    ctx.sent.add(fetched.as_ref().map_or(1, |f| f.requests));
    match fetched {
        Err(e) if e.out_of_scope => Got::OutOfScope(e.reason),
        Err(e) if e.transient => Got::Retry(not_reached(what, &e.reason)),
        Err(_) => Got::Missing,
        Ok(f) => match answer(what, f.status) {
            Answer::Read => Got::Body(f.body),
            Answer::Absent => Got::Missing,
            Answer::Gone => Got::Gone(f.status),
            Answer::Retry(reason) => Got::Retry(reason),
        },
    }
}

/// robots.txt and sitemaps may be served from anywhere they redirect to.
const ANYWHERE: outbound::Scope<'static> = &|_| Ok(());

fn robots_of(crawl: &Crawl) -> Robots {
    robots_from(&crawl.robots_json)
}

/// Robots rules as a crawl keeps them (JSON); none when they cannot be read.
fn robots_from(json: &str) -> Robots {
    serde_json::from_str(json).unwrap_or_default()
}

/// Why a URL is not one of the crawl's pages.
enum Outside {
    OffSite,
    Filtered,
    /// robots.txt forbids it: counted, never fetched.
    Forbidden,
}

/// Whether `url` is one of the crawl's pages: on its site, through its filters, where its
/// robots rules allow. Links and redirects are held to the same rule.
fn within(
    site: &Url,
    include: &[String],
    exclude: &[String],
    robots: &Robots,
    url: &Url,
) -> Result<(), Outside> {
    if !same_site(site, url) {
        Err(Outside::OffSite)
    } else if !passes_filters(url, include, exclude) {
        Err(Outside::Filtered)
    } else if !robots.allows(&path_and_query(url)) {
        Err(Outside::Forbidden)
    } else {
        Ok(())
    }
}

fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    }
}

/// Splits found URLs into pages to add (on the site, through the filters, new in this list)
/// and pages robots.txt forbids, at most the crawl's page limit of each: a sitemap may list
/// fifty thousand, and one step writes what it keeps in one statement.
fn sort_found(
    crawl: &Crawl,
    site: &Url,
    robots: &Robots,
    urls: Vec<(Url, i64)>,
) -> (Vec<FoundPage>, Vec<String>) {
    let mut pages: Vec<FoundPage> = Vec::new();
    let mut blocked = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let most = usize::try_from(crawl.max_pages).unwrap_or(0);
    for (url, depth) in urls {
        if pages.len() >= most && blocked.len() >= most {
            break;
        }
        let reach = within(site, &crawl.include, &crawl.exclude, robots, &url);
        if matches!(reach, Err(Outside::OffSite | Outside::Filtered)) {
            continue;
        }
        let text = url.to_string();
        if !seen.insert(text.clone()) {
            continue;
        }
        if reach.is_ok() {
            if pages.len() >= most {
                continue;
            }
            pages.push(FoundPage {
                identity: page_identity(&url),
                url: text,
                source: new_uuid(),
                depth,
            });
        } else if blocked.len() < most {
            blocked.push(text);
        }
    }
    (pages, blocked)
}

async fn add_and_queue(
    ctx: &StepEnv<'_>,
    crawl: &Crawl,
    pages: Vec<FoundPage>,
    blocked: Vec<String>,
    mut steps: Vec<Step>,
) -> ApiResult<()> {
    let mut pages = pages;
    pages.truncate(crawl.max_pages as usize);
    if !pages.is_empty() || !blocked.is_empty() {
        let added = ctx
            .store
            .add_crawl_pages(crawl, &pages, &blocked, &time::now())
            .await?;
        steps.extend(added.into_iter().map(|source| Step::FetchPage {
            source,
            recheck: false,
        }));
    }
    enqueue(ctx.env, steps, ctx.sent).await
}

/// What a crawled page's step may fetch, read once from its crawl's marks: its crawl's site,
/// filters and robots rules as last read.
pub struct PageScope {
    site: Url,
    include: Vec<String>,
    exclude: Vec<String>,
    robots: Robots,
}

impl PageScope {
    /// `None` for a page of no crawl.
    pub fn of(marks: &PageMarks) -> Option<Self> {
        let site = Url::parse(marks.crawl_url.as_deref()?).ok()?;
        let list = |json: &Option<String>| -> Vec<String> {
            json.as_deref()
                .and_then(|j| serde_json::from_str(j).ok())
                .unwrap_or_default()
        };
        Some(PageScope {
            site,
            include: list(&marks.crawl_include),
            exclude: list(&marks.crawl_exclude),
            robots: robots_from(marks.crawl_robots.as_deref().unwrap_or_default()),
        })
    }

    /// Whether the robots rules allow fetching `url` (an address that does not parse is
    /// left to the fetch to refuse).
    pub fn robots_allow(&self, url: &str) -> bool {
        Url::parse(url).map_or(true, |url| self.robots.allows(&path_and_query(&url)))
    }

    /// Where a redirect of the page may lead: where a link may (the crawl's site, through its
    /// filters), and never where its robots rules forbid.
    pub fn redirect(&self, url: &Url) -> Result<(), String> {
        within(&self.site, &self.include, &self.exclude, &self.robots, url)
            .map_err(|outside| redirect_refused(outside, url))
    }
}

/// Why a redirect to `url` is not followed, in a sentence.
fn redirect_refused(outside: Outside, url: &Url) -> String {
    match outside {
        Outside::OffSite => format!("It redirects to {url}, off the crawled site."),
        Outside::Filtered => format!("It redirects to {url}, which the crawl's filters leave out."),
        Outside::Forbidden => format!("It redirects to {url}, which robots.txt forbids."),
    }
}

/// A crawled page whose redirect leads out of the crawl leaves it; when it is the start page,
/// the crawl says why it found nothing.
pub async fn redirected_out(
    ctx: &StepEnv<'_>,
    crawl_uuid: &str,
    source_uuid: &str,
    url: &str,
    reason: &str,
) -> ApiResult<()> {
    ctx.store
        .remove_crawl_page(crawl_uuid, source_uuid, PageLeft::Gone)
        .await?;
    fail_at_start_page(ctx, crawl_uuid, url, &format!(": {reason}")).await
}

/// When the page at `url` that answered `status` (404, 410) is the crawl's start page, the
/// crawl says so in its `error`: a crawl that found nothing because its address is wrong
/// must not look like one that read an empty site.
pub async fn start_page_gone(
    ctx: &StepEnv<'_>,
    crawl_uuid: &str,
    url: &str,
    status: u16,
) -> ApiResult<()> {
    let why = format!(" answered HTTP {status}.");
    fail_at_start_page(ctx, crawl_uuid, url, &why).await
}

/// Fails the crawl with "The start page {url}{why}" when `url` is its start page.
async fn fail_at_start_page(
    ctx: &StepEnv<'_>,
    crawl_uuid: &str,
    url: &str,
    why: &str,
) -> ApiResult<()> {
    let Some(crawl) = ctx.store.crawl_for_step(crawl_uuid).await? else {
        return Ok(());
    };
    let start = Url::parse(&crawl.url).ok().and_then(|u| normalize(&u));
    let page = Url::parse(url).ok().and_then(|u| normalize(&u));
    if start.is_none() || start != page {
        return Ok(());
    }
    let reason = format!("The start page {}{why}", crawl.url);
    ctx.store
        .fail_crawl(crawl_uuid, &reason, &time::now())
        .await
}

pub async fn start(ctx: &StepEnv<'_>, crawl_uuid: &str, resync: bool) -> ApiResult<Outcome> {
    let Some(crawl) = ctx.store.crawl_for_step(crawl_uuid).await? else {
        return Ok(Outcome::Done);
    };
    let Ok(site) = Url::parse(&crawl.url) else {
        ctx.store
            .fail_crawl(
                crawl_uuid,
                "The crawl's address is not a valid URL.",
                &time::now(),
            )
            .await?;
        return Ok(Outcome::Done);
    };
    let robots = match site.join("/robots.txt") {
        Ok(robots_url) => match get(
            ctx,
            "robots.txt",
            robots_url.as_str(),
            "text/plain",
            ANYWHERE,
        )
        .await
        {
            Got::Body(bytes) => robots::parse(&String::from_utf8_lossy(&bytes), USER_AGENT),
            Got::Missing | Got::Gone(_) | Got::OutOfScope(_) => Robots::default(),
            Got::Retry(reason) => return Ok(Outcome::Retry(reason)),
        },
        Err(_) => Robots::default(),
    };
    // The start page is the way in even when it is not one of the crawl's pages (the filters
    // leave it out, or the chatbot holds it already as a page of its own): its links are
    // followed, and the page itself is not stored (read before anything is written, so a
    // retry starts clean). Its redirects are held to the site and robots.txt.
    let start_page = normalize(&site);
    let held_elsewhere = match &start_page {
        Some(start) if passes_filters(start, &crawl.include, &crawl.exclude) => {
            ctx.store
                .holds_page_outside(&crawl.chatbot_uuid, crawl_uuid, &page_identity(start))
                .await?
        }
        _ => false,
    };
    let entrance_only = |start: &Url| {
        (held_elsewhere || !passes_filters(start, &crawl.include, &crawl.exclude))
            && crawl.max_depth >= 1
    };
    // A crawl holding no pages yet (its first reading) asks for its start page before it
    // stores anything: one that leads off the site or is gone fails the crawl with nothing
    // read, where the sitemaps' pages would otherwise be read under a crawl saying it failed.
    // Later syncs keep what earlier ones read; the start page's own step says so then.
    let first_reading = !ctx.store.crawl_holds_pages(crawl_uuid).await?;
    let mut entrance = Vec::new();
    if let Some(start) = start_page.as_ref().filter(|start| {
        (first_reading || entrance_only(start)) && robots.allows(&path_and_query(start))
    }) {
        let scope = |url: &Url| {
            within(&site, &[], &[], &robots, url).map_err(|outside| redirect_refused(outside, url))
        };
        match get(
            ctx,
            &format!("The start page {}", crawl.url),
            start.as_str(),
            "text/html,application/xhtml+xml",
            &scope,
        )
        .await
        {
            Got::Body(bytes) if entrance_only(start) => entrance = page_links(start, &bytes),
            Got::Body(_) | Got::Missing => {}
            Got::Gone(status) if first_reading => {
                let reason = format!("The start page {} answered HTTP {status}.", crawl.url);
                ctx.store
                    .fail_crawl(crawl_uuid, &reason, &time::now())
                    .await?;
                return Ok(Outcome::Done);
            }
            Got::Gone(_) => {}
            Got::OutOfScope(reason) => {
                let reason = format!("The start page {}: {reason}", crawl.url);
                ctx.store
                    .fail_crawl(crawl_uuid, &reason, &time::now())
                    .await?;
                return Ok(Outcome::Done);
            }
            Got::Retry(reason) => return Ok(Outcome::Retry(reason)),
        }
    }
    let mut sitemaps: Vec<String> = robots
        .sitemaps
        .iter()
        .filter_map(|s| idn::parse_url(s).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .map(|u| u.to_string())
        .collect();
    if sitemaps.is_empty() {
        if let Ok(default) = site.join("/sitemap.xml") {
            sitemaps.push(default.to_string());
        }
    }
    let now = time::now();
    ctx.store
        .crawl_started(crawl_uuid, &serde_json::to_string(&robots)?, &now)
        .await?;
    let mut steps: Vec<Step> = ctx
        .store
        .claim_sitemaps(crawl_uuid, &sitemaps)
        .await?
        .into_iter()
        .map(|url| Step::CrawlSitemap {
            crawl: crawl_uuid.to_string(),
            url,
            nesting: 0,
        })
        .collect();
    let mut left = Vec::new();
    if resync {
        left = ctx.store.begin_resync(crawl_uuid, &now).await?;
        steps.extend(
            ctx.store
                .crawl_source_uuids(crawl_uuid)
                .await?
                .into_iter()
                .map(|source| Step::FetchPage {
                    source,
                    recheck: true,
                }),
        );
    }
    // The pages offered again come before the start page's links, which may be more than the
    // crawl's page limit, all known already.
    let found = start_page
        .into_iter()
        .map(|url| (url, 0))
        .chain(
            left.into_iter()
                .filter_map(|(url, depth)| Some((Url::parse(&url).ok()?, depth))),
        )
        .chain(entrance.into_iter().map(|url| (url, 1)))
        .collect();
    let (pages, blocked) = sort_found(&crawl, &site, &robots, found);
    add_and_queue(ctx, &crawl, pages, blocked, steps).await?;
    Ok(Outcome::Done)
}

/// The pages an HTML page links to, read against its address, normalised.
fn page_links(base: &Url, body: &[u8]) -> Vec<Url> {
    let html = String::from_utf8_lossy(body);
    links::hrefs(&html)
        .iter()
        .filter_map(|href| resolve(base, href))
        .take(MAX_LINKS_PER_PAGE)
        .collect()
}

pub async fn read_sitemap(
    ctx: &StepEnv<'_>,
    crawl_uuid: &str,
    url: &str,
    nesting: u32,
) -> ApiResult<Outcome> {
    let Some(crawl) = ctx.store.crawl_for_step(crawl_uuid).await? else {
        return Ok(Outcome::Done);
    };
    let bytes = match get(
        ctx,
        &format!("The sitemap {url}"),
        url,
        "application/xml,text/xml;q=0.9,*/*;q=0.5",
        ANYWHERE,
    )
    .await
    {
        Got::Body(bytes) => bytes,
        Got::Missing | Got::Gone(_) | Got::OutOfScope(_) => Vec::new(),
        Got::Retry(reason) => return Ok(Outcome::Retry(reason)),
    };
    let parsed = sitemap::gunzip_if_gzipped(&bytes, MAX_SITEMAP_BYTES)
        .ok()
        .and_then(|xml| sitemap::parse(&String::from_utf8_lossy(&xml)));
    match parsed {
        Some(Sitemap::Index(children)) if nesting < MAX_SITEMAP_NESTING => {
            let steps = ctx
                .store
                .claim_sitemaps(crawl_uuid, &children)
                .await?
                .into_iter()
                .map(|url| Step::CrawlSitemap {
                    crawl: crawl_uuid.to_string(),
                    url,
                    nesting: nesting + 1,
                })
                .collect();
            enqueue(ctx.env, steps, ctx.sent).await?;
        }
        Some(Sitemap::Pages(locations)) => {
            if let Ok(site) = Url::parse(&crawl.url) {
                let urls = locations
                    .iter()
                    .filter_map(|l| idn::parse_url(l).ok().and_then(|u| normalize(&u)))
                    .map(|url| (url, 0))
                    .collect();
                let (pages, blocked) = sort_found(&crawl, &site, &robots_of(&crawl), urls);
                add_and_queue(ctx, &crawl, pages, blocked, Vec::new()).await?;
            }
        }
        _ => {}
    }
    ctx.store
        .sitemap_read(crawl_uuid, url, &time::now())
        .await?;
    Ok(Outcome::Done)
}

/// Adds the same-site links of a crawled page one level deeper, while the crawl's depth allows.
pub async fn follow_links(
    ctx: &StepEnv<'_>,
    crawl_uuid: &str,
    marks: &PageMarks,
    page_url: &str,
    body: &[u8],
) -> ApiResult<()> {
    let depth = marks.depth.unwrap_or(0);
    let Some(crawl) = ctx.store.crawl_for_step(crawl_uuid).await? else {
        return Ok(());
    };
    if depth >= crawl.max_depth {
        return Ok(());
    }
    let (Ok(site), Ok(base)) = (Url::parse(&crawl.url), Url::parse(page_url)) else {
        return Ok(());
    };
    let urls = page_links(&base, body);
    let urls = urls.into_iter().map(|url| (url, depth + 1)).collect();
    let (pages, blocked) = sort_found(&crawl, &site, &robots_of(&crawl), urls);
    add_and_queue(ctx, &crawl, pages, blocked, Vec::new()).await
}
