//! HTML: web pages and uploaded `.html` files.
//!
//! The tokenizer and tree builder follow the browser's parsing rules closely enough that
//! malformed markup reads as a browser would show it; the reader then keeps what a reader
//! of the page would call its content. Site chrome goes: navigation, banners, footers,
//! asides, forms, hidden elements, scripts and styles. A page's `<main>` (or its
//! `<article>`s) is preferred to the whole body, unless it says almost nothing.
//!
//! Tables keep their header rows (`<thead>`, or rows of `<th>` only), so their rows read as
//! `Header: value` whatever chunk they land in.
//!
//! # Robustness
//!
//! Everything here runs on text that users and the web supply, inside a WebAssembly worker
//! where a panic kills the request. So nothing indexes by an offset derived from input
//! without checking it, no recursion follows input nesting without a bound (the tree is at
//! most `tree::MAX_DEPTH` deep), and every scan is linear in the input length.

mod entities;
mod reader;
mod tags;
mod tokenizer;
mod tree;

pub(super) use entities::parse_entity;

use super::clean::{collapse_ws, word_count};
use super::document::Document;
use super::render::render;
use reader::Reader;

/// Below this many words a page's main/article is treated as "almost nothing" and the body
/// is tried instead (e.g. a `<main>` that only holds a search box).
const MIN_WORDS: usize = 20;

/// Reads a web page.
pub fn read(html: &str) -> Document {
    let dom = tokenizer::parse_html(html);
    let body = dom.body.unwrap_or(0);
    let candidates: Vec<u32> = match dom.main {
        Some(m) => vec![m],
        None => dom.articles.clone(),
    };
    let roots = if candidates.is_empty() {
        vec![body]
    } else {
        candidates.clone()
    };
    let mut doc = Document {
        title: None,
        blocks: reader::blocks(&dom, &roots, false),
    };
    // How much a reading says is measured on its text, as a reader would count it.
    let mut words = word_count(&render(&doc));
    if !candidates.is_empty() && words < MIN_WORDS {
        let whole = Document {
            title: None,
            blocks: reader::blocks(&dom, &[body], false),
        };
        let whole_words = word_count(&render(&whole));
        if whole_words > 2 * words {
            doc = whole;
            words = whole_words;
        }
    }
    // Some sites (ASP.NET WebForms) wrap the entire page in one <form>.
    if words < MIN_WORDS {
        let lenient = Document {
            title: None,
            blocks: reader::blocks(&dom, &[body], true),
        };
        if word_count(&render(&lenient)) > 2 * words {
            doc = lenient;
        }
    }
    doc.title = dom
        .title
        .as_deref()
        .map(collapse_ws)
        .filter(|t| !t.is_empty())
        .or_else(|| {
            let h1 = dom.first_h1?;
            let t = Reader::new(&dom, false).inline_text(h1, " ");
            (!t.is_empty()).then_some(t)
        });
    doc
}

#[cfg(test)]
mod tests {
    use super::tokenizer::parse_html;
    use super::tree::{MAX_DEPTH, NONE};
    use crate::knowledge::extract::html_to_text;

    #[test]
    fn nesting_is_capped() {
        let html = "<div>".repeat(MAX_DEPTH * 4) + "deep";
        let dom = parse_html(&html);
        let mut depth = 0;
        let mut id = 0u32;
        while let Some(n) = dom.nodes.get(id as usize) {
            if n.first == NONE {
                break;
            }
            id = n.first;
            depth += 1;
        }
        assert!(depth <= MAX_DEPTH + 1, "depth {depth}");
        assert_eq!(html_to_text(&html).text, "deep");
    }
}
