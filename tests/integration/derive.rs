//! The derive end to end: the example enum, defaults, overrides, the client mirror,
//! the kind enum, the catalog, structs, generics and transparent delegation.

use std::time::Duration;

use a2a_error::{
    A2aError, Catalog, Category, ErrorObject, FromErrorObject, HasKind, RemoteError, RetryHint,
    StandardError, WireProfile, code,
};
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "billing.example.com")]
pub enum AgentError {
    #[error("task {task_id} missing in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        shard: u32,
    },

    #[error("LLM provider said {0}")]
    #[a2a(code = -32603, reason = "LLM_UNAVAILABLE", retryable)]
    Llm(String),

    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("bad part {index}")]
    #[a2a(code = -32602, message = "Invalid part {index}")]
    BadPart {
        #[a2a(data)]
        index: u32,
    },

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

fn wire(err: &impl A2aError, profile: WireProfile) -> Value {
    let mut bytes = Vec::new();
    err.write_error_object(profile, &mut bytes);
    serde_json::from_slice(&bytes).expect("the encoder writes JSON")
}

fn object(value: Value) -> ErrorObject {
    serde_json::from_value(value).unwrap()
}

#[test]
fn spec_code_takes_table_values_and_spec_domain() {
    let err = AgentError::TaskNotFound {
        task_id: "t-1".into(),
        shard: 7,
    };
    assert_eq!(err.code(), -32001);
    assert_eq!(err.reason(), "TASK_NOT_FOUND");
    assert_eq!(err.domain(), "a2a-protocol.org");
    assert_eq!(err.public_message(), "Task not found");
    assert_eq!(err.http_status(), 404);
    assert_eq!(err.grpc_status(), "NOT_FOUND");
    assert_eq!(err.category(), Category::NotFound);
    assert_eq!(err.retry_hint(), RetryHint::Never);
    assert_eq!(
        wire(&err, WireProfile::A2a),
        json!({"code": -32001, "message": "Task not found", "data": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
            "metadata": {"taskId": "t-1"}}]})
    );
    assert_eq!(
        wire(&err, WireProfile::Legacy),
        json!({"code": -32001, "message": "Task not found", "data": {
            "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
            "retryable": false, "taskId": "t-1"}})
    );
}

#[test]
fn own_reason_takes_the_enum_domain_and_table_message() {
    let err = AgentError::Llm("key sk-live-123 rejected".into());
    assert_eq!(err.code(), -32603);
    assert_eq!(err.reason(), "LLM_UNAVAILABLE");
    assert_eq!(err.domain(), "billing.example.com");
    assert_eq!(err.public_message(), "Internal error");
    assert_eq!(err.retry_hint(), RetryHint::Backoff);
    assert_eq!(err.category(), Category::Transient);
    assert_eq!(err.http_status(), 500);
}

#[test]
fn retry_after_puts_retry_info_on_the_wire() {
    let err = AgentError::RateLimited;
    assert_eq!(err.retry_hint(), RetryHint::After(Duration::from_secs(10)));
    assert_eq!(err.category(), Category::RateLimit);
    assert_eq!(err.http_status(), 429);
    assert_eq!(err.domain(), "billing.example.com");
    let value = wire(&err, WireProfile::A2a);
    assert_eq!(
        value["data"][1],
        json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "10s"})
    );
    let legacy = wire(&err, WireProfile::Legacy);
    assert_eq!(legacy["data"]["retryAfter"], json!(10));
    assert_eq!(legacy["data"]["retryable"], json!(true));
}

#[test]
fn message_interpolates_data_fields() {
    let err = AgentError::BadPart { index: 3 };
    assert_eq!(err.public_message(), "Invalid part 3");
    assert_eq!(err.reason(), "INVALID_PARAMS");
    let value = wire(&err, WireProfile::A2a);
    assert_eq!(value["message"], "Invalid part 3");
    assert_eq!(value["data"][0]["metadata"], json!({"index": "3"}));
    assert_eq!(
        wire(&err, WireProfile::Legacy)["data"]["index"],
        json!(3),
        "the legacy profile keeps JSON types"
    );
}

