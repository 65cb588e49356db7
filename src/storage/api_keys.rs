use super::table::{table, Sql};
use super::{Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::api_key::ApiKey;
use serde::Deserialize;

table! {
    pub(super) struct AccountRow in ACCOUNTS = "accounts" {
        key uuid: String,
        fixed created_at: String,
    }
}

table! {
    /// A key as it is listed; its hash is written beside it and never read back.
    pub(super) struct KeyRow in API_KEYS = "api_keys" {
        key uuid: String,
        fixed account_uuid: String,
        fixed name: String,
        fixed prefix: String,
        fixed created_at: String,
    }
}

impl From<&ApiKey> for KeyRow {
    fn from(k: &ApiKey) -> Self {
        KeyRow {
            uuid: k.uuid.clone(),
            account_uuid: k.account_uuid.clone(),
            name: k.name.clone(),
            prefix: k.prefix.clone(),
            created_at: k.created_at.clone(),
        }
    }
}

impl From<KeyRow> for ApiKey {
    fn from(r: KeyRow) -> Self {
        ApiKey {
            uuid: r.uuid,
            account_uuid: r.account_uuid,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
        }
    }
}

#[derive(Deserialize)]
pub struct KeyOwner {
    pub key_uuid: String,
    pub account_uuid: String,
    pub key_hash: String,
}

impl Store {
    /// The key whose hash this is, with its account.
    pub async fn key_owner(&self, key_hash: &str) -> ApiResult<Option<KeyOwner>> {
        self.row(
            "SELECT uuid AS key_uuid, account_uuid, key_hash FROM api_keys WHERE key_hash = ?1",
            &[Arg::Text(key_hash)],
        )
        .await
    }

    pub async fn account_exists(&self, account_uuid: &str) -> ApiResult<bool> {
        let row: Option<serde_json::Value> = self
            .row(
                "SELECT 1 AS found FROM accounts WHERE uuid = ?1",
                &[Arg::Text(account_uuid)],
            )
            .await?;
        Ok(row.is_some())
    }

    /// Stores a key; with `new_account` the account is created in the same batch.
    pub async fn insert_key(
        &self,
        key: &ApiKey,
        key_hash: &str,
        new_account: bool,
    ) -> ApiResult<()> {
        let mut statements = Vec::with_capacity(2);
        if new_account {
            let account = AccountRow {
                uuid: key.account_uuid.clone(),
                created_at: key.created_at.clone(),
            };
            statements.push(self.prepare(&Sql::insert(&account, Vec::new()))?);
        }
        let row = KeyRow::from(key);
        statements.push(self.prepare(&Sql::insert(&row, vec![("key_hash", Arg::Text(key_hash))]))?);
        self.batch(statements, || {
            ApiError::Conflict("That key already exists.".into())
        })
        .await
        .map(|_| ())
    }

    /// Keys of one account, or of every account for the operator.
    pub async fn list_keys(&self, account_uuid: Option<&str>) -> ApiResult<Vec<ApiKey>> {
        let rows: Vec<KeyRow> = match account_uuid {
            Some(account) => {
                self.rows(
                    &format!(
                        "SELECT {} FROM api_keys WHERE account_uuid = ?1 ORDER BY created_at, rowid",
                        API_KEYS.select("")
                    ),
                    &[Arg::Text(account)],
                )
                .await?
            }
            None => {
                self.rows(
                    &format!("SELECT {} FROM api_keys ORDER BY created_at, rowid", API_KEYS.select("")),
                    &[],
                )
                    .await?
            }
        };
        Ok(rows.into_iter().map(ApiKey::from).collect())
    }

    /// Deletes a key of `account_uuid` (any key for the operator); false when there was none.
    pub async fn delete_key(&self, key_uuid: &str, account_uuid: Option<&str>) -> ApiResult<bool> {
        let changed = match account_uuid {
            Some(account) => {
                self.execute(
                    "DELETE FROM api_keys WHERE uuid = ?1 AND account_uuid = ?2",
                    &[Arg::Text(key_uuid), Arg::Text(account)],
                )
                .await?
            }
            None => {
                self.execute(
                    "DELETE FROM api_keys WHERE uuid = ?1",
                    &[Arg::Text(key_uuid)],
                )
                .await?
            }
        };
        Ok(changed > 0)
    }
}
