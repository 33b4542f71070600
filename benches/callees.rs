//! The callees against their floors, in CPU per call of the caller's thread:
//!
//! - an MCP `tools/call` through `McpDependency::tool` (the layers, the session, the tool's
//!   breaker, the result's text parts read in place) against the same POST written with
//!   reqwest and serde alone (the JSON-RPC request serialized, the reply's text parts read
//!   with borrowed strings);
//! - a push delivery through `PushSender::deliver` (the receiver's breaker and bulkhead, the
//!   retry policy, the Standard Webhooks signature) against the same signed POST written with
//!   reqwest, hmac and sha2 alone;
//! - a model call through `HttpDependency::send` paced by the provider's stated quota (its
//!   `x-ratelimit-*` headers read on every reply, each call estimated and admitted) against
//!   the same call with `paced_by_quota(false)`: the quota's own cost a call.
//!
//! Both servers run on a thread of their own (their own runtime), so that the caller's thread,
//! whose runtime runs the client and its connections, does the caller's work only; its CPU
//! time is read from `/proc/thread-self/schedstat` (ns). Each round makes `CALLS` calls with
//! each client, in a rotating order; the medians of the rounds and the ratio's spread are
//! printed. Run it on one CPU (`taskset -c 0 cargo bench -p a2a-error-benches --bench
//! callees`, as `benches/guard.sh --benches` does): across two CPUs each request wakes the
//! server's thread on the other with an interrupt, which on this VM costs more than the call
//! itself and moves from round to round (ratios spread 0.9-4x); on one CPU the caller's time
//! is its own work and the rounds agree within a few percent.

use std::time::{Duration, Instant};

#[path = "loopback.rs"]
mod loopback;
use loopback::serve;

use a2a_error::dependency::{HttpCall, HttpDependency, McpDependency, PushSender, Receiver};
use axum::Json;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};

const CALLS: usize = 500;
const ROUNDS: usize = 31;
const SECRET: &[u8] = b"a secret of the receiver's, 32 bytes";

/// The CPU time of the calling thread, in ns.
fn thread_cpu() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .unwrap_or(0)
}

/// An MCP server of one tool, `search`, over streamable HTTP (JSON replies), as small as
/// the protocol lets it be.
async fn mcp_server(headers: HeaderMap, Json(request): Json<Value>) -> axum::response::Response {
    let session = [("mcp-session-id", "bench-session")];
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let result = match request["method"].as_str().unwrap_or("") {
        "initialize" => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "bench", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "search", "inputSchema": {"type": "object"}}]}),
        // A session-based server: the stateless revision's discovery is not a method it knows.
        "server/discover" => {
            return Json(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}}))
            .into_response();
        }
        "tools/call" => {
            assert_eq!(headers["mcp-session-id"], "bench-session");
            json!({"content": [{"type": "text", "text": "Rust is a systems programming language."}],
                "isError": false})
        }
        // Notifications.
        _ => return (axum::http::StatusCode::ACCEPTED, session).into_response(),
    };
    (
        session,
        Json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
    )
        .into_response()
}

/// What the floor reads of a tool's reply: the text parts, borrowed.
#[derive(serde::Deserialize)]
struct Reply<'a> {
    #[serde(borrow)]
    result: ToolResult<'a>,
}

#[derive(serde::Deserialize)]
struct ToolResult<'a> {
    #[serde(borrow)]
    content: Vec<Content<'a>>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(serde::Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    text: Option<std::borrow::Cow<'a, str>>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Client {
    McpFloor,
    Mcp,
    PushFloor,
    Push,
    Unpaced,
    Paced,
}

const CLIENTS: [(Client, &str); 6] = [
    (Client::McpFloor, "MCP tools/call: reqwest and serde alone"),
    (Client::Mcp, "MCP tools/call: McpDependency::tool"),
    (Client::PushFloor, "push: a signed POST with reqwest alone"),
    (Client::Push, "push: PushSender::deliver"),
    (
        Client::Unpaced,
        "model call: HttpDependency, paced_by_quota(false)",
    ),
    (
        Client::Paced,
        "model call: HttpDependency paced by its stated quota",
    ),
];

