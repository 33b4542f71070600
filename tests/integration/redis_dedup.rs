//! The Redis dedup store against a real `redis-server` that these tests start on loopback:
//! replicas of an agent sharing one Redis run a SendMessage once, whichever replica a
//! retry lands on; a replica that dies mid-work leaves a claim that expires; a Redis that stops
//! answering gives the configured behaviour, not a hang.
//!
//! `redis-server` comes from the Debian package of that name (`.ci/run` installs it). Without
//! it these tests fail and say how to install it; `A2A_REDIS_SKIP=1` skips them on purpose,
//! and each then prints `SKIPPED` on stderr.

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::agent::TestAgent;
use crate::common::proxy::lossy_balancer;
use crate::common::requests::{rpc, send};
use crate::common::serve;
use a2a_error::Client;
use a2a_error::StandardError;
use a2a_error::resilience::{Jitter, RetryPolicy};
use a2a_error::server::{Dedup, DedupError, RedisStore, Refusal, StoreFailure};
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// A redis-server of the test's own, or `None` when skipped on purpose.
struct Redis(a2a_error_testkit::RedisServer);

impl Redis {
    fn start() -> Option<Redis> {
        crate::common::redis_server("Redis dedup tests").map(Redis)
    }

    fn url(&self) -> &str {
        &self.0.url
    }

    fn store(&self) -> RedisStore {
        RedisStore::connect(self.url()).unwrap()
    }

    fn stop(&mut self) {
        self.0.stop();
    }
}

