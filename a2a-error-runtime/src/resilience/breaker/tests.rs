//! The state machine in paused tokio time.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::*;
use crate::client::{Call, ClientError, Reply};
use crate::resilience::classify::Timeout;
use crate::wire::code;
use crate::wire::error::A2aError;
use crate::wire::object::ErrorObject;
use crate::wire::remote::RemoteError;

/// Jitter off: `r = 0.5` is the middle of the spread.
struct Middle;

impl crate::resilience::clock::Random for Middle {
    fn next_f64(&self) -> f64 {
        0.5
    }
}

fn config() -> BreakerConfig {
    BreakerConfig::new().random(Middle)
}

fn fail(breaker: &CircuitBreaker) {
    breaker.try_acquire().unwrap().record(Outcome::Failure);
}

fn succeed(breaker: &CircuitBreaker) {
    breaker.try_acquire().unwrap().record(Outcome::Success);
}

fn remote(code: i32) -> ClientError {
    ClientError::from_object(ErrorObject::new(code, "m"), None)
}

#[tokio::test(start_paused = true)]
async fn consecutive_failures_trip_then_a_probe_closes() {
    let breaker = CircuitBreaker::new("b", config());
    for _ in 0..4 {
        fail(&breaker);
    }
    succeed(&breaker);
    for _ in 0..4 {
        fail(&breaker);
    }
    // A success in between reset the count: 4 in a row do not trip.
    assert_eq!(breaker.state(), State::Closed);
    fail(&breaker);
    assert_eq!(breaker.state(), State::Open);
    let rejected = breaker.try_acquire().unwrap_err();
    assert_eq!(rejected.retry_after, Duration::from_secs(5));
    tokio::time::advance(Duration::from_secs(2)).await;
    assert_eq!(
        breaker.try_acquire().unwrap_err().retry_after,
        Duration::from_secs(3)
    );
    assert_eq!(
        breaker.snapshot().time_to_half_open,
        Some(Duration::from_secs(3))
    );
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(breaker.state(), State::HalfOpen);
    let probe = breaker.try_acquire().unwrap();
    // One probe at a time.
    assert_eq!(
        breaker.try_acquire().unwrap_err().retry_after,
        Duration::ZERO
    );
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
    let snapshot = breaker.snapshot();
    assert_eq!(
        (
            snapshot.consecutive_failures,
            snapshot.trips,
            snapshot.rejected
        ),
        (0, 0, 3)
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_reopens_for_longer() {
    let breaker = CircuitBreaker::new("b", config());
    for _ in 0..5 {
        fail(&breaker);
    }
    tokio::time::advance(Duration::from_secs(5)).await;
    breaker.try_acquire().unwrap().record(Outcome::Failure);
    assert_eq!(breaker.state(), State::Open);
    // Trip 2: 5 s × 2.
    assert_eq!(
        breaker.try_acquire().unwrap_err().retry_after,
        Duration::from_secs(10)
    );
    tokio::time::advance(Duration::from_secs(10)).await;
    breaker.try_acquire().unwrap().record(Outcome::Failure);
    assert_eq!(
        breaker.try_acquire().unwrap_err().retry_after,
        Duration::from_secs(15)
    );
}

#[tokio::test(start_paused = true)]
async fn the_ratio_trips_only_past_the_minimum_throughput_and_old_samples_leave() {
    let breaker = CircuitBreaker::new(
        "b",
        config()
            .consecutive_failures(0)
            .failure_ratio(0.5, 10)
            .sampling(Duration::from_secs(10), 10),
    );
    // 4 failures, 4 successes interleaved: 8 calls, under the minimum of 10.
    for _ in 0..4 {
        fail(&breaker);
        succeed(&breaker);
    }
    assert_eq!(breaker.state(), State::Closed);
    // The old samples leave the window; 9 fresh calls with 5 failures stay under 10.
    tokio::time::advance(Duration::from_secs(11)).await;
    for _ in 0..4 {
        succeed(&breaker);
        fail(&breaker);
    }
    fail(&breaker);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(
        (breaker.snapshot().successes, breaker.snapshot().failures),
        (4, 5)
    );
    // The tenth call, a failure: 6 of 10 ≥ 50 %.
    fail(&breaker);
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn caller_mistakes_and_not_found_never_trip() {
    let breaker = CircuitBreaker::new("b", config().consecutive_failures(2));
    let answered = [
        remote(code::INVALID_PARAMS),
        remote(code::TASK_NOT_FOUND),
        remote(code::AUTH_REQUIRED),
        remote(code::INSUFFICIENT_SCOPE),
        remote(code::UNSUPPORTED_OPERATION),
        remote(code::CONTENT_TOO_LARGE),
    ];
    let ignored = [
        ClientError::Timeout(Timeout::Total),
        ClientError::InvalidCall { detail: "x".into() },
        ClientError::CircuitOpen {
            retry_after: Duration::ZERO,
        },
    ];
    for _ in 0..10 {
        for error in answered.iter().chain(&ignored) {
            breaker.try_acquire().unwrap().record(error.health());
        }
    }
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.snapshot().failures, 0);
    // The agent's own failures do.
    let failures = [
        remote(code::INTERNAL_ERROR),
        remote(code::AGENT_UNAVAILABLE),
    ];
    for error in &failures {
        assert_eq!(error.health(), Outcome::Failure);
        breaker.try_acquire().unwrap().record(error.health());
    }
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(remote(code::RATE_LIMITED).health(), Outcome::RateLimited);
    assert_eq!(
        ClientError::<RemoteError>::Timeout(Timeout::Attempt).health(),
        Outcome::Failure
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_cut_counts_once_the_attempt_had_time() {
    let cut = ClientError::<RemoteError>::Timeout(Timeout::Total);
    assert_eq!(cut.health(), Outcome::DeadlineCut);
    let breaker = CircuitBreaker::new("black-hole", config());
    // Cut after 100 ms: the caller's budget was short; nothing is counted.
    for _ in 0..10 {
        let permit = breaker.try_acquire().unwrap();
        tokio::time::advance(Duration::from_millis(100)).await;
        permit.record(cut.health());
    }
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.snapshot().failures, 0);
    // Cut after 900 ms of silence: five in a row open the circuit.
    for _ in 0..5 {
        let permit = breaker.try_acquire().unwrap();
        tokio::time::advance(Duration::from_millis(900)).await;
        permit.record(cut.health());
    }
    assert_eq!(breaker.state(), State::Open);
    // Turned off, a cut never counts.
    let lenient = CircuitBreaker::new("b", config().deadline_counts_after(None));
    for _ in 0..10 {
        let permit = lenient.try_acquire().unwrap();
        tokio::time::advance(Duration::from_secs(5)).await;
        permit.record(cut.health());
    }
    assert_eq!(lenient.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn rate_limits_are_their_own_signal() {
    let breaker = CircuitBreaker::new("b", config().count_rate_limits(false));
    for _ in 0..10 {
        breaker.try_acquire().unwrap().record(Outcome::RateLimited);
    }
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.snapshot().rate_limited, 10);
    let counting = CircuitBreaker::new("c", config());
    for _ in 0..5 {
        counting.try_acquire().unwrap().record(Outcome::RateLimited);
    }
    assert_eq!(counting.state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn half_open_admits_exactly_the_probe_limit_among_many_concurrent_callers() {
    let breaker = CircuitBreaker::new("b", config().half_open_probes(3));
    for _ in 0..5 {
        fail(&breaker);
    }
    tokio::time::advance(Duration::from_secs(5)).await;
    let admitted = Arc::new(AtomicUsize::new(0));
    let (release, _) = tokio::sync::broadcast::channel::<()>(1);
    let mut callers = Vec::new();
    for _ in 0..100 {
        let breaker = breaker.clone();
        let admitted = admitted.clone();
        let mut release = release.subscribe();
        callers.push(tokio::spawn(async move {
            breaker
                .call(
                    async {
                        admitted.fetch_add(1, Ordering::SeqCst);
                        let _ = release.recv().await;
                        Ok::<(), ()>(())
                    },
                    |_| Outcome::Ignored,
                )
                .await
        }));
    }
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(admitted.load(Ordering::SeqCst), 3);
    // Cancel the three probes: their slots come back, and three new callers get them.
    for caller in &callers {
        caller.abort();
    }
    for caller in callers {
        let _ = caller.await;
    }
    assert_eq!(breaker.state(), State::HalfOpen);
    let probes: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
    assert!(breaker.try_acquire().is_err());
    // An ignored outcome gives its slot back too; a success closes.
    let mut probes = probes.into_iter();
    probes.next().unwrap().record(Outcome::Ignored);
    assert!(breaker.try_acquire().is_ok());
    probes.next().unwrap().record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn isolate_close_and_the_transition_hook() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook = seen.clone();
    let breaker = CircuitBreaker::new(
        "billing",
        config().on_transition(move |t| {
            hook.lock()
                .unwrap()
                .push(format!("{} {}→{}", t.agent, t.from, t.to))
        }),
    );
    breaker.isolate();
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(breaker.try_acquire().is_err());
    assert_eq!(breaker.state(), State::Isolated);
    breaker.close();
    succeed(&breaker);
    for _ in 0..5 {
        fail(&breaker);
    }
    tokio::time::advance(Duration::from_secs(5)).await;
    breaker.try_acquire().unwrap().record(Outcome::Success);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "billing closed→isolated",
            "billing isolated→closed",
            "billing closed→open",
            "billing open→half-open",
            "billing half-open→closed",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn slow_successes_count_as_failures_when_asked() {
    let breaker = CircuitBreaker::new(
        "b",
        config()
            .slow_call(Duration::from_secs(1))
            .consecutive_failures(2),
    );
    for _ in 0..2 {
        let permit = breaker.try_acquire().unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        permit.record(Outcome::Success);
    }
    assert_eq!(breaker.state(), State::Open);
}

#[tokio::test(start_paused = true)]
async fn the_layer_fails_fast_with_the_time_to_half_open() {
    use tower::{Layer, Service, ServiceExt};
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let transport = tower::service_fn(move |_call: Call| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Err::<Reply, _>(ClientError::<RemoteError>::Timeout(Timeout::Attempt)) }
    });
    let breaker = CircuitBreaker::new("b", config());
    let mut service = CircuitBreakerLayer::new(breaker.clone()).layer(transport);
    for _ in 0..5 {
        let call = Call::from_json("GetTask", "{}");
        let error = service.ready().await.unwrap().call(call).await.unwrap_err();
        assert!(matches!(error, ClientError::Timeout(_)));
    }
    tokio::time::advance(Duration::from_secs(1)).await;
    let error = service
        .ready()
        .await
        .unwrap()
        .call(Call::from_json("GetTask", "{}"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::CircuitOpen { retry_after } if retry_after == Duration::from_secs(4))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    // Passed on, it is AGENT_UNAVAILABLE with a truthful RetryInfo.
    assert_eq!(error.code(), code::AGENT_UNAVAILABLE);
    let object = error.to_error_object();
    assert_eq!(object.retry_after(), Some(Duration::from_secs(4)));
    assert!(!error.may_have_run());
}

#[tokio::test(start_paused = true)]
async fn a_health_read_after_the_break_half_opens_and_reports_the_transition() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let breaker = CircuitBreaker::new(
        "b",
        config().on_transition(move |t| log.lock().unwrap().push((t.from, t.to))),
    );
    for _ in 0..5 {
        fail(&breaker);
    }
    let open = serde_json::to_value(breaker.snapshot()).unwrap();
    assert_eq!(open["state"], "open");
    assert_eq!(open["timeToHalfOpenMs"], 5000);
    assert_eq!(open["consecutiveFailures"], 5);
    tokio::time::advance(Duration::from_secs(5)).await;
    // No call has come since: the read itself half-opens, so what the health endpoint says,
    // the transition event and the gauge (set with it) agree.
    let half_open = serde_json::to_value(breaker.snapshot()).unwrap();
    assert_eq!(half_open["state"], "half-open");
    assert_eq!(half_open["timeToHalfOpenMs"], serde_json::Value::Null);
    assert_eq!(
        *seen.lock().unwrap(),
        [(State::Closed, State::Open), (State::Open, State::HalfOpen)]
    );
}

/// A request that carries its operation's breaker (as an MCP tool call does), and how the
/// service is to fail it (`None`: answered).
#[derive(Clone)]
struct OwnBreaker(CircuitBreaker, Option<crate::resilience::classify::Scope>);

impl crate::resilience::request::Request for OwnBreaker {
    fn time_limit(&self) -> crate::resilience::request::TimeLimit {
        crate::resilience::request::TimeLimit::NONE
    }
    fn set_time_limit(&mut self, _: crate::resilience::request::TimeLimit) {}
    fn target(&self) -> Option<&str> {
        None
    }
    fn operation(&self) -> &str {
        "op"
    }
    fn breaker(&self) -> Option<&CircuitBreaker> {
        Some(&self.0)
    }
}

/// A failure scoped as the test says.
#[derive(Debug)]
struct Scoped(crate::resilience::classify::Scope);

impl crate::resilience::classify::Classify for Scoped {
    fn retry_advice_at(&self, _: std::time::SystemTime) -> crate::RetryHint {
        crate::RetryHint::Never
    }
    fn scope(&self) -> crate::resilience::classify::Scope {
        self.0
    }
}

#[tokio::test(start_paused = true)]
async fn a_failure_counts_for_the_breaker_its_scope_names_and_an_open_one_refuses() {
    use crate::dependency::Failure;
    use crate::resilience::classify::Scope;
    use tower::{Layer, ServiceExt};
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let service = tower::service_fn(move |request: OwnBreaker| {
        counter.fetch_add(1, Ordering::SeqCst);
        let failed = request.1.map(|scope| Failure::Failed(Scoped(scope)));
        async move { failed.map_or(Ok(()), Err) }
    });
    let callee = CircuitBreaker::new("server", config().consecutive_failures(2));
    let tool = CircuitBreaker::new("server/tool", config().consecutive_failures(2));
    let layer = CircuitBreakerLayer::new(callee.clone()).layer(service);
    let call =
        |breaker: &CircuitBreaker, scope| layer.clone().oneshot(OwnBreaker(breaker.clone(), scope));
    // The operation's failures open its circuit alone.
    for _ in 0..2 {
        call(&tool, Some(Scope::Operation)).await.unwrap_err();
    }
    assert_eq!(tool.state(), State::Open);
    assert_eq!(callee.state(), State::Closed);
    let refused = call(&tool, None).await.unwrap_err();
    assert!(matches!(refused, Failure::CircuitOpen { .. }));
    assert_eq!(
        sent.load(Ordering::SeqCst),
        2,
        "sent through an open circuit"
    );
    // The callee's failures open the callee's, which refuses every operation.
    let other = CircuitBreaker::new("server/other", config());
    for _ in 0..2 {
        call(&other, Some(Scope::Callee)).await.unwrap_err();
    }
    assert_eq!(callee.state(), State::Open);
    assert_eq!(other.state(), State::Closed);
    assert!(matches!(
        call(&other, None).await.unwrap_err(),
        Failure::CircuitOpen { .. }
    ));
}
