//! Web addresses whose host is written in another script than Latin letters ("bücher.de",
//! "例え.jp"). The `url` crate is built without its Unicode tables (`idna_adapter` 1.0 in
//! Cargo.toml: they were 47 KB of the compressed Worker), so it reads only hosts already in
//! their ASCII form; an address it refuses for that is read again with its host converted
//! here: lower-cased, and each label not in ASCII written in Punycode (RFC 3492) as
//! "xn--bcher-kva.de". Unicode normalisation is left out: addresses are typed and pasted in
//! their composed form.

use url::{ParseError, Url};

/// `raw` as an absolute URL, its host converted when it is not ASCII.
pub fn parse_url(raw: &str) -> Result<Url, ParseError> {
    match ascii_host(raw) {
        Some(ascii) => Url::parse(&ascii),
        None => Url::parse(raw),
    }
}

/// `href` read against `base`, as a page's link is, its host converted when it names one
/// that is not ASCII.
pub fn join(base: &Url, href: &str) -> Result<Url, ParseError> {
    match ascii_host(href) {
        Some(ascii) => base.join(&ascii),
        None => base.join(href),
    }
}

/// `raw` with its host in ASCII, when it names a host (after `scheme://` or a leading `//`)
/// that is not; `None` when there is nothing to convert or it cannot be converted.
fn ascii_host(raw: &str) -> Option<String> {
    let scheme_len = raw
        .find(':')
        .filter(|&colon| {
            let scheme = &raw[..colon];
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
        .map_or(0, |colon| colon + 1);
    if !raw[scheme_len..].starts_with("//") {
        return None;
    }
    let start = scheme_len + 2;
    let authority_len = raw[start..]
        .find(['/', '?', '#', '\\'])
        .unwrap_or(raw.len() - start);
    let authority = &raw[start..start + authority_len];
    let host_start = start + authority.rfind('@').map_or(0, |at| at + 1);
    let host_and_port = &raw[host_start..start + authority_len];
    let host_len = host_and_port.rfind(':').unwrap_or(host_and_port.len());
    let host = &host_and_port[..host_len];
    if host.is_ascii() {
        return None;
    }
    let mut labels = Vec::new();
    // Ideographic and full-width full stops separate labels as '.' does.
    for label in host.split(['.', '。', '．', '｡']) {
        let label = label.to_lowercase();
        labels.push(if label.is_ascii() {
            label
        } else {
            format!("xn--{}", punycode(&label)?)
        });
    }
    Some(format!(
        "{}{}{}",
        &raw[..host_start],
        labels.join("."),
        &raw[host_start + host_len..]
    ))
}

/// The Punycode form of `label` (RFC 3492, section 6.3), without its "xn--" prefix; `None`
/// when the label is too long to count.
fn punycode(label: &str) -> Option<String> {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    let digit = |d: u32| {
        char::from(if d < 26 {
            b'a' + d as u8
        } else {
            b'0' + (d - 26) as u8
        })
    };
    let adapt = |delta: u32, points: u32, first: bool| {
        let mut delta = if first { delta / 700 } else { delta / 2 };
        delta += delta / points;
        let mut k = 0;
        while delta > ((BASE - T_MIN) * T_MAX) / 2 {
            delta /= BASE - T_MIN;
            k += BASE;
        }
        k + (BASE - T_MIN + 1) * delta / (delta + 38)
    };
    let code_points: Vec<u32> = label.chars().map(u32::from).collect();
    let mut output: String = label.chars().filter(char::is_ascii).collect();
    let basic = output.len() as u32;
    if basic > 0 {
        output.push('-');
    }
    let (mut n, mut delta, mut bias, mut handled) = (128u32, 0u32, 72u32, basic);
    while (handled as usize) < code_points.len() {
        let next = code_points.iter().copied().filter(|&c| c >= n).min()?;
        delta = delta.checked_add((next - n).checked_mul(handled + 1)?)?;
        n = next;
        for &c in &code_points {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = k.saturating_sub(bias).clamp(T_MIN, T_MAX);
                    if q < t {
                        break;
                    }
                    output.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                output.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n += 1;
    }
    Some(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punycode_matches_the_rfc() {
        assert_eq!(punycode("bücher").as_deref(), Some("bcher-kva"));
        assert_eq!(punycode("münchen").as_deref(), Some("mnchen-3ya"));
        assert_eq!(punycode("例え").as_deref(), Some("r8jz45g"));
        assert_eq!(punycode("ü").as_deref(), Some("tda"));
        // RFC 3492, 7.1 (L): Japanese, with ASCII letters and digits among the kana.
        assert_eq!(
            punycode("3年b組金八先生").as_deref(),
            Some("3b-ww4c5e180e575a65lsy2b")
        );
    }

    #[test]
    fn hosts_in_other_scripts_are_read_in_ascii() {
        let read = |raw: &str| parse_url(raw).map(|u| u.to_string());
        assert_eq!(
            read("https://Bücher.de:8443/faq?q=ä#x"),
            Ok("https://xn--bcher-kva.de:8443/faq?q=%C3%A4#x".into())
        );
        assert_eq!(read("http://例え。jp"), Ok("http://xn--r8jz45g.jp/".into()));
        assert_eq!(
            read("https://user@münchen.de/"),
            Ok("https://user@xn--mnchen-3ya.de/".into())
        );
        assert_eq!(
            read("https://example.com/ü"),
            Ok("https://example.com/%C3%BC".into())
        );
        assert_eq!(read("not a url"), Err(ParseError::RelativeUrlWithoutBase));
        assert!(read("https://exa mple.com/").is_err());
        let base = Url::parse("https://example.com/docs/").unwrap();
        assert_eq!(
            join(&base, "//bücher.de/a").map(|u| u.to_string()),
            Ok("https://xn--bcher-kva.de/a".into())
        );
        assert_eq!(
            join(&base, "intro//ü").map(|u| u.to_string()),
            Ok("https://example.com/docs/intro//%C3%BC".into())
        );
    }
}