#[test]
fn transparent_delegates_everything() {
    let err = AgentError::from(StandardError::RateLimited {
        retry_after: Some(Duration::from_millis(1500)),
    });
    assert_eq!(err.code(), code::RATE_LIMITED);
    assert_eq!(err.reason(), "RATE_LIMITED");
    // The project's own codes go out in the application's domain, not the library's name.
    assert_eq!(err.domain(), "billing.example.com");
    assert_eq!(
        err.retry_hint(),
        RetryHint::After(Duration::from_millis(1500))
    );
    let a2a = wire(&err, WireProfile::A2a);
    assert_eq!(a2a["data"][1]["retryDelay"], json!("1.500s"));
    assert_eq!(a2a["data"][0]["domain"], "billing.example.com");
    assert_eq!(
        wire(&err, WireProfile::Legacy)["data"]["domain"],
        "billing.example.com"
    );
    assert_eq!(err.kind(), AgentErrorKind::Standard);
    // The spec's own codes keep the spec's domain; StandardError alone keeps its placeholder.
    let spec = AgentError::from(StandardError::TaskNotFound { task_id: None });
    assert_eq!(spec.domain(), "a2a-protocol.org");
    assert_eq!(
        wire(&spec, WireProfile::A2a)["data"][0]["domain"],
        "a2a-protocol.org"
    );
    assert_eq!(StandardError::AuthRequired.domain(), "a2a-error");
}

#[test]
fn display_text_never_reaches_the_wire() {
    let secret = "db password=hunter2-secret";
    let errors = [
        AgentError::Llm(secret.into()),
        AgentError::TaskNotFound {
            task_id: "t-9".into(),
            shard: 4_242_424,
        },
    ];
    for err in &errors {
        for profile in WireProfile::ALL {
            let mut bytes = Vec::new();
            err.write_error_object(profile, &mut bytes);
            let text = String::from_utf8(bytes).unwrap();
            assert!(!text.contains("hunter2"), "{text}");
            assert!(!text.contains("4242424"), "non-data field leaked: {text}");
            let model = serde_json::to_string(&err.to_error_object_with(profile)).unwrap();
            assert!(!model.contains("hunter2") && !model.contains("4242424"));
        }
    }
    assert!(
        errors[0].to_string().contains("hunter2"),
        "Display is for logs"
    );
}

#[test]
fn to_error_object_matches_the_byte_encoder() {
    let errors = [
        AgentError::TaskNotFound {
            task_id: "t".into(),
            shard: 1,
        },
        AgentError::Llm("x".into()),
        AgentError::RateLimited,
        AgentError::BadPart { index: 9 },
        StandardError::InvalidParams.into(),
    ];
    for err in &errors {
        for profile in WireProfile::ALL {
            // Twice: the second call is served by the per-variant cache.
            for _ in 0..2 {
                assert_eq!(
                    serde_json::to_value(err.to_error_object_with(profile)).unwrap(),
                    wire(err, profile)
                );
            }
        }
    }
}

/// Variants with data fields, each encoded once with no data and then filled in per error.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "tools.example.com")]
enum Filled {
    #[error("no task")]
    #[a2a(code = TASK_NOT_FOUND)]
    Missing {
        #[a2a(data)]
        task_id: String,
    },
    // -32603 is retried by default: this one carries the retry marker before its fields.
    #[error("tool crashed")]
    #[a2a(code = -32603, reason = "TOOL_CRASHED", retryable = false)]
    Crashed {
        #[a2a(data)]
        tool: String,
        #[a2a(data)]
        note: Option<String>,
    },
    #[error("bucket empty")]
    #[a2a(code = RATE_LIMITED, retry_after = 5)]
    Limited {
        #[a2a(data)]
        bucket: u32,
    },
}

