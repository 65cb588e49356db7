//! Turns a person's question into an FTS5 query. Stop words are dropped so they do not drown
//! rare terms; every remaining term is quoted (FTS5 syntax characters in user text must never
//! reach the parser) and the terms are OR-ed so a chunk need not hold all of them; BM25 then
//! rewards the chunks that hold more and rarer ones.

use super::cjk::{is_cjk, is_cjk_function_pair};
use super::language::Language;
use super::stop_words;
use super::thesaurus;

/// Most terms a query keeps; long pasted questions otherwise turn into slow, unfocused ORs.
pub const MAX_QUERY_TERMS: usize = 16;

pub fn is_stop_word(word: &str) -> bool {
    stop_words::STOP_WORDS.binary_search(&word).is_ok() || is_cjk_function_pair(word)
}

/// Words elided before an apostrophe in French and Italian, sorted for binary search.
const ELIDED: &[&str] = &[
    "all", "c", "d", "dall", "dell", "j", "jusqu", "l", "lorsqu", "m", "n", "nell", "puisqu", "qu",
    "quell", "quest", "quoiqu", "s", "sull", "t", "un",
];

/// Lower-cased word tokens: runs of letters and digits (apostrophes inside words are dropped,
/// so "don't" reads as "dont", and "customer's" as "customers", except after an elided French
/// or Italian article or pronoun, which is dropped: "l'emprunt" reads as "emprunt"). Runs of
/// CJK characters become their overlapping character pairs (see `cjk::cjk_pairs`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |word| out.push(word.to_string()));
    out
}

/// `words` without collecting them: `visit` sees each word in turn, from one reused buffer,
/// so scanning a long text for a few terms allocates nothing per word. A run of CJK
/// characters is visited as its overlapping pairs ("退款政策" → "退款", "款政", "政策"): with
/// no spaces to cut at, pairs are what a question and a passage can share (most words in these
/// scripts are two characters long); a lone character stands alone.
pub fn for_each_word(text: &str, mut visit: impl FnMut(&str)) {
    let mut current = String::new();
    let mut run: Vec<char> = Vec::new();
    let mut pair = String::new();
    let mut flush_run = |run: &mut Vec<char>, visit: &mut dyn FnMut(&str)| {
        if run.len() == 1 {
            pair.clear();
            pair.push(run[0]);
            visit(&pair);
        }
        for two in run.windows(2) {
            pair.clear();
            pair.extend(two);
            visit(&pair);
        }
        run.clear();
    };
    for ch in text.chars() {
        if is_cjk(ch) {
            if !current.is_empty() {
                visit(&current);
                current.clear();
            }
            run.push(ch);
            continue;
        }
        if !run.is_empty() {
            flush_run(&mut run, &mut visit);
        }
        if ch.is_ascii_alphanumeric() {
            current.push(ch.to_ascii_lowercase());
        } else if !ch.is_ascii() && ch.is_alphanumeric() {
            current.extend(ch.to_lowercase());
        } else if (ch == '\'' || ch == '’') && !current.is_empty() {
            // French and Italian elide articles and pronouns onto the next word ("l'emprunt",
            // "d'ouverture", "dell'anno"): the word is what follows. Elsewhere the apostrophe
            // joins ("don't" → "dont").
            if ELIDED.binary_search(&current.as_str()).is_ok() {
                current.clear();
            }
            continue;
        } else if !current.is_empty() {
            visit(&current);
            current.clear();
        }
    }
    if !current.is_empty() {
        visit(&current);
    }
    if !run.is_empty() {
        flush_run(&mut run, &mut visit);
    }
}

/// Words that ask how long, how much, how many or how often rather than name what about: in
/// "How long does a refund take?" the question is about a refund. English, French, German
/// and Spanish, each list sorted; a list is what the words ask.
const ASKS_ABOUT: [&[&str]; 4] = [
    &[
        "dauer", "dauert", "delai", "duree", "fast", "lange", "long", "quick", "quickly", "soon",
        "take", "tarda", "temps", "tiempo", "time",
    ],
    &[
        "charge", "cost", "costo", "coste", "cuesta", "fee", "frais", "gebuhr", "kosten", "kostet",
        "much", "precio", "preis", "price", "prix", "tarif", "tarifa",
    ],
    &["many"],
    &["often"],
];

