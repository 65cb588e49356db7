use super::table::{table, Sql};
use super::{Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::data_source::SourceTag;
use worker::D1PreparedStatement;

table! {
    pub(super) struct TagRow in SOURCE_TAGS = "source_tags" {
        key uuid: String,
        fixed chatbot_uuid: String,
        set name: String,
        /// `name` in lower case (Unicode's), which the name's uniqueness compares (migration
        /// 0023).
        set name_folded: String,
        set color: String,
        fixed created_at: String,
        set modified_at: String,
        /// JSON array of the tagged sources' uuids.
        computed source_uuids: String = "(SELECT json_group_array(l.data_source_uuid) \
            FROM data_source_tags l WHERE l.source_tag_uuid = {t}.uuid)",
    }
}

impl TagRow {
    fn new(tag: &SourceTag) -> ApiResult<Self> {
        Ok(TagRow {
            uuid: tag.uuid.clone(),
            chatbot_uuid: tag.chatbot_uuid.clone(),
            name: tag.name.clone(),
            name_folded: tag.name.to_lowercase(),
            color: tag.color.clone(),
            created_at: tag.created_at.clone(),
            modified_at: tag.modified_at.clone(),
            source_uuids: serde_json::to_string(&tag.data_source_uuids)?,
        })
    }
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

impl Store {
    /// The statements that make the tag's links exactly its row's sources.
    fn link_statements(&self, row: &TagRow) -> ApiResult<Vec<D1PreparedStatement>> {
        Ok(vec![
            self.statement(
                "DELETE FROM data_source_tags WHERE source_tag_uuid = ?1",
                &[Arg::Text(&row.uuid)],
            )?,
            self.statement(
                "INSERT INTO data_source_tags (source_tag_uuid, data_source_uuid) \
                 SELECT ?1, value FROM json_each(?2)",
                &[Arg::Text(&row.uuid), Arg::Text(&row.source_uuids)],
            )?,
        ])
    }

    pub async fn insert_source_tag(&self, tag: &SourceTag) -> ApiResult<()> {
        let row = TagRow::new(tag)?;
        let mut statements = vec![self.prepare(&Sql::insert(&row, Vec::new()))?];
        statements.extend(self.link_statements(&row)?);
        self.batch(statements, || {
            ApiError::Conflict("This chatbot already has a source tag of that name.".into())
        })
        .await
        .map(|_| ())
    }

    /// Saves what `after` changed of `before` in one batch: the changed columns only
    /// (`Sql::update_changed`), and the links only when the sources changed, so that updates
    /// of the name, the colour and the sources at the same moment all stand.
    pub async fn update_source_tag(&self, before: &SourceTag, after: &SourceTag) -> ApiResult<()> {
        let (was, row) = (TagRow::new(before)?, TagRow::new(after)?);
        let patches = Sql::json_patches(&was, &row);
        let mut statements = vec![self.prepare(&Sql::update_changed(&was, &row, &patches))?];
        if before.data_source_uuids != after.data_source_uuids {
            statements.extend(self.link_statements(&row)?);
        }
        self.batch(statements, || {
            ApiError::Conflict("This chatbot already has another source tag of that name.".into())
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
                &format!(
                    "SELECT {} FROM source_tags t JOIN chatbots c ON c.uuid = t.chatbot_uuid \
                     WHERE t.uuid = ?1 AND c.account_uuid = ?2",
                    SOURCE_TAGS.select("t")
                ),
                &[Arg::Text(uuid), Arg::Text(account_uuid)],
            )
            .await?;
        row.map(SourceTag::try_from).transpose()
    }

    pub async fn list_source_tags(&self, chatbot_uuid: &str) -> ApiResult<Vec<SourceTag>> {
        let rows: Vec<TagRow> = self
            .rows(
                &format!(
                    "SELECT {} FROM source_tags t WHERE t.chatbot_uuid = ?1 ORDER BY t.created_at, t.rowid",
                    SOURCE_TAGS.select("t")
                ),
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
