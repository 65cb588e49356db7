//! Which agent handles a message, by text similarity: the user-facing agent whose description
//! fits the question best (shifted by its `bias`, with some stickiness to the agent that
//! answered the previous turn), whether the user is asking for a person (the human-escalation
//! agent), and which of a background agent's tags a conversation matches.

use crate::api::error::{ApiError, ApiResult};
use crate::chat::completion::ChatMessage;
use crate::chat::followup::is_follow_up;
use crate::chat::models::{self, ModelInfo};
use crate::domain::agent::{Agent, AgentType};
use crate::domain::session::{Message, MessageKind};
use crate::knowledge::query::words;
use crate::knowledge::retrieve::stems;
use std::collections::HashSet;

/// How much the agent that answered the previous turn is favoured when the question is a
/// follow-up (`chat::followup`): "and in blue?" rarely names its topic again.
pub const STICKINESS: f64 = 0.15;

/// Share of `query`'s content words that `text` holds (0..1).
pub fn overlap(query: &HashSet<String>, text: &HashSet<String>) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    query.iter().filter(|w| text.contains(*w)).count() as f64 / query.len() as f64
}

pub struct AgentProfile<'a> {
    pub uuid: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub bias: f64,
    /// Answers from all of the chatbot's sources: where a question that fits no other agent
    /// goes.
    pub general: bool,
}

/// The index of the agent that should answer `query`. A follow-up leans towards the previous
/// turn's agent and, when it fits no description, stays with it; any other question that fits
/// no description (a change of topic the previous agent was not described for) goes to the
/// chatbot's general agent, else to the first.
pub fn choose_agent(query: &str, agents: &[AgentProfile], previous: Option<&str>) -> Option<usize> {
    choose_agent_with(query, agents, previous, None)
}

/// How much a model's choice of agent (`route_messages`) adds to that agent's score: more than
/// word overlap usually gives, while a strong bias can still outweigh it.
pub const MODEL_CHOICE: f64 = 0.5;

/// `choose_agent` with the agent a model chose (`by_model`, its uuid) favoured by
/// `MODEL_CHOICE`; bias and a follow-up's stickiness still count.
pub fn choose_agent_with(
    query: &str,
    agents: &[AgentProfile],
    previous: Option<&str>,
    by_model: Option<&str>,
) -> Option<usize> {
    if agents.is_empty() {
        return None;
    }
    let previous = previous.filter(|_| is_follow_up(query));
    let q = stems(query);
    let scores: Vec<f64> = agents
        .iter()
        .map(|a| {
            let fit = overlap(&q, &stems(&format!("{} {}", a.name, a.description)));
            let sticky = if Some(a.uuid) == previous {
                STICKINESS
            } else {
                0.0
            };
            let chosen = if Some(a.uuid) == by_model {
                MODEL_CHOICE
            } else {
                0.0
            };
            fit + a.bias + sticky + chosen
        })
        .collect();
    let default = previous
        .and_then(|p| agents.iter().position(|a| a.uuid == p))
        .or_else(|| agents.iter().position(|a| a.general))
        .unwrap_or(0);
    let mut best = default;
    for (i, s) in scores.iter().enumerate() {
        if *s > scores[best] + 1e-9 {
            best = i;
        }
    }
    Some(best)
}

/// Opens the request that asks a model which agent answers; the reply is a number.
pub const ROUTE_INSTRUCTION: &str = "You route a customer's message to the assistant best \
suited to answer it. Reply with the number of one assistant only.";

/// The longest reply a routing call may write.
pub const ROUTE_MAX_TOKENS: usize = 8;

/// The messages asking a model which of `agents` should answer `query`; `previous` is the
/// index of the agent that answered the turn before.
pub fn route_messages(
    query: &str,
    agents: &[AgentProfile],
    previous: Option<usize>,
) -> Vec<ChatMessage> {
    let mut listing = String::from("Assistants:\n");
    for (i, a) in agents.iter().enumerate() {
        let description = a.description.trim();
        listing.push_str(&format!("{}. {}", i + 1, a.name.trim()));
        if !description.is_empty() {
            listing.push_str(&format!(": {description}"));
        }
        listing.push('\n');
    }
    if let Some(p) = previous.filter(|p| *p < agents.len()) {
        listing.push_str(&format!(
            "The previous message was answered by {}.\n",
            p + 1
        ));
    }
    listing.push_str(&format!("Message: {}", query.trim()));
    vec![
        ChatMessage::system(ROUTE_INSTRUCTION),
        ChatMessage::user(&listing),
    ]
}

