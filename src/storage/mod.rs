//! The storage layer: all SQL lives here. Handlers call these methods and never see a query.
//! Writes that must stand or fall together go through one `batch`.

mod agents;
mod api_keys;
mod chatbots;
mod crawls;
mod data_sources;
mod feedback;
mod insights;
mod readings;
mod sessions;
mod source_tags;
mod table;
mod tool_functions;
mod turns;
mod vectors;
mod webhooks;
mod widget;

#[cfg(test)]
mod schema_tests;

pub use api_keys::KeyOwner;
pub use crawls::{Crawl, FoundPage, PageLeft, Progress};
pub use data_sources::{ChunkSearch, SearchFound, SearchIn, SearchIndex};
pub use insights::{EARLIEST, LATEST};
pub use readings::{NewMarks, PageMarks};
pub use tool_functions::ToolsByAgent;
pub use turns::TurnContext;
pub use vectors::VectorWork;
pub use webhooks::DeliveryRow;

use edgechat_core::api::error::{ApiError, ApiResult};
use serde::de::DeserializeOwned;
use table::Sql;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result, Env};

pub struct Store {
    db: D1Database,
    /// D1 calls made through this store, for the per-step budget.
    calls: std::cell::Cell<u32>,
}

/// A bound argument. D1 takes JS values; these are the kinds the schema uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    Text(&'a str),
    Int(i64),
    Real(f64),
    Null,
}

impl From<&Arg<'_>> for JsValue {
    fn from(arg: &Arg<'_>) -> JsValue {
        match arg {
            Arg::Text(s) => JsValue::from_str(s),
            // D1 numbers are JS numbers; every integer we store is far below 2^53.
            Arg::Int(i) => JsValue::from_f64(*i as f64),
            Arg::Real(f) => JsValue::from_f64(*f),
            Arg::Null => JsValue::NULL,
        }
    }
}

/// Whose records a read may return: the caller's account (the key was checked before the
/// handler ran: its scopes, expiry, addresses and rate need its row anyway), or the account
/// holding a key, for a read sent beside that key's check (`handlers::messages::EarlyTurn`)
/// and used only once the check has passed.
#[derive(Clone, Copy)]
pub enum Owner<'a> {
    Account(&'a str),
    /// The account of the API key whose hash this is.
    KeyHolder(&'a str),
}

impl<'a> Owner<'a> {
    /// SQL saying that `column` holds the owner's account, the owner bound as `?{param}`.
    fn test(&self, column: &str, param: usize) -> String {
        format!("{column} = {}", self.account(&format!("?{param}")))
    }

    /// SQL for the owner's account, the owner bound at `placeholder`.
    fn account(&self, placeholder: &str) -> String {
        match self {
            Owner::Account(_) => placeholder.to_string(),
            Owner::KeyHolder(_) => {
                format!("(SELECT account_uuid FROM api_keys WHERE key_hash = {placeholder})")
            }
        }
    }

    /// What is bound for the owner: the account's uuid, or the key's hash.
    fn value(&self) -> &'a str {
        match *self {
            Owner::Account(uuid) | Owner::KeyHolder(uuid) => uuid,
        }
    }

    fn arg(&self) -> Arg<'a> {
        Arg::Text(self.value())
    }
}

fn is_unique_violation(err: &worker::Error) -> bool {
    err.to_string().contains("UNIQUE constraint failed")
}

/// A write whose row refers to a record (its chatbot, agent, session, message, tag) deleted
/// while the request was under way: every foreign key here names such a parent, so the
/// caller is told it is gone (404), as it would have been a moment later.
fn parent_gone(err: worker::Error) -> ApiError {
    if err.to_string().contains("FOREIGN KEY constraint failed") {
        ApiError::NotFound("What this refers to was deleted meanwhile.".into())
    } else {
        err.into()
    }
}

/// `AND`-ed to each statement of an all-or-nothing delete of the uuids in `?1` (a JSON array)
/// from `table`: every one of them is still there.
fn all_still_there(table: &str) -> String {
    format!(
        "(SELECT COUNT(*) FROM {table} WHERE uuid IN (SELECT value FROM json_each(?1))) = \
         (SELECT COUNT(DISTINCT value) FROM json_each(?1))"
    )
}

/// What an all-or-nothing delete says when one of its records went meanwhile.
fn gone_meanwhile() -> ApiError {
    ApiError::NotFound("One of these was deleted meanwhile; nothing was deleted.".into())
}

impl Store {
    pub fn new(env: &Env) -> ApiResult<Self> {
        Ok(Store {
            db: env.d1(edgechat_core::config::bindings::DATABASE)?,
            calls: std::cell::Cell::new(0),
        })
    }

    /// How many D1 calls (a batch is one) this store has made.
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    fn count_call(&self) {
        self.calls.set(self.calls.get() + 1);
    }

