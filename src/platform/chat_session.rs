//! One chat session's answers, held by a Durable Object of its own (`CHAT_SESSION`, named by
//! the session's uuid). The object runs each turn (the Worker hands it the message request as
//! it came), so an answer is produced to its end whether or not anyone is reading, one at a
//! time per session. Its events go to every reader following it, and to the object's SQLite in
//! batches, so a reader can come back (`follow`) and a restart mid-answer is noticed when the
//! object wakes: the answer is closed as `interrupted` with what was said.

use crate::platform::log;
use crate::platform::stream::StreamSink;
use crate::storage::Store;
use edgechat_core::api::error::{ApiError, ApiResult};
use edgechat_core::chat::wire::{AnswerEvent, Encoder, WireFormat};
use edgechat_core::config::bindings;
use edgechat_core::domain::chatbot::Visibility;
use edgechat_core::time;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use wasm_bindgen_futures::spawn_local;
use web_sys::ReadableStream;
use worker::{Env, Request, SqlStorage, SqlStorageValue, Storage};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS answers (message_uuid TEXT PRIMARY KEY, \
    running INTEGER NOT NULL, started_ms INTEGER NOT NULL); \
    CREATE TABLE IF NOT EXISTS events (message_uuid TEXT NOT NULL, first INTEGER NOT NULL, \
    batch TEXT NOT NULL, PRIMARY KEY (message_uuid, first));";

/// Events are written to storage in one statement per batch: when this many wait, or when the
/// oldest waiting is this old (checked as each event comes), and when the answer ends.
const FLUSH_EVENTS: usize = 32;
const FLUSH_MS: i64 = 250;
/// How far past its last stored event an interrupted answer's `end` is numbered: readers may
/// have been sent up to a batch not yet written, and a batch being written, when the runtime
/// went away, so a reader coming back with its last id still gets the `end`.
const UNSTORED_EVENTS: usize = 2 * FLUSH_EVENTS;
/// Answers whose events are kept for readers coming back; an older one is replayed from its
/// stored message.
const KEPT_ANSWERS: i64 = 16;
/// While an answer runs the object keeps an alarm this far ahead: if the object went away
/// meanwhile, the alarm wakes a new one, which closes the answer as `interrupted`.
const WATCH_MS: i64 = 30_000;
/// How often an open session event stream hears a comment line while nothing else happens.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(25);

/// The object's side: its storage, and the answer it is producing, if any.
pub struct Room {
    storage: Storage,
    sql: SqlStorage,
    env: Env,
    /// A turn holds the session from its start to its stored message (`Claim`).
    busy: Cell<bool>,
    live: RefCell<Option<Rc<LiveAnswer>>>,
    ready: Cell<bool>,
    /// Open session event streams (`listen`): live-chat messages and answers starting.
    listeners: RefCell<Vec<Listener>>,
    /// A keep-alive loop runs while any session event stream is open.
    keeping_alive: Cell<bool>,
}

/// The session held by one turn; dropping it frees the session for the next message.
pub struct Claim(Rc<Room>);

impl Claim {
    /// The answer `message_uuid` starts in the held session.
    pub fn start(&self, message_uuid: &str) -> ApiResult<Rc<LiveAnswer>> {
        self.0.start(message_uuid)
    }

    /// Keeps the object's alarm ahead while the answer runs.
    pub async fn watch(&self) {
        self.0.watch().await
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.busy.set(false);
        self.0.live.borrow_mut().take();
    }
}

impl Room {
    pub fn new(storage: Storage, env: Env) -> Self {
        Room {
            sql: storage.sql(),
            storage,
            env,
            busy: Cell::new(false),
            live: RefCell::new(None),
            ready: Cell::new(false),
            listeners: RefCell::new(Vec::new()),
            keeping_alive: Cell::new(false),
        }
    }

    /// A session event stream: `message` for each live-chat message stored in the session (an
    /// operator's reply, an announcement), `answer` when an answer starts. It opens with a
    /// comment, so the reader knows it is listening, and ends at `until_ms` (Unix ms).
    pub fn listen(self: &Rc<Self>, until_ms: i64, holder: Holder) -> ApiResult<ReadableStream> {
        let (sink, readable) = StreamSink::new().map_err(ApiError::internal)?;
        let reader = Reader::new(sink, Encoder::new(WireFormat::EventStream, "", 0), 0);
        reader.write(": listening\n\n".into());
        {
            let mut listeners = self.listeners.borrow_mut();
            listeners.retain(|l| !l.reader.gone.get());
            listeners.push(Listener {
                reader,
                until_ms,
                holder,
            });
        }
        let room = Rc::clone(self);
        let wait = (until_ms - time::now_ms()).max(0) as u64;
        spawn_local(async move {
            worker::Delay::from(std::time::Duration::from_millis(wait)).await;
            room.end_listeners();
        });
        if !self.keeping_alive.replace(true) {
            let room = Rc::clone(self);
            spawn_local(async move { room.keep_alive().await });
        }
        Ok(readable)
    }

