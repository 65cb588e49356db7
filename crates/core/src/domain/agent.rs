//! Agents: the three types, which fields each type takes, defaults, validation of create and
//! update bodies, and the record shape.

use crate::api::error::{ApiError, ApiResult};
use crate::api::validate::{
    canonical_uuid_list, check_len, is_hex_color, Body, MAX_DESCRIPTION_CHARS, MAX_LIST_ITEMS,
    MAX_MESSAGE_CHARS, MAX_NAME_CHARS, MAX_PROMPT_CHARS,
};
use crate::chat::models;
use crate::string_enum::string_enum;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

string_enum! {
    /// The three kinds of agent; each message is handled by exactly one.
    pub enum AgentType {
        UserFacing = "user-facing",
        HumanEscalation = "human-escalation",
        Background = "background",
    }
}

string_enum! {
    /// What an agent variable holds.
    pub enum VariableType {
        String = "string",
        Number = "number",
        Boolean = "boolean",
    }
}

impl AgentType {
    /// Body fields that only some types take (the seed's Agent meta table; `bias` also shifts
    /// routing between several user-facing agents).
    fn takes(self, field: &str) -> bool {
        use AgentType::*;
        match field {
            "model" | "temperature" => matches!(self, UserFacing | Background),
            "use_all_sources" | "variables" => self == UserFacing,
            "tags" => self == Background,
            "bias" => matches!(self, UserFacing | HumanEscalation),
            "human_escalation_settings" => self == HumanEscalation,
            _ => true,
        }
    }
}

const TYPE_SPECIFIC_FIELDS: &[&str] = &[
    "model",
    "temperature",
    "use_all_sources",
    "variables",
    "tags",
    "bias",
    "human_escalation_settings",
];

pub const MAX_TAGS: usize = 50;
pub const MAX_VARIABLES: usize = 50;
pub const TEMPERATURE_RANGE: (f64, f64) = (0.0, 2.0);
pub const BIAS_RANGE: (f64, f64) = (-1.0, 1.0);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tag {
    pub name: String,
    pub color: String,
    pub criteria: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DefaultValue {
    pub content: String,
    /// 1 when the session may not override the default.
    #[serde(rename = "static")]
    pub is_static: u8,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentVariable {
    pub name: String,
    pub description: String,
    pub example: String,
    #[serde(rename = "type")]
    pub var_type: VariableType,
    pub default_value: DefaultValue,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HumanEscalationSettings {
    pub human_requested_message: String,
    pub live_chat_start_announcement: String,
    pub live_chat_end_announcement: String,
    pub monitored_messages: Vec<String>,
    pub notifications_enabled: u8,
    pub sound_enabled: u8,
}

impl Default for HumanEscalationSettings {
    fn default() -> Self {
        HumanEscalationSettings {
            human_requested_message: "I've asked a member of our team to join this conversation. Please stay here; they will reply shortly.".to_string(),
            live_chat_start_announcement: "A member of our team has joined the conversation.".to_string(),
            live_chat_end_announcement: "Our team member has left the conversation. The assistant will answer from here on.".to_string(),
            monitored_messages: Vec::new(),
            notifications_enabled: 1,
            sound_enabled: 0,
        }
    }
}

/// Type-specific settings; only the ones the type takes are ever set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentMeta {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub use_all_sources: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tags: Option<Vec<Tag>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bias: Option<f64>,
}

/// Everything about an agent that a client can set.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentConfig {
    pub agent_type: AgentType,
    pub name: String,
    pub prompt: String,
    pub description: String,
    pub enabled: bool,
    pub meta: AgentMeta,
    pub data_source_uuids: Vec<String>,
    pub human_escalation_settings: Option<HumanEscalationSettings>,
    pub variables: Vec<AgentVariable>,
}

/// A stored agent as the storage layer reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Agent {
    pub uuid: String,
    pub chatbot_uuid: String,
    pub created_at: String,
    pub modified_at: String,
    pub config: AgentConfig,
}

