//! The resilience layers in paused tokio time: exact delays per jitter mode, the cap, the
//! server's delay in every form, the budget, the total and attempt timeouts, classification
//! and method safety.
//!
//! The transport here is scripted (a `tower::service_fn` answering from a list), because these
//! tests are about the layers' decisions and timing; `tests/client.rs` runs the real
//! transports over loopback.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_error::Client;
use a2a_error::client::{Call, ClientError, Reply, ResponseHead};
use a2a_error::resilience::Timeout;
use a2a_error::resilience::{
    AttemptTimeoutLayer, Budget, Clock, Jitter, Random, Retry, RetryLayer, RetryPolicy,
    RetrySafety, TotalTimeoutLayer, TpsBudget,
};
use a2a_error::{A2aError, ErrorObject, RemoteError};
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use serde_json::{Value, json};
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

const MS: Duration = Duration::from_millis(1);

/// A wall clock that stands still (HTTP-date `Retry-After` is read against it).
struct FixedWallClock(std::time::SystemTime);

impl Clock for FixedWallClock {
    fn wall(&self) -> std::time::SystemTime {
        self.0
    }
}

/// A seeded random source: the same seed gives the same delays.
struct SeededRandom(Mutex<fastrand::Rng>);

impl SeededRandom {
    fn new(seed: u64) -> Self {
        SeededRandom(Mutex::new(fastrand::Rng::with_seed(seed)))
    }
}

impl Random for SeededRandom {
    fn next_f64(&self) -> f64 {
        self.0.lock().unwrap().f64()
    }
}

/// What the scripted transport does on one attempt.
enum Step {
    Fail(ClientError),
    /// Waits this long, then answers.
    Slow(Duration),
}

#[derive(Clone, Default)]
struct Script {
    steps: Arc<Mutex<VecDeque<Step>>>,
    /// When each attempt started, relative to the script's creation.
    attempts: Arc<Mutex<Vec<Instant>>>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Script {
    fn new(steps: impl IntoIterator<Item = Step>) -> Self {
        Script {
            steps: Arc::new(Mutex::new(steps.into_iter().collect())),
            ..Default::default()
        }
    }

    fn failing(error: impl Fn() -> ClientError, times: usize) -> Self {
        Script::new((0..times).map(|_| Step::Fail(error())))
    }

    /// The transport: each attempt takes the next step; with none left it succeeds.
    fn transport(
        &self,
    ) -> impl Service<
        Call,
        Response = Reply,
        Error = ClientError,
        Future = impl Future<Output = Result<Reply, ClientError>> + Send,
    > + Clone
    + Send
    + Sync
    + 'static {
        let script = self.clone();
        tower::service_fn(move |call: Call| {
            let script = script.clone();
            async move {
                script.attempts.lock().unwrap().push(Instant::now());
                script.calls.lock().unwrap().push(call.clone());
                let step = script.steps.lock().unwrap().pop_front();
                match step {
                    Some(Step::Fail(error)) => Err(error),
                    Some(Step::Slow(delay)) => {
                        tokio::time::sleep(delay).await;
                        Ok(Reply::Result(raw("slow")))
                    }
                    None => Ok(Reply::Result(raw("ok"))),
                }
            }
        })
    }

    fn attempts(&self) -> usize {
        self.attempts.lock().unwrap().len()
    }

    /// The waits between attempts.
    ///
    /// tokio's timer wakes on whole milliseconds, so a wait is its delay rounded up to one.
    fn gaps(&self) -> Vec<Duration> {
        let at = self.attempts.lock().unwrap();
        at.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

fn raw(text: &str) -> a2a_error::client::RawJson {
    serde_json::value::to_raw_value(text).unwrap()
}

fn whole_ms(delays: &[Duration]) -> Vec<Duration> {
    delays
        .iter()
        .map(|d| Duration::from_millis(d.as_nanos().div_ceil(1_000_000) as u64))
        .collect()
}

fn status(code: u16, retry_after: Option<&str>) -> ClientError {
    let mut headers = HeaderMap::new();
    if let Some(value) = retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from_str(value).unwrap());
    }
    ClientError::Status(Box::new(ResponseHead {
        status: code,
        headers,
    }))
}

