//! Shedding under ten times the load an agent can take: the p99 time of the requests it
//! admits, and how fast it refuses the rest, with no limit, with fixed limits, and with the
//! adaptive limit (`JsonRpc::adaptive_concurrency`), measured in one run.
//!
//! The agent (the JSON-RPC endpoint on loopback) serves `Work` with two workers of 10 ms each
//! (a model server or a pool it shares: 200 requests a second at most), queueing the rest
//! inside the handler as real work does. Each configuration gets 2 s at half that rate (the
//! agent healthy), then 3 s at ten times it (2,000 requests a second, open loop: a request
//! is sent every 0.5 ms whether or not the last has been answered), each request with a 5 s
//! timeout. The table gives, for the overload only: requests answered, their p50 and p99 time
//! (and the p99 of those sent in its last second, once a limit has settled), requests refused
//! (AGENT_UNAVAILABLE) and their p99 time to refusal, and those that timed out.
//!
//! `cargo bench -p a2a-error-benches --bench shedding` (about 1.5 minutes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_error::server::{AdaptiveLimit, JsonRpc, RequestContext, ServeLimits};

/// What the agent can do at most: two workers of 10 ms.
const WORKERS: usize = 2;
const WORK: Duration = Duration::from_millis(10);
const CAPACITY: f64 = WORKERS as f64 / 0.010;

#[derive(Clone, Copy, Debug)]
enum Limit {
    None,
    Fixed(usize),
    Adaptive,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Answered,
    Refused,
    Failed,
}

async fn agent(limit: Limit) -> String {
    let workers = Arc::new(tokio::sync::Semaphore::new(WORKERS));
    let endpoint = JsonRpc::new().method("Work", move |_: serde_json::Value, _: RequestContext| {
        let workers = Arc::clone(&workers);
        async move {
            let _worker = workers.acquire().await;
            tokio::time::sleep(WORK).await;
            Ok::<_, a2a_error::StandardError>(serde_json::json!({"done": true}))
        }
    });
    let endpoint = match limit {
        Limit::None => endpoint,
        Limit::Fixed(n) => endpoint.max_concurrent(n),
        Limit::Adaptive => endpoint.adaptive_concurrency(AdaptiveLimit::new()),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limits = ServeLimits::default().max_connections(20_000);
    tokio::spawn(async move {
        a2a_error::server::serve(listener, endpoint.into_router(), limits).await
    });
    format!("http://{addr}/")
}

/// Sends `rate` requests a second for `period`, open loop; each result with its time, and
/// when it was sent (from the start).
async fn load(
    client: &reqwest::Client,
    url: &str,
    rate: f64,
    period: Duration,
) -> Vec<(Outcome, Duration, Duration)> {
    let start = Instant::now();
    let every = Duration::from_secs_f64(1.0 / rate);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let end = Instant::now() + period;
    let mut sent = Vec::new();
    while Instant::now() < end {
        ticks.tick().await;
        let (client, url) = (client.clone(), url.to_owned());
        sent.push(tokio::spawn(async move {
            let started = Instant::now();
            let at = started - start;
            let reply = client
                .post(&url)
                .header("content-type", "application/json")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"Work","params":{}}"#)
                .timeout(Duration::from_secs(5))
                .send()
                .await;
            let body = match reply {
                Ok(reply) => reply.bytes().await.ok(),
                Err(_) => None,
            };
            let outcome = match body {
                Some(body) if body.windows(6).any(|w| w == b"result") => Outcome::Answered,
                Some(body) if body.windows(6).any(|w| w == b"-32053") => Outcome::Refused,
                _ => Outcome::Failed,
            };
            (outcome, started.elapsed(), at)
        }));
    }
    let mut results = Vec::with_capacity(sent.len());
    for request in sent {
        results.push(request.await.unwrap());
    }
    results
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort();
    let at = ((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1;
    times[at]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .build()
        .unwrap();
    let limits = [
        Limit::None,
        Limit::Fixed(2),
        Limit::Fixed(4),
        Limit::Fixed(8),
        Limit::Fixed(16),
        Limit::Fixed(32),
        Limit::Adaptive,
    ];
    println!(
        "Ten times the load the agent can take ({:.0} requests a second, capacity {CAPACITY:.0}), for 3 s after 2 s at half:\n",
        CAPACITY * 10.0
    );
    println!(
        "| limit | answered | p50 ms | p99 ms | p99 ms, last second | refused | p99 to refusal ms | timed out |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for limit in limits {
        let url = agent(limit).await;
        load(&client, &url, CAPACITY / 2.0, Duration::from_secs(2)).await;
        let results = load(&client, &url, CAPACITY * 10.0, Duration::from_secs(3)).await;
        let mut answered: Vec<_> = results
            .iter()
            .filter(|(outcome, _, _)| *outcome == Outcome::Answered)
            .map(|(_, time, _)| *time)
            .collect();
        // The last second: the limit settled.
        let mut settled: Vec<_> = results
            .iter()
            .filter(|(outcome, _, at)| {
                *outcome == Outcome::Answered && *at >= Duration::from_secs(2)
            })
            .map(|(_, time, _)| *time)
            .collect();
        let mut refused: Vec<_> = results
            .iter()
            .filter(|(outcome, _, _)| *outcome == Outcome::Refused)
            .map(|(_, time, _)| *time)
            .collect();
        let failed = results.len() - answered.len() - refused.len();
        let name = match limit {
            Limit::None => "none".to_owned(),
            Limit::Fixed(n) => format!("fixed {n}"),
            Limit::Adaptive => "adaptive".to_owned(),
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {failed} |",
            answered.len(),
            ms(percentile(&mut answered, 0.5)),
            ms(percentile(&mut answered, 0.99)),
            ms(percentile(&mut settled, 0.99)),
            refused.len(),
            ms(percentile(&mut refused, 0.99)),
        );
    }
}
