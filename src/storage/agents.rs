use super::table::{table, Sql};
use super::tool_functions::{by_agent, ToolRow, TOOL_FUNCTIONS};
use super::{batch_rows, changes, flag, Arg, Owner, Store, ToolsByAgent};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::agent::{
    Agent, AgentConfig, AgentMeta, AgentType, HumanEscalationSettings,
};
use serde::Deserialize;
use worker::{D1PreparedStatement, D1Result};

table! {
    pub(super) struct AgentRow in AGENTS = "agents" {
        key uuid: String,
        fixed chatbot_uuid: String,
        fixed agent_type as "type": AgentType,
        set name: String,
        set prompt: String,
        set description: String,
        set enabled: i64,
        set meta_json: String,
        set data_source_uuids_json: String,
        set human_escalation_settings_json: Option<String>,
        set variables_json: String,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl AgentRow {
    fn new(agent: &Agent) -> ApiResult<Self> {
        let c = &agent.config;
        Ok(AgentRow {
            uuid: agent.uuid.clone(),
            chatbot_uuid: agent.chatbot_uuid.clone(),
            agent_type: c.agent_type,
            name: c.name.clone(),
            prompt: c.prompt.clone(),
            description: c.description.clone(),
            enabled: flag(c.enabled),
            meta_json: serde_json::to_string(&c.meta)?,
            data_source_uuids_json: serde_json::to_string(&c.data_source_uuids)?,
            human_escalation_settings_json: c
                .human_escalation_settings
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            variables_json: serde_json::to_string(&c.variables)?,
            created_at: agent.created_at.clone(),
            modified_at: agent.modified_at.clone(),
        })
    }
}

impl TryFrom<AgentRow> for Agent {
    type Error = ApiError;

    fn try_from(r: AgentRow) -> ApiResult<Agent> {
        let meta: AgentMeta = serde_json::from_str(&r.meta_json)?;
        let human_escalation_settings: Option<HumanEscalationSettings> =
            match r.human_escalation_settings_json {
                Some(text) => Some(serde_json::from_str(&text)?),
                None => None,
            };
        Ok(Agent {
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            created_at: r.created_at,
            modified_at: r.modified_at,
            config: AgentConfig {
                agent_type: r.agent_type,
                name: r.name,
                prompt: r.prompt,
                description: r.description,
                enabled: r.enabled != 0,
                meta,
                data_source_uuids: serde_json::from_str(&r.data_source_uuids_json)?,
                human_escalation_settings,
                variables: serde_json::from_str(&r.variables_json)?,
            },
        })
    }
}

fn one_escalation_agent_conflict() -> ApiError {
    ApiError::Conflict(
        "This chatbot already has a human-escalation agent; a chatbot has at most one.".into(),
    )
}

/// What the statements of `Store::agents_and_tools_statements` read, the first of them at
/// `index` of the batch.
pub(super) fn agents_and_tools(
    results: &[D1Result],
    index: usize,
) -> ApiResult<(Vec<Agent>, ToolsByAgent)> {
    let agents = batch_rows::<AgentRow>(results, index)?
        .into_iter()
        .map(Agent::try_from)
        .collect::<ApiResult<Vec<_>>>()?;
    let tools = by_agent(batch_rows::<ToolRow>(results, index + 1)?)?;
    Ok((agents, tools))
}

impl Store {
    pub(super) fn insert_agent_statement(&self, agent: &Agent) -> ApiResult<D1PreparedStatement> {
        let row = AgentRow::new(agent)?;
        // Nothing is inserted for a chatbot that is not there (the batch creating it may have
        // inserted nothing), rather than failing on the foreign key.
        let mut insert = Sql::insert_select(&row, &[]);
        let chatbot = insert.param("chatbot_uuid");
        insert.push(&format!(
            " WHERE EXISTS (SELECT 1 FROM chatbots WHERE uuid = {chatbot})"
        ));
        self.prepare(&insert)
    }

    pub async fn insert_agent(&self, agent: &Agent) -> ApiResult<()> {
        let statement = self.insert_agent_statement(agent)?;
        let results = self
            .batch(vec![statement], one_escalation_agent_conflict)
            .await?;
        match results.first().map(changes) {
            Some(1) => Ok(()),
            // The chatbot was deleted after it was checked.
            _ => Err(ApiError::not_found("chatbot")),
        }
    }

    /// Agents of a chatbot the caller has already been shown to own.
    pub async fn list_agents(&self, chatbot_uuid: &str) -> ApiResult<Vec<Agent>> {
        let rows: Vec<AgentRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM agents a WHERE a.chatbot_uuid = ?1 ORDER BY a.created_at, a.rowid",
                    AGENTS.select("a")
                ),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        rows.into_iter().map(Agent::try_from).collect()
    }

    /// The agents, oldest first, and then the tool functions of the chatbot that the SQL
    /// expression `chatbot` names (with `args` bound), for a batch.
    pub(super) fn agents_and_tools_statements(
        &self,
        chatbot: &str,
        args: &[Arg],
    ) -> ApiResult<[D1PreparedStatement; 2]> {
        Ok([
            self.statement(
                &format!(
                    "SELECT {} FROM agents a WHERE a.chatbot_uuid = {chatbot} \
                     ORDER BY a.created_at, a.rowid",
                    AGENTS.select("a")
                ),
                args,
            )?,
            self.statement(
                &format!(
                    "SELECT {} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid \
                     WHERE a.chatbot_uuid = {chatbot} ORDER BY t.created_at, t.rowid",
                    TOOL_FUNCTIONS.select("t")
                ),
                args,
            )?,
        ])
    }

    /// The agents of a chatbot the owner holds, oldest first, with their tool functions by
    /// agent, in one round trip; `None` when the chatbot is not the owner's.
    pub async fn agents_of_owned_chatbot(
        &self,
        owner: Owner<'_>,
        chatbot_uuid: &str,
    ) -> ApiResult<Option<(Vec<Agent>, ToolsByAgent)>> {
        let owned = format!(
            "(SELECT uuid FROM chatbots WHERE uuid = ?1 AND {})",
            owner.test("account_uuid", 2)
        );
        let args = [Arg::Text(chatbot_uuid), owner.arg()];
        let mut statements = vec![self.statement(&format!("SELECT {owned} AS uuid"), &args)?];
        statements.extend(self.agents_and_tools_statements(&owned, &args)?);
        let results = self.read_batch(statements).await?;
        #[derive(Deserialize)]
        struct Found {
            uuid: Option<String>,
        }
        let found = batch_rows::<Found>(&results, 0)?;
        if !found.iter().any(|f| f.uuid.is_some()) {
            return Ok(None);
        }
        Ok(Some(agents_and_tools(&results, 1)?))
    }

    /// An agent, if its chatbot belongs to `account_uuid`.
    pub async fn get_agent(&self, account_uuid: &str, uuid: &str) -> ApiResult<Option<Agent>> {
        self.get_owned_agent(Owner::Account(account_uuid), uuid)
            .await
    }

    pub async fn get_owned_agent(&self, owner: Owner<'_>, uuid: &str) -> ApiResult<Option<Agent>> {
        let row: Option<AgentRow> = self
            .row(
                &format!(
                    "SELECT {} FROM agents a JOIN chatbots c ON c.uuid = a.chatbot_uuid \
                     WHERE a.uuid = ?1 AND {}",
                    AGENTS.select("a"),
                    owner.test("c.account_uuid", 2)
                ),
                &[Arg::Text(uuid), owner.arg()],
            )
            .await?;
        row.map(Agent::try_from).transpose()
    }

    /// Writes what `after` changed of `before` (`Sql::update_changed`).
    pub async fn update_agent(&self, before: &Agent, after: &Agent) -> ApiResult<()> {
        let was = AgentRow::new(before)?;
        let row = AgentRow::new(after)?;
        let patches = Sql::json_patches(&was, &row);
        let update = Sql::update_changed(&was, &row, &patches);
        self.execute(update.text(), update.args()).await.map(|_| ())
    }

    /// Deletes an agent unless it is the chatbot's last user-facing one, which answers users.
    /// The check and the delete are one statement, so two concurrent deletes cannot both pass it.
    pub async fn delete_agent(&self, agent: &Agent) -> ApiResult<bool> {
        let changed = self
            .execute(
                "DELETE FROM agents WHERE uuid = ?1 AND (type != ?3 OR \
                 (SELECT COUNT(*) FROM agents WHERE chatbot_uuid = ?2 AND type = ?3) > 1)",
                &[
                    Arg::Text(&agent.uuid),
                    Arg::Text(&agent.chatbot_uuid),
                    Arg::Text(AgentType::UserFacing.as_str()),
                ],
            )
            .await?;
        Ok(changed > 0)
    }
}
