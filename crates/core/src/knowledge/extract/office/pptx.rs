//! PPTX (PresentationML): each slide in the order the presentation shows them, as a section
//! titled by the slide's title (or "Slide N"), holding its text boxes, its bullet points,
//! its tables, the boxes of its SmartArt graphics and then its speaker notes, which often
//! say what the slide only hints at.
//!
//! Hidden slides are left out, as the presentation leaves them out; so are slide numbers,
//! dates, footers and the notes page's slide picture, which repeat on every slide and answer
//! nothing.

use super::xml::{attr, prefixed_attr, root, Ev, Reader};
use super::{Package, Role};
use crate::knowledge::extract::clean::squeeze_lines as tidy;
use crate::knowledge::extract::document::{Block, Cell, Document, PushFlat, Row, Table};
use crate::knowledge::extract::ExtractError;

/// Reads a PowerPoint presentation.
pub fn read(bytes: &[u8]) -> Result<Document, ExtractError> {
    let package = Package::open(bytes, "PPTX")?;
    let (main, presentation) = package.main_part("ppt/presentation.xml", "presentation")?;
    let mut blocks = Vec::new();
    let mut first_title = None;
    for (n, slide_path) in slide_order(&package, &main, &presentation)
        .iter()
        .enumerate()
    {
        let Some(xml) = package.text(slide_path)? else {
            continue;
        };
        let hidden = root(&xml)
            .is_some_and(|(_, a)| attr(a, "show").is_some_and(|v| v == "0" || v == "false"));
        if hidden {
            continue;
        }
        let mut slide = read_slide(&xml, false);
        let parts = package.relationships(slide_path);
        let part_text = |kind: &'static str| {
            parts
                .iter()
                .filter(move |r| r.kind == kind)
                .filter_map(|r| package.optional_text(&r.target))
        };
        // A SmartArt graphic keeps its text in a part of its own; each of its boxes reads
        // as a bullet point.
        for xml in part_text("diagramData") {
            for block in read_slide(&xml, false).blocks {
                match block {
                    Block::Paragraph(text) => slide.blocks.push_item(text.replace('\n', " ")),
                    other => slide.blocks.push(other),
                }
            }
        }
        let notes: Vec<Block> = part_text("notesSlide")
            .take(1)
            .flat_map(|xml| read_slide(&xml, true).blocks)
            .collect();
        if slide.blocks.is_empty() && notes.is_empty() && slide.title.is_none() {
            continue;
        }
        if first_title.is_none() {
            first_title.clone_from(&slide.title);
        }
        blocks.push(Block::Heading {
            level: 1,
            text: slide.title.unwrap_or_else(|| format!("Slide {}", n + 1)),
        });
        blocks.extend(slide.blocks);
        blocks.extend(notes);
    }
    Ok(Document {
        title: package.title().or(first_title),
        blocks,
    })
}

/// The highest slide part number read from a package that does not list its slides.
const MAX_SLIDE_NUMBER: usize = 10_000;

/// The slides' parts in the order the presentation lists them (`p:sldIdLst`); a package
/// that does not say is read in the order of the slides' numbers.
fn slide_order(package: &Package, main: &str, presentation: &str) -> Vec<String> {
    let relationships = package.relationships(main);
    let listed: Vec<String> = Reader::new(presentation)
        .filter_map(|ev| match ev {
            Ev::Start("sldId", a, _) => prefixed_attr(a, "id"),
            _ => None,
        })
        .filter_map(|id| relationships.iter().find(|r| r.id == id))
        .filter(|r| r.kind == "slide")
        .map(|r| r.target.clone())
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    // Placed by number rather than sorted, which would cost the Worker 2 KB.
    let numbered: Vec<(usize, &str)> = package
        .names()
        .filter_map(|name| {
            let number = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse::<usize>()
                .ok()?;
            (number <= MAX_SLIDE_NUMBER).then_some((number, name))
        })
        .collect();
    let last = numbered.iter().map(|(n, _)| *n).max().unwrap_or(0);
    let mut by_number = vec![None; last + 1];
    for (number, name) in numbered {
        by_number[number] = Some(name.to_string());
    }
    by_number.into_iter().flatten().collect()
}

struct Slide {
    title: Option<String>,
    blocks: Vec<Block>,
}

/// What a shape's placeholder (`p:ph`) makes of its text.
fn role_of(placeholder_type: Option<&str>) -> Role {
    match placeholder_type {
        Some("title" | "ctrTitle") => Role::Title,
        Some("sldNum" | "dt" | "ftr" | "hdr" | "sldImg") => Role::Skipped,
        Some("subTitle") => Role::Text,
        _ => Role::Points,
    }
}

