//! Push notifications from outside: the `sdk_agent` example (`PushDelivery` in the bridge)
//! delivering to receivers these tests start on loopback (accepting, failing, hanging,
//! refusing, gone, down then up), with the agent's own process and, for the fleet, a real
//! `redis-server` and a replica killed with `kill -9`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};

use crate::common::requests::{get_text, rpc_with};
use crate::common::{ExampleProcess, redis_server, start_example};

const ALICE: &str = "Bearer alice";
const BOB: &str = "Bearer bob";

/// What a receiver answers to one request.
#[derive(Clone, Debug)]
enum Answer {
    Status(u16),
    /// The status with `Retry-After: {value}`.
    RetryAfter(u16, String),
    /// Never answers.
    Hang,
}

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Hit {
    at: Instant,
    path: String,
    headers: HeaderMap,
    body: Value,
    raw: String,
    /// The task's state as GetTask read it when the notification came (a receiver that reads
    /// the task on each notification, `Receiver::reading`).
    read: Option<String>,
}

impl Hit {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }

    /// The state of the status update (or task) it carries, or `artifact`.
    fn state(&self) -> String {
        if self.body.get("artifactUpdate").is_some() {
            return "artifact".to_owned();
        }
        let status = self.body["statusUpdate"]["status"]["state"]
            .as_str()
            .or(self.body["task"]["status"]["state"].as_str())
            .unwrap_or("?");
        status.trim_start_matches("TASK_STATE_").to_owned()
    }
}

/// A webhook receiver on loopback: answers each path's scripted answers in turn (200 once
/// they run out) and records every request.
#[derive(Clone, Default)]
struct Receiver {
    hits: Arc<Mutex<Vec<Hit>>>,
    script: Arc<Mutex<HashMap<String, VecDeque<Answer>>>>,
    /// The agent whose task it reads (as Alice) on each status update, if any.
    reads: Arc<Mutex<Option<String>>>,
}

