//! The client against a hostile peer on loopback: a raw TCP server that answers every request
//! with bytes chosen to crash, exhaust or mislead a client. Each test is one defect class from
//! the hardening review; none may panic, grow without bound or outlive its deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_error::Client;
use a2a_error::client::{ClientError, ReplyLimits};
use a2a_error::resilience::Timeout;
use a2a_error::resilience::{RetryPolicy, RetrySafety};
use a2a_error::{A2aError, RemoteError};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the hostile peer writes after reading one request.
#[derive(Clone)]
enum Script {
    /// A whole HTTP response, as bytes.
    Reply(Vec<u8>),
    /// A 200 chunked reply whose body never ends: `chunk` again and again.
    Endless {
        content_type: &'static str,
        chunk: Vec<u8>,
    },
    /// An SSE 200 reply: `first` at once, then `tail` one byte every `every`.
    Drip {
        first: Vec<u8>,
        tail: Vec<u8>,
        every: Duration,
    },
}

/// A raw TCP peer; returns its URL and the number of requests it has read.
async fn hostile(script: Script) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let script = script.clone();
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let _ = answer(socket, script, counter).await;
            });
        }
    });
    (url, requests)
}

/// Reads one request (headers and a Content-Length body), then runs the script.
async fn answer(
    mut socket: TcpStream,
    script: Script,
    requests: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if socket.read(&mut byte).await? == 0 {
                return Ok(());
            }
            head.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let length = text
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; length];
        socket.read_exact(&mut body).await?;
        requests.fetch_add(1, Ordering::SeqCst);
        match &script {
            Script::Reply(bytes) => socket.write_all(bytes).await?,
            Script::Endless {
                content_type,
                chunk,
            } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
                );
                socket.write_all(head.as_bytes()).await?;
                let framed = [
                    format!("{:x}\r\n", chunk.len()).into_bytes(),
                    chunk.clone(),
                    b"\r\n".to_vec(),
                ]
                .concat();
                loop {
                    socket.write_all(&framed).await?;
                }
            }
            Script::Drip { first, tail, every } => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                socket.write_all(head.as_bytes()).await?;
                let chunk = |bytes: &[u8]| {
                    [
                        format!("{:x}\r\n", bytes.len()).into_bytes(),
                        bytes.to_vec(),
                        b"\r\n".to_vec(),
                    ]
                    .concat()
                };
                socket.write_all(&chunk(first)).await?;
                for byte in tail.iter().cycle() {
                    tokio::time::sleep(*every).await;
                    socket.write_all(&chunk(&[*byte])).await?;
                }
            }
        }
    }
}

/// A JSON 200 reply with `body`, plus extra header lines.
fn json_reply(status: &str, headers: &str, body: &Value) -> Script {
    let body = body.to_string();
    Script::Reply(
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{headers}\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

/// An error object reply to request `id`, with `data`.
fn error_reply(id: Value, code: i32, data: Value) -> Script {
    json_reply(
        "200 OK",
        "",
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "m", "data": data}}),
    )
}

fn message(text: &str) -> Value {
    json!({"message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn client(url: &str, policy: RetryPolicy<ClientError>) -> Client {
    Client::jsonrpc(url).retry(policy).build().unwrap()
}

/// Every call here must end well within this; a hang is the defect.
async fn bounded<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call outlived its bound")
}

/// The error a streaming call of `text` ends in before its first event, within the bound.
async fn stream_refused(client: &Client<RemoteError>, text: &str) -> ClientError {
    bounded(client.send_streaming_message(&message(text)))
        .await
        .err()
        .expect("no event ever came")
}

#[tokio::test]
async fn hostile_durations_neither_panic_nor_park_the_call() {
    let retry_info = |delay: Value| json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]);
    // Not a valid protobuf Duration (nanos past 999,999,999): read as no delay, so the call
    // backs off as for any rate limit, within its attempts.
    let invalid = error_reply(
        Value::Null,
        -32052,
        retry_info(json!({"seconds": "18446744073709551615", "nanos": 4294967295u32})),
    );
    let policy = RetryPolicy::default().base_delay(Duration::from_millis(1));
    let (url, requests) = hostile(invalid).await;
    let error = bounded(client(&url, policy).call::<_, Value>("SendMessage", &message("x")))
        .await
        .unwrap_err();
    assert_eq!(error.retry_after(), None);
    assert_eq!(requests.load(Ordering::SeqCst), 4);

    let cases = [
        error_reply(
            Value::Null,
            -32052,
            retry_info(json!({"seconds": "18446744073709551615", "nanos": 999_999_999})),
        ),
        error_reply(
            Value::Null,
            -32052,
            retry_info(json!("18446744073709551615s")),
        ),
        error_reply(Value::Null, -32052, json!({"retryAfter": 1e19})),
        json_reply(
            "503 Service Unavailable",
            "retry-after: 9223372036854775807\r\n",
            &json!({}),
        ),
        json_reply(
            "429 Too Many Requests",
            "retry-after: 999999999\r\n",
            &json!({}),
        ),
    ];
    for script in cases {
        for (policy, total) in [
            (RetryPolicy::default(), Some(Duration::from_secs(90))),
            (RetryPolicy::default(), None),
            (RetryPolicy::none(), Some(Duration::from_secs(90))),
        ] {
            let (url, requests) = hostile(script.clone()).await;
            let client = Client::jsonrpc(&url)
                .retry(policy)
                .total_timeout(total)
                .build()
                .unwrap();
            let result: Result<Value, ClientError> =
                bounded(client.send_message(&message("x"))).await;
            let error = result.unwrap_err();
            // Asked to wait longer than the policy's cap: the call ends at once.
            assert_eq!(requests.load(Ordering::SeqCst), 1, "{error:?}");
            let _ = (
                error.retry_after(),
                error.retry_advice().is_retryable(),
                error.to_error_object(),
            );
        }
    }
}

