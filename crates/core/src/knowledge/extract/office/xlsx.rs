//! XLSX (SpreadsheetML): each visible sheet as a section named after it, holding one table
//! whose first row names the columns when it reads like titles (as a CSV file's does).
//! Cells show what the spreadsheet shows for the common cases: shared and inline text, the
//! cached result of a formula, TRUE/FALSE, dates and times as ISO dates, percentages, and
//! numbers without the binary noise of their stored form (0.30000000000000004 is 0.3).

use super::xml::{attr, prefixed_attr, Ev, Reader};
use super::{push_sheet, Package};
use crate::knowledge::extract::binary::{
    too_much_cell_text, Budget, CELL_COST, CELL_TEXT_BUDGET, MAX_SHEET_COLUMNS,
};
use crate::knowledge::extract::document::Document;
use crate::knowledge::extract::ExtractError;
use crate::time::format_secs;

/// Reads an Excel workbook.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
    let package = Package::open(bytes, "XLSX")?;
    let (main, workbook) = package.main_part("xl/workbook.xml", "workbook")?;
    let relationships = package.relationships(&main);
    let part_of = |kind: &str| {
        relationships
            .iter()
            .find(|r| r.kind == kind)
            .and_then(|r| package.optional_text(&r.target))
    };
    let shared = part_of("sharedStrings")
        .map(|xml| shared_strings(&xml))
        .unwrap_or_default();
    let formats = part_of("styles")
        .map(|xml| cell_formats(&xml))
        .unwrap_or_default();
    let book = Book {
        shared,
        formats,
        cell_text: Budget::new(CELL_TEXT_BUDGET),
        date_1904: Reader::new(&workbook).any(|ev| {
            matches!(ev, Ev::Start("workbookPr", a, _)
                if attr(a, "date1904").is_some_and(|v| v == "1" || v == "true"))
        }),
    };
    let mut blocks = Vec::new();
    for ev in Reader::new(&workbook) {
        let Ev::Start("sheet", a, _) = ev else {
            continue;
        };
        if attr(a, "state").is_some_and(|s| s != "visible") {
            continue;
        }
        let Some(target) = prefixed_attr(a, "id")
            .and_then(|id| relationships.iter().find(|r| r.id == id))
            .map(|r| r.target.clone())
        else {
            continue;
        };
        let Some(xml) = package.text(&target)? else {
            continue;
        };
        let rows = book.rows(&xml)?;
        if rows.is_empty() {
            continue;
        }
        push_sheet(&mut blocks, &attr(a, "name").unwrap_or_default(), rows);
    }
    Ok(Document {
        title: package.title(),
        blocks,
    })
}

/// How a number cell is shown.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
enum Shown {
    #[default]
    Number,
    Percent,
    Date,
    DateTime,
}

struct Book {
    shared: Vec<String>,
    /// By cell style index (a cell's `s`).
    formats: Vec<Shown>,
    /// What the cells' text may still take (`CELL_TEXT_BUDGET`).
    cell_text: Budget,
    date_1904: bool,
}

impl Book {
    /// A sheet's rows, each as wide as its last filled cell; empty rows left out.
    fn rows(&self, xml: &str) -> Result<Vec<Vec<String>>, ExtractError> {
        let mut rows = Vec::new();
        let mut row: Vec<String> = Vec::new();
        // The cell being read: its column, type and style, and its value's text.
        let mut cell: Option<(usize, String, Shown)> = None;
        let mut value = String::new();
        let (mut in_value, mut in_phonetic) = (false, false);
        for ev in Reader::new(xml) {
            match ev {
                Ev::Start("row", _, false) => row.clear(),
                Ev::Start("c", a, empty) => {
                    let column = attr(a, "r").map_or(row.len(), |r| column_of(&r));
                    let kind = attr(a, "t").map_or_else(String::new, |t| t.into_owned());
                    let shown = attr(a, "s")
                        .and_then(|s| s.parse::<usize>().ok())
                        .and_then(|s| self.formats.get(s).copied())
                        .unwrap_or_default();
                    value.clear();
                    cell = (!empty && column < MAX_SHEET_COLUMNS).then_some((column, kind, shown));
                }
                // A formula's text is not shown; its cached result (`v`) is.
                Ev::Start("v" | "t", _, false) => in_value = cell.is_some() && !in_phonetic,
                Ev::End("v" | "t") => in_value = false,
                // Phonetic guides repeat the text they annotate.
                Ev::Start("rPh", _, false) => in_phonetic = true,
                Ev::End("rPh") => in_phonetic = false,
                Ev::Text(t) if in_value => value.push_str(&t),
                Ev::End("c") => {
                    let Some((column, kind, shown)) = cell.take() else {
                        continue;
                    };
                    let text = self.shown(&kind, shown, value.trim());
                    if text.is_empty() {
                        continue;
                    }
                    if !self.cell_text.take(text.len() + CELL_COST) {
                        return Err(too_much_cell_text());
                    }
                    if row.len() <= column {
                        row.resize(column + 1, String::new());
                    }
                    row[column] = text;
                }
                Ev::End("row") if row.iter().any(|c| !c.is_empty()) => {
                    rows.push(std::mem::take(&mut row));
                }
                _ => {}
            }
        }
        Ok(rows)
    }

