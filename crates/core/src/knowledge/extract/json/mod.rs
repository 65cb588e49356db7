//! JSON and JSON Lines: every value under its key path, as `path: value` lines.
//!
//! A document that is a list of records (an array of objects, or JSON Lines) is a table:
//! each record a row, the keys its columns. Elsewhere records inside the document keep
//! one line each, `path[i]: key: value; key2: value`, so every record reads on its own.
//! Each top-level section becomes its own paragraph, so the chunker can split between them.

mod value;

use super::document::{Block, Cell, Document, Row, Table};
use super::ExtractError;
use std::collections::HashMap;
use value::Json;

fn json_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Flattens one object into `key: value` pairs for a single row; empty values
/// are left out because they only add noise to a row.
fn json_pairs(v: &Json, key: &str, pairs: &mut Vec<(String, String)>) {
    match v {
        Json::Null => {}
        Json::Obj(entries) => {
            for (k, x) in entries {
                json_pairs(x, &json_key(key, k), pairs);
            }
        }
        Json::Arr(items) if items.iter().all(Json::is_scalar) => {
            let joined: Vec<String> = items.iter().filter_map(Json::scalar).collect();
            if !joined.is_empty() {
                pairs.push((key.to_string(), joined.join(", ")));
            }
        }
        Json::Arr(items) => {
            for (i, x) in items.iter().enumerate() {
                json_pairs(x, &format!("{key}[{i}]"), pairs);
            }
        }
        scalar => {
            if let Some(s) = scalar.scalar().filter(|s| !s.is_empty()) {
                pairs.push((key.to_string(), s));
            }
        }
    }
}

fn json_row(v: &Json) -> String {
    let mut pairs = Vec::new();
    json_pairs(v, "", &mut pairs);
    pairs
        .into_iter()
        .map(|(k, v)| if k.is_empty() { v } else { format!("{k}: {v}") })
        .collect::<Vec<_>>()
        .join("; ")
}

fn json_lines(v: &Json, path: &str, out: &mut Vec<String>) {
    let labelled = |s: String| {
        if path.is_empty() {
            s
        } else {
            format!("{path}: {s}")
        }
    };
    match v {
        Json::Obj(entries) if entries.is_empty() => {
            if !path.is_empty() {
                out.push(labelled("(empty)".to_string()));
            }
        }
        Json::Obj(entries) => {
            for (k, x) in entries {
                json_lines(x, &json_key(path, k), out);
            }
        }
        Json::Arr(items) if items.is_empty() => {
            if !path.is_empty() {
                out.push(labelled("(empty)".to_string()));
            }
        }
        Json::Arr(items) if items.iter().all(Json::is_scalar) => {
            let values = items.iter().filter_map(Json::scalar);
            if path.is_empty() {
                out.extend(values);
            } else {
                out.push(labelled(values.collect::<Vec<_>>().join(", ")));
            }
        }
        // Records: one line each, so every row can be read on its own.
        Json::Arr(items) if items.iter().all(|x| matches!(x, Json::Obj(_))) => {
            for (i, x) in items.iter().enumerate() {
                let row = json_row(x);
                if row.is_empty() {
                    continue;
                }
                out.push(if path.is_empty() {
                    row
                } else {
                    format!("{path}[{i}]: {row}")
                });
            }
        }
        Json::Arr(items) => {
            for (i, x) in items.iter().enumerate() {
                json_lines(x, &format!("{path}[{i}]"), out);
            }
        }
        scalar => {
            if let Some(s) = scalar.scalar() {
                out.push(labelled(s));
            }
        }
    }
}

/// Reads a JSON document, or JSON Lines.
pub fn read(text: &str) -> Result<Document, ExtractError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(ExtractError("the JSON document is empty".to_string()));
    }
    let mut values = Vec::new();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Json>() {
        match v {
            Ok(v) => values.push(v),
            Err(e) => {
                let mut msg = e.to_string();
                if let Some(p) = msg.rfind(" at line ") {
                    msg.truncate(p);
                }
                return Err(ExtractError(format!(
                    "the JSON document is not valid at line {}, column {}: {}",
                    e.line(),
                    e.column(),
                    msg
                )));
            }
        }
    }
    // JSON Lines: several documents read as the rows of one array.
    let root = if values.len() == 1 {
        values.pop().unwrap_or(Json::Null)
    } else {
        Json::Arr(values)
    };
    let mut blocks: Vec<Block> = Vec::new();
    let paragraph = |lines: &[String]| Block::Paragraph(lines.join("\n"));
    match &root {
        // Each top-level section becomes its own paragraph so the chunker can split between
        // them; runs of plain values stay together.
        Json::Obj(entries) if !entries.is_empty() => {
            let mut plain: Vec<String> = Vec::new();
            for (k, v) in entries {
                let mut lines = Vec::new();
                json_lines(v, k, &mut lines);
                if v.is_scalar() || lines.len() <= 1 {
                    plain.extend(lines);
                } else {
                    if !plain.is_empty() {
                        blocks.push(paragraph(&plain));
                        plain.clear();
                    }
                    blocks.push(paragraph(&lines));
                }
            }
            if !plain.is_empty() {
                blocks.push(paragraph(&plain));
            }
        }
        Json::Arr(items)
            if !items.is_empty() && items.iter().all(|x| matches!(x, Json::Obj(_))) =>
        {
            if let Some(table) = records_table(items) {
                blocks.push(Block::Table(table));
            }
        }
        other => {
            let mut lines = Vec::new();
            json_lines(other, "", &mut lines);
            if !lines.is_empty() {
                blocks.push(paragraph(&lines));
            }
        }
    }
    let doc = Document {
        title: None,
        blocks,
    };
    if doc.is_blank() {
        return Err(ExtractError(
            "the JSON document holds no values to read".to_string(),
        ));
    }
    Ok(doc)
}

/// Records as a table: the columns are every key path the records use, in the order they
/// first appear. A record fills only its own columns, so a sparse set of records costs
/// what its values do, not records × columns.
fn records_table(items: &[Json]) -> Option<Table> {
    let mut columns: HashMap<(String, usize), usize> = HashMap::new();
    let mut names: Vec<String> = Vec::new();
    let mut rows = vec![Row::default()];
    for record in items {
        let mut pairs = Vec::new();
        json_pairs(record, "", &mut pairs);
        if pairs.is_empty() {
            continue;
        }
        // A key repeated inside one record gets a column of its own for each time.
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut placed: Vec<(usize, &str)> = Vec::with_capacity(pairs.len());
        for (key, value) in &pairs {
            let nth = seen.entry(key.as_str()).or_default();
            let col = *columns.entry((key.clone(), *nth)).or_insert_with(|| {
                names.push(key.clone());
                names.len() - 1
            });
            *nth += 1;
            placed.push((col, value.as_str()));
        }
        placed.sort_by_key(|&(col, _)| col);
        let mut cells = Vec::with_capacity(placed.len());
        let mut next = 0;
        for (col, value) in placed {
            if col > next {
                cells.push(Cell {
                    text: String::new(),
                    span: u32::try_from(col - next).unwrap_or(u32::MAX),
                    label: false,
                });
            }
            cells.push(Cell::new(value));
            next = col + 1;
        }
        rows.push(Row {
            header: false,
            cells,
        });
    }
    if rows.len() == 1 {
        return None;
    }
    rows[0] = Row::header(names);
    Some(Table { rows })
}