/// What `term` (in `Language::term` form) asks of what a question is about (`ASKS_ABOUT`):
/// how long (0), how much (1), how many (2), how often (3); `None` for a word that names
/// something.
pub fn asks_about(term: &str, language: Language) -> Option<usize> {
    ASKS_ABOUT
        .iter()
        .position(|words| words.iter().any(|w| language.term(w) == term))
}

/// The words of `query` that name something: written with a capital inside a sentence
/// ("Paris", "Chrome", "PayPal"), or all in capitals anywhere (an acronym: "HIPAA", "SCIM",
/// "2FA"), as `for_each_word` reads them, stop words left out. In German, which capitalises
/// every noun, only acronyms; in a question written in title case or capitals, none: there a
/// capital says nothing.
pub fn names(query: &str, language: Language) -> Vec<String> {
    let tokens: Vec<&str> = query.split_whitespace().collect();
    let mut capitalised = Vec::new();
    let mut acronyms = Vec::new();
    let mut sentence_start = true;
    for token in &tokens {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let starts_upper = word.chars().next().is_some_and(char::is_uppercase);
        let pronoun = word == "I" || word.starts_with("I'") || word.starts_with("I’");
        // Letters all capitals: scripts without case (Chinese, Japanese) name nothing so.
        let letters = || word.chars().filter(|c| c.is_alphabetic());
        let acronym = letters().count() >= 2 && letters().all(char::is_uppercase);
        if acronym {
            acronyms.push(word);
        } else if !sentence_start && starts_upper && !pronoun {
            capitalised.push(word);
        }
        sentence_start = token.ends_with(['.', '?', '!', ':', ';', '¿', '¡'])
            || word.is_empty() && sentence_start;
    }
    // Most words capitalised: title case, not names. Half is not enough: a short question may
    // name a place of two words ("¿Hacen envíos a Estados Unidos?").
    let upper = capitalised.len() + acronyms.len();
    if upper * 2 > tokens.len().saturating_sub(1).max(1) && upper > 1 {
        return Vec::new();
    }
    if language == Language::German {
        capitalised.clear();
    }
    let mut out: Vec<String> = Vec::new();
    for word in capitalised.into_iter().chain(acronyms) {
        for_each_word(word, |w| {
            if !is_stop_word(w) && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        });
    }
    out
}

/// The content terms of `query` that are codes: letters and digits in one word, as error
/// codes, models and standards are named ("E42", "T3", "2FA", "IPv6"). Such a word is what the
/// question is about, and a source writes it as it is.
pub fn codes(query: &str) -> Vec<String> {
    content_terms(query)
        .into_iter()
        .filter(|w| {
            w.bytes().all(|b| b.is_ascii_alphanumeric())
                && w.bytes().any(|b| b.is_ascii_digit())
                && w.bytes().any(|b| b.is_ascii_alphabetic())
        })
        .collect()
}

/// The content terms of a query, in order, without duplicates. When a query is nothing but
/// stop words ("what is it?"), its words are kept rather than searching for nothing.
pub fn content_terms(query: &str) -> Vec<String> {
    let all = words(query);
    let mut terms: Vec<String> = Vec::new();
    for w in all.iter().filter(|w| !is_stop_word(w)) {
        if !terms.contains(w) {
            terms.push(w.clone());
        }
    }
    if terms.is_empty() {
        for w in all {
            if !terms.contains(&w) {
                terms.push(w);
            }
        }
    }
    terms.truncate(MAX_QUERY_TERMS);
    terms
}

/// Words that make a phrasal verb with the word before them ("log in", "set up", "check
/// out"), whose one-word form is often the noun a document uses ("login", "setup", "checkout").
const PARTICLES: &[&str] = &["back", "down", "in", "off", "on", "out", "over", "up"];

/// Whether `word` (as `Language::term` makes it, which leaves these whole) is one of
/// `PARTICLES`.
pub fn is_particle(word: &str) -> bool {
    PARTICLES.contains(&word)
}

/// Most spelling variants one query adds to its search.
pub const MAX_VARIANTS: usize = 8;