    /// What the spreadsheet shows for a cell of type `kind` (its `t`) holding `value`.
    fn shown(&self, kind: &str, shown: Shown, value: &str) -> String {
        match kind {
            "s" => value
                .parse::<usize>()
                .ok()
                .and_then(|i| self.shared.get(i))
                .map_or_else(String::new, |s| s.trim().to_string()),
            "b" => (if value == "1" { "TRUE" } else { "FALSE" }).into(),
            "n" | "" => match serde_json::from_str::<f64>(value) {
                Ok(n) if n.is_finite() => self.number(n, shown),
                _ => value.to_string(),
            },
            // Text, a formula's text result, an error such as #N/A.
            _ => value.to_string(),
        }
    }

    fn number(&self, n: f64, shown: Shown) -> String {
        match shown {
            Shown::Number => plain(n),
            Shown::Percent => format!("{}%", plain(n * 100.0)),
            Shown::Date | Shown::DateTime => {
                // Serial days since 1899-12-30 (or 1904-01-01), the fraction the time of day.
                let epoch_days = if self.date_1904 { 24_107.0 } else { 25_569.0 };
                let secs = ((n - epoch_days) * 86_400.0).round() as i64;
                let stamp = format_secs(secs);
                if shown == Shown::Date || secs % 86_400 == 0 {
                    stamp[..10].to_string()
                } else {
                    format!("{} {}", &stamp[..10], &stamp[11..19])
                }
            }
        }
    }
}

/// A number as the spreadsheet shows it in a general cell: to 15 significant digits.
/// Written with the JSON number formatter the Worker already carries: Rust's own float
/// parsing and fixed-precision formatting would add about 25 KB to it.
fn plain(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return (n as i64).to_string();
    }
    // The decimal exponent of the first significant digit; the rounding then divides or
    // multiplies by a power of ten, which is exact up to 1e22.
    let (mut magnitude, mut exponent) = (n.abs(), 0i32);
    while magnitude >= 10.0 {
        magnitude /= 10.0;
        exponent += 1;
    }
    while magnitude < 1.0 && magnitude > 0.0 {
        magnitude *= 10.0;
        exponent -= 1;
    }
    let shift = 14 - exponent;
    let rounded = if shift >= 0 {
        let scale = 10f64.powi(shift);
        (n * scale).round() / scale
    } else {
        let scale = 10f64.powi(-shift);
        (n / scale).round() * scale
    };
    let shown = serde_json::Number::from_f64(if rounded.is_finite() { rounded } else { n });
    shown.map_or_else(String::new, |number| number.to_string())
}

/// The zero-based column of a cell reference ("C7" is 2).
fn column_of(reference: &str) -> usize {
    reference
        .bytes()
        .take_while(u8::is_ascii_alphabetic)
        .fold(0usize, |n, b| {
            n.saturating_mul(26)
                .saturating_add(usize::from(b.to_ascii_uppercase() - b'A') + 1)
        })
        .saturating_sub(1)
}

/// The workbook's shared strings, in order: the text of each `si`, its runs joined.
fn shared_strings(xml: &str) -> Vec<String> {
    let mut strings = Vec::new();
    let mut current = String::new();
    let (mut in_text, mut in_phonetic) = (false, false);
    for ev in Reader::new(xml) {
        match ev {
            Ev::Start("si", _, false) => current.clear(),
            Ev::Start("si", _, true) => strings.push(String::new()),
            Ev::End("si") => strings.push(std::mem::take(&mut current)),
            Ev::Start("rPh", _, false) => in_phonetic = true,
            Ev::End("rPh") => in_phonetic = false,
            Ev::Start("t", _, false) => in_text = !in_phonetic,
            Ev::End("t") => in_text = false,
            Ev::Text(t) if in_text => current.push_str(&t),
            _ => {}
        }
    }
    strings
}

/// How each cell style (`cellXfs`, by index) shows a number, from its number format: the
/// built-in date, time and percent formats by id, custom ones by their format code.
fn cell_formats(xml: &str) -> Vec<Shown> {
    let mut custom: Vec<(String, Shown)> = Vec::new();
    let mut formats = Vec::new();
    let mut in_cell_formats = false;
    for ev in Reader::new(xml) {
        match ev {
            Ev::Start("numFmt", a, _) => {
                if let (Some(id), Some(code)) = (attr(a, "numFmtId"), attr(a, "formatCode")) {
                    custom.push((id.into_owned(), shown_by_code(&code)));
                }
            }
            Ev::Start("cellXfs", _, false) => in_cell_formats = true,
            Ev::End("cellXfs") => in_cell_formats = false,
            Ev::Start("xf", a, _) if in_cell_formats => {
                let id = attr(a, "numFmtId").unwrap_or_default();
                let by_custom = custom.iter().find(|(c, _)| *c == id).map(|(_, s)| *s);
                formats.push(by_custom.unwrap_or_else(|| match id.parse::<u32>() {
                    Ok(9 | 10) => Shown::Percent,
                    Ok(14..=17) => Shown::Date,
                    Ok(18..=22 | 45..=47) => Shown::DateTime,
                    _ => Shown::Number,
                }));
            }
            _ => {}
        }
    }
    formats
}

