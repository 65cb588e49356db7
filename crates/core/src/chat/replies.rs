//! What the built-in engine says of its own, in the language or script of the question.

use crate::knowledge::language::Language;

pub const NO_ANSWER: &str = "I couldn't find an answer to that in the information I have. \
     Could you rephrase the question, or ask about something else?";

/// `NO_ANSWER` and `UNSURE` in the language `query` was asked in (`language`, or the script
/// it is mostly written in), so that a visitor who asks in French or Japanese is not told in
/// English that there is no answer.
pub(super) fn replies(query: &str, language: Language) -> (&'static str, &'static str) {
    if let Some(replies) = script_replies(query) {
        return replies;
    }
    match language {
        Language::English => (NO_ANSWER, UNSURE),
        Language::French => (
            "Je n'ai pas trouvé de réponse à cela dans les informations dont je dispose. \
             Pourriez-vous reformuler la question, ou demander autre chose ?",
            "Je ne suis pas sûr que mes informations répondent à cela. Le plus proche que j'ai \
             trouvé :",
        ),
        Language::German => (
            "Dazu habe ich in meinen Informationen keine Antwort gefunden. Können Sie die Frage \
             anders stellen oder etwas anderes fragen?",
            "Ich bin nicht sicher, ob meine Informationen das beantworten. Am nächsten kommt \
             dem Folgendes:",
        ),
        Language::Spanish => (
            "No encontré una respuesta a eso en la información que tengo. ¿Podría reformular \
             la pregunta o preguntar otra cosa?",
            "No estoy seguro de que la información que tengo responda a eso. Lo más cercano \
             que encontré:",
        ),
        Language::Italian => (
            "Non ho trovato una risposta a questo nelle informazioni che ho. Potrebbe \
             riformulare la domanda o chiedere qualcos'altro?",
            "Non sono sicuro che le mie informazioni rispondano a questo. La cosa più vicina \
             che ho trovato:",
        ),
        Language::Portuguese => (
            "Não encontrei uma resposta para isso nas informações que tenho. Poderia \
             reformular a pergunta ou perguntar outra coisa?",
            "Não tenho certeza de que as minhas informações respondem a isso. O mais próximo \
             que encontrei:",
        ),
    }
}

/// The replies for a question mostly in Japanese, Korean or Chinese script, told apart by
/// kana and Hangul; `None` for any other.
fn script_replies(query: &str) -> Option<(&'static str, &'static str)> {
    let (mut letters, mut kana, mut hangul, mut han) = (0usize, 0usize, 0usize, 0usize);
    for c in query.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        match c {
            '\u{3040}'..='\u{30ff}' | '\u{31f0}'..='\u{31ff}' | '\u{ff66}'..='\u{ff9f}' => {
                kana += 1
            }
            '\u{1100}'..='\u{11ff}' | '\u{3130}'..='\u{318f}' | '\u{ac00}'..='\u{d7af}' => {
                hangul += 1
            }
            c if crate::knowledge::cjk::is_cjk(c) => han += 1,
            _ => {}
        }
    }
    if 2 * (kana + hangul + han) <= letters {
        return None;
    }
    Some(if hangul > kana + han {
        (
            "제가 가진 정보에서 그에 대한 답을 찾지 못했습니다. 질문을 바꾸어 말하거나 다른 것을 \
             물어봐 주시겠어요?",
            "제가 가진 정보가 그 질문에 답하는지 확실하지 않습니다. 가장 가까운 내용은 다음과 \
             같습니다:",
        )
    } else if kana > 0 {
        (
            "手元の情報では、その答えが見つかりませんでした。質問を言い換えるか、別のことをお尋ね\
             ください。",
            "手元の情報で答えられるかどうか分かりません。最も近いものはこちらです：",
        )
    } else {
        (
            "我在现有信息中没有找到这个问题的答案。您可以换个说法，或者问点别的吗？",
            "我不确定现有信息能回答这个问题。找到的最接近的内容是：",
        )
    })
}

/// Said before the closest passage when nothing retrieved covers the question well enough to
/// be called an answer: the reader still gets the nearest source to click through to.
pub const UNSURE: &str = "I'm not sure the information I have answers that. The closest I found:";
