//! What is done to Markdown source before it is read: YAML front matter comes off, and an
//! MDX file's `import` and `export` statements.

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

/// The most lines one MDX `import` or `export` statement is taken to span: past it, what
/// follows is read as text rather than dropped unseen.
const MAX_STATEMENT_LINES: usize = 200;

/// MDX source without its top-level `import` and `export` statements: they name the
/// components a page uses and its metadata, code rather than content. A statement starts a
/// line (outside fenced code) with `import` or `export` and, as MDX reads it, runs to the
/// next blank line.
pub(super) fn without_esm(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut fence: Option<&str> = None;
    let mut statement_lines: Option<usize> = None;
    // A statement starts a block: a line that goes on a paragraph is text.
    let mut block_start = true;
    for line in s.split_inclusive('\n') {
        let bare = line.trim_end();
        if let Some(lines) = statement_lines {
            if bare.trim().is_empty() || lines >= MAX_STATEMENT_LINES {
                statement_lines = None;
            } else {
                statement_lines = Some(lines + 1);
                continue;
            }
        }
        // After a blank line, a heading, a rule (front matter's end too) or a fence, the
        // next line starts a block.
        let ends_block = {
            let t = bare.trim();
            t.is_empty()
                || t.starts_with('#')
                || t == "---"
                || t.starts_with("```")
                || t.starts_with("~~~")
        };
        let at_block_start = std::mem::replace(&mut block_start, ends_block);
        let opened = ["```", "~~~"]
            .into_iter()
            .find(|f| bare.trim_start().starts_with(f));
        match (fence, opened) {
            (Some(open), Some(f)) if f == open => fence = None,
            (None, Some(f)) => fence = Some(f),
            _ => {}
        }
        if fence.is_none() && opened.is_none() && at_block_start && starts_statement(bare) {
            statement_lines = Some(1);
            continue;
        }
        out.push_str(line);
    }
    out
}

fn starts_statement(line: &str) -> bool {
    ["import", "export"].iter().any(|keyword| {
        line.strip_prefix(keyword)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c == ' ' || c == '{' || c == '*' || c == '\'' || c == '"')
    })
}
