use super::table::{table, Sql};
use super::{Arg, Store};
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::domain::api_key::{ApiKey, IpNet, KeyPolicy, Scope};
use serde::Deserialize;
use worker::D1PreparedStatement;

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
        fixed scopes_json: String,
        fixed expires_at: Option<String>,
        fixed allowed_ips_json: String,
        fixed rate_limit_count: Option<i64>,
        fixed rate_limit_window: Option<i64>,
        fixed last_used_at: Option<String>,
    }
}

impl KeyRow {
    fn new(k: &ApiKey) -> ApiResult<Self> {
        let p = &k.policy;
        let allowed_ips: Vec<String> = p.allowed_ips.iter().map(ToString::to_string).collect();
        Ok(KeyRow {
            uuid: k.uuid.clone(),
            account_uuid: k.account_uuid.clone(),
            name: k.name.clone(),
            prefix: k.prefix.clone(),
            created_at: k.created_at.clone(),
            scopes_json: serde_json::to_string(&p.scopes)?,
            expires_at: p.expires_at.clone(),
            allowed_ips_json: serde_json::to_string(&allowed_ips)?,
            rate_limit_count: p.rate_limit.map(|(count, _)| count),
            rate_limit_window: p.rate_limit.map(|(_, window)| window),
            last_used_at: k.last_used_at.clone(),
        })
    }
}

impl From<KeyRow> for ApiKey {
    fn from(r: KeyRow) -> Self {
        // Written only by `insert_key` from a validated policy (or the migration's defaults).
        let scopes: Vec<Scope> = serde_json::from_str(&r.scopes_json).unwrap_or_default();
        let allowed_ips: Vec<String> =
            serde_json::from_str(&r.allowed_ips_json).unwrap_or_default();
        ApiKey {
            uuid: r.uuid,
            account_uuid: r.account_uuid,
            name: r.name,
            prefix: r.prefix,
            created_at: r.created_at,
            policy: KeyPolicy {
                scopes,
                expires_at: r.expires_at,
                allowed_ips: allowed_ips.iter().filter_map(|n| IpNet::parse(n)).collect(),
                rate_limit: r.rate_limit_count.zip(r.rate_limit_window),
            },
            last_used_at: r.last_used_at,
        }
    }
}

/// The key a request holds, with what limits it.
pub struct KeyOwner {
    pub key: ApiKey,
    pub key_hash: String,
}

/// `KeyRow`'s columns and the hash, for the one read that compares it.
#[derive(Deserialize)]
pub(super) struct KeyOwnerRow {
    uuid: String,
    account_uuid: String,
    name: String,
    prefix: String,
    created_at: String,
    scopes_json: String,
    expires_at: Option<String>,
    allowed_ips_json: String,
    rate_limit_count: Option<i64>,
    rate_limit_window: Option<i64>,
    last_used_at: Option<String>,
    key_hash: String,
}

fn key_owner_sql() -> String {
    format!(
        "SELECT {}, key_hash FROM api_keys WHERE key_hash = ?1",
        API_KEYS.select("")
    )
}

impl From<KeyOwnerRow> for KeyOwner {
    fn from(r: KeyOwnerRow) -> Self {
        KeyOwner {
            key: ApiKey::from(KeyRow {
                uuid: r.uuid,
                account_uuid: r.account_uuid,
                name: r.name,
                prefix: r.prefix,
                created_at: r.created_at,
                scopes_json: r.scopes_json,
                expires_at: r.expires_at,
                allowed_ips_json: r.allowed_ips_json,
                rate_limit_count: r.rate_limit_count,
                rate_limit_window: r.rate_limit_window,
                last_used_at: r.last_used_at,
            }),
            key_hash: r.key_hash,
        }
    }
}

impl Store {
    /// The key whose hash this is, with its account and policy.
    pub async fn key_owner(&self, key_hash: &str) -> ApiResult<Option<KeyOwner>> {
        let row: Option<KeyOwnerRow> = self.row(&key_owner_sql(), &[Arg::Text(key_hash)]).await?;
        Ok(row.map(KeyOwner::from))
    }

    /// `key_owner`'s statement, for a batch of other reads (`Store::turn_context`).
    pub(super) fn key_owner_statement(&self, key_hash: &str) -> ApiResult<D1PreparedStatement> {
        self.statement(&key_owner_sql(), &[Arg::Text(key_hash)])
    }

    /// Marks the key used at `now`, unless it already was within `LAST_USED_RESOLUTION_SECS`
    /// (the condition is in the statement, so racing requests write it once).
    pub async fn touch_key(&self, key_uuid: &str, now: &str, stale_before: &str) -> ApiResult<()> {
        self.execute(
            "UPDATE api_keys SET last_used_at = ?2 WHERE uuid = ?1 \
             AND (last_used_at IS NULL OR last_used_at < ?3)",
            &[Arg::Text(key_uuid), Arg::Text(now), Arg::Text(stale_before)],
        )
        .await
        .map(|_| ())
    }

    pub async fn account_exists(&self, account_uuid: &str) -> ApiResult<bool> {
        self.exists(
            "SELECT 1 AS found FROM accounts WHERE uuid = ?1",
            &[Arg::Text(account_uuid)],
        )
        .await
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
        let row = KeyRow::new(key)?;
        statements.push(self.prepare(&Sql::insert(&row, vec![("key_hash", Arg::Text(key_hash))]))?);
        self.batch(statements, || {
            ApiError::Conflict("That key already exists.".into())
        })
        .await
        .map(|_| ())
    }

    pub async fn get_key(&self, key_uuid: &str) -> ApiResult<Option<ApiKey>> {
        let row: Option<KeyRow> = self
            .row(
                &format!(
                    "SELECT {} FROM api_keys WHERE uuid = ?1",
                    API_KEYS.select("")
                ),
                &[Arg::Text(key_uuid)],
            )
            .await?;
        Ok(row.map(ApiKey::from))
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

    /// Of `key_uuids`, those whose keys still stand at `now`: not deleted, not expired.
    pub async fn standing_keys(&self, key_uuids: &[String], now: &str) -> ApiResult<Vec<String>> {
        let listed = serde_json::to_string(key_uuids)?;
        self.uuids(
            "SELECT uuid FROM api_keys WHERE uuid IN (SELECT value FROM json_each(?1)) \
             AND (expires_at IS NULL OR expires_at > ?2)",
            &[Arg::Text(&listed), Arg::Text(now)],
        )
        .await
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
