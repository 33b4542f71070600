//! Agents as fleets, from outside: `sdk_agent` replicas (processes) sharing one
//! `redis-server` (`--redis`): a task sent to one is read, listed, cancelled and followed on
//! the others, by its owner only; `kill -9` of the replica running a task leaves it FAILED
//! within the lease and 2 s; Redis crashing and restarting under load fails requests closed
//! and loses no task that was acknowledged. And in process, the store's own promises: a late
//! write from a replica whose lease lapsed is refused, and the bytes stay within bounds.

use std::time::{Duration, Instant};

use a2a::{A2AError, Task, TaskState, TaskStatus};
use a2a_error::sdk::{
    LeaseError, LeaseLost, OwnedTaskStore, Owner, RedisTaskStore, TaskLease, TaskLeases,
};
use a2a_error::server::RedisStore;
use a2a_server::TaskStore;
use serde_json::{Value, json};

use crate::common::requests::rpc_with;
use crate::common::{ExampleProcess, redis_server, start_example};

const ALICE: &str = "Bearer alice";
const BOB: &str = "Bearer bob";

/// `n` replicas of `sdk_agent` on `redis`, with `args`.
fn replicas(redis: &str, n: usize, args: &[&str]) -> Vec<(ExampleProcess, String)> {
    (0..n)
        .map(|_| {
            let mut all = vec!["--redis", redis];
            all.extend_from_slice(args);
            start_example("sdk_agent", &all)
        })
        .collect()
}

async fn call(url: &str, caller: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    rpc_with(&format!("{url}/"), ("authorization", caller), body).await
}

/// SendMessage of `text` as `caller`, answered at once with its task.
async fn start_task(url: &str, caller: &str, text: &str) -> Value {
    let params = json!({
        "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true}
    });
    let reply = call(url, caller, "SendMessage", params).await;
    reply["result"]["task"].clone()
}

