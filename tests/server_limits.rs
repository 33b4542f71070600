//! The server against hostile callers, over raw sockets on loopback: slow headers, bodies
//! shorter than their Content-Length, more connections than allowed; and the uniformity of
//! what it answers (exact ids, params errors in the peer's terms, Status bodies on REST).

#[path = "../examples/agent/app.rs"]
#[allow(dead_code)]
mod app;
mod common;

use std::time::Duration;

use a2a_error::server::{JsonRpc, RequestContext, ServeLimits};
use common::serve_with;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn addr(url: &str) -> String {
    url.trim_start_matches("http://").to_owned()
}

/// Reads until the peer closes or `limit` passes; returns what arrived and whether it closed.
async fn read_until_close(socket: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    let closed = tokio::time::timeout(limit, async {
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await
    .is_ok();
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

fn limits() -> ServeLimits {
    ServeLimits::default()
        .header_timeout(Duration::from_millis(300))
        .body_timeout(Duration::from_millis(300))
}

#[tokio::test]
async fn slow_headers_are_cut_off() {
    let url = serve_with(app::router(), limits()).await;
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    // A slowloris: the start of a request line, then nothing.
    socket
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (_, closed) = read_until_close(&mut socket, Duration::from_secs(5)).await;
    assert!(closed, "a connection with unfinished headers was kept open");
}

#[tokio::test]
async fn a_body_shorter_than_its_length_gets_a_json_rpc_408() {
    let url = serve_with(app::router(), limits()).await;
    for (path, content_type) in [
        ("/", "application/json"),
        ("/message:send", "application/json"),
    ] {
        let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\ncontent-type: {content_type}\r\ncontent-length: 1000\r\n\r\n{{\"jsonrpc\":"
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        let (reply, _) = read_until_close(&mut socket, Duration::from_secs(5)).await;
        assert!(reply.starts_with("HTTP/1.1 408"), "{path}: {reply}");
        let body = &reply[reply.find("\r\n\r\n").unwrap() + 4..];
        let body: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("{reply}"));
        let reason = body["error"]["data"][0]["reason"]
            .as_str()
            .or(body["error"]["details"][0]["reason"].as_str());
        assert_eq!(reason, Some("DEADLINE_EXCEEDED"), "{body}");
    }
    // The endpoint bounds the body on its own too, without `serve`'s limit.
    let rpc = JsonRpc::new().body_timeout(Duration::from_millis(200));
    let url = common::serve(rpc.into_router()).await;
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    socket
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n[")
        .await
        .unwrap();
    let (reply, _) = read_until_close(&mut socket, Duration::from_secs(5)).await;
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("-32054"), "{reply}");
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let limits = ServeLimits::default()
        .header_timeout(Duration::from_secs(30))
        .max_connections(2);
    let url = serve_with(app::router(), limits).await;
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
        socket.write_all(b"GET /").await.unwrap();
        idle.push(socket);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let request =
        b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let mut third = TcpStream::connect(addr(&url)).await.unwrap();
    third.write_all(request).await.unwrap();
    let (early, _) = read_until_close(&mut third, Duration::from_millis(500)).await;
    assert_eq!(early, "", "served a third connection past the cap of two");
    drop(idle.pop());
    let (reply, closed) = read_until_close(&mut third, Duration::from_secs(5)).await;
    assert!(closed && reply.starts_with("HTTP/1.1 200"), "{reply}");
}

async fn post(url: &str, body: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn ids_are_echoed_as_their_exact_text() {
    let url = common::serve(app::router()).await;
    for id in [
        "1000000000000000000000000000000",
        "1.50",
        "-0",
        "1e400",
        "\"x\"",
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"GetTask","params":{{"id":"t"}}}}"#);
        let (_, text) = post(&format!("{url}/"), &body).await;
        assert!(text.contains(&format!("\"id\":{id},")), "{id}: {text}");
        let batch = format!("[{body}]");
        let (_, text) = post(&format!("{url}/"), &batch).await;
        assert!(text.contains(&format!("\"id\":{id},")), "{id}: {text}");
    }
}

#[tokio::test]
async fn invalid_params_say_what_is_wrong_without_rust_names() {
    let url = common::serve(app::router()).await;
    let cases = [
        json!({"message": 5}),
        json!({"message": {"role": "ROLE_USER", "parts": []}}),
        json!({"message": {"messageId": 1, "role": "ROLE_USER", "parts": []}}),
        json!([1, 2]),
    ];
    for params in cases {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
        let (_, text) = post(&format!("{url}/"), &request.to_string()).await;
        assert!(text.contains("-32602"), "{text}");
        for leak in [
            "struct",
            "SendMessageRequest",
            "Message",
            "String",
            "u32",
            "usize",
        ] {
            let descriptions: Vec<String> = serde_json::from_str::<Value>(&text).unwrap()["error"]
                ["data"][1]["fieldViolations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["description"].to_string())
                .collect();
            assert!(
                !descriptions.iter().any(|d| d.contains(leak)),
                "{leak}: {text}"
            );
        }
        // The same body over REST: a Status body with the same field violations.
        let (status, text) = post(&format!("{url}/message:send"), &params.to_string()).await;
        assert_eq!(status, 400, "{text}");
        assert!(
            text.contains("INVALID_PARAMS") && !text.contains("struct"),
            "{text}"
        );
    }
}

#[derive(Debug)]
struct Explodes;

impl<'de> serde::Deserialize<'de> for Explodes {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("a Deserialize impl panicked");
    }
}

#[tokio::test]
async fn a_panicking_deserialize_still_gets_a_json_rpc_reply() {
    let rpc = JsonRpc::new().method("Boom", |_: Explodes, _: RequestContext| async {
        Ok::<_, a2a_error::StandardError>(())
    });
    let url = common::serve(rpc.into_router()).await;
    let (status, text) = post(
        &format!("{url}/"),
        r#"{"jsonrpc":"2.0","id":5,"method":"Boom"}"#,
    )
    .await;
    assert_eq!(status, 200);
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["error"]["code"], -32603);
    assert_eq!(reply["error"]["data"][0]["metadata"]["retryable"], "false");
    assert!(!text.contains("Deserialize"), "{text}");
}

#[test]
#[should_panic(expected = "no method \"GetTask\" is registered")]
fn an_alias_to_an_unknown_method_fails_at_start_up() {
    let _ = JsonRpc::new().alias("tasks/get", "GetTask");
}

#[tokio::test]
async fn every_rest_failure_is_a_status_body() {
    let url = common::serve(app::router()).await;
    let client = reqwest::Client::new();
    let send = format!("{url}/message:send");
    let requests = [
        // Wrong HTTP method on a known route.
        (client.delete(&send), 405),
        (client.get(&send), 405),
        // Not JSON, empty, bad UTF-8, trailing bytes.
        (
            client
                .post(&send)
                .header("content-type", "application/json")
                .body("{"),
            400,
        ),
        (
            client
                .post(&send)
                .header("content-type", "application/json"),
            400,
        ),
        (
            client
                .post(&send)
                .header("content-type", "application/json")
                .body(vec![0xff, 0xfe]),
            400,
        ),
        (
            client
                .post(&send)
                .header("content-type", "application/json")
                .body("{} x"),
            400,
        ),
        // Wrong content type.
        (
            client
                .post(&send)
                .header("content-type", "text/plain")
                .body("{}"),
            415,
        ),
        // Over axum's default body limit (2 MB).
        (
            client
                .post(&send)
                .header("content-type", "application/json")
                .body(vec![b' '; 3 << 20]),
            413,
        ),
        // Unknown route.
        (client.get(format!("{url}/nope")), 404),
    ];
    for (request, status) in requests {
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), status);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(content_type, "application/a2a+json");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], status, "{body}");
        let info = &body["error"]["details"][0];
        assert_eq!(
            info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
            "{body}"
        );
        assert!(info["reason"].is_string(), "{body}");
    }
}

#[tokio::test]
async fn the_example_agents_task_store_is_bounded() {
    let agent = app::Agent::default();
    for i in 0..10_100 {
        let request: app::SendMessageRequest = serde_json::from_value(json!({"message": {
            "messageId": format!("m-{i}"), "role": "ROLE_USER", "parts": [{"text": "hi"}]}}))
        .unwrap();
        agent
            .send_message(&Default::default(), request)
            .await
            .unwrap();
    }
    assert!(agent.task_count() <= 10_000, "{}", agent.task_count());
}