    /// A comment line on every open session event stream every `KEEP_ALIVE` while any is
    /// open: proxies and browsers close a stream that is silent for long, and a write that
    /// fails is how a reader that left is noticed.
    async fn keep_alive(&self) {
        loop {
            worker::Delay::from(KEEP_ALIVE).await;
            let mut listeners = self.listeners.borrow_mut();
            listeners.retain(|l| !l.reader.gone.get());
            if listeners.is_empty() {
                self.keeping_alive.set(false);
                return;
            }
            for listener in listeners.iter() {
                listener.reader.write(": keep-alive\n\n".into());
            }
        }
    }

    /// Closes the session event streams whose end has come.
    fn end_listeners(&self) {
        let now = time::now_ms();
        self.listeners.borrow_mut().retain(|l| {
            if l.until_ms > now {
                return !l.reader.gone.get();
            }
            l.reader.close();
            false
        });
    }

    /// The session was deleted: its event streams end, an answer still running stops (it
    /// keeps its own events until the alarm drops them), and the answers it kept for readers
    /// coming back are dropped.
    pub fn forget(&self) -> ApiResult<()> {
        for listener in self.listeners.borrow_mut().drain(..) {
            listener.reader.close();
        }
        if let Some(live) = self.live.borrow().as_ref() {
            live.request_stop();
        }
        if !self.busy.get() && self.has_answers().map_err(ApiError::internal)? {
            self.sql
                .exec("DELETE FROM events", None)
                .and_then(|_| self.sql.exec("DELETE FROM answers", None))
                .map_err(ApiError::internal)?;
        }
        Ok(())
    }

    /// A live-chat message for the open session event streams. A stream whose holder no
    /// longer stands is closed rather than told: a visitor the chatbot no longer `admits`
    /// (made private, the site dropped from its allowed origins), a key since deleted or
    /// expired (read from D1 only when such a stream is open).
    pub async fn announce_message(&self, message: &Value, admits: impl Fn(Option<&str>) -> bool) {
        let keys: Vec<String> = self
            .listeners
            .borrow()
            .iter()
            .filter_map(|l| match &l.holder {
                Holder::Key(uuid) => Some(uuid.clone()),
                _ => None,
            })
            .collect();
        // A key that cannot be checked is taken as gone: the message is stored either way,
        // and the reader catches up once it shows itself again.
        let standing = if keys.is_empty() {
            Vec::new()
        } else {
            match Store::new(&self.env) {
                Ok(store) => store
                    .standing_keys(&keys, &time::now())
                    .await
                    .unwrap_or_default(),
                Err(_) => Vec::new(),
            }
        };
        self.listeners.borrow_mut().retain(|l| {
            let stands = match &l.holder {
                Holder::Key(uuid) => standing.contains(uuid),
                Holder::Visitor(origin) => admits(origin.as_deref()),
                Holder::Other => true,
            };
            if !stands {
                l.reader.close();
            }
            stands
        });
        self.announce("message", message);
    }

    /// Sends an event to every open session event stream.
    pub fn announce(&self, name: &str, data: &Value) {
        let mut listeners = self.listeners.borrow_mut();
        listeners.retain(|l| !l.reader.gone.get());
        for listener in listeners.iter() {
            listener
                .reader
                .write(format!("event: {name}\ndata: {data}\n\n"));
        }
    }

    fn prepare(&self) -> worker::Result<()> {
        if !self.ready.get() {
            self.sql.exec(SCHEMA, None)?;
            self.ready.set(true);
        }
        Ok(())
    }

    /// Holds the session for one turn; a 409 while another answer is being produced.
    pub fn claim(self: &Rc<Self>) -> ApiResult<Claim> {
        if self.busy.get() {
            let live = self.live.borrow();
            return Err(ApiError::Conflict(match live.as_ref() {
                Some(l) => format!(
                    "This session is still answering message {0}; send the next one when it \
                     ends, or stop it with POST /api/v1/message/{0}/stop.",
                    l.message_uuid
                ),
                None => "This session is still answering a message; send the next one when \
                         it ends."
                    .to_string(),
            }));
        }
        self.busy.set(true);
        Ok(Claim(Rc::clone(self)))
    }

