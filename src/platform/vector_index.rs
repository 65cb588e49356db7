//! One chatbot's vectors, held by a Durable Object of its own (`VECTOR_INDEX`, named by the
//! chatbot's uuid): the object's SQLite keeps them across restarts, its memory keeps them ready
//! to scan. Commands and the in-memory state are the core's (`knowledge::semantic::index`);
//! this file stores, loads and answers.

use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::config::bindings;
use edgechat_core::knowledge::semantic::index::{
    IndexCommand, IndexRefusal, IndexState, IndexStats,
};
use edgechat_core::knowledge::semantic::vector::{signs_to_bytes, Neighbour, Quantised};
use serde_json::{json, Value};
use std::cell::RefCell;
use worker::{Env, Method, Request, RequestInit, Response, SqlStorage, SqlStorageValue, State};

/// `vectors` holds each vector's full codes (read back only for the candidates a query
/// compares exactly); `signs` holds what memory keeps (one bit per dimension), so waking up
/// reads a ninth of the bytes. Both are written together.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS vectors (\
    chunk_id INTEGER PRIMARY KEY, source TEXT NOT NULL, data BLOB NOT NULL); \
    CREATE TABLE IF NOT EXISTS signs (\
    chunk_id INTEGER PRIMARY KEY, source TEXT NOT NULL, bits BLOB NOT NULL); \
    CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);";

/// The object's side: its storage and, once loaded, its vectors' signs in memory.
pub struct VectorKeeper {
    sql: SqlStorage,
    memory: RefCell<Option<IndexState>>,
}

fn integer(sql: &SqlStorage, query: &str) -> worker::Result<i64> {
    for row in sql.exec(query, None)?.raw() {
        if let Some(SqlStorageValue::Integer(n)) = row?.into_iter().next() {
            return Ok(n);
        }
    }
    Ok(0)
}

impl VectorKeeper {
    pub fn new(state: &State) -> Self {
        VectorKeeper {
            sql: state.storage().sql(),
            memory: RefCell::new(None),
        }
    }

    fn write_signs(&self, id: i64, source: &str, q: &Quantised) -> worker::Result<()> {
        self.sql.exec(
            "INSERT OR REPLACE INTO signs (chunk_id, source, bits) VALUES (?, ?, ?)",
            vec![
                SqlStorageValue::from(id),
                SqlStorageValue::from(source),
                SqlStorageValue::from(signs_to_bytes(q)),
            ],
        )?;
        Ok(())
    }

    /// Vectors stored before `signs` existed get their signs once.
    fn fill_missing_signs(&self) -> worker::Result<()> {
        if integer(&self.sql, "SELECT COUNT(*) FROM vectors")?
            == integer(&self.sql, "SELECT COUNT(*) FROM signs")?
        {
            return Ok(());
        }
        let mut missing = Vec::new();
        for row in self
            .sql
            .exec(
                "SELECT chunk_id, source, data FROM vectors \
                 WHERE chunk_id NOT IN (SELECT chunk_id FROM signs)",
                None,
            )?
            .raw()
        {
            let mut values = row?.into_iter();
            if let (
                Some(SqlStorageValue::Integer(id)),
                Some(SqlStorageValue::String(source)),
                Some(SqlStorageValue::Blob(data)),
            ) = (values.next(), values.next(), values.next())
            {
                if let Some(q) = Quantised::from_bytes(&data) {
                    missing.push((id, source, q));
                }
            }
        }
        for (id, source, q) in &missing {
            self.write_signs(*id, source, q)?;
        }
        self.sql.exec(
            "DELETE FROM signs WHERE chunk_id NOT IN (SELECT chunk_id FROM vectors)",
            None,
        )?;
        Ok(())
    }