impl Receiver {
    /// Serves on a port of its own; returns its base URL.
    async fn start() -> (Receiver, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Receiver::default();
        let url = format!("http://{}", listener.local_addr().unwrap());
        receiver.serve(listener);
        (receiver, url)
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(self.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
    }

    /// Reads the task from `agent` on each status update before answering.
    fn reading(&self, agent: &str) {
        *self.reads.lock().unwrap() = Some(agent.to_owned());
    }

    fn script(&self, path: &str, answers: impl IntoIterator<Item = Answer>) {
        self.script
            .lock()
            .unwrap()
            .insert(path.to_owned(), answers.into_iter().collect());
    }

    fn hits(&self, path: &str) -> Vec<Hit> {
        let hits = self.hits.lock().unwrap();
        hits.iter()
            .filter(|hit| hit.path == path)
            .cloned()
            .collect()
    }

    /// Waits (up to `within`) until `path` got `n` requests; returns them.
    async fn wait_for(&self, path: &str, n: usize, within: Duration) -> Vec<Hit> {
        let started = Instant::now();
        loop {
            let hits = self.hits(path);
            if hits.len() >= n {
                return hits;
            }
            assert!(
                started.elapsed() < within,
                "{path} got {} of {n} requests in {within:?}: {:?}",
                hits.len(),
                hits.iter().map(Hit::state).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(
    State(receiver): State<Receiver>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let path = uri.path().to_owned();
    let at = Instant::now();
    let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let agent = receiver.reads.lock().unwrap().clone();
    let read = match (agent, parsed["statusUpdate"]["taskId"].as_str()) {
        (Some(agent), Some(task)) => {
            let reply = call(&agent, ALICE, "GetTask", json!({"id": task})).await;
            reply["result"]["status"]["state"]
                .as_str()
                .map(|state| state.trim_start_matches("TASK_STATE_").to_owned())
        }
        _ => None,
    };
    receiver.hits.lock().unwrap().push(Hit {
        at,
        path: path.clone(),
        headers,
        body: parsed,
        raw: body,
        read,
    });
    let answer = receiver
        .script
        .lock()
        .unwrap()
        .get_mut(&path)
        .and_then(VecDeque::pop_front);
    match answer {
        None => StatusCode::OK.into_response(),
        Some(Answer::Status(status)) => StatusCode::from_u16(status).unwrap().into_response(),
        Some(Answer::RetryAfter(status, after)) => (
            StatusCode::from_u16(status).unwrap(),
            [("retry-after", after)],
        )
            .into_response(),
        Some(Answer::Hang) => std::future::pending().await,
    }
}

fn agent(args: &[&str]) -> (ExampleProcess, String) {
    start_example("sdk_agent", args)
}

async fn call(url: &str, caller: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    rpc_with(&format!("{url}/"), ("authorization", caller), body).await
}

/// SendMessage of `text` with a push config for `hook`, answered at once with its task when
/// `immediately`; the reply.
async fn send_with_push(url: &str, text: &str, hook: &str, immediately: bool) -> Value {
    send_with_push_as(url, ALICE, text, hook, immediately).await
}

/// [`send_with_push`] as `caller`.
async fn send_with_push_as(
    url: &str,
    caller: &str,
    text: &str,
    hook: &str,
    immediately: bool,
) -> Value {
    let params = json!({
        "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {
            "returnImmediately": immediately,
            "taskPushNotificationConfig": {"url": hook, "token": "secret-token"}
        }
    });
    call(url, caller, "SendMessage", params).await
}

fn uuid() -> String {
    format!("{:032x}", fastrand::u128(..))
}

fn task_id(reply: &Value) -> String {
    reply["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {reply}"))
        .to_owned()
}

fn states(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(Hit::state).collect()
}

/// Standard Webhooks' signature, computed here from the specification.
fn signature(secret: &str, id: &str, timestamp: &str, body: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    let digest = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Each event of a task with a push config is a POST to its URL, in order, with the token,
/// Standard Webhooks' headers and a signature that verifies; the body is the StreamResponse.
#[tokio::test]
async fn events_arrive_in_order_signed_with_the_webhook_headers() {
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&[
        "--push-allow-private",
        "--push-signing-secret",
        "whsec-test",
    ]);
    let card = crate::common::requests::card(&url).await;
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    // Every series is there from the start, at zero.
    let metrics_url = format!("{url}/metrics");
    let started = Instant::now();
    loop {
        let metrics = get_text(&metrics_url).await;
        let series = [
            "a2a_push_deliveries{outcome=\"delivered\"} 0",
            "a2a_push_deliveries{outcome=\"rejected\"} 0",
            "a2a_push_deliveries{outcome=\"gone\"} 0",
            "a2a_push_deliveries{outcome=\"dead_letter\"} 0",
            "a2a_push_attempts 0",
            "a2a_push_dead_letters 0",
            "a2a_push_oldest_pending_seconds 0",
        ];
        if series
            .iter()
            .all(|line| metrics.lines().any(|l| l == *line))
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let hook = format!("{base}/stream");
    let reply = send_with_push(&url, "stream:3", &hook, false).await;
    let task = task_id(&reply);
    let hits = receiver
        .wait_for("/stream", 4, Duration::from_secs(10))
        .await;
    assert_eq!(
        states(&hits),
        ["artifact", "artifact", "artifact", "COMPLETED"]
    );
    let mut ids = Vec::new();
    for hit in &hits {
        assert_eq!(hit.header("content-type"), "application/json");
        assert_eq!(hit.header("a2a-notification-token"), "secret-token");
        let id = hit.header("webhook-id");
        assert!(!id.is_empty() && !ids.contains(&id.to_owned()), "{id}");
        ids.push(id.to_owned());
        let timestamp = hit.header("webhook-timestamp");
        let sent: u64 = timestamp.parse().unwrap();
        assert!(sent.abs_diff(unix_now()) < 30, "{timestamp}");
        assert_eq!(
            hit.header("webhook-signature"),
            signature("whsec-test", id, timestamp, &hit.raw)
        );
        let about = hit.body["artifactUpdate"]["taskId"]
            .as_str()
            .or(hit.body["statusUpdate"]["taskId"].as_str());
        assert_eq!(about, Some(task.as_str()), "{}", hit.body);
    }
    assert_eq!(
        hits[2].body["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "chunk 3"
    );

    // `sleep:MS`: WORKING, then COMPLETED; A2A 0.3's name of the field is taken too. The
    // task read on each notification is as the notification says: stored before it is sent.
    receiver.reading(&url);
    let params = json!({
        "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "sleep:200"}]},
        "configuration": {"pushNotificationConfig": {"url": format!("{base}/sleep"), "token": "t"}}
    });
    call(&url, ALICE, "SendMessage", params).await;
    let hits = receiver
        .wait_for("/sleep", 2, Duration::from_secs(10))
        .await;
    assert_eq!(states(&hits), ["WORKING", "COMPLETED"]);
    assert_eq!(hits[0].header("a2a-notification-token"), "t");
    let read: Vec<_> = hits
        .iter()
        .map(|hit| hit.read.clone().unwrap_or_default())
        .collect();
    assert_eq!(read, ["WORKING", "COMPLETED"]);

    // Nothing is sent after the terminal event.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.hits("/stream").len(), 4);
    assert_eq!(receiver.hits("/sleep").len(), 2);
}

/// A config set on a running task (REST and JSON-RPC), with Get, List and Delete, by its
/// owner only; CancelTask's CANCELED is notified, and nothing after it.
#[tokio::test]
async fn configs_of_a_running_task_by_its_owner_and_the_cancel_notified() {
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private"]);
    let params = json!({
        "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "sleep:60000"}]},
        "configuration": {"returnImmediately": true}
    });
    let task = task_id(&call(&url, ALICE, "SendMessage", params).await);
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{url}/tasks/{task}/pushNotificationConfigs"))
        .header("authorization", ALICE)
        .json(&json!({"url": format!("{base}/later"), "token": "tk"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let created: Value = created.json().await.unwrap();
    let config = created["id"].as_str().unwrap().to_owned();

    let got = call(
        &url,
        ALICE,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": config}),
    )
    .await;
    assert_eq!(got["result"]["url"], format!("{base}/later"), "{got}");
    let listed = call(
        &url,
        ALICE,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    assert_eq!(
        listed["result"]["configs"].as_array().unwrap().len(),
        1,
        "{listed}"
    );

    // Another caller: TASK_NOT_FOUND on every one of them, 404 over REST.
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("{base}/bob")}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": config}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": task})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": config}),
        ),
    ] {
        let reply = call(&url, BOB, method, params).await;
        assert_eq!(reply["error"]["code"], -32001, "{method}: {reply}");
    }
    let bob = http
        .post(format!("{url}/tasks/{task}/pushNotificationConfigs"))
        .header("authorization", BOB)
        .json(&json!({"url": format!("{base}/bob")}))
        .send()
        .await
        .unwrap();
    assert_eq!(bob.status(), 404);

    // A second config over JSON-RPC, deleted again: nothing reaches it.
    let second = call(
        &url,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": format!("{base}/deleted")}),
    )
    .await;
    let second_id = second["result"]["id"].as_str().unwrap().to_owned();
    let deleted = call(
        &url,
        ALICE,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task, "id": second_id}),
    )
    .await;
    assert!(deleted.get("error").is_none(), "{deleted}");

    let canceled = call(&url, ALICE, "CancelTask", json!({"id": task})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let hits = receiver
        .wait_for("/later", 1, Duration::from_secs(10))
        .await;
    assert_eq!(states(&hits), ["CANCELED"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.hits("/later").len(), 1);
    assert!(receiver.hits("/deleted").is_empty());
    assert!(receiver.hits("/bob").is_empty());
}

/// Without `--push-allow-private`, receivers inside the network are refused when set (and a
/// SendMessage carrying one is not run); nothing is ever sent there.
#[tokio::test]
async fn receivers_inside_the_network_are_refused() {
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&[]);
    let port = base.rsplit(':').next().unwrap();
    for hook in [
        format!("{base}/inside"),
        format!("http://localhost:{port}/inside"),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "http://10.0.0.7/hook".to_owned(),
        "http://192.168.1.1/hook".to_owned(),
        "http://[::1]/hook".to_owned(),
        "http://[fd00::1]/hook".to_owned(),
        "ftp://example.com/hook".to_owned(),
    ] {
        let reply = send_with_push(&url, "hello", &hook, false).await;
        assert_eq!(reply["error"]["code"], -32602, "{hook}: {reply}");
    }
    // The messages were not run: the caller has no task.
    let listed = call(&url, ALICE, "ListTasks", json!({})).await;
    assert_eq!(
        listed["result"]["tasks"].as_array().map_or(0, Vec::len),
        0,
        "{listed}"
    );

    let task = task_id(&call(
        &url,
        ALICE,
        "SendMessage",
        json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "sleep:60000"}]},
               "configuration": {"returnImmediately": true}}),
    )
    .await);
    let created = call(
        &url,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": format!("{base}/inside")}),
    )
    .await;
    assert_eq!(created["error"]["code"], -32602, "{created}");
    let rest = reqwest::Client::new()
        .post(format!("{url}/tasks/{task}/pushNotificationConfigs"))
        .header("authorization", ALICE)
        .json(&json!({"url": format!("http://localhost:{port}/inside")}))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 400);
    let injected = call(
        &url,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": "https://example.com/hook", "token": "a\r\nX-Evil: 1"}),
    )
    .await;
    assert_eq!(injected["error"]["code"], -32602, "{injected}");
    call(&url, ALICE, "CancelTask", json!({"id": task})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(receiver.hits("/inside").is_empty());
}

