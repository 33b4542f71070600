//! The layers over calls that are not A2A: a derived enum, a foreign error and a tower service
//! under `Dependency`; `HttpDependency` against a fake service on loopback; the deadline
//! inherited and shared by a fallback chain; a failure passed on as the agent's own error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use a2a_error::dependency::Dependency;
use a2a_error::dependency::{
    DependencyFailed, Failure, HttpCall, HttpDependency, HttpError, HttpFailure,
};
use a2a_error::resilience::breaker::{BreakerConfig, BreakerRegistry};
use a2a_error::resilience::{Bulkhead, Fallback, RetryPolicy};
use a2a_error::resilience::{Classify, Timeout};
use a2a_error::{A2aError, RetryHint};
use a2a_error_testkit::{FaultService, HttpAnswer};
use serde_json::{Value, json};
use tokio::time::Instant;

#[derive(Debug, thiserror::Error, A2aError)]
enum StoreError {
    #[error("the store is busy")]
    #[a2a(code = AGENT_UNAVAILABLE, retry_after = 2)]
    Busy,
    #[error("no such order")]
    #[a2a(code = -32010, reason = "NO_SUCH_ORDER")]
    NotFound,
}

/// Counts calls and fails the first `fail` with `error()`.
fn flaky<E: Send + 'static>(
    calls: &Arc<AtomicU32>,
    fail: u32,
    error: fn() -> E,
) -> impl Fn() -> std::future::Ready<Result<u32, E>> + Clone + Send + Sync + 'static {
    let calls = calls.clone();
    move || {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        std::future::ready(if n <= fail { Err(error()) } else { Ok(n) })
    }
}

#[tokio::test(start_paused = true)]
async fn a_derived_enum_is_retried_as_its_attributes_say() {
    let store: Dependency<StoreError> = Dependency::builder("orders").build();
    let calls = Arc::new(AtomicU32::new(0));
    let started = Instant::now();
    let answer = store
        .run(flaky(&calls, 1, || StoreError::Busy))
        .await
        .unwrap();
    assert_eq!(answer, 2);
    // `retry_after = 2`: the wait is the error's own, not the backoff's.
    assert_eq!(started.elapsed(), Duration::from_secs(2));

    let calls = Arc::new(AtomicU32::new(0));
    let error = store
        .run(flaky(&calls, 9, || StoreError::NotFound))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Failure::Failed(StoreError::NotFound)),
        "{error:?}"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "a not-found is not retried"
    );
    assert!(error.is_refusal());
}

/// A foreign error, classified in a few lines.
#[derive(Debug)]
struct Io(std::io::ErrorKind);

impl Classify for Io {
    fn retry_advice_at(&self, _: SystemTime) -> RetryHint {
        RetryHint::Backoff
    }
    fn may_have_run(&self) -> bool {
        self.0 != std::io::ErrorKind::ConnectionRefused
    }
}

