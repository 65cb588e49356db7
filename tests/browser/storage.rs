//! `storage::Arg`: the values bound into D1 statements, as the JS values D1 receives.

use edgechat::storage::Arg;
use js_sys::Array;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

#[wasm_bindgen_test]
fn integers_keep_their_value_up_to_two_to_the_53() {
    for i in [0, 1, -1, 1_700_000_000_000, (1 << 53) - 1, -(1 << 53) + 1] {
        let value = JsValue::from(&Arg::Int(i));
        assert_eq!(value.as_f64(), Some(i as f64));
        assert!(js_sys::Number::is_safe_integer(&value), "{i}");
    }
}

#[wasm_bindgen_test]
fn text_and_null_bind_as_themselves() {
    for s in ["", "'; DROP TABLE chatbots; --", "naïve 🙂 \u{0}"] {
        assert_eq!(JsValue::from(&Arg::Text(s)).as_string().as_deref(), Some(s));
    }
    let null = JsValue::from(&Arg::Null);
    assert!(
        null.is_null() && !null.is_undefined(),
        "SQL NULL is JS null, not undefined"
    );
    assert!(JsValue::from(&Arg::Real(-0.25)).as_f64() == Some(-0.25));
}

#[wasm_bindgen_test]
fn a_statements_arguments_keep_their_order_and_kinds() {
    let args = [Arg::Text("a"), Arg::Int(2), Arg::Null, Arg::Real(1.5)];
    let values: Array = args.iter().map(JsValue::from).collect();
    assert_eq!(values.length(), 4);
    assert_eq!(values.get(0).as_string().as_deref(), Some("a"));
    assert_eq!(values.get(1).as_f64(), Some(2.0));
    assert!(values.get(2).is_null());
    assert_eq!(values.get(3).as_f64(), Some(1.5));
}
