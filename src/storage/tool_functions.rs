use super::table::{table, Sql};
use super::{flag, json_object as object, object_text, Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::tool_function::{HttpMethod, ToolFunction};
use std::collections::HashMap;

table! {
    pub(super) struct ToolRow in TOOL_FUNCTIONS = "tool_functions" {
        key uuid: String,
        fixed agent_uuid: String,
        set name: String,
        set description: String,
        set enabled: i64,
        set external_url: String,
        set method: HttpMethod,
        set headers_json: String,
        set meta_json: String,
        set parameters_json: String,
        fixed created_at: String,
        set modified_at: String,
    }
}

impl From<&ToolFunction> for ToolRow {
    fn from(f: &ToolFunction) -> Self {
        ToolRow {
            uuid: f.uuid.clone(),
            agent_uuid: f.agent_uuid.clone(),
            name: f.name.clone(),
            description: f.description.clone(),
            enabled: flag(f.enabled),
            external_url: f.external_url.clone(),
            method: f.method,
            headers_json: object_text(&f.headers),
            meta_json: object_text(&f.meta),
            parameters_json: f.parameters.to_string(),
            created_at: f.created_at.clone(),
            modified_at: f.modified_at.clone(),
        }
    }
}

impl TryFrom<ToolRow> for ToolFunction {
    type Error = ApiError;

    fn try_from(r: ToolRow) -> ApiResult<ToolFunction> {
        Ok(ToolFunction {
            headers: object(&r.headers_json)?,
            meta: object(&r.meta_json)?,
            parameters: serde_json::from_str(&r.parameters_json)?,
            uuid: r.uuid,
            agent_uuid: r.agent_uuid,
            name: r.name,
            description: r.description,
            enabled: r.enabled != 0,
            external_url: r.external_url,
            method: r.method,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

fn name_taken() -> ApiError {
    ApiError::Conflict("This agent already has a tool function with that name.".into())
}

impl Store {
    /// Stores a new tool function; a name the agent already uses for another function is a
    /// conflict.
    pub async fn save_tool_function(&self, f: &ToolFunction) -> ApiResult<()> {
        let row = ToolRow::from(f);
        let statement = self.prepare(&Sql::upsert(&row))?;
        self.batch(vec![statement], name_taken).await.map(|_| ())
    }

    /// Writes what `after` changed of `before` (`Sql::update_changed`), so updates of other
    /// fields at the same moment stand; false when the function is gone.
    pub async fn update_tool_function(
        &self,
        before: &ToolFunction,
        after: &ToolFunction,
    ) -> ApiResult<bool> {
        let (was, row) = (ToolRow::from(before), ToolRow::from(after));
        let patches = Sql::json_patches(&was, &row);
        let update = Sql::update_changed(&was, &row, &patches);
        let results = self.batch(vec![self.prepare(&update)?], name_taken).await?;
        Ok(results.first().is_some_and(|r| super::changes(r) > 0))
    }

    /// A tool function, if its agent's chatbot belongs to `account_uuid`.
    pub async fn get_tool_function(
        &self,
        account_uuid: &str,
        uuid: &str,
    ) -> ApiResult<Option<ToolFunction>> {
        let row: Option<ToolRow> = self
            .row(
                &format!(
                    "SELECT {} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid \
                     JOIN chatbots c ON c.uuid = a.chatbot_uuid WHERE t.uuid = ?1 AND c.account_uuid = ?2",
                    TOOL_FUNCTIONS.select("t")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(ToolFunction::try_from).transpose()
    }

    pub async fn list_tool_functions(&self, agent_uuid: &str) -> ApiResult<Vec<ToolFunction>> {
        let rows: Vec<ToolRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM tool_functions t WHERE t.agent_uuid = ?1 ORDER BY t.created_at, t.rowid",
                    TOOL_FUNCTIONS.select("t")
                ),
                &[Arg::Text(agent_uuid)],
            )
            .await?;
        rows.into_iter().map(ToolFunction::try_from).collect()
    }

    pub async fn delete_tool_function(&self, uuid: &str) -> ApiResult<bool> {
        Ok(self
            .execute(
                "DELETE FROM tool_functions WHERE uuid = ?1",
                &[Arg::Text(uuid)],
            )
            .await?
            > 0)
    }
}

/// Tool functions keyed by the uuid of their agent.
pub type ToolsByAgent = HashMap<String, Vec<ToolFunction>>;

/// Tool function rows grouped by their agent, each group in the rows' order.
pub(super) fn by_agent(rows: Vec<ToolRow>) -> ApiResult<ToolsByAgent> {
    let mut out = ToolsByAgent::new();
    for row in rows {
        let function = ToolFunction::try_from(row)?;
        out.entry(function.agent_uuid.clone())
            .or_default()
            .push(function);
    }
    Ok(out)
}