#[test]
fn data_variants_are_encoded_once_and_filled_in_per_error() {
    let info = |reason: &str, domain: &str, metadata: Value| {
        json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason, "domain": domain, "metadata": metadata})
    };
    let retry = json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "5s"});
    // Each variant twice with other values: the second is written from the cached bytes.
    for (id, tool, note, bucket) in [
        ("t-1", "grep", Some("exit 2"), 1),
        ("t-\"2\"\n", "sed", None, 70_000),
    ] {
        let missing = Filled::Missing { task_id: id.into() };
        assert_eq!(
            wire(&missing, WireProfile::A2a),
            json!({"code": -32001, "message": "Task not found",
                "data": [info("TASK_NOT_FOUND", "a2a-protocol.org", json!({"taskId": id}))]})
        );
        assert_eq!(
            wire(&missing, WireProfile::Legacy)["data"],
            json!({"reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
                "retryable": false, "taskId": id})
        );

        let crashed = Filled::Crashed {
            tool: tool.into(),
            note: note.map(Into::into),
        };
        let mut metadata = json!({"retryable": "false", "tool": tool});
        if let Some(note) = note {
            metadata["note"] = json!(note);
        }
        assert_eq!(
            wire(&crashed, WireProfile::A2a)["data"],
            json!([info("TOOL_CRASHED", "tools.example.com", metadata)])
        );
        let mut legacy = json!({"reason": "TOOL_CRASHED", "domain": "tools.example.com",
            "retryable": false, "tool": tool});
        if let Some(note) = note {
            legacy["note"] = json!(note);
        }
        assert_eq!(wire(&crashed, WireProfile::Legacy)["data"], legacy);

        let limited = Filled::Limited { bucket };
        assert_eq!(
            wire(&limited, WireProfile::A2a)["data"],
            json!([
                info(
                    "RATE_LIMITED",
                    "tools.example.com",
                    json!({"bucket": bucket.to_string()})
                ),
                retry
            ])
        );
        assert_eq!(
            wire(&limited, WireProfile::Legacy)["data"],
            json!({"reason": "RATE_LIMITED", "domain": "tools.example.com",
                "retryable": true, "retryAfter": 5, "bucket": bucket})
        );
    }
}

#[test]
fn mirror_rebuilds_data_variants_and_refuses_lossy_ones() {
    let bad_part = AgentError::BadPart { index: 12 };
    for profile in WireProfile::ALL {
        let obj = bad_part.to_error_object_with(profile);
        match AgentError::from_error_object(&obj) {
            Some(AgentError::BadPart { index: 12 }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            AgentErrorKind::from_error_object(&obj),
            Some(AgentErrorKind::BadPart)
        );

        // `shard` does not travel, so TaskNotFound can't be rebuilt, but its kind is known.
        let obj = AgentError::TaskNotFound {
            task_id: "t".into(),
            shard: 1,
        }
        .to_error_object_with(profile);
        assert!(AgentError::from_error_object(&obj).is_none());
        assert_eq!(
            AgentErrorKind::from_error_object(&obj),
            Some(AgentErrorKind::TaskNotFound)
        );

        let obj = AgentError::RateLimited.to_error_object_with(profile);
        assert!(matches!(
            AgentError::from_error_object(&obj),
            Some(AgentError::RateLimited)
        ));
    }
}

#[test]
fn mirror_matches_code_and_reason_then_transparent() {
    // -32603 with the Llm reason: Llm (unrebuildable: its String is not data).
    let llm = object(
        json!({"code": -32603, "message": "Internal error", "data": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "LLM_UNAVAILABLE",
         "domain": "billing.example.com"}]}),
    );
    assert!(AgentError::from_error_object(&llm).is_none());
    assert_eq!(
        AgentErrorKind::from_error_object(&llm),
        Some(AgentErrorKind::Llm)
    );

    // -32603 with the table reason: not Llm, so it falls through to StandardError::Internal.
    let internal = object(json!({"code": -32603, "message": "Internal error"}));
    assert!(matches!(
        AgentError::from_error_object(&internal),
        Some(AgentError::Standard(StandardError::Internal))
    ));

    // A -32001 from a peer with no reason and no metadata: the code's table reason applies;
    // task_id is required data, so no rebuild, but the kind is TaskNotFound.
    let not_found = object(json!({"code": -32001, "message": "Task not found"}));
    assert_eq!(
        AgentErrorKind::from_error_object(&not_found),
        Some(AgentErrorKind::TaskNotFound)
    );

    // Unknown codes match nothing typed.
    let unknown = object(json!({"code": 12345, "message": "?"}));
    assert!(AgentError::from_error_object(&unknown).is_none());
    assert_eq!(AgentErrorKind::from_error_object(&unknown), None);
}

