use super::{Arg, Store};
use edgechat_core::domain::data_source::SourceTag;
use edgechat_core::api::error::{ApiError, ApiResult};
use serde::Deserialize;
use worker::D1PreparedStatement;

#[derive(Deserialize)]
struct TagRow {
    uuid: String,
    chatbot_uuid: String,
    name: String,
    color: String,
    created_at: String,
    modified_at: String,
    /// JSON array of the tagged sources' uuids.
    source_uuids: String,
}

impl TryFrom<TagRow> for SourceTag {
    type Error = ApiError;

    fn try_from(r: TagRow) -> ApiResult<SourceTag> {
        Ok(SourceTag {
            data_source_uuids: serde_json::from_str(&r.source_uuids)?,
            uuid: r.uuid,
            chatbot_uuid: r.chatbot_uuid,
            name: r.name,
            color: r.color,
            created_at: r.created_at,
            modified_at: r.modified_at,
        })
    }
}

const TAG_SELECT: &str = "SELECT t.uuid, t.chatbot_uuid, t.name, t.color, t.created_at, t.modified_at, \
     (SELECT json_group_array(l.data_source_uuid) FROM data_source_tags l WHERE l.source_tag_uuid = t.uuid) AS source_uuids \
     FROM source_tags t";

impl Store {
    fn link_statements(&self, tag: &SourceTag) -> ApiResult<Vec<D1PreparedStatement>> {
        let list = serde_json::to_string(&tag.data_source_uuids)?;
        Ok(vec![
            self.statement(
                "DELETE FROM data_source_tags WHERE source_tag_uuid = ?1",
                &[Arg::Text(&tag.uuid)],
            )?,
            self.statement(
                "INSERT INTO data_source_tags (source_tag_uuid, data_source_uuid) \
                 SELECT ?1, value FROM json_each(?2)",
                &[Arg::Text(&tag.uuid), Arg::Text(&list)],
            )?,
        ])
    }

    pub async fn insert_source_tag(&self, tag: &SourceTag) -> ApiResult<()> {
        let mut statements = vec![self.statement(
            "INSERT INTO source_tags (uuid, chatbot_uuid, name, color, created_at, modified_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                Arg::Text(&tag.uuid),
                Arg::Text(&tag.chatbot_uuid),
                Arg::Text(&tag.name),
                Arg::Text(&tag.color),
                Arg::Text(&tag.created_at),
                Arg::Text(&tag.modified_at),
            ],
        )?];
        statements.extend(self.link_statements(tag)?);
        self.batch(statements, || {
            ApiError::Conflict("That source tag already exists.".into())
        })
        .await
        .map(|_| ())
    }

    /// Saves a tag's name, colour and sources together.
    pub async fn update_source_tag(&self, tag: &SourceTag) -> ApiResult<()> {
        let mut statements = vec![self.statement(
            "UPDATE source_tags SET name = ?2, color = ?3, modified_at = ?4 WHERE uuid = ?1",
            &[
                Arg::Text(&tag.uuid),
                Arg::Text(&tag.name),
                Arg::Text(&tag.color),
                Arg::Text(&tag.modified_at),
            ],
        )?];
        statements.extend(self.link_statements(tag)?);
        self.batch(statements, || {
            ApiError::Conflict("That source tag changed meanwhile.".into())
        })
        .await
        .map(|_| ())
    }

    pub async fn get_source_tag(
        &self,
        account_uuid: &str,
        uuid: &str,
    ) -> ApiResult<Option<SourceTag>> {
        let row: Option<TagRow> = self
            .row(
                &format!("{TAG_SELECT} JOIN chatbots c ON c.uuid = t.chatbot_uuid WHERE t.uuid = ?1 AND c.account_uuid = ?2"),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(SourceTag::try_from).transpose()
    }

    pub async fn list_source_tags(&self, chatbot_uuid: &str) -> ApiResult<Vec<SourceTag>> {
        let rows: Vec<TagRow> = self
            .rows(
                &format!("{TAG_SELECT} WHERE t.chatbot_uuid = ?1 ORDER BY t.created_at, t.rowid"),
                &[Arg::Text(chatbot_uuid)],
            )
            .await?;
        rows.into_iter().map(SourceTag::try_from).collect()
    }

    pub async fn delete_source_tag(&self, uuid: &str) -> ApiResult<bool> {
        Ok(self
            .execute(
                "DELETE FROM source_tags WHERE uuid = ?1",
                &[Arg::Text(uuid)],
            )
            .await?
            > 0)
    }
}
