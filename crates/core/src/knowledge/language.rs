//! The language a question is asked in, and how its words are matched there. The full-text
//! index stems every passage with Porter's English stemmer, which knows English endings only:
//! "déposer" and "déposez", "Rechnung" and "Rechnungen", "reservar" and "reservado" stay apart.
//! A question in French, German, Spanish, Italian or Portuguese is therefore searched by the part its word's
//! inflections share, as a prefix ("dépos*"), and passages are compared with it the same way.
//! English questions keep the stemmer's exact forms.

use super::query::for_each_word;
use super::retrieve::stem;

/// The languages a question is told apart in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Language {
    #[default]
    English,
    French,
    German,
    Spanish,
    Italian,
    Portuguese,
}

/// Function words that say which language a question is in, each list sorted. A word may be
/// in several ("la", "es"); the language with the most wins, English on a tie.
const MARKERS: [(Language, &[&str]); 6] = [
    (
        Language::English,
        &[
            "a", "an", "and", "are", "can", "do", "does", "for", "how", "i", "in", "is", "it",
            "my", "of", "the", "to", "what", "when", "where", "which", "why", "with", "you",
            "your",
        ],
    ),
    (
        Language::French,
        &[
            "au", "aux", "ce", "ces", "combien", "comment", "dans", "des", "du", "elle", "en",
            "est", "et", "il", "je", "la", "le", "les", "ma", "mes", "mon", "ne", "nous", "on",
            "ou", "où", "pas", "peux", "pour", "pourquoi", "quand", "que", "quel", "quelle", "qui",
            "si", "sur", "un", "une", "votre", "vous",
        ],
    ),
    (
        Language::German,
        &[
            "ab", "aber", "auch", "auf", "bei", "darf", "das", "dass", "dem", "den", "der", "die",
            "ein", "eine", "einen", "es", "euch", "für", "gibt", "habe", "ich", "ihr", "ins",
            "ist", "kann", "mein", "meine", "mich", "mir", "mit", "muss", "nach", "nicht", "noch",
            "nur", "oder", "schon", "sie", "sind", "und", "uns", "vom", "von", "wann", "warum",
            "was", "welche", "welchem", "welchen", "welcher", "welches", "wenn", "werden", "wie",
            "wir", "wird", "wo", "zu", "zum", "zur",
        ],
    ),
    (
        Language::Spanish,
        &[
            "algo", "como", "con", "cual", "cuando", "cuanta", "cuantas", "cuanto", "cuantos",
            "cuál", "cuándo", "cuánta", "cuántas", "cuánto", "cuántos", "cómo", "del", "donde",
            "dónde", "el", "en", "es", "esta", "este", "esto", "está", "hasta", "hay", "la", "las",
            "los", "me", "mi", "mis", "muy", "no", "nos", "o", "para", "pero", "podéis", "por",
            "puede", "pueden", "puedo", "que", "qué", "se", "si", "sin", "su", "sí", "también",
            "tengo", "tenéis", "tienen", "un", "una", "usted", "ustedes", "vosotros", "y", "yo",
        ],
    ),
    (
        Language::Italian,
        &[
            "al", "alla", "che", "ci", "come", "con", "cosa", "dei", "del", "della", "delle", "di",
            "dove", "gli", "i", "il", "la", "le", "lo", "mia", "mio", "nel", "nella", "non", "per",
            "perché", "posso", "quale", "quando", "quanto", "si", "sono", "un", "una", "è",
        ],
    ),
    (
        Language::Portuguese,
        &[
            "a", "ao", "as", "com", "como", "custa", "da", "das", "do", "dos", "em", "eu", "fazem",
            "há", "isso", "meu", "minha", "na", "no", "não", "o", "onde", "os", "para", "pela",
            "pelo", "pode", "posso", "qual", "quando", "que", "seu", "sua", "são", "tem", "têm",
            "um", "uma", "você", "vocês", "à", "às", "é",
        ],
    ),
];

