//! Site crawls, the pure parts: which URLs are the same page, what robots.txt allows, what a
//! sitemap lists and which links a page holds. The Worker shell fetches; this decides.

pub mod links;
pub mod robots;
pub mod sitemap;
pub mod urls;

/// The name this service gives in `User-agent` and looks for in robots.txt.
pub const USER_AGENT: &str = "edgechat";

pub const DEFAULT_MAX_PAGES: u32 = 100;
pub const DEFAULT_MAX_DEPTH: u32 = 3;
pub const MAX_PAGES_CEILING: u32 = 1_000;
pub const MAX_DEPTH_CEILING: u32 = 10;
/// Sitemap indexes are followed this deep.
pub const MAX_SITEMAP_NESTING: u32 = 3;

/// What a crawl makes of the status its own resource (robots.txt, a sitemap, the start page)
/// answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Read,
    /// Refused, or anything else that is no page: the crawl goes on without it.
    Absent,
    /// 404 or 410: not there either; a start page that answers so fails the crawl's first
    /// reading.
    Gone,
    /// Worth another try; if every try fails, the reason is the crawl's `error`, naming what
    /// failed as a page's error does ("robots.txt answered HTTP 503.").
    Retry(String),
}

/// `what` names the resource as a sentence starts: "robots.txt", "The start page https://…".
pub fn answer(what: &str, status: u16) -> Answer {
    match status {
        429 | 500..=599 => Answer::Retry(format!("{what} answered HTTP {status}.")),
        200..=299 => Answer::Read,
        404 | 410 => Answer::Gone,
        _ => Answer::Absent,
    }
}

/// Why `what` could not be asked for at all (the server unreachable), for a crawl's `error`.
pub fn not_reached(what: &str, reason: &str) -> String {
    format!("{what} could not be read: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_what_failed() {
        assert_eq!(
            answer("robots.txt", 503),
            Answer::Retry("robots.txt answered HTTP 503.".into())
        );
        assert_eq!(
            answer("The start page https://e.com/", 429),
            Answer::Retry("The start page https://e.com/ answered HTTP 429.".into())
        );
        assert_eq!(answer("robots.txt", 200), Answer::Read);
        for status in [301, 304, 401, 403] {
            assert_eq!(answer("robots.txt", status), Answer::Absent, "{status}");
        }
        assert_eq!(answer("robots.txt", 404), Answer::Gone);
        assert_eq!(answer("robots.txt", 410), Answer::Gone);
        assert_eq!(
            not_reached("robots.txt", "Could not reach e.com: the connection failed"),
            "robots.txt could not be read: Could not reach e.com: the connection failed"
        );
    }
}
