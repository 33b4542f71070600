//! The server against hostile callers, over raw sockets on loopback: slow headers, bodies
//! shorter than their Content-Length, more connections than allowed; and the uniformity of
//! what it answers (exact ids, params errors in the peer's terms, Status bodies on REST).

use std::time::Duration;

use crate::common::agent::TestAgent;
use crate::common::{serve_with, start_example};
use a2a_error::server::{JsonRpc, RequestContext, ServeLimits};
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
    let url = serve_with(TestAgent::new().router(), limits()).await;
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    // A slowloris: the start of a request line, then nothing.
    socket
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let sent = std::time::Instant::now();
    let (_, closed) = read_until_close(&mut socket, Duration::from_secs(5)).await;
    assert!(closed, "a connection with unfinished headers was kept open");
    // Closed by the header timeout (300 ms), not at once for some other reason. A busy
    // machine only makes it later.
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_millis(280),
        "closed after {waited:?}"
    );
}

#[tokio::test]
async fn a_slow_head_on_a_kept_alive_connection_has_its_own_time() {
    // The connection's header timer is armed for the first request's head (sent in two
    // parts), and would fire 300 ms after the first answer; the second head has 600 ms from
    // that answer, and gets them.
    let limits = ServeLimits::default().header_timeout(Duration::from_millis(600));
    let url = serve_with(TestAgent::new().router(), limits).await;
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    socket
        .write_all(format!("\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("TASK_NOT_FOUND") {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buffer))
            .await
            .expect("an answer to the first request")
            .unwrap();
        assert!(n > 0, "closed before the first answer");
        got.extend_from_slice(&buffer[..n]);
    }
    let answered = std::time::Instant::now();
    socket
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (_, closed) = read_until_close(&mut socket, Duration::from_secs(5)).await;
    assert!(
        closed,
        "a kept-alive connection with an unfinished head was kept open"
    );
    let waited = answered.elapsed();
    assert!(
        waited >= Duration::from_millis(500),
        "closed {waited:?} after the first answer"
    );
}

#[tokio::test]
async fn a_reply_read_slowly_is_written_whole_and_one_left_unread_is_closed() {
    const BIG: usize = 24 << 20;
    let router =
        axum::Router::new().route("/big", axum::routing::get(|| async { vec![b'x'; BIG] }));
    let limits = ServeLimits::default().header_timeout(Duration::from_millis(1000));
    let url = serve_with(router, limits).await;
    // Read in pieces with pauses, for longer than the header timeout in all: the reply is
    // being written, not waited on, and arrives whole.
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    socket
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let (mut got, mut buffer) = (0, vec![0u8; 1 << 20]);
    loop {
        let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buffer));
        match read.await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => got += n,
        }
        // Pauses well inside the timeout, for 1.5 s in all.
        if started.elapsed() < Duration::from_millis(1500) {
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    }
    assert!(got > BIG, "{got} bytes of a {BIG}-byte reply");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    // A peer that asks and then reads nothing holds the connection for the header timeout,
    // not for ever: what the sockets held arrives, then the close.
    let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
    socket
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (got, closed) = read_until_close(&mut socket, Duration::from_secs(10)).await;
    assert!(closed, "a reply nobody reads held its connection");
    let got = got.len();
    assert!(got < BIG, "{got} bytes of a {BIG}-byte reply nobody read");
}