/// The index of the agent a model's reply to `route_messages` names among `count`: the first
/// number in it, when it is one of theirs.
pub fn parse_route(reply: &str, count: usize) -> Option<usize> {
    let digits: String = reply
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let n: usize = digits.parse().ok()?;
    (1..=count).contains(&n).then(|| n - 1)
}

/// The enabled user-facing agents of `agents`: the ones a message can be routed to.
pub fn answering_agents(agents: &[Agent]) -> Vec<&Agent> {
    agents
        .iter()
        .filter(|a| a.config.agent_type == AgentType::UserFacing && a.config.enabled)
        .collect()
}

/// The routing profile of an agent.
pub fn profile(a: &Agent) -> AgentProfile<'_> {
    AgentProfile {
        uuid: &a.uuid,
        name: &a.config.name,
        description: &a.config.description,
        bias: a.config.meta.bias.unwrap_or(0.0),
        general: a.allowed_sources().is_none(),
    }
}

/// Whether `query` goes to the enabled human-escalation agent of `agents`, and that agent.
pub fn escalation_for<'a>(query: &str, agents: &'a [Agent]) -> Option<&'a Agent> {
    let escalation = agents
        .iter()
        .find(|a| a.config.agent_type == AgentType::HumanEscalation && a.config.enabled)?;
    let monitored = escalation
        .config
        .human_escalation_settings
        .as_ref()
        .map(|s| s.monitored_messages.clone())
        .unwrap_or_default();
    wants_person(
        query,
        &monitored,
        escalation.config.meta.bias.unwrap_or(0.0),
    )
    .then_some(escalation)
}

/// Ways people ask for a person. Whole phrases count fully; a lone word such as "human" or
/// "agent" counts less, since it also appears in ordinary questions.
const PERSON_PHRASES: &[&str] = &[
    "talk to a human",
    "talk to a person",
    "talk to someone",
    "talk to a real person",
    "speak to a human",
    "speak to a person",
    "speak to someone",
    "speak with a human",
    "speak with a person",
    "speak with someone",
    "speak to an agent",
    "talk to an agent",
    "real person",
    "real human",
    "human agent",
    "live agent",
    "live person",
    "customer service",
    "customer support",
    "a representative",
    "an operator",
    "connect me to",
    "put me through",
    "transfer me",
];
const PERSON_WORDS: &[&str] = &[
    "human",
    "person",
    "representative",
    "operator",
    "agent",
    "someone",
    "staff",
];

/// Escalation needs a score of at least this, after the agent's bias is added.
pub const ESCALATION_THRESHOLD: f64 = 0.6;

/// 0..1: how clearly `query` asks for a person. `extra_phrases` are the escalation agent's own
/// `monitored_messages`.
pub fn person_request_score(query: &str, extra_phrases: &[String]) -> f64 {
    let normalised = words(query).join(" ");
    let phrase_hit = PERSON_PHRASES
        .iter()
        .map(|p| p.to_string())
        .chain(extra_phrases.iter().map(|p| words(p).join(" ")))
        .filter(|p| !p.is_empty())
        .any(|p| format!(" {normalised} ").contains(&format!(" {p} ")));
    if phrase_hit {
        return 1.0;
    }
    let query_words: HashSet<String> = words(query).into_iter().collect();
    if PERSON_WORDS.iter().any(|w| query_words.contains(*w)) {
        0.4
    } else {
        0.0
    }
}

pub fn wants_person(query: &str, extra_phrases: &[String], bias: f64) -> bool {
    person_request_score(query, extra_phrases) + bias >= ESCALATION_THRESHOLD
}

/// A tag matches when the user's words hold at least this share of its criteria's words.
pub const TAG_THRESHOLD: f64 = 0.3;

/// Words criteria are phrased with ("the user asks about ...") that say nothing of the topic,
/// as stems.
const CRITERIA_FILLER: &[&str] = &[
    "ask", "want", "need", "question", "user", "custom", "someth", "anyth", "mention", "talk",
    "say", "request", "inquir", "interest",
];

