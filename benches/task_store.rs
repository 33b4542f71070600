//! SendMessage's success path with the tasks in Redis (`RedisTaskStore`, shared by replicas,
//! leased) against `MemoryTaskStore`, in one run: the SDK's handler guarded as the bridge runs
//! it, called directly (the store's share, undiluted) and through the bridge over loopback
//! JSON-RPC (what a caller sees). Then Redis's memory per task kept. Needs `redis-server` on
//! the PATH (else only the memory rows run).
//!
//! `cargo bench -p a2a-error-benches --bench task_store`

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2a::{A2AError, SendMessageRequest, StreamResponse, TaskState, TaskStatus};
use a2a_error::sdk::{Bridge, Guarded, MemoryTaskStore, RedisTaskStore};
use a2a_error::server::{RedisStore, ServeLimits, serve};
use a2a_error_testkit::RedisServer;
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, RequestHandler};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::stream::{self, BoxStream};
use serde_json::json;

/// Completes each task at once with a short reply.
struct Echo;

impl AgentExecutor for Echo {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let done = StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        Box::pin(stream::iter([Ok(done)]))
    }

    fn cancel(&self, _: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(stream::empty())
    }
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn message() -> serde_json::Value {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    json!({"messageId": format!("m-{id}"), "role": "ROLE_USER", "parts": [{"text": "hello"}]})
}

fn request() -> SendMessageRequest {
    serde_json::from_value::<a2a_error::sdk::ProtoJson<SendMessageRequest>>(
        json!({"message": message()}),
    )
    .unwrap()
    .0
}

fn memory_handler() -> DefaultRequestHandler {
    let tasks = MemoryTaskStore::new(1 << 30);
    DefaultRequestHandler::new(Guarded::new(Echo, Arc::new(tasks.clone())), tasks)
}

fn redis_handler(tasks: &RedisTaskStore) -> DefaultRequestHandler {
    DefaultRequestHandler::new(Guarded::leased(Echo, tasks.clone()), tasks.clone())
}

fn direct(
    runtime: &tokio::runtime::Runtime,
    handler: &DefaultRequestHandler,
    iters: u64,
) -> Duration {
    let params = Default::default();
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(handler.send_message(&params, request()).await.unwrap());
        }
        start.elapsed()
    })
}

/// `iters` SendMessage over JSON-RPC to `url`, 8 in flight.
fn over_http(runtime: &tokio::runtime::Runtime, url: &str, iters: u64) -> Duration {
    let client = reqwest::Client::new();
    runtime.block_on(async {
        let start = Instant::now();
        let per = iters.div_ceil(8);
        let mut workers = Vec::new();
        for _ in 0..8 {
            let (client, url) = (client.clone(), url.to_owned());
            workers.push(tokio::spawn(async move {
                for _ in 0..per {
                    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                        "params": {"message": message()}});
                    let reply: serde_json::Value = client
                        .post(&url)
                        .json(&body)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    assert!(reply["result"]["task"].is_object(), "{reply}");
                }
            }));
        }
        for worker in workers {
            worker.await.unwrap();
        }
        start.elapsed()
    })
}

fn served(runtime: &tokio::runtime::Runtime, bridge: Bridge<DefaultRequestHandler>) -> String {
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, bridge.router(), ServeLimits::default()));
        url
    })
}

fn send_message(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let redis = RedisServer::spawn();
    let tasks = match &redis {
        Ok(redis) => Some(
            runtime
                .block_on(async { RedisTaskStore::new(&RedisStore::connect(&redis.url).unwrap()) }),
        ),
        Err(error) => {
            eprintln!("no redis-server ({error}): the Redis rows are not measured");
            None
        }
    };

    let mut group = c.benchmark_group("task_store_send_message");
    let memory = memory_handler();
    group.bench_function("handler_memory", |b| {
        b.iter_custom(|iters| direct(&runtime, &memory, iters))
    });
    if let Some(tasks) = &tasks {
        let handler = redis_handler(tasks);
        group.bench_function("handler_redis", |b| {
            b.iter_custom(|iters| direct(&runtime, &handler, iters))
        });
    }
    let memory_url = served(&runtime, Bridge::new(memory_handler()));
    group.bench_function("bridge_memory", |b| {
        b.iter_custom(|iters| over_http(&runtime, &memory_url, iters))
    });
    if let Some(tasks) = &tasks {
        let bridge = Bridge::new(redis_handler(tasks)).shared_tasks(tasks.clone());
        let url = served(&runtime, bridge);
        group.bench_function("bridge_redis", |b| {
            b.iter_custom(|iters| over_http(&runtime, &url, iters))
        });
    }
    group.finish();

    // Redis's memory per task kept: 10,000 tasks of the bench's size, on a store of their own.
    if let (Ok(redis), Some(_)) = (&redis, &tasks) {
        let store = runtime.block_on(async {
            RedisTaskStore::new(&RedisStore::connect(&redis.url).unwrap()).prefix("measure:")
        });
        let handler = redis_handler(&store);
        let before = redis.used_memory().unwrap();
        direct(&runtime, &handler, 10_000);
        let grown = redis.used_memory().unwrap().saturating_sub(before);
        let weighed = runtime.block_on(store.weighed_bytes()).unwrap();
        println!(
            "Redis memory per task: {} bytes (weighed at {} bytes)",
            grown / 10_000,
            weighed / 10_000
        );
    }
}

criterion_group!(benches, send_message);
criterion_main!(benches);