/// 503 then 200: retried with backoff (the first retry within 2 s, the next at most twice
/// as long plus jitter), with the same webhook-id; 429 with `Retry-After` (seconds, then a
/// date) is waited; a later event waits for the earlier one.
#[tokio::test]
async fn retries_back_off_honour_retry_after_and_keep_the_order() {
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private"]);
    receiver.script("/flaky", [Answer::Status(503), Answer::Status(503)]);
    send_with_push(&url, "sleep:100", &format!("{base}/flaky"), true).await;
    let hits = receiver
        .wait_for("/flaky", 4, Duration::from_secs(20))
        .await;
    // WORKING three times (two 503s), then COMPLETED: never before WORKING was accepted.
    assert_eq!(
        states(&hits),
        ["WORKING", "WORKING", "WORKING", "COMPLETED"]
    );
    let id = hits[0].header("webhook-id");
    assert!(hits[..3].iter().all(|hit| hit.header("webhook-id") == id));
    assert_ne!(hits[3].header("webhook-id"), id);
    let first = hits[1].at - hits[0].at;
    let second = hits[2].at - hits[1].at;
    assert!(
        first <= Duration::from_secs(2),
        "first retry after {first:?}"
    );
    assert!(
        second <= first * 2 + first / 2 + Duration::from_millis(200),
        "{first:?} then {second:?}"
    );

    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(6));
    receiver.script(
        "/limited",
        [
            Answer::RetryAfter(429, "2".to_owned()),
            Answer::RetryAfter(503, date),
        ],
    );
    send_with_push(&url, "hello", &format!("{base}/limited"), false).await;
    let hits = receiver
        .wait_for("/limited", 3, Duration::from_secs(20))
        .await;
    assert_eq!(states(&hits), ["COMPLETED", "COMPLETED", "COMPLETED"]);
    let waited = hits[1].at - hits[0].at;
    assert!(
        waited >= Duration::from_millis(1900),
        "Retry-After: 2, retried after {waited:?}"
    );
    // A date 6 s ahead (about 4 s when it is read), read with a second's precision: at least 2 s.
    let waited = hits[2].at - hits[1].at;
    assert!(
        waited >= Duration::from_millis(2000),
        "Retry-After date, retried after {waited:?}"
    );
}