/// How `enabled` is written: the seed has 0/1 in lists and a boolean in single answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnabledAs {
    Integer,
    Boolean,
}

impl Agent {
    pub fn to_json(&self, enabled_as: EnabledAs, tool_functions: Vec<Value>) -> Value {
        let c = &self.config;
        let enabled = match enabled_as {
            EnabledAs::Integer => json!(u8::from(c.enabled)),
            EnabledAs::Boolean => json!(c.enabled),
        };
        let mut record = json!({
            "uuid": self.uuid,
            "chatbot_uuid": self.chatbot_uuid,
            "name": c.name,
            "prompt": c.prompt,
            "description": c.description,
            "type": c.agent_type.as_str(),
            "created_at": self.created_at,
            "modified_at": self.modified_at,
            "enabled": enabled,
            "meta": c.meta,
            "data_source_uuids": c.data_source_uuids,
            "tool_functions": tool_functions,
        });
        if let Some(obj) = record.as_object_mut() {
            if let Some(settings) = &c.human_escalation_settings {
                obj.insert("human_escalation_settings".into(), json!(settings));
            }
            if c.agent_type == AgentType::UserFacing {
                obj.insert("variables".into(), json!(c.variables));
            }
        }
        record
    }
}

impl Agent {
    /// The sources the agent may draw on: `None` for all of the chatbot's.
    pub fn allowed_sources(&self) -> Option<Vec<String>> {
        match self.config.meta.use_all_sources {
            Some(true) => None,
            _ => Some(self.config.data_source_uuids.clone()),
        }
    }
}

impl AgentConfig {
    /// A new agent of `agent_type` with every setting at its default.
    pub fn defaults(agent_type: AgentType, name: String) -> Self {
        let meta = match agent_type {
            AgentType::UserFacing => AgentMeta {
                model: Some(models::DEFAULT_MODEL.to_string()),
                temperature: Some(0.2),
                use_all_sources: Some(true),
                bias: Some(0.0),
                ..AgentMeta::default()
            },
            AgentType::Background => AgentMeta {
                model: Some(models::DEFAULT_MODEL.to_string()),
                temperature: Some(0.0),
                tags: Some(Vec::new()),
                ..AgentMeta::default()
            },
            AgentType::HumanEscalation => AgentMeta {
                bias: Some(0.0),
                ..AgentMeta::default()
            },
        };
        AgentConfig {
            agent_type,
            name,
            prompt: String::new(),
            description: String::new(),
            enabled: false,
            meta,
            data_source_uuids: Vec::new(),
            human_escalation_settings: (agent_type == AgentType::HumanEscalation)
                .then(HumanEscalationSettings::default),
            variables: Vec::new(),
        }
    }

    /// The agent every new chatbot starts with.
    pub fn general_qa() -> Self {
        AgentConfig {
            prompt: "You are a helpful assistant. Answer the user's question using only the provided sources. If the sources do not contain the answer, say so plainly.".to_string(),
            description: "Answers general questions from the chatbot's data sources.".to_string(),
            enabled: true,
            ..AgentConfig::defaults(AgentType::UserFacing, "General Q&A".to_string())
        }
    }
}

/// Validates a create body (`name` and `type` required). A new agent is disabled unless the
/// body says `enabled: true`.
pub fn config_for_create(body: &Map<String, Value>) -> ApiResult<AgentConfig> {
    let b = Body(body);
    let agent_type = b
        .opt_variant::<AgentType>("type")?
        .ok_or_else(|| ApiError::invalid("type", "`type` is required."))?;
    let name = b.req_str("name", MAX_NAME_CHARS)?.trim().to_string();
    let mut config = AgentConfig::defaults(agent_type, name);
    // Naming sources without saying otherwise means "draw on these", not on all of them.
    if agent_type == AgentType::UserFacing
        && b.has("data_source_uuids")
        && !b.has("use_all_sources")
    {
        config.meta.use_all_sources = Some(false);
    }
    apply_update(body, config)
}