/// The text of one slide (or, with `notes`, of a notes page, where only the notes
/// placeholder's text counts).
fn read_slide(xml: &str, notes: bool) -> Slide {
    let mut slide = Slide {
        title: None,
        blocks: Vec::new(),
    };
    let mut role = Role::Text;
    let mut paragraph = String::new();
    let mut in_text = false;
    let mut table: Option<(Table, Row, String)> = None;
    for ev in Reader::new(xml) {
        match ev {
            Ev::Start("sp", _, false) => role = if notes { Role::Skipped } else { Role::Text },
            Ev::Start("ph", a, _) => {
                role = match (notes, attr(a, "type").as_deref()) {
                    (true, Some("body")) => Role::Text,
                    (true, _) => Role::Skipped,
                    (false, kind) => role_of(kind),
                }
            }
            Ev::Start("p", _, false) => paragraph.clear(),
            Ev::Start("t", _, false) => in_text = true,
            Ev::End("t") => in_text = false,
            Ev::Start("br", _, _) => paragraph.push('\n'),
            Ev::Text(t) if in_text => paragraph.push_str(&t),
            Ev::Start("tbl", _, false) => table = Some(Default::default()),
            Ev::Start("tc", _, false) => {
                if let Some((_, _, cell)) = table.as_mut() {
                    cell.clear();
                }
            }
            Ev::End("p") => {
                let text = tidy(&std::mem::take(&mut paragraph));
                if text.is_empty() {
                    continue;
                }
                if let Some((_, _, cell)) = table.as_mut() {
                    if !cell.is_empty() {
                        cell.push(' ');
                    }
                    cell.push_str(&text.replace('\n', " "));
                    continue;
                }
                match role {
                    Role::Title => {
                        let title = slide.title.get_or_insert_with(String::new);
                        if !title.is_empty() {
                            title.push(' ');
                        }
                        title.push_str(&text.replace('\n', " "));
                    }
                    Role::Points => slide.blocks.push_item(text.replace('\n', " ")),
                    Role::Text => slide.blocks.push(Block::Paragraph(text)),
                    Role::Skipped => {}
                }
            }
            Ev::End("tc") => {
                if let Some((_, row, cell)) = table.as_mut() {
                    row.cells.push(Cell::new(std::mem::take(cell)));
                }
            }
            Ev::End("tr") => {
                if let Some((table, row, _)) = table.as_mut() {
                    let row = std::mem::take(row);
                    if !row.is_blank() {
                        table.rows.push(row);
                    }
                }
            }
            Ev::End("tbl") => {
                if let Some((mut rows, _, _)) = table.take() {
                    // A slide's table almost always opens with its column names.
                    if let (true, Some(first)) = (rows.rows.len() > 1, rows.rows.first_mut()) {
                        first.header = true;
                    }
                    for row in rows.rows {
                        slide.blocks.push_row(row);
                    }
                }
            }
            _ => {}
        }
    }
    slide
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slide_reads_as_its_title_text_points_and_table() {
        let xml = r#"<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody>
<a:p><a:r><a:t>First point</a:t></a:r></a:p><a:p><a:r><a:t>Second </a:t></a:r><a:r><a:t>point</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Opening hours</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:nvSpPr><p:nvPr/></p:nvSpPr><p:txBody><a:p><a:r><a:t>Free text</a:t></a:r><a:br/><a:r><a:t>on two lines</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>7</a:t></a:r></a:p></p:txBody></p:sp>
<p:graphicFrame><a:graphic><a:graphicData><a:tbl>
<a:tr><a:tc><a:txBody><a:p><a:r><a:t>Day</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>Hours</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
<a:tr><a:tc><a:txBody><a:p><a:r><a:t>Monday</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>9 &amp; 17</a:t></a:r></a:p></a:txBody></a:tc></a:tr>
</a:tbl></a:graphicData></a:graphic></p:graphicFrame>
</p:spTree></p:cSld></p:sld>"#;
        let slide = read_slide(xml, false);
        assert_eq!(slide.title.as_deref(), Some("Opening hours"));
        let mut points = Vec::new();
        points.push_item("First point".into());
        points.push_item("Second point".into());
        points.push(Block::Paragraph("Free text\non two lines".into()));
        points.push_row(Row::header(["Day", "Hours"]));
        points.push_row(Row::data(["Monday", "9 & 17"]));
        assert_eq!(slide.blocks, points);
    }

    #[test]
    fn a_notes_page_gives_only_its_notes() {
        let xml = r#"<p:notes xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr></p:sp>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Say that Sunday is closed.</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:nvSpPr><p:nvPr><p:ph type="sldNum" idx="5"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>3</a:t></a:r></a:p></p:txBody></p:sp>
</p:spTree></p:cSld></p:notes>"#;
        let notes = read_slide(xml, true);
        assert_eq!(notes.title, None);
        assert_eq!(
            notes.blocks,
            [Block::Paragraph("Say that Sunday is closed.".into())]
        );
    }
}