#[tokio::test]
async fn a_server_delay_within_the_cap_is_still_honoured() {
    let (url, requests) = hostile(error_reply(
        Value::Null,
        -32052,
        json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}]),
    ))
    .await;
    let policy = RetryPolicy::default()
        .max_attempts(2)
        .max_server_delay(Duration::from_secs(1));
    let started = std::time::Instant::now();
    let _ = bounded(client(&url, policy).call::<_, Value>("SendMessage", &message("x"))).await;
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn an_endless_reply_body_is_cut_at_the_limit() {
    let (url, _) = hostile(Script::Endless {
        content_type: "application/json",
        chunk: vec![b' '; 64 << 10],
    })
    .await;
    let client = Client::<RemoteError>::jsonrpc(&url)
        .retry(RetryPolicy::none())
        .limits(ReplyLimits::default().max_body_bytes(1 << 20))
        .build()
        .unwrap();
    let error = bounded(client.call::<_, Value>("SendMessage", &message("x")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::ReplyTooLarge { limit, .. } if limit == 1 << 20),
        "{error:?}"
    );
    assert!(!error.retry_advice().is_retryable());
    assert!(error.to_string().contains("limit"), "{error}");

    // A declared length over the limit is refused before reading.
    let huge = Script::Reply(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 999999999999\r\n\r\n{"
            .to_vec(),
    );
    let (url, _) = hostile(huge).await;
    let client = Client::<RemoteError>::jsonrpc(&url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let error = bounded(client.call::<_, Value>("GetTask", &json!({"id": "t"})))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::ReplyTooLarge { .. }),
        "{error:?}"
    );
    assert_eq!(error.reply_status(), Some(200));
}

#[tokio::test]
async fn an_sse_event_that_never_ends_is_cut_at_the_event_limit() {
    for chunk in [
        vec![b'a'; 16 << 10],
        b"data: xxxxxxxxxxxxxxxx\n".repeat(1024),
    ] {
        let (url, _) = hostile(Script::Endless {
            content_type: "text/event-stream",
            chunk,
        })
        .await;
        let client = Client::<RemoteError>::jsonrpc(&url)
            .retry(RetryPolicy::none())
            .limits(ReplyLimits::default().max_event_bytes(256 << 10))
            .build()
            .unwrap();
        let error = stream_refused(&client, "x").await;
        assert!(
            matches!(error, ClientError::ReplyTooLarge { limit, .. } if limit == 256 << 10),
            "{error:?}"
        );
    }
}

/// One JSON-RPC result event for request `id`.
fn event(id: u64) -> Vec<u8> {
    format!("data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"n\":1}}}}\n\n").into_bytes()
}