/// A way a document may write a question's words that the index does not match: as one word
/// where the question has two, or as two where it has one. Users and writers split and join
/// compounds freely ("user name" and "username", "log in" and "login", "e-mail" and "email"),
/// and the index, which cuts at spaces and hyphens, keeps the forms apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Two adjacent words of the question written as one ("user name" → "username"),
    /// standing for the question's content terms among the two (`parts`).
    Joined { word: String, parts: Vec<String> },
    /// A content term of the question written as a word and a particle ("setup" → "set up").
    Split {
        first: String,
        second: String,
        term: String,
    },
}

/// A word that can be joined to or split from another: letters only, in a script written
/// with spaces.
fn is_plain_word(word: &str) -> bool {
    word.chars().all(|c| c.is_alphabetic() && !is_cjk(c))
}

/// The spelling variants of `query` worth searching for (`Variant`), at most `MAX_VARIANTS`:
/// each pair of adjacent content words, or a content word and the particle after it, joined;
/// and, in English, each content word that ends in a particle after at least three letters,
/// split (not "-ion" words: "option" is not "opti on"). Variants that match no passage cost
/// one look-up of a word the index does not hold.
pub fn spelling_variants(query: &str, language: Language) -> Vec<Variant> {
    let english = language == Language::English;
    let all = words(query);
    let terms = content_terms(query);
    let mut variants: Vec<Variant> = Vec::new();
    for pair in all.windows(2) {
        let (first, second) = (&pair[0], &pair[1]);
        // A number and its unit are written as one as often ("5 GHz" and "5GHz").
        let amount = first.bytes().all(|b| b.is_ascii_digit());
        if !(is_plain_word(first) || amount) || !is_plain_word(second) || is_stop_word(first) {
            continue;
        }
        let particle = english && PARTICLES.contains(&second.as_str());
        if is_stop_word(second) && !particle {
            continue;
        }
        let word = format!("{first}{second}");
        if terms.contains(&word)
            || variants
                .iter()
                .any(|v| matches!(v, Variant::Joined { word: w, .. } if *w == word))
        {
            continue;
        }
        let parts = [first, second]
            .into_iter()
            .filter(|w| !is_stop_word(w))
            .cloned()
            .collect();
        variants.push(Variant::Joined { word, parts });
    }
    for term in terms.iter().filter(|_| english) {
        if !is_plain_word(term) || term.ends_with("ion") {
            continue;
        }
        let split = PARTICLES.iter().find_map(|particle| {
            let first = term.strip_suffix(particle)?;
            (first.chars().count() >= 3 && !is_stop_word(first)).then_some((first, *particle))
        });
        if let Some((first, second)) = split {
            variants.push(Variant::Split {
                first: first.to_string(),
                second: second.to_string(),
                term: term.clone(),
            });
        }
    }
    variants.truncate(MAX_VARIANTS);
    variants
}

/// The query's content terms as FTS5 phrases, in the query's language (`Language::phrase`),
/// then its spelling variants (`spelling_variants`) and the other words customers use for
/// them (`thesaurus::alternatives`). Tokens are alphanumeric only, so quoting
/// cannot be broken out of.
pub fn phrases(query: &str) -> Vec<String> {
    question_phrases(query).0
}

/// `phrases`, and how many of them, from the first, are the question's own words (the rest
/// are other spellings and words for them).
pub fn question_phrases(query: &str) -> (Vec<String>, usize) {
    let language = Language::of(query);
    let mut phrases: Vec<String> = content_terms(query)
        .iter()
        .map(|t| language.phrase(t))
        .collect();
    let own = phrases.len();
    for variant in spelling_variants(query, language) {
        let phrase = match variant {
            Variant::Joined { word, .. } => language.phrase(&word),
            // Two words as one FTS5 phrase: adjacent, in this order, each stemmed by the index.
            Variant::Split { first, second, .. } => format!("\"{first} {second}\""),
        };
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
    }
    for alternative in thesaurus::alternatives(query, language) {
        let phrase = match alternative.words.as_slice() {
            [word] => language.phrase(word),
            words => format!("\"{}\"", words.join(" ")),
        };
        if !phrases.contains(&phrase) {
            phrases.push(phrase);
        }
    }
    (phrases, own)
}

