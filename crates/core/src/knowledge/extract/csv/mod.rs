//! CSV: one table, its header row guessed from how the first row reads.

use super::clean::collapse_ws;
use super::document::{Block, Document, Row, Table, MAX_TABLE_CELLS};
use super::ExtractError;
use std::collections::HashMap;

/// Splits CSV text into records, at most `limit` of them. Quotes may hold delimiters,
/// doubled quotes and line breaks; a stray quote inside an unquoted field is kept as text,
/// and an unterminated quote runs to the end, as spreadsheet programs do. More than
/// `MAX_TABLE_CELLS` fields is an error: each is a string of its own, and a file of short
/// fields would hold many times its size in memory.
fn parse_csv(text: &str, delim: char, limit: usize) -> Result<Vec<Vec<String>>, ExtractError> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut cells = 0usize;
    let mut row: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            // Spaces before an opening quote (`a, "b, c"`) are common in
            // hand-written files and should not stop the quote counting.
            '"' if !was_quoted && field.trim().is_empty() => {
                field.clear();
                quoted = true;
                was_quoted = true;
            }
            '\r' | '\n' => {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                row.push(std::mem::take(&mut field));
                cells += row.len();
                if cells > MAX_TABLE_CELLS {
                    return Err(too_many_cells());
                }
                rows.push(std::mem::take(&mut row));
                was_quoted = false;
                if rows.len() >= limit {
                    return Ok(rows);
                }
            }
            c if c == delim => {
                row.push(std::mem::take(&mut field));
                // A line of delimiters alone counts before its end is reached.
                if cells + row.len() > MAX_TABLE_CELLS {
                    return Err(too_many_cells());
                }
                was_quoted = false;
            }
            c => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() || was_quoted {
        row.push(field);
        if cells + row.len() > MAX_TABLE_CELLS {
            return Err(too_many_cells());
        }
        rows.push(row);
    }
    Ok(rows)
}

fn too_many_cells() -> ExtractError {
    ExtractError(format!(
        "the CSV file has more than {MAX_TABLE_CELLS} fields; split it into smaller files"
    ))
}

/// Picks the delimiter that splits the first records into the same number of
/// fields most often; ties go to the one giving more fields.
fn detect_delimiter(text: &str) -> char {
    let mut end = text.len().min(64 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let sample = &text[..end];
    let mut best = (',', 0usize, 0usize);
    for delim in [',', ';', '\t', '|'] {
        let counts: Vec<usize> = parse_csv(sample, delim, 30)
            .unwrap_or_default()
            .iter()
            .filter(|r| r.iter().any(|f| !f.trim().is_empty()))
            .map(Vec::len)
            .collect();
        let mut freq: HashMap<usize, usize> = HashMap::new();
        for &c in &counts {
            *freq.entry(c).or_default() += 1;
        }
        let Some((&fields, &agree)) = freq.iter().max_by_key(|&(fields, agree)| (*agree, *fields))
        else {
            continue;
        };
        if fields >= 2 && (agree, fields) > (best.1, best.2) {
            best = (delim, agree, fields);
        }
    }
    best.0
}

fn looks_numeric(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
        && s.chars().all(|c| {
            c.is_ascii_digit()
                || matches!(
                    c,
                    '.' | ','
                        | '-'
                        | '+'
                        | '%'
                        | '$'
                        | '€'
                        | '£'
                        | '¥'
                        | ' '
                        | '/'
                        | ':'
                        | 'e'
                        | 'E'
                )
        })
}

fn looks_like_header(row: &[String]) -> bool {
    !row.is_empty()
        && row
            .iter()
            .all(|c| !c.is_empty() && !looks_numeric(c) && c.chars().count() <= 80)
}

/// Reads CSV (comma, semicolon, tab or pipe separated) as one table (`table_of`).
pub fn read(text: &str) -> Result<Document, ExtractError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ExtractError("the CSV file is empty".to_string()));
    }
    let delim = detect_delimiter(text);
    let rows: Vec<Vec<String>> = parse_csv(text, delim, usize::MAX)?
        .into_iter()
        .map(|r| r.iter().map(|c| collapse_ws(c)).collect::<Vec<_>>())
        .filter(|r| r.iter().any(|c| !c.is_empty()))
        .collect();
    if rows.is_empty() {
        return Err(ExtractError("the CSV file has no rows".to_string()));
    }
    Ok(Document {
        title: None,
        blocks: vec![Block::Table(table_of(rows))],
    })
}

/// A table of `rows` (a CSV file's, a spreadsheet's sheet): the first row names the columns
/// when it reads like titles (no empty, numeric or overlong cell) and data follows it; a
/// lone row cannot be told apart from a header, so it is data.
pub(crate) fn table_of(rows: Vec<Vec<String>>) -> Table {
    let header = rows.len() > 1 && rows.first().is_some_and(|first| looks_like_header(first));
    Table {
        rows: rows
            .into_iter()
            .enumerate()
            .map(|(i, cells)| {
                if i == 0 && header {
                    Row::header(cells)
                } else {
                    Row::data(cells)
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_more_fields_than_a_step_can_hold_is_refused() {
        let at_most = "a,b\n".repeat(MAX_TABLE_CELLS / 2);
        assert!(read(&at_most).is_ok());
        let err = read(&format!("{at_most}c")).expect_err("one field too many");
        assert!(err.0.contains("more than 500000 fields"), "{err}");
        // Counted while the row is read: one endless line is refused as well.
        assert!(read(&",".repeat(MAX_TABLE_CELLS + 5)).is_err());
    }

    #[test]
    fn delimiter_detection() {
        assert_eq!(detect_delimiter("a;b;c\n1,5;2,5;3\n4;5;6,1\n"), ';');
        assert_eq!(detect_delimiter("a\tb\n1\t2\n"), '\t');
        assert_eq!(detect_delimiter("a,b\n\"x;y\",2\n"), ',');
        assert_eq!(detect_delimiter("only one column\nsecond\n"), ',');
    }
}