#[tokio::test]
async fn a_stream_that_goes_quiet_ends_with_an_idle_timeout() {
    // A comment, then one byte of a comment line every 400 ms: bytes flow, events never do.
    let (url, _) = hostile(Script::Drip {
        first: b": hello\n".to_vec(),
        tail: b": still here\n".to_vec(),
        every: Duration::from_millis(400),
    })
    .await;
    let client = Client::<RemoteError>::jsonrpc(&url)
        .retry(RetryPolicy::none())
        .limits(ReplyLimits::default().idle_timeout(Duration::from_millis(300)))
        .build()
        .unwrap();
    let error = stream_refused(&client, "x").await;
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Idle)),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_total_deadline_bounds_a_stream_after_its_first_event() {
    // A peer that echoes any id: it answers whatever the client's request id is, so the test
    // finds it from the request. Simpler: a stream whose events keep the connection busy but
    // whose every event after the first is an SSE comment, one byte every 50 ms.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buffer = vec![0u8; 64 << 10];
        let n = socket.read(&mut buffer).await.unwrap();
        let request = String::from_utf8_lossy(&buffer[..n]).to_string();
        let id: u64 = request
            .split("\"id\":")
            .nth(1)
            .and_then(|rest| rest.split([',', '}']).next())
            .and_then(|id| id.trim().parse().ok())
            .unwrap();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(&event(id)).await.unwrap();
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if socket.write_all(b":\n").await.is_err() {
                return;
            }
        }
    });
    let client = Client::<RemoteError>::jsonrpc(&url)
        .retry(RetryPolicy::none())
        .total_timeout(Duration::from_millis(800))
        .build()
        .unwrap();
    let mut events = bounded(client.send_streaming_message(&message("x")))
        .await
        .unwrap();
    let first: Value = serde_json::from_str(events.next().await.unwrap().unwrap().get()).unwrap();
    assert_eq!(first["n"], 1);
    let end = bounded(events.next()).await.unwrap().unwrap_err();
    assert!(
        matches!(end, ClientError::Timeout(Timeout::Total)),
        "{end:?}"
    );
    assert!(bounded(events.next()).await.is_none());
}

#[tokio::test]
async fn a_redirect_loop_is_one_post_and_is_not_retried() {
    let (url, requests) = hostile(Script::Reply(
        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /\r\ncontent-length: 0\r\n\r\n".to_vec(),
    ))
    .await;
    let error = bounded(
        client(&url, RetryPolicy::default()).call::<_, Value>("SendMessage", &message("x")),
    )
    .await
    .unwrap_err();
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert_eq!(error.reply_status(), Some(307), "{error:?}");
    assert!(!error.retry_advice().is_retryable());

    // Allowed redirects that still loop end as a non-retryable error, not a transport one.
    let client = Client::<RemoteError>::jsonrpc(&url)
        .max_redirects(3)
        .build()
        .unwrap();
    let error = bounded(client.call::<_, Value>("SendMessage", &message("x")))
        .await
        .unwrap_err();
    assert_eq!(requests.load(Ordering::SeqCst), 1 + 4);
    assert!(matches!(error, ClientError::Malformed { .. }), "{error:?}");
}

