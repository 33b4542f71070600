//! An agent on the official Rust SDK served through a2a-error's bridge:
//! `cargo run --example sdk_agent -- --addr 127.0.0.1:8080 [--grpc 127.0.0.1:50051] [--redis URL]
//! [--task-lease-ms N] [--rate-limit R] [--adaptive] [--no-dedup | --sdk-routers]`.
//!
//! The same paths as `examples/agent` (JSON-RPC `POST /`; REST `POST /message:send`,
//! `POST /message:stream`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`; the card at
//! `/.well-known/agent-card.json`, advertising streaming; its metrics at `GET /metrics`) and
//! the same text protocol, plus
//! streaming: `hello` echoes, `fail:internal`, `fail:panic`, `fail:rate_limited`,
//! `fail:unsupported`, `flaky:N`, `sleep:MS` (WORKING at once, COMPLETED after MS), `work:fail`,
//! `stream:N`, `stream:fail_after:N` (N at most 10,000: a larger one is INVALID_PARAMS). A
//! SendMessage with `configuration.returnImmediately: true` is answered with its task at once.
//! With `--grpc HOST:PORT`, the same agent (the same tasks, the same dedup) also serves the
//! A2A 1.0 gRPC service `lf.a2a.v1.A2AService` there, advertised in its card. With
//! `--redis redis://HOST:PORT`, agents pointed at the same Redis share SendMessage replies and
//! their tasks (`RedisTaskStore`): a task sent to one is read, listed, cancelled and followed
//! (SubscribeToTask) on any other, by its owner only; a running task is leased to the replica
//! running it for `--task-lease-ms N` (default 10000), renewed while it runs, and ends FAILED
//! (reason TASK_ABANDONED) within about that long and a second when that replica dies.
//! With `--rate-limit R`, each caller (by its `Authorization`, as the dedup scopes it) gets R
//! requests a second with a burst of R, over every binding and, with `--redis`, across the
//! replicas sharing it: past it, RATE_LIMITED with the exact wait (RetryInfo, `Retry-After`).
//! With `--adaptive`, requests over every binding run under one limit found from their
//! measured time (`Bridge::adaptive_concurrency`): past it, AGENT_UNAVAILABLE with a
//! RetryInfo and `Retry-After`.
//! For comparison (`benches/sdk/compare.sh`): `--no-dedup` serves the bridge without its
//! dedup (every SendMessage runs), and `--sdk-routers` the same executor and store through
//! the official SDK's own routers, without a2a-error.
//! Push notifications (`CreateTaskPushNotificationConfig`, or a SendMessage's
//! `configuration.taskPushNotificationConfig`) are delivered to each receiver in order, retried
//! with backoff (honouring `Retry-After`), with Standard Webhooks' `webhook-id` and
//! `webhook-timestamp` headers; `--push-signing-secret S` signs them (`webhook-signature`;
//! `S` as Standard Webhooks writes a secret, `whsec_<base64>`, whose decoded bytes are the key,
//! or any other string, whose bytes are),
//! `--push-max-age-ms N` (default 3600000) makes a notification not accepted by then a dead
//! letter, and `--push-allow-private` allows receivers on loopback and private addresses
//! (refused otherwise). With `--redis`, pending notifications live in Redis, each task's
//! claimed by one replica under the task lease.
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, its spans are exported over OTLP/HTTP.

mod app;
#[path = "../shared/metrics.rs"]
mod metrics;
#[path = "../shared/telemetry.rs"]
mod telemetry;

use std::time::Duration;

use a2a_error::dependency::PushSender;
use a2a_error::sdk::{GrpcLimits, RedisTaskStore};
use a2a_error::server::{
    AdaptiveLimit, MemoryStore, RateLimit, RateLimiter, RedisStore, ServeLimits, serve,
};