fn remote(wire: Value) -> ClientError {
    let object: ErrorObject = serde_json::from_value(wire).unwrap();
    ClientError::from_object(object, None)
}

fn unavailable() -> ClientError {
    status(503, None)
}

/// A policy with no budget limit worth noticing, a seeded source and a recording hook.
/// (attempt that failed, delay before the next), in order.
type Retries = Arc<Mutex<Vec<(u32, Duration)>>>;

fn policy(seed: u64) -> (RetryPolicy<ClientError>, Retries) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook = seen.clone();
    let policy = RetryPolicy::new()
        .random(SeededRandom::new(seed))
        .budget(Arc::new(TpsBudget::new(
            Duration::from_secs(10),
            1000,
            1000.0,
        )))
        .on_retry(move |attempt, _: &ClientError, delay| {
            hook.lock().unwrap().push((attempt, delay))
        });
    (policy, seen)
}

async fn run(
    script: &Script,
    policy: RetryPolicy<ClientError>,
    call: Call,
) -> Result<Reply, ClientError> {
    Retry::new(script.transport(), policy).oneshot(call).await
}

/// The typed client's stack: total timeout → retry → attempt timeout → the script.
async fn run_stack(
    script: &Script,
    policy: RetryPolicy<ClientError>,
    attempt: Duration,
    total: Duration,
    call: Call,
) -> Result<Reply, ClientError> {
    ServiceBuilder::new()
        .layer(TotalTimeoutLayer::new(total))
        .layer(RetryLayer::new(policy))
        .layer(AttemptTimeoutLayer::new(attempt))
        .service(script.transport())
        .oneshot(call)
        .await
}

fn call() -> Call {
    Call::new("GetTask", &json!({"id": "t-1"})).unwrap()
}

/// The draws a seeded source makes, computed from fastrand directly.
fn draws(seed: u64, n: usize) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.f64()).collect()
}

#[tokio::test(start_paused = true)]
async fn full_jitter_draws_uniform_below_the_exponential_cap() {
    let script = Script::failing(unavailable, 4);
    let (policy, seen) = policy(7);
    let policy = policy
        .max_attempts(5)
        .base_delay(100 * MS)
        .max_delay(10_000 * MS);
    run(&script, policy, call()).await.unwrap();
    let r = draws(7, 4);
    let expected: Vec<Duration> = (0..4)
        .map(|n| (100 * MS * 2u32.pow(n as u32)).mul_f64(r[n]))
        .collect();
    let delays: Vec<Duration> = seen.lock().unwrap().iter().map(|(_, d)| *d).collect();
    assert_eq!(delays, expected);
    assert_eq!(
        script.gaps(),
        whole_ms(&expected),
        "the waits are the delays"
    );
    let attempts: Vec<u32> = seen.lock().unwrap().iter().map(|(a, _)| *a).collect();
    assert_eq!(attempts, [1, 2, 3, 4]);
}

#[tokio::test(start_paused = true)]
async fn equal_and_decorrelated_jitter_and_none() {
    let r = draws(11, 3);
    // Equal: half the cap plus a uniform share of the other half.
    let script = Script::failing(unavailable, 3);
    let (p, seen) = policy(11);
    let p = p.jitter(Jitter::Equal).base_delay(100 * MS);
    run(&script, p, call()).await.unwrap();
    let expected: Vec<Duration> = (0..3)
        .map(|n| {
            let half = 100 * MS * 2u32.pow(n as u32) / 2;
            half + half.mul_f64(r[n])
        })
        .collect();
    let delays: Vec<_> = seen.lock().unwrap().iter().map(|(_, d)| *d).collect();
    assert_eq!(delays, expected);
    assert_eq!(script.gaps(), whole_ms(&expected));

    // Decorrelated: base + r·(3·previous − base), starting from previous = base.
    let script = Script::failing(unavailable, 3);
    let (p, seen) = policy(11);
    let p = p.jitter(Jitter::Decorrelated).base_delay(100 * MS);
    run(&script, p, call()).await.unwrap();
    let mut previous = 100 * MS;
    let mut expected = Vec::new();
    for draw in &r {
        previous = 100 * MS + (previous * 3 - 100 * MS).mul_f64(*draw);
        expected.push(previous);
    }
    let delays: Vec<_> = seen.lock().unwrap().iter().map(|(_, d)| *d).collect();
    assert_eq!(delays, expected);
    assert_eq!(script.gaps(), whole_ms(&expected));

    // None: the exponential delays exactly, capped.
    let script = Script::failing(unavailable, 4);
    let (p, _) = policy(11);
    let p = p
        .jitter(Jitter::None)
        .max_attempts(5)
        .base_delay(100 * MS)
        .max_delay(300 * MS);
    run(&script, p, call()).await.unwrap();
    assert_eq!(script.gaps(), [100 * MS, 200 * MS, 300 * MS, 300 * MS]);
}