/// Applies an update body over `current`; only the fields sent change.
pub fn apply_update(body: &Map<String, Value>, current: AgentConfig) -> ApiResult<AgentConfig> {
    let b = Body(body);
    let agent_type = current.agent_type;
    if body
        .get("type")
        .is_some_and(|t| t.as_str() != Some(agent_type.as_str()))
    {
        return Err(ApiError::invalid(
            "type",
            format!(
                "An agent's `type` cannot change (this one is {}); create an agent of the other type instead.",
                agent_type.as_str()
            ),
        ));
    }
    for field in TYPE_SPECIFIC_FIELDS {
        if b.has(field) && !agent_type.takes(field) {
            return Err(ApiError::invalid(
                field,
                format!(
                    "`{field}` does not apply to {} agents.",
                    agent_type.as_str()
                ),
            ));
        }
    }
    let mut c = current;
    if let Some(name) = b.opt_nonblank_str("name", MAX_NAME_CHARS)? {
        c.name = name;
    }
    if let Some(prompt) = b.opt_str("prompt", MAX_PROMPT_CHARS)? {
        c.prompt = prompt;
    }
    if let Some(description) = b.opt_str("description", MAX_DESCRIPTION_CHARS)? {
        c.description = description;
    }
    if let Some(enabled) = b.opt_bool("enabled")? {
        c.enabled = enabled;
    }
    if let Some(uuids) = b.opt_string_array("data_source_uuids", MAX_LIST_ITEMS)? {
        c.data_source_uuids = canonical_uuid_list("data_source_uuids", &uuids)?;
    }
    if let Some(model) = b.opt_str("model", 100)? {
        if models::find(&model).is_none() {
            return Err(ApiError::invalid(
                "model",
                format!("`model` must be one of: {}.", models::names().join(", ")),
            ));
        }
        c.meta.model = Some(model);
    }
    if let Some(t) = b.opt_f64("temperature", TEMPERATURE_RANGE.0, TEMPERATURE_RANGE.1)? {
        c.meta.temperature = Some(t);
    }
    if let Some(all) = b.opt_bool("use_all_sources")? {
        c.meta.use_all_sources = Some(all);
    }
    if let Some(bias) = b.opt_f64("bias", BIAS_RANGE.0, BIAS_RANGE.1)? {
        c.meta.bias = Some(bias);
    }
    if let Some(items) = b.opt_array("tags", MAX_TAGS)? {
        let tags: Vec<Tag> = items.iter().map(parse_tag).collect::<ApiResult<_>>()?;
        // Two tags of one name (compared without case, as source tags are) would read as one
        // in a session's tags and in the reports on them.
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = tags.iter().find(|t| !names.insert(t.name.to_lowercase())) {
            return Err(ApiError::invalid(
                "tags",
                format!("The tag `{}` is defined twice.", twice.name),
            ));
        }
        c.meta.tags = Some(tags);
    }
    if let Some(items) = b.opt_array("variables", MAX_VARIABLES)? {
        c.variables = parse_variables(items)?;
    }
    if let Some(settings) = b.opt_object("human_escalation_settings")? {
        let base = c.human_escalation_settings.take().unwrap_or_default();
        c.human_escalation_settings = Some(merge_escalation_settings(settings, base)?);
    }
    Ok(c)
}

fn parse_tag(value: &Value) -> ApiResult<Tag> {
    let obj = value.as_object().ok_or_else(|| {
        ApiError::invalid(
            "tags",
            "Each tag must be an object {name, color, criteria}.",
        )
    })?;
    let text = |key: &str, max: usize| -> ApiResult<String> {
        match obj.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                check_len("tags", s, max)?;
                Ok(s.trim().to_string())
            }
            _ => Err(ApiError::invalid(
                "tags",
                format!("Each tag needs a non-empty string `{key}`."),
            )),
        }
    };
    let color = match obj.get("color") {
        None => "#808080".to_string(),
        Some(Value::String(s)) if is_hex_color(s) => s.to_ascii_lowercase(),
        Some(_) => {
            return Err(ApiError::invalid(
                "tags",
                "A tag's `color` must be a hex colour such as #1a7f37.",
            ))
        }
    };
    Ok(Tag {
        name: text("name", MAX_NAME_CHARS)?,
        color,
        criteria: text("criteria", MAX_DESCRIPTION_CHARS)?,
    })
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// 0/1 as an integer, or a boolean.
fn flag(value: &Value) -> Option<u8> {
    match value {
        Value::Bool(b) => Some(u8::from(*b)),
        Value::Number(n) => match n.as_u64() {
            Some(v @ (0 | 1)) => Some(v as u8),
            _ => None,
        },
        _ => None,
    }
}

