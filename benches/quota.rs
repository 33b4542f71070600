//! A model call's quota and budget work (issue 70), in process and on Redis:
//!
//! - in process, CPU a call (criterion): the stated quota's (the call's estimate, its
//!   admission, its reply's `x-ratelimit-*` headers read, its ticket given back), a caller's
//!   budget's (admitted by its caller's count, charged with the reply's usage; callers
//!   rotating among 1,000), and both, against a baseline measured in the same run: reading
//!   the reply the call gets anyway (`serde_json` of a chat completion, as the agent reads
//!   it). Target: under 1 µs for both.
//! - on Redis (`redis-server` started here, through a proxy that delivers each reply `DELAY`
//!   after it came): the round trips a call waits for (its time over a PING's through the
//!   same proxy, measured in the same run) and the round trips it makes in all (the
//!   statement's and the usage's writes go on tasks of their own, off the call's path),
//!   counted by the proxy. Target: one on the path, pipelined. And why the crate's Redis
//!   clients set `TCP_NODELAY`: a command sent while another is in flight, with redis-rs's
//!   default and with it.
//!
//! `cargo bench -p a2a-error-benches --bench quota`.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use a2a_error::dependency::{QuotaProbe, SharedQuota};
use a2a_error_testkit::RedisServer;
use criterion::Criterion;

/// What the proxy holds each reply from Redis for: a round trip's cost, large enough that
/// the call's own work and the timer's millisecond are small beside it.
const DELAY: Duration = Duration::from_millis(10);

fn in_process(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("quota_in_process");
    let reply = br#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Rust is a systems programming language."},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":8,"total_tokens":17}}"#;
    group.bench_function("baseline: the reply read", |b| {
        b.iter(|| black_box(serde_json::from_slice::<serde_json::Value>(black_box(reply)).unwrap()))
    });
    for (name, paced, budgeted) in [
        ("the stated quota", true, false),
        ("a caller's budget", false, true),
        ("both", true, true),
    ] {
        let probe = QuotaProbe::new(paced, budgeted, None);
        let mut caller = 0u128;
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        caller = (caller + 1) % 1_000;
                        probe.call(black_box(caller)).await;
                    }
                    started.elapsed()
                })
            })
        });
    }
    group.finish();
}

/// A TCP proxy to `upstream` that delivers each reply [`DELAY`] after it arrived and counts
/// the requests' round trips (each read from the client: a pipeline is written at once).
async fn proxy(upstream: u16, round_trips: Arc<AtomicU64>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(("127.0.0.1", upstream))
                .await
                .unwrap();
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            let counted = Arc::clone(&round_trips);
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 << 10];
                while let Ok(read) = client_read.read(&mut buffer).await {
                    if read == 0 || server_write.write_all(&buffer[..read]).await.is_err() {
                        break;
                    }
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            });
            // Each reply is delivered DELAY after it arrived (a latency, not a queue: the
            // replies of calls in flight overlap, as on a network).
            let (send, mut delayed) =
                tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 << 10];
                while let Ok(read) = server_read.read(&mut buffer).await {
                    if read == 0 {
                        break;
                    }
                    let due = tokio::time::Instant::now() + DELAY;
                    if send.send((due, buffer[..read].to_vec())).is_err() {
                        break;
                    }
                }
            });
            tokio::spawn(async move {
                while let Some((due, bytes)) = delayed.recv().await {
                    tokio::time::sleep_until(due).await;
                    if client_write.write_all(&bytes).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

fn on_redis(runtime: &tokio::runtime::Runtime) {
    let redis = match RedisServer::spawn() {
        Ok(redis) => redis,
        Err(error) => {
            eprintln!("no redis-server ({error}): the Redis rows are not measured");
            return;
        }
    };
    let port: u16 = redis
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    const CALLS: u64 = 100;
    println!(
        "on Redis, each reply held {} ms by a proxy: {CALLS} calls each",
        DELAY.as_millis()
    );
    runtime.block_on(async {
        // The baseline: one command's round trip through the same proxy.
        let counted = Arc::new(AtomicU64::new(0));
        let proxied = proxy(port, Arc::clone(&counted)).await;
        let client = redis::Client::open(format!("redis://127.0.0.1:{proxied}")).unwrap();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let _: String = redis::cmd("PING")
            .query_async(&mut connection)
            .await
            .unwrap();
        let started = Instant::now();
        for _ in 0..CALLS {
            let _: String = redis::cmd("PING")
                .query_async(&mut connection)
                .await
                .unwrap();
        }
        let round_trip = started.elapsed().as_secs_f64() / CALLS as f64;
        // A command sent while another is in flight, on a client as redis-rs opens one
        // (Nagle's algorithm on) and on one with TCP_NODELAY, as the crate opens its own.
        for (name, nodelay) in [("redis-rs's default", false), ("TCP_NODELAY", true)] {
            use redis::IntoConnectionInfo;
            let info = format!("redis://127.0.0.1:{proxied}")
                .into_connection_info()
                .unwrap();
            let tcp = info.tcp_settings().clone().set_nodelay(nodelay);
            let client = redis::Client::open(info.set_tcp_settings(tcp)).unwrap();
            let mut connection = client.get_multiplexed_async_connection().await.unwrap();
            let _: String = redis::cmd("PING")
                .query_async(&mut connection)
                .await
                .unwrap();
            let mut behind = Duration::ZERO;
            for _ in 0..20 {
                let mut other = connection.clone();
                let ahead = tokio::spawn(async move {
                    let _: String = redis::cmd("PING").query_async(&mut other).await.unwrap();
                });
                tokio::task::yield_now().await;
                let one = Instant::now();
                let _: String = redis::cmd("PING")
                    .query_async(&mut connection)
                    .await
                    .unwrap();
                behind += one.elapsed();
                ahead.await.unwrap();
            }
            println!(
                "  a command behind another, {name}: {:.2} round trips",
                behind.as_secs_f64() / 20.0 / round_trip
            );
        }
        for (name, paced, budgeted) in [
            ("the stated quota", true, false),
            ("a caller's budget", false, true),
            ("both", true, true),
        ] {
            let round_trips = Arc::new(AtomicU64::new(0));
            let proxied = proxy(port, Arc::clone(&round_trips)).await;
            let store = SharedQuota::connect(&format!("redis://127.0.0.1:{proxied}")).unwrap();
            let probe = QuotaProbe::new(paced, budgeted, Some(store));
            // The connection made, and a statement kept.
            for caller in 0..10 {
                probe.call(caller).await;
            }
            tokio::time::sleep(DELAY * 5).await;
            let before = round_trips.load(Ordering::Relaxed);
            let started = Instant::now();
            for caller in 0..CALLS {
                probe.call(u128::from(caller % 100)).await;
            }
            let took = started.elapsed().as_secs_f64() / CALLS as f64;
            // The writes off the path land.
            tokio::time::sleep(DELAY * 10).await;
            let made = round_trips.load(Ordering::Relaxed) - before;
            println!(
                "  {name}: {:.2} round trips waited for a call (its time over the baseline's), \
                 {:.2} made in all",
                took / round_trip,
                made as f64 / CALLS as f64
            );
        }
    });
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut criterion = Criterion::default().configure_from_args();
    in_process(&mut criterion, &runtime);
    criterion.final_summary();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    on_redis(&runtime);
}
