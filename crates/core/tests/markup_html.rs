use edgechat_core::knowledge::extract::html_to_text;
use std::time::{Duration, Instant};

mod common;

fn fixture(name: &str) -> String {
    common::fixture_text("markup", name)
}

/// An entity left in the output looks like `&name;` or `&#123;`.
fn leftover_entity(text: &str) -> Option<&str> {
    text.match_indices('&').find_map(|(i, _)| {
        let rest = &text[i + 1..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .unwrap_or(rest.len());
        (len > 0 && rest[len..].starts_with(';')).then(|| &text[i..i + len + 2])
    })
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn realistic_page_keeps_content_in_order() {
    let out = html_to_text(&fixture("page.html"));
    assert_eq!(
        out.title.as_deref(),
        Some("Café Opening Hours & Prices — The Corner Café")
    );
    let t = &out.text;
    let l = lines(t);
    assert_eq!(l[0], "# Opening hours & prices");
    assert!(t.contains(
        "The Corner Café is open seven days a week, from early morning until late\u{20}evening. \
         We serve fresh coffee, tea & pastries…"
    ));
    assert!(t.contains("Questions? Call us on 01234 567 890 or write to hello@example.com.\nWe reply within a day."));
    assert!(l.contains(&"## Opening hours"));
    assert!(l.contains(&"### How to order"));
    // Table rows, one line each, readable on their own.
    assert!(t.contains("Regular opening hours\n\nDay: Monday; Opens: 07:00; Closes: 18:00\nDay: Saturday; Opens: 08:00; Closes: 22:00\n"));
    assert!(l.contains(&"Day: Sunday; Opens: Closed"));
    // Nested and ordered lists.
    assert!(t.contains("- Coffee\n  - Espresso – £2.20\n  - Flat white – £2.90\n- Tea & infusions\n- Homemade cakes"));
    assert!(t.contains("1. Choose a drink.\n2. Pay at the counter."));
    assert!(l.contains(&"> “Best flat white in town.” — a happy customer"));
    assert!(t.contains("Wi-Fi: Free for customers\nDogs: Welcome on the terrace"));
    // <pre> keeps its line breaks and spacing.
    assert!(t.contains("Opening  hours:\n  Mon-Fri 07:00-18:00\n  Sat     08:00-22:00"));
    // Document order.
    let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("missing {s:?}"));
    assert!(pos("# Opening hours &") < pos("## Opening hours\n"));
    assert!(pos("Day: Monday") < pos("- Coffee"));
    assert!(pos("- Coffee") < pos("1. Choose"));
    assert!(pos("1. Choose") < pos("Wi-Fi"));
}

#[test]
fn realistic_page_drops_boilerplate() {
    let t = html_to_text(&fixture("page.html")).text;
    for gone in [
        "cookies",
        "Accept all",
        "Contact",
        "Visit us",
        "Home »",
        "- Home\n",
        "All rights reserved",
        "Privacy",
        "addEventListener",
        "font-family",
        "coffee icon",
        "Decorative text",
        "Hidden promo",
        "enable JavaScript",
        "Template text",
        "Map fallback",
        "Subscribe",
        "Related",
        "sister café",
        "not real",
        "<",
    ] {
        assert!(!t.contains(gone), "{gone:?} should be gone from:\n{t}");
    }
    assert_eq!(leftover_entity(&t), None);
    assert!(!t.contains("\n\n\n"));
    assert!(t.lines().all(|l| l == l.trim_end()));
}

#[test]
fn every_listed_entity_is_decoded() {
    let html = "<p>&amp; &lt; &gt; &quot; &apos; a&nbsp;b &copy; &reg; &mdash; &ndash; &hellip; \
                &lsquo;x&rsquo; &ldquo;y&rdquo; &#65;&#x42;&#X43; &#8212; &#150; &eacute;&Eacute; \
                &alpha;&Omega; &euro; &unknown; &amp AT&T &#0; &#xD800; &#99999999999;</p>";
    let t = html_to_text(html).text;
    assert_eq!(
        t,
        "& < > \" ' a b © ® — – … ‘x’ “y” ABC — – éÉ αΩ € &unknown; & AT&T \u{fffd} \u{fffd} \u{fffd}"
    );
}

#[test]
fn title_falls_back_to_first_h1_and_is_decoded() {
    let out = html_to_text("<body><p>intro</p><h1>Fish &amp; <i>Chips</i></h1></body>");
    assert_eq!(out.title.as_deref(), Some("Fish & Chips"));
    let out = html_to_text("<title>\n  A &lt;b&gt; title\n</title><h1>Other</h1>");
    assert_eq!(out.title.as_deref(), Some("A <b> title"));
    assert_eq!(html_to_text("<p>no headings</p>").title, None);
    // An SVG's <title> is an icon label, not the page title.
    let out = html_to_text("<svg><title>icon</title></svg><h1>Real</h1>");
    assert_eq!(out.title.as_deref(), Some("Real"));
}

#[test]
fn inline_elements_join_without_spurious_spaces() {
    let t = html_to_text(
        "<p>Hel<b>lo</b>, <i>wor</i><span>ld</span>!\n  <a href='#'>Link</a><code>x()</code></p>",
    )
    .text;
    assert_eq!(t, "Hello, world! Linkx()");
    let t = html_to_text("<div>one<div>two</div>three</div><span>four</span>").text;
    assert_eq!(t, "one\n\ntwo\n\nthree\n\nfour");
}

#[test]
fn prefers_main_but_falls_back_to_body_when_main_is_almost_empty() {
    let html =
        "<body><div>Intro paragraph that lives outside main but is the real content of this \
                small page, with enough words to matter for search.</div>\
                <main><form><input name=q></form><p>Search</p></main></body>";
    let t = html_to_text(html).text;
    assert!(t.contains("Intro paragraph that lives outside main"), "{t}");

    let html = "<body><div>Sidebar junk</div><main><p>Main body text with plenty of words so \
                that it clearly counts as the real content of the page and nothing else.</p></main></body>";
    let t = html_to_text(html).text;
    assert!(t.starts_with("Main body text"));
    assert!(!t.contains("Sidebar"));
}

#[test]
fn several_articles_are_all_kept_and_article_headers_stay() {
    let html = "<body><div class=promo>Buy now</div>\
        <article><header><h2>First post</h2><p>by Ann</p></header><p>Body one has words enough.</p>\
        <footer>Tags: a, b</footer></article>\
        <article><h2>Second post</h2><p>Body two is here with more words to read.</p></article></body>";
    let t = html_to_text(html).text;
    assert_eq!(
        t,
        "## First post\n\nby Ann\n\nBody one has words enough.\n\n## Second post\n\nBody two is here with more words to read."
    );
}

#[test]
fn role_attributes_and_hidden_elements_are_dropped() {
    let html = "<div role=banner>Banner</div><div role='navigation main'>Nav</div>\
        <p>Kept text</p><div role=contentinfo>Legal</div>\
        <div hidden=hidden>H1</div><div aria-hidden=TRUE>H2</div>\
        <div style='DISPLAY : none'>H3</div><div style='visibility:hidden'>H4</div>\
        <div hidden='until-found'>Findable</div><dialog>Closed dialog</dialog><dialog open>Open dialog</dialog>";
    assert_eq!(
        html_to_text(html).text,
        "Kept text\n\nFindable\n\nOpen dialog"
    );
}

#[test]
fn whole_page_inside_a_form_is_not_lost() {
    let html = "<body><form id=aspnetForm><div><h1>Annual report</h1><p>The annual report \
                describes our results for the year, including revenue, costs and the outlook \
                for the next twelve months.</p><input type=submit value=Go></div></form></body>";
    let t = html_to_text(html).text;
    assert!(
        t.starts_with("# Annual report\n\nThe annual report describes"),
        "{t}"
    );
}

#[test]
fn malformed_markup_is_handled_like_a_browser() {
    // Unclosed paragraphs and list items, uppercase tags.
    let t = html_to_text("<P>one<P>two<UL><LI>a<LI>b</UL>three").text;
    assert_eq!(t, "one\n\ntwo\n\n- a\n- b\n\nthree");
    // Stray `<` and `>` in text.
    let t = html_to_text("<p>1 < 2 and 3 > 2, a <- b, x<3</p><p>after</p>").text;
    assert_eq!(t, "1 < 2 and 3 > 2, a <- b, x<3\n\nafter");
    // `>` inside a quoted attribute.
    let t = html_to_text(r#"<a title="a > b" href='x>y'>link</a> text"#).text;
    assert_eq!(t, "link text");
    // A script that contains markup strings.
    let t = html_to_text(
        "<div>before<script>var s = '</div><p>not text</p>'; if (a<b) {}</script>after</div>",
    )
    .text;
    assert_eq!(t, "beforeafter");
    // CDATA, doctype, processing instructions and comments.
    let t = html_to_text(
        "<!DOCTYPE html><?xml version='1.0'?><p>a<![CDATA[ b ]]>c<!-- <p>no</p> -->d</p>",
    )
    .text;
    assert_eq!(t, "a b cd");
    // Misnested inline tags do not break the paragraph.
    let t = html_to_text("<p><b>bold <i>both</b> italic</i> plain</p><p>next</p>").text;
    assert_eq!(t, "bold both italic plain\n\nnext");
    // Unclosed table cells and rows.
    let t = html_to_text("<table><tr><th>A<th>B<tr><td>1<td>2<tr><td>3<td>4</table>after").text;
    assert_eq!(t, "A: 1; B: 2\nA: 3; B: 4\n\nafter");
    // A tag cut off at the end, and an unbalanced quote.
    assert_eq!(html_to_text("<p>kept</p><div class=\"x").text, "kept");
    assert_eq!(
        html_to_text("<p class=\"x>one</p><p>two</p>").text,
        "one\n\ntwo"
    );
    // Self-closing non-void HTML elements stay open, SVG ones do not.
    let t = html_to_text("<svg/><p>after svg</p><div/>inside div").text;
    assert_eq!(t, "after svg\n\ninside div");
    // Content after </body> and </html> still counts.
    let t = html_to_text("<html><body><p>in</p></body></html><p>late</p>").text;
    assert_eq!(t, "in\n\nlate");
}

#[test]
fn breaks_preformatted_text_and_quotes() {
    let t = html_to_text("<p>line one<br>line two<br/><br>line four</p>").text;
    assert_eq!(t, "line one\nline two\n\nline four");
    let t =
        html_to_text("<pre>\n  indented\n\tTabbed <b>bold</b>\n\n\n  end  \n</pre><p>x</p>").text;
    assert_eq!(t, "```\n  indented\n\tTabbed bold\n\n  end\n```\n\nx");
    // Code is fenced so that a comment line is never taken for a heading.
    let t = html_to_text("<pre># not a heading\nlabel x</pre>").text;
    assert_eq!(t, "```\n# not a heading\nlabel x\n```");
    let t = html_to_text("<blockquote><p>Quoted one.</p><p>Quoted two.</p></blockquote>").text;
    assert_eq!(t, "> Quoted one.\n\n> Quoted two.");
}

#[test]
fn lists_nest_and_number() {
    let html =
        "<ol start=3><li>three<ol><li>sub a</li><li><p>sub b</p><p>more b</p></li></ol></li>\
                <li>four</li></ol><ul><li><ul><li>deep only</li></ul></li></ul><p>end</p>";
    assert_eq!(
        html_to_text(html).text,
        "3. three\n   1. sub a\n   2. sub b\n      more b\n4. four\n\n  - deep only\n\nend"
    );
}

#[test]
fn tables_without_headers_infoboxes_and_layout_tables() {
    let t = html_to_text(
        "<table><tr><td>a</td><td></td><td>c</td></tr><tr><td>d</td><td>e</td></tr></table>",
    )
    .text;
    // The empty cell keeps its place: "c" is the third column's, not the second's.
    assert_eq!(t, "a |  | c\nd | e");
    let t = html_to_text(
        "<table><tr><th>Born</th><td>1815</td></tr><tr><th>Died</th><td>1852</td></tr></table>",
    )
    .text;
    assert_eq!(t, "Born: 1815\nDied: 1852");
    let t = html_to_text(
        "<table><tr><td><h2>Layout title</h2><p>Para one.</p></td><td><p>Side text</p></td></tr></table>",
    )
    .text;
    assert_eq!(t, "## Layout title\n\nPara one.\n\nSide text");
    let t =
        html_to_text("<table><tr><td>Single column</td></tr><tr><td>Second row</td></tr></table>")
            .text;
    assert_eq!(t, "Single column\n\nSecond row");
    // Cell content with line breaks and lists stays on one line.
    let t = html_to_text(
        "<table><thead><tr><th>Name</th><th>Address</th></tr></thead>\
         <tr><td>Ann</td><td>1 High St<br>Leeds</td></tr>\
         <tr><td>Bob</td><td><ul><li>x</li><li>y.</li><li>z</li></ul></td></tr></table>",
    )
    .text;
    assert_eq!(
        t,
        "Name: Ann; Address: 1 High St, Leeds\nName: Bob; Address: x, y. z"
    );
    // A header with no data rows is still written.
    assert_eq!(
        html_to_text("<table><tr><th>Only</th><th>Header</th></tr></table>").text,
        "Only | Header"
    );
}

#[test]
fn definition_lists() {
    let t = html_to_text("<dl><dt>A</dt><dt>B</dt><dd>both</dd><dd>again</dd><div><dt>C</dt><dd>c</dd></div><dt>D</dt></dl>").text;
    assert_eq!(t, "A / B: both\nA / B: again\nC: c\nD");
}

#[test]
fn five_megabyte_page_is_fast() {
    let section =
        "<div class=\"card\"><h2>Section &amp; title</h2><p>Some <b>bold</b> text with an \
                   <a href=\"/x?a=1&amp;b=2\">entity-laden link</a> and more words.</p>\
                   <ul><li>one</li><li>two</li></ul><table><tr><th>k</th><th>v</th></tr>\
                   <tr><td>1</td><td>2</td></tr></table><script>var x = '</div>';</script></div>\n";
    let mut html = String::from("<html><head><title>Big</title></head><body><main>");
    while html.len() < 5 * 1024 * 1024 {
        html.push_str(section);
    }
    html.push_str("</main></body></html>");
    let start = Instant::now();
    let out = html_to_text(&html);
    let took = start.elapsed();
    assert!(out.text.starts_with("## Section & title\n\nSome bold text"));
    assert!(out.text.contains("k: 1; v: 2"));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn hostile_inputs_stay_linear() {
    let cases: Vec<String> = vec![
        "<div>".repeat(400_000),
        "<b>".repeat(400_000) + &"</i>".repeat(400_000),
        "<".repeat(2_000_000),
        "<a ".repeat(500_000) + ">",
        "<a href=\"".repeat(300_000),
        "<!--".repeat(500_000),
        "&".repeat(1_000_000) + &"&amp".repeat(200_000),
        "<table><tr><td>".repeat(100_000),
        "<ul><li>".repeat(200_000),
        "<p>x</p>".repeat(300_000),
        "<script>".repeat(300_000),
        "</div>".repeat(400_000),
        "<div><span>".repeat(100_000) + &"</div>".repeat(200_000),
    ];
    for html in cases {
        let start = Instant::now();
        let _ = html_to_text(&html);
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{:?}… took {took:?}",
            &html[..20]
        );
    }
}
