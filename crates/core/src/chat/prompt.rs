//! Prompt assembly: the agent's instructions with variables filled in, the retrieved sources,
//! as much of the session's history as fits the model's context budget, and the question.
//!
//! Placeholders in an agent prompt are written `{{name}}` (spaces inside the braces allowed).
//! A variable's value comes from the session's `initial_variables`, else from the variable's
//! `default_value`; a default marked static always wins. A placeholder with no value at all is
//! removed rather than shown to the model.

use crate::chat::completion::{ChatMessage, Role};
use crate::domain::agent::AgentVariable;
use crate::domain::session::{Message, MessageKind};
use crate::knowledge::retrieve::Ranked;
use crate::knowledge::tokens::estimate_tokens;
use serde_json::{Map, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub query: String,
    pub response: String,
}

/// A session's stored messages (oldest first) as the turns of the prompt's history. Answers
/// are turns as they are; what was said while a person answered (live chat) is part of the
/// conversation too: the user's lines and the person's replies are joined into turns, so
/// that once the assistant answers again it knows what was said meanwhile. Announcements
/// ("a person has joined") and answers that said nothing are left out.
pub fn conversation_turns(messages: Vec<Message>) -> Vec<Turn> {
    let mut turns = Vec::new();
    let mut asked: Vec<String> = Vec::new();
    let mut replied: Vec<String> = Vec::new();
    let mut flush = |asked: &mut Vec<String>, replied: &mut Vec<String>| {
        if !asked.is_empty() || !replied.is_empty() {
            turns.push(Turn {
                query: asked.join("\n"),
                response: replied.join("\n"),
            });
        }
        asked.clear();
        replied.clear();
    };
    for message in messages {
        match message.kind {
            MessageKind::User => {
                if !replied.is_empty() {
                    flush(&mut asked, &mut replied);
                }
                asked.push(message.query);
            }
            MessageKind::Operator => replied.push(message.response),
            MessageKind::Announcement => {}
            MessageKind::Answer => {
                flush(&mut asked, &mut replied);
                if !message.response.is_empty() {
                    asked.push(message.query);
                    replied.push(message.response);
                    flush(&mut asked, &mut replied);
                }
            }
        }
    }
    flush(&mut asked, &mut replied);
    turns
}

pub fn variable_value(
    name: &str,
    declared: &[AgentVariable],
    session: Option<&Map<String, Value>>,
) -> Option<String> {
    let decl = declared.iter().find(|v| v.name == name);
    if let Some(d) = decl.filter(|d| d.default_value.is_static == 1) {
        return Some(d.default_value.content.clone());
    }
    let from_session = session.and_then(|s| s.get(name)).and_then(|v| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    });
    from_session.or_else(|| decl.map(|d| d.default_value.content.clone()))
}

/// Replaces every `{{name}}` in `template`.
pub fn fill_variables(
    template: &str,
    declared: &[AgentVariable],
    session: Option<&Map<String, Value>>,
) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = after[..end].trim();
                let is_name =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if is_name {
                    out.push_str(&variable_value(name, declared, session).unwrap_or_default());
                } else {
                    out.push_str(&rest[start..start + 2 + end + 2]);
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub system: String,
    pub history: Vec<Turn>,
    pub query: String,
    /// How many of the ranked sources made it into the prompt (numbered 1..=n).
    pub sources_used: usize,
    pub prompt_tokens: usize,
    /// Tokens left for the answer.
    pub answer_tokens: usize,
}

impl Prompt {
    /// The conversation a model is sent: instructions, earlier turns, the question.
    ///
    /// Roles alternate, as many chat templates (Mistral's, Gemma's) insist: a reply before
    /// any question (a greeting a client sent as history, a person's after the assistant's)
    /// joins the reply before it, and a question nobody answered (a user's last lines in live
    /// chat) the question after it.
    pub fn messages(&self) -> Vec<ChatMessage> {
        let mut said: Vec<(Role, String)> = Vec::new();
        let mut say = |role: Role, text: &str| match said.last_mut() {
            Some((last, joined)) if *last == role => {
                joined.push('\n');
                joined.push_str(text);
            }
            _ => said.push((role, text.to_string())),
        };
        for turn in &self.history {
            if !turn.query.is_empty() {
                say(Role::User, &turn.query);
            }
            if !turn.response.is_empty() {
                say(Role::Assistant, &turn.response);
            }
        }
        say(Role::User, &self.query);
        let mut messages = vec![ChatMessage::system(&self.system)];
        messages.extend(said.into_iter().map(|(role, text)| match role {
            Role::User => ChatMessage::user(&text),
            _ => ChatMessage::assistant(&text),
        }));
        messages
    }
}

