use super::{flag, json_object as object, Arg, Store};
use edgechat_core::domain::tool_function::ToolFunction;
use edgechat_core::api::error::{ApiError, ApiResult};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

#[derive(Deserialize)]
pub(super) struct ToolRow {
    uuid: String,
    agent_uuid: String,
    name: String,
    description: String,
    enabled: i64,
    external_url: String,
    method: String,
    headers_json: String,
    meta_json: String,
    parameters_json: String,
    created_at: String,
    modified_at: String,
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

pub(super) const TOOL_COLUMNS: &str =
    "t.uuid, t.agent_uuid, t.name, t.description, t.enabled, t.external_url, t.method, \
     t.headers_json, t.meta_json, t.parameters_json, t.created_at, t.modified_at";

fn name_taken() -> ApiError {
    ApiError::Conflict("This agent already has a tool function with that name.".into())
}

impl Store {
    /// Stores a new tool function or replaces an existing one (same uuid); a name the agent
    /// already uses for another function is a conflict.
    pub async fn save_tool_function(&self, f: &ToolFunction) -> ApiResult<()> {
        let statement = self.statement(
            "INSERT INTO tool_functions (uuid, agent_uuid, name, description, enabled, external_url, method, \
             headers_json, meta_json, parameters_json, created_at, modified_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
             ON CONFLICT (uuid) DO UPDATE SET name = excluded.name, description = excluded.description, \
             enabled = excluded.enabled, external_url = excluded.external_url, method = excluded.method, \
             headers_json = excluded.headers_json, meta_json = excluded.meta_json, \
             parameters_json = excluded.parameters_json, modified_at = excluded.modified_at",
            &[
                Arg::Text(&f.uuid),
                Arg::Text(&f.agent_uuid),
                Arg::Text(&f.name),
                Arg::Text(&f.description),
                Arg::Int(flag(f.enabled)),
                Arg::Text(&f.external_url),
                Arg::Text(&f.method),
                Arg::Text(&Value::Object(f.headers.clone()).to_string()),
                Arg::Text(&Value::Object(f.meta.clone()).to_string()),
                Arg::Text(&f.parameters.to_string()),
                Arg::Text(&f.created_at),
                Arg::Text(&f.modified_at),
            ],
        )?;
        self.batch(vec![statement], name_taken).await.map(|_| ())
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
                    "SELECT {TOOL_COLUMNS} FROM tool_functions t JOIN agents a ON a.uuid = t.agent_uuid \
                     JOIN chatbots c ON c.uuid = a.chatbot_uuid WHERE t.uuid = ?1 AND c.account_uuid = ?2"
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(ToolFunction::try_from).transpose()
    }

    pub async fn list_tool_functions(&self, agent_uuid: &str) -> ApiResult<Vec<ToolFunction>> {
        let rows: Vec<ToolRow> = self
            .rows(
                &format!("SELECT {TOOL_COLUMNS} FROM tool_functions t WHERE t.agent_uuid = ?1 ORDER BY t.created_at, t.rowid"),
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
