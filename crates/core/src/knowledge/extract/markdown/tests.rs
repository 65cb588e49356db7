use super::read;
use crate::knowledge::extract::document::{Block, Code, List, Row, Table};
use crate::knowledge::extract::markdown_to_text;

fn text(md: &str) -> String {
    markdown_to_text(md).text
}

fn para(s: &str) -> Block {
    Block::Paragraph(s.into())
}

fn heading(level: u8, s: &str) -> Block {
    Block::Heading {
        level,
        text: s.into(),
    }
}

fn code(s: &str) -> Block {
    Block::Code(Code {
        text: s.into(),
        fenced: false,
    })
}

fn list(start: Option<u64>, items: Vec<Vec<Block>>) -> Block {
    Block::List(List { start, items })
}

#[test]
fn atx_and_setext_headings() {
    assert_eq!(
        read("# One #\n## Two ##  \n###### Six\n####### seven\n#no\n#\n### `code` \\#").blocks,
        vec![
            heading(1, "One"),
            heading(2, "Two"),
            heading(6, "Six"),
            para("####### seven #no"),
            heading(3, "code #"),
        ]
    );
    assert_eq!(
        read("Title *one*\nwraps\n===\n\nSub\n---\n\n   Indented\n   ---").blocks,
        vec![
            heading(1, "Title one wraps"),
            heading(2, "Sub"),
            heading(2, "Indented"),
        ]
    );
    assert_eq!(read("Title\n===").title.as_deref(), Some("Title"));
    // A heading may sit right against a paragraph; an underline only follows one.
    assert_eq!(
        read("text\n# Heading\n---\n").blocks,
        vec![para("text"), heading(1, "Heading")]
    );
}

#[test]
fn fenced_and_indented_code() {
    assert_eq!(
        read(
            "```rust ignore\nfn a() {}\n\n  *b*\n```\n~~~~ python\n```\nnot closed by ```\n~~~~~\n"
        )
        .blocks,
        vec![code("fn a() {}\n\n  *b*"), code("```\nnot closed by ```"),]
    );
    // A fence's indentation comes off its lines; an unclosed fence runs to the end of
    // its container.
    assert_eq!(
        read("  ```\n  a\n    b\nc\n  ```\n\n> ```\n> x\n\ny").blocks,
        vec![code("a\n  b\nc"), Block::Quote(vec![code("x")]), para("y"),]
    );
    // Indented code keeps inner blank lines and drops trailing ones; it cannot interrupt a
    // paragraph.
    assert_eq!(
        read("text\n    not code\n\n    code\n\n\tmore\n    \n\nafter").blocks,
        vec![para("text not code"), code("code\n\nmore"), para("after")]
    );
    // A backtick fence whose info string holds a backtick is a code span.
    assert_eq!(text("``` a`b\nc ```"), "a`b c");
}

#[test]
fn block_quotes_nest_and_continue_lazily() {
    assert_eq!(
        read("> one\ncontinued\n>\n> > two\n> back\n\nout").blocks,
        vec![
            Block::Quote(vec![
                para("one continued"),
                Block::Quote(vec![para("two back")]),
            ]),
            para("out"),
        ]
    );
    // A blank line ends a quote; `>` alone is a blank line inside one.
    assert_eq!(
        read("> a\n\n> b\n>\n> c").blocks,
        vec![
            Block::Quote(vec![para("a")]),
            Block::Quote(vec![para("b"), para("c")]),
        ]
    );
    assert_eq!(
        read(">#  Heading\n>- item\n>```\n>code").blocks,
        vec![Block::Quote(vec![
            heading(1, "Heading"),
            list(None, vec![vec![para("item")]]),
            code("code"),
        ])]
    );
}