/// A 400 ends its notification (not retried; the next one follows); a 410 removes the config
/// and its pending notifications.
#[tokio::test]
async fn a_refusal_ends_a_notification_and_gone_removes_the_config() {
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private"]);
    receiver.script("/refuses", [Answer::Status(400)]);
    send_with_push(&url, "sleep:300", &format!("{base}/refuses"), true).await;
    let hits = receiver
        .wait_for("/refuses", 2, Duration::from_secs(10))
        .await;
    assert_eq!(states(&hits), ["WORKING", "COMPLETED"]);

    receiver.script("/gone", [Answer::Status(410)]);
    let reply = send_with_push(&url, "stream:3", &format!("{base}/gone"), true).await;
    let task = task_id(&reply);
    receiver.wait_for("/gone", 1, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(receiver.hits("/gone").len(), 1, "nothing after the 410");
    let listed = call(
        &url,
        ALICE,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    )
    .await;
    assert_eq!(
        listed["result"]["configs"].as_array().map_or(0, Vec::len),
        0,
        "{listed}"
    );
}

/// A receiver that hangs delays no other: the other receiver of the same task, and another
/// task's, get each notification within a second of its event.
#[tokio::test]
async fn a_hanging_receiver_delays_nobody_else() {
    let (receiver, base) = Receiver::start().await;
    let (stuck, stuck_base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private"]);
    stuck.script("/hang", std::iter::repeat_n(Answer::Hang, 50));
    let reply = send_with_push(&url, "sleep:1500", &format!("{stuck_base}/hang"), true).await;
    let task = task_id(&reply);
    let started = Instant::now();
    call(
        &url,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": format!("{base}/beside")}),
    )
    .await;
    let hits = receiver
        .wait_for("/beside", 1, Duration::from_secs(10))
        .await;
    assert_eq!(states(&hits), ["COMPLETED"]);
    // COMPLETED comes 1.5 s after the start; it arrives within a second of that.
    let late = hits[0].at - started;
    assert!(late < Duration::from_millis(2500), "after {late:?}");

    let sent = Instant::now();
    send_with_push(&url, "hello", &format!("{base}/other"), false).await;
    let hits = receiver
        .wait_for("/other", 1, Duration::from_secs(10))
        .await;
    assert!(
        hits[0].at - sent < Duration::from_secs(1),
        "{:?}",
        hits[0].at - sent
    );
    assert_eq!(
        stuck.hits("/hang").len(),
        1,
        "one attempt hangs, the rest wait"
    );
}

/// A receiver down, then up: the notifications wait and arrive in order; one not accepted
/// within `--push-max-age-ms` is a dead letter, in the metrics, and no attempt starts after.
#[tokio::test]
async fn down_then_up_and_dead_letters_after_the_maximum_age() {
    let (_agent, url) = agent(&["--push-allow-private", "--push-max-age-ms", "3000"]);
    let port = a2a_error_testkit::free_port();
    let base = format!("http://127.0.0.1:{port}");
    send_with_push(&url, "sleep:200", &format!("{base}/later"), true).await;
    // Up before the first retry (1 s to 1.2 s after the first attempt).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let receiver = Receiver::default();
    receiver.serve(listener);
    let hits = receiver
        .wait_for("/later", 2, Duration::from_secs(10))
        .await;
    assert_eq!(states(&hits), ["WORKING", "COMPLETED"]);

    receiver.script("/dead", std::iter::repeat_n(Answer::Status(503), 100));
    let sent = Instant::now();
    send_with_push(&url, "hello", &format!("{base}/dead"), false).await;
    let metrics_url = format!("{url}/metrics");
    loop {
        let metrics = get_text(&metrics_url).await;
        if metrics.contains("a2a_push_deliveries{outcome=\"dead_letter\"} 1") {
            assert!(metrics.contains("a2a_push_dead_letters 1"), "{metrics}");
            assert!(metrics.contains("a2a_push_attempts"), "{metrics}");
            assert!(
                metrics.contains("a2a_push_oldest_pending_seconds"),
                "{metrics}"
            );
            assert!(
                metrics.contains("a2a_push_deliveries{outcome=\"delivered\"}"),
                "{metrics}"
            );
            for line in metrics.lines().filter(|line| line.starts_with("a2a_push")) {
                assert!(!line.contains("127.0.0.1"), "{line}");
            }
            break;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(13),
            "no dead letter: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        sent.elapsed() >= Duration::from_millis(2900),
        "dead after {:?}",
        sent.elapsed()
    );
    let hits = receiver.hits("/dead");
    assert!(hits.len() >= 2, "{}", hits.len());
    let last = hits.last().unwrap().at - sent;
    assert!(
        last < Duration::from_millis(3400),
        "an attempt {last:?} after the event"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.hits("/dead").len(), hits.len());
}

/// A fleet on Redis: a replica killed with `kill -9` while the receiver fails leaves its
/// pending notifications to the other, which takes them within the lease and 2 s and
/// delivers them, with the same webhook-id, once the receiver recovers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_leaves_its_notifications_to_the_others() {
    let Some(redis) = redis_server("push fleet tests") else {
        return;
    };
    let (receiver, base) = Receiver::start().await;
    let args = [
        "--redis",
        redis.url.as_str(),
        "--task-lease-ms",
        "1000",
        "--push-allow-private",
    ];
    let (a_process, a) = agent(&args);
    let (b_process, _b) = agent(&args);
    receiver.script("/fleet", std::iter::repeat_n(Answer::Status(503), 1000));
    send_with_push(&a, "hello", &format!("{base}/fleet"), false).await;
    // A task left running on the replica to be killed: its FAILED comes from the survivor.
    send_with_push(&a, "sleep:600000", &format!("{base}/abandoned"), true).await;
    receiver
        .wait_for("/abandoned", 1, Duration::from_secs(10))
        .await;
    let hits = receiver
        .wait_for("/fleet", 1, Duration::from_secs(10))
        .await;
    let id = hits[0].header("webhook-id").to_owned();
    a_process.kill_9();
    let killed = Instant::now();
    // The receiver recovers; the survivor sends the same notification.
    receiver.script("/fleet", Vec::<Answer>::new());
    let before = receiver.hits("/fleet").len();
    let hits = receiver
        .wait_for("/fleet", before + 1, Duration::from_secs(20))
        .await;
    let taken = hits[before].at - killed;
    assert!(taken < Duration::from_secs(3), "taken over after {taken:?}");
    assert!(
        hits.iter().all(|hit| hit.header("webhook-id") == id),
        "one notification"
    );
    assert_eq!(hits[before].state(), "COMPLETED");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = receiver.hits("/fleet");
    assert_eq!(
        after.len(),
        before + 1,
        "delivered once: {:?}",
        states(&after)
    );
    let started = Instant::now();
    let abandoned = loop {
        let hits = receiver.hits("/abandoned");
        if hits.iter().any(|hit| hit.state() == "FAILED") {
            break hits;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            states(&hits)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Killed between a notification's 200 and its removal, a replica leaves it to be sent
    // again: with the same webhook-id, which a receiver deduplicates on.
    let mut ids = Vec::new();
    let abandoned: Vec<Hit> = abandoned
        .into_iter()
        .filter(|hit| {
            let id = hit.header("webhook-id").to_owned();
            let first = !ids.contains(&id);
            ids.push(id);
            first
        })
        .collect();
    assert_eq!(states(&abandoned), ["WORKING", "FAILED"]);
    let cause = &abandoned[1].body["statusUpdate"]["status"]["message"]["metadata"]["error"];
    assert_eq!(cause["reason"], "TASK_ABANDONED", "{}", abandoned[1].body);
    drop((a_process, b_process));
}

/// An executor that completes at once.
struct Done;

impl a2a_server::AgentExecutor for Done {
    fn execute(
        &self,
        ctx: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        use futures_util::StreamExt;
        let done = a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        futures_util::stream::iter([Ok(done)]).boxed()
    }

    fn cancel(
        &self,
        _: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        use futures_util::StreamExt;
        futures_util::stream::empty().boxed()
    }
}

/// Dead letters, in memory and in Redis: listed once their maximum age passed, and replayed
/// with the same webhook-id once the receiver is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_listed_and_replayed_in_memory_and_in_redis() {
    use a2a_error::dependency::PushSender;
    use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore, PushDelivery, RedisTaskStore};

    let redis = redis_server("push dead letters in Redis");
    let sender = || PushSender::builder().allow_private(true).build().unwrap();
    let mut served = Vec::new();
    {
        let push = PushDelivery::memory(sender()).with_max_age(Duration::from_secs(1));
        let tasks = MemoryTaskStore::new(1 << 20);
        let guarded = Guarded::new(Done, Arc::new(tasks.clone())).push(push.clone());
        let bridge =
            Bridge::new(a2a_server::DefaultRequestHandler::new(guarded, tasks)).push(push.clone());
        served.push(("memory", push, crate::common::serve(bridge.router()).await));
    }
    if let Some(redis) = &redis {
        let store = a2a_error::server::RedisStore::connect(&redis.url).unwrap();
        let tasks = RedisTaskStore::new(&store).lease(Duration::from_secs(1));
        let push = PushDelivery::redis(sender(), &tasks).with_max_age(Duration::from_secs(1));
        let guarded = Guarded::leased(Done, tasks.clone()).push(push.clone());
        let bridge = Bridge::new(a2a_server::DefaultRequestHandler::new(
            guarded,
            tasks.clone(),
        ))
        .shared_tasks(tasks)
        .push(push.clone());
        served.push(("redis", push, crate::common::serve(bridge.router()).await));
    }
    for (kind, push, url) in served {
        let (receiver, base) = Receiver::start().await;
        let path = format!("/{kind}");
        receiver.script(&path, std::iter::repeat_n(Answer::Status(503), 1000));
        let reply = send_with_push(&url, "hello", &format!("{base}{path}"), false).await;
        let task = task_id(&reply);
        let started = Instant::now();
        let letters = loop {
            let letters = push.dead_letters().await.unwrap();
            if !letters.is_empty() {
                break letters;
            }
            assert!(
                started.elapsed() < Duration::from_secs(12),
                "{kind}: no dead letter"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(letters.len(), 1, "{kind}");
        let letter = &letters[0];
        assert_eq!(letter.reason(), "expired", "{kind}");
        assert_eq!(letter.task_id(), task, "{kind}");
        assert_eq!(letter.url(), format!("{base}{path}"), "{kind}");
        let id = receiver.hits(&path)[0].header("webhook-id").to_owned();
        assert_eq!(letter.id(), id, "{kind}");
        let tried = receiver.hits(&path).len();

        receiver.script(&path, Vec::<Answer>::new());
        assert!(push.replay(&id).await.unwrap(), "{kind}");
        assert!(!push.replay("msg_unknown").await.unwrap(), "{kind}");
        let hits = receiver
            .wait_for(&path, tried + 1, Duration::from_secs(10))
            .await;
        assert_eq!(hits[tried].header("webhook-id"), id, "{kind}");
        assert_eq!(hits[tried].state(), "COMPLETED", "{kind}");
        assert!(push.dead_letters().await.unwrap().is_empty(), "{kind}");
    }
}

/// Fleet push asks a trait of the store, not Redis: two replicas on a store of the user's own
/// (its configs in the SDK's in-memory config store, its outbox a `MemoryOutbox`, both shared)
/// save a SendMessage's push config in the user's config store, and the task's notification
/// arrives once, from whichever replica claimed its lane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_store_of_the_users_own_delivers_for_every_replica() {
    use a2a_error::dependency::PushSender;
    use a2a_error::sdk::push::{MemoryOutbox, Outbox, PushStore};
    use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore, PushDelivery};
    use a2a_server::push::{InMemoryPushConfigStore, PushConfigStore};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Clone)]
    struct OwnPush {
        configs: Arc<InMemoryPushConfigStore>,
        outbox: Arc<MemoryOutbox>,
        deliveries: Arc<AtomicUsize>,
    }
    impl PushStore for OwnPush {
        fn push_configs(&self) -> Arc<dyn PushConfigStore> {
            self.configs.clone()
        }
        fn outbox(&self) -> Arc<dyn Outbox> {
            self.outbox.clone()
        }
        fn claim_duration(&self) -> Duration {
            Duration::from_secs(2)
        }
        fn delivered_by(&self, _: &PushDelivery) {
            self.deliveries.fetch_add(1, Ordering::Relaxed);
        }
    }

    let store = OwnPush {
        configs: Arc::new(InMemoryPushConfigStore::default()),
        outbox: Arc::new(MemoryOutbox::new()),
        deliveries: Arc::default(),
    };
    let tasks = MemoryTaskStore::new(1 << 20);
    let mut urls = Vec::new();
    for _ in 0..2 {
        let sender = PushSender::builder().allow_private(true).build().unwrap();
        let push = PushDelivery::shared(sender, &store);
        let guarded = Guarded::new(Done, Arc::new(tasks.clone())).push(push.clone());
        let handler = a2a_server::DefaultRequestHandler::new(guarded, tasks.clone());
        let bridge = Bridge::new(handler).push(push);
        urls.push(crate::common::serve(bridge.router()).await);
    }
    assert_eq!(store.deliveries.load(Ordering::Relaxed), 2);

    let (receiver, base) = Receiver::start().await;
    let hook = format!("{base}/own");
    let reply = send_with_push(&urls[1], "hello", &hook, false).await;
    let task = task_id(&reply);
    let saved = store.configs.list(&task).await.unwrap();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0].url, hook);
    let hits = receiver.wait_for("/own", 1, Duration::from_secs(10)).await;
    assert_eq!(states(&hits).last().map(String::as_str), Some("COMPLETED"));
    // Once each: neither replica sends what the other claimed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hits = receiver.hits("/own");
    let mut ids: Vec<&str> = hits.iter().map(|hit| hit.header("webhook-id")).collect();
    let sent = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), sent, "a notification sent twice");
    assert_eq!(states(&hits).last().map(String::as_str), Some("COMPLETED"));
}

