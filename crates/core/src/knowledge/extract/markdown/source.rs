//! What is done to Markdown source before the parser sees it: YAML front matter comes
//! off, and pipes inside code spans of table rows are escaped.

use std::borrow::Cow;
use std::collections::HashMap;

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

fn is_delim_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('|')
        && t.contains('-')
        && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

/// GFM splits a table row at every unescaped `|`, even inside a code span, so a cell such
/// as `` `a|b` `` (a shell pipe, a union type) would be torn in two and the rest of the row
/// shifted into the wrong columns. Writers mean the pipe as code, so inside the code spans
/// of table rows it is escaped before parsing. Linear: each line is looked at once.
pub(super) fn protect_code_pipes(src: &str) -> Cow<'_, str> {
    if !src.contains('`') || !src.contains('|') {
        return Cow::Borrowed(src);
    }
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    let mut out: Option<String> = None;
    let mut in_table = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() || !t.contains('|') || t.starts_with('>') {
            in_table = false;
        } else if !in_table {
            in_table = lines.get(i + 1).is_some_and(|next| is_delim_row(next));
        }
        let escaped = if in_table && line.contains('`') {
            escape_code_pipes(line)
        } else {
            None
        };
        match (escaped, &mut out) {
            (Some(e), Some(o)) => o.push_str(&e),
            (Some(e), None) => {
                let mut o: String = lines[..i].concat();
                o.push_str(&e);
                out = Some(o);
            }
            (None, Some(o)) => o.push_str(line),
            (None, None) => {}
        }
    }
    match out {
        Some(o) => Cow::Owned(o),
        None => Cow::Borrowed(src),
    }
}

/// The line with `\` before each unescaped `|` inside a code span; `None` when it has none.
/// A span opens with a run of backticks and closes at the next run of the same length.
fn escape_code_pipes(line: &str) -> Option<String> {
    let b = line.as_bytes();
    // Backtick runs: (start, length).
    let mut runs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'`' {
            let s = i;
            while i < b.len() && b[i] == b'`' {
                i += 1;
            }
            runs.push((s, i - s));
        } else {
            i += 1;
        }
    }
    // For each run, the next run of the same length, found in one backward pass.
    let mut next_same = vec![None; runs.len()];
    let mut latest: HashMap<usize, usize> = HashMap::new();
    for (r, &(_, len)) in runs.iter().enumerate().rev() {
        next_same[r] = latest.insert(len, r);
    }
    let mut spans = Vec::new();
    let mut r = 0;
    while r < runs.len() {
        let (start, len) = runs[r];
        match next_same[r].and_then(|k| runs.get(k).map(|&(close, _)| (k, close))) {
            Some((k, close)) => {
                spans.push(start + len..close);
                r = k + 1;
            }
            None => r += 1,
        }
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut last = 0;
    let mut changed = false;
    for span in spans {
        for p in span.clone() {
            if b[p] == b'|' && (p == 0 || b[p - 1] != b'\\') {
                out.push_str(&line[last..p]);
                out.push('\\');
                last = p;
                changed = true;
            }
        }
    }
    out.push_str(&line[last..]);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_in_table_code_spans_are_escaped_and_nothing_else() {
        let src = "| x | y |\n|---|---|\n| 1 | `a|b` |\n\n`c|d` outside\n";
        assert_eq!(
            protect_code_pipes(src),
            "| x | y |\n|---|---|\n| 1 | `a\\|b` |\n\n`c|d` outside\n"
        );
        let already = "| x |\n|---|\n| `a\\|b` ``c|`d`` |\n";
        assert_eq!(
            protect_code_pipes(already),
            "| x |\n|---|\n| `a\\|b` ``c\\|`d`` |\n"
        );
        assert!(matches!(
            protect_code_pipes("a | b\nno table `x|y`\n"),
            Cow::Borrowed(_)
        ));
    }
}
