//! One spelling per page: fragments, default ports, a trailing slash, tracking parameters and
//! the order of the other parameters do not make another page.

use url::Url;

/// Query parameters that say where a visitor came from, not which page they see.
fn is_tracking(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("utm_")
        || matches!(
            name.as_str(),
            "gclid"
                | "fbclid"
                | "dclid"
                | "msclkid"
                | "mc_cid"
                | "mc_eid"
                | "yclid"
                | "_ga"
                | "_gl"
                | "ref_src"
        )
}

/// The page's one spelling; `None` for what is not an http(s) page.
pub fn normalize(url: &Url) -> Option<Url> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    let mut out = url.clone();
    out.set_fragment(None);
    // `Url` already lowercases the scheme and host and drops a default port.
    let mut params: Vec<(String, String)> = out
        .query_pairs()
        .filter(|(k, _)| !is_tracking(k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    params.sort();
    if params.is_empty() {
        out.set_query(None);
    } else {
        out.query_pairs_mut().clear().extend_pairs(params);
    }
    let path = plain_escapes(out.path());
    if path != out.path() {
        out.set_path(&path);
    }
    if path.len() > 1 && path.ends_with('/') {
        out.set_path(path.trim_end_matches('/'));
        if out.path().is_empty() {
            out.set_path("/");
        }
    }
    Some(out)
}

/// A path with its escaped unreserved characters written plainly (`%61` is `a`, `%7E` is `~`)
/// and every other escape in upper case: spellings RFC 3986 counts as the same.
fn plain_escapes(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|hex| bytes[i] == b'%' && hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        match escaped {
            Some(b) if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') => {
                out.push(b as char);
                i += 3;
            }
            Some(b) => {
                out.push_str(&format!("%{b:02X}"));
                i += 3;
            }
            None => {
                // `path` is ASCII: `Url` keeps a path percent-encoded.
                out.push(bytes[i] as char);
                i += 1;
            }
        }
    }
    out
}

/// What stands for a web page among a chatbot's sources (their content hash): one per page,
/// however its URL is spelled, so the same page is not stored twice.
pub fn page_identity(page: &Url) -> String {
    let page = normalize(page).unwrap_or_else(|| page.clone());
    crate::domain::api_key::sha256_hex(format!("page {page}").as_bytes())
}

/// `href` read against `base`, normalised; `None` for other schemes and bad URLs.
pub fn resolve(base: &Url, href: &str) -> Option<Url> {
    let href = href.trim();
    if href.is_empty() || href.starts_with('#') {
        return None;
    }
    normalize(&crate::idn::join(base, href).ok()?)
}

/// Whether `url` is on the crawl's site: the same host and port (a `www.` in front is the same
/// site), either scheme.
pub fn same_site(site: &Url, url: &Url) -> bool {
    fn bare(u: &Url) -> Option<String> {
        let host = u.host_str()?.to_ascii_lowercase();
        Some(host.strip_prefix("www.").unwrap_or(&host).to_string())
    }
    bare(site) == bare(url)
        && site.port_or_known_default().map(normal_port)
            == url.port_or_known_default().map(normal_port)
}

/// http and https on their default ports count as one site.
fn normal_port(port: u16) -> u16 {
    if port == 443 {
        80
    } else {
        port
    }
}

/// Whether a crawl's `include` and `exclude` patterns let `url` in: with includes, the path
/// must contain one of them; it must contain none of the excludes. A pattern ending in `*`
/// matches as a prefix of the path.
pub fn passes_filters(url: &Url, include: &[String], exclude: &[String]) -> bool {
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    // Addresses are kept without a trailing slash (`normalize`): "/docs/*" takes in the
    // page "/docs/" as well, written "/docs".
    let hit = |p: &String| match p.strip_suffix('*') {
        Some(prefix) => {
            target.starts_with(prefix)
                || prefix.strip_suffix('/').is_some_and(|folder| {
                    !folder.is_empty()
                        && target
                            .strip_prefix(folder)
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with('?'))
                })
        }
        None => target.contains(p.as_str()),
    };
    (include.is_empty() || include.iter().any(hit)) && !exclude.iter().any(hit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(&Url::parse(s).unwrap()).unwrap().to_string()
    }

    #[test]
    fn one_spelling_per_page() {
        assert_eq!(
            n("HTTP://Example.COM:80/a/b/#top"),
            "http://example.com/a/b"
        );
        assert_eq!(n("https://example.com:443/"), "https://example.com/");
        assert_eq!(
            n("https://example.com/%61bout/%7euser/a%2fb/%e2%82%ac"),
            "https://example.com/about/~user/a%2Fb/%E2%82%AC"
        );
        assert_eq!(n("https://example.com/100%"), "https://example.com/100%");
        assert_eq!(n("https://example.com/%+1x"), "https://example.com/%+1x");
        assert_eq!(n("https://example.com"), "https://example.com/");
        assert_eq!(
            n("https://example.com/x?utm_source=n&b=2&a=1&fbclid=z"),
            "https://example.com/x?a=1&b=2"
        );
        assert_eq!(
            n("https://example.com/x?utm_medium=y"),
            "https://example.com/x"
        );
        assert_eq!(
            n("http://127.0.0.1:8080/docs/"),
            "http://127.0.0.1:8080/docs"
        );
        assert!(normalize(&Url::parse("mailto:a@b.c").unwrap()).is_none());
    }

    #[test]
    fn links_resolve_against_their_page() {
        let base = Url::parse("https://example.com/docs/intro").unwrap();
        assert_eq!(
            resolve(&base, "setup#linux").unwrap().as_str(),
            "https://example.com/docs/setup"
        );
        assert_eq!(
            resolve(&base, "/about/").unwrap().as_str(),
            "https://example.com/about"
        );
        assert_eq!(resolve(&base, "#top"), None);
        assert_eq!(resolve(&base, "javascript:void(0)"), None);
        assert_eq!(resolve(&base, "mailto:x@example.com"), None);
    }

    #[test]
    fn the_site_is_one_host_and_port() {
        let site = Url::parse("https://example.com/").unwrap();
        assert!(same_site(
            &site,
            &Url::parse("https://www.example.com/a").unwrap()
        ));
        assert!(same_site(
            &site,
            &Url::parse("http://example.com/a").unwrap()
        ));
        assert!(!same_site(
            &site,
            &Url::parse("https://other.com/a").unwrap()
        ));
        assert!(!same_site(
            &site,
            &Url::parse("https://sub.example.com/a").unwrap()
        ));
        let local = Url::parse("http://127.0.0.1:4000/").unwrap();
        assert!(!same_site(
            &local,
            &Url::parse("http://127.0.0.1:4001/").unwrap()
        ));
    }

    #[test]
    fn include_and_exclude() {
        let u = Url::parse("https://example.com/docs/setup").unwrap();
        assert!(passes_filters(&u, &[], &[]));
        assert!(passes_filters(&u, &["/docs/*".into()], &[]));
        assert!(!passes_filters(&u, &["/blog/*".into()], &[]));
        assert!(!passes_filters(&u, &[], &["setup".into()]));
        // The folder's own page, kept as "/docs", is in "/docs/*"; "/docsearch" is not.
        let folder = Url::parse(&n("https://example.com/docs/")).unwrap();
        assert!(passes_filters(&folder, &["/docs/*".into()], &[]));
        assert!(!passes_filters(&folder, &[], &["/docs/*".into()]));
        let other = Url::parse("https://example.com/docsearch").unwrap();
        assert!(!passes_filters(&other, &["/docs/*".into()], &[]));
    }
}