    /// Reads every stored vector's signs into memory, once per wake-up.
    fn load(&self) -> worker::Result<()> {
        if self.memory.borrow().is_some() {
            return Ok(());
        }
        self.sql.exec(SCHEMA, None)?;
        self.fill_missing_signs()?;
        let mut model = None;
        for row in self
            .sql
            .exec("SELECT value FROM settings WHERE name = 'model'", None)?
            .raw()
        {
            if let Some(SqlStorageValue::String(m)) = row?.into_iter().next() {
                model = Some(m);
            }
        }
        let mut state = IndexState::new(model);
        for row in self
            .sql
            .exec("SELECT chunk_id, source, bits FROM signs", None)?
            .raw()
        {
            let mut values = row?.into_iter();
            if let (
                Some(SqlStorageValue::Integer(id)),
                Some(SqlStorageValue::String(source)),
                Some(SqlStorageValue::Blob(bits)),
            ) = (values.next(), values.next(), values.next())
            {
                state.restore(id, &source, &bits);
            }
        }
        *self.memory.borrow_mut() = Some(state);
        Ok(())
    }

    /// The full codes of `ids`, for the exact comparison of a query's candidates.
    fn codes_of(&self, ids: &[i64]) -> Vec<(i64, Quantised)> {
        let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        let mut found = Vec::with_capacity(ids.len());
        let Ok(cursor) = self.sql.exec(
            "SELECT chunk_id, data FROM vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
            vec![SqlStorageValue::from(list)],
        ) else {
            return found;
        };
        for row in cursor.raw().flatten() {
            let mut values = row.into_iter();
            if let (Some(SqlStorageValue::Integer(id)), Some(SqlStorageValue::Blob(data))) =
                (values.next(), values.next())
            {
                if let Some(q) = Quantised::from_bytes(&data) {
                    found.push((id, q));
                }
            }
        }
        found
    }

    fn set_model(&self, model: Option<&str>) -> worker::Result<()> {
        self.sql.exec("DELETE FROM vectors", None)?;
        self.sql.exec("DELETE FROM signs", None)?;
        match model {
            Some(m) => self.sql.exec(
                "INSERT OR REPLACE INTO settings (name, value) VALUES ('model', ?)",
                vec![SqlStorageValue::from(m)],
            )?,
            None => self.sql.exec("DELETE FROM settings", None)?,
        };
        Ok(())
    }

    pub async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let command: IndexCommand = match req.json().await {
            Ok(c) => c,
            Err(e) => {
                return Ok(Response::from_json(
                    &json!({"error": format!("unreadable command ({e})")}),
                )?
                .with_status(400))
            }
        };
        self.load()?;
        let mut guard = self.memory.borrow_mut();
        let Some(state) = guard.as_mut() else {
            return Err(worker::Error::RustError(
                "the vector index did not load".into(),
            ));
        };
        match command {
            IndexCommand::Reset { model } => {
                self.set_model(Some(&model))?;
                state.reset(Some(model));
            }
            IndexCommand::Wipe => {
                self.set_model(None)?;
                state.reset(None);
            }
            IndexCommand::Upsert { model, chunks } => {
                if let Err(refusal) = state.check_upsert(&model, &chunks) {
                    let model_changed = matches!(refusal, IndexRefusal::OtherModel { .. });
                    let refused =
                        json!({"error": refusal.to_string(), "model_changed": model_changed});
                    return Ok(Response::from_json(&refused)?.with_status(409));
                }
                for chunk in &chunks {
                    let Some(q) = chunk.vector.quantised() else {
                        continue;
                    };
                    self.sql.exec(
                        "INSERT OR REPLACE INTO vectors (chunk_id, source, data) VALUES (?, ?, ?)",
                        vec![
                            SqlStorageValue::from(chunk.id),
                            SqlStorageValue::from(chunk.source.as_str()),
                            SqlStorageValue::from(q.to_bytes()),
                        ],
                    )?;
                    self.write_signs(chunk.id, &chunk.source, &q)?;
                }
                state.upsert(&chunks);
            }
            IndexCommand::Remove { ids } => {
                for id in &ids {
                    self.sql.exec(
                        "DELETE FROM vectors WHERE chunk_id = ?",
                        vec![SqlStorageValue::from(*id)],
                    )?;
                    self.sql.exec(
                        "DELETE FROM signs WHERE chunk_id = ?",
                        vec![SqlStorageValue::from(*id)],
                    )?;
                }
                state.remove(&ids);
            }
            IndexCommand::Query {
                model,
                vector,
                k,
                sources,
            } => {
                let found = state.query(&model, &vector, k, sources.as_deref(), |ids| {
                    self.codes_of(ids)
                });
                let neighbours: Vec<Value> = found
                    .iter()
                    .map(|n| {
                        json!({"id": n.id, "similarity": n.similarity, "source": state.source_of(n.id)})
                    })
                    .collect();
                return Response::from_json(&json!({ "neighbours": neighbours }));
            }
            IndexCommand::Stats => {}
        }
        Response::from_json(&state.stats())
    }
}

