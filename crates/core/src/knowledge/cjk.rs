//! Chinese, Japanese and Korean text, written without spaces between words: which
//! characters those scripts are, which character pairs do grammar, the pairs the CJK index
//! holds (migration 0010) and which questions are searched there.

use super::query::for_each_word;

/// Chinese characters that mostly do a sentence's grammar (particles, pronouns, question
/// words, "can", "not"), in simplified and traditional forms.
const CJK_FUNCTION_CHARS: &str =
    "的了吗嗎呢吧么麼啊呀是在我你他她它们們怎什哪谁誰能可以还還多少久几幾很都也就和与與把被给給让讓从從这這那个個有没沒不要该該";

/// Whether `word`, a pair of CJK characters as `for_each_word` cuts them, holds a character
/// that does grammar rather than meaning: a Chinese one (`CJK_FUNCTION_CHARS`) or Japanese
/// hiragana (particles and endings: "は", "です"). Such pairs are mostly made across two words
/// ("多久发货" is 多久, 久发, 发货) and would count as words of the question no passage holds.
pub(super) fn is_cjk_function_pair(word: &str) -> bool {
    let mut chars = word.chars();
    let (Some(a), Some(b), None) = (chars.next(), chars.next(), chars.next()) else {
        return false;
    };
    let grammar =
        |c: char| CJK_FUNCTION_CHARS.contains(c) || ('\u{3041}'..='\u{309f}').contains(&c);
    is_cjk(a) && is_cjk(b) && (grammar(a) || grammar(b))
}

/// Chinese, Japanese and Korean characters: scripts written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xac00..=0xd7af | 0xf900..=0xfaff
        | 0x20000..=0x2ffff)
}

/// Whether `query` is searched in the CJK index (character pairs) rather than the word
/// index: when it is mostly CJK, its CJK characters counted as a word every two (about what a
/// CJK word takes) against its other words. A Latin-script question with a CJK name or a
/// "谢谢" in it keeps its words searched.
pub fn searched_as_cjk(query: &str) -> bool {
    let cjk = query.chars().filter(|c| is_cjk(*c)).count();
    let other_words = query
        .split(|c: char| !c.is_alphabetic() || is_cjk(c))
        .filter(|w| !w.is_empty())
        .count();
    cjk > 0 && cjk.div_ceil(2) >= other_words
}

/// The CJK character pairs of `text`, space-separated: what the CJK index holds for a chunk.
/// `None` when `text` has no CJK character.
pub fn cjk_pairs(text: &str) -> Option<String> {
    if !text.chars().any(is_cjk) {
        return None;
    }
    // Other words never consist of CJK characters, so the pairs are the words that do.
    let mut pairs = Vec::new();
    for_each_word(text, |word| {
        if word.chars().all(is_cjk) {
            pairs.push(word.to_string());
        }
    });
    Some(pairs.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_searched_in_the_script_most_of_it_is_written_in() {
        for cjk in [
            "退货政策是什么？",
            "如何重置 iPhone 密码",
            "iPhone 充电",
            "配送にかかる日数は?",
            "환불 정책",
        ] {
            assert!(searched_as_cjk(cjk), "{cjk}");
        }
        for words in [
            "What is your refund policy? 谢谢",
            "Do you ship abroad to 日本?",
            "What is your refund policy?",
            "Возврат товара",
        ] {
            assert!(!searched_as_cjk(words), "{words}");
        }
    }

    #[test]
    fn a_chunk_s_cjk_text_is_indexed_as_its_character_pairs() {
        assert_eq!(
            cjk_pairs("退款需要五天。Refunds").as_deref(),
            Some("退款 款需 需要 要五 五天")
        );
        assert_eq!(cjk_pairs("no such text"), None);
    }
}
