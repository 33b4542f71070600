//! Hostile peers, third round, against the SDK bridge in process (an SDK
//! `DefaultRequestHandler` with a guarded executor, served by `Bridge` on loopback with real
//! sockets and a real HTTP client): work ends with its request.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a::{
    A2AError, AgentCapabilities, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore};
use a2a_error::server::Dedup;
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// Counts the executions alive: an execution's stream holds one of these until dropped.
struct Alive(Arc<AtomicUsize>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An executor whose work never ends by itself: one WORKING event, then nothing, ever.
struct Endless {
    alive: Arc<AtomicUsize>,
}

impl AgentExecutor for Endless {
    fn execute(&self, ctx: ExecutorContext) -> Events {
        self.alive.fetch_add(1, Ordering::SeqCst);
        let alive = Alive(Arc::clone(&self.alive));
        let working = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        stream::iter([Ok(working)])
            .chain(stream::once(async move {
                let _alive = alive;
                std::future::pending::<()>().await;
                unreachable!()
            }))
            .boxed()
    }

    fn cancel(&self, _ctx: ExecutorContext) -> Events {
        stream::empty().boxed()
    }
}

/// The bridge over `Endless`: the count of its executions alive, and the bridge.
fn endless() -> (Arc<AtomicUsize>, Bridge<DefaultRequestHandler>) {
    let alive = Arc::new(AtomicUsize::new(0));
    let store = MemoryTaskStore::new(16 << 20);
    let executor = Guarded::new(
        Endless {
            alive: Arc::clone(&alive),
        },
        Arc::new(store.clone()),
    );
    let handler =
        DefaultRequestHandler::new(executor, store).with_capabilities(AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: None,
        });
    (alive, Bridge::new(handler))
}

fn send(method: &str, message_id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "work"}]}}})
}

/// Waits until no execution is alive (a bounded wait: the work must end, however slowly the
/// machine runs); panics with `what` if one still is after 20 s.
async fn until_none_alive(alive: &AtomicUsize, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while alive.load(Ordering::SeqCst) > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} executions still running",
            alive.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridges_timeout_ends_the_work_too() {
    for with_dedup in [false, true] {
        let (alive, bridge) = endless();
        let bridge = bridge.timeout(Duration::from_millis(300));
        let bridge = if with_dedup {
            bridge.dedup(Dedup::in_memory())
        } else {
            bridge
        };
        let url = crate::common::serve(bridge.router()).await;
        // The caller sends no deadline of its own: only the bridge's timeout bounds the work.
        let reply = crate::common::requests::rpc(&url, send("SendMessage", "m-1")).await;
        // DEADLINE_EXCEEDED: the endpoint's answer, or the guard's (the task FAILED with it),
        // whichever of the two equal deadlines fired first.
        let failed = &reply["result"]["task"]["status"];
        assert!(
            reply["error"]["code"] == -32054
                || (failed["state"] == "TASK_STATE_FAILED"
                    && failed["message"]["metadata"]["error"]["reason"] == "DEADLINE_EXCEEDED"),
            "{reply}"
        );
        until_none_alive(&alive, "after the bridge's timeout").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_answered_at_once_runs_on_after_its_answer() {
    let (alive, bridge) = endless();
    // Not the bridge's timeout either: the answer came before it.
    let url = crate::common::serve(bridge.timeout(Duration::from_millis(300)).router()).await;
    let mut request = send("SendMessage", "m-now");
    request["params"]["configuration"] = json!({"returnImmediately": true});
    let reply = crate::common::requests::rpc(&url, request).await;
    assert!(reply["result"]["task"]["id"].is_string(), "{reply}");
    // Well past the answer and the bridge's timeout, the execution still runs.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(alive.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_whose_caller_hung_up_ends() {
    let (alive, bridge) = endless();
    let url = crate::common::serve(bridge.router()).await;
    // A unary caller that hangs up (no dedup keeps the work for a retry).
    let hung_up = reqwest::Client::new()
        .post(&url)
        .json(&send("SendMessage", "m-2"))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(hung_up.is_err());
    until_none_alive(&alive, "after a unary caller hung up").await;

    // A stream read to its first event, then dropped: the task ends CANCELED.
    let response = reqwest::Client::new()
        .post(&url)
        .json(&send("SendStreamingMessage", "m-3"))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&first).into_owned();
    let data = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap();
    let event: Value = serde_json::from_str(data.trim()).unwrap();
    let task_id = event["result"]["task"]["id"]
        .as_str()
        .or(event["result"]["statusUpdate"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("{event}"))
        .to_owned();
    drop(body);
    until_none_alive(&alive, "after a stream's reader left").await;
    let task = crate::common::requests::rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}),
    )
    .await;
    assert_eq!(
        task["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{task}"
    );
}

