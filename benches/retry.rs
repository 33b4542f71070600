//! The resilience layers' success-path overhead: a call through the typed client's default
//! stack (total timeout → retry → attempt timeout, and with the circuit breaker) against the
//! same call on the bare transport, in-process, no socket (the target: under 50 ns a call
//! for the retry stack).
//!
//! The transport answers at once, so what is left is the layers' own work: the budget on the
//! call, the retry budget deposit, the clones kept for a retry, three futures polled in place.

use std::future::ready;
use std::hint::black_box;
use std::time::{Duration, Instant};

use a2a_error::client::{Call, ClientError, Reply};
use a2a_error::resilience::breaker::{BreakerConfig, CircuitBreaker, CircuitBreakerLayer};
use a2a_error::resilience::{
    AttemptTimeoutLayer, Retry, RetryLayer, RetryPolicy, TotalTimeoutLayer, TpsBudget,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tower::{Service, ServiceBuilder, ServiceExt};

/// A budget that never refuses, to show what tower's `TpsBudget` costs per call.
struct Unlimited;

impl a2a_error::resilience::Budget for Unlimited {
    fn deposit(&self) {}
    fn withdraw(&self) -> bool {
        true
    }
}

fn transport() -> impl Service<
    Call,
    Response = Reply,
    Error = ClientError,
    Future = impl Future<Output = Result<Reply, ClientError>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|call: Call| {
        ready(Ok::<_, ClientError>(Reply::Result(
            serde_json::value::to_raw_value(&call.id()).unwrap(),
        )))
    })
}

/// Runs `iters` calls on `service` inside one runtime entry and returns the time they took.
fn timed<S>(runtime: &tokio::runtime::Runtime, service: &mut S, call: &Call, iters: u64) -> Duration
where
    S: Service<Call, Response = Reply, Error = ClientError>,
{
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            let ready = service.ready().await.unwrap();
            let reply = ready.call(black_box(call.clone())).await.unwrap();
            black_box(reply);
        }
        start.elapsed()
    })
}

fn success_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let call = Call::new("SendMessage", &json!({"message": {"messageId": "m-1"}})).unwrap();
    let mut group = c.benchmark_group("retry_success_path");
    let mut bare = transport();
    group.bench_function("bare_transport", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut bare, &call, iters))
    });
    // The typed client's default stack, without the boxing of `Client`.
    let mut stack = ServiceBuilder::new()
        .layer(TotalTimeoutLayer::new(Duration::from_secs(90)))
        .layer(RetryLayer::new(RetryPolicy::default()))
        .layer(AttemptTimeoutLayer::new(Duration::from_secs(30)))
        .service(transport());
    group.bench_function("default_stack", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut stack, &call, iters))
    });
    // The builder's whole stack: the circuit breaker too.
    let mut with_breaker = ServiceBuilder::new()
        .layer(TotalTimeoutLayer::new(Duration::from_secs(90)))
        .layer(RetryLayer::new(RetryPolicy::default()))
        .layer(CircuitBreakerLayer::new(CircuitBreaker::new(
            "bench",
            BreakerConfig::default(),
        )))
        .layer(AttemptTimeoutLayer::new(Duration::from_secs(30)))
        .service(transport());
    group.bench_function("default_stack_with_breaker", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut with_breaker, &call, iters))
    });
    let mut retry_only = Retry::new(transport(), RetryPolicy::default());
    group.bench_function("retry_only", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut retry_only, &call, iters))
    });
    let mut no_budget = Retry::new(
        transport(),
        RetryPolicy::default().budget(std::sync::Arc::new(Unlimited)),
    );
    group.bench_function("retry_without_budget", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut no_budget, &call, iters))
    });
    // tower's TpsBudget, the default before RetryBudget: a mutex and a clock read a deposit.
    let mut tps = Retry::new(
        transport(),
        RetryPolicy::default().budget(std::sync::Arc::new(TpsBudget::default())),
    );
    group.bench_function("retry_with_tps_budget", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut tps, &call, iters))
    });
    let mut timeouts_only = ServiceBuilder::new()
        .layer(TotalTimeoutLayer::new(Duration::from_secs(90)))
        .layer(AttemptTimeoutLayer::new(Duration::from_secs(30)))
        .service(transport());
    group.bench_function("timeouts_only", |b| {
        b.iter_custom(|iters| timed(&runtime, &mut timeouts_only, &call, iters))
    });
    group.finish();
}

criterion_group!(benches, success_path);
criterion_main!(benches);