/// What a custom number format code shows: quoted text, `[...]` colours and conditions and
/// `\`-escaped characters say nothing of it.
fn shown_by_code(code: &str) -> Shown {
    let mut bare = String::new();
    let (mut quoted, mut bracket, mut escaped) = (false, false, false);
    for c in code.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '[' if !quoted => bracket = true,
            ']' if !quoted => bracket = false,
            c if !quoted && !bracket => bare.push(c.to_ascii_lowercase()),
            _ => {}
        }
    }
    let date = bare.contains('y') || bare.contains('d');
    let time = bare.contains('h') || bare.contains('s');
    match (date, time) {
        (true, true) => Shown::DateTime,
        (true, false) => Shown::Date,
        (false, true) => Shown::DateTime,
        _ if bare.contains('%') => Shown::Percent,
        _ => Shown::Number,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> Book {
        Book {
            shared: vec!["Plan".into(), "Price".into(), "Basic".into()],
            formats: vec![Shown::Number, Shown::Date, Shown::Percent, Shown::DateTime],
            cell_text: Budget::new(CELL_TEXT_BUDGET),
            date_1904: false,
        }
    }

    #[test]
    fn cells_show_what_the_spreadsheet_shows() {
        let xml = r#"<worksheet><sheetData>
<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="s"><v>1</v></c></row>
<row r="2"/>
<row r="4"><c r="A4" t="s"><v>2</v></c><c r="B4" s="1"><v>45292</v></c><c r="C4"><f>A1*3</f><v>0.30000000000000004</v></c><c r="D4" s="2"><v>0.15</v></c></row>
<row r="5"><c r="A5" t="inlineStr"><is><r><t>Pro &amp; </t></r><r><t>more</t></r><rPh><t>ぷろ</t></rPh></is></c><c r="B5" s="3"><v>45292.75</v></c><c r="C5" t="b"><v>1</v></c><c r="E5" t="e"><v>#N/A</v></c></row>
</sheetData></worksheet>"#;
        assert_eq!(
            book().rows(xml).expect("rows"),
            [
                vec!["Plan", "", "Price"],
                vec!["Basic", "2024-01-01", "0.3", "15%"],
                vec!["Pro & more", "2024-01-01 18:00:00", "TRUE", "", "#N/A"],
            ]
        );
    }

    #[test]
    fn one_long_shared_string_named_many_times_is_refused() {
        let book_of_one_mib_string = || Book {
            shared: vec!["x".repeat(1 << 20)],
            ..book()
        };
        let cells = |n: usize| format!("<row>{}</row>", r#"<c t="s"><v>0</v></c>"#.repeat(n));
        assert!(book_of_one_mib_string().rows(&cells(20)).is_ok());
        let err = book_of_one_mib_string()
            .rows(&cells(13).repeat(2))
            .expect_err("over the budget");
        assert!(err.0.contains("more than 24 MiB"), "{err}");
    }

    #[test]
    fn columns_and_formats_are_read() {
        assert_eq!(column_of("A1"), 0);
        assert_eq!(column_of("Z9"), 25);
        assert_eq!(column_of("AA10"), 26);
        assert_eq!(column_of("XFD1048576"), 16_383);
        assert_eq!(shown_by_code("yyyy\\-mm\\-dd"), Shown::Date);
        assert_eq!(shown_by_code("[$-409]h:mm AM/PM"), Shown::DateTime);
        assert_eq!(shown_by_code("0.0%"), Shown::Percent);
        assert_eq!(shown_by_code("\"days\" 0"), Shown::Number);
        assert_eq!(shown_by_code("#,##0.00 [$€-407]"), Shown::Number);
        assert_eq!(plain(1234.5), "1234.5");
        assert_eq!(plain(1e21), "1e+21");
        assert_eq!(
            plain(-0.000_012_345_678_901_234_56),
            "-0.0000123456789012346"
        );
        assert_eq!(plain(2.0 / 3.0), "0.666666666666667");
    }

    #[test]
    fn shared_strings_join_runs_and_skip_phonetic_guides() {
        let xml = r#"<sst><si><t>One</t></si><si><r><t>Tw</t></r><r><t>o</t></r></si><si/><si><t>東京</t><rPh><t>トウキョウ</t></rPh></si></sst>"#;
        assert_eq!(shared_strings(xml), ["One", "Two", "", "東京"]);
    }
}