/// The official Python client (a2a-sdk 1.3.0) registers receivers with the SDK agent, in a
/// SendMessage (its `ClientConfig.push_notification_config`) and with its own config
/// methods, over both HTTP bindings: the notifications arrive, the configs read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_registers_receivers() {
    let Some(python) = crate::python_interop::python_or_skip("a2a.client") else {
        return;
    };
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private"]);
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let hook = format!("{base}/{}", binding.replace('+', "-"));
        let report = crate::python_interop::run_script(
            &python,
            "python_push_client.py",
            &[&url, binding, &hook],
        )
        .await;
        let seen = &report["seen"];
        assert_eq!(
            seen["got_url"],
            format!("{hook}/created"),
            "{binding}: {seen}"
        );
        assert_eq!(
            seen["listed"].as_array().unwrap().len(),
            2,
            "{binding}: {seen}"
        );
        assert_eq!(
            seen["listed_after_delete"],
            json!([format!("{hook}/sent")]),
            "{binding}: {seen}"
        );
        let path = format!("/{}/sent", binding.replace('+', "-"));
        let hits = receiver.wait_for(&path, 3, Duration::from_secs(10)).await;
        assert_eq!(
            states(&hits),
            ["artifact", "artifact", "COMPLETED"],
            "{binding}"
        );
        assert!(
            hits.iter()
                .all(|hit| hit.header("a2a-notification-token") == "py-token")
        );
        let task = seen["task_id"].as_str().unwrap();
        assert_eq!(hits[2].body["statusUpdate"]["taskId"], task, "{binding}");
    }
}

