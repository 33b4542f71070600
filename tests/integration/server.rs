//! The server over real loopback HTTP, driven by a real HTTP client: the example agent as a
//! process, and endpoints built here with the settings it does not take as flags.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::Duration;

use crate::common::agent::TestAgent;
use crate::common::requests::{card, error_code, post_raw, rest_send, rpc, rpc_with, send};
use crate::common::{ExampleProcess, serve, start_example};
use a2a_error::resilience::RetryPolicy;
use a2a_error::server::{Binding, JsonRpc, RequestContext, failed_status, sse_response};
use a2a_error::{A2aError, ErrorObject, FromErrorObject, StandardError};
use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};

/// The example agent, as a process.
fn agent() -> (ExampleProcess, String) {
    start_example("agent", &[])
}

/// An endpoint of this crate's own, for the settings the example agent does not take as
/// flags: SendMessage echoes its params (after `sleep:MS`).
fn endpoint() -> JsonRpc {
    JsonRpc::new().method(
        "SendMessage",
        |params: Value, _: RequestContext| async move {
            let text = params["message"]["parts"][0]["text"].as_str().unwrap_or("");
            if let Some(ms) = text.strip_prefix("sleep:").and_then(|ms| ms.parse().ok()) {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Ok::<_, StandardError>(params)
        },
    )
}

/// What the tests below fail with: a Display text that must stay in the logs, and a
/// retryable error with a delay.
#[derive(Debug, thiserror::Error, A2aError)]
enum AgentError {
    #[error("storage query failed: connect to db password=hunter2-secret: {0}")]
    #[a2a(code = INTERNAL_ERROR)]
    Storage(String),

    #[error("quota for this caller exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 2)]
    RateLimited,
}

#[tokio::test]
async fn conformance_cases() {
    let (_agent, url) = agent();
    crate::common::conformance::check(&url).await;
}

#[tokio::test]
async fn invalid_requests_echo_the_id_when_readable() {
    let (_agent, url) = agent();
    let cases = [
        (json!({"method": "GetTask", "id": "a"}), json!("a")),
        (
            json!({"jsonrpc": "1.0", "method": "GetTask", "id": 1}),
            json!(1),
        ),
        (
            json!({"jsonrpc": "2.0", "method": 7, "id": "m"}),
            json!("m"),
        ),
        (
            json!({"jsonrpc": "2.0", "method": "GetTask", "params": "x", "id": 3}),
            json!(3),
        ),
        (
            json!({"jsonrpc": "2.0", "method": "GetTask", "id": true}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "GetTask", "id": {"a": 1}}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "GetTask", "id": [1]}),
            Value::Null,
        ),
    ];
    for (body, id) in cases {
        let reply = rpc(&url, body.clone()).await;
        assert_eq!(error_code(&reply), -32600, "{body}");
        assert_eq!(reply["id"], id, "{body}");
    }
}

#[tokio::test]
async fn parse_errors_for_bad_json_utf8_and_deep_nesting() {
    let (_agent, url) = agent();
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    for body in [
        b"{\"jsonrpc\":".to_vec(),
        vec![0xff, 0xfe, b'{'],
        deep.into_bytes(),
    ] {
        let (status, _, text) = post_raw(&url, body).await;
        assert_eq!(status, 200);
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(error_code(&reply), -32700);
        assert_eq!(reply["id"], Value::Null);
    }
}

#[tokio::test]
async fn invalid_params_name_the_field() {
    let (_agent, url) = agent();
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 9, "method": "SendMessage",
        "params": {"message": {"messageId": "x", "role": "ROLE_USER", "parts": [{"text": 5}]}}}),
    )
    .await;
    assert_eq!(error_code(&reply), -32602);
    let obj: ErrorObject = serde_json::from_value(reply["error"].clone()).unwrap();
    let violations = &obj.detail("google.rpc.BadRequest").unwrap()["fieldViolations"];
    assert_eq!(violations[0]["field"], "message.parts[0].text");
    assert_eq!(obj.reason(), Some("INVALID_PARAMS"));
    // A missing field too.
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 10, "method": "GetTask", "params": {}}),
    )
    .await;
    assert_eq!(error_code(&reply), -32602);
}

