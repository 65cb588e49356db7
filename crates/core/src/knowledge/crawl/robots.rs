//! robots.txt as this service reads it: the group for our user agent if there is one, else
//! the group for `*`; the longest matching `Allow` or `Disallow` rule decides (`*` and `$`
//! as wildcards); and every `Sitemap:` line.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Robots {
    /// `(allow, pattern)` for the group that applies to us.
    pub rules: Vec<(bool, String)>,
    pub sitemaps: Vec<String>,
}

/// Reads robots.txt for `agent` (compared without case, as a substring of the group's name).
pub fn parse(text: &str, agent: &str) -> Robots {
    let agent = agent.to_ascii_lowercase();
    let mut sitemaps = Vec::new();
    // Groups: their user agents and rules (allowed or not, and the path pattern).
    type Group = (Vec<String>, Vec<(bool, String)>);
    let mut groups: Vec<Group> = Vec::new();
    let mut in_agents = false;
    // A byte-order mark, as some editors save it, is not part of the first field's name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((field, value)) = line.split_once(':') else {
            continue;
        };
        let field = field.trim().to_ascii_lowercase();
        let value = value.trim();
        match field.as_str() {
            "user-agent" => {
                if !in_agents {
                    groups.push((Vec::new(), Vec::new()));
                    in_agents = true;
                }
                if let Some(g) = groups.last_mut() {
                    g.0.push(value.to_ascii_lowercase());
                }
            }
            "allow" | "disallow" => {
                in_agents = false;
                if let Some(g) = groups.last_mut() {
                    // An empty Disallow allows everything: no rule.
                    if !value.is_empty() {
                        g.1.push((field == "allow", percent_encoded(value)));
                    }
                }
            }
            "sitemap" => {
                // `Sitemap:` values are full URLs, so the split above cut them at the scheme.
                if let Some((_, rest)) = line.split_once(':') {
                    sitemaps.push(rest.trim().to_string());
                }
            }
            _ => in_agents = false,
        }
    }
    let ours = groups
        .iter()
        .filter(|(agents, _)| {
            agents
                .iter()
                .any(|a| a != "*" && agent.contains(a.as_str()))
        })
        .flat_map(|(_, rules)| rules.iter().cloned())
        .collect::<Vec<_>>();
    let rules = if ours.is_empty()
        && !groups.iter().any(|(agents, _)| {
            agents
                .iter()
                .any(|a| a != "*" && agent.contains(a.as_str()))
        }) {
        groups
            .iter()
            .filter(|(agents, _)| agents.iter().any(|a| a == "*"))
            .flat_map(|(_, rules)| rules.iter().cloned())
            .collect()
    } else {
        ours
    };
    Robots { rules, sitemaps }
}

/// A rule as the paths it is compared with are written: bytes outside ASCII and spaces
/// percent-encoded (RFC 9309, 2.2.2), so `Disallow: /über` holds `/%C3%BCber`.
fn percent_encoded(rule: &str) -> String {
    let mut out = String::with_capacity(rule.len());
    for byte in rule.bytes() {
        if byte.is_ascii() && byte != b' ' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Whether `pattern` matches the start of `path` (`*` any run of characters, `$` the end).
fn matches(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.split_first() {
            None => true,
            Some((b'$', [])) => s.is_empty(),
            Some((b'*', rest)) => (0..=s.len()).any(|i| go(rest, &s[i..])),
            Some((c, rest)) => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

impl Robots {
    /// Whether a page at `path_and_query` may be read.
    pub fn allows(&self, path_and_query: &str) -> bool {
        let mut best: Option<(usize, bool)> = None;
        for (allow, pattern) in &self.rules {
            if matches(pattern, path_and_query) {
                let len = pattern.len();
                // The longest rule wins; on a tie, Allow.
                if best.is_none_or(|(l, a)| len > l || (len == l && *allow && !a)) {
                    best = Some((len, *allow));
                }
            }
        }
        best.is_none_or(|(_, allow)| allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TXT: &str = "\
# comments are ignored
User-agent: *
Disallow: /private/
Disallow: /*.pdf$
Allow: /private/open

User-agent: otherbot
Disallow: /

Sitemap: https://example.com/sitemap_index.xml
sitemap: https://example.com/extra.xml.gz
";

    #[test]
    fn a_byte_order_mark_and_rules_outside_ascii_are_read() {
        let r = parse(
            "\u{feff}User-agent: *\r\nDisallow: /private\r\nDisallow: /über\r\n",
            "edgechat",
        );
        assert!(!r.allows("/private/z"));
        assert!(!r.allows("/%C3%BCber/x"));
        assert!(r.allows("/uber/x"));
    }

    #[test]
    fn the_star_group_applies_when_ours_is_absent() {
        let r = parse(TXT, "edgechat");
        assert!(r.allows("/docs/setup"));
        assert!(!r.allows("/private/notes"));
        assert!(r.allows("/private/open/page"));
        assert!(!r.allows("/files/a.pdf"));
        assert!(r.allows("/files/a.pdf?x"));
        assert_eq!(
            r.sitemaps,
            [
                "https://example.com/sitemap_index.xml",
                "https://example.com/extra.xml.gz"
            ]
        );
        let other = parse(TXT, "otherbot");
        assert!(!other.allows("/docs"));
    }

    #[test]
    fn our_own_group_wins_over_star() {
        let txt = "User-agent: *\nDisallow: /\n\nUser-agent: EdgeChat\nDisallow: /drafts\n";
        let r = parse(txt, "edgechat");
        assert!(r.allows("/docs"));
        assert!(!r.allows("/drafts/1"));
        let empty = parse("User-agent: *\nDisallow:\n", "edgechat");
        assert!(empty.allows("/anything"));
        assert!(parse("", "edgechat").allows("/"));
    }
}
