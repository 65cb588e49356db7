//! Ranking the chunks the full-text index returns. BM25 (from FTS5) finds and orders
//! candidates; this pass blends in how much of the question each chunk covers, lets a Q&A
//! pair whose question matches win, and keeps one long document from filling every slot.

use super::language::{fold, Language};
use super::query::{
    codes, content_terms, for_each_word, is_stop_word, spelling_variants, words, Variant,
};
use super::thesaurus;
use crate::chat::followup::{names_own_subject, points_back, stands_alone, Context};
use crate::domain::data_source::SourceType;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

/// One candidate chunk from the index, with what a citation needs of its source.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ChunkHit {
    pub id: i64,
    pub data_source_uuid: String,
    pub position: i64,
    pub heading: String,
    pub text: String,
    pub tokens: i64,
    pub source_type: SourceType,
    pub title: String,
    pub file_name: String,
    pub meta_json: String,
    /// FTS5 bm25: lower (more negative) is better.
    pub rank: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub hit: ChunkHit,
    /// 0..1: how well the chunk answers the query.
    pub score: f64,
    /// 0..1: the share of the query's content terms the chunk holds.
    pub coverage: f64,
    /// 0..1: the same, counting only terms some candidate holds, each weighed by its rarity.
    pub weighted_coverage: f64,
    /// 0..1: the share of the query's content terms that any candidate holds at all.
    pub known_share: f64,
    /// 0..1 for Q&A chunks: how closely the stored question matches the query.
    pub question_match: f64,
    /// Set by `mark_follow_up_misses`: the chunk answers the conversation's previous question,
    /// not the follow-up, which asks about something the index does not hold.
    pub misses_follow_up: bool,
}

/// How many candidates to ask the index for before re-ranking.
pub const CANDIDATES: usize = 40;

/// A crude English stemmer: enough to match "configuring" with "configured" when comparing
/// terms here. The index itself stems with Porter.
pub fn stem(word: &str) -> String {
    let mut w = word.to_lowercase();
    // "café" and "crème" are "cafe" and "creme" to English readers, and to the index.
    if !w.is_ascii() {
        w = fold(&w);
    }
    if w.chars().count() <= 3 || !w.is_ascii() {
        return w;
    }
    const RULES: &[(&str, &str)] = &[
        ("ational", "ate"),
        ("ization", "ize"),
        ("fulness", "ful"),
        ("iveness", "ive"),
        ("ousness", "ous"),
        ("ations", ""),
        ("ation", ""),
        ("ments", ""),
        ("ment", ""),
        ("ness", ""),
        ("ingly", ""),
        ("edly", ""),
        ("ings", ""),
        ("ing", ""),
        ("ies", "y"),
        ("ied", "y"),
        ("ers", ""),
        ("er", ""),
        ("ed", ""),
        ("es", ""),
        ("ly", ""),
        ("s", ""),
    ];
    let mut stemmed = w.clone();
    for (suffix, replacement) in RULES {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.len() < 3
                || (*suffix == "s"
                    && (base.ends_with('s') || base.ends_with('u') || base.ends_with('i')))
            {
                continue;
            }
            stemmed = format!("{base}{replacement}");
            let bytes = stemmed.as_bytes();
            let n = bytes.len();
            // "running" -> "runn" -> "run". A doubled "l" after "e" is British spelling's
            // ("cancelled", "travelling", "cancellation" -> "cancel", "travel"), unless the
            // word is that short ("spelling" stays "spell").
            let doubled = n >= 2 && bytes[n - 1] == bytes[n - 2];
            let british_l = doubled && n >= 6 && bytes[n - 1] == b'l' && bytes[n - 3] == b'e';
            // Never down to two letters: "offer" is "off", not the function word "of".
            if ["ing", "ed", "er", "ers", "ings", "ation", "ations"].contains(suffix)
                && doubled
                && n > 3
                && (!b"lsz".contains(&bytes[n - 1]) || british_l)
            {
                stemmed.pop();
            }
            break;
        }
    }
    if stemmed.len() > 3 && stemmed.ends_with('e') {
        stemmed.pop();
    }
    stemmed
}

/// The stemmed content words of `text`: what every comparison of question and text counts.
pub fn stems(text: &str) -> HashSet<String> {
    stems_in(text, Language::English)
}

/// The stemmed content words of `text` as `language` compares them (`Language::term`).
pub fn stems_in(text: &str, language: Language) -> HashSet<String> {
    words(text)
        .iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| language.term(w))
        .collect()
}