pub struct PromptInput<'a> {
    pub agent_prompt: &'a str,
    pub variables: &'a [AgentVariable],
    pub session_variables: Option<&'a Map<String, Value>>,
    pub sources: &'a [Ranked],
    /// Oldest first.
    pub history: &'a [Turn],
    pub query: &'a str,
    pub context_tokens: usize,
    pub show_citations: bool,
}

/// Share of what remains after instructions and question that sources may take; history gets
/// the rest, newest turns first.
const SOURCE_SHARE: f64 = 0.6;

pub fn assemble(input: &PromptInput) -> Prompt {
    let answer_tokens = (input.context_tokens / 4).clamp(256, 1024);
    let instructions = fill_variables(input.agent_prompt, input.variables, input.session_variables);
    let citation_rule = if input.show_citations {
        "Cite the sources you use with their number in square brackets, like [1], right after the fact they support."
    } else {
        "Do not mention source numbers in your answer."
    };
    let rules = format!(
        "Answer from the numbered sources below. If they do not contain the answer, say plainly that you do not know rather than guessing. {citation_rule}"
    );
    let base = format!("{instructions}\n\n{rules}").trim().to_string();
    let fixed = estimate_tokens(&base) + estimate_tokens(input.query) + 16;
    let available = input.context_tokens.saturating_sub(answer_tokens + fixed);
    let source_budget = (available as f64 * SOURCE_SHARE) as usize;

    let mut sources_text = String::new();
    let mut used = 0;
    let mut spent = 0;
    for (i, r) in input.sources.iter().enumerate() {
        let heading = if r.hit.heading.is_empty() {
            String::new()
        } else {
            format!(" — {}", r.hit.heading)
        };
        let block = format!("[{}] {}{}\n{}\n\n", i + 1, r.hit.title, heading, r.hit.text);
        let cost = estimate_tokens(&block);
        if spent + cost > source_budget {
            break;
        }
        spent += cost;
        used += 1;
        sources_text.push_str(&block);
    }
    let system = if used > 0 {
        format!("{base}\n\nSources:\n\n{}", sources_text.trim_end())
    } else {
        format!("{base}\n\nSources: none were found for this question.")
    };

    let mut history_budget = available.saturating_sub(spent);
    let mut kept: Vec<Turn> = Vec::new();
    for turn in input.history.iter().rev() {
        let cost = estimate_tokens(&turn.query) + estimate_tokens(&turn.response) + 8;
        if cost > history_budget {
            break;
        }
        history_budget -= cost;
        kept.push(turn.clone());
    }
    kept.reverse();
    let prompt_tokens = estimate_tokens(&system)
        + kept
            .iter()
            .map(|t| estimate_tokens(&t.query) + estimate_tokens(&t.response) + 8)
            .sum::<usize>()
        + estimate_tokens(input.query)
        + 8;
    Prompt {
        system,
        history: kept,
        query: input.query.to_string(),
        sources_used: used,
        prompt_tokens,
        answer_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::completion::openai;
    use crate::domain::agent::{DefaultValue, VariableType};
    use crate::domain::data_source::SourceType;
    use crate::knowledge::retrieve::ChunkHit;
    use serde_json::json;

    fn var(name: &str, default: &str, is_static: u8) -> AgentVariable {
        AgentVariable {
            name: name.into(),
            description: String::new(),
            example: String::new(),
            var_type: VariableType::String,
            default_value: DefaultValue {
                content: default.into(),
                is_static,
            },
        }
    }

    fn ranked(title: &str, text: &str) -> Ranked {
        Ranked {
            hit: ChunkHit {
                id: 1,
                data_source_uuid: title.into(),
                position: 0,
                heading: String::new(),
                text: text.into(),
                tokens: 1,
                source_type: SourceType::File,
                title: title.into(),
                file_name: String::new(),
                meta_json: "{}".into(),
                rank: -1.0,
            },
            score: 1.0,
            coverage: 1.0,
            weighted_coverage: 1.0,
            known_share: 1.0,
            question_match: 0.0,
            misses_follow_up: false,
        }
    }

    #[test]
    fn variables_fill_from_session_then_defaults_and_static_wins() {
        let declared = vec![
            var("company", "Acme", 0),
            var("tone", "friendly", 1),
            var("region", "", 0),
        ];
        let session: Map<String, Value> =
            serde_json::from_value(json!({"company": "Initech", "tone": "rude", "seats": 5}))
                .unwrap();
        let out = fill_variables(
            "You work for {{company}} ({{ region }}), tone {{tone}}, seats {{seats}}, {{unknown}}!",
            &declared,
            Some(&session),
        );
        assert_eq!(out, "You work for Initech (), tone friendly, seats 5, !");
        assert_eq!(fill_variables("{{company}}", &declared, None), "Acme");
        assert_eq!(
            fill_variables("keep {{ not a name }} and {{ open", &declared, None),
            "keep {{ not a name }} and {{ open"
        );
    }

    fn stored(kind: MessageKind, query: &str, response: &str) -> Message {
        let mut m = crate::domain::session::sample_message(
            response,
            crate::domain::session::FinishReason::Stop,
            json!({}),
            json!({}),
        );
        m.kind = kind;
        m.query = query.to_string();
        m
    }

    #[test]
    fn what_was_said_in_live_chat_stays_in_the_history() {
        use MessageKind::*;
        let turns = conversation_turns(vec![
            stored(Answer, "My name is Zelda.", "Hello Zelda."),
            stored(Announcement, "", "A person has joined."),
            stored(User, "My order is 777.", ""),
            stored(User, "It has not arrived.", ""),
            stored(Operator, "", "Order 777 ships tomorrow."),
            stored(User, "Thanks!", ""),
            stored(Announcement, "", "The assistant will answer from here on."),
            stored(Answer, "Anything else?", ""),
        ]);
        let pairs: Vec<(&str, &str)> = turns
            .iter()
            .map(|t| (t.query.as_str(), t.response.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("My name is Zelda.", "Hello Zelda."),
                (
                    "My order is 777.\nIt has not arrived.",
                    "Order 777 ships tomorrow."
                ),
                ("Thanks!", ""),
            ]
        );
        // The unanswered line is sent as the user's, with no empty reply after it.
        let prompt = Prompt {
            system: "s".into(),
            history: turns,
            query: "When does it ship?".into(),
            sources_used: 0,
            prompt_tokens: 0,
            answer_tokens: 0,
        };
        let said: Vec<(Role, String)> = prompt
            .messages()
            .into_iter()
            .map(|m| (m.role, m.content.unwrap_or_default()))
            .collect();
        assert_eq!(
            said.iter().map(|(role, _)| *role).collect::<Vec<_>>(),
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        assert_eq!(said[5].1, "Thanks!\nWhen does it ship?");
    }

    #[test]
    fn a_reply_before_any_question_joins_the_reply_before_it() {
        let turn = |query: &str, response: &str| Turn {
            query: query.into(),
            response: response.into(),
        };
        let prompt = Prompt {
            system: "s".into(),
            history: vec![turn("Hi", "Hello."), turn("", "I'm Bob, from the team.")],
            query: "Hi Bob".into(),
            sources_used: 0,
            prompt_tokens: 0,
            answer_tokens: 0,
        };
        let said: Vec<(Role, Option<String>)> = prompt
            .messages()
            .into_iter()
            .map(|m| (m.role, m.content))
            .collect();
        assert_eq!(said.len(), 4, "{said:?}");
        assert_eq!(
            said[2],
            (
                Role::Assistant,
                Some("Hello.\nI'm Bob, from the team.".into())
            )
        );
    }

    #[test]
    fn sources_are_numbered_and_history_fits_the_budget() {
        let sources = vec![
            ranked("Shipping", "Ships in two days."),
            ranked("Returns", "Returns within 30 days."),
        ];
        let history: Vec<Turn> = (0..200)
            .map(|i| Turn {
                query: format!("question {i} {}", "word ".repeat(50)),
                response: format!("answer {i} {}", "word ".repeat(50)),
            })
            .collect();
        let p = assemble(&PromptInput {
            agent_prompt: "Be brief.",
            variables: &[],
            session_variables: None,
            sources: &sources,
            history: &history,
            query: "How fast is shipping?",
            context_tokens: 4096,
            show_citations: true,
        });
        assert!(p.system.contains("[1] Shipping\nShips in two days."));
        assert!(p.system.contains("[2] Returns"));
        assert!(p.system.contains("square brackets"));
        assert_eq!(p.sources_used, 2);
        assert!(!p.history.is_empty() && p.history.len() < 200);
        assert_eq!(
            p.history.last().unwrap().query,
            history.last().unwrap().query,
            "newest turns are kept"
        );
        assert!(
            p.prompt_tokens + p.answer_tokens <= 4096,
            "{} + {}",
            p.prompt_tokens,
            p.answer_tokens
        );
        let m: Vec<Value> = p.messages().iter().map(openai::message_json).collect();
        assert_eq!(m[0]["role"], "system");
        assert_eq!(m.last().unwrap()["content"], "How fast is shipping?");
    }

    #[test]
    fn no_sources_says_so_and_citations_off_forbids_markers() {
        let p = assemble(&PromptInput {
            agent_prompt: "",
            variables: &[],
            session_variables: None,
            sources: &[],
            history: &[],
            query: "hi",
            context_tokens: 16384,
            show_citations: false,
        });
        assert!(p.system.contains("none were found"));
        assert!(p.system.contains("Do not mention source numbers"));
        assert_eq!(p.sources_used, 0);
    }
}