fn uuid() -> String {
    format!("m-{:032x}", fastrand::u128(..))
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

async fn get_task(url: &str, caller: &str, id: &str) -> Value {
    call(url, caller, "GetTask", json!({"id": id})).await
}

/// The events of SubscribeToTask `id` on `url`, read to the stream's end (a refusal before
/// the stream began is the one reply).
async fn follow(url: &str, caller: &str, id: &str) -> Vec<Value> {
    let (mut response, mut text) = match open_follow(url, caller, id).await {
        Ok(open) => open,
        Err(refusal) => return vec![refusal],
    };
    while let Some(chunk) = response.chunk().await.unwrap() {
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

/// Three replicas: a task sent to the first is read on the second, listed on the third,
/// followed to its end on the second and cancelled on the third; another caller finds it
/// nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_sent_to_one_replica_is_read_listed_followed_and_cancelled_on_the_others() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let fleet = replicas(&redis.url, 3, &[]);
    let (a, b, c) = (&fleet[0].1, &fleet[1].1, &fleet[2].1);

    // `sleep:MS` is WORKING at once, and returnImmediately answers with it.
    let task = start_task(a, ALICE, "sleep:3000").await;
    assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();

    // Followed on B from the moment it is asked: the task, then its end.
    let followed = tokio::spawn({
        let (b, id) = (b.clone(), id.clone());
        async move { follow(&b, ALICE, &id).await }
    });
    let read = get_task(b, ALICE, &id).await;
    assert_eq!(read["result"]["id"], id.as_str(), "{read}");
    // Over HTTP+JSON too.
    let rest: Value = reqwest::Client::new()
        .get(format!("{b}/tasks/{id}"))
        .header("authorization", ALICE)
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["id"], id.as_str(), "{rest}");
    let listed = call(c, ALICE, "ListTasks", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()], "{listed}");

    // Bob sees none of it, on any replica.
    for url in [a, b, c] {
        let hidden = get_task(url, BOB, &id).await;
        assert_eq!(hidden["error"]["code"], -32001, "{hidden}");
        let none = call(url, BOB, "ListTasks", json!({})).await;
        // An empty list is left out of the reply's JSON, as protobuf's JSON does.
        assert!(none["result"].is_object(), "{none}");
        assert_eq!(
            none["result"]["tasks"].as_array().map_or(0, Vec::len),
            0,
            "{none}"
        );
        let cancel = call(url, BOB, "CancelTask", json!({"id": id})).await;
        assert_eq!(cancel["error"]["code"], -32001, "{cancel}");
        let subscribe = follow(url, BOB, &id).await;
        assert_eq!(subscribe[0]["error"]["code"], -32001, "{subscribe:?}");
    }

    let events = followed.await.unwrap();
    let first = &events[0]["result"];
    // The follow may start after the task ended (a slow machine): then it is refused as
    // the SDK refuses a finished task; otherwise it ends COMPLETED.
    if events.len() == 1 && events[0]["error"]["code"] == -32004 {
        eprintln!("the task ended before the follow began");
    } else {
        assert_eq!(first["task"]["id"], id.as_str(), "{events:?}");
        let last = &events.last().unwrap()["result"]["statusUpdate"];
        assert_eq!(state(last), "TASK_STATE_COMPLETED", "{events:?}");
    }
    let done = get_task(c, ALICE, &id).await;
    assert_eq!(state(&done["result"]), "TASK_STATE_COMPLETED", "{done}");

    // Cancelled on C while A runs it: CANCELED everywhere, and A's own completion, when it
    // comes, does not undo it.
    let long = start_task(a, ALICE, "sleep:1500").await;
    let long_id = long["id"].as_str().unwrap();
    let canceled = call(c, ALICE, "CancelTask", json!({"id": long_id})).await;
    assert_eq!(
        state(&canceled["result"]),
        "TASK_STATE_CANCELED",
        "{canceled}"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for url in [a, b, c] {
        let read = get_task(url, ALICE, long_id).await;
        assert_eq!(state(&read["result"]), "TASK_STATE_CANCELED", "{read}");
    }
}

/// `kill -9` of the replica running a task: the task ends FAILED, with TASK_ABANDONED as
/// its cause, within the lease and 2 s, readable on the replica left; a follower there sees
/// it end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_replica_is_killed_ends_failed_within_the_lease_and_two_seconds() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let lease = Duration::from_millis(1000);
    let mut fleet = replicas(&redis.url, 2, &["--task-lease-ms", "1000"]);
    let (b_process, b) = fleet.pop().unwrap();
    let (a_process, a) = fleet.pop().unwrap();

    let task = start_task(&a, ALICE, "sleep:600000").await;
    assert_eq!(state(&task), "TASK_STATE_WORKING", "{task}");
    let id = task["id"].as_str().unwrap().to_owned();
    let followed = tokio::spawn({
        let (b, id) = (b.clone(), id.clone());
        async move { follow(&b, ALICE, &id).await }
    });
    // The follow is under way (its first event is the task itself) before the kill.
    tokio::time::sleep(Duration::from_millis(300)).await;

    a_process.kill_9();
    let killed = Instant::now();
    let failed = loop {
        let read = get_task(&b, ALICE, &id).await;
        if state(&read["result"]) == "TASK_STATE_FAILED" {
            break read["result"].clone();
        }
        assert!(
            killed.elapsed() < lease + Duration::from_secs(2),
            "still {read} {:?} after the kill",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let cause = &failed["status"]["message"]["metadata"]["error"];
    assert_eq!(cause["reason"], "TASK_ABANDONED", "{failed}");
    assert_eq!(cause["code"], -32053, "{failed}");

    let events = followed.await.unwrap();
    assert_eq!(events[0]["result"]["task"]["id"], id.as_str(), "{events:?}");
    let last = &events.last().unwrap()["result"]["statusUpdate"];
    assert_eq!(state(last), "TASK_STATE_FAILED", "{events:?}");
    // The replica that ended it says so in its metrics.
    let metrics = crate::common::requests::get_text(&format!("{b}/metrics")).await;
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("a2a_tasks_abandoned 1")),
        "{metrics}"
    );
    drop((a_process, b_process));
}