/// A secret written as Standard Webhooks writes one (`whsec_` and base64) signs with its
/// decoded key: every notification verifies with the official Standard Webhooks library, and
/// the token travels in both spellings the official SDKs read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whsec_secrets_verify_with_the_standard_webhooks_library() {
    let Some(python) = crate::python_interop::python_or_skip("standardwebhooks") else {
        return;
    };
    let key: Vec<u8> = (0u8..32).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
    let secret = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(&key)
    );
    let (receiver, base) = Receiver::start().await;
    let (_agent, url) = agent(&["--push-allow-private", "--push-signing-secret", &secret]);
    let hook = format!("{base}/whsec");
    send_with_push(&url, "stream:3", &hook, false).await;
    let hits = receiver
        .wait_for("/whsec", 4, Duration::from_secs(10))
        .await;
    let sent: Vec<Value> = hits
        .iter()
        .map(|hit| {
            // The token in both spellings: the Rust and Go SDKs' and the Python and JS SDKs'.
            assert_eq!(hit.header("a2a-notification-token"), "secret-token");
            assert_eq!(hit.header("x-a2a-notification-token"), "secret-token");
            let headers: serde_json::Map<String, Value> =
                ["webhook-id", "webhook-timestamp", "webhook-signature"]
                    .into_iter()
                    .map(|name| (name.to_owned(), json!(hit.header(name))))
                    .collect();
            json!({"headers": headers, "body": hit.raw})
        })
        .collect();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/python_webhook_verify.py"
    );
    let verify = |secret: String| {
        let input = serde_json::to_vec(&sent).unwrap();
        let python = python.clone();
        async move {
            let mut child = tokio::process::Command::new(&python)
                .args([script, &secret])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use tokio::io::AsyncWriteExt;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(&input).await.unwrap();
            drop(stdin);
            let output = child.wait_with_output().await.unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_str::<Vec<String>>(stdout.trim()).unwrap()
        }
    };
    assert_eq!(verify(secret.clone()).await, ["ok", "ok", "ok", "ok"]);
    // The check could fail: another key is refused by the same library.
    let other = format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode([7u8; 32])
    );
    assert!(verify(other).await.iter().all(|result| result != "ok"));
}