#[test]
fn catalog_lists_every_coded_variant() {
    let rows: Vec<_> = AgentError::CATALOG
        .iter()
        .map(|r| (r.name, r.code, r.reason, r.http_status))
        .collect();
    assert_eq!(
        rows,
        [
            ("TaskNotFound", -32001, "TASK_NOT_FOUND", 404),
            ("Llm", -32603, "LLM_UNAVAILABLE", 500),
            ("RateLimited", -32052, "RATE_LIMITED", 429),
            ("BadPart", -32602, "INVALID_PARAMS", 400),
        ]
    );
    assert_eq!(AgentError::CATALOG[3].message, "Invalid part {index}");
    assert_eq!(
        AgentError::CATALOG[2].retry,
        RetryHint::After(Duration::from_secs(10))
    );
    let json = serde_json::to_value(AgentError::CATALOG[2]).unwrap();
    assert_eq!(json["retryAfter"], json!(10.0));
    assert_eq!(json["category"], json!("rate-limit"));
    assert_eq!(AgentErrorKind::ALL.len(), 5);
    assert_eq!(AgentErrorKind::Llm.name(), "Llm");
}

/// A catch-all: whatever no variant claims stays a RemoteError, nothing dropped.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(kind = "PeerKind")]
enum PeerError {
    #[error("task gone")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: Option<String>,
    },
    #[error("peer: {0}")]
    #[a2a(transparent)]
    Other(RemoteError),
}

