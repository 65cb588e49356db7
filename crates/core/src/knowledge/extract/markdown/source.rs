//! What is done to Markdown source before it is read: YAML front matter comes off.

/// Drops YAML front matter, keeping its `title:` as a fallback title.
pub(super) fn front_matter(s: &str) -> (&str, Option<String>) {
    let Some(rest) = s.strip_prefix("---\n") else {
        return (s, None);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let l = line.trim_end();
        if l == "---" || l == "..." {
            let title = rest[..offset]
                .lines()
                .find_map(|l| l.strip_prefix("title:"))
                .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
                .filter(|t| !t.is_empty());
            return (&rest[offset + line.len()..], title);
        }
        // Anything that is not YAML-shaped means the `---` was a rule.
        let yaml = l.is_empty() || l.starts_with([' ', '-', '#']) || l.contains(':');
        if !yaml || offset > 16 * 1024 {
            break;
        }
        offset += line.len();
    }
    (s, None)
}
