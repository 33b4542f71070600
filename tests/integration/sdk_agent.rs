//! The `sdk_agent` example from outside: an agent on the official Rust SDK
//! (`DefaultRequestHandler`, an `AgentExecutor`) served through the bridge, run as its own
//! process on loopback and driven by a real HTTP client over both bindings.

use std::time::{Duration, Instant};

use crate::common::requests::{card, error_code, events, post_raw, rpc, rpc_with};
use crate::common::{ExampleProcess, start_example};
use serde_json::{Value, json};

fn agent() -> (ExampleProcess, String) {
    start_example("sdk_agent", &[])
}

fn message(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn call(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn send(id: u64, message_id: &str, text: &str) -> Value {
    call(id, "SendMessage", message(message_id, text))
}

fn reason(reply: &Value) -> &str {
    reply["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or_default()
}

async fn post_rest(url: &str, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_text_contract_over_json_rpc() {
    let (_agent, url) = agent();
    let url = format!("{url}/");

    let hello = rpc(&url, send(1, "m-hello", "hello")).await;
    let task = &hello["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{hello}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "echo: hello");

    let internal = rpc(&url, send(2, "m-internal", "fail:internal")).await;
    assert_eq!(error_code(&internal), -32603, "{internal}");
    assert_eq!(internal["error"]["message"], "Internal error");
    assert!(!internal.to_string().contains("hunter2"), "{internal}");
    assert!(!internal.to_string().contains("relation"), "{internal}");

    let started = Instant::now();
    let panic = rpc(&url, send(3, "m-panic", "fail:panic")).await;
    assert_eq!(error_code(&panic), -32603, "{panic}");
    assert!(!panic.to_string().contains("on purpose"), "{panic}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answered at once"
    );
    // The agent carries on.
    let after = rpc(&url, send(4, "m-after", "after the panic")).await;
    assert_eq!(
        after["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let limited = rpc(&url, send(5, "m-limited", "fail:rate_limited")).await;
    assert_eq!(error_code(&limited), -32052, "{limited}");
    assert_eq!(reason(&limited), "RATE_LIMITED");
    let details = limited["error"]["data"].as_array().unwrap();
    assert!(
        details.iter().any(
            |detail| detail["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
                && detail["retryDelay"] == "2s"
        ),
        "{limited}"
    );

    let unsupported = rpc(&url, send(6, "m-unsupported", "fail:unsupported")).await;
    assert_eq!(error_code(&unsupported), -32004, "{unsupported}");

    let flaky = [
        rpc(&url, send(7, "m-flaky", "flaky:2")).await,
        rpc(&url, send(8, "m-flaky", "flaky:2")).await,
        rpc(&url, send(9, "m-flaky", "flaky:2")).await,
    ];
    assert_eq!(error_code(&flaky[0]), -32053, "{}", flaky[0]);
    assert_eq!(flaky[0]["error"]["data"][0]["metadata"]["attempt"], "1");
    assert_eq!(error_code(&flaky[1]), -32053, "{}", flaky[1]);
    assert_eq!(
        flaky[2]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        flaky[2]
    );

    let started = Instant::now();
    let slept = rpc(&url, send(10, "m-sleep", "sleep:300")).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        slept["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // The 0.3 method names.
    let old = rpc(&url, call(11, "message/send", message("m-old", "hi"))).await;
    let id = old["result"]["task"]["id"].as_str().unwrap().to_owned();
    let got = rpc(&url, call(12, "tasks/get", json!({"id": id}))).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    let cancel = rpc(&url, call(13, "tasks/cancel", json!({"id": id}))).await;
    assert_eq!(error_code(&cancel), -32002, "a completed task: {cancel}");
}

#[tokio::test]
async fn a_failure_after_work_started_is_a_failed_task_never_internal_text() {
    let (_agent, url) = agent();
    let url = format!("{url}/");
    let reply = rpc(&url, send(1, "m-work", "work:fail")).await;
    let task = &reply["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{reply}");
    assert_eq!(
        task["status"]["message"]["parts"][0]["text"],
        "Internal error"
    );
    let error = &task["status"]["message"]["metadata"]["error"];
    assert_eq!(error["code"].as_f64(), Some(-32603.0), "{reply}");
    assert_eq!(error["reason"], "INTERNAL_ERROR");
    assert_eq!(error["domain"], "a2a-protocol.org");
    assert!(!reply.to_string().contains("hunter2"), "{reply}");

    // GetTask shows the same.
    let id = task["id"].as_str().unwrap();
    let got = rpc(&url, call(2, "GetTask", json!({"id": id}))).await;
    assert_eq!(got["result"]["status"], task["status"], "{got}");

    // A task whose executor failed before any event ends FAILED too, not SUBMITTED.
    let failed = rpc(&url, send(3, "m-early", "fail:internal")).await;
    assert_eq!(error_code(&failed), -32603);
    let listed = rpc(
        &url,
        call(4, "ListTasks", json!({"status": "TASK_STATE_SUBMITTED"})),
    )
    .await;
    assert_eq!(
        listed["result"]["tasks"].as_array().map_or(0, Vec::len),
        0,
        "{listed}"
    );
    let listed = rpc(
        &url,
        call(5, "ListTasks", json!({"status": "TASK_STATE_FAILED"})),
    )
    .await;
    let failed_texts: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|task| task["history"][0]["parts"][0]["text"].as_str())
        .collect();
    assert!(failed_texts.contains(&"fail:internal"), "{listed}");
    assert!(failed_texts.contains(&"work:fail"), "{listed}");
}

#[tokio::test]
async fn streams_end_in_one_error_event_in_each_bindings_shape() {
    let (_agent, base) = agent();
    let url = format!("{base}/");

    let (status, content_type, text) = post_raw(
        &url,
        call(1, "SendStreamingMessage", message("s1", "stream:3")).to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let seen = events(&text);
    assert_eq!(seen.len(), 4, "{text}");
    assert!(
        seen[..3]
            .iter()
            .all(|(_, event)| event["id"] == 1 && event["result"]["artifactUpdate"].is_object())
    );
    assert_eq!(
        seen[3].1["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let (_, _, text) = post_raw(
        &url,
        call(2, "message/stream", message("s2", "stream:fail_after:2")).to_string(),
    )
    .await;
    let seen = events(&text);
    assert_eq!(seen.len(), 3, "two updates, one error, the end: {text}");
    let (name, error) = &seen[2];
    assert_eq!(name, "error");
    assert_eq!(error["id"], 2, "the request's id: {error}");
    assert_eq!(error["error"]["code"], -32603);
    assert_eq!(error["error"]["data"][0]["reason"], "INTERNAL_ERROR");
    assert!(!text.contains("hunter2"), "{text}");
    let task_id = seen[0].1["result"]["artifactUpdate"]["taskId"]
        .as_str()
        .unwrap();
    let got = rpc(&url, call(3, "GetTask", json!({"id": task_id}))).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_FAILED",
        "{got}"
    );

    // Failing before any event is an ordinary error response, not a stream.
    let (status, content_type, text) = post_raw(
        &url,
        call(
            4,
            "SendStreamingMessage",
            message("s3", "stream:fail_after:0"),
        )
        .to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let reply: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (reply["id"].clone(), error_code(&reply)),
        (json!(4), -32603)
    );

    // REST: `event: error` with a google.rpc.Status body.
    let response = post_rest(
        &base,
        "/message:stream",
        message("s4", "stream:fail_after:1"),
    )
    .await;
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = response.text().await.unwrap();
    let seen = events(&text);
    assert_eq!(seen.len(), 2, "{text}");
    assert!(seen[0].1["artifactUpdate"].is_object(), "{text}");
    assert_eq!(seen[1].0, "error");
    assert_eq!(seen[1].1["error"]["status"], "INTERNAL", "{text}");
    assert_eq!(seen[1].1["error"]["details"][0]["reason"], "INTERNAL_ERROR");

    // A streaming method in a batch is refused, not run; the others are answered.
    let batch = json!([
        call(5, "SendStreamingMessage", message("s5", "stream:1")),
        call(6, "GetTask", json!({"id": "nope"})),
    ]);
    let (_, _, text) = post_raw(&url, batch.to_string()).await;
    let replies: Vec<Value> = serde_json::from_str(&text).unwrap();
    let code_of = |id: i64| {
        replies
            .iter()
            .find(|reply| reply["id"] == id)
            .map(error_code)
            .unwrap()
    };
    assert_eq!((code_of(5), code_of(6)), (-32600, -32001), "{text}");
}

#[tokio::test]
async fn rest_errors_carry_the_table_status_and_retry_after() {
    let (_agent, url) = agent();
    let limited = post_rest(&url, "/message:send", message("r1", "fail:rate_limited")).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "2");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "RATE_LIMITED");

    let internal = post_rest(&url, "/message:send", message("r2", "fail:internal")).await;
    assert_eq!(internal.status(), 500);
    let text = internal.text().await.unwrap();
    assert!(!text.contains("hunter2"), "{text}");

    let panic = post_rest(&url, "/message:send", message("r3", "fail:panic")).await;
    assert_eq!(panic.status(), 500);

    let unsupported = post_rest(&url, "/message:send", message("r4", "fail:unsupported")).await;
    assert_eq!(unsupported.status(), 400);

    let missing = reqwest::get(format!("{url}/tasks/nope")).await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND");

    let unknown = reqwest::get(format!("{url}/no/such/route")).await.unwrap();
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.json().await.unwrap();
    assert_eq!(body["error"]["code"], 404, "{body}");

    let version = reqwest::Client::new()
        .get(format!("{url}/tasks/x"))
        .header("A2A-Version", "0.9")
        .send()
        .await
        .unwrap();
    let body: Value = version.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );

    let card = card(&url).await;
    assert_eq!(card["capabilities"]["streaming"], true, "{card}");
    assert_eq!(card["supportedInterfaces"][0]["url"], format!("{url}/"));
}

#[tokio::test]
async fn send_message_is_idempotent_across_bindings_and_guarded_by_id() {
    let (_agent, url) = agent();
    let rpc_url = format!("{url}/");
    let first = rpc(&rpc_url, send(1, "same-id", "hello")).await;
    let task_id = first["result"]["task"]["id"].clone();
    // A REST retry of the same messageId replays the JSON-RPC reply: the same task.
    let retry: Value = post_rest(&url, "/message:send", message("same-id", "hello"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(retry["task"]["id"], task_id, "{retry}");

    // The same messageId with another message is refused.
    let reused = rpc(&rpc_url, send(2, "same-id", "something else")).await;
    assert_eq!(error_code(&reused), -32602, "{reused}");
    assert_eq!(reason(&reused), "MESSAGE_ID_REUSED");

    // Another caller (Authorization) has its own ids.
    let other = rpc_with(
        &rpc_url,
        ("authorization", "Bearer other"),
        send(3, "same-id", "something else"),
    )
    .await;
    assert_eq!(
        other["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{other}"
    );

    let long_id = "x".repeat(65 * 1024 + 1);
    let long = rpc(&rpc_url, send(4, &long_id, "hello")).await;
    assert_eq!(error_code(&long), -32602, "{}", &long.to_string()[..200]);
}

#[tokio::test]
async fn json_rpc_is_spec_exact_as_our_own_endpoint() {
    let (_agent, url) = agent();
    let url = format!("{url}/");
    crate::common::conformance::check(&url).await;

    // A notification runs and gets no body.
    let (status, _, text) = post_raw(
        &url,
        json!({"jsonrpc": "2.0", "method": "SendMessage", "params": message("n1", "hello")})
            .to_string(),
    )
    .await;
    assert_eq!((status, text.as_str()), (204, ""));

    // An empty SendMessage is -32602 with a peer-safe message.
    let empty = rpc(&url, call(1, "SendMessage", json!({}))).await;
    assert_eq!(error_code(&empty), -32602, "{empty}");

    // The caller's deadline bounds the handler.
    let started = Instant::now();
    let reply = rpc_with(
        &url,
        ("A2A-Deadline-Ms", "300"),
        send(2, "d1", "sleep:5000"),
    )
    .await;
    // DEADLINE_EXCEEDED: the endpoint's own answer, or (when the guard's timer wins the
    // race at the same instant) the task, WORKING at once, ended FAILED with it as cause.
    if reply["result"].is_object() {
        let status = &reply["result"]["task"]["status"];
        assert_eq!(status["state"], "TASK_STATE_FAILED", "{reply}");
        assert_eq!(
            status["message"]["metadata"]["error"]["code"], -32054,
            "{reply}"
        );
    } else {
        assert_eq!(error_code(&reply), -32054, "{reply}");
    }
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn two_agents_sharing_one_redis_share_replies() {
    if std::env::var_os("A2A_REDIS_SKIP").is_some_and(|v| v == "1") {
        eprintln!("SKIPPED: Redis (A2A_REDIS_SKIP=1)");
        return;
    }
    let redis = a2a_error_testkit::RedisServer::spawn()
        .expect("redis-server must be installed (the README's test command installs it)");
    let (_one, first) = start_example("sdk_agent", &["--redis", &redis.url]);
    let (_two, second) = start_example("sdk_agent", &["--redis", &redis.url]);
    let a = rpc(&format!("{first}/"), send(1, "shared-id", "hello")).await;
    let b = rpc(&format!("{second}/"), send(2, "shared-id", "hello")).await;
    assert_eq!(
        a["result"]["task"]["id"], b["result"]["task"]["id"],
        "{a}\n{b}"
    );
}

fn run_sdk_client(args: &[&str]) -> (i32, String) {
    crate::common::run_example("sdk_client", args)
}

#[test]
fn the_sdk_client_example_keeps_the_client_examples_contract() {
    let (_agent, base) = agent();
    let url = format!("{base}/");

    let (code, out) = run_sdk_client(&[&url, "flaky:2"]);
    crate::common::assert_flaky_2_output(code, &out);

    let (code, out) = run_sdk_client(&["--rest", &base, "fail:unsupported"]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("attempt 1: -32004"), "{out}");
    assert!(lines[0].ends_with("giving up (not retryable)"), "{out}");
    assert_eq!(
        lines.last().copied(),
        Some("error: UNSUPPORTED_OPERATION (category validation)"),
        "{out}"
    );

    let (code, out) = run_sdk_client(&["--stream", &url, "stream:2"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("event 1: "), "{out}");
    assert!(out.ends_with("stream done: 3 events\n"), "{out}");

    let (code, out) = run_sdk_client(&["--stream", "--rest", &base, "stream:fail_after:1"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stream ended after 1 events: -32603"), "{out}");
    assert!(
        out.ends_with("error: INTERNAL_ERROR (category transient)\n"),
        "{out}"
    );

    let (code, _) = run_sdk_client(&["--bogus", &url, "hello"]);
    assert_eq!(code, 2);
    let (code, _) = run_sdk_client(&[&url]);
    assert_eq!(code, 2);
}

/// Sends `count` JSON-RPC `sleep:MS` messages at once; the replies, once all are in.
async fn sleepers(url: &str, count: u64, millis: u64, tag: &str) -> Vec<Value> {
    let sent: Vec<_> = (0..count)
        .map(|n| {
            let (url, body) = (
                url.to_owned(),
                send(n, &format!("{tag}-{n}"), &format!("sleep:{millis}")),
            );
            tokio::spawn(async move { rpc(&format!("{url}/"), body).await })
        })
        .collect();
    let mut replies = Vec::new();
    for reply in sent {
        replies.push(reply.await.unwrap());
    }
    replies
}

/// `--adaptive`: one limit over JSON-RPC, HTTP+JSON and gRPC together, starting at 20
/// requests at once. Past it, each binding refuses at once with AGENT_UNAVAILABLE and a
/// delay to come back after (RetryInfo; `Retry-After` over HTTP+JSON); below it, the agent
/// answers. Without the flag, the same load is all answered.
#[tokio::test(flavor = "multi_thread")]
async fn with_adaptive_one_limit_sheds_every_binding_with_a_retry_delay() {
    use a2a_error::resilience::RetryPolicy;
    let port = a2a_error_testkit::free_port();
    let grpc = format!("127.0.0.1:{port}");
    let (_agent, url) = start_example("sdk_agent", &["--grpc", &grpc, "--adaptive"]);
    crate::common::wait_until_listening(port, Duration::from_secs(20), "the gRPC listener");

    // Forty at once, each running 3 s: twenty run, the others are refused at once.
    let busy = {
        let url = url.clone();
        tokio::spawn(async move { sleepers(&url, 40, 3000, "a").await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    // While they run, the other bindings are refused too: one limit.
    let rest = reqwest::Client::new()
        .post(format!("{url}/message:send"))
        .header("A2A-Version", "1.0")
        .json(&message("rest-1", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 503);
    let retry_after: u64 = rest.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&retry_after), "{retry_after}");
    let body: Value = rest.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "AGENT_UNAVAILABLE",
        "{body}"
    );
    let client = a2a_error::Client::<a2a_error::RemoteError>::grpc(grpc.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let refused = client
        .send_message::<_, Value>(&message("grpc-1", "hello"))
        .await
        .unwrap_err();
    let remote = refused.remote().expect("the agent's refusal");
    assert_eq!(
        a2a_error::A2aError::code(remote),
        a2a_error::code::AGENT_UNAVAILABLE
    );
    assert!(remote.retry_after().is_some(), "{remote:?}");

    let replies = busy.await.unwrap();
    let answered = replies.iter().filter(|r| r.get("result").is_some()).count();
    let shed: Vec<_> = replies
        .iter()
        .filter(|r| r.get("error").is_some())
        .collect();
    // Twenty ran (more only if a request was sent after the first had ended, on a machine
    // too busy to send forty in 3 s), and the others were refused.
    assert!(answered >= 20 && !shed.is_empty(), "{replies:?}");
    assert_eq!(answered + shed.len(), 40);
    for reply in &shed {
        assert_eq!(
            error_code(reply),
            i64::from(a2a_error::code::AGENT_UNAVAILABLE),
            "{reply}"
        );
        assert_eq!(reason(reply), "AGENT_UNAVAILABLE");
        let info = &reply["error"]["data"][1];
        assert_eq!(
            info["@type"], "type.googleapis.com/google.rpc.RetryInfo",
            "{reply}"
        );
    }
    // Under the limit again: answered on every binding.
    let reply = rpc(&format!("{url}/"), send(100, "after", "hello")).await;
    assert!(reply.get("result").is_some(), "{reply}");
    let _: Value = client
        .send_message(&message("grpc-2", "hello"))
        .await
        .unwrap();

    // Without the flag, the same forty are all answered.
    let (_plain, plain) = start_example("sdk_agent", &[]);
    let replies = sleepers(&plain, 40, 1000, "b").await;
    assert!(
        replies.iter().all(|r| r.get("result").is_some()),
        "{replies:?}"
    );
}

/// Reads one HTTP/1.1 response with a `content-length` from `stream`: its status line.
async fn read_response(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).to_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse().unwrap());
            while seen.len() < end + 4 + length {
                let n = stream.read(&mut buf).await.ok()?;
                if n == 0 {
                    return None;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            return head.lines().next().map(str::to_owned);
        }
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        seen.extend_from_slice(&buf[..n]);
    }
}

/// A CancelTask over HTTP+JSON with a body (as the official clients send it) leaves the
/// connection open for the caller's next request: its body is read, not left for the
/// server to close the connection over.
#[tokio::test]
async fn a_cancel_with_a_body_keeps_the_connection_alive() {
    use tokio::io::AsyncWriteExt;
    let (_agent, url) = agent();
    let mut stream = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .unwrap();
    let body = r#"{"metadata":{"why":"test"}}"#;
    let cancel = format!(
        "POST /tasks/nope:cancel HTTP/1.1\r\nhost: x\r\nA2A-Version: 1.0\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    // The body in a packet of its own, after the headers, as on a real network: a server
    // that answers without reading it then closes the connection.
    stream.write_all(cancel.as_bytes()).await.unwrap();
    stream.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    stream.write_all(body.as_bytes()).await.unwrap();
    let status = read_response(&mut stream)
        .await
        .expect("a reply to the cancel");
    assert!(status.contains(" 404"), "{status}");
    stream
        .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let status = read_response(&mut stream)
        .await
        .expect("the connection is still open");
    assert!(status.contains(" 200"), "{status}");
    // A body that is not JSON is the caller's mistake, said so.
    let mut stream = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .unwrap();
    let cancel = "POST /tasks/nope:cancel HTTP/1.1\r\nhost: x\r\nA2A-Version: 1.0\r\ncontent-length: 3\r\n\r\n{{{";
    stream.write_all(cancel.as_bytes()).await.unwrap();
    let status = read_response(&mut stream).await.unwrap();
    assert!(status.contains(" 400"), "{status}");
}