/// Inflectional and common derivational endings, longest first within each language.
const FRENCH_ENDINGS: &[&str] = &[
    "issements",
    "issement",
    "atrices",
    "ateurs",
    "ations",
    "atrice",
    "ateur",
    "ation",
    "ements",
    "ement",
    "euses",
    "euse",
    "ables",
    "able",
    "istes",
    "iste",
    "ieres",
    "iere",
    "aient",
    "iers",
    "ier",
    "ions",
    "ait",
    "ais",
    "ants",
    "ante",
    "ant",
    "ees",
    "ent",
    "ons",
    "es",
    "ee",
    "ez",
    "er",
    "ir",
    "e",
    "s",
    "x",
];
const GERMAN_ENDINGS: &[&str] = &[
    "ungen", "keiten", "heiten", "lichen", "ischen", "liche", "ische", "keit", "heit", "lich",
    "isch", "ung", "ern", "em", "en", "er", "es", "et", "st", "te", "e", "n", "s",
];
const SPANISH_ENDINGS: &[&str] = &[
    "amientos", "imientos", "aciones", "amiento", "imiento", "adores", "ancias", "mente", "adora",
    "ancia", "ables", "ibles", "istas", "iendo", "acion", "ador", "able", "ible", "ista", "ando",
    "ados", "adas", "idos", "idas", "amos", "emos", "imos", "ado", "ada", "ido", "ida", "ar", "er",
    "ir", "as", "es", "os", "a", "e", "o", "s",
];

const ITALIAN_ENDINGS: &[&str] = &[
    "azioni", "azione", "amenti", "amento", "imenti", "imento", "mente", "abili", "ibili", "abile",
    "ibile", "ando", "endo", "ato", "ata", "ati", "ate", "ito", "ita", "iti", "ite", "uto", "uta",
    "are", "ere", "ire", "i", "e", "a", "o",
];
/// Accents folded, as `term` compares them: "ações" is "acoes".
const PORTUGUESE_ENDINGS: &[&str] = &[
    "amentos", "imentos", "amento", "imento", "acoes", "mente", "aveis", "iveis", "acao", "avel",
    "ivel", "ando", "endo", "indo", "ados", "adas", "idos", "idas", "ado", "ada", "ido", "ida",
    "ar", "er", "ir", "os", "as", "es", "o", "a", "e", "s",
];

/// The shortest part of a word kept as its stem, and the shortest term matched as a prefix:
/// shorter prefixes match too many unrelated words.
const MIN_STEM_CHARS: usize = 4;

impl Language {
    /// The language of `text`, as its function words tell; English when none does.
    pub fn of(text: &str) -> Language {
        Language::told(text).unwrap_or(Language::English)
    }

    /// The language `text`'s function words or marks tell; `None` when nothing does (a
    /// question of one noun: "preise").
    pub fn told(text: &str) -> Option<Language> {
        let mut counts = [0usize; MARKERS.len()];
        for_each_word(text, |word| {
            for (count, (_, markers)) in counts.iter_mut().zip(MARKERS.iter()) {
                if markers.binary_search(&word).is_ok() {
                    *count += 1;
                }
            }
        });
        // Short questions may hold no function word but the language's own marks: Spanish
        // opens a question with "¿" (outweighing a stray "a" read as English) and writes "ñ";
        // "ß" and umlauts are German's ("Öffnungszeiten?"), "ã" and "õ" Portuguese's. A
        // loanword ("jalapeño") in an English question still loses to its function words.
        for (language, marks, weight) in [
            (Language::Spanish, &['¿', '¡'][..], 2),
            (Language::Spanish, &['ñ'][..], 1),
            (
                Language::German,
                &['ß', 'ä', 'ö', 'ü', 'Ä', 'Ö', 'Ü'][..],
                1,
            ),
            (Language::Portuguese, &['ã', 'õ'][..], 1),
        ] {
            if text.contains(marks) {
                if let Some(at) = MARKERS.iter().position(|(l, _)| *l == language) {
                    counts[at] += weight;
                }
            }
        }
        let mut best = 0;
        for (i, count) in counts.iter().enumerate() {
            if *count > counts[best] {
                best = i;
            }
        }
        (counts[best] > 0).then_some(MARKERS[best].0)
    }

