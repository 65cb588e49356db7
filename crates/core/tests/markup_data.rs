use edgechat_core::knowledge::extract::ExtractError;
use edgechat_core::knowledge::extract::{csv_to_text, json_to_text, plain_to_text};

mod common;

fn fixture(name: &str) -> String {
    common::fixture_text("markup", name)
}

#[test]
fn csv_fixture_rows_read_on_their_own() {
    let text = csv_to_text(&fixture("people.csv")).expect("valid CSV");
    assert_eq!(
        text,
        "Name: Ada Lovelace; Born: 1815; Known for: Notes on the Analytical Engine; \
         Notes: First published algorithm, \"Note G\"\n\
         Name: Alan Turing; Born: 1912; Known for: Turing machine; Notes: Codebreaking at Bletchley Park\n\
         Name: Grace Hopper; Born: 1906; Known for: COBOL"
    );
}

#[test]
fn csv_detects_semicolons_tabs_and_crlf() {
    let text =
        csv_to_text("Produkt;Preis;Menge\r\nKaffee;2,50;3\r\nTee;1,80;\"10\"\r\n").expect("valid");
    assert_eq!(
        text,
        "Produkt: Kaffee; Preis: 2,50; Menge: 3\nProdukt: Tee; Preis: 1,80; Menge: 10"
    );
    let text = csv_to_text("city\tcountry\nLeeds\tUK\nLyon\tFrance, EU\n").expect("valid");
    assert_eq!(
        text,
        "city: Leeds; country: UK\ncity: Lyon; country: France, EU"
    );
}

#[test]
fn csv_without_header_uses_plain_rows() {
    let text = csv_to_text("2024-01-01,12.5,ok\n2024-01-02,13,\"late, again\"\n").expect("valid");
    assert_eq!(
        text,
        "2024-01-01 | 12.5 | ok\n2024-01-02 | 13 | late, again"
    );
    // A single row cannot be told apart from a header, so it is written as is.
    assert_eq!(
        csv_to_text("just,one,row").expect("valid"),
        "just | one | row"
    );
}

#[test]
fn csv_quoting_edge_cases() {
    let text = csv_to_text("a,b\n\"x\"\"y\",  \"p, q\"\n\"multi\nline\",z\n\n\n\"unterminated,w")
        .expect("valid");
    assert_eq!(
        text,
        "a: x\"y; b: p, q\na: multi line; b: z\na: unterminated,w"
    );
}

#[test]
fn csv_errors_are_sentences() {
    assert_eq!(
        csv_to_text(""),
        Err(ExtractError("the CSV file is empty".into()))
    );
    assert_eq!(
        csv_to_text(" \n\t\r\n"),
        Err(ExtractError("the CSV file is empty".into()))
    );
    assert_eq!(
        csv_to_text("\u{feff}"),
        Err(ExtractError("the CSV file is empty".into()))
    );
    let err = csv_to_text(",,\n\"\",\" \"\n").expect_err("no rows");
    assert_eq!(err.to_string(), "the CSV file has no rows");
}

#[test]
fn json_fixture_reads_as_key_paths() {
    let text = json_to_text(&fixture("shop.json")).expect("valid JSON");
    assert_eq!(
        text,
        "shop.name: The Corner Café\nshop.city: Leeds\nshop.open: true\n\n\
         rating: 4.7\ntags: coffee, cake, wifi\n\n\
         menu[0]: item: Espresso; price: 2.2; sizes: single, double\n\
         menu[1]: item: Flat white; price: 2.9; allergens.milk: true\n\n\
         owner: null\nnotes: Card only. No cash."
    );
}

#[test]
fn json_arrays_of_records_and_json_lines() {
    let text =
        json_to_text(r#"[{"name":"Ada","born":1815},{"name":"Alan","born":1912,"tags":[]}]"#)
            .expect("valid");
    assert_eq!(text, "name: Ada; born: 1815\nname: Alan; born: 1912");
    let text = json_to_text("{\"id\":1,\"ok\":true}\n{\"id\":2,\"ok\":false}\n").expect("valid");
    assert_eq!(text, "id: 1; ok: true\nid: 2; ok: false");
    let text =
        json_to_text(r#"{"a":[1,{"b":2},[3,4]],"e":{},"big":1e300,"neg":-5}"#).expect("valid");
    assert_eq!(
        text,
        "a[0]: 1\na[1].b: 2\na[2]: 3, 4\n\ne: (empty)\nbig: 1e300\nneg: -5"
    );
    assert_eq!(json_to_text("\"just text\"").expect("valid"), "just text");
}

#[test]
fn json_errors_name_line_and_column() {
    let err = json_to_text("{\n  \"a\": 1,\n  \"b\": }\n").expect_err("invalid");
    assert_eq!(
        err.0,
        "the JSON document is not valid at line 3, column 8: expected value"
    );
    let err = json_to_text("{\"a\": [1, 2").expect_err("truncated");
    assert!(
        err.0
            .starts_with("the JSON document is not valid at line 1, column 11"),
        "{err}"
    );
    assert_eq!(
        json_to_text("  ").expect_err("empty").0,
        "the JSON document is empty"
    );
    assert!(json_to_text("{}").is_err());
    // Deep nesting is refused rather than overflowing the stack.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(json_to_text(&deep)
        .expect_err("too deep")
        .0
        .contains("recursion limit"));
}

#[test]
fn plain_text_is_normalised() {
    let text = plain_to_text("\u{feff}Title\r\n\r\n\r\n\r\nPara one\rline two  \n\u{7}Bell\u{0}less\n\n\n  indented\u{c}next page\n\n");
    assert_eq!(
        text,
        "Title\n\nPara one\nline two\nBellless\n\n  indented\n\nnext page"
    );
    assert_eq!(plain_to_text("\n\n \n"), "");
}
