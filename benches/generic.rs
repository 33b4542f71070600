//! The generic stack over any service, against tower-resilience 0.13: total timeout → retry →
//! circuit breaker → bulkhead → attempt timeout over a service that answers at once, in the
//! same run, no socket. The request is a `u64` (ours wrapped in an `Op`, which carries the
//! time limit down), the error an enum of the caller's.
//!
//! tower-resilience's equivalent layers: `TimeLimiter` (the total), `Retry` (4 attempts,
//! exponential backoff), `CircuitBreaker` (its defaults), `Bulkhead` (256 calls at once),
//! `TimeLimiter` (the attempt). Ours: `resilience::Stack` with the defaults of every client
//! (90 s total, the default retry policy with its budget, a breaker, a bulkhead of 256, 30 s
//! per attempt).

use std::future::ready;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use a2a_error::RetryHint;
use a2a_error::dependency::{Failure, Op};
use a2a_error::resilience::Classify;
use a2a_error::resilience::breaker::{BreakerConfig, CircuitBreaker};
use a2a_error::resilience::{Bulkhead, RetryPolicy, Stack};
use criterion::{Criterion, criterion_group, criterion_main};
use tower::{Service, ServiceBuilder, ServiceExt};
use tower_resilience::bulkhead::BulkheadLayer;
use tower_resilience::circuitbreaker::CircuitBreakerLayer;
use tower_resilience::retry::RetryLayer;
use tower_resilience::timelimiter::TimeLimiterLayer;

/// The callee's own error.
#[derive(Clone, Debug)]
struct Busy;

impl Classify for Busy {
    fn retry_advice_at(&self, _: SystemTime) -> RetryHint {
        RetryHint::Backoff
    }
}

/// Runs `iters` calls made by `request` on `service` inside one runtime entry.
fn timed<S, R>(
    runtime: &tokio::runtime::Runtime,
    service: &mut S,
    request: impl Fn(u64) -> R,
    iters: u64,
) -> Duration
where
    S: Service<R, Response = u64>,
    S::Error: std::fmt::Debug,
{
    runtime.block_on(async {
        let start = Instant::now();
        for i in 0..iters {
            let ready = service.ready().await.unwrap();
            black_box(ready.call(black_box(request(i))).await.unwrap());
        }
        start.elapsed()
    })
}

fn generic_stack(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("generic_stack");

    let mut bare = tower::service_fn(|n: u64| ready(Ok::<_, Busy>(n)));
    group.bench_function("bare_service", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut bare, |i| i, iters))
    });

    let name: Arc<str> = Arc::from("bench");
    let ours_inner = tower::service_fn(|op: Op<u64>| ready(Ok::<_, Failure<Busy>>(*op.value())));
    let mut ours = Stack {
        total_timeout: Some(Duration::from_secs(90)),
        retry: RetryPolicy::default(),
        hedge: None,
        breaker: Some(CircuitBreaker::new("bench", BreakerConfig::default())),
        bulkhead: Some(Bulkhead::new(256, 1024)),
        attempt_timeout: Some(Duration::from_secs(30)),
    }
    .service(ours_inner);
    group.bench_function("a2a_error", |b| {
        b.iter_custom(|iters| {
            timed(
                &runtime,
                &mut ours,
                |i| Op::new(i, name.clone(), "op"),
                iters,
            )
        })
    });

    let theirs_inner = tower::service_fn(|n: u64| ready(Ok::<_, Busy>(n)));
    let attempt = TimeLimiterLayer::builder()
        .timeout_duration(Duration::from_secs(30))
        .build();
    let bulkhead = BulkheadLayer::builder()
        .max_concurrent_calls(256)
        .build()
        .unwrap();
    let breaker = CircuitBreakerLayer::builder().build().unwrap();
    let inner = ServiceBuilder::new()
        .layer(breaker)
        .layer(bulkhead)
        .layer(attempt)
        .service(theirs_inner);
    let retry = RetryLayer::<u64, u64, _>::builder()
        .max_attempts(4)
        .exponential_backoff(Duration::from_millis(250))
        .build();
    let total = TimeLimiterLayer::builder()
        .timeout_duration(Duration::from_secs(90))
        .build();
    let mut theirs = ServiceBuilder::new()
        .layer(total)
        .layer(retry)
        .service(inner);
    group.bench_function("tower_resilience_0_13", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut theirs, |i| i, iters))
    });
    group.finish();
}

criterion_group!(benches, generic_stack);
criterion_main!(benches);
