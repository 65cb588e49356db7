//! How the built-in engine cuts a passage into what it may quote: table rows and list items
//! by line, prose by sentence (joining hard-wrapped lines, keeping abbreviations, decimals and
//! German dates whole), a label or lead-in with what it introduces, and a sentence that leans
//! on the one before it kept after it.

use crate::knowledge::query::words;

/// Whether `c` ends a sentence, in the scripts the engine reads.
fn ends_sentence(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？')
}

/// What goes between two sentences quoted one after the other: nothing after a Chinese or
/// Japanese full stop before text in those scripts, which set no space there; else a space.
pub(super) fn sentence_gap(before: &str, after: &str) -> &'static str {
    let cjk_stop = before.ends_with(['。', '！', '？']);
    if cjk_stop
        && after
            .chars()
            .next()
            .is_some_and(crate::knowledge::cjk::is_cjk)
    {
        ""
    } else {
        " "
    }
}

/// A line that stands alone whatever comes around it: a list item or a table row.
fn is_item(line: &str) -> bool {
    line.starts_with("- ") || line.contains(" | ") || line.contains(": ") && line.contains("; ")
}

/// Most words a label (a title over a paragraph in plain text) has.
const LABEL_WORDS: usize = 8;

/// A short line that starts in upper case, holds no punctuation of a sentence and is no list
/// item or table row: a title or a label.
fn is_label(unit: &str) -> bool {
    let words = unit.split_whitespace().count();
    (1..=LABEL_WORDS).contains(&words)
        && unit.starts_with(char::is_uppercase)
        && !unit.contains(|c| ends_sentence(c) || matches!(c, ',' | ':' | ';'))
        && !is_item(unit)
}

/// Shortest line taken for one a text was wrapped at: a shorter line without a full stop is a
/// title or a label, not a sentence running on.
const WRAPPED_LINE_CHARS: usize = 40;

/// The text's lines with hard-wrapped prose joined again: a line that stops without ending
/// its sentence goes on in the next prose line when it is long (plain-text READMEs and
/// changelogs wrap at 72-80 characters) or when the next line starts in lower case (a line
/// broken inside a sentence, however short). Code blocks, titles, list items and table rows
/// stay as they are.
fn paragraph_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    let mut runs_on = false;
    let mut unfinished = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("```") {
            in_code = !in_code;
        }
        let prose = !in_code
            && !line.is_empty()
            && !line.starts_with('#')
            && !line.starts_with("```")
            && !is_item(line);
        let goes_on = runs_on || (unfinished && line.starts_with(char::is_lowercase));
        match out.last_mut() {
            Some(last) if goes_on && prose => {
                last.push(' ');
                last.push_str(line);
            }
            _ => out.push(line.to_string()),
        }
        unfinished = prose && !line.ends_with(|c| ends_sentence(c) || matches!(c, ':' | ';'));
        runs_on = unfinished && line.chars().count() >= WRAPPED_LINE_CHARS;
    }
    out
}

/// Most lines a lead-in ("Opening hours:") gathers as its list.
const MAX_LEAD_IN_LINES: usize = 12;

/// A line a lead-in may gather: short, and no sentence (it does not end as one).
fn is_list_line(line: &str) -> bool {
    (1..=2 * LABEL_WORDS).contains(&line.split_whitespace().count())
        && !line.ends_with(|c| ends_sentence(c) || c == ':')
        && !line.starts_with('#')
}

/// How many of the lines `after` a lead-in it introduces: the short lines that follow it
/// (`is_list_line`), at most `MAX_LEAD_IN_LINES`.
fn introduced_lines(after: &[String]) -> usize {
    let mut count = 0;
    while let Some(next) = after.get(count).filter(|l| is_list_line(l) && !is_item(l)) {
        // A label in capitals right over prose titles that prose ("PARKING", then "Our
        // garage …"); in lower case it is more likely the list's last line ("Sunday closed").
        let over_prose = after
            .get(count + 1)
            .is_some_and(|l| !l.is_empty() && !is_list_line(l) && !is_item(l));
        let capitals = !next.chars().any(char::is_lowercase);
        if count == MAX_LEAD_IN_LINES || (is_label(next) && capitals && over_prose) {
            break;
        }
        count += 1;
    }
    count
}

