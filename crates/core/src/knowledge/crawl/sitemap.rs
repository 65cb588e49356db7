//! Sitemaps (`<urlset>`) and sitemap indexes (`<sitemapindex>`), plain or gzipped.

/// What a sitemap document lists.
#[derive(Debug, PartialEq, Eq)]
pub enum Sitemap {
    /// Pages.
    Pages(Vec<String>),
    /// Other sitemaps.
    Index(Vec<String>),
}

/// The bytes of a gzip member inflated, or the bytes as they are when they are not gzip.
pub fn gunzip_if_gzipped(bytes: &[u8], max_out: usize) -> Result<Vec<u8>, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(bytes.to_vec());
    }
    let bad = || "The gzipped sitemap is damaged.".to_string();
    if bytes.len() < 18 || bytes[2] != 8 {
        return Err(bad());
    }
    let flags = bytes[3];
    let mut at = 10;
    if flags & 0x04 != 0 {
        let extra = usize::from(*bytes.get(at).ok_or_else(bad)?)
            | (usize::from(*bytes.get(at + 1).ok_or_else(bad)?) << 8);
        at += 2 + extra;
    }
    for flag in [0x08, 0x10] {
        if flags & flag != 0 {
            let end = bytes
                .get(at..)
                .ok_or_else(bad)?
                .iter()
                .position(|b| *b == 0)
                .ok_or_else(bad)?;
            at += end + 1;
        }
    }
    if flags & 0x02 != 0 {
        at += 2;
    }
    let body = bytes
        .get(at..bytes.len().saturating_sub(8))
        .ok_or_else(bad)?;
    // Measured before it is kept, as a document's streams are: a growing buffer would hold
    // twice the limit on the way to refusing a gzip bomb.
    let budget = crate::knowledge::extract::binary::Budget::new(max_out);
    crate::knowledge::extract::binary::inflate(body, false, false, &budget).ok_or_else(bad)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Every `<loc>` value, in order.
fn locs(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<loc>") {
        rest = &rest[start + 5..];
        let Some(end) = rest.find("</loc>") else {
            break;
        };
        let mut value = rest[..end].trim();
        if let Some(inner) = value
            .strip_prefix("<![CDATA[")
            .and_then(|v| v.strip_suffix("]]>"))
        {
            value = inner.trim();
        }
        if !value.is_empty() {
            out.push(unescape(value));
        }
        rest = &rest[end + 6..];
    }
    out
}

/// Reads a sitemap; `None` when the text is neither kind.
pub fn parse(xml: &str) -> Option<Sitemap> {
    if xml.contains("<sitemapindex") {
        Some(Sitemap::Index(locs(xml)))
    } else if xml.contains("<urlset") {
        Some(Sitemap::Pages(locs(xml)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_indexes() {
        let set = r#"<?xml version="1.0"?><urlset xmlns="x"><url><loc> https://e.com/a?x=1&amp;y=2 </loc></url><url><loc><![CDATA[https://e.com/b]]></loc></url></urlset>"#;
        assert_eq!(
            parse(set),
            Some(Sitemap::Pages(vec![
                "https://e.com/a?x=1&y=2".into(),
                "https://e.com/b".into()
            ]))
        );
        let index =
            "<sitemapindex><sitemap><loc>https://e.com/s1.xml</loc></sitemap></sitemapindex>";
        assert_eq!(
            parse(index),
            Some(Sitemap::Index(vec!["https://e.com/s1.xml".into()]))
        );
        assert_eq!(parse("<html></html>"), None);
    }

    #[test]
    fn gzip_is_inflated_and_plain_passes() {
        // "hello" gzipped (no file name).
        let gz = [
            0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0, 0x86, 0xa6,
            0x10, 0x36, 5, 0, 0, 0,
        ];
        assert_eq!(gunzip_if_gzipped(&gz, 1000).unwrap(), b"hello");
        assert_eq!(gunzip_if_gzipped(b"plain", 1000).unwrap(), b"plain");
        assert!(gunzip_if_gzipped(&[0x1f, 0x8b, 8, 0, 0], 1000).is_err());
    }
}