#[test]
fn lists_ordered_unordered_nested_and_loose() {
    assert_eq!(
        read("- a\n+ b\n* c\n\n7. seven\n8. eight\n\n1) paren").blocks,
        vec![
            list(None, vec![vec![para("a")]]),
            list(None, vec![vec![para("b")]]),
            list(None, vec![vec![para("c")]]),
            list(Some(7), vec![vec![para("seven")], vec![para("eight")]]),
            list(Some(1), vec![vec![para("paren")]]),
        ]
    );
    // Continuation lines, lazy lines, nested lists and paragraphs of a loose list.
    assert_eq!(
        read(
            "1. first\n   more\nlazy\n   - nested\n\n     nested para\n2. second\n\n   second para\n\n\
             10. ten"
        )
        .blocks,
        vec![list(
            Some(1),
            vec![
                vec![
                    para("first more lazy"),
                    list(None, vec![vec![para("nested"), para("nested para")]]),
                ],
                vec![para("second"), para("second para")],
                vec![para("ten")],
            ]
        )]
    );
    // An item interrupts a paragraph only if it says something, and if numbered, is 1.
    assert_eq!(
        read("In the year\n1984. it was\n*\nand\n1. this").blocks,
        vec![
            para("In the year 1984. it was * and"),
            list(Some(1), vec![vec![para("this")]]),
        ]
    );
    // An item may start with a blank line, but only one.
    assert_eq!(
        read("-\n  starts below\n-\n\n  not in it").blocks,
        vec![
            list(None, vec![vec![para("starts below")], vec![]]),
            para("not in it"),
        ]
    );
    // Content five columns past the marker is code inside the item.
    assert_eq!(
        read("-      code\n  para").blocks,
        vec![list(None, vec![vec![code(" code"), para("para")]])]
    );
    assert_eq!(
        text("* a\n\n  b\n* c\n  > quoted\n\n  ```\n  code\n  ```"),
        "- a\n  b\n- c\n  > quoted\n  code"
    );
}

#[test]
fn thematic_breaks_end_paragraphs_and_lists() {
    assert_eq!(
        read("a\n***\nb\n- - -\n- c\n___\n _ _ _ x").blocks,
        vec![
            para("a"),
            para("b"),
            list(None, vec![vec![para("c")]]),
            para("_ _ _ x"),
        ]
    );
    assert_eq!(read("---\n\n***").blocks, vec![]);
}

#[test]
fn gfm_tables() {
    let table = |rows: Vec<Row>| Block::Table(Table { rows });
    assert_eq!(
        read(
            "| Left | Centre | Right |\n|:-----|:------:|------:|\n| a | `x|y` | c \\| d |\n\
             | only one |\n| 1 | 2 | 3 | 4 |\nno pipes\n\nafter"
        )
        .blocks,
        vec![
            table(vec![
                Row::header(["Left", "Centre", "Right"]),
                Row::data(["a", "x|y", "c | d"]),
                Row::data(["only one", "", ""]),
                Row::data(["1", "2", "3"]),
                Row::data(["no pipes", "", ""]),
            ]),
            para("after"),
        ]
    );
    // No outer pipes; a header of other width or no delimiter row is no table.
    assert_eq!(
        read("a | b\n--|--\n1 | 2").blocks,
        vec![table(vec![Row::header(["a", "b"]), Row::data(["1", "2"])])]
    );
    assert_eq!(
        read("| a | b |\n|---|\n| c |").blocks,
        vec![para("| a | b | |---| | c |")]
    );
    // A header starting with `|` interrupts a paragraph; a table ends at a new block.
    assert_eq!(
        read("Prices:\n| Item | Price |\n|---|---|\n| Tea | 2 |\n> quote").blocks,
        vec![
            para("Prices:"),
            table(vec![
                Row::header(["Item", "Price"]),
                Row::data(["Tea", "2"])
            ]),
            Block::Quote(vec![para("quote")]),
        ]
    );
    // Emphasis, links and code in cells read as anywhere else; `- | -` is a delimiter row,
    // not a list.
    assert_eq!(
        text("Name | Link\n- | -\n*Ada* | [docs](https://x.example \"t\")"),
        "Name: Ada; Link: docs"
    );
}

#[test]
fn hard_and_soft_breaks_part_words() {
    assert_eq!(text("one\ntwo  \nthree\\\nfour"), "one two three four");
    // A backslash at the very end is text.
    assert_eq!(text("end\\"), "end\\");
}

#[test]
fn backslash_escapes() {
    assert_eq!(
        text("\\*not em\\* \\_ \\` \\<b\\> \\[x\\](y) \\\\ \\a \\& &amp;"),
        "*not em* _ ` <b> [x](y) \\ \\a & &"
    );
    // No escapes in code spans or autolinks.
    assert_eq!(
        text("`a\\*b` <https://x.example/a\\_b>"),
        "a\\*b https://x.example/a\\_b"
    );
}

