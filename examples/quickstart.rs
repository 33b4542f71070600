//! The main job: an agent's error enum, what it puts on the wire in both profiles, and the
//! client side decoding the same bytes back into the typed enum.
//!
//! Then the same enum over real HTTP on loopback: an axum JSON-RPC endpoint that fails on
//! purpose, and the typed client retrying what is worth retrying and saying why.
//!
//! `cargo run --example quickstart`

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use a2a_error::client::ClientError;
use a2a_error::resilience::{RetryPolicy, RetrySafety};
use a2a_error::server::{JsonRpc, RequestContext};
use a2a_error::{
    A2aError, Catalog, Client, ErrorObject, FromErrorObject, HasKind, StandardError, WireProfile,
};
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "billing.example.com")]
pub enum AgentError {
    #[error("task {task_id} missing in shard {shard}")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
        /// Internal: never sent, and 0 when a client rebuilds the error.
        #[a2a(default)]
        shard: u32,
    },

    /// The provider's text may hold anything: it stays in the logs.
    #[error("LLM provider said {0}")]
    #[a2a(code = -32603, reason = "LLM_UNAVAILABLE", retryable)]
    Llm(String),

    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("bad part {index}")]
    #[a2a(code = -32602, message = "Invalid part {index}")]
    BadPart {
        #[a2a(data)]
        index: u32,
    },

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// The total time budget of every call the client below makes.
const BUDGET: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() {
    let errors = [
        AgentError::TaskNotFound {
            task_id: "t-42".into(),
            shard: 7,
        },
        AgentError::Llm("upstream said: db password=hunter2-secret".into()),
        AgentError::RateLimited,
        AgentError::BadPart { index: 3 },
        StandardError::AgentUnavailable {
            retry_after: Some(Duration::from_millis(2500)),
        }
        .into(),
    ];

    println!("== server side: what each error puts on the wire ==");
    for err in &errors {
        println!("\n{}  (Display, logs only: {err})", err.kind().name());
        let retry = match err.retry_hint().delay() {
            Some(delay) => format!("after {:.1}s", delay.as_secs_f64()),
            None if err.is_retryable() => "with backoff".to_owned(),
            None => "never".to_owned(),
        };
        println!(
            "  code {} · reason {} · domain {} · HTTP {} · gRPC {} · category {} · retry {retry}",
            err.code(),
            err.reason(),
            err.domain(),
            err.http_status(),
            err.grpc_status(),
            err.category().as_str(),
        );
        for profile in WireProfile::ALL {
            let mut bytes = Vec::new();
            err.write_error_object(profile, &mut bytes);
            println!("  {profile:?}: {}", String::from_utf8_lossy(&bytes));
        }
    }

    println!("\n== client side: the same bytes decoded back ==");
    for err in &errors {
        let wire = serde_json::to_vec(&err.to_error_object()).expect("an error object serializes");
        let received: ErrorObject = serde_json::from_slice(&wire).expect("and parses back");
        let kind = AgentError::kind_of(&received).map_or("unknown", |kind| kind.name());
        match AgentError::from_error_object(&received) {
            Some(typed) => println!("{kind}: rebuilt as {typed:?}"),
            // Llm's String is not `data` (nor `default`): it never travels, so the variant
            // can't be rebuilt. The kind is still known and nothing the peer sent is lost.
            None => println!(
                "{kind}: kind known, value not rebuilt: a field of it never travels \
                 (mark it #[a2a(data)] to send it, or #[a2a(default)] to rebuild without it)"
            ),
        }
    }

    println!("\n== catalog (for docs and agent cards) ==");
    for row in AgentError::CATALOG {
        println!(
            "{:<13} {:>6}  {:<16} {:<22} HTTP {}",
            row.name, row.code, row.reason, row.message, row.http_status
        );
    }

    over_http().await;
}

/// A server whose `Quote` fails twice before it works, whose `Bill` is rate limited for 10 s,
/// and whose `GetTask` knows no task; and a client with a 5 s budget calling each.
async fn over_http() {
    println!("\n== over HTTP: the endpoint and the retrying client ==");
    let calls = Arc::new(AtomicU32::new(0));
    let server = JsonRpc::new()
        .method("Quote", move |_: Value, _: RequestContext| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 | 1 => Err(AgentError::from(StandardError::AgentUnavailable {
                        retry_after: None,
                    })),
                    _ => Ok(json!({"price": 42})),
                }
            }
        })
        .method("Bill", |_: Value, _: RequestContext| async {
            Err::<Value, _>(AgentError::RateLimited)
        })
        .method("GetTask", |p: Value, _: RequestContext| async move {
            Err::<Value, _>(AgentError::TaskNotFound {
                task_id: p["id"].as_str().unwrap_or_default().into(),
                shard: 0,
            })
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, server.into_router()).await });

    let policy = RetryPolicy::new()
        .method("Quote", RetrySafety::Safe)
        .on_retry(|attempt, error: &ClientError<AgentError>, delay| {
            println!(
                "  attempt {attempt} failed: {} {}; retrying in {} ms",
                error.code(),
                error.reason(),
                delay.as_millis()
            )
        });
    let client = Client::<AgentError>::jsonrpc(url.as_str())
        .retry(policy)
        .total_timeout(BUDGET)
        .build()
        .expect("a valid URL");

    for (method, params) in [
        ("Quote", json!({})),
        ("Bill", json!({})),
        ("GetTask", json!({"id": "t-42"})),
    ] {
        println!("{method}:");
        match client.call::<_, Value>(method, &params).await {
            Ok(result) => println!("  ok: {result}"),
            Err(error) => {
                let kind = error.kind().map_or("unknown", |kind| kind.name());
                println!(
                    "  failed: {} {} (kind {kind}); {}",
                    error.code(),
                    error.reason(),
                    why_not_retried(&error)
                );
                if let Some(typed) = error.typed() {
                    println!("  rebuilt: {typed:?}");
                }
            }
        }
    }
}

/// Why the client gave up on `error` without (another) retry.
fn why_not_retried(error: &ClientError<AgentError>) -> String {
    if !error.is_retryable() {
        return format!(
            "not retried: {} errors are never retried (category {})",
            error.reason(),
            error.category().as_str()
        );
    }
    match error.retry_after() {
        Some(delay) if delay >= BUDGET => format!(
            "retryable, but not retried: the agent asked to wait {}s and the whole call had {}s, \
             so the client stopped at once instead of sleeping past its deadline",
            delay.as_secs(),
            BUDGET.as_secs()
        ),
        _ => "retryable, but the attempts or the time budget ran out".to_owned(),
    }
}