/// Splits chunk text into units a reader can take alone: table rows and list items by line,
/// prose by sentence, and a lead-in with the short lines it introduces.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // A label standing alone over a paragraph ("Warranty", "Returns policy") is read with the
    // paragraph's first sentence, not quoted alone or after it.
    let mut label: Option<String> = None;
    let lines: Vec<String> = paragraph_lines(text)
        .into_iter()
        .map(|line| {
            // A quote's marker, as the light markdown keeps it, is not part of what it says.
            match line.strip_prefix("> ") {
                Some(quoted) => quoted.to_string(),
                None if line == ">" => String::new(),
                None => line,
            }
        })
        .collect();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at].as_str();
        at += 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with("```") {
            continue;
        }
        // A lead-in ("Opening hours:", or a label over more short lines: "Contact", then
        // "Phone …", "Email …") is read with the lines it introduces: quoted alone it says
        // nothing, and each of its lines alone loses what it is about ("Sunday closed").
        let gathered = if line.ends_with(':') {
            introduced_lines(&lines[at..])
        } else if is_label(line) {
            Some(introduced_lines(&lines[at..]))
                .filter(|&n| n > 1)
                .unwrap_or(0)
        } else {
            0
        };
        if gathered > 0 {
            out.extend(label.take());
            let mut unit = line.to_string();
            for next in &lines[at..at + gathered] {
                unit.push('\n');
                unit.push_str(next);
            }
            out.push(unit);
            at += gathered;
            continue;
        }
        if is_item(line) || is_label(line) {
            // A label over a list, or over nothing but another label, stands alone.
            out.extend(label.take());
            if is_item(line) {
                out.push(line.to_string());
            } else {
                label = Some(line.to_string());
            }
            continue;
        }
        let first = out.len();
        let mut current = String::new();
        let chars: Vec<char> = line.chars().collect();
        for (i, &ch) in chars.iter().enumerate() {
            current.push(ch);
            let at_end = ends_sentence(ch);
            // Chinese and Japanese put no space after a full stop.
            let next_is_space = chars.get(i + 1).is_none_or(|c| c.is_whitespace())
                || matches!(ch, '。' | '！' | '？');
            let prev_is_digit = i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit());
            if at_end && next_is_space && !prev_is_digit {
                let mut words = current.split_whitespace().rev();
                let (last, before) = (words.next(), words.next());
                let abbreviation = last.is_some_and(|w| {
                    ABBREVIATIONS.contains(&w.trim_start_matches('(').to_lowercase().as_str())
                });
                // A German date's day ("am 1. Mai", "bis 31. Juli") ends no sentence.
                let ordinal = last.is_some_and(|w| {
                    w.len() <= 3 && w.trim_end_matches('.').bytes().all(|b| b.is_ascii_digit())
                }) && before.is_some_and(|w| {
                    matches!(
                        w.to_lowercase().as_str(),
                        "am" | "ab" | "bis" | "vom" | "zum" | "dem" | "den" | "der" | "jeden"
                    )
                });
                if !abbreviation && !ordinal {
                    out.push(current.trim().to_string());
                    current.clear();
                }
            }
        }
        if !current.trim().is_empty() {
            out.push(current.trim().to_string());
        }
        if let (Some(pending), Some(sentence)) = (label.take(), out.get_mut(first)) {
            *sentence = format!("{pending}: {sentence}");
        }
    }
    out.extend(label);
    out
}

/// Abbreviations, lower-cased, that end no sentence: a title before a name ("Dra. Laura
/// Giménez"), "e.g." and its kin, in the languages the engine answers in.
const ABBREVIATIONS: &[&str] = &[
    "approx.", "av.", "avda.", "bzw.", "ca.", "cf.", "d.h.", "dr.", "dra.", "e.g.", "etc.", "ggf.",
    "i.e.", "inkl.", "mme.", "mr.", "mrs.", "ms.", "nr.", "núm.", "no.", "p.ej.", "prof.", "sr.",
    "sra.", "srta.", "st.", "str.", "u.a.", "ud.", "uds.", "usw.", "vgl.", "vs.", "z.b.",
];

/// How sentences that lean on the one before them open ("Below that, …", "Otherwise, …"),
/// lower-cased, in the languages the engine answers in. Quoted alone, or before the sentence
/// they lean on, they would say something else: "Below that, shipping costs 4.95 euros".
const LEANING_OPENERS: &[&str] = &[
    "above that",
    "after that",
    "also",
    "below that",
    "beyond that",
    "but",
    "except",
    "however",
    "if not",
    "if so",
    "in that case",
    "in this case",
    "it",
    "its",
    "they",
    "their",
    "instead",
    "otherwise",
    "then",
    "these",
    "this",
    "those",
    "under that",
    "unless",
    // French, German, Spanish, Italian, Portuguese.
    "au-delà",
    "cependant",
    "dans ce cas",
    "il",
    "ils",
    "elle",
    "elles",
    "en dessous",
    "sinon",
    "toutefois",
    "alors",
    "cela",
    "ensuite",
    "ansonsten",
    "außerdem",
    "dabei",
    "dann",
    "darüber hinaus",
    "darunter",
    "dies",
    "diese",
    "dieser",
    "dieses",
    "dort",
    "jedoch",
    "sonst",
    "in diesem fall",
    "además",
    "entonces",
    "esto",
    "en ese caso",
    "por debajo",
    "si no",
    "sin embargo",
    "altrimenti",
    "tuttavia",
    "caso contrário",
    "senão",
];

/// Whether `sentence` leans on the sentence before it (`LEANING_OPENERS`).
pub(super) fn leans_back(sentence: &str) -> bool {
    let lower = sentence.trim_start().to_lowercase();
    LEANING_OPENERS.iter().any(|opener| {
        lower
            .strip_prefix(opener)
            .is_some_and(|rest| rest.starts_with([' ', ',', ':']))
    })
}