    /// The answer `message_uuid` starts: its events are kept from here on. Its record in
    /// storage is written once its first piece is on its way (`LiveAnswer::record`), so no
    /// storage write stands between the question and the first byte.
    pub fn start(&self, message_uuid: &str) -> ApiResult<Rc<LiveAnswer>> {
        let live = Rc::new(LiveAnswer {
            message_uuid: message_uuid.to_string(),
            started_ms: time::now_ms(),
            recorded: Cell::new(false),
            sql: self.sql.clone(),
            events: RefCell::new(Vec::new()),
            stored: Cell::new(0),
            flushed_ms: Cell::new(time::now_ms()),
            readers: RefCell::new(Vec::new()),
            stop: Flag::default(),
            ended: Cell::new(false),
            settled: Cell::new(false),
            listed: Flag::default(),
        });
        *self.live.borrow_mut() = Some(Rc::clone(&live));
        self.announce("answer", &json!({ "message_uuid": message_uuid }));
        Ok(live)
    }

    /// Keeps the alarm ahead while an answer runs. The write does not hold the answer's bytes
    /// back (a storage write otherwise keeps the object's output until it is durable).
    pub async fn watch(&self) {
        let options = worker::SetAlarmOptions {
            allow_unconfirmed: Some(true),
            ..Default::default()
        };
        if let Err(err) = self.storage.set_alarm_with_options(WATCH_MS, options).await {
            log::background_failure(
                "setting a session's alarm",
                "",
                &ApiError::internal(err.to_string()),
            );
        }
    }

    /// The alarm: a running answer is watched on; a stale one is closed, and answers kept
    /// longer than `ANSWER_REPLAY_SECONDS` are dropped.
    pub async fn alarm(&self) {
        if self.live.borrow().is_some() {
            self.watch().await;
        } else {
            self.recover().await;
            self.expire().await;
        }
    }

    /// Drops the events of ended answers kept longer than `ANSWER_REPLAY_SECONDS` (a day) and
    /// sets the alarm for the next one to go: readers come back within seconds, and the text of
    /// a session (or a chatbot) deleted meanwhile does not stay in the object's storage.
    async fn expire(&self) {
        let kept_ms = crate::platform::config::read(&self.env)
            .answer_replay
            .as_millis() as i64;
        let oldest = self.has_answers().and_then(|any| {
            if !any {
                return Ok(None);
            }
            let cutoff = time::now_ms() - kept_ms;
            self.sql.exec(
                "DELETE FROM answers WHERE running = 0 AND started_ms < ?",
                vec![cutoff.into()],
            )?;
            self.sql.exec(
                "DELETE FROM events WHERE message_uuid NOT IN (SELECT message_uuid FROM answers)",
                None,
            )?;
            let row = self
                .sql
                .exec("SELECT MIN(started_ms) FROM answers", None)?
                .raw()
                .next()
                .transpose()?;
            Ok(match row.and_then(|r| r.into_iter().next()) {
                Some(SqlStorageValue::Integer(ms)) => Some(ms),
                // A JavaScript number may come back as either.
                Some(SqlStorageValue::Float(ms)) => Some(ms as i64),
                _ => None,
            })
        });
        let next_ms = match oldest {
            Ok(Some(started_ms)) => (started_ms + kept_ms - time::now_ms()).max(1_000),
            Ok(None) => return,
            Err(err) => {
                let err = ApiError::internal(err.to_string());
                return log::background_failure("dropping a session's old answers", "", &err);
            }
        };
        if let Err(err) = self.storage.set_alarm(next_ms).await {
            let err = ApiError::internal(err.to_string());
            log::background_failure("setting a session's alarm", "", &err);
        }
    }