#[tokio::test]
async fn a_body_shorter_than_its_length_gets_a_json_rpc_408() {
    let url = serve_with(TestAgent::new().router(), limits()).await;
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
    let url = crate::common::serve(rpc.into_router()).await;
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
    let url = serve_with(TestAgent::new().router(), limits).await;
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
        socket.write_all(b"GET /").await.unwrap();
        idle.push(socket);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut third = TcpStream::connect(addr(&url)).await.unwrap();
    third.write_all(request.as_bytes()).await.unwrap();
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
    let (_agent, url) = start_example("agent", &[]);
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
    let (_agent, url) = start_example("agent", &[]);
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
    let url = crate::common::serve(rpc.into_router()).await;
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
    let (_agent, url) = start_example("agent", &[]);
    // A connection each: the server closes one whose body it refused unread (413), and a
    // pooled connection could be reused while it does (seen: a broken pipe on the next).
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
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
async fn the_example_agents_task_store_is_bounded_in_resident_memory() {
    let (agent, url) = start_example("agent", &[]);
    let big = "x".repeat(1 << 20);
    let mut ids = Vec::new();
    for i in 0..160 {
        let request = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params":
            {"message": {"messageId": format!("m-{i}"), "role": "ROLE_USER",
                         "parts": [{"text": big}]}}});
        let (_, text) = post(&format!("{url}/"), &request.to_string()).await;
        let reply: Value = serde_json::from_str(&text).unwrap();
        ids.push(reply["result"]["task"]["id"].as_str().unwrap().to_owned());
    }
    // 160 MiB of text sent, 320 MiB with the echoes, and each reply remembered for retries:
    // 640 MiB if nothing were let go. The tasks (64 MiB) and the replies (64 MiB) are
    // bounded, and what they let go goes back to the system.
    let resident = agent.rss();
    assert!(resident <= 320 << 20, "{} MiB resident", resident >> 20);
    // The oldest went first; the newest are kept.
    let get =
        |id: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
    let (_, oldest) = post(&format!("{url}/"), &get(&ids[0]).to_string()).await;
    assert!(oldest.contains("TASK_NOT_FOUND"), "{oldest}");
    let (_, newest) = post(&format!("{url}/"), &get(&ids[159]).to_string()).await;
    assert!(
        newest.contains(&ids[159]) && !newest.contains("error"),
        "{}",
        &newest[..200]
    );
}

#[tokio::test]
async fn the_sdk_agents_task_store_is_bounded_in_resident_memory_for_empty_parts() {
    // A message of empty parts is 12 bytes of JSON a part and ~150 bytes in memory: while the
    // store weighed its tasks by their JSON (to 9317aae), this grew the agent by ~340 MiB;
    // weighed as they lie in memory, by ~80 MiB.
    let (agent, url) = start_example("sdk_agent", &[]);
    let parts = vec![json!({"text": ""}); 80_000];
    let before = agent.rss();
    for i in 0..40 {
        let request = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params":
            {"message": {"messageId": format!("m-{i}"), "role": "ROLE_USER", "parts": parts}}});
        let (status, text) = post(&format!("{url}/"), &request.to_string()).await;
        assert_eq!(status, 200, "{}", &text[..text.len().min(300)]);
    }
    let grown = agent.rss().saturating_sub(before);
    // The tasks (64 MiB) and the replies kept for retries (64 MiB), with the allocator's slack.
    assert!(grown <= 192 << 20, "grew by {} MiB", grown >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_at_its_limit_sheds_at_once_with_a_truthful_delay() {
    use std::sync::Arc;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let inside = Arc::clone(&gate);
    let rpc = JsonRpc::new()
        .max_concurrent(2)
        .method("Slow", move |_: Value, _: RequestContext| {
            let gate = Arc::clone(&inside);
            async move {
                let _pass = gate.acquire().await;
                Ok::<_, a2a_error::StandardError>(json!("done"))
            }
        })
        .method("Fast", |_: Value, _: RequestContext| async {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok::<_, a2a_error::StandardError>(json!("fast"))
        });
    let url = crate::common::serve(rpc.into_router()).await;
    // Teaches the endpoint its handlers' time: ~400 ms.
    let call = |method: &str, id: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{}}}}"#)
    };
    let (_, fast) = post(&format!("{url}/"), &call("Fast", 1)).await;
    assert!(fast.contains("\"fast\""), "{fast}");
    let held: Vec<_> = (0..2)
        .map(|i| {
            let (url, body) = (format!("{url}/"), call("Slow", 10 + i));
            tokio::spawn(async move { post(&url, &body).await })
        })
        .collect();
    // Wait until both slots are taken.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, shed) = post(&format!("{url}/"), &call("Slow", 3)).await;
    let shed: Value = serde_json::from_str(&shed).unwrap();
    assert_eq!(
        (status, shed["error"]["code"].as_i64()),
        (200, Some(-32053)),
        "{shed}"
    );
    let delay = shed["error"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|detail| detail["retryDelay"].as_str())
        .expect("a RetryInfo");
    let seconds: f64 = delay.trim_end_matches('s').parse().unwrap();
    assert!(
        (0.4..0.7).contains(&seconds),
        "about one handler's time: {shed}"
    );
    gate.add_permits(2);
    for request in held {
        let (_, text) = request.await.unwrap();
        assert!(text.contains("\"done\""), "{text}");
    }
    // Slots come back: the next call is served.
    gate.add_permits(1);
    let (_, served) = post(&format!("{url}/"), &call("Slow", 4)).await;
    assert!(served.contains("\"done\""), "{served}");
}

