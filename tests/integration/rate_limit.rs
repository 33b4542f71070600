//! Per-caller rate limits from outside: the `sdk_agent` example with `--rate-limit R`, alone
//! and as two replicas sharing one redis-server (`--redis`), driven over JSON-RPC, HTTP+JSON
//! and gRPC by callers told apart by their `Authorization`.

use std::time::Duration;

use a2a_error::resilience::RetryPolicy;
use serde_json::{Value, json};

use crate::common::requests::rpc_with;
use crate::common::{start_example, wait_until_listening};

/// GetTask of a task nobody has, as `caller`: TASK_NOT_FOUND when admitted.
async fn get_task(url: &str, caller: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}});
    rpc_with(&format!("{url}/"), ("authorization", caller), body).await
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{reply}"))
}

/// The RetryInfo delay of a RATE_LIMITED reply (`"0.499871s"`).
fn retry_delay(reply: &Value) -> Duration {
    assert_eq!(
        code(reply),
        i64::from(a2a_error::code::RATE_LIMITED),
        "{reply}"
    );
    let info = reply["error"]["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|detail| detail["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
        .unwrap_or_else(|| panic!("no RetryInfo: {reply}"));
    let text = info["retryDelay"].as_str().unwrap();
    Duration::from_secs_f64(text.trim_end_matches('s').parse().unwrap())
}

/// One replica, `--rate-limit 2`: each caller gets two at once and then one every half
/// second, on every binding together; a refusal says exactly how long to wait, and waiting
/// that long is enough.
#[tokio::test(flavor = "multi_thread")]
async fn each_caller_gets_its_rate_on_every_binding_and_the_wait_it_is_told_is_enough() {
    let port = a2a_error_testkit::free_port();
    let grpc = format!("127.0.0.1:{port}");
    let (_agent, url) = start_example("sdk_agent", &["--grpc", &grpc, "--rate-limit", "2"]);
    wait_until_listening(port, Duration::from_secs(20), "the gRPC listener");
    let tnf = i64::from(a2a_error::code::TASK_NOT_FOUND);

    assert_eq!(code(&get_task(&url, "Bearer a").await), tnf);
    assert_eq!(code(&get_task(&url, "Bearer a").await), tnf);
    let refused = get_task(&url, "Bearer a").await;
    let wait = retry_delay(&refused);
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(500),
        "{wait:?}"
    );
    assert_eq!(
        refused["error"]["data"][0]["reason"], "RATE_LIMITED",
        "{refused}"
    );
    // Another caller has its own allowance.
    assert_eq!(code(&get_task(&url, "Bearer b").await), tnf);

    // The same caller over HTTP+JSON and gRPC: the same allowance, refused as those
    // bindings say it.
    let rest = reqwest::Client::new()
        .get(format!("{url}/tasks/nope"))
        .header("authorization", "Bearer a")
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status().as_u16(), 429);
    assert_eq!(rest.headers()["retry-after"], "1");
    let client = a2a_error::Client::<a2a_error::RemoteError>::grpc(grpc.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", "Bearer a".parse().unwrap());
    let call = a2a_error::client::Call::new("GetTask", &json!({"id": "nope"}))
        .unwrap()
        .with_headers(headers);
    let error = client.send(call).await.unwrap_err();
    let remote = error.remote().expect("the agent's refusal");
    assert_eq!(
        a2a_error::A2aError::code(remote),
        a2a_error::code::RATE_LIMITED
    );
    let told = remote.retry_after().expect("a RetryInfo");
    assert!(told <= Duration::from_millis(500), "{told:?}");

    // Honouring what it was told, the caller is served.
    tokio::time::sleep(told).await;
    assert_eq!(code(&get_task(&url, "Bearer a").await), tnf);

    // A refused SendMessage is not remembered as its outcome: the same message sent again
    // after the wait runs (the dedup does not replay the refusal).
    let send = |id: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
            "messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]}}})
    };
    let post = |body: Value| {
        let url = format!("{url}/");
        async move { rpc_with(&url, ("authorization", "Bearer c"), body).await }
    };
    assert!(post(send("c-1")).await.get("result").is_some());
    assert!(post(send("c-2")).await.get("result").is_some());
    let refused = post(send("c-3")).await;
    tokio::time::sleep(retry_delay(&refused)).await;
    let reply = post(send("c-3")).await;
    assert!(reply.get("result").is_some(), "{reply}");
}