    /// Closes answers a previous instance of this object left running (it went away with
    /// them): their events end with `end {finish_reason: interrupted}` and their stored
    /// message keeps what was said.
    pub async fn recover(&self) {
        if self.busy.get() || self.live.borrow().is_some() {
            return;
        }
        // Read-only until there is something to close: creating the tables is a write, and a
        // write would hold back the object's next response until it is durable.
        let found = self.has_answers().and_then(|any| {
            if !any {
                return Ok(Vec::new());
            }
            self.prepare()?;
            let mut uuids = Vec::new();
            for row in self
                .sql
                .exec("SELECT message_uuid FROM answers WHERE running = 1", None)?
                .raw()
            {
                if let Some(SqlStorageValue::String(uuid)) = row?.into_iter().next() {
                    uuids.push(uuid);
                }
            }
            let mut closed = Vec::new();
            for uuid in uuids {
                let events = self.stored_events(&uuid)?.unwrap_or_default();
                let text: String = events
                    .iter()
                    .filter_map(|(_, e)| match e {
                        AnswerEvent::Delta(t) => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let ended = events
                    .iter()
                    .any(|(_, e)| matches!(e, AnswerEvent::End { .. }));
                // Written at once, so a reader coming back meanwhile hears the end; its usage
                // follows from the stored message below.
                let end_seq =
                    (!ended).then(|| events.last().map_or(0, |(seq, _)| seq + 1) + UNSTORED_EVENTS);
                if let Some(seq) = end_seq {
                    write_batch(
                        &self.sql,
                        &uuid,
                        seq,
                        &[interrupted_end(&uuid, Value::Null, None)],
                    )?;
                }
                self.sql.exec(
                    "UPDATE answers SET running = 0 WHERE message_uuid = ?",
                    vec![uuid.as_str().into()],
                )?;
                closed.push((uuid, text, end_seq));
            }
            Ok(closed)
        });
        let closed = match found {
            Ok(closed) => closed,
            Err(err) => {
                let err = ApiError::internal(err.to_string());
                return log::background_failure("closing an interrupted answer", "", &err);
            }
        };
        for (uuid, text, end_seq) in closed {
            let result = async {
                Store::new(&self.env)?
                    .interrupt_message(&uuid, &text, &time::now())
                    .await
            }
            .await;
            match (result, end_seq) {
                // The `end` says what the stored message holds.
                (Ok(Some((usage, answered))), Some(seq)) => {
                    let end = interrupted_end(&uuid, usage, answered);
                    if let Err(err) = write_batch(&self.sql, &uuid, seq, &[end]) {
                        let err = ApiError::internal(err.to_string());
                        log::background_failure("closing an interrupted answer", &uuid, &err);
                    }
                }
                (Ok(_), _) => {}
                (Err(err), _) => {
                    log::background_failure("closing an interrupted answer", &uuid, &err)
                }
            }
        }
    }

    /// Whether this object has ever kept an answer: its tables exist (reading a table that
    /// does not exist fails, and that is the answer no).
    fn has_answers(&self) -> worker::Result<bool> {
        if !self.ready.get() && self.sql.exec("SELECT 1 FROM answers LIMIT 1", None).is_ok() {
            self.ready.set(true);
        }
        Ok(self.ready.get())
    }

    /// Every kept event of `message_uuid` with its number, in order; `None` when the object
    /// keeps none. Numbers run on within a batch and may jump between batches (an
    /// interrupted answer's `end`).
    fn stored_events(
        &self,
        message_uuid: &str,
    ) -> worker::Result<Option<Vec<(usize, AnswerEvent)>>> {
        if !self.has_answers()? {
            return Ok(None);
        }
        let mut events = Vec::new();
        let mut any = false;
        for row in self
            .sql
            .exec(
                "SELECT first, batch FROM events WHERE message_uuid = ? ORDER BY first",
                vec![message_uuid.into()],
            )?
            .raw()
        {
            any = true;
            let mut columns = row?.into_iter();
            let first = match columns.next() {
                Some(SqlStorageValue::Integer(n)) => n as usize,
                Some(SqlStorageValue::Float(n)) => n as usize,
                _ => events.len(),
            };
            if let Some(SqlStorageValue::String(batch)) = columns.next() {
                let parsed: Vec<Value> = serde_json::from_str(&batch).unwrap_or_default();
                let batch = parsed.iter().filter_map(|pair| {
                    AnswerEvent::from_parts(pair.get(0)?.as_str()?, pair.get(1)?)
                });
                events.extend(batch.enumerate().map(|(i, e)| (first + i, e)));
            }
        }
        Ok(any.then_some(events))
    }

    /// A reader of `message_uuid`: what was produced after event `after` (or, in plain mode,
    /// after `offset` characters of text), then what follows live until the end. `None` when
    /// the object keeps nothing of that answer.
    pub fn follow(
        &self,
        message_uuid: &str,
        encoder: Encoder,
        after: Option<usize>,
        offset: usize,
        citations: bool,
    ) -> ApiResult<Option<Followed>> {
        let live = self
            .live
            .borrow()
            .clone()
            .filter(|l| l.message_uuid == message_uuid);
        let stored = match &live {
            Some(_) => None,
            None => match self.stored_events(message_uuid)? {
                Some(events) => Some(events),
                None => return Ok(None),
            },
        };
        let last = match (&live, &stored) {
            (Some(live), _) => live
                .ended
                .get()
                .then(|| live.events.borrow().len().checked_sub(1))
                .flatten(),
            (None, Some(events)) => events
                .last()
                .filter(|(_, e)| matches!(e, AnswerEvent::End { .. }))
                .map(|(seq, _)| *seq),
            (None, None) => None,
        };
        if after.is_some_and(|after| last.is_some_and(|last| after >= last)) {
            return Ok(Some(Followed::Over));
        }
        let (sink, readable) = StreamSink::new().map_err(ApiError::internal)?;
        let mut reader = Reader::new(sink, encoder, offset);
        reader.after = after;
        reader.citations = citations;
        if let Some(live) = live {
            live.attach(reader);
        } else if let Some(events) = stored {
            reader.replay(events.iter().map(|(seq, e)| (*seq, e)));
            reader.close();
        }
        Ok(Some(Followed::Stream(readable)))
    }

    /// Asks the answer `message_uuid` to stop; `Some(false)` when it has ended, `None` when
    /// this object is not producing it at all. Returns once its message is stored.
    pub async fn stop(&self, message_uuid: &str) -> Option<bool> {
        let live = self
            .live
            .borrow()
            .clone()
            .filter(|l| l.message_uuid == message_uuid)?;
        // Asked to stop already: the first stop ends it, and any other finds it ending.
        if live.ended.get() || live.stop_requested() {
            return Some(false);
        }
        live.request_stop();
        // The producer ends within one event of the request; storing takes a D1 write.
        for _ in 0..400 {
            if live.settled.get() {
                break;
            }
            worker::Delay::from(std::time::Duration::from_millis(25)).await;
        }
        Some(true)
    }
}

/// What a reader coming back to a kept answer gets.
pub enum Followed {
    Stream(ReadableStream),
    /// Nothing more: the answer has ended and the reader has its last event already.
    Over,
}

/// One answer being produced: its events so far, who reads them, whether it was asked to stop.
pub struct LiveAnswer {
    pub message_uuid: String,
    started_ms: i64,
    /// Its row in `answers` is written (it runs; the last `KEPT_ANSWERS` are kept).
    recorded: Cell<bool>,
    sql: SqlStorage,
    events: RefCell<Vec<AnswerEvent>>,
    /// How many of `events` are in storage.
    stored: Cell<usize>,
    flushed_ms: Cell<i64>,
    readers: RefCell<Vec<Reader>>,
    stop: Flag,
    /// The last event was sent and the readers' streams closed.
    ended: Cell<bool>,
    /// The message is stored: the answer is over.
    settled: Cell<bool>,
    /// Its `streaming` message record is written (in D1).
    listed: Flag,
}

impl LiveAnswer {
    /// Writes the answer's row (running) and forgets answers beyond the last `KEPT_ANSWERS`.
    fn record(&self) {
        if self.recorded.replace(true) {
            return;
        }
        let written = self.sql.exec(SCHEMA, None).and_then(|_| {
            self.sql.exec(
                "INSERT OR REPLACE INTO answers (message_uuid, running, started_ms) \
                 VALUES (?, 1, ?)",
                vec![self.message_uuid.as_str().into(), self.started_ms.into()],
            )?;
            self.sql.exec(
                "DELETE FROM answers WHERE message_uuid NOT IN \
                 (SELECT message_uuid FROM answers ORDER BY started_ms DESC LIMIT ?)",
                vec![KEPT_ANSWERS.into()],
            )?;
            self.sql.exec(
                "DELETE FROM events WHERE message_uuid NOT IN (SELECT message_uuid FROM answers)",
                None,
            )
        });
        if let Err(err) = written {
            self.recorded.set(false);
            log::background_failure(
                "recording an answer",
                &self.message_uuid,
                &ApiError::internal(err.to_string()),
            );
        }
    }

    /// The next event: to every reader at once (none of them can hold the answer back), and
    /// to storage with the next batch.
    pub fn push(self: &Rc<Self>, event: AnswerEvent) {
        let seq = {
            let mut events = self.events.borrow_mut();
            events.push(event);
            events.len() - 1
        };
        {
            let events = self.events.borrow();
            let mut readers = self.readers.borrow_mut();
            readers.retain(|r| !r.gone.get());
            for reader in readers.iter() {
                reader.write(reader.render(seq, &events[seq]));
            }
        }
        if seq == 1 && !self.recorded.get() {
            // After the first piece has left: a timer lets the runtime send it first.
            let live = Rc::clone(self);
            spawn_local(async move {
                worker::Delay::from(std::time::Duration::from_millis(0)).await;
                live.record();
            });
        }
        let waiting = seq + 1 - self.stored.get();
        if waiting >= FLUSH_EVENTS || time::now_ms() - self.flushed_ms.get() >= FLUSH_MS {
            self.flush();
        }
    }

    fn flush(&self) {
        self.record();
        let events = self.events.borrow();
        let from = self.stored.get();
        if from >= events.len() {
            return;
        }
        match write_batch(&self.sql, &self.message_uuid, from, &events[from..]) {
            Ok(()) => {
                self.stored.set(events.len());
                self.flushed_ms.set(time::now_ms());
            }
            // Kept in memory and tried again with the next batch.
            Err(err) => log::background_failure(
                "keeping an answer's events",
                &self.message_uuid,
                &ApiError::internal(err.to_string()),
            ),
        }
    }

    fn attach(&self, reader: Reader) {
        reader.replay(self.events.borrow().iter().enumerate());
        if self.ended.get() {
            reader.close();
        } else {
            self.readers.borrow_mut().push(reader);
        }
    }

    /// The last event was sent: everything goes to storage and the readers' streams end.
    pub fn end(&self) {
        self.flush();
        self.ended.set(true);
        for reader in self.readers.borrow_mut().drain(..) {
            reader.close();
        }
    }

    pub fn mark_listed(&self) {
        self.listed.raise();
    }

    /// Whether its `streaming` message record is written.
    pub fn listed(&self) -> bool {
        self.listed.is_raised()
    }

    /// Resolves once its `streaming` message record is written.
    pub fn on_listed(self: &Rc<Self>) -> Raised {
        Raised {
            live: Rc::clone(self),
            flag: |live| &live.listed,
        }
    }

    /// Whether it has sent anything yet (its `start`, when a slow model is waited for).
    pub fn has_events(&self) -> bool {
        !self.events.borrow().is_empty()
    }

    /// The answer will not be: its model failed before it said anything (`err`, what the
    /// asker is answered). Readers already following it hear that error, as does one coming
    /// before the session is let go, and their streams end; nothing of it is stored.
    pub fn abandon(&self, err: &ApiError) {
        let error = AnswerEvent::Error {
            code: err.code().into(),
            message: err.public_message(),
        };
        self.ended.set(true);
        self.settled.set(true);
        let mut events = self.events.borrow_mut();
        events.push(error);
        let seq = events.len() - 1;
        for reader in self.readers.borrow_mut().drain(..) {
            reader.write(reader.render(seq, &events[seq]));
            reader.close();
        }
    }

    /// The caller's own reader, from the first event.
    pub fn read(&self, sink: StreamSink, encoder: Encoder) {
        self.attach(Reader::new(sink, encoder, 0));
    }

    /// The message is stored (when `stored`; else the record stays running, to be closed as
    /// interrupted): the answer is over.
    pub fn settle(&self, stored: bool) {
        self.record();
        if !stored {
            self.settled.set(true);
            return;
        }
        if let Err(err) = self.sql.exec(
            "UPDATE answers SET running = 0 WHERE message_uuid = ?",
            vec![self.message_uuid.as_str().into()],
        ) {
            log::background_failure(
                "closing an answer's record",
                &self.message_uuid,
                &ApiError::internal(err.to_string()),
            );
        }
        self.settled.set(true);
    }

    fn request_stop(&self) {
        self.stop.raise();
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.is_raised()
    }

    /// Resolves when someone asks the answer to stop.
    pub fn stopped(self: &Rc<Self>) -> Raised {
        Raised {
            live: Rc::clone(self),
            flag: |live| &live.stop,
        }
    }
}

/// Something about an answer that becomes true once and stays so, which its producer can wait
/// for.
#[derive(Default)]
struct Flag {
    raised: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl Flag {
    fn raise(&self) {
        self.raised.set(true);
        for waker in self.wakers.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    fn is_raised(&self) -> bool {
        self.raised.get()
    }
}

/// Resolves once one of an answer's flags is raised.
pub struct Raised {
    live: Rc<LiveAnswer>,
    flag: fn(&LiveAnswer) -> &Flag,
}

impl Future for Raised {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let flag = (self.flag)(&self.live);
        if flag.is_raised() {
            return Poll::Ready(());
        }
        let mut wakers = flag.wakers.borrow_mut();
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

fn interrupted_end(message_uuid: &str, usage: Value, answered: Option<bool>) -> AnswerEvent {
    AnswerEvent::End {
        message_uuid: message_uuid.to_string(),
        finish_reason: "interrupted".into(),
        usage,
        answered,
    }
}

fn write_batch(
    sql: &SqlStorage,
    message_uuid: &str,
    first: usize,
    events: &[AnswerEvent],
) -> worker::Result<()> {
    let batch: Vec<Value> = events
        .iter()
        .map(|e| {
            let (name, data) = e.parts();
            json!([name, data])
        })
        .collect();
    sql.exec(
        "INSERT OR REPLACE INTO events (message_uuid, first, batch) VALUES (?, ?, ?)",
        vec![
            message_uuid.into(),
            (first as i64).into(),
            Value::Array(batch).to_string().into(),
        ],
    )?;
    Ok(())
}

/// An open session event stream, when it ends (Unix ms), and whether a site visitor opened it.
struct Listener {
    reader: Reader,
    until_ms: i64,
    holder: Holder,
}

/// Who opened a session event stream: what must still stand for it to hear more.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Holder {
    /// An account key, by uuid: deleting it ends the stream at the next message.
    Key(String),
    /// A site visitor, on this site (if any): the chatbot must still admit it.
    Visitor(Option<String>),
    #[default]
    Other,
}

impl Holder {
    /// As `/listen` carries it: `key=UUID`, `visitor=1&origin=ORIGIN`, or nothing.
    pub fn query(&self) -> String {
        let encode =
            |v: &str| url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
        match self {
            Holder::Key(uuid) => format!("key={}", encode(uuid)),
            Holder::Visitor(origin) => format!(
                "visitor=1&origin={}",
                encode(origin.as_deref().unwrap_or_default())
            ),
            Holder::Other => String::new(),
        }
    }

    /// Read back from `/listen`'s query.
    pub fn from_query(value: impl Fn(&str) -> String) -> Holder {
        let key = value("key");
        if !key.is_empty() {
            Holder::Key(key)
        } else if value("visitor") == "1" {
            let origin = value("origin");
            Holder::Visitor((!origin.is_empty()).then_some(origin))
        } else {
            Holder::Other
        }
    }
}

/// One reader's stream, in the format it asked for.
struct Reader {
    sink: StreamSink,
    encoder: RefCell<Encoder>,
    /// Characters of text still to skip (plain mode's `offset`).
    skip: Cell<usize>,
    /// The last event the reader already has (`Last-Event-ID`): it may be ahead of what has
    /// been produced when the reader comes back.
    after: Option<usize>,
    /// Whether the reader is shown the answer's sources.
    citations: bool,
    gone: Rc<Cell<bool>>,
}

impl Reader {
    fn new(sink: StreamSink, encoder: Encoder, offset: usize) -> Self {
        let skip = if encoder.format() == WireFormat::Plain {
            offset
        } else {
            0
        };
        Reader {
            sink,
            encoder: RefCell::new(encoder),
            skip: Cell::new(skip),
            after: None,
            citations: true,
            gone: Rc::new(Cell::new(false)),
        }
    }

    fn render(&self, seq: usize, event: &AnswerEvent) -> String {
        let seen = self.after.is_some_and(|after| seq <= after);
        if seen || (!self.citations && matches!(event, AnswerEvent::Citations(_))) {
            return String::new();
        }
        let text = self.encoder.borrow_mut().encode_at(seq, event);
        let skip = self.skip.get();
        if skip == 0 || !matches!(event, AnswerEvent::Delta(_)) {
            return text;
        }
        let count = text.chars().count();
        if count <= skip {
            self.skip.set(skip - count);
            return String::new();
        }
        self.skip.set(0);
        text.chars().skip(skip).collect()
    }

    /// The events after the reader's `after` (all without it), in one write.
    fn replay<'a>(&self, events: impl Iterator<Item = (usize, &'a AnswerEvent)>) {
        let first = self.after.map_or(0, |a| a + 1);
        let text: String = events
            .filter(|(seq, _)| *seq >= first)
            .map(|(seq, e)| self.render(seq, e))
            .collect();
        self.write(text);
    }

    fn write(&self, text: String) {
        if text.is_empty() {
            return;
        }
        let written = self.sink.queue(&text);
        let gone = Rc::clone(&self.gone);
        spawn_local(async move {
            if written.await.is_err() {
                gone.set(true);
            }
        });
    }

    fn close(&self) {
        let closed = self.sink.close_later();
        spawn_local(async move {
            let _ = closed.await;
        });
    }
}

/// The session's object.
fn stub(env: &Env, session_uuid: &str) -> ApiResult<worker::Stub> {
    Ok(env
        .durable_object(bindings::CHAT_SESSION)?
        .id_from_name(session_uuid)?
        .get_stub()?)
}

/// Hands a message request to its session's object, which runs the turn. The body goes read
/// whole (within the JSON limit): the object may answer before reading it (a refusal), and a
/// body left unread between the two would break the caller's connection.
pub async fn forward(
    env: &Env,
    session_uuid: &str,
    mut req: Request,
) -> ApiResult<worker::Response> {
    let body = read_json_body(&mut req).await?;
    forward_read(env, session_uuid, &req, &body, None).await
}

/// A request body as `forward` sends it on: read whole, within the JSON limit.
pub async fn read_json_body(req: &mut Request) -> ApiResult<Vec<u8>> {
    use crate::app::http::{read_body_capped, MAX_JSON_BODY_BYTES};
    read_body_capped(req, MAX_JSON_BODY_BYTES).await
}

/// The header through which the Worker tells a session's object that the turn it forwards
/// starts that session (`new_session_uuid`). Only the Worker sets it: a caller's own is
/// dropped on the way.
pub const NEW_SESSION_HEADER: &str = "X-Edgechat-New-Session";

/// `forward` of a request whose body was read already; with `new_session`, the turn creates
/// the session the object is named by.
pub async fn forward_read(
    env: &Env,
    session_uuid: &str,
    req: &Request,
    body: &[u8],
    new_session: Option<&str>,
) -> ApiResult<worker::Response> {
    let headers = req.headers().clone();
    headers.delete(NEW_SESSION_HEADER)?;
    if let Some(uuid) = new_session {
        headers.set(NEW_SESSION_HEADER, uuid)?;
    }
    let mut init = worker::RequestInit::new();
    init.with_method(req.method()).with_headers(headers);
    if !body.is_empty() {
        init.with_body(Some(js_sys::Uint8Array::from(body).into()));
    }
    let forwarded = Request::new_with_init(req.url()?.as_str(), &init)?;
    Ok(stub(env, session_uuid)?
        .fetch_with_request(forwarded)
        .await?)
}

/// Starts the object of a session being created, beside the session's own write, so that
/// the first message does not wait for it: measured alternating with a build without it, a
/// new session's first answer reached its first byte 4.2 and 5.6 ms sooner (of about 31 ms).
/// The creation's response does not wait for it, but locally the object starts on the
/// Worker's own thread and creation took 5 ms longer (12.2 to 17.3 ms); deployed, the object
/// starts elsewhere. A failure only costs that head start.
pub fn start_ahead(ctx: &worker::Context, env: &Env, session_uuid: &str) {
    ask_later(
        ctx,
        env,
        session_uuid,
        "/start",
        "starting a session's object",
    );
}

/// `ask` after the response; a failure is logged as `what`.
fn ask_later(
    ctx: &worker::Context,
    env: &Env,
    session_uuid: &str,
    path: &'static str,
    what: &'static str,
) {
    let env = env.clone();
    let session_uuid = session_uuid.to_string();
    ctx.wait_until(async move {
        if let Err(err) = ask(&env, &session_uuid, path).await {
            log::background_failure(what, &session_uuid, &err);
        }
    });
}

/// Tells a deleted session's object to forget it (`Room::forget`), after the response. A
/// failure is logged: the session's records are gone already.
pub fn forget(ctx: &worker::Context, env: &Env, session_uuid: &str) {
    ask_later(
        ctx,
        env,
        session_uuid,
        "/forget",
        "forgetting a deleted session",
    );
}

/// In a session's object: the session a forwarded turn is to create, if any.
pub fn new_session_uuid(req: &Request) -> Option<String> {
    req.headers().get(NEW_SESSION_HEADER).ok().flatten()
}

/// Asks the session's object for something of its own (`/follow`, `/stop`, `/listen`,
/// `/forget`), by internal path.
pub async fn ask(
    env: &Env,
    session_uuid: &str,
    path_and_query: &str,
) -> ApiResult<worker::Response> {
    let url = format!("https://chat-session{path_and_query}");
    Ok(stub(env, session_uuid)?.fetch_with_str(&url).await?)
}

/// What `/notify` tells a session's object: a stored live-chat message, in the visitor's
/// view, and whom the chatbot admits now (its visibility and allowed origins; `None` when it
/// is gone), so that a visitor no longer admitted is not told.
#[derive(Serialize, Deserialize)]
pub struct Told {
    pub message: Value,
    pub admission: Option<(Visibility, Vec<String>)>,
}

/// Tells the session's open event streams that `told.message` was stored; a stream whose
/// holder no longer stands is closed instead (`Room::announce_message`). A failure is
/// logged: the message is stored either way, and a reader catches up from the session's
/// messages.
pub async fn notify(env: Env, session_uuid: String, told: Told) {
    let result = async {
        let body = serde_json::to_value(&told)?;
        let mut init = worker::RequestInit::new();
        init.with_method(worker::Method::Post)
            .with_body(Some(wasm_bindgen::JsValue::from_str(&body.to_string())));
        let req = Request::new_with_init("https://chat-session/notify", &init)?;
        stub(&env, &session_uuid)?.fetch_with_request(req).await?;
        Ok::<_, ApiError>(())
    }
    .await;
    if let Err(err) = result {
        log::background_failure(
            "telling a session of a live-chat message",
            &session_uuid,
            &err,
        );
    }
}