/// A failed task's `code` is an integer on every binding, as the error object's is, though
/// it went through a protobuf `Struct` (doubles) in the SDK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tasks_code_is_an_integer_on_every_binding() {
    use a2a_error::resilience::RetryPolicy;
    use a2a_error::{Client, RemoteError};
    let (_agent, url, grpc) = crate::common::start_grpc_agent();
    let message = |id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "work:fail"}]}});
    let over_rpc = crate::common::requests::rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("c-1")}),
    )
    .await;
    let over_rest: Value = reqwest::Client::new()
        .post(format!("{url}/message:send"))
        .json(&message("c-2"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client = Client::<RemoteError>::grpc(grpc.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let over_grpc: Value = client.send_message(&message("c-3")).await.unwrap();
    let task_id = over_rpc["result"]["task"]["id"].as_str().unwrap();
    let read_back = crate::common::requests::rpc(
        &url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}),
    )
    .await;
    for (binding, task) in [
        ("JSON-RPC", &over_rpc["result"]["task"]),
        ("REST", &over_rest["task"]),
        ("gRPC", &over_grpc["task"]),
        ("GetTask", &read_back["result"]),
    ] {
        let code = &task["status"]["message"]["metadata"]["error"]["code"];
        assert_eq!(code.as_i64(), Some(-32603), "{binding}: {task}");
        assert!(!code.to_string().contains('.'), "{binding}: {code}");
    }
}