/// Redis crashes under load and comes back: meanwhile every request is refused in bounded
/// time with AGENT_UNAVAILABLE (closed, never a task in one process only); afterwards the
/// replicas serve again, and every task a SendMessage acknowledged is there, on either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_crashing_under_load_fails_closed_and_loses_no_acknowledged_task() {
    if redis_server("fleet tests").is_none() {
        return;
    }
    let mut redis = a2a_error_testkit::RedisServer::spawn_persistent().unwrap();
    let fleet = replicas(&redis.url, 2, &["--task-lease-ms", "1000"]);
    let urls: Vec<String> = fleet.iter().map(|(_, url)| url.clone()).collect();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for worker in 0..4 {
        let (urls, stop) = (urls.clone(), std::sync::Arc::clone(&stop));
        load.push(tokio::spawn(async move {
            let (mut acknowledged, mut refused) = (Vec::new(), 0u32);
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let url = &urls[(worker + n) % urls.len()];
                n += 1;
                let params = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
                    "parts": [{"text": "hello"}]}});
                let asked = Instant::now();
                let reply = call(url, ALICE, "SendMessage", params).await;
                // Bounded: the store's 1 s timeout and a retry, never a hang.
                assert!(asked.elapsed() < Duration::from_secs(10), "{reply}");
                if let Some(task) = reply["result"]["task"].as_object() {
                    acknowledged.push(task["id"].as_str().unwrap().to_owned());
                } else {
                    assert_eq!(reply["error"]["code"], -32053, "{reply}");
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            (acknowledged, refused)
        }));
    }
    // Frozen (its connections open, nothing answered), then thawed; then crashed, and
    // started again from its append-only file.
    tokio::time::sleep(Duration::from_millis(700)).await;
    redis.pause();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.resume();
    tokio::time::sleep(Duration::from_millis(700)).await;
    redis.stop();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.restart().unwrap();
    // Served again once Redis is back (the connection remakes itself).
    let back = Instant::now();
    loop {
        let params = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
            "parts": [{"text": "hello"}]}});
        let reply = call(&urls[0], ALICE, "SendMessage", params).await;
        if reply["result"]["task"].is_object() {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(20),
            "not back: {reply}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut acknowledged, mut refused) = (Vec::new(), 0);
    for worker in load {
        let (tasks, no) = worker.await.unwrap();
        acknowledged.extend(tasks);
        refused += no;
    }
    assert!(refused > 0, "Redis was down and nothing was refused");
    assert!(!acknowledged.is_empty());
    for (n, id) in acknowledged.iter().enumerate() {
        let read = get_task(&urls[n % 2], ALICE, id).await;
        assert_eq!(
            state(&read["result"]),
            "TASK_STATE_COMPLETED",
            "{id}: {read}"
        );
    }
    // No task is left unfinished: those whose completion Redis missed end FAILED once
    // their lease (1 s) lapses, within 2 s more.
    let deadline = Instant::now() + Duration::from_secs(3);
    let unfinished = loop {
        let unfinished = unfinished_tasks(&urls[1], ALICE).await;
        if unfinished.is_empty() || Instant::now() > deadline {
            break unfinished;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(unfinished.is_empty(), "left unfinished: {unfinished:?}");
    eprintln!(
        "{} acknowledged, all kept; {refused} refused while Redis was down",
        acknowledged.len()
    );
}

/// The ids and states of `caller`'s tasks that are not in a terminal state, every page read.
async fn unfinished_tasks(url: &str, caller: &str) -> Vec<(String, String)> {
    let (mut unfinished, mut token) = (Vec::new(), String::new());
    loop {
        let page = call(
            url,
            caller,
            "ListTasks",
            json!({"pageSize": 100, "pageToken": token}),
        )
        .await;
        for task in page["result"]["tasks"].as_array().into_iter().flatten() {
            let state = state(task);
            if !matches!(
                state,
                "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED"
            ) {
                unfinished.push((task["id"].as_str().unwrap().to_owned(), state.to_owned()));
            }
        }
        token = page["result"]["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            return unfinished;
        }
    }
}

fn working(id: &str, text_bytes: usize) -> Task {
    let mut task: Task = serde_json::from_value(json!({
        "id": id, "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}
    }))
    .unwrap();
    task.metadata = Some([("pad".to_owned(), json!("x".repeat(text_bytes)))].into());
    task
}

/// In process, two replicas' stores on one Redis: a task whose lease lapsed is reaped by
/// the other replica, and the first one's late write is refused; the store's bytes stay
/// within their bound, and in Redis's memory too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_write_after_a_lapsed_lease_is_refused_and_the_bytes_stay_bounded() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let lease = Duration::from_millis(200);
    let a = RedisTaskStore::new(&store).lease(lease);
    let b = RedisTaskStore::new(&store).lease(lease);

    // A creates the task (holding its lease) and then never renews it.
    a.create(working("t-late", 10)).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let reaped = loop {
        let task = b.get("t-late").await.unwrap().unwrap();
        if task.status.state == TaskState::Failed {
            break task;
        }
        assert!(Instant::now() < deadline, "never reaped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let metadata = reaped.status.message.unwrap().metadata.unwrap();
    assert_eq!(metadata["error"]["reason"], "TASK_ABANDONED");
    // A's late events: refused, whatever their state.
    let mut late = working("t-late", 10);
    late.status = TaskStatus {
        state: TaskState::Completed,
        message: None,
        timestamp: None,
    };
    let refused = a.update(late).await.unwrap_err();
    assert_eq!(refused.code, -32053);
    assert!(format!("{:?}", refused.details).contains("TASK_LEASE_LAPSED"));
    let refused = a.update(working("t-late", 10)).await.unwrap_err();
    assert_eq!(refused.code, -32053);
    let kept = b.get("t-late").await.unwrap().unwrap();
    assert_eq!(kept.status.state, TaskState::Failed);
    // Nor can it be cancelled.
    assert_eq!(
        b.begin_cancel("t-late").await.unwrap_err().code,
        a2a::error_code::TASK_NOT_CANCELABLE
    );

    // The TTL: a task not written for it goes (swept by the reaper, and by writes).
    let brief = RedisTaskStore::new(&store)
        .prefix("brief:")
        .ttl(Duration::from_millis(300));
    brief.create(working("t-brief", 10)).await.unwrap();
    assert!(brief.get("t-brief").await.unwrap().is_some());
    let deadline = Instant::now() + Duration::from_secs(10);
    while brief.get("t-brief").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "never expired");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(brief.weighed_bytes().await.unwrap(), 0);

    // Bounds: 512 KiB of tasks at most, whatever is written, small tasks or large; Redis's
    // memory follows what they weigh.
    let bound = 512 << 10;
    for (prefix, tasks, pad) in [("small:", 6_000, 10), ("large:", 2_000, 2_000)] {
        let bounded = RedisTaskStore::new(&store).prefix(prefix).max_bytes(bound);
        let before = redis.used_memory().unwrap();
        for n in 0..tasks {
            bounded
                .create(working(&format!("b-{n}"), pad))
                .await
                .unwrap();
        }
        let weighed = bounded.weighed_bytes().await.unwrap();
        assert!(weighed <= bound && weighed > bound * 3 / 4, "{weighed}");
        // The newest are kept, the oldest gone.
        assert!(
            bounded
                .get(&format!("b-{}", tasks - 1))
                .await
                .unwrap()
                .is_some()
        );
        assert!(bounded.get("b-0").await.unwrap().is_none());
        let grown = redis.used_memory().unwrap().saturating_sub(before);
        eprintln!("{prefix} {weighed} bytes weighed, Redis grew {grown} bytes");
        assert!(grown <= bound + (64 << 10), "{prefix} {grown}");
        // A task heavier than the bound: CONTENT_TOO_LARGE, and nothing written.
        let big = bounded.create(working("big", 600 << 10)).await.unwrap_err();
        assert_eq!(big.code, -32055);
        assert!(bounded.get("big").await.unwrap().is_none());
    }
}

type Events = futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>>;

fn status(ctx: &a2a_server::ExecutorContext, state: TaskState) -> a2a::StreamResponse {
    a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        metadata: None,
    })
}

