//! Compounds a question writes as one word where its sources use two: "Rückgabefrist" for
//! "Frist für Rückgaben", "Arbeitszeiten" for "Zeiten der Arbeit", "timezone" for "time
//! zone", "halfway" for "half way". The index cuts words at spaces only, so such a word
//! matches nothing. Each long question word is offered to the search statement with every
//! way of cutting it in two; when no chunk holds the word itself and some chunk holds each of
//! a cut's halves, the question is searched and ranked again with the halves in its place.
//! (The other way round, two question words a source writes as one, is
//! `query::Variant::Joined`; a source's compound starting with a question's word is found by
//! the prefix search of languages other than English.)

use super::cjk::is_cjk;
use super::language::Language;
use super::query::{content_terms, is_stop_word};

/// Shortest half a word is cut into: two letters are rarely a word of their own, and would
/// match too much.
const MIN_PART_CHARS: usize = 3;

/// Shortest word worth cutting.
const MIN_WORD_CHARS: usize = 2 * MIN_PART_CHARS;

/// Longest word tried: past it, a "word" is more likely an identifier or a hash.
const MAX_WORD_CHARS: usize = 32;

/// Most words of one question tried, the longest first: each costs one look-up (when the
/// index holds it), so the bound keeps a long question's search as cheap as a short one's.
const MAX_WORDS: usize = 4;

/// One way of cutting a question word in two.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub word: String,
    pub head: String,
    pub tail: String,
}

impl Cut {
    /// The FTS5 phrases the search statement checks: the whole word as `language` searches
    /// words (`Language::phrase`: in most languages any word it starts), then each half as a
    /// whole word. As a prefix, a half cut off inside a word ("bibliothè" of "bibliothèque")
    /// would be found in any longer word.
    pub fn phrases(&self, language: Language) -> [String; 3] {
        [
            language.phrase(&self.word),
            format!("\"{}\"", self.head),
            format!("\"{}\"", self.tail),
        ]
    }
}

/// Every cut of `query`'s longest content words (at most `MAX_WORDS` words), word by word,
/// each word's cuts from the left. Only words of letters in scripts written with spaces.
pub fn cuts(query: &str) -> Vec<Cut> {
    let mut candidates: Vec<String> = content_terms(query)
        .into_iter()
        .filter(|w| {
            let chars = w.chars().count();
            (MIN_WORD_CHARS..=MAX_WORD_CHARS).contains(&chars)
                && w.chars().all(|c| c.is_alphabetic() && !is_cjk(c))
        })
        .collect();
    // Longest first, the question's order among equals. Picked one by one rather than
    // sorted: a sort's code for this one call costs more Worker size than the loop.
    let mut words = Vec::with_capacity(MAX_WORDS);
    while words.len() < MAX_WORDS && !candidates.is_empty() {
        let mut longest = 0;
        for (i, w) in candidates.iter().enumerate() {
            if w.chars().count() > candidates[longest].chars().count() {
                longest = i;
            }
        }
        words.push(candidates.remove(longest));
    }
    let mut cuts: Vec<Cut> = content_terms(query)
        .into_iter()
        .filter_map(|word| number_and_unit(&word))
        .take(MAX_WORDS)
        .collect();
    for word in words {
        let chars: Vec<char> = word.chars().collect();
        for at in MIN_PART_CHARS..=chars.len() - MIN_PART_CHARS {
            let head: String = chars[..at].iter().collect();
            let tail: String = chars[at..].iter().collect();
            // A function word is in every source: it would make any word a compound
            // ("bibliothè" + "que").
            if !is_stop_word(&head) && !is_stop_word(&tail) {
                cuts.push(Cut {
                    word: word.clone(),
                    head,
                    tail,
                });
            }
        }
    }
    cuts
}

/// A number written onto its unit ("5ghz", "24v", "10am"), cut where its digits end: sources
/// as often write "5 GHz". Halves of any length: a unit is often one or two letters.
fn number_and_unit(word: &str) -> Option<Cut> {
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    let unit = &word[digits..];
    (digits > 0
        && !unit.is_empty()
        && word.len() <= MAX_WORD_CHARS
        && unit.bytes().all(|b| b.is_ascii_lowercase()))
    .then(|| Cut {
        word: word.to_string(),
        head: word[..digits].to_string(),
        tail: unit.to_string(),
    })
}

