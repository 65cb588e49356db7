//! Feeds pseudo-random input to every function: none may panic, and the
//! output must keep the promised shape whatever comes in.
use edgechat_core::knowledge::extract::{
    csv_to_text, html_to_text, json_to_text, markdown_to_text, plain_to_text,
};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE html>",
    "<?",
    "&",
    ";",
    "&#",
    "&#x",
    "&amp",
    "&nbsp;",
    "\"",
    "'",
    "=",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\0",
    "\u{feff}",
    "é",
    "😀",
    "div",
    "p",
    "table",
    "tr",
    "td",
    "th",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "pre",
    "br",
    "h1",
    "h2",
    "script",
    "style",
    "svg",
    "title",
    "main",
    "article",
    "nav",
    "header",
    "form",
    "hidden",
    "aria-hidden=true",
    "role=navigation",
    "colspan=99",
    "start=-1",
    "<table>",
    "<td>",
    "<li>",
    "<pre>",
    "</pre>",
    "<script>",
    "</script>",
    "<p>",
    "</p>",
    "<main>",
    "<title>",
    "*",
    "_",
    "`",
    "```",
    "~~~",
    "[",
    "]",
    "(",
    ")",
    "!",
    "#",
    "# ",
    "> ",
    "- ",
    "1. ",
    "|",
    "---",
    "===",
    ",",
    ";",
    "{",
    "}",
    ":",
    "[]",
    "null",
    "1e999",
    "\\",
    "\"a\":",
    "9",
    "x",
];

fn random_input(rng: &mut XorShift) -> String {
    let mut s = String::new();
    let len = rng.below(120);
    for _ in 0..len {
        if rng.below(4) == 0 {
            let bytes: Vec<u8> = (0..rng.below(8)).map(|_| rng.next() as u8).collect();
            s.push_str(&String::from_utf8_lossy(&bytes));
        } else {
            s.push_str(PIECES[rng.below(PIECES.len())]);
        }
    }
    s
}

fn check_shape(what: &str, input: &str, out: &str) {
    assert!(
        !out.contains("\n\n\n"),
        "{what}: triple newline for {input:?}"
    );
    assert!(
        out.chars()
            .all(|c| !c.is_control() || c == '\n' || c == '\t'),
        "{what}: control character for {input:?}"
    );
    assert_eq!(
        out,
        out.trim_matches('\n'),
        "{what}: untrimmed for {input:?}"
    );
}

#[test]
fn random_input_never_panics() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..4000 {
        let input = random_input(&mut rng);
        let html = html_to_text(&input);
        check_shape("html", &input, &html.text);
        if let Some(t) = &html.title {
            assert!(!t.contains('\n'));
        }
        let md = markdown_to_text(&input);
        check_shape("markdown", &input, &md.text);
        check_shape("plain", &input, &plain_to_text(&input));
        if let Ok(csv) = csv_to_text(&input) {
            assert!(!csv.is_empty() || input.trim().is_empty());
        }
        let _ = json_to_text(&input);
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = XorShift(42);
    for _ in 0..2000 {
        let bytes: Vec<u8> = (0..rng.below(400)).map(|_| rng.next() as u8).collect();
        let input = String::from_utf8_lossy(&bytes);
        let _ = html_to_text(&input);
        let _ = markdown_to_text(&input);
        let _ = plain_to_text(&input);
        let _ = csv_to_text(&input);
        let _ = json_to_text(&input);
    }
}