/// The members of `terms` (as `Language::term` makes them) that `text` holds, without
/// stemming every word of a long text. A term keeps at least the first two characters of its
/// word (`stem` never cuts a word below two, the other languages below four), so only words
/// starting like one of the terms are compared.
pub fn held_stems(text: &str, terms: &HashSet<String>, language: Language) -> HashSet<String> {
    let mut held = HashSet::new();
    if terms.is_empty() {
        return held;
    }
    let starts: HashSet<&str> = terms.iter().map(|t| first_chars(t, 2)).collect();
    let english = language == Language::English;
    for_each_word(text, |word| {
        if held.len() == terms.len() || is_stop_word(word) {
            return;
        }
        if english {
            // A word with accents is compared folded ("école" is "ecole"): no cheap look first.
            if word.is_ascii() && !starts.contains(first_chars(word, 2)) {
                return;
            }
            let stemmed = stem(word);
            if terms.contains(&stemmed) {
                held.insert(stemmed);
            }
            return;
        }
        let form = language.passage_form(word);
        if !starts.contains(first_chars(&form, 2)) {
            return;
        }
        for t in terms {
            if language.form_holds(&form, t) && !held.contains(t) {
                held.insert(t.clone());
            }
        }
    });
    held
}

/// The first `n` characters of `s` (all of it when shorter).
fn first_chars(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(at, _)| &s[..at])
}

fn dice(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    2.0 * a.intersection(b).count() as f64 / (a.len() + b.len()) as f64
}

/// How much a chunk's score leans on the evidence of its whole document.
const DOCUMENT_WEIGHT: f64 = 0.3;

/// Each further chunk from a source already chosen counts this much less.
const SAME_SOURCE_DECAY: f64 = 0.7;

/// Scores candidates for `query` and returns the best `limit`, best first.
pub fn rank(query: &str, hits: Vec<ChunkHit>, limit: usize) -> Vec<Ranked> {
    rank_in_context(query, &Context::default(), hits, limit)
}

/// A question's content terms (`query::content_terms`) in the form its language compares
/// them (`Language::term`): what ranking and the built-in engine both look for in passages.
/// A passage that writes two of the question's words as one, or one as two
/// (`query::spelling_variants`), holds the terms so written.
pub struct QuestionTerms {
    pub language: Language,
    pub terms: HashSet<String>,
    /// Each joined form (as `Language::term` makes it) with the terms it stands for.
    joined: Vec<(String, Vec<String>)>,
    /// Each split form's first word (as `Language::term` makes it) and particle, with the
    /// term it stands for.
    split: Vec<(String, String, String)>,
    /// Other words for some of the terms (`thesaurus::alternatives`): each one's words (one or
    /// two, as `Language::term` makes them) with the terms it stands for.
    alternatives: Vec<(Vec<String>, Vec<String>)>,
    /// The terms, the joined forms and the one-word alternatives: the words `held_stems`
    /// looks for.
    lookup: HashSet<String>,
}

impl QuestionTerms {
    pub fn of(query: &str) -> QuestionTerms {
        let language = Language::of(query);
        let terms: HashSet<String> = content_terms(query)
            .iter()
            .map(|t| language.term(t))
            .collect();
        let mut joined = Vec::new();
        let mut split = Vec::new();
        for variant in spelling_variants(query, language) {
            match variant {
                Variant::Joined { word, parts } => {
                    let word = language.term(&word);
                    // Stemmed alike, the joined form may be one of the terms already.
                    if !terms.contains(&word) {
                        joined.push((word, parts.iter().map(|p| language.term(p)).collect()));
                    }
                }
                Variant::Split {
                    first,
                    second,
                    term,
                } => split.push((language.term(&first), second, language.term(&term))),
            }
        }
        let alternatives: Vec<(Vec<String>, Vec<String>)> =
            thesaurus::alternatives(query, language)
                .into_iter()
                .map(|a| {
                    let forms: Vec<String> = a.words.iter().map(|w| language.term(w)).collect();
                    let stands = a.stands_for.iter().map(|w| language.term(w)).collect();
                    (forms, stands)
                })
                .filter(|(forms, _)| !(forms.len() == 1 && terms.contains(&forms[0])))
                .collect();
        let mut lookup = terms.clone();
        lookup.extend(joined.iter().map(|(word, _)| word.clone()));
        lookup.extend(
            alternatives
                .iter()
                .filter(|(forms, _)| forms.len() == 1)
                .map(|(forms, _)| forms[0].clone()),
        );
        QuestionTerms {
            language,
            terms,
            joined,
            split,
            alternatives,
            lookup,
        }
    }

    /// These terms and `more` (in `Language::term` form), say what a conversation is about.
    pub fn with(mut self, more: impl IntoIterator<Item = String>) -> QuestionTerms {
        for term in more {
            self.lookup.insert(term.clone());
            self.terms.insert(term);
        }
        self
    }

    /// The terms `text` holds (`held_stems`), counting those it writes as one word or two.
    pub fn held_in(&self, text: &str) -> HashSet<String> {
        let mut held = held_stems(text, &self.lookup, self.language);
        for (word, parts) in &self.joined {
            if !self.terms.contains(word) && held.remove(word) {
                held.extend(parts.iter().filter(|p| self.terms.contains(*p)).cloned());
            }
        }
        for (first, second, term) in &self.split {
            let first = |w: &str| word_holds(Language::English, w, first);
            if !held.contains(term) && holds_pair(text, first, |w| w == second) {
                held.insert(term.clone());
            }
        }
        self.with_alternatives_read(text, held)
    }