/// 0..1: how well a conversation (the user's message and the answer) meets a tag's criteria.
/// A tag describes what the user did or wanted, so the user's own words must carry it; the
/// answer only adds a little.
pub fn criteria_score(criteria: &str, user_message: &str, answer: &str) -> f64 {
    let wanted: HashSet<String> = stems(criteria)
        .into_iter()
        .filter(|w| !CRITERIA_FILLER.contains(&w.as_str()))
        .collect();
    let from_user = overlap(&wanted, &stems(user_message));
    if from_user == 0.0 {
        return 0.0;
    }
    (from_user + 0.25 * overlap(&wanted, &stems(answer))).min(1.0)
}

pub fn matches_criteria(criteria: &str, user_message: &str, answer: &str) -> bool {
    criteria_score(criteria, user_message, answer) >= TAG_THRESHOLD
}

/// Who handles a message: the human-escalation agent when the user asks for a person (and
/// that agent is enabled), else the enabled user-facing agent whose description fits best.
/// The flag says whether the message escalates. No enabled user-facing agent is a conflict.
pub fn pick_agent(
    query: &str,
    agents: &[Agent],
    previous: Option<&str>,
) -> ApiResult<(Agent, bool)> {
    pick_agent_with(query, agents, previous, None)
}

/// `pick_agent` with the user-facing agent a model chose (`by_model`, its uuid) favoured
/// (`choose_agent_with`).
pub fn pick_agent_with(
    query: &str,
    agents: &[Agent],
    previous: Option<&str>,
    by_model: Option<&str>,
) -> ApiResult<(Agent, bool)> {
    if let Some(escalation) = escalation_for(query, agents) {
        return Ok((escalation.clone(), true));
    }
    let answering = answering_agents(agents);
    let profiles: Vec<AgentProfile> = answering.iter().map(|a| profile(a)).collect();
    let chosen = choose_agent_with(query, &profiles, previous, by_model)
        .and_then(|i| answering.get(i))
        .ok_or_else(no_agent)?;
    Ok(((*chosen).clone(), false))
}

/// Whether some agent of `agents` would take `query` (`pick_agent_with` finds one), asked
/// before the message is counted: a message no agent can answer is refused without using up
/// any of the chatbot's rate.
pub fn someone_answers(query: &str, agents: &[Agent]) -> ApiResult<()> {
    let answers = escalation_for(query, agents).is_some() || !answering_agents(agents).is_empty();
    if answers {
        Ok(())
    } else {
        Err(no_agent())
    }
}

fn no_agent() -> ApiError {
    ApiError::Conflict("This chatbot has no enabled user-facing agent to answer.".into())
}

/// The agent that answered the last exchange of `history` (oldest first).
pub fn previous_agent(history: &[Message]) -> Option<String> {
    history
        .iter()
        .rev()
        .find(|m| m.kind == MessageKind::Answer)
        .and_then(|m| {
            m.meta
                .get("agent")?
                .get("uuid")?
                .as_str()
                .map(str::to_string)
        })
}

