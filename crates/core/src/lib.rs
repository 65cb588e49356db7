//! edgechat's pure core: everything the service decides without touching the Worker runtime.
//!
//! The Worker shell (the root crate) reads requests, calls D1, R2, Durable Objects and outside
//! parties, and hands what it read to the functions here. This crate does not depend on
//! `worker`, `wasm-bindgen` or any JS binding, so the compiler keeps it pure and every part of it
//! is tested natively.

pub mod api;
pub mod chat;
pub mod config;
pub mod domain;
pub mod idn;
pub mod insights;
pub mod knowledge;
pub mod merge_patch;
pub mod string_enum;
pub mod time;