fn parse_variables(items: &[Value]) -> ApiResult<Vec<AgentVariable>> {
    const FIELD: &str = "variables";
    let mut out: Vec<AgentVariable> = Vec::with_capacity(items.len());
    for item in items {
        let obj = item
            .as_object()
            .ok_or_else(|| ApiError::invalid(FIELD, "Each variable must be an object."))?;
        let text = |key: &str, max: usize| -> ApiResult<String> {
            match obj.get(key) {
                None => Ok(String::new()),
                Some(Value::String(s)) => {
                    check_len(FIELD, s, max)?;
                    Ok(s.clone())
                }
                Some(_) => Err(ApiError::invalid(
                    FIELD,
                    format!("A variable's `{key}` must be a string."),
                )),
            }
        };
        let name = text("name", 64)?;
        if !is_identifier(&name) {
            return Err(ApiError::invalid(
                FIELD,
                "A variable's `name` must start with a letter or underscore and hold only letters, digits and underscores.",
            ));
        }
        if out.iter().any(|v| v.name == name) {
            return Err(ApiError::invalid(
                FIELD,
                format!("The variable `{name}` is defined twice."),
            ));
        }
        let var_type = match obj.get("type") {
            None => Some(VariableType::String),
            Some(Value::String(t)) => VariableType::parse(t),
            Some(_) => None,
        }
        .ok_or_else(|| {
            ApiError::invalid(
                FIELD,
                format!(
                    "A variable's `type` must be one of: {}.",
                    VariableType::NAMES.join(", ")
                ),
            )
        })?;
        let default_value = match obj.get("default_value") {
            None | Some(Value::Null) => DefaultValue {
                content: String::new(),
                is_static: 0,
            },
            Some(Value::Object(d)) => {
                let content = match d.get("content") {
                    None => String::new(),
                    Some(Value::String(s)) => {
                        check_len(FIELD, s, MAX_DESCRIPTION_CHARS)?;
                        s.clone()
                    }
                    Some(_) => {
                        return Err(ApiError::invalid(
                            FIELD,
                            "`default_value.content` must be a string.",
                        ))
                    }
                };
                let is_static = match d.get("static") {
                    None => 0,
                    Some(v) => flag(v).ok_or_else(|| {
                        ApiError::invalid(FIELD, "`default_value.static` must be 0 or 1.")
                    })?,
                };
                let reads_as_type = content.is_empty()
                    || match var_type {
                        VariableType::String => true,
                        // Read as JSON reads a number, with the parser the Worker has
                        // already (`str::parse::<f64>` would bring one more).
                        VariableType::Number => {
                            serde_json::from_str::<f64>(content.trim()).is_ok_and(f64::is_finite)
                        }
                        VariableType::Boolean => matches!(content.trim(), "true" | "false"),
                    };
                if !reads_as_type {
                    return Err(ApiError::invalid(
                        FIELD,
                        format!(
                            "The variable `{name}` is a {}: its `default_value.content` must be one (\"true\" or \"false\" for a boolean).",
                            var_type.as_str()
                        ),
                    ));
                }
                DefaultValue { content, is_static }
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    FIELD,
                    "A variable's `default_value` must be an object {content, static}.",
                ))
            }
        };
        out.push(AgentVariable {
            name,
            description: text("description", MAX_DESCRIPTION_CHARS)?,
            example: text("example", MAX_DESCRIPTION_CHARS)?,
            var_type,
            default_value,
        });
    }
    Ok(out)
}

