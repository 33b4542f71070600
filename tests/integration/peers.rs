//! Real peer output: error replies captured from the official Python and JS A2A SDK servers
//! (tests/data/peer-replies-*.json) decode into the right typed errors, nothing dropped.

use std::time::Duration;

use a2a_error::{
    A2aError, ErrorObject, FromErrorObject, HasKind, RemoteError, StandardError, StandardErrorKind,
    WireProfile,
};
use serde_json::Value;

fn replies(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["replies"].as_array().unwrap().clone()
}

/// The error object of a captured JSON-RPC reply.
fn error_object(reply: &Value) -> Option<ErrorObject> {
    let error = reply["body"].get("error")?;
    Some(serde_json::from_value(error.clone()).unwrap())
}

/// What each captured reply must decode to, written down per peer: `None` for a reply that is
/// not an error. The peers differ, and the table says how, rather than reading the expected
/// kind from what was received.
fn expected_kind(peer: &str, binding: &str, case: &str) -> Option<StandardErrorKind> {
    use StandardErrorKind::*;
    Some(match (peer, binding, case) {
        (
            _,
            _,
            "task not found" | "task not cancelable/not found on cancel" | "cancel unknown task",
        ) => TaskNotFound,
        (_, "jsonrpc", "method not found") => MethodNotFound,
        (_, "jsonrpc", "parse error") => ParseError,
        (_, _, "version not supported (no header)") => VersionNotSupported,
        // The JS server reports a GetTask with a numeric id as TaskNotFound, and a batch as
        // INVALID_PARAMS; the Python server as INVALID_PARAMS / INVALID_REQUEST.
        ("js", "jsonrpc", "invalid params (bad field type)") => TaskNotFound,
        ("python", "jsonrpc", "invalid params (bad field type)") => InvalidParams,
        ("js", "jsonrpc", "invalid request (batch)") => InvalidParams,
        ("python", "jsonrpc", "invalid request (batch)") => InvalidRequest,
        // The JS server accepts a message without a role: a success, over both bindings.
        ("js", _, "validation failed (missing role)" | "validation failed") => return None,
        ("python", _, "validation failed (missing role)" | "validation failed") => InvalidParams,
        other => panic!("no expectation for {other:?}"),
    })
}

fn peer_of(file: &str) -> &'static str {
    if file.contains("python") {
        "python"
    } else {
        "js"
    }
}

/// The captured JSON-RPC replies of `file` decode into the expected kinds, nothing dropped.
fn check_jsonrpc(file: &str) -> usize {
    let mut decoded = 0;
    for reply in replies(file).iter().filter(|r| r["binding"] == "jsonrpc") {
        let case = reply["case"].as_str().unwrap();
        let expected = expected_kind(peer_of(file), "jsonrpc", case);
        let Some(obj) = error_object(reply) else {
            assert_eq!(expected, None, "{file}: {case} answered without an error");
            assert!(reply["body"].get("result").is_some(), "{file}: {case}");
            continue;
        };
        let kind = expected.unwrap_or_else(|| panic!("{file}: {case} is an error: {obj:?}"));
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

/// The captured REST replies of `file`, served again on loopback with their status, headers
/// and body, read by this crate's own REST client: the kind it decodes is the table's.
async fn check_rest(file: &str) -> usize {
    use a2a_error::Client;
    use a2a_error::client::ClientError;
    use a2a_error::resilience::RetryPolicy;
    let mut decoded = 0;
    for reply in replies(file).into_iter().filter(|r| r["binding"] == "rest") {
        let case = reply["case"].as_str().unwrap().to_owned();
        let expected = expected_kind(peer_of(file), "rest", &case);
        let status = reply["http_status"].as_u64().unwrap() as u16;
        let body = reply["body"].clone();
        let served = reply.clone();
        let app = axum::Router::new().fallback(move || {
            let body = served["body"].to_string();
            async move {
                (
                    axum::http::StatusCode::from_u16(status).unwrap(),
                    [("content-type", "application/json")],
                    body,
                )
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = Client::<StandardError>::rest(url)
            .retry(RetryPolicy::none())
            .build()
            .unwrap();
        let (method, params) = match case.as_str() {
            "cancel unknown task" => ("CancelTask", serde_json::json!({"id": "t-1"})),
            "validation failed" => (
                "SendMessage",
                serde_json::json!({"message": {"messageId": "m", "parts": [{"text": "hi"}]}}),
            ),
            _ => ("GetTask", serde_json::json!({"id": "t-1"})),
        };
        let result = client.call::<_, Value>(method, &params).await;
        match (expected, result) {
            (None, Ok(_)) => {}
            (Some(kind), Err(ClientError::Remote { error, reply })) => {
                assert_eq!(error.kind(), kind, "{file}: {case}");
                // The status and the message as the peer sent them.
                assert_eq!(reply.http.as_ref().map(|h| h.status), Some(status));
                assert_eq!(
                    Some(reply.error.message()),
                    body["error"]["message"].as_str()
                );
                decoded += 1;
            }
            (expected, other) => panic!("{file}: {case}: expected {expected:?}, got {other:?}"),
        }
    }
    decoded
}

#[tokio::test]
async fn python_sdk_replies_decode() {
    let file = "peer-replies-a2a-python-1.3.0.json";
    assert_eq!(check_jsonrpc(file), 8);
    assert_eq!(check_rest(file).await, 4);
}

#[tokio::test]
async fn js_sdk_replies_decode() {
    let file = "peer-replies-a2a-js-1.3.0.json";
    assert_eq!(check_jsonrpc(file), 7);
    assert_eq!(check_rest(file).await, 3);
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