/// The unit a reader takes from `sentences[at]` on, and where the next one starts: the
/// sentence, or a question the passage asks itself (a FAQ's) with the answer that follows it,
/// since the question alone would only repeat what was asked; and with the sentences after it
/// that lean on it (`leans_back`), which say nothing alone.
pub(super) fn unit_at(sentences: &[String], at: usize) -> (String, usize) {
    let mut unit = sentences[at].clone();
    let mut next = at + 1;

    if unit.ends_with(['?', '？']) {
        while let Some(answer) = sentences.get(next).filter(|s| !s.ends_with(['?', '？'])) {
            unit.push_str(sentence_gap(&unit, answer));
            unit.push_str(answer);
            next += 1;
            // "No." or "Yes." alone says too little: the sentence after it goes too.
            if answer.chars().count() >= 25 {
                break;
            }
        }
    }
    // A sentence of one word ("Yes.", "Sí.", "Correct.", "可以。") says nothing alone: the
    // sentence it answers with goes too. (Words as the index reads them: a Chinese or
    // Japanese sentence, which holds no spaces, is as many words as its character pairs.)
    if words(&unit).len() <= 1 {
        if let Some(following) = sentences.get(next) {
            unit.push_str(sentence_gap(&unit, following));
            unit.push_str(following);
            next += 1;
        }
    }
    while let Some(leaning) = sentences.get(next).filter(|s| leans_back(s)) {
        unit.push_str(sentence_gap(&unit, leaning));
        unit.push_str(leaning);
        next += 1;
    }
    (unit, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_broken_inside_a_sentence_is_joined_however_short() {
        let text = "Museum hours\n\nThe sculpture museum opens at ten\nfrom the first of April until the end of October.\nTickets\nare sold at the door.";
        assert_eq!(
            sentences(text),
            vec![
                "Museum hours: The sculpture museum opens at ten from the first of April until the end of October.",
                "Tickets are sold at the door.",
            ]
        );
    }

    #[test]
    fn a_german_date_ends_no_sentence() {
        assert_eq!(
            sentences(
                "Am 1. Weihnachtsfeiertag bleibt das Bad geschlossen. Vom 3. bis 24. Juli auch."
            ),
            vec![
                "Am 1. Weihnachtsfeiertag bleibt das Bad geschlossen.",
                "Vom 3. bis 24. Juli auch."
            ]
        );
        assert_eq!(
            sentences("The fee is 15. Pay at the desk."),
            vec!["The fee is 15.", "Pay at the desk."]
        );
    }

    #[test]
    fn a_label_goes_with_the_sentence_it_stands_over() {
        assert_eq!(
            sentences("Warranty\n\nEvery kettle carries a three year warranty. Keep the receipt."),
            vec![
                "Warranty: Every kettle carries a three year warranty.",
                "Keep the receipt."
            ]
        );
        // Over a list, or at the end, it stays alone; a short sentence's fragment is no label.
        assert_eq!(
            sentences("Opening hours\n- Mon 9-5\n- Tue 9-5\nClosed on Sundays"),
            vec![
                "Opening hours",
                "- Mon 9-5",
                "- Tue 9-5",
                "Closed on Sundays"
            ]
        );
        assert_eq!(
            sentences("See the manual, e.g. chapter 3\n\nIt explains it."),
            vec!["See the manual, e.g. chapter 3", "It explains it."]
        );
    }

    #[test]
    fn quote_markers_go_and_cjk_sentences_end_at_their_full_stops() {
        assert_eq!(
            sentences("> Note: A factory reset erases your settings.\n>\n> Back them up first."),
            [
                "Note: A factory reset erases your settings.",
                "Back them up first."
            ]
        );
        assert_eq!(
            sentences("夕食は18時からです。朝食は7時から9時までです。"),
            ["夕食は18時からです。", "朝食は7時から9時までです。"]
        );
    }

    #[test]
    fn a_title_before_a_name_ends_no_sentence_and_a_one_word_answer_goes_with_the_next() {
        let all = sentences("La Dra. Laura Giménez dirige la clínica (Sr. Ruiz la ayuda). Sí. Tratamos a niños desde los 3 años.");
        assert_eq!(
            all,
            vec![
                "La Dra. Laura Giménez dirige la clínica (Sr. Ruiz la ayuda).",
                "Sí.",
                "Tratamos a niños desde los 3 años."
            ]
        );
        assert_eq!(
            unit_at(&all, 1),
            ("Sí. Tratamos a niños desde los 3 años.".to_string(), 3)
        );
        assert_eq!(unit_at(&all, 0).1, 1);
        let all = sentences("可以。购买后三十天内可以退货。退款会在五个工作日内退回。");
        assert_eq!(unit_at(&all, 0).1, 2);
        assert_eq!(unit_at(&all, 1).1, 2);
    }

    #[test]
    fn sentence_splitting_keeps_abbreviations_and_decimals() {
        assert_eq!(
            sentences("Prices rose 3.5 percent, e.g. in shops. Then fell!\n- item one\nDay: Monday; Opens: 07:00"),
            vec!["Prices rose 3.5 percent, e.g. in shops.", "Then fell!", "- item one", "Day: Monday; Opens: 07:00"]
        );
    }
}