#[test]
fn remote_error_is_the_catch_all() {
    let unknown = object(json!({"code": -31000, "message": "Odd", "data": {"k": [1, 2]}}));
    match PeerError::from_error_object(&unknown) {
        Some(PeerError::Other(remote)) => {
            assert_eq!(remote.code(), -31000);
            assert_eq!(remote.metadata()["k"], json!([1, 2]));
            // Passing it on sends exactly what came.
            assert_eq!(
                serde_json::to_value(PeerError::Other(remote).to_error_object()).unwrap(),
                json!({"code": -31000, "message": "Odd", "data": {"k": [1, 2]}})
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(PeerKind::from_error_object(&unknown), Some(PeerKind::Other));
    let js_not_found = object(json!({"code": -32001, "message": "Task not found: nope",
        "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}));
    assert!(matches!(
        PeerError::from_error_object(&js_not_found),
        Some(PeerError::TaskNotFound { task_id: None })
    ));
}

/// Structs take the variant attributes on the struct; defaults for a code outside the table.
#[derive(Debug, thiserror::Error, A2aError)]
#[error("tool {tool} crashed: {detail}")]
#[a2a(code = -32010, retryable, message = "Tool {tool} failed")]
struct ToolCrashed {
    #[a2a(data)]
    tool: String,
    detail: String,
}

#[test]
fn struct_with_own_code_gets_generated_defaults() {
    let err = ToolCrashed {
        tool: "search".into(),
        detail: "segfault at /opt/x".into(),
    };
    assert_eq!(err.reason(), "TOOL_CRASHED");
    assert_eq!(err.domain(), env!("CARGO_PKG_NAME"));
    assert_eq!(err.domain(), "a2a-error");
    assert_eq!(err.category(), Category::Transient);
    assert_eq!(err.retry_hint(), RetryHint::Backoff);
    assert_eq!(err.http_status(), 500);
    assert_eq!(err.grpc_status(), "INTERNAL");
    assert_eq!(err.public_message(), "Tool search failed");
    assert!(
        !serde_json::to_string(&err.to_error_object())
            .unwrap()
            .contains("segfault")
    );
    assert!(ToolCrashed::from_error_object(&err.to_error_object()).is_none());
    assert_eq!(ToolCrashed::CATALOG.len(), 1);
}

/// Every attribute, overridden; a per-value delay; renamed and optional data.
#[derive(Debug, PartialEq, thiserror::Error, A2aError)]
enum Tuned {
    #[error("slow")]
    #[a2a(
        code = -32020,
        reason = "UPSTREAM_SLOW",
        domain = "llm.example",
        category = "timeout",
        http = 504,
        message = "Upstream slow ({0} ms)"
    )]
    Slow(#[a2a(data(rename = "elapsedMs"))] u64),

    #[error("busy")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Busy {
        #[a2a(retry_after)]
        retry_in: Option<Duration>,
        #[a2a(data)]
        queue_name: Option<String>,
    },

    #[error("validation")]
    #[a2a(code = 4000, category = "validation")]
    Invalid,
}

#[test]
fn overrides_and_per_value_retry() {
    let slow = Tuned::Slow(250);
    assert_eq!(
        (
            slow.code(),
            slow.reason(),
            slow.domain(),
            slow.http_status()
        ),
        (-32020, "UPSTREAM_SLOW", "llm.example", 504)
    );
    assert_eq!(slow.category(), Category::Timeout);
    assert_eq!(
        slow.retry_hint(),
        RetryHint::Backoff,
        "timeouts retry by default"
    );
    assert_eq!(slow.public_message(), "Upstream slow (250 ms)");
    assert_eq!(slow.metadata()["elapsedMs"], json!(250));
    assert_eq!(
        Tuned::from_error_object(&slow.to_error_object()),
        Some(slow)
    );

    let busy = Tuned::Busy {
        retry_in: Some(Duration::from_secs(3)),
        queue_name: None,
    };
    assert_eq!(busy.retry_hint(), RetryHint::After(Duration::from_secs(3)));
    let value = wire(&busy, WireProfile::A2a);
    assert_eq!(value["data"][0]["metadata"], json!({}), "None is omitted");
    assert_eq!(value["data"][1]["retryDelay"], json!("3s"));
    for profile in WireProfile::ALL {
        let obj = busy.to_error_object_with(profile);
        assert_eq!(Tuned::from_error_object(&obj).as_ref(), Some(&busy));
    }
    let no_delay = Tuned::Busy {
        retry_in: None,
        queue_name: Some("q1".into()),
    };
    assert_eq!(no_delay.retry_hint(), RetryHint::Backoff);
    assert_eq!(
        Tuned::from_error_object(&no_delay.to_error_object()),
        Some(no_delay)
    );

    let invalid = Tuned::Invalid;
    assert_eq!(invalid.retry_hint(), RetryHint::Never);
    assert_eq!(invalid.public_message(), "Invalid request");
    assert_eq!(invalid.http_status(), 500);
}

/// Generic errors: bounds are inferred on the field types that mention a parameter.
#[derive(Debug, thiserror::Error, A2aError)]
enum Wrapped<D: std::fmt::Debug, E: std::error::Error + 'static> {
    #[error("bad input")]
    #[a2a(code = -32602)]
    BadInput {
        #[a2a(data)]
        detail: D,
    },
    #[error(transparent)]
    #[a2a(transparent)]
    Inner(E),
}

#[test]
fn generics_are_supported() {
    type W = Wrapped<Vec<String>, StandardError>;
    let err: W = Wrapped::BadInput {
        detail: vec!["a".into()],
    };
    let obj = err.to_error_object();
    assert_eq!(
        obj.data_field::<Vec<String>>("detail"),
        Some(vec!["a".into()])
    );
    match W::from_error_object(&obj) {
        Some(Wrapped::BadInput { detail }) => assert_eq!(detail, ["a"]),
        other => panic!("{other:?}"),
    }
    let inner: W = Wrapped::Inner(StandardError::SkillNotFound);
    assert_eq!(inner.http_status(), 404);
    assert_eq!(
        W::kind_of(&inner.to_error_object()),
        Some(WrappedKind::Inner)
    );
}

#[test]
fn errors_work_as_trait_objects() {
    let errors: Vec<Box<dyn A2aError>> = vec![
        Box::new(AgentError::RateLimited),
        Box::new(StandardError::Internal),
        Box::new(RemoteError::new(7, "seven")),
    ];
    let codes: Vec<i32> = errors.iter().map(|e| e.code()).collect();
    assert_eq!(codes, [-32052, -32603, 7]);
    assert!(errors[0].is_retryable());
}

#[test]
fn peer_without_reason_matches_own_code_alone() {
    // A legacy peer sends the code and the data, no reason: the code decides.
    let obj = object(json!({"code": -32020, "message": "slow", "data": {"elapsedMs": 5}}));
    assert_eq!(Tuned::from_error_object(&obj), Some(Tuned::Slow(5)));
    // With a different reason it is not ours.
    let other = object(json!({"code": -32020, "message": "slow",
        "data": {"reason": "SOMETHING_ELSE", "elapsedMs": 5}}));
    assert_eq!(Tuned::from_error_object(&other), None);
}

#[test]
fn reasons_map_back_to_codes_for_bindings_that_carry_only_the_reason() {
    assert_eq!(AgentError::code_for_reason("LLM_UNAVAILABLE"), Some(-32603));
    assert_eq!(
        AgentError::code_for_reason("RATE_LIMITED"),
        Some(code::RATE_LIMITED)
    );
    // Through the transparent variant: StandardError's own table.
    assert_eq!(
        AgentError::code_for_reason("TASK_NOT_CANCELABLE"),
        Some(code::TASK_NOT_CANCELABLE)
    );
    assert_eq!(AgentError::code_for_reason("NO_SUCH_REASON"), None);
    assert_eq!(RemoteError::code_for_reason("TASK_NOT_FOUND"), None);
}

/// A variant whose other fields have a sensible default comes back whole.
#[derive(Debug, PartialEq, thiserror::Error, A2aError)]
#[a2a(domain = "shop.example")]
enum ShopError {
    #[error("no task {task_id} in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        #[a2a(default)]
        shard: u32,
    },
    #[error("unsupported: {0}")]
    #[a2a(code = UNSUPPORTED_OPERATION)]
    Unsupported(#[a2a(default)] String),
    #[error("internal: {0}")]
    #[a2a(code = -32010)]
    Opaque(String),
}

#[test]
fn default_fields_are_rebuilt_and_kinds_are_known_either_way() {
    let sent = ShopError::TaskNotFound {
        task_id: "t-9".into(),
        shard: 4,
    };
    let received = ShopError::from_error_object(&sent.to_error_object());
    assert_eq!(
        received,
        Some(ShopError::TaskNotFound {
            task_id: "t-9".into(),
            shard: 0,
        })
    );
    let unsupported = ShopError::Unsupported("streaming".into()).to_error_object();
    assert_eq!(
        ShopError::from_error_object(&unsupported),
        Some(ShopError::Unsupported(String::new()))
    );
    // A field with neither `data` nor `default` still cannot come back; its kind can.
    let opaque = ShopError::Opaque("secret".into()).to_error_object();
    assert_eq!(ShopError::from_error_object(&opaque), None);
    assert_eq!(ShopError::kind_of(&opaque), Some(ShopErrorKind::Opaque));
    assert_eq!(
        <ShopError as a2a_error::HasKind>::kind_of(&opaque),
        Some(ShopErrorKind::Opaque)
    );
}

#[test]
fn client_errors_name_the_kind_whether_or_not_the_variant_was_rebuilt() {
    use a2a_error::client::ClientError;
    let rebuilt = ClientError::<ShopError>::from_object(
        ShopError::Unsupported("x".into()).to_error_object(),
        None,
    );
    assert!(rebuilt.typed().is_some());
    assert_eq!(rebuilt.kind(), Some(ShopErrorKind::Unsupported));
    let opaque = ClientError::<ShopError>::from_object(
        ShopError::Opaque("x".into()).to_error_object(),
        None,
    );
    assert!(opaque.typed().is_none());
    assert_eq!(opaque.kind(), Some(ShopErrorKind::Opaque));
    let foreign = ClientError::<ShopError>::from_object(
        RemoteError::new(-32099, "?").to_error_object(),
        None,
    );
    assert_eq!(foreign.kind(), None);
    let local = ClientError::<ShopError>::Timeout(a2a_error::resilience::Timeout::Attempt);
    assert_eq!(local.kind(), None);
}

/// An application enum wrapping a client's local failure passes it on in its own domain.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "coordinator.example")]
enum CoordinatorError {
    #[error(transparent)]
    #[a2a(transparent)]
    Downstream(a2a_error::client::ClientError),
}

#[test]
fn local_failures_passed_on_take_the_wrapping_domain() {
    use a2a_error::client::ClientError;
    use a2a_error::resilience::Timeout;
    let err = CoordinatorError::Downstream(ClientError::Timeout(Timeout::Attempt));
    assert_eq!(err.code(), code::DEADLINE_EXCEEDED);
    assert_eq!(err.domain(), "coordinator.example");
    assert_eq!(
        wire(&err, WireProfile::A2a)["data"][0]["domain"],
        "coordinator.example"
    );
    // A received error is translated: DOWNSTREAM_FAILED in the coordinator's domain, the
    // peer's domain named as the downstream's.
    let peer = RemoteError::new(-32010, "busy").with_domain("peer.example");
    let received = ClientError::<RemoteError>::from_object(peer.to_error_object(), None);
    let err = CoordinatorError::Downstream(received);
    assert_eq!(err.domain(), "coordinator.example");
    let object = err.to_error_object();
    assert_eq!(object.code, code::DOWNSTREAM_FAILED);
    assert_eq!(object.domain(), Some("coordinator.example"));
    assert_eq!(object.metadata()["downstreamDomain"], "peer.example");
}

/// `#[a2a(downstream)]`: a client's failure passed on in one line, and read back only from
/// downstream failures.
#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "planner.example")]
enum PlannerError {
    #[error("no such plan")]
    #[a2a(code = -32030)]
    NoPlan,
    #[error("a specialist failed")]
    #[a2a(downstream)]
    Specialist(a2a_error::client::Downstream),
    #[error(transparent)]
    #[a2a(transparent)]
    Other(RemoteError),
}

#[test]
fn downstream_variants_pass_the_chain_on_and_decode_only_downstream_failures() {
    use a2a_error::client::{ClientError, Downstream};
    use a2a_error::resilience::Timeout;
    let err = PlannerError::Specialist(Downstream::new(
        "search",
        ClientError::from_object(
            RemoteError::new(code::AGENT_UNAVAILABLE, "search is restarting").to_error_object(),
            None,
        ),
    ));
    let object = err.to_error_object();
    assert_eq!(object.code, code::DOWNSTREAM_FAILED);
    assert_eq!(object.domain(), Some("planner.example"));
    assert_eq!(object.metadata()["downstreamAgent"], "search");
    assert!(
        !serde_json::to_string(&object)
            .unwrap()
            .contains("restarting")
    );
    // A local failure of the specialist names it too.
    let timeout = PlannerError::Specialist(Downstream::new(
        "search",
        ClientError::Timeout(Timeout::Attempt),
    ));
    assert_eq!(
        timeout.to_error_object().metadata()["downstreamReason"],
        "TIMEOUT"
    );
    let no_plan = PlannerError::from_error_object(&PlannerError::NoPlan.to_error_object());
    assert!(matches!(no_plan, Some(PlannerError::NoPlan)));
}

/// A caller's mirror of the planner: its downstream failures land in one variant, with the
/// chain readable; anything else does not, although `ClientError` would take it.
#[derive(Debug, thiserror::Error, A2aError)]
enum PlannerReply {
    #[error("the planner's specialists failed")]
    #[a2a(downstream)]
    Downstream(a2a_error::client::ClientError),
    #[error(transparent)]
    #[a2a(transparent)]
    Other(RemoteError),
}

#[test]
fn downstream_variants_decode_only_downstream_failures() {
    use a2a_error::client::{ClientError, Downstream};
    let sent = PlannerError::Specialist(Downstream::new(
        "search",
        ClientError::from_object(
            RemoteError::new(code::AGENT_UNAVAILABLE, "m").to_error_object(),
            None,
        ),
    ))
    .to_error_object();
    match PlannerReply::from_error_object(&sent) {
        Some(PlannerReply::Downstream(error)) => {
            let root = error.remote().unwrap().root_cause().unwrap();
            assert_eq!(
                (root.agent.as_deref(), root.code),
                (Some("search"), code::AGENT_UNAVAILABLE)
            );
        }
        other => panic!("{other:?}"),
    }
    let unrelated = RemoteError::new(-32099, "x").to_error_object();
    assert!(matches!(
        PlannerReply::from_error_object(&unrelated),
        Some(PlannerReply::Other(_))
    ));
}

/// An enum whose variants all have codes: its methods read the catalog row of the variant
/// instead of matching on their own, which must answer exactly as the per-variant code does.
#[derive(Debug, PartialEq, thiserror::Error, A2aError)]
#[a2a(domain = "rows.example")]
enum Rows {
    #[error("braces")]
    #[a2a(code = 4100, message = "Use {{braces}} here")]
    Braces,

    #[error("first")]
    #[a2a(code = 4101, reason = "SAME_CODE_FIRST")]
    First,

    #[error("second")]
    #[a2a(code = 4101, reason = "SAME_CODE_SECOND", retryable, retry_after = 2)]
    Second,

    #[error("with data")]
    #[a2a(code = TASK_NOT_FOUND)]
    Missing {
        #[a2a(data)]
        task_id: String,
    },
}

#[test]
fn an_enum_of_coded_variants_reads_its_catalog_rows() {
    assert_eq!(Rows::Braces.public_message(), "Use {braces} here");
    assert_eq!(Rows::CATALOG[0].message, "Use {{braces}} here");
    assert_eq!(
        (Rows::First.code(), Rows::First.reason()),
        (4101, "SAME_CODE_FIRST")
    );
    assert_eq!(Rows::First.domain(), "rows.example");
    assert_eq!(
        Rows::Second.retry_hint(),
        RetryHint::After(Duration::from_secs(2))
    );
    assert_eq!(Rows::Second.category(), Category::Transient);
    let missing = Rows::Missing {
        task_id: "t-1".into(),
    };
    assert_eq!(
        (missing.code(), missing.http_status()),
        (code::TASK_NOT_FOUND, 404)
    );
    // Written from the row cache, except a message with an escaped brace, whose row has the
    // template as written: that variant is encoded whole.
    assert_eq!(
        wire(&Rows::Braces, WireProfile::A2a)["message"],
        "Use {braces} here"
    );
    assert_eq!(
        wire(&Rows::Second, WireProfile::A2a)["data"][1]["retryDelay"],
        "2s"
    );
    // A cached variant writes the same bytes every time, in each profile.
    for profile in WireProfile::ALL {
        assert_eq!(wire(&Rows::Second, profile), wire(&Rows::Second, profile));
        assert_eq!(wire(&Rows::Second, profile)["code"], json!(4101));
    }
    // The mirror: code and reason pick the row; a peer without a reason gets the first row
    // with a code outside the table; reasons map to codes.
    for err in [Rows::Braces, Rows::First, Rows::Second, missing] {
        let obj = err.to_error_object();
        assert_eq!(Rows::kind_of(&obj), Some(err.kind()));
        assert_eq!(Rows::from_error_object(&obj).as_ref(), Some(&err));
    }
    let bare = object(json!({"code": 4101, "message": "x"}));
    assert_eq!(Rows::from_error_object(&bare), Some(Rows::First));
    let other = object(json!({"code": 4101, "message": "x", "data": [{
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "SOMETHING_ELSE", "domain": "rows.example"}]}));
    assert_eq!(Rows::from_error_object(&other), None);
    assert_eq!(Rows::code_for_reason("SAME_CODE_SECOND"), Some(4101));
    assert_eq!(Rows::code_for_reason("NOPE"), None);
}
