//! EPUB: a book's chapters in reading order (its package's spine), each an XHTML page read
//! as a web page is, under the chapter's own title when its text does not open with one.
//! The navigation document is left out: it only repeats the chapters' titles.

use super::document::{Block, Document};
use super::html;
use super::office::xml::{attr, Ev, Reader};
use super::office::{resolve, Package};
use super::ExtractError;

/// Reads an EPUB book.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
    let package = Package::open(bytes, "EPUB")?;
    let no_package =
        || ExtractError("the file is not an EPUB: it names no package document".into());
    let container = package
        .text("META-INF/container.xml")?
        .ok_or_else(no_package)?;
    let opf_path = Reader::new(&container)
        .find_map(|ev| match ev {
            Ev::Start("rootfile", a, _) => attr(a, "full-path").map(|p| p.into_owned()),
            _ => None,
        })
        .ok_or_else(no_package)?;
    let opf = package.text(&opf_path)?.ok_or_else(no_package)?;
    let dir = opf_path.rsplit_once('/').map_or("", |(dir, _)| dir);

    // The manifest's pages (id, path), then the spine's order of them.
    let mut pages: Vec<(String, String)> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut title = String::new();
    let mut in_title = false;
    for ev in Reader::new(&opf) {
        match ev {
            Ev::Start("item", a, _) => {
                let is_page = attr(a, "media-type")
                    .is_some_and(|t| t == "application/xhtml+xml" || t == "text/html");
                let is_nav =
                    attr(a, "properties").is_some_and(|p| p.split(' ').any(|p| p == "nav"));
                if let (true, false, Some(id), Some(href)) =
                    (is_page, is_nav, attr(a, "id"), attr(a, "href"))
                {
                    pages.push((id.into_owned(), resolve(dir, &percent_decoded(&href))));
                }
            }
            Ev::Start("itemref", a, _) => order.extend(attr(a, "idref").map(|id| id.into_owned())),
            Ev::Start("title", _, false) if title.is_empty() => in_title = true,
            Ev::End("title") => in_title = false,
            Ev::Text(t) if in_title => title.push_str(&t),
            _ => {}
        }
    }
    let mut blocks = Vec::new();
    for id in &order {
        let Some((_, path)) = pages.iter().find(|(page, _)| page == id) else {
            continue;
        };
        let Some(xhtml) = package.text(path)? else {
            continue;
        };
        let chapter = html::read(&xhtml);
        let opens_with_title = matches!(chapter.blocks.first(), Some(Block::Heading { .. }));
        if let (false, Some(text)) = (opens_with_title || chapter.is_blank(), chapter.title) {
            blocks.push(Block::Heading { level: 1, text });
        }
        blocks.extend(chapter.blocks);
    }
    let title = title.trim();
    Ok(Document {
        title: (!title.is_empty()).then(|| title.to_string()),
        blocks,
    })
}

/// A manifest `href` with its `%XX` escapes decoded ("chapter%201.xhtml").
fn percent_decoded(href: &str) -> String {
    let bytes = href.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::percent_decoded;

    #[test]
    fn hrefs_are_percent_decoded() {
        assert_eq!(
            percent_decoded("Text/chapter%201.xhtml"),
            "Text/chapter 1.xhtml"
        );
        assert_eq!(percent_decoded("caf%C3%A9.xhtml"), "café.xhtml");
        assert_eq!(percent_decoded("100%.xhtml"), "100%.xhtml");
    }
}