#[test]
fn autolinks_keep_their_address() {
    assert_eq!(
        text("See <https://example.com/a?b=c&d> or <MAILTO:a@b.c> or <team@example.org>."),
        "See https://example.com/a?b=c&d or MAILTO:a@b.c or team@example.org."
    );
    // Not autolinks: a space inside, no scheme, a one-letter scheme.
    assert_eq!(
        text("<https://a b> <example.com> <m:x>"),
        "<https://a b> <example.com> <m:x>"
    );
}

#[test]
fn emphasis_and_strikethrough() {
    let cases = [
        ("*a* _b_ **c** __d__ ***e*** ___f___", "a b c d e f"),
        ("*a **b** c* _a __b__ c_", "a b c a b c"),
        (
            "snake_case_name __dunder__ x_y_",
            "snake_case_name dunder x_y_",
        ),
        (
            "in*word*emphasis and in_word_not",
            "inwordemphasis and in_word_not",
        ),
        (
            "x * not * and _ not _ and a * b",
            "x * not * and _ not _ and a * b",
        ),
        ("**unclosed and *one", "**unclosed and *one"),
        ("*foo**bar**baz*", "foobarbaz"),
        ("**foo*", "*foo"),
        (
            "~~struck~~ ~one~ ~~~three~~~ a~~b~~c x~y~z",
            "struck one ~~~three~~~ abc x~y~z",
        ),
        ("~~mismatched~ ~~open", "~~mismatched~ ~~open"),
        ("*[link*](u)", "*link*"),
    ];
    for (md, want) in cases {
        assert_eq!(text(md), want, "for {md:?}");
    }
}

#[test]
fn links_and_images() {
    let cases = [
        (
            "[a](/u \"title\") [b](</my url> 'title') [c](u (title))",
            "a b c",
        ),
        ("[outer [inner] text](u)", "outer [inner] text"),
        ("[a](u \"unclosed) b", "[a](u \"unclosed) b"),
        ("[a] (u)", "[a] (u)"),
        ("[link [with](u1) nested](u2)", "[link with nested](u2)"),
        // The code span holds the first `]`; the second closes the link.
        ("[`code]`](u) `[a](b)`", "code] [a](b)"),
        ("![alt *text*](i.png \"t\") and ![ref][]", "and"),
        ("[![img](a.png) caption](u)", "caption"),
        ("[a]\n(u)", "[a] (u)"),
        ("<a href=\"x\">tag</a>[x](y)", "tagx"),
    ];
    for (md, want) in cases {
        assert_eq!(text(md), want, "for {md:?}");
    }
}

#[test]
fn reference_definitions_are_not_text() {
    let md = "[Foo Bar]: https://example.com \"Title\"\n[multi]:\n  /url\n  'on three\n  lines'\n\
              Uses [foo bar], [Multi][], [text][FOO  BAR], [undefined][nowhere] and [nope].";
    assert_eq!(
        text(md),
        "Uses foo bar, Multi, text, undefined and nope.".replace("nope", "[nope]")
    );
    // A definition cannot interrupt a paragraph, and needs only spaces after it.
    assert_eq!(
        text("para\n[a]: /u\n\n[b]: /u extra\n\n[a] [b]"),
        "para [a]: /u\n\n[b]: /u extra\n\n[a] [b]"
    );
    // Defined after use, inside a quote, or above a heading's underline.
    assert_eq!(
        text("[later]\n\n> [later]: /u\n\n[x]: /y\nTitle\n==="),
        "later\n\n# Title"
    );
}

#[test]
fn footnotes() {
    let md = "Claim.[^1] Another[^note].\n\n[^1]: The source.\n[^note]: First paragraph\n\
              continues.\n\n    Second paragraph.\n\nAfter.";
    assert_eq!(
        read(md).blocks,
        vec![
            para("Claim.[^1] Another[^note]."),
            para("[^1]: The source."),
            para("[^note]: First paragraph continues."),
            para("Second paragraph."),
            para("After."),
        ]
    );
    // A reference stays as written, even when nothing defines it.
    assert_eq!(
        text("See [^missing] and ![^1]."),
        "See [^missing] and ![^1]."
    );
    // A footnote's label goes before its first paragraph, wherever that is.
    assert_eq!(text("[^a]:\n    - item"), "- [^a]: item");
}