/// An executor that says WORKING and then makes no event for as long as it is polled.
struct Stalls;

impl a2a_server::AgentExecutor for Stalls {
    fn execute(&self, ctx: a2a_server::ExecutorContext) -> Events {
        use futures_util::StreamExt;
        futures_util::stream::iter([Ok(status(&ctx, TaskState::Working))])
            .chain(futures_util::stream::pending())
            .boxed()
    }

    fn cancel(&self, _: a2a_server::ExecutorContext) -> Events {
        Box::pin(futures_util::stream::empty())
    }
}

/// An executor that completes at once.
struct Completes;

impl a2a_server::AgentExecutor for Completes {
    fn execute(&self, ctx: a2a_server::ExecutorContext) -> Events {
        Box::pin(futures_util::stream::iter([Ok(status(
            &ctx,
            TaskState::Completed,
        ))]))
    }

    fn cancel(&self, _: a2a_server::ExecutorContext) -> Events {
        Box::pin(futures_util::stream::empty())
    }
}

/// A bridge on `tasks` (shared, leased) over `executor`, served on loopback.
async fn shared_bridge(tasks: RedisTaskStore, executor: impl a2a_server::AgentExecutor) -> String {
    let executor = a2a_error::sdk::Guarded::leased(executor, tasks.clone());
    let handler = a2a_server::DefaultRequestHandler::new(executor, tasks.clone());
    let bridge = a2a_error::sdk::Bridge::new(handler).shared_tasks(tasks);
    crate::common::serve(bridge.router()).await
}

/// An execution that stalls past the store's stall limit loses its lease while it still
/// runs: the task ends FAILED (TASK_ABANDONED), the caller waiting on it is told so, and the
/// execution is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_stalled_past_its_limit_ends_failed_and_is_stopped() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let tasks = RedisTaskStore::new(&store)
        .lease(Duration::from_millis(300))
        .stall_limit(Duration::from_millis(300));
    let url = shared_bridge(tasks.clone(), Stalls).await;
    let params = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
        "parts": [{"text": "anything"}]}});
    let asked = Instant::now();
    let reply = call(&url, ALICE, "SendMessage", params).await;
    assert_eq!(reply["error"]["code"], -32053, "{reply}");
    assert_eq!(
        reply["error"]["data"][0]["reason"], "TASK_ABANDONED",
        "{reply}"
    );
    assert!(asked.elapsed() < Duration::from_secs(10));
    let listed = call(&url, ALICE, "ListTasks", json!({})).await;
    let task = &listed["result"]["tasks"][0];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut read = get_task(&url, ALICE, task["id"].as_str().unwrap()).await;
    while state(&read["result"]) != "TASK_STATE_FAILED" {
        assert!(Instant::now() < deadline, "{read}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        read = get_task(&url, ALICE, task["id"].as_str().unwrap()).await;
    }
    let cause = &read["result"]["status"]["message"]["metadata"]["error"];
    assert_eq!(cause["reason"], "TASK_ABANDONED", "{read}");
}