/// A random source that always draws `self.0`.
struct Draw(f64);

impl Random for Draw {
    fn next_f64(&self) -> f64 {
        self.0
    }
}

#[tokio::test(start_paused = true)]
async fn cap_applies_after_jitter() {
    // Decorrelated jitter draws from [base, 3 × the previous delay]: 400 ms to 1.2 s here. A
    // draw of 0.99 is ~1.19 s, over the 500 ms cap, so every wait is the cap exactly; a draw
    // of 0 is the base, under it.
    for (draw, expected) in [(0.99, 500 * MS), (0.0, 400 * MS)] {
        let script = Script::failing(unavailable, 3);
        let (p, seen) = policy(3);
        let p = p
            .random(Draw(draw))
            .jitter(Jitter::Decorrelated)
            .base_delay(400 * MS)
            .max_delay(500 * MS);
        run(&script, p, call()).await.unwrap();
        assert_eq!(script.gaps(), [expected; 3], "draw {draw}");
        assert!(seen.lock().unwrap().iter().all(|(_, d)| *d == expected));
    }
}

#[tokio::test(start_paused = true)]
async fn retry_after_seconds_wins_over_backoff() {
    let script = Script::failing(|| status(429, Some("3")), 2);
    let (p, _) = policy(1);
    let p = p.base_delay(10 * MS).max_delay(20 * MS);
    run(&script, p, call()).await.unwrap();
    assert_eq!(script.gaps(), [3000 * MS, 3000 * MS]);
}

#[tokio::test(start_paused = true)]
async fn retry_after_http_date_is_read_against_the_wall_clock() {
    let now = httpdate::parse_http_date("Tue, 15 Nov 1994 08:12:31 GMT").unwrap();
    let script = Script::failing(|| status(503, Some("Tue, 15 Nov 1994 08:12:36 GMT")), 1);
    let (p, _) = policy(1);
    run(&script, p.clock(FixedWallClock(now)), call())
        .await
        .unwrap();
    assert_eq!(script.gaps(), [5000 * MS]);
    // A date already past means: retry now.
    let later = now + Duration::from_secs(60);
    let script = Script::failing(|| status(503, Some("Tue, 15 Nov 1994 08:12:36 GMT")), 1);
    let (p, _) = policy(1);
    run(&script, p.clock(FixedWallClock(later)), call())
        .await
        .unwrap();
    assert_eq!(script.gaps(), [Duration::ZERO]);
}