/// Two replicas on one redis-server, `--rate-limit 2`: a caller's allowance is one, whichever
/// replica it reaches, and the wait one replica tells it holds on the other.
#[tokio::test(flavor = "multi_thread")]
async fn replicas_on_one_redis_share_each_callers_rate() {
    let Some(redis) = crate::common::redis_server("the shared rate limit test") else {
        return;
    };
    let args = ["--redis", redis.url.as_str(), "--rate-limit", "2"];
    let (_one, one) = start_example("sdk_agent", &args);
    let (_two, two) = start_example("sdk_agent", &args);
    let tnf = i64::from(a2a_error::code::TASK_NOT_FOUND);

    assert_eq!(code(&get_task(&one, "Bearer shared").await), tnf);
    assert_eq!(code(&get_task(&two, "Bearer shared").await), tnf);
    let wait = retry_delay(&get_task(&one, "Bearer shared").await);
    assert!(
        wait > Duration::ZERO && wait <= Duration::from_millis(500),
        "{wait:?}"
    );
    let again = retry_delay(&get_task(&two, "Bearer shared").await);
    assert!(again <= wait, "{again:?} after {wait:?}");
    // Another caller, on either replica, is not held back.
    assert_eq!(code(&get_task(&two, "Bearer other").await), tnf);

    tokio::time::sleep(again).await;
    assert_eq!(code(&get_task(&two, "Bearer shared").await), tnf);

    // Redis not answering: refused, never unlimited (fail closed), and served again once it
    // answers.
    redis.pause();
    let reply = get_task(&one, "Bearer third").await;
    assert_eq!(
        code(&reply),
        i64::from(a2a_error::code::AGENT_UNAVAILABLE),
        "{reply}"
    );
    redis.resume();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while code(&get_task(&one, "Bearer third").await) != tnf {
        assert!(
            std::time::Instant::now() < deadline,
            "not served after Redis came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Agents sharing one redis-server keep their callers' allowances apart by the limiter's
/// prefix; the replicas of one agent (one prefix) share them. In process: three bridges on
/// one Redis at one request a second, two of them replicas of "weather", one "planner".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_on_one_redis_keep_their_callers_rates_apart_by_prefix() {
    use a2a_error::server::{RateLimit, RateLimiter, RedisStore};
    let Some(redis) = crate::common::redis_server("the rate limit prefix test") else {
        return;
    };
    let store = RedisStore::connect(&redis.url).unwrap();
    let agent = |prefix: &str| {
        let limiter = RateLimiter::redis(&store, RateLimit::per_second(1)).prefix(prefix);
        let handler = a2a_server::DefaultRequestHandler::new(
            crate::common::Nothing,
            a2a_error::sdk::MemoryTaskStore::new(1 << 20),
        );
        let bridge = a2a_error::sdk::Bridge::new(handler).rate_limit(limiter);
        crate::common::serve(bridge.router())
    };
    let (weather_one, weather_two, planner) = (
        agent("weather:").await,
        agent("weather:").await,
        agent("planner:").await,
    );
    let tnf = i64::from(a2a_error::code::TASK_NOT_FOUND);
    let limited = i64::from(a2a_error::code::RATE_LIMITED);

    // A caller's allowance is one request a second: the checks below tell shared from apart
    // only when the three requests come within that second. A round that took longer says
    // nothing and is tried again with a new caller; a round that is quick enough decides.
    for round in 0..5 {
        let caller = format!("Bearer caller-{round}");
        let started = std::time::Instant::now();
        assert_eq!(code(&get_task(&weather_one, &caller).await), tnf);
        let at_planner = code(&get_task(&planner, &caller).await);
        let at_replica = code(&get_task(&weather_two, &caller).await);
        if started.elapsed() < Duration::from_millis(900) {
            assert_eq!(
                at_planner, tnf,
                "another agent's prefix shares no allowance"
            );
            assert_eq!(at_replica, limited, "a replica of the same agent shares it");
            return;
        }
    }
    panic!("no round of three loopback requests took under 0.9 s");
}
