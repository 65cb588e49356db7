use edgechat_core::knowledge::extract::markdown_to_text;
use std::time::{Duration, Instant};

mod common;

fn fixture(name: &str) -> String {
    common::fixture_text("markup", name)
}

#[test]
fn readme_fixture() {
    let out = markdown_to_text(&fixture("README.md"));
    assert_eq!(out.title.as_deref(), Some("Corner Café Bot"));
    assert_eq!(
        out.text,
        "# Corner Café Bot

A chat assistant for the Corner Café website. It answers questions about opening hours and the menu.

## Installation

1. Install Rust with rustup.
2. Run cargo build --release. The binary lands in target/release.
3. Deploy it.

- Supports markdown and plain HTML
  - nested item with snake_case_name
- Uses 2 * 3 math literally

fn main() {
    println!(\"**not bold**\");
}

> Note: the bot never stores personal data.

Setting: PORT; Default: 8080; Meaning: Port to listen on
Setting: MODE; Default: prod; Meaning: Run mode

## Setext heading

Text with an autolink https://example.com/docs and a tag inline and an entity © 2024. Escaped *stars* stay."
    );
}

#[test]
fn title_is_first_h1_else_front_matter_else_none() {
    assert_eq!(
        markdown_to_text("## Sub\n\n# Main\n\n# Later")
            .title
            .as_deref(),
        Some("Main")
    );
    assert_eq!(
        markdown_to_text("Main *title*\n===\n").title.as_deref(),
        Some("Main title")
    );
    assert_eq!(
        markdown_to_text("---\ntitle: \"From YAML\"\n---\ntext")
            .title
            .as_deref(),
        Some("From YAML")
    );
    assert_eq!(markdown_to_text("## Only h2\n\ntext").title, None);
    // A leading rule is not front matter.
    let out = markdown_to_text("---\nJust a paragraph.\n\n---\n");
    assert_eq!(out.text, "Just a paragraph.");
}

#[test]
fn emphasis_links_and_images() {
    let cases = [
        (
            "**bold** and __strong__ and *em* and _em_",
            "bold and strong and em and em",
        ),
        (
            "snake_case_name and __init__ file",
            "snake_case_name and init file",
        ),
        ("2 * 3 * 4 = 24, a*b", "2 * 3 * 4 = 24, a*b"),
        ("~~gone~~ strike", "gone strike"),
        (
            "[text](http://x.com/a_(b)) and [ref][r] and [r]",
            "text and ref and r",
        ),
        (
            "[unknown] stays, [empty]() goes",
            "[unknown] stays, empty goes",
        ),
        ("![alt](img.png) [![badge](b.svg)](link) after", "after"),
        ("`code *not em*` and ``a ` b``", "code *not em* and a ` b"),
        ("a\\_b \\# \\[x\\]", "a_b # [x]"),
        (
            "<b>tag</b> <br> a < b > c <mail@example.com>",
            "tag a < b > c mail@example.com",
        ),
        ("&amp; &lt;3 &#x41; &nosuch;", "& <3 A &nosuch;"),
    ];
    for (md, want) in cases {
        let text = markdown_to_text(&format!("{md}\n\n[r]: http://ref.example")).text;
        assert_eq!(text, want, "for {md:?}");
    }
}

#[test]
fn lists_quotes_code_and_tables() {
    let md = "* a\n* b\n    * c\n      lazy line\n* d\n\n  continued para\n\nafter\n\n\
              > quoted\n> > deeper\n\n    indented code\n      keeps  spaces\n\n\
              ~~~\n# not a heading\n~~~\n\n| x | y |\n|---|---|\n| 1 | `a|b` |\n";
    assert_eq!(
        markdown_to_text(md).text,
        "- a\n- b\n  - c lazy line\n- d\n  continued para\n\nafter\n\n> quoted\n\n> > deeper\n\n\
         indented code\n  keeps  spaces\n\n# not a heading\n\nx: 1; y: a|b"
    );
}

#[test]
fn html_blocks_and_comments() {
    let md = "<h1 align=\"center\">Logo &amp; Name</h1>\n\n<!-- hidden\nnote -->\nVisible\n\n\
              <details><summary>More</summary>\n\nInner *md* text\n\n</details>\n\n<script>\nvar a;\n\nvar b;\n</script>\nend";
    let out = markdown_to_text(md);
    assert_eq!(out.title.as_deref(), Some("Logo & Name"));
    assert_eq!(
        out.text,
        "# Logo & Name\n\nVisible\n\nMore\n\nInner md text\n\nend"
    );
}

#[test]
fn hostile_markdown_stays_linear() {
    let cases = [
        "[".repeat(1_000_000),
        "[a](".repeat(200_000),
        "`".repeat(200_000) + &" `` ` ".repeat(100_000),
        "<".repeat(500_000) + ">",
        "<a ".repeat(300_000),
        "*_".repeat(500_000),
        "- x\n".to_string() + &"  - x\n".repeat(100_000),
        "> ".repeat(100_000),
        "| a |\n|---|\n".to_string() + &"| x |\n".repeat(100_000),
        "[".repeat(5000) + "a" + &"](b)".repeat(5000),
    ];
    for md in cases {
        let start = Instant::now();
        let _ = markdown_to_text(&md);
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{:?}… took {took:?}",
            &md[..10]
        );
    }
}