/// The agent's model, or the default when it names none (or one no longer offered).
pub fn agent_model(agent: &Agent) -> &'static ModelInfo {
    agent
        .config
        .meta
        .model
        .as_deref()
        .and_then(models::find)
        .unwrap_or_else(models::default_model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles() -> Vec<AgentProfile<'static>> {
        vec![
            AgentProfile {
                uuid: "general",
                name: "General Q&A",
                description: "Answers general questions.",
                bias: 0.0,
                general: true,
            },
            AgentProfile {
                uuid: "billing",
                name: "Billing",
                description: "Invoices, payments, refunds and subscription charges.",
                bias: 0.0,
                general: false,
            },
            AgentProfile {
                uuid: "tech",
                name: "Technical support",
                description: "Installation problems, error messages, crashes and configuration.",
                bias: 0.0,
                general: false,
            },
        ]
    }

    #[test]
    fn the_best_described_agent_answers() {
        let a = profiles();
        assert_eq!(
            choose_agent(
                "Why was my card charged twice on the last invoice?",
                &a,
                None
            ),
            Some(1)
        );
        assert_eq!(
            choose_agent("The installer crashes with an error message", &a, None),
            Some(2)
        );
        assert_eq!(choose_agent("Hello!", &a, None), Some(0));
    }

    #[test]
    fn bias_shifts_and_the_previous_agent_sticks() {
        let mut a = profiles();
        assert_eq!(
            choose_agent("ok, and what then?", &a, Some("tech")),
            Some(2)
        );
        assert_eq!(
            choose_agent("refund my payment", &a, Some("tech")),
            Some(1),
            "a clear topic wins over stickiness"
        );
        a[1].bias = -1.0;
        assert_eq!(choose_agent("refund my payment", &a, None), Some(0));
        a[1].bias = 0.0;
        // A new topic no description fits leaves the previous agent for the general one.
        assert_eq!(
            choose_agent("What is the opening time on Sundays?", &a, Some("tech")),
            Some(0)
        );
        assert_eq!(
            choose_agent("And on Sundays?", &a, Some("tech")),
            Some(2),
            "a follow-up stays"
        );
        assert_eq!(choose_agent("anything", &[], None), None);
    }

    #[test]
    fn a_model_s_choice_counts_beside_bias_and_stickiness() {
        let mut a = profiles();
        // Words alone send this to the general agent; the model knows better.
        let q = "My bank statement shows the same amount two times";
        assert_eq!(choose_agent(q, &a, None), Some(0));
        assert_eq!(choose_agent_with(q, &a, None, Some("billing")), Some(1));
        // An unknown uuid changes nothing.
        assert_eq!(choose_agent_with(q, &a, None, Some("nobody")), Some(0));
        // A strong bias still outweighs it.
        a[1].bias = -1.0;
        assert_eq!(choose_agent_with(q, &a, None, Some("billing")), Some(0));
    }

    #[test]
    fn a_routing_request_lists_the_agents_and_its_reply_is_a_number() {
        let a = profiles();
        let m = route_messages("Why was I charged twice?", &a, Some(2));
        assert_eq!(m.len(), 2);
        let text = m[1].content.as_deref().unwrap_or_default();
        assert!(text.contains("2. Billing: Invoices, payments"), "{text}");
        assert!(text.contains("answered by 3."), "{text}");
        assert!(
            text.ends_with("Message: Why was I charged twice?"),
            "{text}"
        );
        assert_eq!(parse_route("2", 3), Some(1));
        assert_eq!(parse_route("Assistant 3.", 3), Some(2));
        assert_eq!(parse_route("4", 3), None);
        assert_eq!(parse_route("0", 3), None);
        assert_eq!(parse_route("billing", 3), None);
        assert_eq!(parse_route("99999999999999999999999", 3), None);
    }

    #[test]
    fn asking_for_a_person_is_recognised() {
        for q in [
            "Can I talk to a human please?",
            "I want to speak with someone",
            "Get me a REAL PERSON",
            "transfer me to customer service",
        ] {
            assert!(wants_person(q, &[], 0.0), "{q}");
        }
        for q in [
            "How do I reset my password?",
            "Is a person allowed two accounts?",
        ] {
            assert!(!wants_person(q, &[], 0.0), "{q}");
        }
        assert!(
            wants_person("Is a person allowed two accounts?", &[], 0.3),
            "a positive bias escalates more readily"
        );
        assert!(
            !wants_person("talk to a human", &[], -0.5),
            "a negative bias escalates less readily"
        );
        assert!(wants_person(
            "I need a manager now",
            &["need a manager".into()],
            0.0
        ));
    }

    #[test]
    fn tags_match_their_criteria() {
        assert!(matches_criteria(
            "asks about pricing",
            "What is the price of the pro plan?",
            "It costs 10."
        ));
        assert!(matches_criteria(
            "wants a refund",
            "I want my money back, please refund me",
            "Refunds take 5 days."
        ));
        assert!(!matches_criteria(
            "wants a refund",
            "What are your opening hours?",
            "We open at 9."
        ));
        assert!(
            !matches_criteria(
                "asks about pricing",
                "Hello",
                "Our pricing page lists plans."
            ),
            "the answer alone is not enough"
        );
        let price = "The user asks about the price or cost of something";
        assert!(matches_criteria(
            price,
            "What does express delivery cost?",
            ""
        ));
        assert!(!matches_criteria(
            "wants a refund or their money back",
            "What does express delivery cost?",
            ""
        ));
        assert!(
            !matches_criteria(price, "Can I ask you something?", ""),
            "filler words alone match nothing"
        );
    }

    fn agent(
        uuid: &str,
        agent_type: AgentType,
        name: &str,
        description: &str,
        enabled: bool,
    ) -> Agent {
        let mut config = crate::domain::agent::AgentConfig::defaults(agent_type, name.into());
        config.description = description.into();
        config.enabled = enabled;
        Agent {
            uuid: uuid.into(),
            chatbot_uuid: "c".into(),
            created_at: "t".into(),
            modified_at: "t".into(),
            config,
        }
    }

    fn team() -> Vec<Agent> {
        vec![
            agent(
                "general",
                AgentType::UserFacing,
                "General Q&A",
                "Answers general questions.",
                true,
            ),
            agent(
                "weather",
                AgentType::UserFacing,
                "Weather",
                "Forecasts, rain, temperature and wind.",
                true,
            ),
            agent(
                "off",
                AgentType::UserFacing,
                "Billing",
                "Invoices, refunds and payments.",
                false,
            ),
            agent("person", AgentType::HumanEscalation, "Escalation", "", true),
            agent(
                "tagger",
                AgentType::Background,
                "Tagger",
                "Refunds and payments.",
                true,
            ),
        ]
    }

    #[test]
    fn a_request_for_a_person_goes_to_the_enabled_escalation_agent() {
        let (chosen, escalating) =
            pick_agent("Can I talk to a human please?", &team(), None).unwrap();
        assert_eq!(chosen.uuid, "person");
        assert!(escalating);
        let mut agents = team();
        agents[3].config.enabled = false;
        let (chosen, escalating) =
            pick_agent("Can I talk to a human please?", &agents, None).unwrap();
        assert_ne!(chosen.uuid, "person");
        assert!(!escalating);
    }

    #[test]
    fn only_enabled_user_facing_agents_answer() {
        let (chosen, _) =
            pick_agent("Will it rain tomorrow, what temperature?", &team(), None).unwrap();
        assert_eq!(chosen.uuid, "weather");
        // The disabled billing agent and the background tagger never answer.
        let (chosen, _) = pick_agent("I want a refund of my payment", &team(), None).unwrap();
        assert!(
            chosen.uuid == "general" || chosen.uuid == "weather",
            "{}",
            chosen.uuid
        );
        let nobody: Vec<Agent> = team()
            .into_iter()
            .filter(|a| a.config.agent_type != AgentType::UserFacing)
            .collect();
        assert_eq!(
            pick_agent("hello", &nobody, None).unwrap_err().status(),
            409
        );
    }

    #[test]
    fn someone_answers_exactly_when_an_agent_would_be_picked() {
        let nobody: Vec<Agent> = team()
            .into_iter()
            .filter(|a| a.config.agent_type != AgentType::UserFacing)
            .collect();
        let mut unmanned = nobody.clone();
        unmanned[0].config.enabled = false;
        for (agents, query) in [
            (team(), "hello"),
            (nobody.clone(), "hello"),
            (nobody, "Can I talk to a human please?"),
            (unmanned, "Can I talk to a human please?"),
        ] {
            assert_eq!(
                someone_answers(query, &agents).is_ok(),
                pick_agent(query, &agents, None).is_ok(),
                "{query}"
            );
        }
        assert!(someone_answers("Can I talk to a human please?", &team()).is_ok());
    }

    #[test]
    fn the_previous_answer_names_the_previous_agent() {
        use crate::domain::session::{sample_message, FinishReason};
        use serde_json::json;
        let mut older = sample_message(
            "a",
            FinishReason::Stop,
            json!({}),
            json!({"agent": {"uuid": "weather"}}),
        );
        older.uuid = "1".into();
        let mut operator = sample_message("b", FinishReason::Stop, json!({}), json!({}));
        operator.kind = MessageKind::Operator;
        assert_eq!(
            previous_agent(&[older.clone(), operator]).as_deref(),
            Some("weather")
        );
        assert_eq!(previous_agent(&[]), None);
        let (chosen, _) = pick_agent(
            "and tomorrow?",
            &team(),
            previous_agent(&[older]).as_deref(),
        )
        .unwrap();
        assert_eq!(
            chosen.uuid, "weather",
            "a follow-up stays with the agent that answered"
        );
    }

    #[test]
    fn an_unknown_model_falls_back_to_the_default() {
        let mut a = agent("a", AgentType::UserFacing, "A", "", true);
        a.config.meta.model = Some("no-such-model".into());
        assert_eq!(agent_model(&a).name, models::DEFAULT_MODEL);
        a.config.meta.model = Some("gpt-4o-mini-4k".into());
        assert_eq!(agent_model(&a).name, "gpt-4o-mini-4k");
    }
}