#[tokio::test(start_paused = true)]
async fn repeating_is_the_callers_statement() {
    let db: Dependency<Io> = Dependency::builder("db").repeatable(false).build();
    // May have run, and may not be repeated: one attempt.
    let calls = Arc::new(AtomicU32::new(0));
    let error = db
        .run(flaky(&calls, 9, || Io(std::io::ErrorKind::TimedOut)))
        .await
        .unwrap_err();
    assert!(matches!(error, Failure::Failed(Io(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Provably not run: retried anyway.
    let calls = Arc::new(AtomicU32::new(0));
    db.run(flaky(&calls, 2, || {
        Io(std::io::ErrorKind::ConnectionRefused)
    }))
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // This one call may be repeated.
    let calls = Arc::new(AtomicU32::new(0));
    db.op("read")
        .repeatable(true)
        .run(flaky(&calls, 2, || Io(std::io::ErrorKind::TimedOut)))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn a_tower_service_gets_the_breaker_the_bulkhead_and_the_timeouts() {
    let registry = BreakerRegistry::new(BreakerConfig::new().consecutive_failures(3));
    let db: Dependency<Io> = Dependency::builder("db")
        .breakers(&registry)
        .retry(RetryPolicy::none())
        .bulkhead(Bulkhead::new(1, 0))
        .attempt_timeout(Duration::from_millis(100))
        .build();
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let service = tower::service_fn(move |slow: bool| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if slow {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Err::<u32, _>(Io(std::io::ErrorKind::Other))
        }
    });
    let mut guarded = db.service(service);
    use tower::{Service, ServiceExt};
    // The attempt timeout.
    let error = guarded.ready().await.unwrap().call(true).await.unwrap_err();
    assert!(
        matches!(error, Failure::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
    // Two more failures open the circuit: the next call is refused, nothing sent.
    for _ in 0..2 {
        guarded
            .ready()
            .await
            .unwrap()
            .call(false)
            .await
            .unwrap_err();
    }
    let sent = calls.load(Ordering::SeqCst);
    let error = guarded
        .ready()
        .await
        .unwrap()
        .call(false)
        .await
        .unwrap_err();
    assert!(matches!(error, Failure::CircuitOpen { .. }), "{error:?}");
    assert_eq!(calls.load(Ordering::SeqCst), sent);
    assert!(error.delay_at(SystemTime::now()).is_some());
    assert!(db.breaker().is_some());

    // The bulkhead: one call in flight, none waiting.
    let free: Dependency<Io> = Dependency::builder("slow")
        .bulkhead(Bulkhead::new(1, 0))
        .without_breaker()
        .build();
    let slow = free.clone();
    let held = tokio::spawn(async move {
        slow.run(|| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, Io>(1)
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(10)).await;
    let error = free.run(|| async { Ok::<_, Io>(2) }).await.unwrap_err();
    assert!(matches!(error, Failure::BulkheadFull), "{error:?}");
    assert_eq!(held.await.unwrap().unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_callers_deadline_bounds_every_call_and_a_share_keeps_time_for_the_fallback() {
    let model: Dependency<Io> = Dependency::builder("model").build();
    let backup: Dependency<Io> = Dependency::builder("backup").build();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(10);
    let answered = a2a_error::with_deadline(deadline, async {
        Fallback::new("model", || {
            model.run(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, Io>("late")
            })
        })
        .share(0.3)
        .or("backup", || backup.run(|| async { Ok::<_, Io>("backup") }))
        .run()
        .await
    })
    .await
    .unwrap();
    assert_eq!(answered.value, "backup");
    assert!(answered.is_degraded());
    // The primary had 30 % of the 10 s (less the margin kept for the reply), not all of it.
    let elapsed = started.elapsed();
    assert!(elapsed <= Duration::from_secs(3), "{elapsed:?}");
    assert!(elapsed >= Duration::from_millis(2900), "{elapsed:?}");

    // Nothing answers in time: every step's error is kept, the last a deadline.
    let failed = a2a_error::with_deadline(Instant::now() + Duration::from_secs(1), async {
        Fallback::new("model", || {
            model.run(|| async { Err::<u32, _>(Io(std::io::ErrorKind::Other)) })
        })
        .or("backup", || {
            backup.run(|| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, Io>(1)
            })
        })
        .run()
        .await
    })
    .await
    .unwrap_err();
    let steps: Vec<&str> = failed.steps().iter().map(|s| &*s.step).collect();
    assert_eq!(steps, ["model", "backup"]);
    assert!(
        matches!(failed.last(), Failure::Timeout(Timeout::Total)),
        "{:?}",
        failed.last()
    );
    assert_eq!(
        DependencyFailed::models(&failed).reason(),
        "DEADLINE_EXCEEDED"
    );
}

#[test]
fn a_failure_passed_on_is_the_agents_own_error_with_the_soonest_delay() {
    let wire = |error: &DependencyFailed| -> Value {
        serde_json::to_value(error.to_error_object()).unwrap()
    };
    let open: HttpError = Failure::CircuitOpen {
        retry_after: Duration::from_secs(4),
    };
    let passed = DependencyFailed::model(&open);
    assert_eq!(passed.reason(), "MODEL_UNAVAILABLE");
    assert_eq!(
        passed.retry_hint(),
        RetryHint::After(Duration::from_secs(4))
    );
    assert!(
        wire(&passed).to_string().contains("\"retryDelay\":\"4s\""),
        "{}",
        wire(&passed)
    );

    let tool: Failure<StoreError> = Failure::Failed(StoreError::NotFound);
    let passed = DependencyFailed::dependency(&tool);
    assert_eq!(passed.reason(), "DEPENDENCY_REJECTED");
    assert!(!passed.retry_hint().is_retryable());
    // The dependency's own text stays in the logs.
    let passed = passed.with_source(std::io::Error::other("db at 10.0.0.7 said no"));
    assert!(!wire(&passed).to_string().contains("10.0.0.7"));
    assert!(passed.to_string().contains("10.0.0.7"));
}

#[tokio::test]
async fn an_http_dependency_keeps_one_idempotency_key_and_repeats_only_what_may_be() {
    let service = FaultService::start(HttpAnswer::json(200, json!({"ok": true}))).await;
    let plain = HttpDependency::builder("orders", service.url())
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(5)))
        .deadline_header(axum::http::HeaderName::from_static("a2a-deadline-ms"))
        .build()
        .unwrap();
    // A POST that may have run (502) is not repeated without a key…
    service.then([HttpAnswer::status(502)]);
    let error = plain
        .send(HttpCall::post("/orders").json(&json!({"n": 1})).unwrap())
        .await
        .unwrap_err();
    let Failure::Failed(HttpFailure::Status(status)) = &error else {
        panic!("{error:?}")
    };
    assert_eq!(status.status, 502);
    assert!(!status.excerpt.is_empty());
    assert_eq!(service.received().len(), 1);
    // …and is with one, the same key on every attempt.
    service.then([HttpAnswer::status(502), HttpAnswer::status(503)]);
    let reply = plain
        .send(
            HttpCall::post("/orders")
                .json(&json!({"n": 2}))
                .unwrap()
                .with_idempotency_key()
                .with_budget(Duration::from_secs(20)),
        )
        .await
        .unwrap();
    assert_eq!(reply.json::<Value>().unwrap(), json!({"ok": true}));
    let received = &service.received()[1..];
    assert_eq!(received.len(), 3);
    let keys: Vec<_> = received
        .iter()
        .map(|r| r.headers["idempotency-key"].clone())
        .collect();
    assert!(keys.iter().all(|key| *key == keys[0]), "{keys:?}");
    // What is left of the budget travels on, and goes down.
    let left: Vec<u64> = received
        .iter()
        .map(|r| {
            r.headers["a2a-deadline-ms"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(left[0] <= 20_000 && left[2] <= left[0], "{left:?}");
    // A GET may be repeated.
    service.then([HttpAnswer::status(500)]);
    plain.get_json::<Value>("/orders/1").await.unwrap();
}

#[tokio::test]
async fn a_reply_over_the_limit_is_read_no_further() {
    let service =
        FaultService::start(HttpAnswer::json(200, json!({"big": "x".repeat(4096)}))).await;
    let small = HttpDependency::builder("small", service.url())
        .max_reply_bytes(1024)
        .build()
        .unwrap();
    let error = small.get_json::<Value>("/").await.unwrap_err();
    assert!(
        matches!(
            error,
            Failure::Failed(HttpFailure::TooLarge { limit: 1024 })
        ),
        "{error:?}"
    );
    assert_eq!(service.received().len(), 1, "not retried");
}