/// Serves `bridge`'s gRPC service within `limits` on loopback: its target.
async fn serve_grpc(
    bridge: Bridge<DefaultRequestHandler>,
    limits: a2a_error::sdk::GrpcLimits,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { bridge.serve_grpc(listener, limits).await });
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_past_the_limit_in_flight_are_shed_with_a_retry_delay() {
    use a2a_error::resilience::RetryPolicy;
    use a2a_error::{A2aError, Client, RemoteError};
    let (alive, bridge) = endless();
    // One caller: its quota is all of them.
    let limits = a2a_error::sdk::GrpcLimits::default()
        .max_in_flight(4)
        .max_per_caller(4);
    let target = serve_grpc(bridge, limits).await;
    let client = Client::<RemoteError>::grpc(target.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    // Four calls that never end hold the four slots.
    let mut held = Vec::new();
    for n in 0..4 {
        let client = client.clone();
        let params = send("SendMessage", &format!("held-{n}"))["params"].clone();
        held.push(tokio::spawn(async move {
            client.send_message::<_, Value>(&params).await
        }));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while alive.load(Ordering::SeqCst) < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the held calls never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shed = client
        .call::<_, Value>("GetTask", &json!({"id": "t-1"}))
        .await
        .unwrap_err();
    let remote = shed.remote().unwrap_or_else(|| panic!("{shed:?}"));
    assert_eq!(remote.code(), -32053, "{shed:?}");
    assert!(remote.retry_after().unwrap() >= Duration::from_millis(100));
    // The held calls' callers leave: their slots come free, and their work ends.
    for call in held {
        call.abort();
    }
    until_none_alive(&alive, "after the held gRPC callers left").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let error = client
            .call::<_, Value>("GetTask", &json!({"id": "t-1"}))
            .await
            .unwrap_err();
        if error.remote().is_some_and(|remote| remote.code() == -32001) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{error:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_grpc_connections_are_closed() {
    let (_, bridge) = endless();
    let limits = a2a_error::sdk::GrpcLimits::default()
        .idle_timeout(Duration::from_millis(300))
        .max_connections(2);
    let target = serve_grpc(bridge, limits).await;
    // Three connections that never send a byte: the cap serves two, closes them when idle,
    // then serves and closes the third.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(tokio::net::TcpStream::connect(&target).await.unwrap());
    }
    for mut socket in idle {
        assert!(
            closed_within(&mut socket, Duration::from_secs(20)).await,
            "an idle connection stayed open"
        );
    }
}

/// Whether the server closes `socket` within `limit`, whatever it sends first (its preface,
/// SETTINGS).
async fn closed_within(socket: &mut tokio::net::TcpStream, limit: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    tokio::time::timeout(limit, async {
        while let Ok(1..) = socket.read(&mut buf).await {}
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_connections_that_start_no_call_are_closed() {
    use tokio::io::AsyncWriteExt;
    let (_, bridge) = endless();
    // The idle timeout is long: only the first-call timeout can close these.
    let limits =
        a2a_error::sdk::GrpcLimits::default().first_call_timeout(Duration::from_millis(300));
    let target = serve_grpc(bridge, limits).await;
    let mut silent = tokio::net::TcpStream::connect(&target).await.unwrap();
    // A peer that speaks HTTP/2 (its preface, an empty SETTINGS) and then starts no call.
    let mut handshaken = tokio::net::TcpStream::connect(&target).await.unwrap();
    handshaken
        .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .unwrap();
    for socket in [&mut silent, &mut handshaken] {
        assert!(
            closed_within(socket, Duration::from_secs(10)).await,
            "a connection that started no call stayed open"
        );
    }
}

/// A gRPC request body: `message` with the 5-byte length prefix.
fn grpc_frame(message: &impl prost::Message) -> bytes::Bytes {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
    framed.extend_from_slice(&body);
    framed.into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_reader_that_does_not_read_is_let_go() {
    let (_, bridge) = endless();
    let http = crate::common::serve(bridge.router()).await;
    let limits = a2a_error::sdk::GrpcLimits::default().send_timeout(Duration::from_millis(500));
    let target = serve_grpc(bridge, limits).await;
    let task = big_task(&http, "big").await;
    // A reader that advertises a zero window and asks for it twenty times.
    let (mut sender, connection) = h2_reader(&target, 0).await;
    let mut replies = Vec::new();
    for _ in 0..20 {
        sender.ready().await.unwrap();
        let reply = sender
            .send_request(grpc_get_task(&target, &task))
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        // Held, never read.
        replies.push(reply);
    }
    // The server lets the connection go, and the replies with it.
    let ended = tokio::time::timeout(Duration::from_secs(20), connection).await;
    assert!(
        ended.is_ok(),
        "the connection of a reader that does not read stayed open"
    );
    // Other callers are served.
    let read = rpc_as(&http, None, "GetTask", json!({"id": task})).await;
    assert_eq!(read["result"]["id"], task.as_str());
}

/// Replies owed to readers that do not read are bounded in bytes across connections: past
/// the bound a reply is AGENT_UNAVAILABLE (gRPC UNAVAILABLE) at once, not held; once the
/// reader is let go, its room comes back and a reader that reads is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_replies_owed_to_readers_that_do_not_read_are_bounded_in_bytes() {
    use http_body_util::BodyExt;
    let (_, bridge) = endless();
    let http = crate::common::serve(bridge.router()).await;
    // Long enough for the twenty calls on a busy machine: only then is the reader let go.
    let limits = a2a_error::sdk::GrpcLimits::default()
        .send_timeout(Duration::from_secs(10))
        .max_owed_bytes(4 << 20);
    let target = serve_grpc(bridge, limits).await;
    let task = big_task(&http, "owed").await;
    let get_task = || grpc_get_task(&target, &task);
    // A reader with a zero window asks for the 1.6 MB task twenty times: two fit in 4 MiB.
    let (mut sender, connection) = h2_reader(&target, 0).await;
    let (mut held, mut refused) = (Vec::new(), 0);
    for _ in 0..20 {
        sender.ready().await.unwrap();
        let reply = sender.send_request(get_task()).await.unwrap();
        match reply.headers().get("grpc-status") {
            Some(status) => {
                assert_eq!(status, "14", "refused as UNAVAILABLE");
                refused += 1;
            }
            None => held.push(reply),
        }
    }
    assert_eq!((held.len(), refused), (2, 18));
    // The reader is let go at the send timeout; a reader that reads is then answered.
    let ended = tokio::time::timeout(Duration::from_secs(20), connection).await;
    assert!(
        ended.is_ok(),
        "the reader that does not read stayed connected"
    );
    drop(held);
    let (mut sender, _connection) = h2_reader(&target, 1 << 20).await;
    sender.ready().await.unwrap();
    let reply = sender.send_request(get_task()).await.unwrap();
    let body = reply.into_body().collect().await.unwrap();
    let trailers = body.trailers().cloned().unwrap_or_default();
    assert_eq!(
        trailers.get("grpc-status").map(|v| v.as_bytes()),
        Some(&b"0"[..])
    );
    assert!(body.to_bytes().len() > 1_600_000);
}

/// A task of 1.6 MB (its message) made through the JSON-RPC endpoint at `http`, answered at
/// once: its id.
async fn big_task(http: &str, message_id: &str) -> String {
    let big = "x".repeat(1_600_000);
    let mut params = text_message(message_id, &big);
    params["configuration"] = json!({"returnImmediately": true});
    let sent = rpc_as(http, None, "SendMessage", params).await;
    sent["result"]["task"]["id"].as_str().unwrap().to_owned()
}

/// GetTask of `task` as a raw gRPC request to `target`.
fn grpc_get_task(target: &str, task: &str) -> hyper::Request<http_body_util::Full<bytes::Bytes>> {
    hyper::Request::post(format!("http://{target}/lf.a2a.v1.A2AService/GetTask"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(http_body_util::Full::new(grpc_frame(
            &a2a_pb::proto::GetTaskRequest {
                id: task.to_owned(),
                ..Default::default()
            },
        )))
        .unwrap()
}

/// An HTTP/2 connection to `target` whose streams advertise a window of `window` bytes (0: a
/// reader that does not read): its sender, and the task that drives it.
async fn h2_reader(
    target: &str,
    window: u32,
) -> (
    hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>>,
    tokio::task::JoinHandle<Result<(), hyper::Error>>,
) {
    let socket = tokio::net::TcpStream::connect(target).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(window)
            .adaptive_window(false)
            .handshake(hyper_util::rt::TokioIo::new(socket))
            .await
            .unwrap();
    (sender, tokio::spawn(connection))
}

/// A JSON-RPC call as the caller with `credential` (raw header bytes; none for anonymous).
async fn rpc_as(url: &str, credential: Option<&[u8]>, method: &str, params: Value) -> Value {
    let mut request = reqwest::Client::new().post(url).json(&json!({
        "jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(credential) = credential {
        request = request.header(
            "authorization",
            reqwest::header::HeaderValue::from_bytes(credential).unwrap(),
        );
    }
    request.send().await.unwrap().json().await.unwrap()
}

fn text_message(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_never_reach_each_others_tasks_on_any_binding() {
    let (_agent, url, grpc) = crate::common::start_grpc_agent();
    let (alice, bob): (&[u8], &[u8]) = (b"Bearer alice", b"Bearer bob");
    let other_task = rpc_as(
        &url,
        Some(alice),
        "SendMessage",
        text_message("a-1", "hello"),
    )
    .await;
    assert!(
        other_task["result"]["task"]["id"].is_string(),
        "{other_task}"
    );
    let made = rpc_as(
        &url,
        Some(alice),
        "SendMessage",
        text_message("a-2", "hello"),
    )
    .await;
    let task = made["result"]["task"]["id"].as_str().unwrap().to_owned();

    // Alice reads her task; Bob, another credential, and an anonymous caller do not.
    let read = rpc_as(&url, Some(alice), "GetTask", json!({"id": task})).await;
    assert_eq!(read["result"]["id"], task.as_str(), "{read}");
    for other in [Some(bob), None] {
        for (method, params) in [
            ("GetTask", json!({"id": task})),
            ("CancelTask", json!({"id": task})),
            ("SubscribeToTask", json!({"id": task})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        ] {
            let reply = rpc_as(&url, other, method, params).await;
            assert_eq!(reply["error"]["code"], -32001, "{method}: {reply}");
        }
        // Nor can they add a message to it.
        let mut continued = text_message("b-1", "hello");
        continued["message"]["taskId"] = json!(task);
        let reply = rpc_as(&url, other, "SendMessage", continued).await;
        assert_eq!(reply["error"]["code"], -32001, "{reply}");
        // ListTasks lists only their own.
        let listed = rpc_as(&url, other, "ListTasks", json!({})).await;
        let tasks = listed["result"]["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(tasks.iter().all(|t| t["id"] != task.as_str()), "{listed}");
    }
    let listed = rpc_as(&url, Some(alice), "ListTasks", json!({"pageSize": 1})).await;
    assert_eq!(listed["result"]["totalSize"], 2, "{listed}");
    assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 1);
    let token = listed["result"]["nextPageToken"].as_str().unwrap();
    let rest = rpc_as(
        &url,
        Some(alice),
        "ListTasks",
        json!({"pageSize": 1, "pageToken": token}),
    )
    .await;
    assert_eq!(
        rest["result"]["tasks"].as_array().unwrap().len(),
        1,
        "{rest}"
    );
    assert_eq!(rest["result"]["nextPageToken"], "", "{rest}");

    // REST: 404 for Bob.
    let over_rest = reqwest::Client::new()
        .get(format!("{url}/tasks/{task}"))
        .header("authorization", "Bearer bob")
        .send()
        .await
        .unwrap();
    assert_eq!(over_rest.status(), 404);
    let mine = reqwest::Client::new()
        .get(format!("{url}/tasks/{task}"))
        .header("authorization", "Bearer alice")
        .send()
        .await
        .unwrap();
    assert_eq!(mine.status(), 200);

    // gRPC: NOT_FOUND for Bob, the task for Alice.
    let mut raw =
        a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(format!("http://{grpc}"))
            .await
            .unwrap();
    let get = |credential: &'static str| {
        let mut request = tonic::Request::new(a2a_pb::proto::GetTaskRequest {
            id: task.clone(),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("authorization", credential.parse().unwrap());
        request
    };
    let status = raw.get_task(get("Bearer bob")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    let read = raw.get_task(get("Bearer alice")).await.unwrap();
    assert_eq!(read.get_ref().id, task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_that_differ_in_a_byte_are_two_callers() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    // Both decode lossily to "Bearer \u{fffd}": the same messageId must still run twice.
    let first = rpc_as(
        &url,
        Some(b"Bearer \xfe"),
        "SendMessage",
        text_message("same", "hello"),
    )
    .await;
    let second = rpc_as(
        &url,
        Some(b"Bearer \xff"),
        "SendMessage",
        text_message("same", "hello"),
    )
    .await;
    let (first, second) = (
        &first["result"]["task"]["id"],
        &second["result"]["task"]["id"],
    );
    assert!(first.is_string() && second.is_string());
    assert_ne!(first, second, "one caller got the other's task as a replay");
    let read = rpc_as(&url, Some(b"Bearer \xff"), "GetTask", json!({"id": first})).await;
    assert_eq!(read["error"]["code"], -32001, "{read}");
}

/// The spellings of one `Bearer` credential that HTTP (and any authenticating proxy) reads as
/// the same: the scheme in any case, any run of spaces after it.
fn spellings(token: &str) -> Vec<Vec<u8>> {
    [
        "Bearer ",
        "bearer ",
        "BEARER ",
        "bEaReR ",
        "Bearer  ",
        "Bearer \t ",
    ]
    .iter()
    .map(|scheme| format!("{scheme}{token}").into_bytes())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_one_credential_is_one_caller() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    let spellings = spellings("tok-1");
    let sent = rpc_as(
        &url,
        Some(&spellings[0]),
        "SendMessage",
        text_message("m-1", "hello"),
    )
    .await;
    let task = sent["result"]["task"]["id"].clone();
    assert!(task.is_string(), "{sent}");
    for spelling in &spellings[1..] {
        // The same caller: its task is its own, and its SendMessage replays.
        let read = rpc_as(&url, Some(spelling), "GetTask", json!({"id": task})).await;
        assert_eq!(read["result"]["id"], task, "{spelling:?}: {read}");
        let again = rpc_as(
            &url,
            Some(spelling),
            "SendMessage",
            text_message("m-1", "hello"),
        )
        .await;
        assert_eq!(again["result"]["task"]["id"], task, "{spelling:?}: {again}");
    }
    // The token itself is compared byte for byte.
    let other = rpc_as(&url, Some(b"Bearer TOK-1"), "GetTask", json!({"id": task})).await;
    assert_eq!(other["error"]["code"], -32001, "{other}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_of_one_credential_shares_its_rate_limit() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &["--rate-limit", "1"]);
    // One request a second, a burst of one: the first spelling takes it and every other
    // spelling, sent within the same second, is refused. A round slower than that cannot
    // tell (the allowance refilled), so it is tried again with a new credential.
    for round in 0..5 {
        let started = std::time::Instant::now();
        let mut served = 0;
        for spelling in spellings(&format!("tok-{round}")) {
            let reply = rpc_as(&url, Some(&spelling), "GetTask", json!({"id": "none"})).await;
            match reply["error"]["code"].as_i64() {
                Some(-32001) => served += 1, // served: the task is not found
                Some(-32052) => {}           // RATE_LIMITED
                _ => panic!("neither served nor rate-limited: {reply}"),
            }
        }
        if started.elapsed() < std::time::Duration::from_millis(900) {
            assert_eq!(
                served, 1,
                "the spellings of one credential were rate-limited apart"
            );
            return;
        }
    }
    panic!("no round of six requests took under 0.9 s");
}

/// The SSE events of a JSON-RPC stream's body: each event's `result` or `error`.
fn sse_events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: String = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            serde_json::from_str(&data).ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_events_reach_a_slow_reader() {
    use a2a_error::resilience::RetryPolicy;
    use a2a_error::{Client, RemoteError};
    let (_agent, url, grpc) = crate::common::start_grpc_agent();

    // JSON-RPC over SSE: the reader takes one chunk, then stops reading for 3 s (the agent
    // makes its events far faster than that), then reads the rest.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": text_message("long-1", "stream:10000")});
    let response = reqwest::Client::new()
        .post(&url)
        .json(&request)
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let first = body.next().await.unwrap().unwrap();
    text.push_str(&String::from_utf8_lossy(&first));
    tokio::time::sleep(Duration::from_secs(3)).await;
    while let Some(chunk) = body.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let events = sse_events(&text);
    assert!(
        events.iter().all(|event| event.get("error").is_none()),
        "{:?}",
        events.last()
    );
    let chunks = events
        .iter()
        .filter(|event| event["result"]["artifactUpdate"].is_object())
        .count();
    assert_eq!(chunks, 10_000);
    assert_eq!(
        events.last().unwrap()["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // gRPC: the same, through HTTP/2 flow control.
    let client = Client::<RemoteError>::grpc(grpc.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let mut events = client
        .stream(
            "SendStreamingMessage",
            &text_message("long-2", "stream:10000"),
        )
        .await
        .unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert!(first.get().starts_with('{'));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (seen, last) = crate::common::drain(events).await;
    assert!(last.is_none(), "{last:?}");
    // The first event was read above: the 10,000 chunks and the COMPLETED status in all.
    assert_eq!(seen + 1, 10_001);

    // A unary SendMessage of such a task answers with the task, COMPLETED.
    let reply = rpc_as(
        &url,
        None,
        "SendMessage",
        text_message("long-3", "stream:10000"),
    )
    .await;
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_still_sees_where_the_task_ends() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    // The stream that runs the task, read as fast as it comes.
    let response = reqwest::Client::new()
        .post(&url)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": text_message("sub-1", "stream:10000")}),
        )
        .send()
        .await
        .unwrap();
    let mut primary = response.bytes_stream();
    let first = primary.next().await.unwrap().unwrap();
    let first = sse_events(&String::from_utf8_lossy(&first));
    let task = first[0]["result"]["task"]["id"]
        .as_str()
        .or(first[0]["result"]["artifactUpdate"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_owned();
    // A second subscriber that stops reading for 3 s.
    let subscribed = reqwest::Client::new()
        .post(&url)
        .json(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask",
            "params": {"id": task}}),
        )
        .send()
        .await
        .unwrap();
    let reading = tokio::spawn(async move {
        let mut text = String::new();
        let mut body = subscribed.bytes_stream();
        if let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        text
    });
    while let Some(chunk) = primary.next().await {
        chunk.unwrap();
    }
    let events = sse_events(&reading.await.unwrap());
    assert!(
        events.iter().all(|event| event.get("error").is_none()),
        "{:?}",
        events.last()
    );
    let last = &events.last().unwrap()["result"];
    let state = last["statusUpdate"]["status"]["state"]
        .as_str()
        .or(last["task"]["status"]["state"].as_str());
    assert_eq!(state, Some("TASK_STATE_COMPLETED"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_task_is_kept() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    // 1.2 MB of text (the body limit is 4 MiB): echoed, the task holds it twice.
    let text = "z".repeat(1_200_000);
    let made = rpc_as(&url, None, "SendMessage", text_message("large-1", &text)).await;
    let task = made["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", &made.to_string()[..200.min(made.to_string().len())]))
        .to_owned();
    let read = rpc_as(&url, None, "GetTask", json!({"id": task})).await;
    assert_eq!(read["result"]["id"], task.as_str(), "the task vanished");
    assert_eq!(read["result"]["status"]["state"], "TASK_STATE_COMPLETED");
}

/// The task id of every SSE event of a JSON-RPC stream, and the last event.
fn stream_tasks(text: &str) -> (Vec<String>, Value) {
    let events = sse_events(text);
    let ids = events
        .iter()
        .filter_map(|event| {
            let result = &event["result"];
            result["task"]["id"]
                .as_str()
                .or(result["statusUpdate"]["taskId"].as_str())
                .or(result["artifactUpdate"]["taskId"].as_str())
                .map(str::to_owned)
        })
        .collect();
    (ids, events.last().cloned().unwrap_or(Value::Null))
}

async fn stream_text(url: &str, params: Value) -> String {
    reqwest::Client::new()
        .post(url)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
            "params": params}),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_stream_is_resumed_never_run_twice() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    let (first, last) = stream_tasks(&stream_text(&url, text_message("again-1", "stream:3")).await);
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let task = first[0].clone();
    // The same message again: the task as it ended, not a second run (a new task).
    let (retried, last) =
        stream_tasks(&stream_text(&url, text_message("again-1", "stream:3")).await);
    assert_eq!(retried, std::slice::from_ref(&task), "{last}");
    assert_eq!(
        last["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // As a unary SendMessage: the same task.
    let unary = rpc_as(
        &url,
        None,
        "SendMessage",
        text_message("again-1", "stream:3"),
    )
    .await;
    assert_eq!(unary["result"]["task"]["id"], task.as_str(), "{unary}");
    // Another message under the same id: refused.
    let reused = stream_text(&url, text_message("again-1", "hello")).await;
    let reused: Value =
        serde_json::from_str(&reused).unwrap_or_else(|_| sse_events(&reused)[0].clone());
    assert_eq!(reused["error"]["code"], -32602, "{reused}");
    assert_eq!(
        reused["error"]["data"][0]["reason"], "MESSAGE_ID_REUSED",
        "{reused}"
    );
    // Another caller with the same id runs its own.
    let (other, _) = stream_tasks(
        &reqwest::Client::new()
            .post(&url)
            .header("authorization", "Bearer other")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                "params": text_message("again-1", "stream:3")}),
            )
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    assert_ne!(other[0], task);
    // A stream that failed before its first event is run again by its retry.
    let failed = stream_text(&url, text_message("again-2", "flaky:1")).await;
    assert!(failed.contains("-32053"), "{failed}");
    let (ran, last) = stream_tasks(&stream_text(&url, text_message("again-2", "flaky:1")).await);
    assert_eq!(ran.len(), 1, "{last}");
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_stream_request_is_refused_and_the_agent_lives() {
    let (_agent, url) = crate::common::start_example("sdk_agent", &[]);
    for text in ["stream:4294967295", "stream:fail_after:4294967295"] {
        let reply = rpc_as(&url, None, "SendMessage", text_message(text, text)).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
    }
    // Still serving: the chunks were never made.
    let reply = rpc_as(&url, None, "SendMessage", text_message("after", "stream:3")).await;
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_storm_of_calls_reset_late_everyone_is_served() {
    let (_agent, url, grpc) = crate::common::start_grpc_agent();
    let message = |n: usize| a2a_pb::proto::SendMessageRequest {
        message: Some(a2a_pb::proto::Message {
            message_id: format!("storm-{n}"),
            role: a2a_pb::proto::Role::User as i32,
            parts: vec![a2a_pb::proto::Part {
                content: Some(a2a_pb::proto::part::Content::Text("sleep:60000".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    // Three waves of 500 SendMessage (as many as run at once) whose callers reset them a
    // second after they started, with no deadline sent: their work goes on for nobody, more
    // of it than the dedup keeps (1,024).
    for wave in 0..3 {
        let mut storm = Vec::new();
        for connection in 0..5 {
            let raw = a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(format!(
                "http://{grpc}"
            ))
            .await
            .unwrap();
            for n in 0..100 {
                let mut client = raw.clone();
                let request = message(wave * 1000 + connection * 100 + n);
                storm.push(tokio::spawn(async move {
                    let call = client.send_message(request);
                    let _ = tokio::time::timeout(Duration::from_secs(1), call).await;
                }));
            }
        }
        for call in storm {
            call.await.unwrap();
        }
    }
    // A new caller on either binding is served at once.
    let mut raw =
        a2a_pb::proto::a2a_service_client::A2aServiceClient::connect(format!("http://{grpc}"))
            .await
            .unwrap();
    let mut request = tonic::Request::new(message(5000));
    request.get_mut().message.as_mut().unwrap().parts[0].content =
        Some(a2a_pb::proto::part::Content::Text("hello".into()));
    // Served, not refused (a refusal comes at once); the time allowed is for a busy machine.
    request.set_timeout(Duration::from_secs(10));
    let sent = raw.send_message(request).await;
    assert!(sent.is_ok(), "{sent:?}");
    let read = tokio::time::timeout(
        Duration::from_secs(10),
        rpc_as(&url, None, "SendMessage", text_message("after", "hello")),
    )
    .await
    .expect("no JSON-RPC answer after the storm");
    assert!(read["result"]["task"]["id"].is_string(), "{read}");
}