#[tokio::test]
async fn method_aliases_and_method_not_found() {
    let (_agent, url) = agent();
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}),
    )
    .await;
    assert_eq!(error_code(&reply), -32001);
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/nope"}),
    )
    .await;
    assert_eq!(error_code(&reply), -32601);
    let ok = rpc(&url, send(3, "alias-1", "hello")).await;
    let task_id = ok["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        ok["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let got = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": task_id}}),
    )
    .await;
    assert_eq!(got["result"]["id"], json!(task_id));
    let cancel = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/cancel", "params": {"id": task_id}}),
    )
    .await;
    assert_eq!(error_code(&cancel), -32002);
    assert_eq!(
        cancel["error"]["data"][0]["metadata"]["taskId"],
        json!(task_id)
    );
}

#[tokio::test]
async fn task_not_found_carries_the_id_and_decodes() {
    let (_agent, url) = agent();
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": "r5", "method": "GetTask", "params": {"id": "t-1"}}),
    )
    .await;
    let obj: ErrorObject = serde_json::from_value(reply["error"].clone()).unwrap();
    assert_eq!(obj.reason(), Some("TASK_NOT_FOUND"));
    assert_eq!(obj.domain(), Some("a2a-protocol.org"));
    match StandardError::from_error_object(&obj) {
        Some(StandardError::TaskNotFound { task_id }) => {
            assert_eq!(task_id.as_deref(), Some("t-1"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn notifications_run_without_reply() {
    let (_agent, url) = agent();
    // flaky:1 fails its first run. The notification is that first run...
    let mut note = send(0, "note-1", "flaky:1");
    note.as_object_mut().unwrap().remove("id");
    let (status, _, text) = post_raw(&url, note.to_string()).await;
    assert_eq!((status, text.as_str()), (204, ""));
    // ...so the request with the same messageId is the second run, and succeeds.
    let reply = rpc(&url, send(1, "note-1", "flaky:1")).await;
    assert!(reply.get("result").is_some(), "{reply}");

    // A batch of notifications only: no body.
    let batch = json!([
        {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "a"}},
        {"jsonrpc": "2.0", "method": "NoSuchMethod"}
    ]);
    let (status, _, text) = post_raw(&url, batch.to_string()).await;
    assert_eq!((status, text.as_str()), (204, ""));
}

#[tokio::test]
async fn batches_answer_each_request_and_respect_the_limit() {
    let (_agent, url) = agent();
    let batch = json!([
        send(1, "b-1", "sleep:50"),
        send(2, "b-2", "fail:rate_limited"),
        {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "zz"}},
        send(4, "b-4", "fail:panic"),
    ]);
    let replies: Vec<Value> =
        serde_json::from_str(&post_raw(&url, batch.to_string()).await.2).unwrap();
    let by_id: BTreeMap<i64, &Value> = replies
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r))
        .collect();
    assert_eq!(by_id.len(), 4);
    assert!(by_id[&1].get("result").is_some());
    assert_eq!(error_code(by_id[&2]), -32052);
    assert_eq!(by_id[&2]["error"]["data"][1]["retryDelay"], "2s");
    assert_eq!(error_code(by_id[&3]), -32001);
    assert_eq!(error_code(by_id[&4]), -32603);

    let small = serve(endpoint().max_batch(2).into_router()).await;
    let too_big = json!([
        send(1, "x1", "hi"),
        send(2, "x2", "hi"),
        send(3, "x3", "hi")
    ]);
    let reply = rpc(&small, too_big).await;
    assert_eq!(
        (error_code(&reply), reply["id"].clone()),
        (-32600, Value::Null)
    );
}