#[tokio::test]
async fn an_error_for_another_request_is_malformed_not_ours() {
    let (url, requests) = hostile(error_reply(
        json!(987654321),
        -32053,
        json!({"retryable": true}),
    ))
    .await;
    let error = bounded(
        client(&url, RetryPolicy::default()).call::<_, Value>("SendMessage", &message("x")),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, ClientError::Malformed { .. }), "{error:?}");
    assert_eq!(requests.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_delay_never_overrides_do_not_retry() {
    let retry_info =
        json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.01s"});
    let cases = [
        // Legacy: an explicit "never" with a delay.
        error_reply(
            Value::Null,
            -32603,
            json!({"retryable": false, "retryAfter": 0.01}),
        ),
        // A RetryInfo on errors of never-retried categories.
        error_reply(Value::Null, -32001, json!([retry_info.clone()])),
        error_reply(Value::Null, -32006, json!([retry_info.clone()])),
        error_reply(Value::Null, -32004, json!([retry_info.clone()])),
        error_reply(Value::Null, -32050, json!([retry_info])),
    ];
    for script in cases {
        let (url, requests) = hostile(script).await;
        let error = bounded(
            client(&url, RetryPolicy::default()).call::<_, Value>("SendMessage", &message("x")),
        )
        .await
        .unwrap_err();
        assert!(!error.retry_advice().is_retryable(), "{error:?}");
        assert_eq!(requests.load(Ordering::SeqCst), 1, "{error:?}");
    }
}

#[tokio::test]
async fn unsafe_methods_are_repeated_only_after_errors_decided_before_work() {
    let fast = || {
        RetryPolicy::default()
            .base_delay(Duration::from_millis(1))
            .max_delay(Duration::from_millis(2))
            .method("TransferFunds", RetrySafety::Unsafe)
    };
    // Refused before any work: repeated even though the method is unsafe.
    let pushback =
        json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.001s"}]);
    for (code, data) in [(-32052, json!(null)), (-32053, pushback)] {
        let (url, requests) = hostile(error_reply(Value::Null, code, data)).await;
        let _ =
            bounded(client(&url, fast()).call::<_, Value>("TransferFunds", &message("x"))).await;
        assert_eq!(requests.load(Ordering::SeqCst), 4, "{code}");
    }
    // Maybe half-done: internal error, deadline exceeded after the handler was stopped,
    // unavailable without pushback, a downstream failure. Never repeated.
    for code in [-32603, -32054, -32053, -32057] {
        let (url, requests) = hostile(error_reply(Value::Null, code, json!(null))).await;
        let error = bounded(client(&url, fast()).call::<_, Value>("TransferFunds", &message("x")))
            .await
            .unwrap_err();
        assert!(error.may_have_run(), "{code}");
        assert_eq!(requests.load(Ordering::SeqCst), 1, "{code}");
        // The same reply for a safe method is retried.
        let (url, requests) = hostile(error_reply(Value::Null, code, json!(null))).await;
        let _ =
            bounded(client(&url, fast()).call::<_, Value>("GetTask", &json!({"id": "t"}))).await;
        assert_eq!(requests.load(Ordering::SeqCst), 4, "{code}");
    }
}

#[tokio::test]
async fn a_panic_on_our_server_is_answered_once_and_not_retried() {
    let (_agent, url) = crate::common::start_example("agent", &[]);
    let attempts = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&attempts);
    let policy = RetryPolicy::default()
        .base_delay(Duration::from_millis(1))
        .on_retry(move |_, _: &ClientError, _| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
    let error = bounded(
        client(&format!("{url}/"), policy).send_message::<_, Value>(&message("fail:panic")),
    )
    .await
    .unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 0, "retried a panic");
    let remote = error.remote().unwrap();
    assert_eq!(remote.code(), -32603);
    assert_eq!(remote.retryable(), Some(false));
    assert!(!error.retry_advice().is_retryable());
    // A -32603 that does not say "never" (a peer that is not this project) keeps today's
    // reading: retried with backoff.
    let (url, requests) = hostile(error_reply(Value::Null, -32603, json!(null))).await;
    let policy = RetryPolicy::default().base_delay(Duration::from_millis(1));
    let _ = bounded(client(&url, policy).call::<_, Value>("SendMessage", &message("x"))).await;
    assert_eq!(requests.load(Ordering::SeqCst), 4);
}

/// A whole SSE reply of `body`, with its length.
fn sse_reply(body: &[u8]) -> Script {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    Script::Reply([head.as_bytes(), body].concat())
}

fn rest_client(url: &str) -> Client {
    Client::rest(url.trim_end_matches('/'))
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_byte_order_mark_and_cr_line_ends_are_read_not_a_panic() {
    // eventsource-stream 0.2.3 panicked on the BOM (a slice inside a 3-byte character) and
    // lost a last event whose lines end in CR only.
    let (url, _) = hostile(sse_reply(
        b"\xEF\xBB\xBFdata: {\"n\":1}\r\rdata: {\"n\":2}\r\r",
    ))
    .await;
    let events: Vec<_> = bounded(async {
        rest_client(&url)
            .send_streaming_message(&message("bom"))
            .await
            .unwrap()
            .collect()
            .await
    })
    .await;
    let texts: Vec<String> = events
        .into_iter()
        .map(|event| event.unwrap().get().to_owned())
        .collect();
    assert_eq!(texts, [r#"{"n":1}"#, r#"{"n":2}"#]);
}

#[tokio::test]
async fn a_call_that_is_not_streaming_refuses_an_event_stream_unread() {
    // Not even parsed: a plain SendMessage answered with SSE (a BOM first) is malformed.
    let (url, requests) = hostile(sse_reply(b"\xEF\xBB\xBFdata: {}\n\n")).await;
    for client in [client(&url, RetryPolicy::none()), rest_client(&url)] {
        let error = bounded(client.send_message::<_, Value>(&message("plain")))
            .await
            .unwrap_err();
        assert!(matches!(error, ClientError::Malformed { .. }), "{error:?}");
    }
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blank_lines_without_end_cost_linear_work_and_the_deadline_holds() {
    // An endless stream of blank lines: no event ever comes. The parser was quadratic in
    // them (27 s of CPU for 512 KiB inside one poll, past any deadline); now each poll does a
    // bounded amount of linear work, so the call's deadline fires on time.
    let (url, _) = hostile(Script::Endless {
        content_type: "text/event-stream",
        chunk: vec![b'\n'; 64 << 10],
    })
    .await;
    let client = Client::<RemoteError>::rest(url.trim_end_matches('/'))
        .retry(RetryPolicy::none())
        .total_timeout(Duration::from_millis(700))
        .build()
        .unwrap();
    let error = stream_refused(&client, "blank").await;
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Total)),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_peer_message_cannot_forge_log_lines_or_terminal_output() {
    let forged = format!("boom\nINFO admin logged in\x1b[2J{}", "x".repeat(1 << 20));
    let (url, _) = hostile(json_reply(
        "200 OK",
        "",
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32603, "message": forged}}),
    ))
    .await;
    let error =
        bounded(client(&url, RetryPolicy::none()).call::<_, Value>("GetTask", &json!({"id": "t"})))
            .await
            .unwrap_err();
    let shown = error.to_string();
    assert!(
        !shown.contains('\n') && !shown.contains('\x1b'),
        "{shown:.200}"
    );
    assert!(shown.len() < 1024, "{} bytes", shown.len());
    // The peer's text is still there in full for code that asks for it.
    assert_eq!(error.remote().unwrap().message().len(), forged.len());
}

