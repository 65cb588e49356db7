//! Reads the typed configuration (`edgechat_core::config::Config`) from the Worker's
//! environment: the only place that looks up secrets and variables by name.

use edgechat_core::config::{bindings, Config, Problem};
use std::cell::RefCell;
use worker::Env;

thread_local! {
    /// The problems last reported by this isolate, so a misconfiguration is logged once when it
    /// is first seen (and again if it changes), not on every request.
    static REPORTED: RefCell<Option<Vec<Problem>>> = const { RefCell::new(None) };
}

/// A secret or variable of that name: both are plain strings on the environment, so one
/// property read finds either (the typed getters build an error string for every name that
/// is unset, and most are).
fn lookup(env: &Env, name: &str) -> Option<String> {
    js_sys::Reflect::get(env, &wasm_bindgen::JsValue::from_str(name))
        .ok()?
        .as_string()
}

pub fn read(env: &Env) -> Config {
    let workers_ai = env.ai(bindings::AI).is_ok();
    let (config, problems) = Config::parse(|name| lookup(env, name), workers_ai);
    let changed = REPORTED.with(|seen| {
        let mut seen = seen.borrow_mut();
        if seen.as_ref() == Some(&problems) {
            false
        } else {
            *seen = Some(problems.clone());
            true
        }
    });
    if changed && !problems.is_empty() {
        super::log::config_problems(&problems);
    }
    config
}