#[test]
fn html_blocks_inline_html_and_comments() {
    let md = "<div align=\"center\">\n  <img src=\"logo.png\">\n  <h1>Name</h1>\n</div>\n\n\
              <!-- a comment\n\nover a blank line -->\ntext <!-- inline --> <span>kept</span>\
              <br/>next\n\n<custom-tag>\nraw line\n\n<pre>\n*not md*\n\n</pre>\n\
              <?php echo 1; ?>\n\ndone";
    let out = markdown_to_text(md);
    assert_eq!(out.title.as_deref(), Some("Name"));
    assert_eq!(
        out.text,
        "# Name\n\ntext kept next\n\nraw line\n\n```\n*not md*\n```\n\ndone"
    );
    // An arbitrary tag alone on a line opens no block inside a paragraph.
    assert_eq!(text("para\n<custom-tag>\nmore"), "para more");
    assert_eq!(text("a < b and <3 and 1<2>"), "a < b and <3 and 1<2>");
}

#[test]
fn character_references() {
    assert_eq!(
        text("&copy; &#169; &#xA9; &eacute;t&eacute; &nbsp;x &amp;amp; &#12345678; &copy"),
        "© © © été x &amp; &#12345678; &copy"
    );
    // Not in code spans, autolinks or code blocks.
    assert_eq!(text("`&amp;`\n\n    &amp;"), "&amp;\n\n&amp;");
}

#[test]
fn code_spans_match_runs_of_equal_length() {
    assert_eq!(text("``a`b`` and `c`` d`"), "a`b and c`` d");
    assert_eq!(text("`unclosed *em*"), "`unclosed em");
    // Code spans take precedence over emphasis and links, and span lines.
    assert_eq!(text("*a `*` b* [x `](y)` z](u)"), "a * b x ](y) z");
    assert_eq!(text("`one\ntwo`"), "one two");
}

#[test]
fn deep_and_hostile_input_stays_bounded() {
    // Markers past the nesting bound are dropped; their text stays.
    let doc = read(&("> - ".repeat(200) + "deep"));
    assert!(crate::knowledge::extract::render(&doc).ends_with("deep"));
    for md in [
        "<a x='".repeat(50_000),
        "[a](b 'x ".repeat(50_000) + "'",
        "<!--".repeat(50_000),
        "<?".repeat(50_000) + "<![CDATA[".repeat(20_000).as_str(),
        "![".repeat(50_000) + "a" + &"](b)".repeat(50_000),
        (1..2000).map(|n| "`".repeat(n) + " ").collect::<String>(),
        "- ".repeat(30_000) + "\n" + &"  ".repeat(30_000) + "x\n",
        "|".repeat(50_000) + "\n" + &"|-".repeat(50_000) + "\n" + &"a\n".repeat(20_000),
        "[x]: <".repeat(50_000),
        "**a".repeat(50_000) + &"b__".repeat(50_000),
    ] {
        let start = std::time::Instant::now();
        let _ = markdown_to_text(&md);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}… took {:?}",
            &md[..12],
            start.elapsed()
        );
    }
}

#[test]
fn mdx_statements_are_code_not_content() {
    let mdx = "---\ntitle: Ocelots\n---\nimport Chart from './chart'\nimport { Note,\n  Tip } from \"../ui\"\n\nexport const meta = {\n  author: 'Ada',\n}\n\n# Ocelots\n\nOcelots nap in kapok trees.\nimport is a word here, mid-paragraph.\n\n```js\nimport x from 'y'\n```\n\n<Note>Exported goods</Note>\n";
    let doc = super::read_mdx(mdx);
    let all = format!("{doc:?}");
    assert!(
        !all.contains("chart") && !all.contains("author") && !all.contains("Tip"),
        "{all}"
    );
    assert!(all.contains("Ocelots nap in kapok trees."), "{all}");
    assert!(all.contains("import is a word here"), "{all}");
    assert!(
        all.contains("import x from 'y'"),
        "fenced code stays: {all}"
    );
    assert!(all.contains("Exported goods"), "{all}");
    assert_eq!(doc.title.as_deref(), Some("Ocelots"));
    // Plain Markdown keeps such lines: only MDX reads them as code.
    assert!(format!("{:?}", read("import Chart from './chart'\n")).contains("Chart"));
}