    fn statement(&self, sql: &str, args: &[Arg]) -> ApiResult<D1PreparedStatement> {
        let values: Vec<JsValue> = args.iter().map(JsValue::from).collect();
        Ok(self.db.prepare(sql).bind(&values)?)
    }

    /// A statement built with `Sql`, its arguments bound.
    fn prepare(&self, sql: &Sql) -> ApiResult<D1PreparedStatement> {
        self.statement(sql.text(), sql.args())
    }

    async fn rows<T: DeserializeOwned>(&self, sql: &str, args: &[Arg<'_>]) -> ApiResult<Vec<T>> {
        self.count_call();
        result_rows(&self.statement(sql, args)?.all().await?)
    }

    async fn row<T: DeserializeOwned>(&self, sql: &str, args: &[Arg<'_>]) -> ApiResult<Option<T>> {
        self.count_call();
        Ok(self.statement(sql, args)?.first::<T>(None).await?)
    }

    /// The `uuid` column of the rows `sql` reads.
    async fn uuids(&self, sql: &str, args: &[Arg<'_>]) -> ApiResult<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct Uuid {
            uuid: String,
        }
        let rows: Vec<Uuid> = self.rows(sql, args).await?;
        Ok(rows.into_iter().map(|r| r.uuid).collect())
    }

    /// Whether `sql` finds a row.
    async fn exists(&self, sql: &str, args: &[Arg<'_>]) -> ApiResult<bool> {
        Ok(self.row::<serde_json::Value>(sql, args).await?.is_some())
    }

    /// Runs one write; the number of rows it changed.
    async fn execute(&self, sql: &str, args: &[Arg<'_>]) -> ApiResult<usize> {
        self.count_call();
        let result = self
            .statement(sql, args)?
            .run()
            .await
            .map_err(parent_gone)?;
        Ok(changes(&result))
    }

    /// Runs writes atomically. A UNIQUE violation becomes `on_conflict`.
    async fn batch(
        &self,
        statements: Vec<D1PreparedStatement>,
        on_conflict: impl FnOnce() -> ApiError,
    ) -> ApiResult<Vec<D1Result>> {
        self.count_call();
        match self.db.batch(statements).await {
            Ok(results) => Ok(results),
            Err(err) if is_unique_violation(&err) => Err(on_conflict()),
            Err(err) => Err(parent_gone(err)),
        }
    }

    /// A batch whose rows refer to a record that may be deleted while it is prepared (a
    /// message's session): that reference failing is `on_missing`, not an internal error.
    async fn batch_referring(
        &self,
        statements: Vec<D1PreparedStatement>,
        on_conflict: impl FnOnce() -> ApiError,
        on_missing: impl FnOnce() -> ApiError,
    ) -> ApiResult<Vec<D1Result>> {
        self.count_call();
        match self.db.batch(statements).await {
            Ok(results) => Ok(results),
            Err(err) if is_unique_violation(&err) => Err(on_conflict()),
            Err(err) if err.to_string().contains("FOREIGN KEY constraint failed") => {
                Err(on_missing())
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Runs reads in one round trip, all seeing the same state.
    async fn read_batch(&self, statements: Vec<D1PreparedStatement>) -> ApiResult<Vec<D1Result>> {
        self.batch(statements, || ApiError::internal("a read conflicted"))
            .await
    }

    /// Cheap proof that the database answers and the schema is in place.
    pub async fn ping(&self) -> ApiResult<()> {
        self.row::<serde_json::Value>("SELECT COUNT(*) AS n FROM accounts WHERE 0", &[])
            .await
            .map(|_| ())
    }
}

fn result_rows<T: DeserializeOwned>(result: &D1Result) -> ApiResult<Vec<T>> {
    if let Some(error) = result.error() {
        return Err(ApiError::internal(format!("D1 query failed: {error}")));
    }
    Ok(result.results::<T>()?)
}

/// The rows of the `index`th statement of a batch.
fn batch_rows<T: DeserializeOwned>(results: &[D1Result], index: usize) -> ApiResult<Vec<T>> {
    result_rows(
        results.get(index).ok_or_else(|| {
            ApiError::internal("a D1 batch answered fewer results than statements")
        })?,
    )
}

fn changes(result: &D1Result) -> usize {
    result
        .meta()
        .ok()
        .flatten()
        .and_then(|m| m.changes)
        .unwrap_or(0)
}

/// A JSON object stored as text.
fn json_object(text: &str) -> ApiResult<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str(text)? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(ApiError::internal("stored JSON is not an object")),
    }
}

/// SQLite stores booleans as 0/1.
fn flag(b: bool) -> i64 {
    i64::from(b)
}

/// A JSON object as the text stored for it.
fn object_text(object: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::Value::Object(object.clone()).to_string()
}
