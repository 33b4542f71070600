//! Property tests: whatever a peer sends, the request parser and the reply decoders return a
//! value or a typed error, and nothing downstream of them (retry classification, delays, the
//! policy's next wait, re-encoding) panics. Durations go to `u64::MAX` seconds and `u32::MAX`
//! nanos on purpose.
//!
//! The quick run is part of `cargo test`. The long run (thousands of cases a second for
//! minutes) is opt-in:
//! `A2A_SOAK_SECS=300 cargo test -p a2a-error-runtime --all-features --release -- --ignored hostile_input`,
//! or with the chaos run, as docs/testing.md says: `A2A_SOAK_SECS=300 cargo test --workspace --release -- --ignored soak`.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::peer_input::decode_everything;
use crate::wire::jsonrpc;

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A duration as peers may write it: protobuf string or object form, legacy seconds.
fn any_delay() -> impl Strategy<Value = Value> {
    prop_oneof![
        (any::<u64>(), any::<u32>())
            .prop_map(|(s, n)| json!({"seconds": s.to_string(), "nanos": n})),
        (any::<u64>(), any::<u32>()).prop_map(|(s, n)| json!({"seconds": s, "nanos": n})),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| json!(format!("{s}.{n:09}s"))),
        any::<u64>().prop_map(|s| json!(format!("{s}s"))),
        any::<f64>().prop_map(|f| json!(f)),
        any_json(),
    ]
}

/// An error reply shaped like the real thing, with hostile details.
fn any_error_reply() -> impl Strategy<Value = Value> {
    (
        any::<i32>(),
        prop_oneof![Just(json!(null)), any::<u64>().prop_map(Value::from), any_json()],
        any_delay(),
        any_json(),
        any::<bool>(),
    )
        .prop_map(|(code, id, delay, metadata, legacy)| {
            let data = if legacy {
                json!({"retryable": metadata.is_object(), "retryAfter": delay, "reason": "R"})
            } else {
                json!([
                    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "R",
                     "domain": "d", "metadata": metadata},
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
                ])
            };
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "m", "data": data}})
        })
}

fn check_bytes(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    crate::peer_input::peer_bytes(&bytes);
    Ok(())
}

fn check_json(value: Value) -> Result<(), TestCaseError> {
    decode_everything(&serde_json::to_vec(&value).unwrap());
    // The same value as a request, alone and in a batch.
    let request = json!({"jsonrpc": "2.0", "id": value, "method": "m", "params": [value]});
    let _ = jsonrpc::parse(&serde_json::to_vec(&request).unwrap(), 100);
    Ok(())
}

fn check_reply(value: Value) -> Result<(), TestCaseError> {
    let body = serde_json::to_vec(&value).unwrap();
    decode_everything(&body);
    // Also as a REST Status body.
    let status = json!({"error": {"code": value["error"]["code"], "status": "UNAVAILABLE",
        "message": "m", "details": value["error"]["data"]}});
    decode_everything(&serde_json::to_vec(&status).unwrap());
    Ok(())
}

proptest! {
    #![proptest_config(Config::with_cases(256))]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_bytes(bytes)?;
    }

    #[test]
    fn arbitrary_json(value in any_json()) {
        check_json(value)?;
    }

    #[test]
    fn error_replies_with_hostile_durations(value in any_error_reply()) {
        check_reply(value)?;
    }
}

/// Runs `check` on `strategy` for `A2A_SOAK_SECS` seconds (default 120).
fn soak<S: Strategy>(strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let seconds = std::env::var("A2A_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut cases = 0u64;
    while Instant::now() < end {
        let mut runner = TestRunner::new(Config::with_cases(10_000));
        runner.run(&strategy, &check).unwrap();
        cases += 10_000;
    }
    eprintln!("{cases} cases in {seconds} s");
}

#[test]
#[ignore = "long-running; see the module docs"]
fn soak_arbitrary_bytes() {
    soak(prop::collection::vec(any::<u8>(), 0..2048), check_bytes);
}

#[test]
#[ignore = "long-running; see the module docs"]
fn soak_arbitrary_json() {
    soak(any_json(), check_json);
}

#[test]
#[ignore = "long-running; see the module docs"]
fn soak_error_replies() {
    soak(any_error_reply(), check_reply);
}
