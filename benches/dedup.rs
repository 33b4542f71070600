//! Keyed SendMessage through `server::Dedup`: each call a new messageId (the common case: a
//! claim, the work in a task of its own, the outcome recorded), with 0, 10k and 1M outcomes
//! already remembered in memory, and through Redis on loopback when `redis-server` is on the
//! PATH. The baseline, in the same run, is the same work called without dedup.
//!
//! `cargo bench -p a2a-error-benches --bench dedup`

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2a_error::StandardError;
use a2a_error::server::{Dedup, DedupStore, MemoryStore, RedisStore};
use a2a_error_testkit::RedisServer;
use axum::http::HeaderMap;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

type D = Dedup<Value, StandardError>;

async fn work(n: u64) -> Result<Value, StandardError> {
    Ok(json!({"task": {"id": n, "status": "completed"}}))
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn message_id() -> String {
    format!("m-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn filled(store: impl DedupStore, entries: u64, runtime: &tokio::runtime::Runtime) -> D {
    let dedup = D::with_store(store);
    let headers = HeaderMap::new();
    runtime.block_on(async {
        for n in 0..entries {
            let id = message_id();
            dedup
                .run("SendMessage", &headers, &id, &id, move |_| work(n))
                .await
                .unwrap();
        }
    });
    dedup
}

fn timed(runtime: &tokio::runtime::Runtime, dedup: Option<&D>, iters: u64) -> Duration {
    let headers = HeaderMap::new();
    runtime.block_on(async {
        let start = Instant::now();
        for n in 0..iters {
            let reply = match dedup {
                None => work(n).await.unwrap(),
                Some(dedup) => {
                    let id = message_id();
                    dedup
                        .run("SendMessage", &headers, &id, &id, move |_| work(n))
                        .await
                        .unwrap()
                }
            };
            black_box(reply);
        }
        start.elapsed()
    })
}

fn keyed_send_message(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("dedup_send_message");
    group.bench_function("unkeyed", |b| {
        b.iter_custom(|iters| timed(&runtime, None, iters))
    });
    for (name, entries) in [
        ("memory_0", 0),
        ("memory_10k", 10_000),
        ("memory_1m", 1_000_000),
    ] {
        // Room for what is filled and what the bench adds: nothing is evicted under it.
        let store = MemoryStore::new(4_000_000, 4 << 30);
        let dedup = filled(store, entries, &runtime);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| timed(&runtime, Some(&dedup), iters))
        });
    }
    match RedisServer::spawn() {
        Ok(redis) => {
            let store = runtime.block_on(async { RedisStore::connect(&redis.url).unwrap() });
            let dedup = D::with_store(store);
            group.bench_function("redis_loopback", |b| {
                b.iter_custom(|iters| timed(&runtime, Some(&dedup), iters))
            });
        }
        Err(error) => eprintln!("no redis-server ({error}): the Redis row is not measured"),
    }
    group.finish();
}

criterion_group!(benches, keyed_send_message);
criterion_main!(benches);
