//! Property tests: every table code, and arbitrary codes, messages, data and delays, survive
//! encode → JSON bytes → decode in both wire profiles.

use std::time::Duration;

use a2a_error::{
    A2aError, ErrorObject, ErrorView, FromErrorObject, ReceivedError, RemoteError, RetryHint,
    StandardError, WireProfile, code,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn bytes(err: &dyn A2aError, profile: WireProfile) -> Vec<u8> {
    let mut out = Vec::new();
    err.write_error_object(profile, &mut out);
    out
}

fn decode(bytes: &[u8]) -> ErrorObject {
    serde_json::from_slice(bytes).expect("encoder output is a valid error object")
}

/// `E` read from a view of `bytes`, the client mirror's fast path.
fn from_view<E: FromErrorObject>(bytes: &[u8]) -> Option<E> {
    let text = std::str::from_utf8(bytes).expect("JSON is UTF-8");
    E::from_received(&ErrorView::parse(text).expect("the object parses as a view"))
}

/// A view of `text` reads what the object read from it reads, for every key in `keys`.
fn view_agrees(text: &str, keys: &[&str]) -> Result<(), TestCaseError> {
    let obj: ErrorObject = serde_json::from_str(text).unwrap();
    let view = ErrorView::parse(text).unwrap();
    prop_assert_eq!(view.code(), obj.code);
    prop_assert_eq!(view.message(), obj.message.as_str());
    prop_assert_eq!(ReceivedError::reason(&view), obj.reason());
    prop_assert_eq!(ReceivedError::retry_after(&view), obj.retry_after());
    for key in keys {
        prop_assert_eq!(
            view.data_value(key).read::<Value>(),
            obj.data_field::<Value>(key),
            "key {}",
            key
        );
        prop_assert_eq!(
            view.data_value(key).read::<u32>(),
            obj.data_field::<u32>(key),
            "key {}",
            key
        );
    }
    prop_assert_eq!(&*view.to_object(), &obj);
    prop_assert_eq!(
        StandardError::from_received(&view),
        StandardError::from_error_object(&obj)
    );
    Ok(())
}

fn profile() -> impl Strategy<Value = WireProfile> {
    prop_oneof![Just(WireProfile::A2a), Just(WireProfile::Legacy)]
}

fn any_code() -> impl Strategy<Value = i32> {
    prop_oneof![
        prop::sample::select(code::TABLE.iter().map(|row| row.code).collect::<Vec<_>>()),
        Just(code::VERSION_NOT_SUPPORTED),
        -32099..=-32000i32,
        any::<i32>(),
    ]
}

fn reason() -> impl Strategy<Value = String> {
    "[A-Z][A-Z0-9_]{0,20}[A-Z0-9]"
}

fn delay() -> impl Strategy<Value = Duration> {
    (0u64..1_000_000, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Nested {
    name: String,
    weights: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error, a2a_error::A2aError)]
enum Probe {
    #[error("typed")]
    #[a2a(code = -32030, message = "Typed {text}")]
    Typed {
        #[a2a(data)]
        text: String,
        #[a2a(data)]
        number: i64,
        #[a2a(data)]
        flag: bool,
        #[a2a(data)]
        maybe: Option<u32>,
        #[a2a(data)]
        list: Vec<String>,
        #[a2a(data)]
        nested: Nested,
        #[a2a(data)]
        float: f64,
    },
    #[error("delayed")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Delayed {
        #[a2a(retry_after)]
        delay: Duration,
    },
}

fn probe_typed() -> impl Strategy<Value = Probe> {
    (
        any::<String>(),
        any::<i64>(),
        any::<bool>(),
        any::<Option<u32>>(),
        prop::collection::vec(any::<String>(), 0..4),
        (any::<String>(), prop::collection::vec(any::<i64>(), 0..4)),
        any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()),
    )
        .prop_map(
            |(text, number, flag, maybe, list, (name, weights), float)| Probe::Typed {
                text,
                number,
                flag,
                maybe,
                list,
                nested: Nested { name, weights },
                float,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_table_code_round_trips(index in 0..code::TABLE.len(), profile in profile()) {
        let row = &code::TABLE[index];
        let err = StandardError::from_code(row.code).unwrap();
        let obj = decode(&bytes(&err, profile));
        prop_assert_eq!(obj.code, row.code);
        prop_assert_eq!(obj.reason(), Some(row.reason));
        prop_assert_eq!(StandardError::from_error_object(&obj), Some(err.clone()));
        prop_assert_eq!(from_view::<StandardError>(&bytes(&err, profile)), Some(err));
    }

    #[test]
    fn arbitrary_remote_errors_round_trip(
        code in any_code(),
        message in any::<String>(),
        reason in reason(),
        domain in "[a-z0-9.-]{1,30}",
        metadata in prop::collection::btree_map("[a-zA-Z][a-zA-Z0-9]{0,10}", any::<String>(), 0..5),
        delay in prop::option::of(delay()),
        profile in profile(),
    ) {
        let metadata: std::collections::BTreeMap<_, _> = metadata
            .into_iter()
            .filter(|(k, _)| !["reason", "domain", "retryable", "retryAfter"].contains(&k.as_str()))
            .collect();
        let mut err = RemoteError::new(code, message.clone())
            .with_reason(reason.clone())
            .with_domain(domain.clone());
        for (key, value) in &metadata {
            err = err.with_metadata(key.clone(), value.clone());
        }
        if let Some(delay) = delay {
            err = err.with_retry_delay(delay);
        }
        let first = bytes(&err, profile);
        let obj = decode(&first);
        let back = RemoteError::from_object(obj.clone());
        prop_assert_eq!(back.code(), code);
        prop_assert_eq!(back.message(), message.as_str());
        prop_assert_eq!(back.received_reason(), Some(reason.as_str()));
        prop_assert_eq!(back.received_domain(), Some(domain.as_str()));
        for (key, value) in &metadata {
            prop_assert_eq!(obj.data_field::<String>(key), Some(value.clone()));
        }
        let keys: Vec<&str> = metadata.keys().map(String::as_str).chain(["absent", "reason"]).collect();
        view_agrees(std::str::from_utf8(&first).unwrap(), &keys)?;
        prop_assert_eq!(back.metadata().len(), metadata.len());
        match (delay, profile) {
            (Some(d), WireProfile::A2a) => prop_assert_eq!(back.retry_after(), Some(d)),
            (Some(d), WireProfile::Legacy) => {
                let got = back.retry_after().unwrap();
                prop_assert!(got.abs_diff(d) < Duration::from_micros(1), "{got:?} vs {d:?}");
            }
            (None, _) => prop_assert_eq!(back.retry_after(), None),
        }
        // Passing a decoded error on sends the peer's object unchanged, in either profile.
        for again in [WireProfile::A2a, WireProfile::Legacy] {
            let second: Value = serde_json::from_slice(&bytes(&back, again)).unwrap();
            prop_assert_eq!(&second, &serde_json::from_slice::<Value>(&first).unwrap());
        }
    }

    #[test]
    fn typed_data_round_trips(probe in probe_typed(), profile in profile()) {
        let obj = decode(&bytes(&probe, profile));
        prop_assert_eq!(Probe::from_error_object(&obj), Some(probe.clone()));
        prop_assert_eq!(from_view::<Probe>(&bytes(&probe, profile)), Some(probe.clone()));
        let model = probe.to_error_object_with(profile);
        prop_assert_eq!(&model, &obj);
    }

    #[test]
    fn retry_delays_round_trip(delay in delay()) {
        let probe = Probe::Delayed { delay };
        prop_assert_eq!(probe.retry_hint(), RetryHint::After(delay));
        let obj = decode(&bytes(&probe, WireProfile::A2a));
        prop_assert_eq!(obj.retry_after(), Some(delay));
        prop_assert_eq!(Probe::from_error_object(&obj), Some(probe.clone()));
        prop_assert_eq!(from_view::<Probe>(&bytes(&probe, WireProfile::A2a)), Some(probe));
    }

    #[test]
    fn any_json_data_decodes_without_panic_and_is_kept(
        code in any::<i32>(),
        data in arb_json(),
    ) {
        let wire = serde_json::json!({"code": code, "message": "m", "data": data});
        let obj: ErrorObject = serde_json::from_value(wire.clone()).unwrap();
        let _ = (obj.reason(), obj.domain(), obj.retry_after(), obj.metadata(), obj.retryable());
        let _ = StandardError::from_error_object(&obj);
        let remote = RemoteError::from_object(obj);
        let text = serde_json::to_string(&wire).unwrap();
        prop_assert_eq!(serde_json::to_value(remote.to_error_object()).unwrap(), wire);
        // The view reads any data as the object does.
        view_agrees(&text, &["taskId", "a", "reason", "retryAfter", "metadata"])?;
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z@./ ]{0,12}".prop_map(Value::from),
        // Escapes: the view unescapes what it does not borrow.
        "[a-z0-9\"\\\\/\u{e9}\n]{0,6}".prop_map(Value::from),
        Just(Value::from("type.googleapis.com/google.rpc.RetryInfo")),
        Just(Value::from("type.googleapis.com/google.rpc.ErrorInfo")),
        Just(Value::from("google.rpc.ErrorInfo")),
        Just(Value::from("1.5s")),
        Just(Value::from("retryDelay")),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("@type".to_owned()),
                    Just("reason".to_owned()),
                    Just("metadata".to_owned()),
                    Just("retryDelay".to_owned()),
                    Just("retryAfter".to_owned()),
                    Just("taskId".to_owned()),
                    "[a-z]{1,6}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
