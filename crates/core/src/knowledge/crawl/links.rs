//! The links a page holds: `href` of every `<a>` and `<area>`, unless the page asks robots not
//! to follow them.

/// Every link target in `html`, as written, in order.
pub fn hrefs(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    if nofollow(&lower) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = lower[at..].find('<') {
        let start = at + found + 1;
        let end = match lower[start..].find('>') {
            Some(e) => start + e,
            None => break,
        };
        let tag = &lower[start..end];
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if name == "a" || name == "area" {
            if let Some(value) = attribute(&html[start..end], &lower[start..end], "href") {
                out.push(decode_entities(&value));
            }
        }
        at = end + 1;
    }
    out
}

fn nofollow(lower: &str) -> bool {
    let mut rest = lower;
    while let Some(i) = rest.find("<meta") {
        let tag_end = rest[i..].find('>').map_or(rest.len(), |e| i + e);
        let tag = &rest[i..tag_end];
        let robots = tag.contains("name=\"robots\"")
            || tag.contains("name='robots'")
            || tag.contains("name=robots");
        if robots && (tag.contains("nofollow") || tag.contains("none")) {
            return true;
        }
        rest = &rest[tag_end..];
    }
    false
}

/// The value of attribute `name` in a tag's inside (`original` keeps its case).
fn attribute(original: &str, lower: &str, name: &str) -> Option<String> {
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name) {
        let at = from + i;
        from = at + name.len();
        let before_ok = at > 0 && bytes[at - 1].is_ascii_whitespace();
        let mut j = at + name.len();
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if !before_ok || bytes.get(j) != Some(&b'=') {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        return match bytes.get(j) {
            Some(q @ (b'"' | b'\'')) => {
                let end = lower[j + 1..]
                    .find(*q as char)
                    .map_or(lower.len(), |e| j + 1 + e);
                Some(original[j + 1..end].to_string())
            }
            Some(_) => {
                let end = lower[j..]
                    .find(|c: char| c.is_ascii_whitespace())
                    .map_or(lower.len(), |e| j + e);
                Some(original[j..end].trim_end_matches('/').to_string())
            }
            None => None,
        };
    }
    None
}

fn decode_entities(s: &str) -> String {
    s.replace("&amp;", "&")
        .replace("&#38;", "&")
        .replace("&quot;", "\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_in_every_spelling() {
        let html = r#"<html><body><A HREF="/a">A</A> <a class=x href='b?x=1&amp;y=2'>B</a>
            <a href=c>C</a> <link href="/style.css"> <a name="top">no</a> <area href="/d">
            <a data-href="/no" href = "/e">E</a></body></html>"#;
        assert_eq!(hrefs(html), ["/a", "b?x=1&y=2", "c", "/d", "/e"]);
    }

    #[test]
    fn nofollow_pages_give_none() {
        assert!(
            hrefs(r#"<meta name="robots" content="noindex, nofollow"><a href="/x">x</a>"#)
                .is_empty()
        );
    }
}
