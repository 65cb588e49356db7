//! Background agents' tagging with a model: what the model is asked, and how its reply is read.
//! Without a model (or when the reply cannot be read) `routing::matches_criteria` decides.

use crate::chat::completion::ChatMessage;
use crate::domain::agent::Tag;
use serde_json::Value;

/// The conversation a model is sent to judge one exchange against an agent's tags.
pub fn judging_messages(tags: &[Tag], user_message: &str, answer: &str) -> Vec<ChatMessage> {
    let list: String = tags
        .iter()
        .map(|t| format!("- {}: {}\n", t.name, t.criteria))
        .collect();
    vec![
        ChatMessage::system(
            "You label support conversations. Reply with JSON only: {\"tags\": [names]}, listing the tags whose criteria the conversation meets, or an empty list.",
        ),
        ChatMessage::user(&format!(
            "Tags and their criteria:\n{list}\nConversation:\nUser: {user_message}\nAssistant: {answer}"
        )),
    ]
}

/// Tag names out of a model's reply, which should be `{"tags": [...]}` but may be wrapped in
/// prose or a code fence. `None` when no such object can be read.
pub fn parse_judged_tags(reply: &str) -> Option<Vec<String>> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    let value: Value = serde_json::from_str(reply.get(start..=end)?).ok()?;
    Some(
        value
            .get("tags")?
            .as_array()?
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
    )
}

/// The tags a judged reply names, matched by name regardless of case.
pub fn judged<'a>(tags: &'a [Tag], names: &[String]) -> Vec<&'a Tag> {
    tags.iter()
        .filter(|t| names.iter().any(|n| n.eq_ignore_ascii_case(&t.name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(name: &str) -> Tag {
        Tag {
            name: name.into(),
            color: "#ff8800".into(),
            criteria: "asks about pricing".into(),
        }
    }

    #[test]
    fn plain_fenced_and_wrapped_replies_are_read() {
        assert_eq!(
            parse_judged_tags(r#"{"tags": ["Sales lead"]}"#),
            Some(vec!["Sales lead".to_string()])
        );
        assert_eq!(
            parse_judged_tags("```json\n{\"tags\": [\"A\", \"B\"]}\n```"),
            Some(vec!["A".to_string(), "B".to_string()])
        );
        assert_eq!(
            parse_judged_tags("Sure! Here you go: {\"tags\": []} Hope that helps."),
            Some(Vec::new())
        );
    }

    #[test]
    fn unreadable_replies_are_none_and_non_strings_are_skipped() {
        assert_eq!(parse_judged_tags("no json here"), None);
        assert_eq!(parse_judged_tags("{\"labels\": [\"A\"]}"), None);
        assert_eq!(parse_judged_tags("{\"tags\": \"A\"}"), None);
        assert_eq!(parse_judged_tags("} backwards {"), None);
        assert_eq!(
            parse_judged_tags("{\"tags\": [\"A\", 3, null]}"),
            Some(vec!["A".to_string()])
        );
    }

    #[test]
    fn judged_names_match_tags_regardless_of_case() {
        let tags = vec![tag("Sales lead"), tag("Complaint")];
        let names = vec!["sales LEAD".to_string(), "Unknown".to_string()];
        let matched: Vec<&str> = judged(&tags, &names)
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(matched, vec!["Sales lead"]);
    }

    #[test]
    fn the_model_sees_every_tag_and_both_sides() {
        let m = judging_messages(&[tag("Sales lead")], "How much is it?", "It costs 5 EUR.");
        assert_eq!(m.len(), 2);
        let user = m[1].content.as_deref().unwrap_or("");
        assert!(user.contains("- Sales lead: asks about pricing"));
        assert!(user.contains("User: How much is it?"));
        assert!(user.contains("Assistant: It costs 5 EUR."));
    }
}
