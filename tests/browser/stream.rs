//! `platform::stream`: the sink an answer is written into, against a real `TransformStream`
//! read the way a client reads a response body.

use super::support::{read_as_body, sleep, try_read_as_body, Reader};
use edgechat::platform::stream::{Closed, StreamSink};
use futures::future::{join, select, Either};
use futures::pin_mut;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
async fn pieces_arrive_one_by_one_in_order() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let pieces = ["Hello", ", ", "wörld", " 🙂", "\n"];
    for piece in pieces {
        // Each piece is its own chunk: nothing merged, nothing split, nothing held back.
        let (written, read) = join(sink.write_str(piece), reader.next_text()).await;
        assert_eq!(written, Ok(()));
        assert_eq!(read.as_deref(), Some(piece));
    }
}

#[wasm_bindgen_test]
async fn a_write_waits_for_the_reader_instead_of_buffering() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let write = sink.write_str("first");
    pin_mut!(write);
    // Nobody has read yet: the write is still pending after 50 ms, so the producer cannot
    // run ahead of a slow client and pile the answer up in memory.
    match select(write.as_mut(), Box::pin(sleep(50))).await {
        Either::Left(_) => panic!("the write finished before anyone read the piece"),
        Either::Right(_) => {}
    }
    assert_eq!(reader.next_text().await.as_deref(), Some("first"));
    assert_eq!(write.await, Ok(()));
}

#[wasm_bindgen_test]
async fn the_reader_sees_each_piece_before_the_next_is_written() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let log = Rc::new(RefCell::new(Vec::<String>::new()));
    let producer = {
        let log = log.clone();
        async move {
            for i in 0..5 {
                log.borrow_mut().push(format!("write {i}"));
                sink.write_str(&format!("piece {i}")).await.unwrap();
            }
            sink.close().await;
        }
    };
    let consumer = {
        let log = log.clone();
        async move {
            while let Some(text) = reader.next_text().await {
                log.borrow_mut()
                    .push(format!("read {}", &text["piece ".len()..]));
            }
        }
    };
    join(producer, consumer).await;
    let log = log.borrow();
    for i in 0..5 {
        let read = log.iter().position(|e| *e == format!("read {i}")).unwrap();
        if let Some(next) = log.iter().position(|e| *e == format!("write {}", i + 1)) {
            assert!(
                read < next,
                "piece {i} was not read before piece {} was written: {log:?}",
                i + 1
            );
        }
    }
    assert_eq!(log.iter().filter(|e| e.starts_with("read")).count(), 5);
}

#[wasm_bindgen_test]
async fn close_ends_the_readers_stream() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let producer = async {
        sink.write_str("last words").await.unwrap();
        sink.close().await;
    };
    let consumer = async {
        let mut chunks = Vec::new();
        while let Some(text) = reader.next_text().await {
            chunks.push(text);
        }
        chunks
    };
    let ((), chunks) = join(producer, consumer).await;
    assert_eq!(chunks, ["last words"]);
    // Done for good, and writing after the end fails.
    assert_eq!(reader.next().await, None);
    assert_eq!(sink.write_str("more").await, Err(Closed));
}

#[wasm_bindgen_test]
async fn abort_breaks_the_body_off_instead_of_ending_it() {
    let (sink, readable) = StreamSink::new().unwrap();
    let producer = async {
        sink.write_str("the first half of ").await.unwrap();
        sink.abort().await;
    };
    let (_, read) = join(producer, try_read_as_body(&readable)).await;
    // A client reading it sees a failed transfer, never the first half as the whole.
    assert!(read.is_err(), "{read:?}");
}

#[wasm_bindgen_test]
async fn the_readable_side_serves_as_a_response_body() {
    let (sink, readable) = StreamSink::new().unwrap();
    let producer = async {
        for piece in ["data: one\n\n", "data: two\n\n"] {
            sink.write_str(piece).await.unwrap();
        }
        sink.close().await;
    };
    let (_, body) = join(producer, read_as_body(&readable)).await;
    assert_eq!(body, "data: one\n\ndata: two\n\n");
}

#[wasm_bindgen_test]
async fn a_cancelled_reader_makes_the_next_write_fail_with_closed() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let (written, _) = join(sink.write_str("partial an"), reader.next()).await;
    assert_eq!(written, Ok(()));
    // The client leaves mid-answer: the producer learns it at its next write, which is how
    // the answer comes to be stored as `aborted`.
    reader.cancel().await;
    assert_eq!(sink.write_str("swer").await, Err(Closed));
    assert_eq!(sink.write(&[0xff]).await, Err(Closed));
    // Closing what the client abandoned is quiet, and does not hang.
    sink.close().await;
}

#[wasm_bindgen_test]
async fn a_write_waiting_for_the_reader_fails_when_the_reader_leaves() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    let (written, cancelled) = join(sink.write_str("never read"), async {
        sleep(20).await;
        reader.cancel().await;
    })
    .await;
    let () = cancelled;
    assert_eq!(written, Err(Closed));
}

#[wasm_bindgen_test]
async fn empty_writes_are_skipped_and_bytes_pass_unchanged() {
    let (sink, readable) = StreamSink::new().unwrap();
    let reader = Reader::new(&readable);
    // With nobody reading, a real write would wait; an empty one returns at once.
    assert_eq!(sink.write(&[]).await, Ok(()));
    assert_eq!(sink.write_str("").await, Ok(()));
    let bytes: Vec<u8> = (0..=255).collect();
    let (written, read) = join(sink.write(&bytes), reader.next()).await;
    assert_eq!(written, Ok(()));
    assert_eq!(read, Some(bytes));
    // An empty write sent no empty chunk: the next chunk the reader sees is the next piece.
    let (_, read) = join(sink.write_str("x"), reader.next_text()).await;
    assert_eq!(read.as_deref(), Some("x"));
}

#[wasm_bindgen_test]
async fn each_sink_has_its_own_stream() {
    let (a, readable_a) = StreamSink::new().unwrap();
    let (b, readable_b) = StreamSink::new().unwrap();
    let (reader_a, reader_b) = (Reader::new(&readable_a), Reader::new(&readable_b));
    reader_b.cancel().await;
    assert_eq!(b.write_str("to b").await, Err(Closed));
    let (written, read) = join(a.write_str("to a"), reader_a.next_text()).await;
    assert_eq!(written, Ok(()));
    assert_eq!(read.as_deref(), Some("to a"));
}
