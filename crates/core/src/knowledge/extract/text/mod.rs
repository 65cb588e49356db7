//! Plain text: paragraphs at blank lines, each line kept as written (indentation and single
//! line breaks often carry meaning in plain text: addresses, poems, code).
//!
//! The marks people put in text files on purpose are honoured: a `# Heading` line, a title
//! underlined (or over- and underlined) with a run of one punctuation character at least as
//! long as it, as in reStructuredText and Setext, and AsciiDoc's `== Heading` start a
//! section; ``` (or `~~~`) fences hold code whose lines are never read as headings.
//! Everything else is text, kept as written: a `|` or a leading `*` says too little in a
//! text file (a shell pipeline, a box drawn in asterisks) to rewrite the line as a table
//! row or a list item.

use super::clean::{is_normal, normalise};
use super::document::{Block, Code, Document};
use std::ops::Range;

/// Reads a plain-text file.
pub fn read(text: &str) -> Document {
    read_normalised(&normalise(text))
}

/// Reads a plain-text file it is given, letting it go once normalised: at the largest upload,
/// the file, its normalised copy and the blocks would otherwise all be held at once.
pub fn read_owned(text: String) -> Document {
    if is_normal(&text) {
        return read_normalised(&text);
    }
    let normalised = normalise(&text);
    drop(text);
    read_normalised(&normalised)
}

fn read_normalised(text: &str) -> Document {
    let mut r = Reader::default();
    for line in text.split('\n') {
        r.line(line);
    }
    if let Some((_, code)) = r.fence.take() {
        r.blocks.push(code_block(&code));
    }
    r.end_paragraph();
    Document {
        title: None,
        blocks: r.blocks,
    }
}

#[derive(Default)]
struct Reader<'t> {
    blocks: Vec<Block>,
    para: Vec<&'t str>,
    /// The open fence's marker and its lines so far, the fence line included.
    fence: Option<(&'static str, Vec<&'t str>)>,
    /// The underline styles met so far (character, and whether over- and underlined), in
    /// order: as in reStructuredText, the first style met is level 1, the next level 2.
    styles: Vec<(char, bool)>,
}

impl<'t> Reader<'t> {
    fn line(&mut self, line: &'t str) {
        let trimmed = line.trim();
        if let Some((marker, code)) = &mut self.fence {
            let fence_char = marker.chars().next().unwrap_or('`');
            code.push(line);
            if trimmed.starts_with(*marker) && trimmed.trim_start_matches(fence_char).is_empty() {
                let block = code_block(code);
                self.blocks.push(block);
                self.fence = None;
            }
            return;
        }
        if trimmed.is_empty() {
            self.end_paragraph();
            return;
        }
        // Before fences: a run of `~` or a backtick as long as the line above underlines it.
        if let Some((mark, length)) = adornment(line) {
            if let Some((title, overlined)) = self.adorned_title(mark, length) {
                let level = self.level_of((mark, overlined));
                self.para.clear();
                self.blocks.push(Block::Heading { level, text: title });
                return;
            }
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            self.end_paragraph();
            self.fence = Some((marker, vec![line]));
            return;
        }
        if let Some((level, title)) = heading(line).or_else(|| asciidoc_heading(line)) {
            self.end_paragraph();
            self.blocks.push(Block::Heading {
                level: level.min(6) as u8,
                text: line[title].to_string(),
            });
            return;
        }
        self.para.push(line);
    }

    /// The title the open paragraph holds when `mark` repeated `length` times underlines it:
    /// its one line (then not overlined), or its second line when the first is the same
    /// run (overlined), no longer than the run.
    fn adorned_title(&self, mark: char, length: usize) -> Option<(String, bool)> {
        let (title, overlined) = match self.para.as_slice() {
            [title] => (*title, false),
            [over, title] if adornment(over).is_some_and(|(m, _)| m == mark) => (*title, true),
            _ => return None,
        };
        let title = title.trim();
        (adornment(title).is_none() && title.chars().count() <= length)
            .then(|| (title.to_string(), overlined))
    }

    fn level_of(&mut self, style: (char, bool)) -> u8 {
        let at = match self.styles.iter().position(|s| *s == style) {
            Some(at) => at,
            None => {
                self.styles.push(style);
                self.styles.len() - 1
            }
        };
        (at + 1).min(6) as u8
    }

    fn end_paragraph(&mut self) {
        if !self.para.is_empty() {
            self.blocks.push(Block::Paragraph(self.para.join("\n")));
            self.para.clear();
        }
    }
}

/// The fence lines are the file's own and stay as written (with any language name), so
/// the block is not fenced again.
fn code_block(lines: &[&str]) -> Block {
    Block::Code(Code {
        text: lines.join("\n"),
        fenced: false,
    })
}

