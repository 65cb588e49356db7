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
