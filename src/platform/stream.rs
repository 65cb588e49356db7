//! The pipe an answer streams through: a `TransformStream` whose readable side is the response
//! body and whose writable side the answer is written into as it is produced. A write fails
//! once the client has gone away, which is how the producer learns to stop.

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{ReadableStream, TransformStream, WritableStreamDefaultWriter};

/// The client is gone (or the stream broke): nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

pub struct StreamSink {
    writer: WritableStreamDefaultWriter,
}

impl StreamSink {
    /// A sink and the readable stream to hand to the response.
    pub fn new() -> Result<(StreamSink, ReadableStream), String> {
        let pipe = TransformStream::new().map_err(|e| format!("TransformStream: {e:?}"))?;
        let writer = pipe
            .writable()
            .get_writer()
            .map_err(|e| format!("getWriter: {e:?}"))?;
        Ok((StreamSink { writer }, pipe.readable()))
    }

    pub async fn write(&self, bytes: &[u8]) -> Result<(), Closed> {
        if bytes.is_empty() {
            return Ok(());
        }
        let chunk = Uint8Array::from(bytes);
        JsFuture::from(self.writer.write_with_chunk(chunk.unchecked_ref()))
            .await
            .map(|_| ())
            .map_err(|_| Closed)
    }

    /// Queues `text` at once without waiting for the reader to take it: writes queued this
    /// way keep their order. The returned future says whether it was delivered.
    pub fn queue(&self, text: &str) -> JsFuture {
        let chunk = Uint8Array::from(text.as_bytes());
        JsFuture::from(self.writer.write_with_chunk(chunk.unchecked_ref()))
    }

    /// Ends the body after what is queued, without waiting.
    pub fn close_later(&self) -> JsFuture {
        JsFuture::from(self.writer.close())
    }

    pub async fn write_str(&self, text: &str) -> Result<(), Closed> {
        self.write(text.as_bytes()).await
    }

    /// Ends the body as broken off: the reader sees the transfer fail rather than end, so what
    /// it got is never taken for the whole.
    pub async fn abort(&self) {
        let _ = JsFuture::from(self.writer.abort()).await;
    }

    /// Ends the body. Closing a stream the client already abandoned is not an error.
    pub async fn close(&self) {
        let _ = JsFuture::from(self.writer.close()).await;
    }
}