#[tokio::test]
async fn a_batch_over_the_limit_is_refused_before_its_requests_are_read() {
    let (_agent, url) = start_example("agent", &[]);
    let one = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
    let batch = format!("[{}]", vec![one; 101].join(","));
    let (_, text) = post(&format!("{url}/"), &batch).await;
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{text}");
    assert_eq!(reply["id"], Value::Null);
}

#[tokio::test]
async fn params_a_reader_cannot_take_are_invalid_params_not_invalid_requests() {
    let (_agent, url) = start_example("agent", &[]);
    for params in [r#"{"id":1e400}"#, r#"{"id":"\ud800"}"#] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{params}}}"#);
        let (_, text) = post(&format!("{url}/"), &body).await;
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reply["error"]["code"], -32602, "{params}: {text}");
    }
    // A repeated member is refused the same way on both bindings (it was last-wins over
    // JSON-RPC and 400 over REST).
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}"#;
    let (_, text) = post(&format!("{url}/"), body).await;
    assert!(
        text.contains("-32602") && text.contains("more than once"),
        "{text}"
    );
}

#[tokio::test]
async fn of_two_deadline_headers_the_earlier_holds() {
    let rpc = JsonRpc::new().method("Left", |_: Value, ctx: RequestContext| async move {
        let left = ctx
            .deadline
            .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
        Ok::<_, a2a_error::StandardError>(json!(left.map(|l| l.as_millis() as u64)))
    });
    let url = crate::common::serve(rpc.into_router()).await;
    for order in [["60000", "500"], ["500", "60000"]] {
        let reply: Value = reqwest::Client::new()
            .post(format!("{url}/"))
            .header("content-type", "application/json")
            .header("A2A-Deadline-Ms", order[0])
            .header("A2A-Deadline-Ms", order[1])
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"Left","params":{}}"#)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let left = reply["result"].as_u64().expect("a deadline");
        assert!(left <= 500, "{order:?}: {reply}");
    }
}

#[tokio::test]
async fn one_caller_holding_streams_it_never_reads_leaves_room_for_the_others() {
    use futures_util::stream;
    // A reply that never ends, as a stream of a task that runs on.
    let hold = axum::routing::get(|| async {
        axum::body::Body::from_stream(stream::pending::<Result<bytes::Bytes, std::io::Error>>())
    });
    let router = TestAgent::new().router().route("/hold", hold);
    let limits = ServeLimits::default()
        .header_timeout(Duration::from_secs(30))
        .max_connections(64);
    let url = serve_with(router, limits).await;
    // One caller opens 100 streams and reads none of them.
    let mut greedy = Vec::new();
    for _ in 0..100 {
        let mut socket = TcpStream::connect(addr(&url)).await.unwrap();
        socket
            .write_all(b"GET /hold HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer greedy\r\n\r\n")
            .await
            .unwrap();
        greedy.push(socket);
    }
    // Another caller is served at once.
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Authorization: Bearer other\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut other = TcpStream::connect(addr(&url)).await.unwrap();
    other.write_all(request.as_bytes()).await.unwrap();
    let (reply, closed) = read_until_close(&mut other, Duration::from_secs(10)).await;
    assert!(closed && reply.starts_with("HTTP/1.1 200"), "{reply:?}");
    // The greedy caller's streams past its quota were refused, truthfully, and closed; those
    // it holds are at most three quarters of the slots.
    // Read all at once: a refusal may still be on its way on a busy machine.
    let replies = futures_util::future::join_all(
        greedy
            .iter_mut()
            .map(|socket| read_until_close(socket, Duration::from_secs(3))),
    )
    .await;
    let mut refused = 0;
    for (reply, closed) in replies {
        if closed {
            assert!(reply.starts_with("HTTP/1.1 429"), "{reply:?}");
            assert!(reply.contains("retry-after: 1"), "{reply:?}");
            assert!(reply.contains("RATE_LIMITED"), "{reply:?}");
            refused += 1;
        }
    }
    assert!(refused >= 100 - 48, "only {refused} of 100 streams refused");
}
