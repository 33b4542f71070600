//! The circuit breaker's cost, and fan-out against sequential calls.
//!
//! - `breaker_admission`: a closed circuit's admission (`try_acquire` and dropping the
//!   permit) and a whole sample (admission and recording a success, which reads the clock),
//!   against the bare work they wrap.
//! - `breaker_threads`: one and two threads hammering two agents' breakers (one each):
//!   breakers of different agents share nothing, so two threads should do about twice the
//!   work of one. Reported as the time per sample; benches/README.md turns it into throughput.
//! - `fan_out_loopback`: SendMessage to three agents on loopback (a2a-error's JSON-RPC
//!   endpoint, echoing), concurrently with `FanOut` against one after the other, through the
//!   typed client's default stack.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2a_error::client::FanOut;
use a2a_error::resilience::Outcome;
use a2a_error::resilience::breaker::{BreakerConfig, CircuitBreaker};
use a2a_error::{Client, RemoteError};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn admission(c: &mut Criterion) {
    let breaker = CircuitBreaker::new("bench", BreakerConfig::default());
    let mut group = c.benchmark_group("breaker_admission");
    group.bench_function("bare", |b| b.iter(|| black_box(black_box(1u64) + 1)));
    group.bench_function("admission", |b| {
        b.iter(|| {
            let permit = breaker.try_acquire().unwrap();
            black_box(&permit);
        })
    });
    group.bench_function("admission_and_record", |b| {
        b.iter(|| breaker.try_acquire().unwrap().record(Outcome::Success))
    });
    group.finish();
}

/// `iters` samples on each of `threads` threads, thread i on agent i; the wall time of all.
fn hammer(breakers: &[CircuitBreaker], threads: usize, iters: u64) -> Duration {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for breaker in breakers.iter().take(threads) {
            scope.spawn(move || {
                for _ in 0..iters {
                    breaker.try_acquire().unwrap().record(Outcome::Success);
                }
            });
        }
    });
    start.elapsed()
}

fn threads(c: &mut Criterion) {
    let breakers = [
        CircuitBreaker::new("agent-a", BreakerConfig::default()),
        CircuitBreaker::new("agent-b", BreakerConfig::default()),
    ];
    let mut group = c.benchmark_group("breaker_threads");
    for threads in [1, 2] {
        // Time per sample taken by all threads together: throughput is its inverse.
        group.bench_function(format!("{threads}_thread_2_agents"), |b| {
            b.iter_custom(|iters| {
                let per_thread = (iters / threads as u64).max(1);
                hammer(&breakers, threads, per_thread)
            })
        });
    }
    group.finish();
}

/// An agent whose SendMessage answers with the message it was sent.
fn echo_agent() -> axum::Router {
    a2a_error::server::JsonRpc::new()
        .method(
            "SendMessage",
            |params: Value, _: a2a_error::server::RequestContext| async move {
                Ok::<_, a2a_error::StandardError>(params)
            },
        )
        .into_router()
}

fn fan_out(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let clients: Vec<(Arc<str>, Client<RemoteError>)> = runtime.block_on(async {
        let mut clients = Vec::new();
        for name in ["a", "b", "c"] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(a2a_error::server::serve(
                listener,
                echo_agent(),
                a2a_error::server::ServeLimits::default(),
            ));
            let client = Client::jsonrpc(format!("http://{addr}/"))
                .name(name)
                .build()
                .unwrap();
            clients.push((Arc::from(name), client));
        }
        clients
    });
    let next = AtomicU64::new(0);
    let message = |name: &str| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        json!({"message": {"messageId": format!("m-{n}-{name}"), "role": "ROLE_USER",
            "parts": [{"text": "hi"}]}})
    };
    let mut group = c.benchmark_group("fan_out_loopback");
    group.bench_function("sequential_3", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for (name, client) in &clients {
                        let reply: Value = client.send_message(&message(name)).await.unwrap();
                        black_box(reply);
                    }
                }
                start.elapsed()
            })
        })
    });
    group.bench_function("fan_out_3", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let calls = clients.iter().map(|(name, client)| {
                        let params = message(name);
                        (name.clone(), async move {
                            client.send_message::<_, Value>(&params).await
                        })
                    });
                    let result = FanOut::new(3).run(calls).await.unwrap();
                    black_box(result.answered.len());
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, admission, threads, fan_out);
criterion_main!(benches);