    fn endings(self) -> &'static [&'static str] {
        match self {
            Language::English => &[],
            Language::French => FRENCH_ENDINGS,
            Language::German => GERMAN_ENDINGS,
            Language::Spanish => SPANISH_ENDINGS,
            Language::Italian => ITALIAN_ENDINGS,
            Language::Portuguese => PORTUGUESE_ENDINGS,
        }
    }

    /// The form a question's `word` is compared by: the English stem, else the word without
    /// accents and without its ending (at least `MIN_STEM_CHARS` kept).
    pub fn term(self, word: &str) -> String {
        if self == Language::English {
            return stem(word);
        }
        let folded = fold(word);
        let chars = folded.chars().count();
        for ending in self.endings() {
            if let Some(base) = folded.strip_suffix(ending) {
                if chars - ending.len() >= MIN_STEM_CHARS {
                    return base.to_string();
                }
            }
        }
        folded
    }

    /// What a passage's `word` is compared by: its English stem, else the word without
    /// accents (a term matches it as a prefix, see `form_holds`).
    pub fn passage_form(self, word: &str) -> String {
        match self {
            Language::English => stem(word),
            _ => fold(word),
        }
    }

    /// Whether a passage word's `form` (`passage_form`) holds the question's `term`.
    pub fn form_holds(self, form: &str, term: &str) -> bool {
        if self != Language::English && is_prefix_term(term) {
            form.starts_with(term)
        } else {
            form == term
        }
    }

    /// The FTS5 phrase a question's `word` is searched by: quoted, and in a language other
    /// than English the stem as a prefix. `word` must be alphanumeric (as `query::words` makes
    /// words), so quoting is safe.
    pub fn phrase(self, word: &str) -> String {
        if self == Language::English {
            return format!("\"{word}\"");
        }
        let term = self.term(word);
        // The index's Porter stemmer also rewrites a prefix searched for, mostly to a shorter
        // start of it ("dois" to "doi"), but sometimes to another word ("doming", of
        // "domingos", to "dome", which starts none of the words meant): the longest start of
        // the term it reads as a start of the term is searched, else the word itself.
        let mut prefix = term.as_str();
        while is_prefix_term(prefix) {
            if term.starts_with(&crate::knowledge::spelling::porter(prefix)) {
                return format!("\"{prefix}\"*");
            }
            prefix = prefix
                .char_indices()
                .last()
                .map_or("", |(at, _)| &prefix[..at]);
        }
        format!("\"{word}\"")
    }
}

/// Whether `term` is long enough to match every word it starts.
fn is_prefix_term(term: &str) -> bool {
    term.chars().count() >= MIN_STEM_CHARS
}

