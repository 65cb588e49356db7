//! EPUB: a book's chapters in reading order (its package's spine), each an XHTML page read
//! as a web page is, under the chapter's own title when its text does not open with one.
//! The navigation document is left out: it only repeats the chapters' titles.

use super::document::{Block, Document};
use super::html;
use super::office::xml::{attr, Ev, Reader};
use super::office::{resolve, title_in, Package};
use super::ExtractError;
use percent_encoding::percent_decode_str;

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
    Ok(Document {
        title: title_in(&opf),
        blocks,
    })
}

/// A manifest `href` with its `%XX` escapes decoded ("chapter%201.xhtml").
fn percent_decoded(href: &str) -> String {
    percent_decode_str(href).decode_utf8_lossy().into_owned()
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