/// Each caller's tasks are bounded on their own: one caller writing past its bound loses
/// its own oldest tasks, never another's; hostile task ids are no task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_tasks_are_bounded_on_their_own_and_hostile_ids_are_no_task() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let tasks = RedisTaskStore::new(&store).max_scope_bytes(32 << 10);
    let url = shared_bridge(tasks.clone(), Completes).await;
    let send = |caller: &'static str| {
        let url = url.clone();
        async move {
            let params = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
                "parts": [{"text": "hello"}]}});
            call(&url, caller, "SendMessage", params).await["result"]["task"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let bobs = send(BOB).await;
    let first = send(ALICE).await;
    for _ in 0..100 {
        send(ALICE).await;
    }
    let listed = call(&url, ALICE, "ListTasks", json!({"pageSize": 100})).await;
    let total = listed["result"]["totalSize"].as_u64().unwrap();
    assert!((5..100).contains(&total), "{total}");
    assert_eq!(get_task(&url, ALICE, &first).await["error"]["code"], -32001);
    let kept = get_task(&url, BOB, &bobs).await;
    assert_eq!(kept["result"]["id"], bobs.as_str(), "{kept}");
    // Ids no task has, however long or strange: TASK_NOT_FOUND.
    for id in ["x".repeat(100_000), "*".to_owned(), "t:\u{0}".to_owned()] {
        let read = get_task(&url, ALICE, &id).await;
        assert_eq!(read["error"]["code"], -32001, "{read}");
    }
}

/// Push configs live with their task: saved only for a task the store has, at most 50,
/// counted in its weight, read by every replica, and gone when the task goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_are_shared_bounded_and_go_with_their_task() {
    use a2a_server::PushConfigStore;
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let (a, b) = (RedisTaskStore::new(&store), RedisTaskStore::new(&store));
    let config = |task: &str, id: &str| -> a2a::TaskPushNotificationConfig {
        serde_json::from_value(json!({"url": "https://example.com/hook", "taskId": task, "id": id}))
            .unwrap()
    };
    let missing = a
        .push_configs()
        .save(config("nope", "c"))
        .await
        .unwrap_err();
    assert_eq!(missing.code, a2a::error_code::TASK_NOT_FOUND);
    // Checked as the memory store checks a config (a2a-error-sdk/src/push/memory.rs): an id no task has
    // (empty, over 256 bytes), an over-long config id or no URL is INVALID_PARAMS.
    let long = "t".repeat(257);
    let no_url: a2a::TaskPushNotificationConfig =
        serde_json::from_value(json!({"url": "", "taskId": "t-push", "id": "c"})).unwrap();
    for refused in [
        config("", "c"),
        config(&long, "c"),
        config("t-push", &long),
        no_url,
    ] {
        let error = a.push_configs().save(refused).await.unwrap_err();
        assert_eq!(error.code, a2a::error_code::INVALID_PARAMS, "{error:?}");
    }

    a.create(working("t-push", 10)).await.unwrap();
    let before = a.weighed_bytes().await.unwrap();
    a.push_configs()
        .save(config("t-push", "c-1"))
        .await
        .unwrap();
    assert!(a.weighed_bytes().await.unwrap() > before);
    // Read on the other replica.
    let read = b.push_configs().get("t-push", "c-1").await.unwrap();
    assert_eq!(read.url, "https://example.com/hook");
    for n in 2..=50 {
        a.push_configs()
            .save(config("t-push", &format!("c-{n}")))
            .await
            .unwrap();
    }
    let too_many = a
        .push_configs()
        .save(config("t-push", "c-51"))
        .await
        .unwrap_err();
    assert_eq!(too_many.code, a2a::error_code::INVALID_PARAMS);
    // Saving one again replaces it.
    a.push_configs()
        .save(config("t-push", "c-50"))
        .await
        .unwrap();
    assert_eq!(b.push_configs().list("t-push").await.unwrap().len(), 50);
    b.push_configs().delete("t-push", "c-1").await.unwrap();
    assert_eq!(a.push_configs().list("t-push").await.unwrap().len(), 49);
    let gone = a.push_configs().get("t-push", "c-1").await.unwrap_err();
    assert_eq!(gone.code, a2a::error_code::TASK_NOT_FOUND);
    b.push_configs().delete_all("t-push").await.unwrap();
    assert!(a.push_configs().list("t-push").await.unwrap().is_empty());
    // Every config's weight went with it.
    assert_eq!(a.weighed_bytes().await.unwrap(), before);
}