/// An FTS5 MATCH expression for `query`, or `None` when it holds no searchable word.
pub fn fts_expression(query: &str) -> Option<String> {
    let phrases = phrases(query);
    (!phrases.is_empty()).then(|| phrases.join(" OR "))
}

/// About how many chunks one search may score, unless `SEARCH_CANDIDATE_BUDGET` says
/// otherwise. FTS5 computes bm25 for every chunk an expression matches, so an OR of common
/// words ("file", "name", "user") would score most of a large index; past this many, only
/// chunks holding one of the query's rarer terms are scored (the storage layer's search
/// statement counts and chooses them). At 3,000 the Git and French evaluations, and the Git
/// pages among 100,000 chunks of other manuals, found what they found at 5,000, and search
/// over 100,000 chunks took about 8 % less time; at 1,500 the Git set lost a question.
pub const CANDIDATE_BUDGET: u64 = 3_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_word_list_is_sorted_for_binary_search() {
        let mut sorted = stop_words::STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, stop_words::STOP_WORDS);
        let mut elided = ELIDED.to_vec();
        elided.sort_unstable();
        assert_eq!(elided, ELIDED);
        assert!(is_stop_word("the") && is_stop_word("how") && !is_stop_word("refund"));
    }

    #[test]
    fn drops_stop_words_and_quotes_terms() {
        assert_eq!(
            fts_expression("How do I get a refund for my tent?").as_deref(),
            Some("\"refund\" OR \"tent\" OR \"money back\" OR \"reimburse\" OR \"repay\""),
            "then the other words customers use (`thesaurus`)"
        );
    }

    #[test]
    fn hostile_syntax_is_neutralised() {
        let expr = fts_expression("NEAR(a b) OR \"x\" * ^col: AND -").unwrap();
        assert_eq!(expr, "\"near\" OR \"b\" OR \"x\" OR \"col\" OR \"xcol\"");
        assert!(fts_expression("?!* \"\"").is_none());
        assert!(fts_expression("").is_none());
    }

    #[test]
    fn only_stop_words_still_searches() {
        assert_eq!(
            fts_expression("What is it?").as_deref(),
            Some("\"what\" OR \"is\" OR \"it\"")
        );
    }

    #[test]
    fn unicode_words_and_apostrophes() {
        assert_eq!(
            words("Don't use Müller's café-crème"),
            vec!["dont", "use", "müllers", "café", "crème"]
        );
        assert_eq!(
            words("L'heure d’ouverture jusqu'à dell'anno it's"),
            vec!["heure", "ouverture", "à", "anno", "its"]
        );
        assert_eq!(content_terms("naïve NAÏVE naïve"), vec!["naïve"]);
    }

    #[test]
    fn cjk_pairs_doing_grammar_are_stop_words() {
        assert_eq!(content_terms("多久发货"), ["发货"]);
        assert_eq!(content_terms("拆封了还能退货吗"), ["拆封", "退货"]);
        assert_eq!(content_terms("朝食は何時からですか"), ["朝食", "何時"]);
        // Nothing but grammar: its pairs are searched rather than nothing.
        assert_eq!(content_terms("可以吗"), ["可以", "以吗"]);
    }

    #[test]
    fn cjk_text_is_read_as_character_pairs() {
        assert_eq!(
            words("退款政策 refund 期"),
            ["退款", "款政", "政策", "refund", "期"]
        );
        assert_eq!(
            content_terms("如何申请退款？"),
            ["如何", "何申", "申请", "请退", "退款"]
        );
    }

    #[test]
    fn function_words_of_other_languages_are_dropped() {
        assert_eq!(
            content_terms("Est-ce que je peux prolonger mon prêt ?"),
            ["prolonger", "prêt"]
        );
        assert_eq!(
            content_terms("Wie kann ich meine Bestellung zurückgeben?"),
            ["bestellung", "zurückgeben"]
        );
        assert_eq!(
            content_terms("¿Cómo puedo cambiar la dirección de mi pedido?"),
            ["cambiar", "dirección", "pedido"]
        );
        assert_eq!(
            content_terms("Come posso restituire un prodotto che non funziona?"),
            ["restituire", "prodotto", "funziona"]
        );
        assert_eq!(
            content_terms("Como posso mudar o endereço da minha encomenda?"),
            ["mudar", "endereço", "encomenda"]
        );
    }

    #[test]
    fn names_are_the_words_capitalised_inside_a_sentence() {
        let en = Language::English;
        assert_eq!(
            names("What's the weather going to be like tomorrow in Paris?", en),
            ["paris"]
        );
        assert_eq!(
            names("Can I pay with PayPal? And with Visa?", en),
            ["paypal", "visa"]
        );
        assert_eq!(
            names("How do I find a memory leak in Chrome's tab?", en),
            ["chromes"]
        );
        // Sentence starts, "I" and title case say nothing; an acronym names a thing.
        assert!(names("Where is my order? Shipping takes how long?", en).is_empty());
        assert_eq!(
            names("I'm out of RAM when I build with USB", en),
            ["ram", "usb"]
        );
        assert_eq!(names("is tallyboard HIPAA compliant", en), ["hipaa"]);
        assert_eq!(names("SCIM support?", en), ["scim"]);
        assert!(names("HOW DO I RESET MY PASSWORD", en).is_empty());
        assert!(names("退款多久能到账？", Language::English).is_empty());
        assert!(names("How To Return An Item Bought Online", en).is_empty());
        assert!(names("Ship To New York?", en).is_empty());
        assert_eq!(
            names("¿Hacen envíos a Estados Unidos?", Language::Spanish),
            ["estados", "unidos"]
        );
        assert_eq!(
            names("Est-ce que vous envoyez en Belgique ?", Language::French),
            ["belgique"]
        );
        assert!(names(
            "Wann kommt meine Bestellung in Berlin an?",
            Language::German
        )
        .is_empty());
        assert_eq!(
            names("Ist das Bad auch per ÖPNV erreichbar?", Language::German),
            ["öpnv"]
        );
    }

    #[test]
    fn words_written_as_one_or_two_are_searched_both_ways() {
        let joined = |word: &str, parts: &[&str]| Variant::Joined {
            word: word.to_string(),
            parts: parts.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(
            spelling_variants("How do I change my user name?", Language::English),
            [joined("username", &["user", "name"])]
        );
        assert_eq!(
            spelling_variants("Is 5 GHz supported?", Language::English),
            [
                joined("5ghz", &["5", "ghz"]),
                joined("ghzsupported", &["ghz", "supported"])
            ]
        );
        assert_eq!(
            spelling_variants("I can't log in since my e-mail changed", Language::English),
            [
                joined("login", &["log"]),
                joined("email", &["e", "mail"]),
                joined("mailchanged", &["mail", "changed"]),
            ]
        );
        assert_eq!(
            spelling_variants(
                "Where is the setup guide for the plugin?",
                Language::English
            ),
            [
                joined("setupguide", &["setup", "guide"]),
                Variant::Split {
                    first: "set".into(),
                    second: "up".into(),
                    term: "setup".into()
                },
                Variant::Split {
                    first: "plug".into(),
                    second: "in".into(),
                    term: "plugin".into()
                },
            ]
        );
        // Words ending in "-ion", stop words before a particle, and other languages' questions
        // are not split; their particles do not join.
        assert!(
            spelling_variants("Which option? Check within", Language::English)
                .iter()
                .all(|v| !matches!(v, Variant::Split { .. }))
        );
        assert_eq!(
            spelling_variants("Wo steht meine Kunden Nummer?", Language::German),
            [joined("kundennummer", &["kunden", "nummer"])]
        );
        assert_eq!(
            phrases("How do I log in?")[..2],
            ["\"log\"", "\"login\""],
            "a particle alone is not searched, joined it is"
        );
        assert_eq!(phrases("Is there a backup?"), ["\"backup\"", "\"back up\""]);
        let many = (0..30)
            .map(|i| format!("w{i}x"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            spelling_variants(
                &many.replace(|c: char| c.is_ascii_digit(), "a"),
                Language::English
            )
            .len()
                <= MAX_VARIANTS
        );
    }

    #[test]
    fn long_queries_are_capped() {
        let q = (0..40)
            .map(|i| format!("term{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(content_terms(&q).len(), MAX_QUERY_TERMS);
    }
}