#[tokio::test]
async fn a_huge_error_data_is_kept_within_its_node_budget() {
    let data: Vec<Value> = (0..200_000).map(|i| json!({"a": i})).collect();
    let (url, _) = hostile(error_reply(Value::Null, -32603, Value::Array(data))).await;
    let error =
        bounded(client(&url, RetryPolicy::none()).call::<_, Value>("GetTask", &json!({"id": "t"})))
            .await
            .unwrap_err();
    let kept = error
        .remote()
        .unwrap()
        .data()
        .unwrap()
        .as_array()
        .unwrap()
        .len();
    assert!(kept < a2a_error::MAX_DATA_NODES, "{kept}");
    assert!(kept > 1000, "{kept}");
}

/// A peer that accepts connections and never answers; returns its URL and the sockets it holds.
async fn black_hole() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let held = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&held);
    tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            sockets.push(socket);
        }
    });
    (url, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_behind_deadline_bound_callers_opens_its_circuit() {
    use a2a_error::resilience::breaker::State;
    let (url, _) = black_hole().await;
    // Default stack: the attempt timeout (30 s) never fires first; each call is cut by the
    // 1 s deadline its caller sent, which before counted as nothing.
    let client = Client::<RemoteError>::jsonrpc(&url).build().unwrap();
    let params = json!({"id": "t"});
    for _ in 0..5 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        let call = client.call::<_, Value>("GetTask", &params);
        let error = bounded(a2a_error::with_deadline(deadline, call))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ClientError::Timeout(Timeout::Total)),
            "{error:?}"
        );
    }
    assert_eq!(client.breaker().unwrap().state(), State::Open);
    // The next caller fails fast instead of waiting out its deadline.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    let call = client.call::<_, Value>("GetTask", &params);
    let error = bounded(a2a_error::with_deadline(deadline, call))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::CircuitOpen { .. }),
        "{error:?}"
    );
    assert!(tokio::time::Instant::now() < deadline);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_to_one_agent_are_bounded_by_its_bulkhead() {
    use a2a_error::resilience::Bulkhead;
    let (url, held) = black_hole().await;
    let bulkhead = Bulkhead::new(8, 4);
    let client = Client::<RemoteError>::jsonrpc(&url)
        .retry(RetryPolicy::none())
        .without_breaker()
        .bulkhead(bulkhead.clone())
        .total_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .call::<_, Value>("GetTask", &json!({"id": format!("t{i}")}))
                    .await
            })
        })
        .collect();
    let mut full = 0;
    for call in calls {
        match bounded(call).await.unwrap().unwrap_err() {
            ClientError::BulkheadFull => full += 1,
            ClientError::Timeout(Timeout::Total) => {}
            other => panic!("{other:?}"),
        }
    }
    // 8 in flight and 4 waiting; the other 88 were refused at once, never sent.
    assert_eq!(full, 88);
    assert!(
        held.load(Ordering::SeqCst) <= 12,
        "{} sockets",
        held.load(Ordering::SeqCst)
    );
    assert_eq!((bulkhead.in_flight(), bulkhead.queued()), (0, 0));
}