#[tokio::main]
async fn main() {
    // Large request and reply buffers go back to the system when freed, so that the stores'
    // bounds hold in resident memory too.
    a2a_error::server::return_freed_memory();
    let _telemetry = telemetry::init("sdk_agent", std::io::stdout);
    let mut args = std::env::args().skip(1);
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut redis = None;
    let mut grpc = None;
    let mut dedup = true;
    let mut sdk_routers = false;
    let mut adaptive = false;
    let mut rate_limit = None;
    let mut lease_ms: u64 = 10_000;
    let mut push_private = false;
    let mut push_max_age_ms: u64 = 3_600_000;
    let mut push_secret: Option<String> = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--no-dedup" => {
                dedup = false;
                continue;
            }
            "--adaptive" => {
                adaptive = true;
                continue;
            }
            "--sdk-routers" => {
                sdk_routers = true;
                continue;
            }
            "--push-allow-private" => {
                push_private = true;
                continue;
            }
            _ => {}
        }
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = value,
            ("--grpc", Some(value)) => grpc = Some(value),
            ("--redis", Some(url)) => redis = Some(url),
            ("--task-lease-ms", Some(value)) => match value.parse::<u64>() {
                Ok(ms) if (100..=3_600_000).contains(&ms) => lease_ms = ms,
                _ => {
                    eprintln!(
                        "--task-lease-ms takes milliseconds from 100 to 3600000, not {value:?}"
                    );
                    std::process::exit(2);
                }
            },
            ("--push-max-age-ms", Some(value)) => match value.parse::<u64>() {
                Ok(ms) if (1_000..=604_800_000).contains(&ms) => push_max_age_ms = ms,
                _ => {
                    eprintln!(
                        "--push-max-age-ms takes milliseconds from 1000 to 604800000, not {value:?}"
                    );
                    std::process::exit(2);
                }
            },
            ("--push-signing-secret", Some(value)) => push_secret = Some(value),
            ("--rate-limit", Some(value)) => match value.parse::<u32>() {
                Ok(rate) if rate >= 1 => rate_limit = Some(RateLimit::per_second(rate)),
                _ => {
                    eprintln!("--rate-limit takes requests a second, from 1, not {value:?}");
                    std::process::exit(2);
                }
            },
            _ => {
                eprintln!(
                    "usage: sdk_agent [--addr HOST:PORT] [--grpc HOST:PORT] \
                     [--redis redis://HOST:PORT] [--task-lease-ms N] [--rate-limit R] [--adaptive] \
                     [--push-allow-private] [--push-max-age-ms N] [--push-signing-secret S] \
                     [--no-dedup | --sdk-routers]"
                );
                std::process::exit(2);
            }
        }
    }
    if sdk_routers {
        let listener = bind(&addr).await;
        tracing::info!("SDK agent on the SDK's own routers at http://{addr}");
        if let Err(error) = axum::serve(listener, app::sdk_routers()).await {
            eprintln!("server error: {error}");
            std::process::exit(1);
        }
        return;
    }
    let public_url = format!("http://{addr}");
    // A gRPC target is `host:port`, as the SDKs' gRPC clients take it.
    let grpc_url = grpc.clone();
    let redis = redis.map(|url| match RedisStore::connect(&url) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("cannot use Redis at {url}: {error}");
            std::process::exit(2);
        }
    });
    let mut sender = PushSender::builder().allow_private(push_private);
    if let Some(secret) = &push_secret {
        sender = sender.signing_secret(secret);
    }
    let push = app::Push {
        sender: sender.build().unwrap_or_else(|error| {
            eprintln!("cannot build the push sender: {error}");
            std::process::exit(2);
        }),
        max_age: Duration::from_millis(push_max_age_ms),
    };
    let bridge = match &redis {
        _ if !dedup => app::bridge_without_dedup(&public_url, grpc_url.as_deref(), &push),
        None => app::bridge(
            &public_url,
            grpc_url.as_deref(),
            MemoryStore::default(),
            None,
            &push,
        ),
        Some(store) => {
            let tasks = RedisTaskStore::new(store).lease(Duration::from_millis(lease_ms));
            app::bridge(
                &public_url,
                grpc_url.as_deref(),
                store.clone(),
                Some(tasks),
                &push,
            )
        }
    };
    // Each caller (by its Authorization) at R requests a second, burst R: shared by the
    // replicas on one Redis, else this process's own.
    let bridge = match (rate_limit, &redis) {
        (None, _) => bridge,
        (Some(limit), Some(store)) => bridge.rate_limit(RateLimiter::redis(store, limit)),
        (Some(limit), None) => bridge.rate_limit(RateLimiter::memory(limit)),
    };
    // One limit on requests at once, over every binding, found from their measured time.
    let bridge = if adaptive {
        bridge.adaptive_concurrency(AdaptiveLimit::new())
    } else {
        bridge
    };
    let listener = bind(&addr).await;
    // Both bindings' connection caps together stay under the usual limit of 1,024 file
    // descriptors, so that peers of one binding cannot starve the other.
    let mut limits = ServeLimits::default();
    if let Some(grpc) = grpc {
        limits = limits.max_connections(512);
        let listener = bind(&grpc).await;
        let bridge = bridge.clone();
        tokio::spawn(async move {
            tracing::info!("SDK agent serving gRPC on http://{grpc}");
            if let Err(error) = bridge.serve_grpc(listener, GrpcLimits::default()).await {
                eprintln!("gRPC server error: {error}");
                std::process::exit(1);
            }
        });
    }
    tracing::info!("SDK agent listening on http://{addr}");
    // JSON-RPC at `/` answered without routing; the REST routes and `/metrics` routed.
    let app = bridge.app().merge(metrics::route(metrics::install()));
    if let Err(error) = serve(listener, app, limits).await {
        eprintln!("server error: {error}");
        std::process::exit(1);
    }
}

async fn bind(addr: &str) -> tokio::net::TcpListener {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {addr}: {error}");
            std::process::exit(1);
        }
    }
}