/// Starts a task as `caller` on `url`, answered at once: its id.
async fn started_id(url: &str, caller: &str) -> String {
    let params = json!({
        "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "wait"}]},
        "configuration": {"returnImmediately": true}
    });
    let reply = call(url, caller, "SendMessage", params).await;
    reply["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_owned()
}

/// Opens SubscribeToTask `id` on `url` and reads its first chunk: the open stream with the
/// text read so far, or the refusal (one JSON-RPC reply, not an event stream).
async fn open_follow(
    url: &str,
    caller: &str,
    id: &str,
) -> Result<(reqwest::Response, String), Value> {
    let body =
        json!({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": id}});
    let mut response = reqwest::Client::new()
        .post(format!("{url}/"))
        .header("authorization", caller)
        .json(&body)
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap().unwrap_or_default();
    let text = String::from_utf8_lossy(&first).into_owned();
    match serde_json::from_str::<Value>(&text) {
        Ok(refusal) => Err(refusal),
        Err(_) => {
            assert!(text.starts_with("data:"), "{text}");
            Ok((response, text))
        }
    }
}

/// Following a task another replica runs takes a Redis connection: one caller gets at most
/// 16 at once, so that it cannot take every replica's 256, and gets one again as one ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_cannot_take_every_follower() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    // Two replicas in one process: A runs the tasks (they stay WORKING), B follows them.
    let a = shared_bridge(RedisTaskStore::new(&store), Stalls).await;
    let b = shared_bridge(RedisTaskStore::new(&store), Stalls).await;
    let alices = started_id(&a, ALICE).await;
    let bobs = started_id(&a, BOB).await;

    let mut open = Vec::new();
    for _ in 0..16 {
        open.push(open_follow(&b, ALICE, &alices).await.unwrap());
    }
    let refused = open_follow(&b, ALICE, &alices).await.unwrap_err();
    assert_eq!(refused["error"]["code"], -32053, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["reason"], "TASK_STORE_UNAVAILABLE",
        "{refused}"
    );
    // Another caller still follows.
    let _bobs = open_follow(&b, BOB, &bobs).await.unwrap();
    // One of Alice's ends: she may follow again.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match open_follow(&b, ALICE, &alices).await {
            Ok(_) => break,
            Err(refused) => {
                assert!(Instant::now() < deadline, "{refused}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Says WORKING, then COMPLETED after 2 s.
struct Slow;

impl a2a_server::AgentExecutor for Slow {
    fn execute(&self, ctx: a2a_server::ExecutorContext) -> Events {
        use futures_util::StreamExt;
        let done = status(&ctx, TaskState::Completed);
        futures_util::stream::iter([Ok(status(&ctx, TaskState::Working))])
            .chain(futures_util::stream::once(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                Ok(done)
            }))
            .boxed()
    }

    fn cancel(&self, _: a2a_server::ExecutorContext) -> Events {
        Box::pin(futures_util::stream::empty())
    }
}

/// A follower whose subscription's connection is closed under it reads the task once a
/// second, not in a loop, and still ends with the task's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_loses_its_subscription_reads_at_a_steady_pace() {
    let Some(redis) = redis_server("fleet tests") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let a = shared_bridge(RedisTaskStore::new(&store), Slow).await;
    let b = shared_bridge(RedisTaskStore::new(&store), Slow).await;
    let id = started_id(&a, ALICE).await;
    let (mut followed, _) = open_follow(&b, ALICE, &id).await.unwrap();
    let killed = redis
        .command(&["CLIENT", "KILL", "TYPE", "pubsub"])
        .unwrap();
    assert_eq!(killed, ":1");
    let before = redis.info("stats", "total_commands_processed").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = redis.info("stats", "total_commands_processed").unwrap();
    // A read a second, the lease's renewals and the reapers': a few, not thousands.
    assert!(
        after - before < 100,
        "{} commands in 500 ms",
        after - before
    );
    let mut rest = String::new();
    while let Some(chunk) = followed.chunk().await.unwrap() {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(rest.contains("TASK_STATE_COMPLETED"), "{rest}");
}

/// A task store of a user's own (the SDK's kind of store, here in memory) that keeps each
/// task's owner beside it, as `OwnedTaskStore` asks: written at `create` from
/// `creating_owner()`, read by `owns` and `list_owned`.
/// It leases its tasks too, as `TaskLeases` asks: a table of the tasks held, each with the
/// sender that tells its execution the lease was lost.
#[derive(Clone)]
struct OwnersBeside {
    tasks: a2a_error::sdk::MemoryTaskStore,
    owners: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, Owner>>>,
    leases: Leases,
    /// Every hold asked for, in order.
    holds: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Whether every hold is refused, as when another replica holds the task.
    refuse: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

type Leases = std::sync::Arc<
    std::sync::Mutex<
        std::collections::BTreeMap<String, tokio::sync::watch::Sender<Option<LeaseLost>>>,
    >,
>;

impl OwnersBeside {
    fn new() -> Self {
        OwnersBeside {
            tasks: a2a_error::sdk::MemoryTaskStore::new(16 << 20),
            owners: Default::default(),
            leases: Default::default(),
            holds: Default::default(),
            refuse: Default::default(),
        }
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<String, Owner>> {
        self.owners.lock().unwrap()
    }
}

#[async_trait::async_trait]
impl TaskStore for OwnersBeside {
    async fn create(&self, task: Task) -> Result<a2a_server::task_store::TaskVersion, A2AError> {
        if let Some(owner) = a2a_error::sdk::creating_owner() {
            self.owners().insert(task.id.clone(), owner);
        }
        self.tasks.create(task).await
    }
    async fn update(&self, task: Task) -> Result<a2a_server::task_store::TaskVersion, A2AError> {
        self.tasks.update(task).await
    }
    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        self.tasks.get(task_id).await
    }
    async fn list(&self, req: &a2a::ListTasksRequest) -> Result<a2a::ListTasksResponse, A2AError> {
        self.tasks.list(req).await
    }
    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        self.tasks.begin_cancel(task_id).await
    }
}

#[async_trait::async_trait]
impl OwnedTaskStore for OwnersBeside {
    async fn owns(&self, owner: Owner, task: &str) -> Result<bool, A2AError> {
        Ok(self.owners().get(task) == Some(&owner))
    }
    async fn list_owned(
        &self,
        owner: Owner,
        request: &a2a::ListTasksRequest,
        page_size: usize,
    ) -> Result<a2a::ListTasksResponse, A2AError> {
        let ids: Vec<String> = (self.owners().iter())
            .filter(|(_, whose)| **whose == owner)
            .map(|(id, _)| id.clone())
            .collect();
        let mut tasks = Vec::new();
        for id in ids {
            tasks.extend(self.tasks.get(&id).await?);
        }
        Ok(a2a_error::sdk::owned_page(request, page_size, tasks))
    }
}

#[async_trait::async_trait]
impl TaskLeases for OwnersBeside {
    async fn hold(&self, task: &str) -> Result<Box<dyn TaskLease>, A2AError> {
        self.holds.lock().unwrap().push(task.to_owned());
        let mut leases = self.leases.lock().unwrap();
        if self.refuse.load(std::sync::atomic::Ordering::Relaxed) || leases.contains_key(task) {
            return Err(a2a_error::sdk::to_sdk(&LeaseError::Elsewhere));
        }
        let (tell, lost) = tokio::sync::watch::channel(None);
        leases.insert(task.to_owned(), tell);
        Ok(Box::new(HeldHere {
            lost,
            leases: self.leases.clone(),
            task: task.to_owned(),
        }))
    }
}

/// A lease of `OwnersBeside`'s, given back when dropped.
struct HeldHere {
    lost: tokio::sync::watch::Receiver<Option<LeaseLost>>,
    leases: Leases,
    task: String,
}

#[async_trait::async_trait]
impl TaskLease for HeldHere {
    fn event(&self) {}
    async fn lost(&self) -> LeaseLost {
        let mut lost = self.lost.clone();
        match lost.wait_for(Option::is_some).await {
            Ok(why) => why.unwrap_or(LeaseLost::Lapsed),
            Err(_) => LeaseLost::Lapsed,
        }
    }
}

impl Drop for HeldHere {
    fn drop(&mut self) {
        self.leases.lock().unwrap().remove(&self.task);
    }
}

/// An executor that counts the events its executions made (what ran of them), and runs `X`'s.
struct Counted<X>(X, std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl<X: a2a_server::AgentExecutor> a2a_server::AgentExecutor for Counted<X> {
    fn execute(&self, ctx: a2a_server::ExecutorContext) -> Events {
        use futures_util::StreamExt;
        let events = self.1.clone();
        (self.0.execute(ctx))
            .inspect(move |_| {
                events.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            })
            .boxed()
    }
    fn cancel(&self, ctx: a2a_server::ExecutorContext) -> Events {
        self.0.cancel(ctx)
    }
}

/// A bridge whose executions hold their leases of `store`, served on loopback.
async fn serve_leased(store: &OwnersBeside, executor: impl a2a_server::AgentExecutor) -> String {
    let executor = a2a_error::sdk::Guarded::leased(executor, store.clone());
    let handler = a2a_server::DefaultRequestHandler::new(executor, store.clone());
    let bridge = a2a_error::sdk::Bridge::new(handler).shared_tasks(store.clone());
    crate::common::serve(bridge.router()).await
}

/// Leases ask a trait of the store, not Redis: with a store of the user's own, each execution
/// holds its task's lease and gives it back when it ends; a store that refuses the lease
/// (another replica runs the task) refuses the execution before any of it runs; a lease the
/// store says is lost stops the execution, and the caller is told TASK_ABANDONED.
#[tokio::test]
async fn leases_are_the_stores_own_when_it_is_a_store_of_the_users_own() {
    let store = OwnersBeside::new();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let completes = serve_leased(&store, Counted(Completes, runs.clone())).await;
    let stalls = serve_leased(&store, Counted(Stalls, runs.clone())).await;
    let send = |url: String| async move {
        let params = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
            "parts": [{"text": "anything"}]}});
        call(&url, ALICE, "SendMessage", params).await
    };

    // Held while it ran, given back when it ended.
    let reply = send(completes.clone()).await;
    assert_eq!(
        state(&reply["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{reply}"
    );
    let id = reply["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(*store.holds.lock().unwrap(), std::slice::from_ref(&id));
    assert!(store.leases.lock().unwrap().is_empty());
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 1);

    // Refused by the store: nothing of the execution runs, the caller reads why.
    store
        .refuse
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let reply = send(completes.clone()).await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(
        reply["error"]["data"][0]["reason"], "TASK_RUNNING_ELSEWHERE",
        "{reply}"
    );
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 1);
    store
        .refuse
        .store(false, std::sync::atomic::Ordering::Relaxed);

    // Lost while it runs: stopped, TASK_ABANDONED, and the lease no longer held.
    let waiting = tokio::spawn(send(stalls));
    let deadline = Instant::now() + Duration::from_secs(10);
    let task = loop {
        if let Some(task) = store.leases.lock().unwrap().keys().next().cloned() {
            break task;
        }
        assert!(Instant::now() < deadline, "no execution held a lease");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    store.leases.lock().unwrap()[&task].send_replace(Some(LeaseLost::Lapsed));
    let reply = waiting.await.unwrap();
    assert_eq!(reply["error"]["code"], -32053, "{reply}");
    assert_eq!(
        reply["error"]["data"][0]["reason"], "TASK_ABANDONED",
        "{reply}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !store.leases.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the lost lease was kept");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A store of the user's own plugs in where the Redis store does: two replicas sharing it
/// serve each task to its owner only, whichever replica created it; ListTasks lists the
/// caller's own; anyone else is told TASK_NOT_FOUND.
#[tokio::test]
async fn a_store_of_the_users_own_keeps_each_task_to_its_owner_on_every_replica() {
    let store = OwnersBeside::new();
    let mut urls = Vec::new();
    for _ in 0..2 {
        let executor = a2a_error::sdk::Guarded::new(Completes, std::sync::Arc::new(store.clone()));
        let handler = a2a_server::DefaultRequestHandler::new(executor, store.clone());
        let bridge = a2a_error::sdk::Bridge::new(handler).shared_tasks(store.clone());
        urls.push(crate::common::serve(bridge.router()).await);
    }
    let (first, second) = (&urls[0], &urls[1]);
    let task = start_task(first, ALICE, "mine").await;
    let id = task["id"].as_str().expect("a task").to_owned();
    // The other replica knows whose it is: from the store, not from its own memory.
    let read = get_task(second, ALICE, &id).await;
    assert_eq!(read["result"]["id"], id.as_str(), "{read}");
    let listed = call(second, ALICE, "ListTasks", json!({})).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|task| task["id"].as_str())
        .collect();
    assert_eq!(ids, [id.as_str()], "{listed}");
    for url in [first, second] {
        let read = get_task(url, BOB, &id).await;
        assert_eq!(read["error"]["code"], -32001, "{read}");
        let listed = call(url, BOB, "ListTasks", json!({})).await;
        // An empty list is left out of protobuf's JSON.
        let tasks = &listed["result"]["tasks"];
        assert!(listed["result"].is_object(), "{listed}");
        assert!(tasks.as_array().is_none_or(Vec::is_empty), "{listed}");
    }
    // A task made outside a caller's request (no owner written) is no one's.
    let mut stray = task.clone();
    stray["id"] = json!("stray-task");
    let stray: a2a_error::sdk::ProtoJson<Task> = serde_json::from_value(stray).unwrap();
    store.tasks.create(stray.0).await.unwrap();
    let read = get_task(second, ALICE, "stray-task").await;
    assert_eq!(read["error"]["code"], -32001, "{read}");
}