#[tokio::test]
async fn panics_do_not_take_the_server_down() {
    let (_agent, url) = agent();
    for i in 0..3 {
        let reply = rpc(&url, send(i, &format!("p-{i}"), "fail:panic")).await;
        assert_eq!(error_code(&reply), -32603);
        assert_eq!(reply["error"]["message"], "Internal error");
        assert!(!reply.to_string().contains("on purpose"));
    }
    let ok = rpc(&url, send(9, "after-panic", "hello")).await;
    assert!(ok.get("result").is_some());
}

#[tokio::test]
async fn wrong_content_type_and_oversized_bodies_get_json_rpc_errors() {
    let url = serve(endpoint().max_body_bytes(1024).into_router()).await;
    let client = reqwest::Client::new();
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let mut request = client.post(&url).body(send(1, "ct", "hi").to_string());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 415);
        let reply: Value = response.json().await.unwrap();
        assert_eq!(error_code(&reply), -32600);
    }
    // application/a2a+json with a charset is JSON.
    let response = client
        .post(&url)
        .header("content-type", "application/a2a+json; charset=utf-8")
        .body(send(1, "ct2", "hi").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);

    // Too large, with a Content-Length, and streamed without one.
    let big = "x".repeat(4096);
    let (status, _, text) = post_raw(&url, big.clone()).await;
    assert_eq!(status, 413);
    assert_eq!(error_code(&serde_json::from_str(&text).unwrap()), -32055);
    let chunks =
        futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>("y".repeat(512))));
    let (status, _, text) = post_raw(&url, reqwest::Body::wrap_stream(chunks)).await;
    assert_eq!(status, 413);
    assert_eq!(error_code(&serde_json::from_str(&text).unwrap()), -32055);
}

#[tokio::test]
async fn oversized_body_is_refused_before_it_is_sent() {
    let (_agent, url) = agent();
    let addr = url.trim_start_matches("http://").to_owned();
    // Announce 100 MB and send none of it: the answer must come anyway.
    let reply = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n").unwrap();
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if reply.windows(4).any(|w| w == b"\r\n\r\n") && reply.ends_with(b"}") {
                break;
            }
        }
        String::from_utf8_lossy(&reply).into_owned()
    })
    .await
    .unwrap();
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("\"code\":-32055"), "{reply}");
}

#[tokio::test]
async fn handler_timeout_is_deadline_exceeded() {
    let url = serve(endpoint().timeout(Duration::from_millis(50)).into_router()).await;
    let reply = rpc(&url, send(1, "slow", "sleep:5000")).await;
    assert_eq!(error_code(&reply), -32054);
    assert_eq!(reply["error"]["data"][0]["reason"], "DEADLINE_EXCEEDED");
}

#[tokio::test]
async fn the_callers_deadline_header_stops_the_handler_in_time() {
    // The agent's own timeout is 30 s; the caller has 100 ms left.
    let (_agent, url) = agent();
    let start = std::time::Instant::now();
    let reply = rpc_with(
        &url,
        ("a2a-deadline-ms", "100"),
        send(1, "deadline", "sleep:5000"),
    )
    .await;
    assert_eq!(error_code(&reply), -32054, "{reply}");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // A value that is not whole milliseconds is ignored, not an error.
    let reply = rpc_with(
        &url,
        ("a2a-deadline-ms", "soon"),
        send(2, "no-deadline", "hello"),
    )
    .await;
    assert!(reply.get("result").is_some(), "{reply}");
}

#[tokio::test]
async fn a2a_version_header() {
    let (_agent, url) = agent();
    let client = reqwest::Client::new();
    let ask = |version: Option<&'static str>| {
        let mut request = client
            .post(&url)
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "v"}})
                    .to_string(),
            );
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    assert_eq!(error_code(&ask(Some("0.3")).await), -32009);
    assert_eq!(error_code(&ask(Some("2.0")).await), -32009);
    // Served version, and no header (the configured default, 1.0): the method runs.
    assert_eq!(error_code(&ask(Some("1.0")).await), -32001);
    assert_eq!(error_code(&ask(None).await), -32001);

    // REST: the same rule, as a Status body.
    let rest = |version: Option<&'static str>| {
        let mut request = client.get(format!("{url}/tasks/v"));
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            (
                status,
                body["error"]["details"][0]["reason"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        }
    };
    assert_eq!(
        rest(Some("0.3")).await,
        (400, "VERSION_NOT_SUPPORTED".to_owned())
    );
    assert_eq!(rest(Some("1.0")).await, (404, "TASK_NOT_FOUND".to_owned()));
    assert_eq!(rest(None).await, (404, "TASK_NOT_FOUND".to_owned()));
}