/// `word` without the accents of Latin letters, as the index reads it (`remove_diacritics`).
pub(crate) fn fold(word: &str) -> String {
    word.chars()
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
            'ç' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ñ' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ý' | 'ÿ' => 'y',
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Language {
        /// Whether a passage's `word` holds the question's `term` (as `term` made it).
        fn holds(self, word: &str, term: &str) -> bool {
            self.form_holds(&self.passage_form(word), term)
        }
    }

    #[test]
    fn marker_lists_are_sorted_for_binary_search() {
        for (language, markers) in MARKERS {
            let mut sorted = markers.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, markers, "{language:?}");
        }
    }

    #[test]
    fn a_question_s_language_is_told_by_its_function_words() {
        for (q, language) in [
            ("How do I get my changes back?", Language::English),
            (
                "Où déposer mes livres quand c'est fermé ?",
                Language::French,
            ),
            (
                "Je peux garder un roman combien de temps ?",
                Language::French,
            ),
            ("Wie lange dauert die Lieferung?", Language::German),
            ("¿Cómo puedo cambiar mi contraseña?", Language::Spanish),
            ("Come posso cambiare la mia password?", Language::Italian),
            ("Quanto tempo ci vuole per la consegna?", Language::Italian),
            (
                "Como posso mudar o endereço de entrega?",
                Language::Portuguese,
            ),
            ("Onde fica a minha encomenda?", Language::Portuguese),
            ("Posso pagare con un assegno?", Language::Italian),
            ("refund", Language::English),
            ("¿Tienen tarjetas de regalo?", Language::Spanish),
            ("¿Hacéis envíos a Japón?", Language::Spanish),
            ("Größe M?", Language::German),
            ("Do you sell jalapeño sauce?", Language::English),
            ("Quanto custa uma limpeza?", Language::Portuguese),
            // Spanish as typed, without accents or "¿".
            ("si falto a la cita me cobrais algo", Language::Spanish),
            ("cuanto cuesta una limpieza", Language::Spanish),
            ("donde estan ustedes", Language::Spanish),
            ("que hay que hacer si no puedo ir", Language::Spanish),
            (
                "Que fait la bibliothèque si je rends un livre en retard ?",
                Language::French,
            ),
            (
                "O que é preciso para a primeira consulta?",
                Language::Portuguese,
            ),
            ("Vocês abrem no domingo?", Language::Portuguese),
            (
                "Quanto custa se eu faltar à consulta?",
                Language::Portuguese,
            ),
            ("Vocês têm estacionamento?", Language::Portuguese),
            ("Öffnungszeiten", Language::German),
            ("Parkplätze?", Language::German),
            ("Is the café in München open?", Language::English),
            ("", Language::English),
        ] {
            assert_eq!(Language::of(q), language, "{q}");
        }
    }

    #[test]
    fn inflections_share_a_prefix_outside_english() {
        let fr = Language::French;
        assert_eq!(fr.term("déposer"), "depos");
        assert!(fr.holds("déposez", &fr.term("déposer")));
        assert!(fr.holds("emprunts", &fr.term("emprunté")));
        assert_eq!(fr.phrase("déposer"), "\"depos\"*");
        // "doming" would be read as "dome", which starts none of "domingo", "domingos".
        let es = Language::Spanish;
        assert_eq!(es.phrase("domingos"), "\"domin\"*");
        for language in [
            Language::French,
            Language::German,
            Language::Spanish,
            Language::Portuguese,
        ] {
            for word in [
                "domingos",
                "fechada",
                "meeting",
                "abierto",
                "Öffnungszeiten",
                "happy",
            ] {
                let phrase = language.phrase(word);
                let searched = phrase.trim_end_matches('*').trim_matches('"');
                let read = crate::knowledge::spelling::porter(searched);
                assert!(
                    !phrase.ends_with('*') || language.term(word).starts_with(&read),
                    "{word}: {phrase}"
                );
            }
        }
        // Too short to stand as a prefix: matched whole.
        assert_eq!(fr.phrase("vin"), "\"vin\"");
        assert!(!fr.holds("vingt", &fr.term("vin")));
        let de = Language::German;
        assert!(de.holds("rechnungen", &de.term("rechnung")));
        assert!(es.holds("reservado", &es.term("reservar")));
        let it = Language::Italian;
        assert!(it.holds("spedizioni", &it.term("spedizione")));
        assert!(it.holds("restituito", &it.term("restituire")));
        let pt = Language::Portuguese;
        assert!(pt.holds("encomendas", &pt.term("encomenda")));
        assert!(pt.holds("entregas", &pt.term("entregar")));
        // English keeps the stemmer's exact forms.
        let en = Language::English;
        assert_eq!(en.phrase("changes"), "\"changes\"");
        assert!(en.holds("changed", &en.term("changes")));
        assert!(!en.holds("changelog", &en.term("change")));
    }
}