fn merge_escalation_settings(
    obj: &Map<String, Value>,
    mut s: HumanEscalationSettings,
) -> ApiResult<HumanEscalationSettings> {
    const FIELD: &str = "human_escalation_settings";
    let body = Body(obj);
    let text = |key: &str| -> ApiResult<Option<String>> {
        body.opt_str(key, MAX_MESSAGE_CHARS).map_err(|_| {
            ApiError::invalid(
                FIELD,
                format!(
                    "`{FIELD}.{key}` must be a string of at most {MAX_MESSAGE_CHARS} characters."
                ),
            )
        })
    };
    if let Some(v) = text("human_requested_message")? {
        s.human_requested_message = v;
    }
    if let Some(v) = text("live_chat_start_announcement")? {
        s.live_chat_start_announcement = v;
    }
    if let Some(v) = text("live_chat_end_announcement")? {
        s.live_chat_end_announcement = v;
    }
    if let Some(v) = obj.get("monitored_messages") {
        let list = v
            .as_array()
            .filter(|items| items.len() <= 100)
            .and_then(|items| {
                items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .filter(|t| t.chars().count() <= MAX_MESSAGE_CHARS)
                            .map(str::to_string)
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                ApiError::invalid(
                    FIELD,
                    format!(
                        "`{FIELD}.monitored_messages` must be an array of at most 100 strings."
                    ),
                )
            })?;
        s.monitored_messages = list;
    }
    for (key, slot) in [
        ("notifications_enabled", &mut s.notifications_enabled),
        ("sound_enabled", &mut s.sound_enabled),
    ] {
        if let Some(v) = obj.get(key) {
            *slot = flag(v).ok_or_else(|| {
                ApiError::invalid(FIELD, format!("`{FIELD}.{key}` must be 0 or 1."))
            })?;
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn create_err_field(v: Value) -> Option<String> {
        config_for_create(&obj(v))
            .unwrap_err()
            .field()
            .map(str::to_string)
    }

    #[test]
    fn general_qa_is_an_enabled_user_facing_agent_using_all_sources() {
        let c = AgentConfig::general_qa();
        assert_eq!(c.agent_type, AgentType::UserFacing);
        assert_eq!(c.name, "General Q&A");
        assert!(c.enabled);
        assert_eq!(c.meta.use_all_sources, Some(true));
    }

    #[test]
    fn create_requires_name_and_known_type() {
        assert_eq!(
            create_err_field(json!({"name": "x"})).as_deref(),
            Some("type")
        );
        assert_eq!(
            create_err_field(json!({"name": "x", "type": "robot"})).as_deref(),
            Some("type")
        );
        assert_eq!(
            create_err_field(json!({"type": "background"})).as_deref(),
            Some("name")
        );
        let c = config_for_create(&obj(json!({"name": "x", "type": "background"}))).unwrap();
        assert!(!c.enabled, "new agents start disabled");
        let c = config_for_create(&obj(
            json!({"name": "x", "type": "background", "enabled": true}),
        ))
        .unwrap();
        assert!(c.enabled);
    }

    #[test]
    fn fields_of_other_types_are_refused_by_name() {
        let cases = [
            ("human-escalation", "model", json!("gpt-4o-mini-16k")),
            ("human-escalation", "temperature", json!(0.5)),
            ("background", "use_all_sources", json!(true)),
            ("background", "variables", json!([])),
            ("user-facing", "tags", json!([])),
            ("background", "bias", json!(0.1)),
            ("user-facing", "human_escalation_settings", json!({})),
        ];
        for (agent_type, field, value) in cases {
            let mut body = json!({"name": "x", "type": agent_type});
            body[field] = value;
            assert_eq!(
                create_err_field(body).as_deref(),
                Some(field),
                "{agent_type} {field}"
            );
        }
    }

    #[test]
    fn values_are_validated() {
        let base = |extra: Value| {
            let mut body = json!({"name": "x", "type": "user-facing"});
            if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
                b.extend(e.clone());
            }
            body
        };
        assert_eq!(
            create_err_field(base(json!({"model": "gpt-9"}))).as_deref(),
            Some("model")
        );
        assert_eq!(
            create_err_field(base(json!({"temperature": 3}))).as_deref(),
            Some("temperature")
        );
        assert_eq!(
            create_err_field(base(json!({"temperature": "hot"}))).as_deref(),
            Some("temperature")
        );
        assert_eq!(
            create_err_field(base(json!({"enabled": 1}))).as_deref(),
            Some("enabled")
        );
        assert_eq!(
            create_err_field(base(json!({"data_source_uuids": ["nope"]}))).as_deref(),
            Some("data_source_uuids")
        );
        assert_eq!(
            create_err_field(base(json!({"data_source_uuids": "nope"}))).as_deref(),
            Some("data_source_uuids")
        );
        assert_eq!(
            create_err_field(base(json!({"variables": [{"name": "1bad"}]}))).as_deref(),
            Some("variables")
        );
        assert_eq!(
            create_err_field(base(json!({"variables": [{"name": "a"}, {"name": "a"}]}))).as_deref(),
            Some("variables")
        );
        assert_eq!(
            create_err_field(base(
                json!({"variables": [{"name": "a", "default_value": {"static": 2}}]})
            ))
            .as_deref(),
            Some("variables")
        );
        assert_eq!(
            create_err_field(base(json!({"bias": -1.5}))).as_deref(),
            Some("bias")
        );
        let bg = |tags: Value| json!({"name": "x", "type": "background", "tags": tags});
        assert_eq!(
            create_err_field(bg(json!([{"name": "a", "criteria": "c", "color": "red"}])))
                .as_deref(),
            Some("tags")
        );
        assert_eq!(
            create_err_field(bg(json!([{"name": "a"}]))).as_deref(),
            Some("tags")
        );
        assert_eq!(create_err_field(bg(json!([1]))).as_deref(), Some("tags"));
        assert_eq!(
            create_err_field(bg(json!([
                {"name": "Lead", "criteria": "asks about prices"},
                {"name": "lead", "criteria": "asks for a demo"}
            ])))
            .as_deref(),
            Some("tags")
        );
        let he = |s: Value| json!({"name": "x", "type": "human-escalation", "human_escalation_settings": s});
        assert_eq!(
            create_err_field(he(json!({"sound_enabled": 5}))).as_deref(),
            Some("human_escalation_settings")
        );
        assert_eq!(
            create_err_field(he(json!({"monitored_messages": [1]}))).as_deref(),
            Some("human_escalation_settings")
        );
        assert_eq!(
            create_err_field(he(json!("yes"))).as_deref(),
            Some("human_escalation_settings")
        );
    }

    #[test]
    fn naming_sources_turns_off_use_all_sources_unless_said() {
        let u = "6f9619ff-8b86-4011-b42d-00c04fc964ff";
        let c = config_for_create(&obj(
            json!({"name": "x", "type": "user-facing", "data_source_uuids": [u, u.to_uppercase()]}),
        ))
        .unwrap();
        assert_eq!(c.meta.use_all_sources, Some(false));
        assert_eq!(c.data_source_uuids, vec![u.to_string()]);
        let c = config_for_create(&obj(json!({"name": "x", "type": "user-facing", "data_source_uuids": [u], "use_all_sources": true}))).unwrap();
        assert_eq!(c.meta.use_all_sources, Some(true));
    }

    #[test]
    fn update_merges_and_keeps_what_was_not_sent() {
        let c = config_for_create(&obj(json!({
            "name": "Escalate", "type": "human-escalation", "bias": -0.3,
            "human_escalation_settings": {"human_requested_message": "Hold on", "sound_enabled": true}
        })))
        .unwrap();
        let s = c.human_escalation_settings.clone().unwrap();
        assert_eq!(s.human_requested_message, "Hold on");
        assert_eq!(s.sound_enabled, 1);
        assert_eq!(
            s.live_chat_start_announcement,
            HumanEscalationSettings::default().live_chat_start_announcement
        );
        let updated = apply_update(
            &obj(json!({"human_escalation_settings": {"sound_enabled": 0}})),
            c,
        )
        .unwrap();
        let s = updated.human_escalation_settings.clone().unwrap();
        assert_eq!(
            (s.human_requested_message.as_str(), s.sound_enabled),
            ("Hold on", 0)
        );
        assert_eq!(updated.meta.bias, Some(-0.3));
        let same = apply_update(
            &obj(json!({"type": "human-escalation", "bias": 0.2})),
            updated,
        )
        .expect("its own type may be sent again");
        let other = apply_update(&obj(json!({"type": "background"})), same);
        assert_eq!(other.unwrap_err().field(), Some("type"));
    }

    #[test]
    fn variables_and_tags_are_normalised() {
        let c = config_for_create(&obj(json!({
            "name": "x", "type": "user-facing",
            "variables": [{"name": "company", "description": "d", "example": "Acme, Initech",
                           "default_value": {"content": "Acme", "static": true}}]
        })))
        .unwrap();
        let v = &c.variables[0];
        assert_eq!(
            (v.var_type.as_str(), v.default_value.is_static),
            ("string", 1)
        );
        let c = config_for_create(&obj(json!({
            "name": "x", "type": "background", "tags": [{"name": " Sales ", "criteria": "asks about price", "color": "#1A7F37"}]
        })))
        .unwrap();
        let tags = c.meta.tags.unwrap();
        assert_eq!(tags[0].name, "Sales");
        assert_eq!(tags[0].color, "#1a7f37");
    }

    #[test]
    fn a_variable_default_reads_as_its_type() {
        let with = |var_type: &str, content: &str| {
            config_for_create(&obj(json!({
                "name": "x", "type": "user-facing",
                "variables": [{"name": "v", "type": var_type,
                               "default_value": {"content": content, "static": 0}}]
            })))
            .map(|_| ())
        };
        for (t, ok) in [
            ("number", "12.5"),
            ("number", ""),
            ("boolean", "true"),
            ("string", "abc"),
        ] {
            assert_eq!(with(t, ok), Ok(()), "{t} {ok}");
        }
        for (t, bad) in [("number", "abc"), ("number", "inf"), ("boolean", "yes")] {
            let err = with(t, bad).expect_err(bad);
            assert_eq!(err.field(), Some("variables"), "{t} {bad}");
        }
    }

    #[test]
    fn record_shape_per_type() {
        let agent = |config: AgentConfig| Agent {
            uuid: "a".into(),
            chatbot_uuid: "c".into(),
            created_at: "t".into(),
            modified_at: "t".into(),
            config,
        };
        let uf = agent(AgentConfig::general_qa()).to_json(EnabledAs::Integer, vec![]);
        assert_eq!(uf["enabled"], 1);
        assert_eq!(uf["meta"]["model"], models::DEFAULT_MODEL);
        assert_eq!(uf["variables"], json!([]));
        assert_eq!(uf["tool_functions"], json!([]));
        assert!(uf.get("human_escalation_settings").is_none());
        let he = agent(AgentConfig::defaults(
            AgentType::HumanEscalation,
            "h".into(),
        ))
        .to_json(EnabledAs::Boolean, vec![]);
        assert_eq!(he["enabled"], false);
        assert!(he["human_escalation_settings"]["human_requested_message"].is_string());
        assert!(he["meta"].get("model").is_none());
        assert!(he.get("variables").is_none());
        let bg = agent(AgentConfig::defaults(AgentType::Background, "b".into()))
            .to_json(EnabledAs::Integer, vec![]);
        assert_eq!(bg["meta"]["tags"], json!([]));
        assert!(bg["meta"].get("use_all_sources").is_none());
    }
}