#[tokio::test]
async fn rest_errors_are_google_rpc_status() {
    let (_agent, url) = agent();
    let client = reqwest::Client::new();
    let response = client.get(format!("{url}/tasks/t-9")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert_eq!(response.headers()["content-type"], "application/a2a+json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "t-9");

    let limited = rest_send(&client, &url, "rl", "fail:rate_limited").await;
    assert_eq!(limited.status().as_u16(), 429);
    assert_eq!(limited.headers()["retry-after"], "2");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["details"][1]["retryDelay"], "2s");

    let panicked = rest_send(&client, &url, "rp", "fail:panic").await;
    assert_eq!(panicked.status().as_u16(), 500);
    let body: Value = panicked.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "INTERNAL_ERROR");

    let cancel = client
        .post(format!("{url}/tasks/nope:cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status().as_u16(), 404);
    let unknown = client
        .get(format!("{url}/no/such/route"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    let body: Value = unknown.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "METHOD_NOT_FOUND");

    let ok = rest_send(&client, &url, "rok", "hello").await;
    assert_eq!(ok.status().as_u16(), 200);
    let body: Value = ok.json().await.unwrap();
    let id = body["task"]["id"].as_str().unwrap();
    let got: Value = client
        .get(format!("{url}/tasks/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED");
    let cancel = client
        .post(format!("{url}/tasks/{id}:cancel"))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status().as_u16(), 400);
}

#[tokio::test]
async fn agent_card_names_both_interfaces() {
    let public = "https://agent.example";
    let (_agent, url) = start_example("agent", &["--public-url", public]);
    // A caller's Host header is not what the card advertises (a shared cache would keep it).
    let poisoned: Value = reqwest::Client::new()
        .get(format!("{url}/.well-known/agent-card.json"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        poisoned["supportedInterfaces"][0]["url"],
        format!("{public}/")
    );
    let card = card(&url).await;
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolBinding"].as_str().unwrap())
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON"]);
    assert!(
        card["supportedInterfaces"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with(public)
    );
}

#[tokio::test]
async fn send_message_retries_run_the_work_once() {
    let (_agent, url) = agent();
    // A retry after a lost reply: same messageId, same task, one run.
    let first = rpc(&url, send(1, "dup-1", "hello")).await;
    let again = rpc(&url, send(2, "dup-1", "hello")).await;
    assert_eq!(first["result"], again["result"]);
    // Concurrent duplicates wait for the first instead of running again.
    let (a, b) = tokio::join!(
        rpc(&url, send(3, "dup-2", "sleep:200")),
        rpc(&url, send(4, "dup-2", "sleep:200"))
    );
    assert_eq!(a["result"]["task"]["id"], b["result"]["task"]["id"]);
    // Retryable errors are not remembered: flaky:2 fails twice, then the work really runs.
    let tries: Vec<Value> = {
        let mut tries = Vec::new();
        for i in 0..3 {
            tries.push(rpc(&url, send(10 + i, "dup-3", "flaky:2")).await);
        }
        tries
    };
    assert_eq!(error_code(&tries[0]), -32053);
    assert_eq!(tries[0]["error"]["data"][0]["metadata"]["attempt"], "1");
    assert_eq!(error_code(&tries[1]), -32053);
    assert!(tries[2].get("result").is_some(), "{}", tries[2]);
}

#[tokio::test]
async fn final_errors_are_remembered_and_retryable_ones_run_again() {
    let agent = TestAgent::new();
    let url = serve(agent.router()).await;
    // A final error is replayed from memory: one run for two requests.
    let one = rpc(&url, send(1, "final", "fail:unsupported")).await;
    let two = rpc(&url, send(2, "final", "fail:unsupported")).await;
    assert_eq!(error_code(&one), -32004);
    assert_eq!(one["error"], two["error"]);
    assert_eq!(agent.runs("final"), 1);
    // INTERNAL_ERROR is retryable: forgotten, so the retry runs again.
    rpc(&url, send(3, "internal", "fail:internal")).await;
    rpc(&url, send(4, "internal", "fail:internal")).await;
    assert_eq!(agent.runs("internal"), 2);
}

#[tokio::test]
async fn send_message_keys_are_scoped_bounded_and_tied_to_their_message() {
    let agent = TestAgent::new();
    let url = serve(agent.router()).await;
    let http = reqwest::Client::new();
    let post = |auth: Option<&'static str>, body: Value| {
        let mut request = http
            .post(format!("{url}/"))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    // Two callers, one messageId: each gets their own task.
    let alice = post(Some("Bearer alice"), send(1, "shared-id", "hello")).await;
    let mallory = post(Some("Bearer mallory"), send(2, "shared-id", "hello")).await;
    assert_ne!(
        alice["result"]["task"]["id"],
        mallory["result"]["task"]["id"]
    );
    let alice_again = post(Some("Bearer alice"), send(3, "shared-id", "hello")).await;
    assert_eq!(alice_again["result"], alice["result"]);
    assert_eq!(agent.runs("shared-id"), 2);
    // The same messageId with another message: refused, not replayed, not run.
    let reused = post(Some("Bearer alice"), send(4, "shared-id", "goodbye")).await;
    assert_eq!(error_code(&reused), -32602, "{reused}");
    assert_eq!(reused["error"]["data"][0]["reason"], "MESSAGE_ID_REUSED");
    assert_eq!(agent.runs("shared-id"), 2);
    // A messageId over 64 KiB: invalid params.
    let long = "m".repeat(64 * 1024 + 1);
    let too_long = post(None, send(5, &long, "hello")).await;
    assert_eq!(error_code(&too_long), -32602, "{too_long}");
    // Over REST too, with the same store: a JSON-RPC reply is replayed to a REST retry.
    let rest: Value = rest_send(&http, &url, "shared-rest", "hi")
        .await
        .json()
        .await
        .unwrap();
    let rpc_reply = rpc(&url, send(6, "shared-rest", "hi")).await;
    assert_eq!(rpc_reply["result"], rest);
    assert_eq!(agent.runs("shared-rest"), 1);
}

async fn numbers(
    fail_at: Option<usize>,
) -> impl futures_util::Stream<Item = Result<u32, AgentError>> {
    futures_util::stream::iter((0..4usize).map(move |i| {
        if Some(i) == fail_at {
            Err(AgentError::RateLimited)
        } else {
            Ok(i as u32)
        }
    }))
}

#[tokio::test]
async fn sse_streams_end_with_an_error_event() {
    let router = Router::new()
        .route(
            "/rpc-mid",
            get(|| async {
                sse_response(Binding::JsonRpc("s1".into()), numbers(Some(2)).await).await
            }),
        )
        .route(
            "/rpc-first",
            get(|| async {
                sse_response(Binding::JsonRpc(7.into()), numbers(Some(0)).await).await
            }),
        )
        .route(
            "/rest-mid",
            get(|| async { sse_response(Binding::Rest, numbers(Some(1)).await).await }),
        )
        .route(
            "/rest-first",
            get(|| async { sse_response(Binding::Rest, numbers(Some(0)).await).await }),
        );
    let url = serve(router).await;
    let get_text = |path: &'static str| {
        let url = url.clone();
        async move {
            let response = reqwest::get(format!("{url}{path}")).await.unwrap();
            let status = response.status().as_u16();
            let content_type = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            (status, content_type, response.text().await.unwrap())
        }
    };

    let (_, content_type, text) = get_text("/rpc-mid").await;
    assert!(content_type.starts_with("text/event-stream"));
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(
        events.len(),
        3,
        "two items, one error, then the end: {text}"
    );
    assert_eq!(events[0], r#"data: {"jsonrpc":"2.0","id":"s1","result":0}"#);
    assert!(
        events[2].starts_with("event: error\ndata: "),
        "{}",
        events[2]
    );
    let error: Value = serde_json::from_str(events[2].split("data: ").nth(1).unwrap()).unwrap();
    assert_eq!(
        (error["id"].clone(), error_code(&error)),
        (json!("s1"), -32052)
    );

    let (status, content_type, text) = get_text("/rpc-first").await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/json"),
        "an ordinary response: {content_type}"
    );
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_code(&reply)),
        (json!(7), -32052)
    );

    let (_, _, text) = get_text("/rest-mid").await;
    let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert_eq!(events[0], "data: 0");
    let status: Value = serde_json::from_str(events[1].split("data: ").nth(1).unwrap()).unwrap();
    assert_eq!(status["error"]["status"], "RESOURCE_EXHAUSTED");

    let (status, content_type, _) = get_text("/rest-first").await;
    assert_eq!(
        (status, content_type.as_str()),
        (429, "application/a2a+json")
    );
}

#[test]
fn failed_task_status_carries_the_public_message_only() {
    let err = AgentError::Storage("secret table name".into());
    let status = failed_status(&err);
    assert_eq!(status["state"], "TASK_STATE_FAILED");
    assert_eq!(status["message"]["role"], "ROLE_AGENT");
    assert_eq!(status["message"]["parts"][0]["text"], "Internal error");
    assert_eq!(
        status["message"]["metadata"]["error"]["reason"],
        "INTERNAL_ERROR"
    );
    let text = status.to_string();
    assert!(
        !text.contains("hunter2") && !text.contains("secret table"),
        "{text}"
    );
    let other = failed_status(&StandardError::SkillNotFound);
    assert_ne!(
        status["message"]["messageId"],
        other["message"]["messageId"]
    );
    assert_eq!(err.code(), -32603);
    // No delay known: no `retryDelay`.
    assert!(
        status["message"]["metadata"]["error"]
            .get("retryDelay")
            .is_none()
    );

    // A known delay is written as RetryInfo writes it, beside `retryable`.
    let limited = failed_status(&StandardError::ModelUnavailable {
        retry_after: Some(std::time::Duration::from_secs(3)),
    });
    let error = &limited["message"]["metadata"]["error"];
    assert_eq!(error["retryDelay"], "3s", "{limited}");
    assert_eq!(error["retryable"], true, "{limited}");
    let interrupted = failed_status(&StandardError::ModelStreamInterrupted);
    let error = &interrupted["message"]["metadata"]["error"];
    assert_eq!(
        (error["code"].clone(), error["retryable"].clone()),
        (json!(-32062), json!(true)),
        "{interrupted}"
    );
}

/// Application state, shared by a JSON-RPC handler and a REST handler of one router.
#[derive(Clone, Default)]
struct Counter(std::sync::Arc<std::sync::atomic::AtomicU64>);

#[tokio::test]
async fn jsonrpc_handlers_reach_state_in_a_stateful_router() {
    use a2a_error::server::{JsonRpc, RequestContext, rest};
    use axum::extract::State;
    use std::sync::atomic::Ordering;

    #[derive(serde::Deserialize)]
    struct Bump {
        by: u64,
    }
    async fn bump(
        State(counter): State<Counter>,
        Bump { by }: Bump,
        _: RequestContext,
    ) -> Result<u64, StandardError> {
        Ok(counter.0.fetch_add(by, Ordering::SeqCst) + by)
    }
    async fn read(State(counter): State<Counter>) -> String {
        counter.0.load(Ordering::SeqCst).to_string()
    }
    let state = Counter::default();
    let endpoint = JsonRpc::with_state(state.clone())
        .method("Bump", bump)
        // A stateless handler on the same endpoint.
        .method("Echo", |params: Value, _: RequestContext| async move {
            Ok::<_, StandardError>(params)
        });
    let router: Router<Counter> = Router::new()
        .route("/count", get(read))
        .merge(endpoint.into_router())
        .layer(rest::RequireVersionLayer::new(["1.0"]));
    let url = serve(router.with_state(state.clone())).await;

    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 1, "method": "Bump", "params": {"by": 5}}),
    )
    .await;
    assert_eq!(reply["result"], 5);
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "Bump", "params": {"by": 2}}),
    )
    .await;
    assert_eq!(reply["result"], 7);
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 3, "method": "Echo", "params": [1]}),
    )
    .await;
    assert_eq!(reply["result"], json!([1]));
    // The REST route sees the same state.
    let http = reqwest::Client::new();
    let count = http.get(format!("{url}/count")).send().await.unwrap();
    assert_eq!(count.text().await.unwrap(), "7");
    // Wrong params for a stateful handler are -32602 as for any other.
    let reply = rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 4, "method": "Bump", "params": {"by": "x"}}),
    )
    .await;
    assert_eq!(error_code(&reply), -32602);
    assert_eq!(state.0.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn rest_and_jsonrpc_read_a_missing_version_header_the_same_way() {
    use a2a_error::server::{JsonRpc, RequestContext, rest};
    let versioned = |default: &str| {
        let rpc = JsonRpc::new()
            .default_version(default)
            .method("Ping", |_: Value, _: RequestContext| async {
                Ok::<_, StandardError>("pong")
            });
        Router::new()
            .route("/ping", get(|| async { "pong" }))
            .layer(rest::RequireVersionLayer::new(["1.0"]).default_version(default))
            .merge(rpc.into_router())
    };
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "Ping"}).to_string();
    for (default, served) in [("1.0", true), ("0.3", false)] {
        let url = serve(versioned(default)).await;
        // No A2A-Version header: both bindings assume `default`.
        let rest_reply = http.get(format!("{url}/ping")).send().await.unwrap();
        assert_eq!(
            rest_reply.status().is_success(),
            served,
            "REST, default {default}"
        );
        let rpc_reply: Value = http
            .post(format!("{url}/"))
            .header("content-type", "application/json")
            .body(ping.clone())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(rpc_reply.get("result").is_some(), served, "{rpc_reply}");
        if !served {
            assert_eq!(error_code(&rpc_reply), -32009);
        }
        // An explicit version not served is refused by both, whatever the default.
        let old = http
            .get(format!("{url}/ping"))
            .header("A2A-Version", "0.2")
            .send()
            .await
            .unwrap();
        assert_eq!(old.status(), 400);
    }
}

#[tokio::test]
async fn send_message_after_a_lost_reply_runs_the_handler_once() {
    let state = TestAgent::new();
    let agent = serve(state.router()).await;
    let (proxy, forwarded) =
        crate::common::proxy::lossy_balancer(agent.clone(), agent.clone()).await;
    let client = a2a_error::Client::<StandardError>::jsonrpc(format!("{proxy}/"))
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(20)))
        .build()
        .unwrap();
    let reply: Value = client
        .send_message(
            &json!({"message": {"messageId": "m-lost", "role": "ROLE_USER",
            "parts": [{"text": "hello"}]}}),
        )
        .await
        .unwrap();
    assert_eq!(
        forwarded.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "the agent saw the message twice"
    );
    // The agent ran it once, and the retry got that run's task.
    assert_eq!(state.runs("m-lost"), 1);
    let id = reply["task"]["id"].as_str().unwrap();
    let direct = a2a_error::Client::<StandardError>::jsonrpc(format!("{agent}/"))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let task: Value = direct.call("GetTask", &json!({ "id": id })).await.unwrap();
    assert_eq!(task["id"], id);
}
