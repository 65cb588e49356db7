//! What the browser tests share: requests as the Worker runtime hands them over, environments
//! with plain variables, and a reader for streams.

use js_sys::{Array, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Request};

#[wasm_bindgen(inline_js = r#"
// A browser drops `Origin` and `Content-Length` from any Request it builds (they are forbidden
// request headers), but the Worker runtime hands over requests that carry them. This object
// has the properties the shell reads from an incoming request (method, url, headers, body,
// cf), with real `Headers` and a real `ReadableStream` body that counts how often it is pulled.
export function incoming(method, url, headers, chunks, endlessChunkSize) {
  const h = new Headers();
  for (const [name, value] of headers) h.append(name, value);
  const state = { pulls: 0 };
  let body = null;
  if (chunks !== null) {
    let i = 0;
    body = new ReadableStream({
      pull(controller) {
        state.pulls++;
        if (i < chunks.length) controller.enqueue(chunks[i++]);
        else if (endlessChunkSize > 0) controller.enqueue(new Uint8Array(endlessChunkSize).fill(120));
        else controller.close();
      },
    }, { highWaterMark: 0 });
  }
  return { method, url, headers: h, body, cf: undefined, state };
}
export function pulls(request) { return request.state.pulls; }
export function locked(request) { return request.body !== null && request.body.locked; }
export function get_reader(readable) { return readable.getReader(); }
export async function next_chunk(reader) {
  const { value, done } = await reader.read();
  return done ? null : value;
}
export function cancel_reader(reader) { return reader.cancel("the client went away"); }
export function body_text(readable) { return new Response(readable).text(); }
export function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }
export function page_origin() { return location.origin; }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = incoming)]
    fn js_incoming(
        method: &str,
        url: &str,
        headers: &Array,
        chunks: &JsValue,
        endless_chunk_size: u32,
    ) -> JsValue;
    fn pulls(request: &JsValue) -> u32;
    fn locked(request: &JsValue) -> bool;
    fn get_reader(readable: &JsValue) -> JsValue;
    fn next_chunk(reader: &JsValue) -> js_sys::Promise;
    fn cancel_reader(reader: &JsValue) -> js_sys::Promise;
    fn body_text(readable: &JsValue) -> js_sys::Promise;
    #[wasm_bindgen(js_name = sleep)]
    fn js_sleep(ms: u32) -> js_sys::Promise;
    /// Where the test runner serves this page (and the files of the crate) from: 127.0.0.1.
    pub fn page_origin() -> String;
}

/// The body of an incoming request.
pub enum Body<'a> {
    None,
    /// These chunks, one per read, then the end.
    Chunks(&'a [&'a [u8]]),
    /// These chunks, then chunks of this many bytes for ever.
    Endless(&'a [&'a [u8]], u32),
}

/// An incoming request, and a view of how much of its body was read.
pub struct Incoming {
    pub req: Request,
    raw: JsValue,
}

impl Incoming {
    pub fn new(method: &str, url: &str, headers: &[(&str, &str)], body: Body) -> Incoming {
        let pairs = Array::new();
        for (name, value) in headers {
            pairs.push(&Array::of2(&(*name).into(), &(*value).into()));
        }
        let (chunks, endless) = match body {
            Body::None => (JsValue::NULL, 0),
            Body::Chunks(chunks) => (chunk_array(chunks), 0),
            Body::Endless(chunks, size) => (chunk_array(chunks), size),
        };
        let raw = js_incoming(method, url, &pairs, &chunks, endless);
        let req = Request::from(raw.clone().unchecked_into::<web_sys::Request>());
        Incoming { req, raw }
    }

    /// How many chunks the body stream was asked for.
    pub fn pulls(&self) -> u32 {
        pulls(&self.raw)
    }

    /// Whether anything started reading the body.
    pub fn body_locked(&self) -> bool {
        locked(&self.raw)
    }
}

fn chunk_array(chunks: &[&[u8]]) -> JsValue {
    chunks
        .iter()
        .map(|c| JsValue::from(Uint8Array::from(*c)))
        .collect::<Array>()
        .into()
}

/// An environment holding these variables, as `wrangler dev --var` gives them.
pub fn env(vars: &[(&str, &str)]) -> Env {
    let object = Object::new();
    for (name, value) in vars {
        Reflect::set(&object, &(*name).into(), &(*value).into()).unwrap();
    }
    object.unchecked_into()
}

/// A reader on a readable stream.
pub struct Reader(JsValue);

impl Reader {
    pub fn new(readable: &web_sys::ReadableStream) -> Reader {
        Reader(get_reader(readable))
    }

    /// The next chunk as it arrived, or `None` once the stream is done.
    pub async fn next(&self) -> Option<Vec<u8>> {
        let value = JsFuture::from(next_chunk(&self.0)).await.unwrap();
        (!value.is_null()).then(|| value.unchecked_into::<Uint8Array>().to_vec())
    }

    /// The next chunk as text; `None` once the stream is done.
    pub async fn next_text(&self) -> Option<String> {
        self.next()
            .await
            .map(|bytes| String::from_utf8(bytes).unwrap())
    }

    /// What a client leaving does to the stream it was reading.
    pub async fn cancel(&self) {
        JsFuture::from(cancel_reader(&self.0)).await.unwrap();
    }
}

/// The whole stream read as a response body would be, or the failure a client would see.
pub async fn try_read_as_body(readable: &web_sys::ReadableStream) -> Result<String, JsValue> {
    JsFuture::from(body_text(readable))
        .await
        .map(|text| text.as_string().unwrap_or_default())
}

/// The whole stream read as a response body would be.
pub async fn read_as_body(readable: &web_sys::ReadableStream) -> String {
    JsFuture::from(body_text(readable))
        .await
        .unwrap()
        .as_string()
        .unwrap()
}

pub async fn sleep(ms: u32) {
    JsFuture::from(js_sleep(ms)).await.unwrap();
}