/// A model provider's chat completion, with its rate-limit headers as OpenAI sends them
/// (room to spare: the quota never holds a call back here).
async fn model_server() -> axum::response::Response {
    let headers = [
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-reset-requests", "1s"),
        ("x-ratelimit-limit-tokens", "1000000"),
        ("x-ratelimit-remaining-tokens", "999000"),
        ("x-ratelimit-reset-tokens", "1m0s"),
    ];
    let body = json!({"choices": [{"message": {"role": "assistant", "content": "Rust."}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}});
    (headers, Json(body)).into_response()
}

struct Clients {
    unpaced: HttpDependency,
    paced: HttpDependency,
    mcp_url: String,
    push_url: String,
    http: reqwest::Client,
    mcp: McpDependency,
    push: PushSender,
    receiver: Receiver,
    next: u64,
}

impl Clients {
    async fn call(&mut self, client: Client) {
        self.next += 1;
        let id = self.next;
        match client {
            Client::McpFloor => {
                let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id,
                    "method": "tools/call",
                    "params": {"name": "search", "arguments": {"q": "rust"}}}))
                .unwrap();
                let reply = self
                    .http
                    .post(&self.mcp_url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-session-id", "bench-session")
                    .header("mcp-protocol-version", "2025-11-25")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(reply.status().is_success());
                let bytes = reply.bytes().await.unwrap();
                let reply: Reply<'_> = serde_json::from_slice(&bytes).unwrap();
                assert!(!reply.result.is_error);
                let text: Vec<_> = reply
                    .result
                    .content
                    .into_iter()
                    .filter_map(|c| c.text)
                    .collect();
                std::hint::black_box(text.join("\n"));
            }
            Client::Mcp => {
                let outcome = self.mcp.tool("search", json!({"q": "rust"})).await;
                assert!(!outcome.is_degraded(), "{outcome:?}");
                std::hint::black_box(outcome);
            }
            Client::Unpaced | Client::Paced => {
                let model = match client {
                    Client::Paced => &self.paced,
                    _ => &self.unpaced,
                };
                let body =
                    json!({"model": "m", "messages": [{"role": "user", "content": "rust?"}]});
                let call = HttpCall::post("/chat/completions").json(&body).unwrap();
                let reply = model.send(call).await.unwrap();
                std::hint::black_box(reply);
            }
            Client::PushFloor => {
                let body = push_body(id);
                let id = format!("n-{id}");
                let timestamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs();
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET).unwrap();
                mac.update(format!("{id}.{timestamp}.").as_bytes());
                mac.update(&body);
                use base64::Engine;
                let signature =
                    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
                let reply = self
                    .http
                    .post(&self.push_url)
                    .header("content-type", "application/json")
                    .header("webhook-id", id)
                    .header("webhook-timestamp", timestamp.to_string())
                    .header("webhook-signature", format!("v1,{signature}"))
                    .header("x-a2a-notification-token", "token")
                    .header("a2a-notification-token", "token")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                assert!(reply.status().is_success());
            }
            Client::Push => {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                let delivery = self
                    .push
                    .deliver(&self.receiver, &format!("n-{id}"), push_body(id), deadline)
                    .await;
                assert_eq!(delivery.as_str(), "delivered");
            }
        }
    }
}

/// A notification's body: a status update of ~300 bytes.
fn push_body(id: u64) -> bytes::Bytes {
    let body = json!({"statusUpdate": {"taskId": format!("task-{id}"), "contextId": "context",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-06T10:00:00Z",
            "message": {"messageId": format!("m-{id}"), "role": "ROLE_AGENT",
                "parts": [{"text": "working on it"}]}}}});
    bytes::Bytes::from(serde_json::to_vec(&body).unwrap())
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing else either.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mcp_url = format!(
        "{}/mcp",
        serve(axum::Router::new().route("/mcp", axum::routing::post(mcp_server)))
    );
    let push_url = format!(
        "{}/hook",
        serve(axum::Router::new().route("/hook", axum::routing::post(|| async { "" })))
    );
    let model_url =
        serve(axum::Router::new().route("/chat/completions", axum::routing::post(model_server)));
    let mut clients = runtime.block_on(async {
        Clients {
            unpaced: HttpDependency::model("unpaced", model_url.as_str())
                .paced_by_quota(false)
                .build()
                .unwrap(),
            paced: HttpDependency::model("paced", model_url.as_str())
                .build()
                .unwrap(),
            mcp: McpDependency::builder("bench", mcp_url.as_str())
                .build()
                .unwrap(),
            push: PushSender::builder()
                .signing_secret(SECRET)
                .allow_private(true)
                .build()
                .unwrap(),
            receiver: Receiver::new(push_url.as_str(), Some("token"), None).unwrap(),
            http: reqwest::Client::new(),
            mcp_url: mcp_url.clone(),
            push_url: push_url.clone(),
            next: 0,
        }
    });
    // Warm-up: connections, the MCP session and its tool list, lazy statics.
    runtime.block_on(async {
        for (client, _) in CLIENTS {
            for _ in 0..50 {
                clients.call(client).await;
            }
        }
    });
    // `ONLY=NAME`: one client, 20,000 calls, for a profiler.
    if let Ok(only) = std::env::var("ONLY") {
        let client = CLIENTS
            .iter()
            .find(|(_, name)| name.contains(&only))
            .unwrap()
            .0;
        runtime.block_on(async {
            for _ in 0..20_000 {
                clients.call(client).await;
            }
        });
        return;
    }
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); CLIENTS.len()];
    let started = Instant::now();
    for round in 0..ROUNDS {
        for at in 0..CLIENTS.len() {
            let index = (round + at) % CLIENTS.len();
            let before = thread_cpu();
            runtime.block_on(async {
                for _ in 0..CALLS {
                    clients.call(CLIENTS[index].0).await;
                }
            });
            cpu[index].push((thread_cpu() - before) as f64 / CALLS as f64 / 1e3);
        }
    }
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "the callees against their floors: CPU µs a call of the caller's thread, medians of \
         {ROUNDS} rounds of {CALLS} calls ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    for ((_, name), times) in CLIENTS.iter().zip(&cpu) {
        println!("  {name}: {:.1} µs", median(times));
    }
    println!(
        "  the quota's own cost a model call: {:.2} µs (target under 1 µs)",
        median(&cpu[5]) - median(&cpu[4])
    );
    for (floor, ours, name) in [
        (0, 1, "MCP tools/call"),
        (2, 3, "push delivery"),
        (4, 5, "a model call paced by its quota"),
    ] {
        let mut ratios: Vec<f64> = cpu[ours]
            .iter()
            .zip(&cpu[floor])
            .map(|(ours, floor)| ours / floor)
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "  {name} / its floor: {:.3}x ({:.3}-{:.3}x)",
            median(&ratios),
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
}