    /// Whether `text` holds one of the terms in the question's own words or spelling, not
    /// only another word for one (`thesaurus::alternatives`).
    pub fn holds_own_word(&self, text: &str) -> bool {
        let mut own = self.terms.clone();
        own.extend(self.joined.iter().map(|(word, _)| word.clone()));
        !held_stems(text, &own, self.language).is_empty()
            || self.split.iter().any(|(first, second, _)| {
                holds_pair(
                    text,
                    |w| word_holds(Language::English, w, first),
                    |w| w == second,
                )
            })
    }

    /// `text`'s stemmed content words (`stems_in`), with the alternatives it holds read as
    /// the question's words they stand for: what a stored question is compared by.
    pub fn stems_as_asked(&self, text: &str) -> HashSet<String> {
        self.with_alternatives_read(text, stems_in(text, self.language))
    }

    /// `found` (words of `text`) with each alternative `text` holds replaced by the terms it
    /// stands for.
    fn with_alternatives_read(&self, text: &str, mut found: HashSet<String>) -> HashSet<String> {
        let mut stood_for: Vec<&String> = Vec::new();
        for (forms, stands) in &self.alternatives {
            let held = match forms.as_slice() {
                // A one-word alternative is a word of the text's; it stays only as a term.
                [word] if self.terms.contains(word) => found.contains(word),
                [word] => found.remove(word),
                [first, second] => holds_pair(
                    text,
                    |w| word_holds(self.language, w, first),
                    |w| word_holds(self.language, w, second),
                ),
                _ => false,
            };
            if held {
                stood_for.extend(stands.iter().filter(|t| self.terms.contains(*t)));
            }
        }
        found.extend(stood_for.into_iter().cloned());
        found
    }
}

/// Whether `text` has a word that is `first` right before a word that is `second`.
fn holds_pair(text: &str, first: impl Fn(&str) -> bool, second: impl Fn(&str) -> bool) -> bool {
    let mut after_first = false;
    let mut found = false;
    for_each_word(text, |word| {
        if found {
            return;
        }
        if after_first && second(word) {
            found = true;
        }
        after_first = first(word);
    });
    found
}

/// Whether a passage's `word` holds the question's `term` (`Language::term`) in `language`;
/// in English only words starting like the term are stemmed.
fn word_holds(language: Language, word: &str, term: &str) -> bool {
    if language == Language::English {
        (!word.is_ascii() || word.starts_with(first_chars(term, 2))) && stem(word) == term
    } else {
        language.form_holds(&language.passage_form(word), term)
    }
}

/// Marks the chunks that miss a follow-up. A follow-up one of whose own words no chunk of
/// the index holds at all (`unknown`: "what about snorkelwax?" after a question on warranties)
/// asks about something the sources may not have; a chunk that holds none of its own words
/// then answers the previous question, which the conversation's words found, not this one.
pub fn mark_follow_up_misses(
    query: &str,
    context: &Context,
    unknown: &[String],
    ranked: &mut [Ranked],
) {
    if context.terms.is_empty() || unknown.is_empty() {
        return;
    }
    let question = QuestionTerms::of(query);
    let language = question.language;
    if !unknown
        .iter()
        .any(|w| question.terms.contains(&language.term(w)))
    {
        return;
    }
    for r in ranked {
        r.misses_follow_up =
            question.held_in(&r.hit.heading).is_empty() && question.held_in(&r.hit.text).is_empty();
    }
}

/// What a passage holding none of the conversation's words keeps of its score when a
/// follow-up points back at the conversation's subject: it may answer the follow-up's own
/// words, but about something else.
const OFF_TOPIC: f64 = 0.7;

/// What a passage holding none of a follow-up's own words keeps of its score when the
/// follow-up names a subject of its own ("Refunds?" after a question on shipping) and some
/// passage holds it: low enough that the previous question's words, which the passage may
/// hold all of, do not outrank the one word the user asked about, even where that word is
/// common in the index and theirs are rare (full-text relevance weighs them so).
const NOT_WHAT_WAS_ASKED: f64 = 0.2;

/// What a passage naming none of the codes a question names (`query::codes`: "E42", "2FA")
/// keeps of its score when a few other candidates (at most half) name one: the question is
/// about that error or standard, however many of its other words ("my thermostat is
/// showing") a passage shares. A code most candidates name is the product's own ("T3") and
/// decides nothing.
const NOT_THE_CODE: f64 = 0.3;