/// Of `cuts`, those at the indexes `found` (the ones whose word no chunk holds and whose
/// halves chunks do), one per word: the most even, so "timezone" is "time zone" rather than
/// "tim ezone" should both halves of each exist; on a tie the longer head, which in a
/// compound is the word it is about ("Rückgabe" + "frist").
pub fn chosen<'a>(cuts: &'a [Cut], found: &[usize]) -> Vec<&'a Cut> {
    let mut best: Vec<&Cut> = Vec::new();
    for cut in found.iter().filter_map(|&i| cuts.get(i)) {
        let shorter = |c: &Cut| c.head.chars().count().min(c.tail.chars().count());
        match best.iter_mut().find(|b| b.word == cut.word) {
            Some(b) => {
                let better = (shorter(cut), cut.head.len()) > (shorter(b), b.head.len());
                if better {
                    *b = cut;
                }
            }
            None => best.push(cut),
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(word: &str, head: &str, tail: &str) -> Cut {
        Cut {
            word: word.into(),
            head: head.into(),
            tail: tail.into(),
        }
    }

    #[test]
    fn every_cut_of_the_longest_words_leaves_two_halves_of_three_letters_or_more() {
        let all = cuts("Wie lange gilt die Rückgabefrist?");
        let words: Vec<&str> = all.iter().map(|c| c.word.as_str()).collect();
        assert!(words.iter().all(|w| *w == "rückgabefrist" || *w == "lange"));
        let of_compound: Vec<(&str, &str)> = all
            .iter()
            .filter(|c| c.word == "rückgabefrist")
            .map(|c| (c.head.as_str(), c.tail.as_str()))
            .collect();
        // Every place leaving three letters each side but the one leaving "ist", a function word.
        assert_eq!(of_compound.len(), 13 - 2 * MIN_PART_CHARS);
        // Halves that are function words are no cut: "bibliothè" + "que", "half" + "way".
        assert!(cuts("bibliothèque").iter().all(|c| c.tail != "que"));
        assert!(cuts("halfway").iter().all(|c| c.tail != "way"));
        assert!(cuts("timezone")
            .iter()
            .any(|c| c.head == "time" && c.tail == "zone"));
        assert_eq!(of_compound[0], ("rüc", "kgabefrist"));
        assert!(of_compound.contains(&("rückgabe", "frist")));
        assert_eq!(of_compound.last(), Some(&("rückgabef", "rist")));
        // "lange" is too short to cut in two halves of three letters.
        assert!(!words.contains(&"lange"));
    }

    #[test]
    fn short_numeric_cjk_and_overlong_words_are_not_cut() {
        assert!(cuts("what is it?").is_empty());
        assert!(cuts("error 0x80070005").is_empty());
        assert!(cuts("退款政策是什么").is_empty());
        assert!(cuts(&"a".repeat(MAX_WORD_CHARS + 1)).is_empty());
    }

    #[test]
    fn a_number_written_onto_its_unit_is_cut_where_its_digits_end() {
        let all = cuts("Will it work with 5GHz wifi, on 24V?");
        assert_eq!(all, [cut("5ghz", "5", "ghz"), cut("24v", "24", "v")]);
        // Letters before the digits, or digits inside the unit, are a code, not an amount.
        assert!(cuts("the E42 error in usb3 mode, 0x1f").is_empty());
    }

    #[test]
    fn at_most_the_four_longest_words_are_tried() {
        let all = cuts("configuration repository notifications subscription cancel timezone");
        let mut words: Vec<&str> = all.iter().map(|c| c.word.as_str()).collect();
        words.dedup();
        assert_eq!(
            words,
            [
                "configuration",
                "notifications",
                "subscription",
                "repository"
            ]
        );
    }

    #[test]
    fn the_most_even_cut_found_wins_then_the_longer_head() {
        let all = vec![
            cut("timezone", "tim", "ezone"),
            cut("timezone", "time", "zone"),
            cut("timezone", "timez", "one"),
            cut("rückgabefrist", "rückgab", "efrist"),
            cut("rückgabefrist", "rückgabe", "frist"),
            cut("arbeitszeit", "arbeit", "szeit"),
            cut("arbeitszeit", "arbeits", "zeit"),
        ];
        // "szeit" is no word: only the cut after the linking s is found.
        let chosen = chosen(&all, &[0, 2, 1, 4, 6, 99]);
        let picked: Vec<(&str, &str)> = chosen
            .iter()
            .map(|c| (c.head.as_str(), c.tail.as_str()))
            .collect();
        assert_eq!(
            picked,
            [("time", "zone"), ("rückgabe", "frist"), ("arbeits", "zeit")]
        );
        assert!(super::chosen(&all, &[]).is_empty());
    }

    #[test]
    fn halves_are_searched_as_their_language_searches_words() {
        let c = cut("rückgabefrist", "rückgabe", "frist");
        assert_eq!(
            c.phrases(Language::German),
            ["\"ruckgabefri\"*", "\"rückgabe\"", "\"frist\""]
        );
        let c = cut("timezone", "time", "zone");
        assert_eq!(
            c.phrases(Language::English),
            ["\"timezone\"", "\"time\"", "\"zone\""]
        );
    }
}