/// Sends a command to a chatbot's vector index and reads its answer.
async fn send(env: &Env, chatbot_uuid: &str, command: &IndexCommand) -> ApiResult<Response> {
    let stub = env
        .durable_object(bindings::VECTOR_INDEX)?
        .id_from_name(chatbot_uuid)?
        .get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(wasm_bindgen::JsValue::from_str(
            &serde_json::to_string(command)?,
        )));
    let request = Request::new_with_init("https://vector-index/command", &init)?;
    Ok(stub.fetch_with_request(request).await?)
}

/// Runs a command that changes the index; its size afterwards.
pub async fn apply(env: &Env, chatbot_uuid: &str, command: &IndexCommand) -> ApiResult<IndexStats> {
    let mut response = send(env, chatbot_uuid, command).await?;
    if response.status_code() != 200 {
        return Err(ApiError::internal(format!(
            "the vector index answered {}: {}",
            response.status_code(),
            response.text().await.unwrap_or_default()
        )));
    }
    Ok(response.json().await?)
}

/// Why an index did not take an `Upsert`.
pub struct UpsertRefused {
    /// The index was reset for another model meanwhile (and that reset queued every chunk
    /// again); otherwise the vectors themselves were refused (another width, unreadable).
    pub model_changed: bool,
    pub reason: String,
}

/// Sends an `Upsert`: `Ok(Err(..))` when the index refused the vectors.
pub async fn upsert(
    env: &Env,
    chatbot_uuid: &str,
    command: &IndexCommand,
) -> ApiResult<Result<(), UpsertRefused>> {
    #[derive(serde::Deserialize)]
    struct Refusal {
        error: String,
        #[serde(default)]
        model_changed: bool,
    }
    let mut response = send(env, chatbot_uuid, command).await?;
    match response.status_code() {
        200 => Ok(Ok(())),
        409 => {
            let refusal: Refusal = response.json().await?;
            Ok(Err(UpsertRefused {
                model_changed: refusal.model_changed,
                reason: refusal.error,
            }))
        }
        status => Err(ApiError::internal(format!(
            "the vector index answered {status}: {}",
            response.text().await.unwrap_or_default()
        ))),
    }
}

/// A chunk near a question's vector, and the source its vector was made from.
pub struct Nearby {
    pub neighbour: Neighbour,
    pub source: Option<String>,
}

/// The nearest chunks to a question's vector.
pub async fn nearest(
    env: &Env,
    chatbot_uuid: &str,
    command: &IndexCommand,
) -> ApiResult<Vec<Nearby>> {
    #[derive(serde::Deserialize)]
    struct Answer {
        neighbours: Vec<NeighbourJson>,
    }
    #[derive(serde::Deserialize)]
    struct NeighbourJson {
        id: i64,
        similarity: f32,
        #[serde(default)]
        source: Option<String>,
    }
    let mut response = send(env, chatbot_uuid, command).await?;
    if response.status_code() != 200 {
        return Err(ApiError::internal(format!(
            "the vector index answered {}",
            response.status_code()
        )));
    }
    let answer: Answer = response.json().await?;
    Ok(answer
        .neighbours
        .into_iter()
        .map(|n| Nearby {
            neighbour: Neighbour {
                id: n.id,
                similarity: n.similarity,
            },
            source: n.source,
        })
        .collect())
}