/// `rank` for a question asked in a conversation: `context.terms` say what the conversation
/// is about and count as the question's own, except towards matching a stored question.
pub fn rank_in_context(
    query: &str,
    context: &Context,
    hits: Vec<ChunkHit>,
    limit: usize,
) -> Vec<Ranked> {
    let question = QuestionTerms::of(query);
    let language = question.language;
    let own = question.terms.clone();
    // A follow-up whose subject is the conversation's ("how long does that take?") is not
    // answered by a stored question that shares only its own words and none of the
    // conversation's: "how long does delivery take?" after a question on refunds.
    let topic: HashSet<String> = if points_back(query) {
        context
            .searched()
            .map(|t| language.term(t))
            .filter(|t| !own.contains(t))
            .collect()
    } else {
        HashSet::new()
    };
    let names_own_subject = names_own_subject(query, context);
    let question = question.with(context.searched().map(|t| language.term(t)));
    // Terms from further back in the conversation rank passages but are not measured.
    let earlier: HashSet<String> = context
        .earlier
        .iter()
        .map(|t| language.term(t))
        .filter(|t| !own.contains(t) && !context.terms.iter().any(|c| language.term(c) == *t))
        .collect();
    let query_set = &question.terms;
    let best_bm25 = hits.iter().map(|h| -h.rank).fold(0.0_f64, f64::max);
    // Which of the query's terms each candidate holds: all the comparisons below ask.
    let chunk_stems: Vec<HashSet<String>> = hits
        .iter()
        .map(|h| {
            let mut held = question.held_in(&h.heading);
            held.extend(question.held_in(&h.text));
            held
        })
        .collect();
    let decisive_codes: Vec<String> = codes(query)
        .iter()
        .map(|c| language.term(c))
        .filter(|c| {
            let holding = chunk_stems.iter().filter(|s| s.contains(c)).count();
            holding > 0 && holding * 2 <= chunk_stems.len()
        })
        .collect();
    let holds_code = |held: &HashSet<String>| decisive_codes.iter().any(|c| held.contains(c));
    // Terms weigh by how rare they are among the candidates: one that every candidate holds
    // says nothing about which is the answer.
    let n = hits.len().max(1) as f64;
    // Terms no candidate holds cannot tell candidates apart and are left out of the weighting.
    let weights: HashMap<&String, f64> = query_set
        .iter()
        .filter_map(|t| {
            let df = chunk_stems.iter().filter(|s| s.contains(t)).count() as f64;
            (df > 0.0).then(|| (t, (1.0 + n / df).ln()))
        })
        .collect();
    let total_weight: f64 = weights.values().sum();
    // The question's own terms that some candidate holds: what a stored question is compared
    // with.
    let known: HashSet<String> = weights
        .keys()
        .filter(|t| own.contains(**t))
        .map(|t| (*t).clone())
        .collect();
    // What `coverage` and the rest measure how much of the question a passage holds against:
    // the question the answer is composed for. A follow-up that stands alone is composed for
    // its own words (the conversation's only narrowed the search), any other question for its
    // words and the conversation's.
    let stands_alone = stands_alone(query, context);
    let measured: HashSet<&String> = query_set
        .iter()
        .filter(|t| (!stands_alone || own.contains(*t)) && !earlier.contains(*t))
        .collect();
    let measured_count = measured.len() as f64;
    let measured_weight: f64 = weights
        .iter()
        .filter(|(t, _)| measured.contains(*t))
        .map(|(_, w)| w)
        .sum();
    // The share of the measured terms that any candidate holds.
    let known_share = if measured_count > 0.0 {
        weights.keys().filter(|t| measured.contains(*t)).count() as f64 / measured_count
    } else {
        0.0
    };
    let mut scored: Vec<Ranked> = hits
        .into_iter()
        .zip(chunk_stems)
        .map(|(hit, chunk_stems)| {
            let relevance = if best_bm25 > 0.0 {
                (-hit.rank / best_bm25).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let coverage = if measured_count > 0.0 {
                measured
                    .iter()
                    .filter(|t| chunk_stems.contains(**t))
                    .count() as f64
                    / measured_count
            } else {
                0.0
            };
            let held_weight = |total: f64, counted: &dyn Fn(&String) -> bool| {
                if total > 0.0 {
                    weights
                        .iter()
                        .filter(|(t, _)| counted(t) && chunk_stems.contains(**t))
                        .map(|(_, w)| w)
                        .sum::<f64>()
                        / total
                } else {
                    0.0
                }
            };
            let misses_code = !decisive_codes.is_empty() && !holds_code(&chunk_stems);
            // Ranking weighs every term searched; the answer's measure only the measured ones.
            let searched_coverage = held_weight(total_weight, &|_| true);
            let weighted_coverage = held_weight(measured_weight, &|t| measured.contains(t));
            // Words of the query that no source holds ("in person", "could") say nothing about
            // which stored question it matches, so the comparison uses the others, as long as
            // they are at least a third of the query.
            let mut on_topic = topic.is_empty() || topic.iter().any(|t| chunk_stems.contains(t));
            // A passage holding none of an own-subject follow-up's known terms answers the
            // previous question, not this one.
            let answers_own = !names_own_subject
                || known.is_empty()
                || known.iter().any(|t| chunk_stems.contains(t));
            let question_match =
                if hit.source_type == SourceType::Qa && known.len() * 3 >= own.len() {
                    let asked = question.stems_as_asked(&hit.heading);
                    // A stored question naming nothing beyond the follow-up's own words is
                    // the follow-up itself, whatever the conversation was about.
                    on_topic |= asked.is_subset(&known);
                    if on_topic {
                        dice(&known, &asked)
                    } else {
                        0.0
                    }
                } else {
                    0.0
                };
            let mut score = 0.5 * relevance + 0.5 * searched_coverage;
            if question_match > 0.0 {
                score = score.max(0.4 * relevance + 0.6 * question_match) + 0.1 * question_match;
            }
            if !on_topic {
                score *= OFF_TOPIC;
            }
            if !answers_own {
                score *= NOT_WHAT_WAS_ASKED;
            }
            if misses_code {
                score *= NOT_THE_CODE;
            }
            Ranked {
                hit,
                score: score.min(1.0),
                coverage,
                weighted_coverage,
                known_share,
                question_match,
                misses_follow_up: false,
            }
        })
        .collect();
    // A document with several matching passages is more likely about the question than one
    // with a single stray match: blend in each source's summed evidence.
    // Only its two best passages count, so sheer length does not win.
    let mut best_two: HashMap<String, [f64; 2]> = HashMap::new();
    for r in &scored {
        let top = best_two
            .entry(r.hit.data_source_uuid.clone())
            .or_insert([0.0; 2]);
        if r.score > top[0] {
            top[1] = top[0];
            top[0] = r.score;
        } else if r.score > top[1] {
            top[1] = r.score;
        }
    }
    let evidence: HashMap<String, f64> =
        best_two.into_iter().map(|(k, [a, b])| (k, a + b)).collect();
    let best_evidence = evidence.values().copied().fold(0.0_f64, f64::max);
    if best_evidence > 0.0 {
        for r in &mut scored {
            let doc = evidence
                .get(&r.hit.data_source_uuid)
                .copied()
                .unwrap_or(0.0)
                / best_evidence;
            r.score = (1.0 - DOCUMENT_WEIGHT) * r.score + DOCUMENT_WEIGHT * doc;
        }
    }
    scored.sort_by(|a, b| b.score.total_cmp(&a.score));

    pick_diverse(scored, limit, |r| &r.hit.data_source_uuid, |r| r.score)
}

/// Picks the best `limit` of `pool` greedily, each further pick from a source already chosen
/// counting `SAME_SOURCE_DECAY` less, so the top slots span several documents when several
/// are relevant.
pub fn pick_diverse<T>(
    mut pool: Vec<T>,
    limit: usize,
    source: impl Fn(&T) -> &str,
    score: impl Fn(&T) -> f64,
) -> Vec<T> {
    let mut chosen: Vec<T> = Vec::with_capacity(limit.min(pool.len()));
    let mut per_source: HashMap<String, i32> = HashMap::new();
    while chosen.len() < limit && !pool.is_empty() {
        let (best_index, _) = pool
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let seen = per_source.get(source(r)).copied().unwrap_or(0);
                (i, score(r) * SAME_SOURCE_DECAY.powi(seen))
            })
            .fold(
                (0, f64::MIN),
                |best, cur| if cur.1 > best.1 { cur } else { best },
            );
        let pick = pool.remove(best_index);
        *per_source.entry(source(&pick).to_string()).or_insert(0) += 1;
        chosen.push(pick);
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_stems_are_the_texts_stems_among_the_terms() {
        let texts = [
            "Running runners ran; the RUNNING man's runs were rerun. Rebasing rebased rebases.",
            "Configurations, configuration, configure and configured: rational nationalism.",
            "bbbing bbbed zzzing ssses ies flies flied relational organization hopefulness",
            "Café naïve résumé über Straße ÉCOLE école 退款政策 是 退 a I x y",
            "don't customer's ‘quoted’ it’s dont customers 42 4th v2.0 x86_64",
        ];
        for text in texts {
            let all = stems(text);
            let mut terms: HashSet<String> = all.iter().step_by(2).cloned().collect();
            // Terms the text does not hold, some sharing a start with its words.
            for absent in ["runway", "config", "zz", "退", "caf", "x", "nothing"] {
                if !all.contains(absent) {
                    terms.insert(absent.to_string());
                }
            }
            let expected: HashSet<String> = all.intersection(&terms).cloned().collect();
            assert_eq!(
                held_stems(text, &terms, Language::English),
                expected,
                "{text}"
            );
            assert_eq!(held_stems(text, &all, Language::English), all, "{text}");
        }
        assert!(held_stems("anything at all", &HashSet::new(), Language::English).is_empty());
    }

    #[test]
    fn a_passage_writing_the_questions_words_as_one_or_two_holds_them() {
        let question = QuestionTerms::of("How do I reset my user name when I cannot log in?");
        let held = question.held_in("Reset your username from the login page.");
        for word in ["reset", "user", "name", "log"] {
            assert!(held.contains(&stem(word)), "{word} in {held:?}");
        }
        assert!(!held.contains("username") && !held.contains("login"));
        let question = QuestionTerms::of("Where is the setup wizard?");
        assert!(question
            .held_in("To set up the printer, open the wizard.")
            .contains(&stem("setup")));
        assert!(!question
            .held_in("Set the paper size up front.")
            .contains(&stem("setup")));
        // In context, the conversation's terms are held like the question's own.
        let question = QuestionTerms::of("and the user name?").with([stem("printer")]);
        let held = question.held_in("The printer's username is on its label.");
        for word in ["printer", "user", "name"] {
            assert!(held.contains(&stem(word)), "{word} in {held:?}");
        }
    }

    #[test]
    fn a_passage_using_another_word_for_the_questions_holds_it() {
        let question = QuestionTerms::of("Can you send my order to another country?");
        let held = question.held_in("We ship to 38 countries; international orders take a week.");
        for word in ["send", "another", "country", "order"] {
            assert!(held.contains(&stem(word)), "{word} in {held:?}");
        }
        assert!(!held.contains(&stem("ship")) && !held.contains(&stem("international")));
        // A stored question is compared as if it used the question's words.
        assert_eq!(
            question.stems_as_asked("Do you ship abroad?"),
            HashSet::from([stem("send"), stem("another"), stem("country")])
        );
        // A word of many senses is reached from a narrower one, never the other way round.
        let broad = QuestionTerms::of("How do I change the order of my commits?");
        assert!(!broad
            .held_in("Modify the purchase.")
            .contains(&stem("change")));
        let narrow = QuestionTerms::of("Can I modify my purchase?");
        let held = narrow.held_in("You can change an order within the hour.");
        assert!(held.contains(&stem("modify")) && held.contains(&stem("purchase")));
    }

    #[test]
    fn other_words_are_found_in_a_questions_own_language() {
        let question = QuestionTerms::of("Versendet ihr auch in andere Länder?");
        assert_eq!(question.language, Language::German);
        let held = question
            .held_in("Wir liefern ins Ausland: Lieferungen in die Schweiz dauern drei Tage.");
        for word in ["versendet", "andere", "länder"] {
            assert!(
                held.contains(&Language::German.term(word)),
                "{word} in {held:?}"
            );
        }
        let question = QuestionTerms::of("Est-ce que vous envoyez en Belgique ?");
        assert_eq!(question.language, Language::French);
        assert!(question
            .held_in("Nous expédions dans toute l'Europe.")
            .contains(&Language::French.term("envoyez")));
    }

    #[test]
    fn a_stored_question_said_in_other_words_matches() {
        let ranked = rank(
            "Can you send my order to another country?",
            vec![
                hit(
                    1,
                    "qa-abroad",
                    "qa",
                    "Do you ship abroad?",
                    "Yes, to 38 countries.",
                    -2.0,
                ),
                hit(
                    2,
                    "qa-change",
                    "qa",
                    "Can I change my order?",
                    "Within one hour.",
                    -3.0,
                ),
                hit(
                    3,
                    "page",
                    "file",
                    "Sizes",
                    "Take your usual size in any country.",
                    -2.5,
                ),
            ],
            3,
        );
        assert_eq!(ranked[0].hit.data_source_uuid, "qa-abroad");
        assert!(ranked[0].question_match >= crate::chat::engine::QA_MATCH);
    }

    #[test]
    fn a_follow_up_about_what_no_source_holds_is_not_answered_by_the_previous_topic() {
        let hits = || {
            vec![
                file_hit(
                    1,
                    "warranty",
                    "The quuxometer warranty lasts two years from purchase.",
                    -5.0,
                ),
                file_hit(2, "prices", "Quuxometer pricing starts at 40 euros.", -3.0),
            ]
        };
        let context = Context {
            terms: vec!["quuxometer".into(), "warranty".into()],
            ..Context::default()
        };
        let unknown = vec!["snorkelwax".to_string()];
        let follow_up = "What about snorkelwax pricing?";
        let mut ranked = rank_in_context(follow_up, &context, hits(), 5);
        mark_follow_up_misses(follow_up, &context, &unknown, &mut ranked);
        let of = |ranked: &[Ranked], source: &str| {
            ranked
                .iter()
                .find(|r| r.hit.data_source_uuid == source)
                .expect("ranked")
                .misses_follow_up
        };
        assert!(
            of(&ranked, "warranty"),
            "holds none of the follow-up's own words"
        );
        assert!(!of(&ranked, "prices"), "holds its `pricing`");
        let follow_up = "What about snorkelwax?";
        let mut ranked = rank_in_context(follow_up, &context, hits(), 5);
        mark_follow_up_misses(follow_up, &context, &unknown, &mut ranked);
        assert!(!crate::chat::engine::answerable(&ranked[0], 3));
        // Every word of it is in the index: the conversation's topic answers it.
        let follow_up = "And how long does it last?";
        let mut ranked = rank_in_context(follow_up, &context, hits(), 5);
        mark_follow_up_misses(follow_up, &context, &[], &mut ranked);
        assert!(ranked.iter().all(|r| !r.misses_follow_up));
        // An unknown word of the previous question, or a question on its own: nothing marked.
        let mut ranked = rank_in_context("When does it end?", &context, hits(), 5);
        mark_follow_up_misses("When does it end?", &context, &unknown, &mut ranked);
        assert!(ranked.iter().all(|r| !r.misses_follow_up));
        let mut ranked = rank("snorkelwax warranty", hits(), 5);
        mark_follow_up_misses(
            "snorkelwax warranty",
            &Context::default(),
            &unknown,
            &mut ranked,
        );
        assert!(ranked.iter().all(|r| !r.misses_follow_up));
    }

    fn hit(id: i64, source: &str, kind: &str, heading: &str, text: &str, rank: f64) -> ChunkHit {
        ChunkHit {
            id,
            data_source_uuid: source.to_string(),
            position: 0,
            heading: heading.to_string(),
            text: text.to_string(),
            tokens: 10,
            source_type: SourceType::parse(kind).expect("a source type"),
            title: source.to_string(),
            file_name: String::new(),
            meta_json: "{}".to_string(),
            rank,
        }
    }

    /// A hit on a file chunk with no heading.
    fn file_hit(id: i64, source: &str, text: &str, rank: f64) -> ChunkHit {
        hit(id, source, "file", "", text, rank)
    }

    #[test]
    fn stemming_conflates_common_forms() {
        for (a, b) in [
            ("configuring", "configured"),
            ("configure", "configuration"),
            ("running", "run"),
            ("policies", "policy"),
            ("refunds", "refund"),
            ("shipping", "ship"),
            ("cancellation", "cancel"),
            ("cancelled", "cancel"),
            ("café", "cafe"),
            ("Crème", "creme"),
            ("offers", "offer"),
            ("bigger", "big"),
            ("newer", "new"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        // A word is never cut down to a function word.
        assert_ne!(stem("offer"), stem("of"));
        assert_ne!(stem("station"), stem("stat"));
        for (word, kept) in [
            ("spelling", "spell"),
            ("installation", "install"),
            ("falling", "fall"),
        ] {
            assert_eq!(stem(word), kept);
        }
        assert_ne!(stem("process"), stem("pro"));
        assert_eq!(stem("class"), "class");
    }

    #[test]
    fn coverage_lifts_chunks_that_answer_all_of_the_question() {
        let hits = vec![
            file_hit(
                1,
                "a",
                "Shipping to Canada is available. Shipping shipping shipping.",
                -9.0,
            ),
            file_hit(
                2,
                "b",
                "Shipping to Canada takes five business days for every order.",
                -8.0,
            ),
        ];
        let ranked = rank("how many days does shipping to canada take", hits, 2);
        assert_eq!(ranked[0].hit.id, 2);
        assert!(ranked[0].coverage > ranked[1].coverage);
    }

    #[test]
    fn a_passage_naming_the_code_asked_about_wins() {
        let hits = vec![
            file_hit(
                1,
                "troubleshooting",
                "If your thermostat is showing an error code, see the Error codes page.",
                -9.0,
            ),
            file_hit(
                2,
                "codes",
                "Code: E23; Meaning: Heating wire not responding. Code: E42; Meaning: Wi-Fi password rejected.",
                -7.0,
            ),
        ];
        let ranked = rank("My thermostat is showing E42", hits.clone(), 2);
        assert_eq!(ranked[0].hit.id, 2);
        // With no code in the question, the same passages rank as before.
        let ranked = rank("My thermostat is showing an error", hits.clone(), 2);
        assert_eq!(ranked[0].hit.id, 1);
        // A code most candidates name (the product's) decides nothing.
        let product = vec![
            file_hit(
                1,
                "display",
                "The T3 shows the room temperature on its display.",
                -6.0,
            ),
            file_hit(
                2,
                "network",
                "The T3 joins Wi-Fi networks of 2.4 GHz.",
                -6.0,
            ),
            file_hit(
                3,
                "setup",
                "Wi-Fi setup: open Settings, then Network, and set up your network there.",
                -9.0,
            ),
        ];
        let ranked = rank("How do I set up Wi-Fi setup on the T3?", product, 3);
        assert_eq!(ranked[0].hit.id, 3);
    }

    #[test]
    fn a_matching_question_wins() {
        let hits = vec![
            hit(
                1,
                "doc",
                "file",
                "Returns",
                "Items can be returned within 30 days; a refund is issued after inspection.",
                -10.0,
            ),
            hit(
                2,
                "qa",
                "qa",
                "How long does a refund take?",
                "Five business days.",
                -7.0,
            ),
        ];
        let ranked = rank("How long will my refund take?", hits, 2);
        assert_eq!(ranked[0].hit.id, 2);
        assert!(ranked[0].question_match > 0.5);
    }

    #[test]
    fn a_follow_up_about_the_conversation_s_subject_is_not_answered_by_another_pair() {
        let pairs = || {
            vec![
                hit(
                    1,
                    "qa",
                    "qa",
                    "How do I get a refund for my invoice?",
                    "Refunds are paid back to your card within 5 days.",
                    -7.5,
                ),
                hit(
                    2,
                    "qa",
                    "qa",
                    "How long does delivery of a parcel take?",
                    "Parcels arrive in 3 days by courier.",
                    -7.0,
                ),
                hit(
                    3,
                    "qa",
                    "qa",
                    "Can I return an item?",
                    "Returns are free within 30 days.",
                    -5.0,
                ),
            ]
        };
        let after_refund = Context {
            terms: vec!["refund".into(), "invoice".into()],
            ..Context::default()
        };
        let ranked = rank_in_context("and how long does that take?", &after_refund, pairs(), 3);
        assert_eq!(ranked[0].hit.id, 1, "{ranked:?}");
        assert!(ranked
            .iter()
            .all(|r| r.question_match < crate::chat::engine::QA_MATCH));
        // A new subject in the conversation is matched by its own words, as before.
        let ranked = rank_in_context("what about returns?", &after_refund, pairs(), 3);
        let returns = ranked.iter().find(|r| r.hit.id == 3).expect("ranked");
        assert!(returns.question_match >= crate::chat::engine::QA_MATCH);
    }

    #[test]
    fn a_question_of_its_own_asked_after_another_is_matched_as_itself() {
        let pairs = || {
            vec![
                hit(
                    1,
                    "qa",
                    "qa",
                    "How long does shipping take?",
                    "Three days.",
                    -7.0,
                ),
                hit(
                    2,
                    "qa",
                    "qa",
                    "Is there a refund for annual plans?",
                    "Yes, pro rata.",
                    -6.0,
                ),
                hit(
                    3,
                    "qa",
                    "qa",
                    "Is it possible to cancel my subscription?",
                    "Any time, from your account.",
                    -6.0,
                ),
                hit(4, "qa", "qa", "Is it free?", "Yes.", -5.0),
            ]
        };
        let after_shipping = Context {
            terms: vec!["long".into(), "shipping".into(), "take".into()],
            ..Context::default()
        };
        for (query, id) in [
            ("Is there a refund for annual plans?", 2),
            ("Is it possible to cancel my subscription?", 3),
            // A pronoun, and nothing named but what a stored question names.
            ("Is it free?", 4),
        ] {
            let ranked = rank_in_context(query, &after_shipping, pairs(), 4);
            assert_eq!(ranked[0].hit.id, id, "{query}: {ranked:?}");
            assert!(ranked[0].question_match >= crate::chat::engine::QA_MATCH);
        }
    }

    #[test]
    fn a_follow_up_naming_its_own_subject_is_answered_about_it() {
        // One help page's sections; the first question was about express shipping.
        let sections = || {
            vec![
                hit(
                    1,
                    "page",
                    "file",
                    "Shipping",
                    "Express shipping costs 12 euros and arrives the next day.",
                    -9.0,
                ),
                hit(
                    2,
                    "page",
                    "file",
                    "Returns",
                    "Refunds are issued to the original payment method within 14 days.",
                    -6.0,
                ),
                hit(
                    3,
                    "page",
                    "file",
                    "Payment",
                    "We accept Visa, Mastercard and PayPal.",
                    -6.0,
                ),
            ]
        };
        let after_shipping = Context {
            terms: vec!["much".into(), "express".into(), "shipping".into()],
            ..Context::default()
        };
        for (query, id) in [
            ("Refunds?", 2),
            ("and what about refunds?", 2),
            ("Do you take PayPal too?", 3),
        ] {
            let ranked = rank_in_context(query, &after_shipping, sections(), 3);
            assert_eq!(ranked[0].hit.id, id, "{query}: {ranked:?}");
        }
        // A follow-up about the conversation's subject still finds it.
        let ranked = rank_in_context("how long does it take?", &after_shipping, sections(), 3);
        assert_eq!(ranked[0].hit.id, 1, "{ranked:?}");
    }

    #[test]
    fn one_source_does_not_take_every_slot() {
        let mut hits: Vec<ChunkHit> = (0..6)
            .map(|i| file_hit(i, "long", "alpha beta gamma", -10.0 + i as f64 * 0.1))
            .collect();
        hits.push(file_hit(99, "short", "alpha beta", -8.5));
        let ranked = rank("alpha beta gamma", hits, 3);
        assert!(
            ranked.iter().any(|r| r.hit.data_source_uuid == "short"),
            "{:?}",
            ranked
                .iter()
                .map(|r| &r.hit.data_source_uuid)
                .collect::<Vec<_>>()
        );
        assert_eq!(ranked[0].hit.data_source_uuid, "long");
    }

    #[test]
    fn scores_stay_in_range_and_empty_input_is_fine() {
        assert!(rank("anything", vec![], 5).is_empty());
        let ranked = rank("the", vec![hit(1, "a", "qa", "the", "the", 0.0)], 5);
        assert!(ranked.iter().all(|r| (0.0..=1.0).contains(&r.score)));
    }
}