fn message(text: &str, id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

fn client(url: &str) -> Client<StandardError> {
    Client::jsonrpc(format!("{url}/"))
        .retry(
            RetryPolicy::new()
                .base_delay(Duration::from_millis(20))
                .jitter(Jitter::None),
        )
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_lost_on_one_replica_is_replayed_by_another() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let (a, b) = (
        TestAgent::with_store(redis.store()),
        TestAgent::with_store(redis.store()),
    );
    let url_a = serve(a.router()).await;
    let url_b = serve(b.router()).await;
    let (balancer, seen) = lossy_balancer(url_a.clone(), url_b).await;

    let reply: Value = client(&balancer)
        .send_message(&message("hello", "m-lost"))
        .await
        .unwrap();
    assert_eq!(
        seen.load(Ordering::SeqCst),
        2,
        "A got the first try, B the retry"
    );
    assert_eq!(
        (a.runs("m-lost"), b.runs("m-lost")),
        (1, 0),
        "the work ran once"
    );
    // The reply B gave is A's run: the task exists on A, not on B.
    let id = reply["task"]["id"].as_str().unwrap().to_owned();
    assert!(a.has_task(&id));
    assert!(!b.has_task(&id));

    drop(redis);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_on_two_replicas_at_once_run_once() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let (a, b) = (
        TestAgent::with_store(redis.store()),
        TestAgent::with_store(redis.store()),
    );
    let urls = [serve(a.router()).await, serve(b.router()).await];
    let results = futures_util::future::join_all((0..10u64).map(|i| {
        let url = urls[(i % 2) as usize].clone();
        async move { rpc(&format!("{url}/"), send(i, "m-race", "sleep:200")).await }
    }))
    .await;
    let tasks: std::collections::BTreeSet<&str> = results
        .iter()
        .map(|r| r["result"]["task"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(tasks.len(), 1, "{results:?}");
    assert_eq!(a.runs("m-race") + b.runs("m-race"), 1);
}

#[test]
fn a_replica_that_dies_mid_work_leaves_a_claim_that_expires() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let claim = Duration::from_millis(1500);
    // Replica A on a runtime of its own, so that it can die with its work in flight.
    let a_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The store's connection lives on the runtime it is made on, and dies with it.
    let a = a_runtime.block_on(async { TestAgent::with_claim_ttl(redis.store(), claim) });
    let url_a = a_runtime.block_on(serve(a.router()));
    let b_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let b = b_runtime.block_on(async { TestAgent::with_claim_ttl(redis.store(), claim) });
    let url_b = b_runtime.block_on(serve(b.router()));

    let body = send(1, "m-die", "sleep:1000");
    let first = b_runtime.spawn(post_rpc_detached(url_a, body.clone()));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.runs("m-die"), 1, "A started the work");
    // A dies: its server and the work in flight are gone; its claim stays in Redis.
    a_runtime.shutdown_background();
    let started = Instant::now();
    let retry = b_runtime.block_on(rpc(&format!("{url_b}/"), body));
    let waited = started.elapsed();
    assert!(retry.get("result").is_some(), "{retry}");
    assert_eq!(b.runs("m-die"), 1, "B ran it once, after the claim expired");
    // B did not start before A's claim expired (1.5 s after A took it, 0.3 s before the
    // retry), so the work never ran twice at once; it then took B's 1 s.
    assert!(waited >= Duration::from_millis(2000), "{waited:?}");
    assert!(waited < Duration::from_secs(8), "{waited:?}");
    drop(first);
}

/// A request whose caller may be gone by the time it ends.
async fn post_rpc_detached(url: String, body: Value) -> Option<Value> {
    let reply = reqwest::Client::new()
        .post(format!("{url}/"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    reply.json().await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_stops_fails_closed_in_bounded_time_or_runs_as_configured() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let agent = TestAgent::with_store(redis.store());
    let url = serve(agent.router()).await;
    let ok = rpc(&format!("{url}/"), send(1, "m-before", "hello")).await;
    assert!(ok.get("result").is_some(), "{ok}");
    let open: Dedup<Value, StandardError> =
        Dedup::with_store(redis.store()).on_store_failure(StoreFailure::RunWithoutDedup);

    redis.stop();
    let started = Instant::now();
    let refused = rpc(&format!("{url}/"), send(2, "m-after", "hello")).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refused["error"]["code"], -32053, "{refused}");
    assert_eq!(
        agent.runs("m-after"),
        0,
        "no work without the once-only guarantee"
    );
    // Through the typed client: AGENT_UNAVAILABLE with pushback, decided before any work.
    let error = Client::<StandardError>::jsonrpc(format!("{url}/"))
        .retry(RetryPolicy::none())
        .build()
        .unwrap()
        .send_message::<_, Value>(&message("hello", "m-after"))
        .await
        .unwrap_err();
    assert!(!error.may_have_run(), "{error:?}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));

    // Configured to run without dedup instead: it runs.
    let ran = open
        .run("SendMessage", &HeaderMap::new(), "m", "x", |_| async {
            Ok::<_, StandardError>(json!("ran"))
        })
        .await
        .unwrap();
    assert_eq!(ran, "ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_timed_out_while_redis_was_frozen_does_not_come_back() {
    use a2a_error::server::DedupStore;
    let Some(redis) = Redis::start() else {
        return;
    };
    let store = redis.store().timeout(Duration::from_millis(300));
    let lease = Duration::from_secs(60);
    // Loads the scripts, so the frozen server has nothing to load later.
    assert!(store.claim("warm", b"t0", lease).await.unwrap().is_none());
    store.release("warm", b"t0").await.unwrap();

    redis.0.pause();
    let timed_out = store.claim("m-orphan", b"token-1", lease).await;
    assert!(timed_out.is_err(), "{timed_out:?}");
    redis.0.resume();

    // The queued claim ran when Redis woke, and its release right behind it: the retry's own
    // claim succeeds well within the lease (before the fix it waited out the 60 s).
    let started = Instant::now();
    loop {
        match store.claim("m-orphan", b"token-2", lease).await {
            Ok(None) => break,
            Ok(Some(held)) => assert!(
                started.elapsed() < Duration::from_secs(10),
                "an orphaned claim still holds the key: {held:?}"
            ),
            Err(error) => assert!(started.elapsed() < Duration::from_secs(10), "{error}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // And the key is the retry's: nothing else released or overwrote it.
    assert_eq!(
        store.get("m-orphan").await.unwrap().as_deref(),
        Some(&b"token-2"[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_refused_while_redis_was_frozen_runs_once_it_wakes() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let (_agent, url) = start_agent(redis.url());
    let url = format!("{url}/");
    let warm = rpc(&url, send(1, "m-warm", "hello")).await;
    assert!(warm["result"].is_object(), "{warm}");

    // Frozen for longer than any one command waits: the agent fails closed.
    redis.0.pause();
    let refused = rpc(&url, send(2, "m-frozen", "hello")).await;
    assert_eq!(refused["error"]["code"], -32053, "{refused}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    redis.0.resume();

    // The retry runs. Before the orphan was chased, the claim queued while Redis was frozen
    // ran when it woke and held the key for its whole lease: each retry waited 10 s and got
    // MESSAGE_IN_PROGRESS.
    let started = Instant::now();
    loop {
        let reply = rpc(&url, send(3, "m-frozen", "hello")).await;
        if reply["result"].is_object() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "the retry is still refused: {reply}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_travel_through_redis_too() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let dedup: Dedup<Value, StandardError> = Dedup::with_store(redis.store());
    let first = dedup
        .run(
            "SendMessage",
            &HeaderMap::new(),
            "k",
            json!({"a": 1}),
            |_| async { Ok::<_, StandardError>(json!(1)) },
        )
        .await
        .unwrap();
    let replay = dedup
        .run(
            "SendMessage",
            &HeaderMap::new(),
            "k",
            json!({"a": 1}),
            |_| async { Ok::<_, StandardError>(json!(2)) },
        )
        .await
        .unwrap();
    assert_eq!(first, replay);
    let reused = dedup
        .run(
            "SendMessage",
            &HeaderMap::new(),
            "k",
            json!({"a": 2}),
            |_| async { Ok::<_, StandardError>(json!(3)) },
        )
        .await
        .unwrap_err();
    assert!(matches!(reused, DedupError::Refused(Refusal::IdReused)));
}

fn start_agent(redis_url: &str) -> (crate::common::ExampleProcess, String) {
    crate::common::start_example("agent", &["--redis", redis_url])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agent_processes_with_redis_share_replies() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let (_a, url_a) = start_agent(redis.url());
    let (_b, url_b) = start_agent(redis.url());
    let http = reqwest::Client::new();
    let post_as = |url: &str, auth: &str, id: u64, message_id: &str| {
        http.post(format!("{url}/"))
            .header("content-type", "application/json")
            .header("authorization", auth.to_owned())
            .body(send(id, message_id, "hello").to_string())
            .send()
    };
    let first: Value = post_as(&url_a, "Bearer alice", 1, "m-procs")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let retry: Value = post_as(&url_b, "Bearer alice", 2, "m-procs")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // B answered with A's run: the same task id, which carries A's prefix.
    assert_eq!(retry["result"], first["result"], "{retry}");
    // Another caller with the same messageId gets a task of its own.
    let other: Value = post_as(&url_b, "Bearer bob", 3, "m-procs")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_ne!(other["result"]["task"]["id"], first["result"]["task"]["id"]);
    // A bad Redis URL is a usage error at start-up.
    let status = Command::new(crate::common::example_exe("agent"))
        .args(["--addr", "127.0.0.1:0", "--redis", "not a url"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}

fn caller(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("authorization", token.parse().unwrap());
    headers
}

/// Runs `id` for the caller of `headers` with a reply of `bytes` bytes (its content says which
/// run made it), returning the reply.
async fn big_reply(
    dedup: &Dedup<Value, StandardError>,
    headers: &HeaderMap,
    id: &str,
    bytes: usize,
    run: u32,
) -> Result<Value, DedupError<StandardError>> {
    dedup
        .run(
            "SendMessage",
            headers,
            id,
            json!({"id": id}),
            move |_| async move {
                Ok::<_, StandardError>(json!({"run": run, "pad": "x".repeat(bytes)}))
            },
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_cannot_grow_the_dedups_redis_past_its_bound() {
    let Some(redis) = Redis::start() else {
        return;
    };
    let per_caller = 6u64 << 20;
    let store = redis.store().max_bytes(64 << 20, per_caller);
    let dedup: Dedup<Value, StandardError> =
        Dedup::with_store(store.clone()).identify(a2a_error::server::scope::authorization);
    let (alice, mallory) = (caller("Bearer alice"), caller("Bearer mallory"));
    big_reply(&dedup, &alice, "kept", 1 << 20, 1).await.unwrap();
    let before = redis.0.used_memory().unwrap();
    // 14 replies of 1.5 MB from one caller: 21 MB asked, 6 MiB kept, the oldest going first.
    for n in 0..14 {
        big_reply(&dedup, &mallory, &format!("m-{n}"), 1_500_000, 1)
            .await
            .unwrap();
    }
    let grown = redis.0.used_memory().unwrap().saturating_sub(before);
    let weighed = store.weighed_bytes().await.unwrap();
    eprintln!("Redis grew {grown} bytes, {weighed} weighed");
    assert!(
        grown <= per_caller + (512 << 10),
        "Redis grew {grown} bytes"
    );
    assert!(weighed <= per_caller + (2 << 20), "{weighed}");
    // The newest is replayed; the oldest was dropped, and runs again.
    let newest = big_reply(&dedup, &mallory, "m-13", 1_500_000, 2)
        .await
        .unwrap();
    assert_eq!(newest["run"], 1);
    let oldest = big_reply(&dedup, &mallory, "m-0", 1_500_000, 2)
        .await
        .unwrap();
    assert_eq!(oldest["run"], 2);
    // Another caller's reply survived the flood.
    let kept = big_reply(&dedup, &alice, "kept", 1 << 20, 2).await.unwrap();
    assert_eq!(kept["run"], 1);
    // A reply heavier than a caller's bound is remembered as a final CONTENT_TOO_LARGE: its
    // retry is told so, and the work does not run twice.
    let huge = big_reply(&dedup, &alice, "huge", 7 << 20, 1).await.unwrap();
    assert_eq!(huge["run"], 1);
    let retried = big_reply(&dedup, &alice, "huge", 7 << 20, 2)
        .await
        .unwrap_err();
    match retried {
        DedupError::Replayed(error) => {
            assert_eq!(a2a_error::A2aError::code(&*error), -32055, "{error:?}")
        }
        other => panic!("expected CONTENT_TOO_LARGE, got {other:?}"),
    }
}