#[tokio::test(start_paused = true)]
async fn retry_info_and_legacy_retry_after_in_the_error_object() {
    let retry_info = || {
        remote(json!({"code": -32052, "message": "Rate limited", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMITED",
             "domain": "x"},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.500s"}]}))
    };
    let script = Script::failing(retry_info, 1);
    let (p, _) = policy(1);
    run(&script, p, call()).await.unwrap();
    assert_eq!(script.gaps(), [1500 * MS]);

    let legacy = || remote(json!({"code": -32603, "message": "busy", "data": {"retryAfter": 4}}));
    let script = Script::failing(legacy, 1);
    let (p, _) = policy(1);
    run(&script, p, call()).await.unwrap();
    assert_eq!(script.gaps(), [4000 * MS]);
}

#[tokio::test(start_paused = true)]
async fn a_server_delay_past_the_deadline_stops_at_once() {
    let script = Script::failing(|| status(429, Some("120")), 1);
    let (p, seen) = policy(1);
    let start = Instant::now();
    let error = run_stack(
        &script,
        p,
        Duration::from_secs(30),
        Duration::from_secs(90),
        call(),
    )
    .await
    .unwrap_err();
    assert_eq!(error.reply_status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(script.attempts(), 1);
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no sleep into a missed deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn the_total_deadline_ends_a_slow_call() {
    let script = Script::new([Step::Slow(Duration::from_secs(60))]);
    let (p, _) = policy(1);
    let start = Instant::now();
    let error = run_stack(
        &script,
        p,
        Duration::from_secs(30),
        Duration::from_secs(5),
        call(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Total)),
        "{error:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(script.attempts(), 1);
    assert!(!error.retry_advice().is_retryable());
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_is_retried_and_the_deadline_travels_down() {
    let script = Script::new([Step::Slow(Duration::from_secs(60))]);
    let (p, seen) = policy(1);
    let p = p.jitter(Jitter::None).base_delay(100 * MS);
    let start = Instant::now();
    let reply = run_stack(
        &script,
        p,
        Duration::from_secs(2),
        Duration::from_secs(20),
        call(),
    )
    .await
    .unwrap();
    assert!(matches!(reply, Reply::Result(ref v) if v.get() == "\"ok\""));
    assert_eq!(start.elapsed(), 2100 * MS);
    assert_eq!(seen.lock().unwrap()[0].1, 100 * MS);
    let calls = script.calls.lock().unwrap();
    assert_eq!(calls.len(), 2);
    // The first attempt carries the whole budget; once the clock has started, the deadline.
    assert_eq!(calls[0].time_left(), Some(Duration::from_secs(20)));
    assert_eq!(calls[1].deadline(), Some(start + Duration::from_secs(20)));
    assert_eq!(
        calls[1].time_left(),
        Some(Duration::from_secs(20) - 2100 * MS)
    );
    assert_eq!(
        calls[0].id(),
        calls[1].id(),
        "the same request every attempt"
    );
    assert_eq!(calls[0].params(), calls[1].params());
}

#[tokio::test(start_paused = true)]
async fn the_budget_limits_retries_across_calls() {
    // 20 % of calls, no floor: ten failing calls may retry twice between them, not 30 times.
    let budget: Arc<dyn Budget + Send + Sync> =
        Arc::new(TpsBudget::new(Duration::from_secs(10), 0, 0.2));
    let script = Script::failing(unavailable, 1000);
    let p = RetryPolicy::new()
        .random(SeededRandom::new(1))
        .base_delay(MS)
        .budget(budget);
    let service = Retry::new(script.transport(), p);
    for _ in 0..10 {
        let error = service.clone().oneshot(call()).await.unwrap_err();
        assert_eq!(error.reply_status(), Some(503));
    }
    assert_eq!(script.attempts(), 12);
}

#[tokio::test(start_paused = true)]
async fn non_retryable_errors_make_exactly_one_attempt() {
    let cases: Vec<Box<dyn Fn() -> ClientError>> = vec![
        Box::new(|| remote(json!({"code": -32602, "message": "Invalid parameters"}))),
        Box::new(|| remote(json!({"code": -32601, "message": "Method not found"}))),
        Box::new(|| remote(json!({"code": -32001, "message": "Task not found"}))),
        Box::new(|| remote(json!({"code": -32050, "message": "Authentication required"}))),
        Box::new(|| status(401, None)),
        Box::new(|| status(400, None)),
    ];
    for error in cases {
        let script = Script::failing(&error, 5);
        let (p, _) = policy(1);
        let got = run(&script, p, call()).await.unwrap_err();
        assert_eq!(script.attempts(), 1, "{got:?}");
        assert_eq!(got.code(), error().code());
    }
}

#[tokio::test(start_paused = true)]
async fn a_predicate_overrides_the_classification() {
    let script = Script::failing(|| status(400, None), 2);
    let (p, _) = policy(1);
    let p = p.retry_if(|error| error.reply_status() == Some(400));
    run(&script, p, call()).await.unwrap();
    assert_eq!(script.attempts(), 3);

    let script = Script::failing(unavailable, 2);
    let (p, _) = policy(1);
    run(&script, p.retry_if(|_| false), call())
        .await
        .unwrap_err();
    assert_eq!(script.attempts(), 1);
}

#[tokio::test(start_paused = true)]
async fn unsafe_methods_retry_only_when_the_peer_did_not_run_them() {
    let custom = || Call::new("TransferFunds", &json!({"amount": 5})).unwrap();
    // A 502 from a proxy: the agent may have run it.
    let script = Script::failing(|| status(502, None), 3);
    let (p, _) = policy(1);
    run(&script, p, custom()).await.unwrap_err();
    assert_eq!(script.attempts(), 1);
    // A 429: refused before running; retried.
    let script = Script::failing(|| status(429, Some("1")), 2);
    let (p, _) = policy(1);
    run(&script, p, custom()).await.unwrap();
    assert_eq!(script.attempts(), 3);
    // Marked safe: the 502 is retried too.
    let script = Script::failing(|| status(502, None), 2);
    let (p, _) = policy(1);
    run(
        &script,
        p.method("TransferFunds", RetrySafety::Safe),
        custom(),
    )
    .await
    .unwrap();
    assert_eq!(script.attempts(), 3);
    // And SendMessage is safe by default: its messageId makes repeats recognisable.
    let script = Script::failing(|| ClientError::Timeout(Timeout::Attempt), 1);
    let (p, _) = policy(1);
    let send = Call::new("SendMessage", &json!({"message": {"messageId": "m-1"}})).unwrap();
    run(&script, p, send).await.unwrap();
    assert_eq!(script.attempts(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_layer_composes_with_tower_and_the_typed_client() {
    let script = Script::failing(unavailable, 2);
    let (p, seen) = policy(5);
    let stack = ServiceBuilder::new()
        .layer(RetryLayer::new(p))
        .service(script.transport());
    let client: Client<RemoteError> = Client::from_service(stack);
    let answer: String = client.call("GetTask", &json!({"id": "t"})).await.unwrap();
    assert_eq!(answer, "ok");
    assert_eq!(script.attempts(), 3);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn max_attempts_returns_the_last_error() {
    let script = Script::failing(unavailable, 10);
    let (p, seen) = policy(1);
    let error = run(&script, p.max_attempts(3), call()).await.unwrap_err();
    assert_eq!(error.reply_status(), Some(503));
    assert_eq!(script.attempts(), 3);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn each_timeout_layer_works_alone() {
    use a2a_error::resilience::{AttemptTimeout, TotalTimeout};
    // An attempt timeout alone fires as Attempt (retryable), at exactly its limit.
    let script = Script::new([Step::Slow(Duration::from_secs(60))]);
    let start = Instant::now();
    let error = AttemptTimeout::new(script.transport(), Duration::from_secs(3))
        .oneshot(call())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
    assert!(error.retry_advice().is_retryable());
    assert_eq!(start.elapsed(), Duration::from_secs(3));

    // A total timeout alone fires as Total, and its budget travels down with the call.
    let script = Script::new([Step::Slow(Duration::from_secs(60))]);
    let start = Instant::now();
    let error = TotalTimeout::new(script.transport(), Duration::from_secs(4))
        .oneshot(call())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Total)),
        "{error:?}"
    );
    assert!(!error.retry_advice().is_retryable());
    assert_eq!(start.elapsed(), Duration::from_secs(4));
    assert_eq!(
        script.calls.lock().unwrap()[0].time_left(),
        Some(Duration::from_secs(4))
    );

    // Under a total timeout, an attempt timeout that would outlast it fires as Total.
    let script = Script::new([Step::Slow(Duration::from_secs(60))]);
    let start = Instant::now();
    let error = ServiceBuilder::new()
        .layer(TotalTimeoutLayer::new(Duration::from_secs(2)))
        .layer(AttemptTimeoutLayer::new(Duration::from_secs(10)))
        .service(script.transport())
        .oneshot(call())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Total)),
        "{error:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}