/// `(level, title range relative to line)` for an ATX heading line: at most three spaces
/// of indent, one to six `#`, a space, and a title (an optional closing `##` run goes).
pub(crate) fn heading(line: &str) -> Option<(usize, Range<usize>)> {
    let indent = line.len() - line.trim_start().len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !after.starts_with([' ', '\t']) {
        return None;
    }
    let mut title = after.trim();
    // Optional closing sequence: "## Title ##".
    let stripped = title.trim_end_matches('#');
    if stripped.len() < title.len() && (stripped.is_empty() || stripped.ends_with([' ', '\t'])) {
        title = stripped.trim_end();
    }
    (!title.is_empty()).then(|| (level, span_in(line, title)))
}

/// Where `part`, a slice of `line`, lies in it.
fn span_in(line: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - line.as_ptr() as usize;
    start..start + part.len()
}

/// `(character, length)` for a line that is one ASCII punctuation character repeated at
/// least three times, unindented: a title's underline or overline, or a transition.
fn adornment(line: &str) -> Option<(char, usize)> {
    let run = line.trim_end();
    let mark = run.chars().next().filter(char::is_ascii_punctuation)?;
    let length = run.len();
    (length >= 3 && run.bytes().all(|b| b == mark as u8)).then_some((mark, length))
}

/// `(level, title range relative to line)` for an AsciiDoc heading line: one to six `=` at
/// the start of the line, a space, and a title.
fn asciidoc_heading(line: &str) -> Option<(usize, Range<usize>)> {
    let level = line.bytes().take_while(|&b| b == b'=').count();
    if !(1..=6).contains(&level) || !line[level..].starts_with(' ') {
        return None;
    }
    let title = line[level..].trim();
    (!title.is_empty()).then(|| (level, span_in(line, title)))
}

/// A line that starts a list item: `- `, `* `, `+ `, or a number of up to nine digits
/// followed by `. ` or `) `.
pub(crate) fn is_list_item(t: &str) -> bool {
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (1..=9).contains(&digits) && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

#[cfg(test)]
mod tests {
    use super::heading;
    use crate::knowledge::extract::plain_to_text;

    #[test]
    fn headings_are_recognised_strictly() {
        assert_eq!(heading("## Title"), Some((2, 3..8)));
        assert_eq!(
            heading("# Title ##").map(|(l, r)| (l, &"# Title ##"[r])),
            Some((1, "Title"))
        );
        assert_eq!(heading("# C#"), Some((1, 2..4)));
        assert_eq!(heading("#Title"), None);
        assert_eq!(heading("####### Seven"), None);
        assert_eq!(heading("#   "), None);
        assert_eq!(heading("    # indented code"), None);
    }

    fn outline(text: &str) -> Vec<(u8, String)> {
        super::read(text)
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                super::Block::Heading { level, text } => Some((level, text)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn underlined_titles_take_levels_in_the_order_their_styles_appear() {
        let rst = "=========\n Install \n=========\n\nRead this first.\n\nFrom source\n-----------\n\nRun make.\n\nWith pip\n~~~~~~~~\n\nRun pip.\n\nUpgrade\n-------\n\nAgain.";
        assert_eq!(
            outline(rst),
            [
                (1, "Install".to_string()),
                (2, "From source".to_string()),
                (3, "With pip".to_string()),
                (2, "Upgrade".to_string()),
            ]
        );
        let body: Vec<String> = super::read(rst)
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                super::Block::Paragraph(p) => Some(p),
                _ => None,
            })
            .collect();
        assert_eq!(
            body,
            ["Read this first.", "Run make.", "Run pip.", "Again."]
        );
    }

    #[test]
    fn a_run_under_a_longer_line_or_a_paragraph_stays_text() {
        // Too short to underline the line, after two lines of a paragraph, or alone.
        assert!(outline("A long first line\n---\n").is_empty());
        assert!(outline("One line\nand another\n--------------\n").is_empty());
        assert!(outline("Text.\n\n----------\n\nMore text.").is_empty());
        assert!(outline("Words\n-- -- --\n").is_empty());
        assert_eq!(outline("\n\nTitle\n=====\n").len(), 1);
    }

    #[test]
    fn asciidoc_headings_are_recognised() {
        assert_eq!(
            outline("= Guide\n\nIntro.\n\n== Setup\n\nSteps.\n\n=== Linux\n\nMore.\n\n==not a heading\n"),
            [
                (1, "Guide".to_string()),
                (2, "Setup".to_string()),
                (3, "Linux".to_string()),
            ]
        );
        // An AsciiDoc listing block's delimiters under a longer line are text.
        assert!(outline("[source,sh]\n----\nmake\n----\n").is_empty());
    }

    #[test]
    fn blank_runs_collapse() {
        assert_eq!(plain_to_text("\n\na  \n\n\n\nb\n \n"), "a\n\nb");
    }

    #[test]
    fn an_owned_text_reads_as_a_borrowed_one() {
        for text in [
            "# Title\n\nA line\twith a tab.\n\nMore.",
            "Windows\r\nlines\r\n\r\nand a form\u{c}feed",
            "zero\u{200b}width and a\u{2028}separator",
        ] {
            assert_eq!(
                super::is_normal(text),
                super::normalise(text) == text,
                "{text:?}"
            );
            assert_eq!(super::read_owned(text.to_string()), super::read(text));
        }
    }
}
