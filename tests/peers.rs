//! Real peer output: error replies captured from the official Python and JS A2A SDK servers
//! (tests/data/peer-replies-*.json) decode into the right typed errors, nothing dropped.

use std::time::Duration;

use a2a_error::{
    A2aError, ErrorObject, FromErrorObject, HasKind, RemoteError, StandardError, StandardErrorKind,
    WireProfile, code,
};
use serde_json::Value;

fn replies(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["replies"].as_array().unwrap().clone()
}

/// The error object of a captured reply: JSON-RPC `error`, or a REST `google.rpc.Status`
/// turned into one (its details are the A2A 1.0 `data` array).
fn error_object(reply: &Value) -> Option<ErrorObject> {
    let body = &reply["body"];
    let error = body.get("error")?;
    if reply["binding"] == "rest" {
        // REST carries the HTTP status as `code`; the JSON-RPC code comes from the reason.
        let details = error.get("details").cloned();
        let probe = ErrorObject {
            code: 0,
            message: String::new(),
            data: details.clone(),
        };
        let code = code::TABLE
            .iter()
            .find(|row| Some(row.reason) == probe.reason())?
            .code;
        return Some(ErrorObject {
            code,
            message: error["message"].as_str()?.to_owned(),
            data: details,
        });
    }
    Some(serde_json::from_value(error.clone()).unwrap())
}

fn expected_kind(case: &str, obj: &ErrorObject) -> StandardErrorKind {
    match case {
        "task not found" | "task not cancelable/not found on cancel" | "cancel unknown task" => {
            StandardErrorKind::TaskNotFound
        }
        "method not found" => StandardErrorKind::MethodNotFound,
        "parse error" => StandardErrorKind::ParseError,
        "version not supported (no header)" => StandardErrorKind::VersionNotSupported,
        // The JS server reports a GetTask with a numeric id as TaskNotFound, and a batch as
        // INVALID_PARAMS; the Python server as INVALID_PARAMS / INVALID_REQUEST.
        "invalid params (bad field type)" if obj.code == code::TASK_NOT_FOUND => {
            StandardErrorKind::TaskNotFound
        }
        "invalid params (bad field type)" | "validation failed (missing role)" => {
            StandardErrorKind::InvalidParams
        }
        "validation failed" => StandardErrorKind::InvalidParams,
        "invalid request (batch)" if obj.code == code::INVALID_PARAMS => {
            StandardErrorKind::InvalidParams
        }
        "invalid request (batch)" => StandardErrorKind::InvalidRequest,
        other => panic!("unexpected case {other}"),
    }
}

fn check_peer(file: &str) -> usize {
    let mut decoded = 0;
    for reply in replies(file) {
        let case = reply["case"].as_str().unwrap();
        let Some(obj) = error_object(&reply) else {
            // The JS server accepts a message without role: a success reply, not an error.
            assert!(
                reply["body"].get("result").is_some() || reply["body"].get("message").is_some()
            );
            continue;
        };
        let kind = expected_kind(case, &obj);
        assert_eq!(StandardError::kind_of(&obj), Some(kind), "{file}: {case}");
        let typed = StandardError::from_error_object(&obj)
            .unwrap_or_else(|| panic!("{file}: {case} did not decode"));
        assert_eq!(typed.kind(), kind);

        // Nothing dropped: a RemoteError keeps code, message, reason, metadata and raw data.
        let remote = RemoteError::from_error_object(&obj).unwrap();
        assert_eq!(remote.code(), obj.code);
        assert_eq!(remote.message(), obj.message);
        assert_eq!(remote.received_reason(), obj.reason());
        assert_eq!(remote.data(), obj.data.as_ref());
        assert_eq!(
            serde_json::to_value(remote.to_error_object_with(WireProfile::Legacy)).unwrap(),
            serde_json::to_value(&obj).unwrap(),
            "{file}: {case}: re-encoding changed the peer's object"
        );
        decoded += 1;
    }
    decoded
}

#[test]
fn python_sdk_replies_decode() {
    assert_eq!(check_peer("peer-replies-a2a-python-1.3.0.json"), 12);
}

#[test]
fn js_sdk_replies_decode() {
    assert_eq!(check_peer("peer-replies-a2a-js-1.3.0.json"), 10);
}

#[test]
fn python_non_string_metadata_is_kept_typed() {
    let reply = replies("peer-replies-a2a-python-1.3.0.json")
        .into_iter()
        .find(|r| r["case"] == "validation failed (missing role)")
        .unwrap();
    let obj = error_object(&reply).unwrap();
    let remote = RemoteError::from_object(obj.clone());
    assert_eq!(
        remote.metadata()["errors"][0]["field"],
        Value::from("message.role")
    );
    let violations = obj.detail("google.rpc.BadRequest").unwrap();
    assert_eq!(violations["fieldViolations"][0]["field"], "message.role");
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Violation {
        field: String,
        message: String,
    }
    assert_eq!(
        obj.data_field::<Vec<Violation>>("errors"),
        Some(vec![Violation {
            field: "message.role".into(),
            message: "Field is required.".into()
        }])
    );
}

#[test]
fn table_defaults_fill_in_for_sparse_peers() {
    // The Python server's -32601 has no data at all.
    let obj: ErrorObject =
        serde_json::from_str(r#"{"code":-32601,"message":"Method not found"}"#).unwrap();
    let remote = RemoteError::from_object(obj);
    assert_eq!(remote.reason(), "METHOD_NOT_FOUND");
    assert_eq!(remote.domain(), "a2a-protocol.org");
    assert!(!remote.is_retryable());
    assert_eq!(remote.retry_after(), None::<Duration>);
}