/// A flood into a receiver that hangs: past 1,000 pending for one task and receiver, the rest
/// are dead letters at once (counted), and the agent's memory stays within its bounds.
#[tokio::test]
async fn a_flood_to_a_hanging_receiver_stays_within_the_bounds() {
    let (stuck, base) = Receiver::start().await;
    stuck.script("/flood", std::iter::repeat_n(Answer::Hang, 10));
    let (agent_process, url) = agent(&["--push-allow-private"]);
    let before = agent_process.rss();
    send_with_push(&url, "stream:3000", &format!("{base}/flood"), false).await;
    let metrics_url = format!("{url}/metrics");
    let started = Instant::now();
    let dead = loop {
        let metrics = get_text(&metrics_url).await;
        let dead = metrics
            .lines()
            .find_map(|line| line.strip_prefix("a2a_push_dead_letters "))
            .and_then(|value| value.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        if dead >= 1999.0 {
            break dead;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{dead} dead letters"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // 3,001 events: the one in flight and 1,000 pending are kept, the rest are dead letters.
    assert!(dead <= 2001.0, "{dead}");
    assert_eq!(
        stuck.hits("/flood").len(),
        1,
        "one attempt hangs, the rest wait"
    );
    let grown = agent_process.rss().saturating_sub(before);
    // Pending and dead letters are bounded at 64 and 16 MiB; these small events take far less.
    eprintln!("RSS grew by {grown} bytes");
    assert!(grown < 96 << 20, "RSS grew by {grown} bytes");
}

/// One caller's floods take only its share: 400 configs of 6 KB on its own tasks are refused
/// past its share (1 MiB), and twelve `stream:1000` tasks to a receiver that never answers
/// take at most half the outbox; another caller's config stays, and its notifications all
/// arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_callers_flood_leaves_another_callers_push_whole() {
    let (receiver, base) = Receiver::start().await;
    receiver.script("/hang", std::iter::repeat_n(Answer::Hang, 64));
    let (_agent, url) = agent(&["--push-allow-private"]);
    let send = |caller, text, hook: String| {
        let url = url.clone();
        async move { send_with_push_as(&url, caller, text, &hook, false).await }
    };
    // Alice's config on a task of hers.
    let alice_task = task_id(&send(ALICE, "hello", format!("{base}/alice-first")).await);
    let kept = call(
        &url,
        ALICE,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": alice_task, "url": format!("{base}/alice-kept")}),
    )
    .await;
    let kept = kept["result"]["id"].as_str().unwrap().to_owned();

    // Bob's configs of 6 KB on his own tasks, 40 a task: refused past his share, with a
    // clear error.
    let mut refused = Vec::new();
    for n in 0..400 {
        if n % 40 == 0 {
            let task = task_id(&send(BOB, "hello", format!("{base}/bob")).await);
            refused.push(task);
            continue;
        }
        let task = refused.iter().rev().find(|t| t.len() > 8).unwrap().clone();
        let created = call(
            &url,
            BOB,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("{base}/bob/{n}/{}", "x".repeat(1900)),
                "token": "t".repeat(4000)}),
        )
        .await;
        if created["error"]["code"] == -32602 {
            let message = created["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("this caller"), "{created}");
            refused.push(String::from("-"));
        }
    }
    let refusals = refused.iter().filter(|entry| *entry == "-").count();
    assert!(refusals > 200, "{refusals} of Bob's configs refused");

    // Bob's twelve streams of 1,000 events to a receiver that never answers.
    let floods: Vec<_> = (0..12)
        .map(|_| tokio::spawn(send(BOB, "stream:1000", format!("{base}/hang"))))
        .collect();
    for flood in floods {
        flood.await.unwrap();
    }
    // Alice's task: every notification arrives, and her first config is still hers.
    send(ALICE, "stream:3", format!("{base}/alice")).await;
    let hits = receiver
        .wait_for("/alice", 4, Duration::from_secs(20))
        .await;
    assert_eq!(
        states(&hits),
        ["artifact", "artifact", "artifact", "COMPLETED"]
    );
    let got = call(
        &url,
        ALICE,
        "GetTaskPushNotificationConfig",
        json!({"taskId": alice_task, "id": kept}),
    )
    .await;
    assert_eq!(got["result"]["id"], kept, "{got}");
}

/// `message` as `caller` sends it over gRPC.
fn as_caller<T>(caller: &str, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", caller.parse().unwrap());
    request
}

/// Over gRPC: a SendMessage's push config and CreateTaskPushNotificationConfig register
/// receivers for the caller's own task (another caller's Get is NOT_FOUND).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receivers_registered_over_grpc() {
    use a2a_pb::proto;
    let (receiver, base) = Receiver::start().await;
    let port = a2a_error_testkit::free_port();
    let grpc = format!("127.0.0.1:{port}");
    let (_agent, _url) = crate::common::start_example_with_env(
        "sdk_agent",
        &["--grpc", &grpc, "--push-allow-private"],
        &[],
    );
    crate::common::wait_until_listening(port, Duration::from_secs(20), "gRPC");
    let mut client = proto::a2a_service_client::A2aServiceClient::connect(format!("http://{grpc}"))
        .await
        .unwrap();

    let send = proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: uuid(),
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(proto::part::Content::Text("sleep:500".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        configuration: Some(proto::SendMessageConfiguration {
            task_push_notification_config: Some(proto::TaskPushNotificationConfig {
                url: format!("{base}/grpc-sent"),
                token: "g-token".into(),
                ..Default::default()
            }),
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    let reply = client.send_message(as_caller(ALICE, send)).await.unwrap();
    let task = match reply.into_inner().payload {
        Some(proto::send_message_response::Payload::Task(task)) => task.id,
        other => panic!("{other:?}"),
    };
    let created = client
        .create_task_push_notification_config(as_caller(
            ALICE,
            proto::TaskPushNotificationConfig {
                task_id: task.clone(),
                url: format!("{base}/grpc-created"),
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    let get = |caller| {
        as_caller(
            caller,
            proto::GetTaskPushNotificationConfigRequest {
                task_id: task.clone(),
                id: created.id.clone(),
                ..Default::default()
            },
        )
    };
    let got = client
        .get_task_push_notification_config(get(ALICE))
        .await
        .unwrap();
    assert_eq!(got.into_inner().url, format!("{base}/grpc-created"));
    let refused = client
        .get_task_push_notification_config(get(BOB))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound);

    let sent = receiver
        .wait_for("/grpc-sent", 2, Duration::from_secs(10))
        .await;
    assert_eq!(states(&sent), ["WORKING", "COMPLETED"]);
    assert_eq!(sent[0].header("a2a-notification-token"), "g-token");
    let created = receiver
        .wait_for("/grpc-created", 1, Duration::from_secs(10))
        .await;
    assert_eq!(states(&created), ["COMPLETED"]);
}
