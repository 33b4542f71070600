//! Tools over MCP (`McpDependency`) against the test kit's fake MCP server on loopback: the
//! session, classification with MCP's meaning, per-tool breakers, cancellation, progress,
//! and the series.

use std::time::Duration;

use a2a_error::dependency::mcp::{McpDependency, McpFailure, ToolOutcome, Unavailable};
use a2a_error::dependency::{Failure, HttpFailure};
use a2a_error::resilience::breaker::{BreakerConfig, BreakerRegistry, State};
use a2a_error::resilience::{RetryPolicy, Timeout};
use a2a_error_testkit::{FaultMcp, McpAnswer, closed_url};
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

/// A client of `server` with quick retries.
fn client(server: &FaultMcp) -> McpDependency {
    builder(server.url()).build().unwrap()
}

fn builder(url: &str) -> a2a_error::dependency::McpDependencyBuilder {
    McpDependency::builder("tools", url).retry(
        RetryPolicy::default()
            .max_attempts(3)
            .base_delay(Duration::from_millis(10)),
    )
}

fn q(text: &str) -> Map<String, Value> {
    let mut arguments = Map::new();
    arguments.insert("q".into(), text.into());
    arguments
}

#[tokio::test]
async fn the_first_call_starts_a_session_and_lists_the_tools() {
    let server = FaultMcp::start(&["search", "fetch"]).await;
    let tools = client(&server);
    let outcome = tools.tool("search", q("rust")).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: rust".into()));
    assert_eq!(outcome.for_model(), "tool: search: rust");
    assert_eq!(
        server.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    let received = server.received();
    assert_eq!(
        received[1].headers["accept"],
        "application/json, text/event-stream"
    );
    assert_eq!(received[0].session, None);
    assert_eq!(received[1].session, None);
    for later in &received[2..] {
        assert_eq!(later.session.as_deref(), Some("s1"));
        assert_eq!(later.headers["mcp-protocol-version"], "2025-06-18");
    }
    assert_eq!(received[4].params["arguments"], json!({"q": "rust"}));
    // The call's trace in the headers; the params as the caller wrote them.
    assert_eq!(received[4].headers["traceparent"].len(), 55);
    assert_eq!(received[4].params.get("_meta"), None);
    // The session and its listing are kept.
    tools.tool("fetch", q("x")).await;
    assert_eq!(server.methods().len(), 6);
    let mut known = tools.known_tools();
    known.sort();
    assert_eq!(known, ["fetch", "search"]);
}

#[tokio::test]
async fn answers_as_sse_streams_are_read() {
    let server = FaultMcp::start(&["search"]).await;
    server.answer_with_sse();
    let outcome = client(&server).tool("search", q("a")).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: a".into()));
}

#[tokio::test]
async fn a_tool_error_is_the_tools_text_for_the_model_and_not_retried() {
    let server = FaultMcp::start(&["search"]).await;
    let long = "é".repeat(3000);
    server.on_tool("search", [McpAnswer::tool_error(&["no rows", &long])]);
    let outcome = client(&server).tool("search", q("a")).await;
    let ToolOutcome::Failed(text) = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(text.starts_with("no rows\né"));
    assert!(text.len() <= 4096 && text.len() >= 4094, "{}", text.len());
    assert!(outcome.is_degraded());
    assert_eq!(server.calls_of("search").len(), 1);
}

#[tokio::test]
async fn a_call_refused_before_it_ran_is_retried_honouring_retry_after() {
    let server = FaultMcp::start(&["search"]).await;
    server.on_tool(
        "search",
        [
            McpAnswer::status(429).header("retry-after", "1"),
            McpAnswer::status(503),
        ],
    );
    let started = Instant::now();
    let outcome = client(&server).tool("search", q("a")).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: a".into()));
    assert_eq!(server.calls_of("search").len(), 3);
    assert!(started.elapsed() >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_call_that_may_have_run_is_not_retried_unless_its_tool_is_idempotent() {
    for answer in [
        McpAnswer::status(500),
        McpAnswer::rpc_error(-32603, "/srv/x.py"),
    ] {
        let server = FaultMcp::start(&["write", "read"]).await;
        server.on_tool("write", [answer.clone()]);
        server.on_tool("read", [answer]);
        let tools = builder(server.url())
            .idempotent_tools(["read"])
            .build()
            .unwrap();
        let outcome = tools.tool("write", q("a")).await;
        assert_eq!(outcome, ToolOutcome::Unavailable(Unavailable::Down));
        assert_eq!(outcome.for_model(), "tool unavailable");
        assert_eq!(server.calls_of("write").len(), 1);
        let read = tools.tool("read", q("a")).await;
        assert_eq!(read, ToolOutcome::Answered("read: a".into()));
        assert_eq!(server.calls_of("read").len(), 2);
    }
}

#[tokio::test]
async fn the_servers_idempotent_hint_counts_only_when_trusted() {
    let listed = vec![json!({"name": "read", "inputSchema": {},
        "annotations": {"idempotentHint": true}})];
    for trusted in [false, true] {
        let server = FaultMcp::with_tools(listed.clone()).await;
        server.on_tool("read", [McpAnswer::status(502)]);
        let tools = builder(server.url())
            .trust_idempotent_hint(trusted)
            .build()
            .unwrap();
        tools.tool("read", q("a")).await;
        assert_eq!(server.calls_of("read").len(), 1 + usize::from(trusted));
    }
}

#[tokio::test]
async fn refusals_are_not_retried() {
    let server = FaultMcp::start(&["search"]).await;
    server.on_tool("search", [McpAnswer::rpc_error(-32602, "bad q")]);
    let error = client(&server)
        .call_tool("search", q("a"))
        .await
        .unwrap_err();
    assert!(matches!(&error, Failure::Failed(McpFailure::Rpc(rpc)) if rpc.code == -32602));
    assert_eq!(Unavailable::of(&error), Unavailable::Refused);
    assert_eq!(server.calls_of("search").len(), 1);
}

/// A call that timed out or lost its connection after sending may have run: it is not sent
/// again, and `notifications/cancelled` for it has left before the call answers.
#[tokio::test]
async fn a_call_left_running_is_cancelled_and_not_retried() {
    let server = FaultMcp::start(&["slow", "cut"]).await;
    server.on_tool("slow", [McpAnswer::hang()]);
    server.on_tool("cut", [McpAnswer::close()]);
    let tools = builder(server.url())
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let timed_out = tools.call_tool("slow", q("a")).await.unwrap_err();
    assert!(
        matches!(timed_out, Failure::Timeout(Timeout::Attempt)),
        "{timed_out:?}"
    );
    let lost = tools.call_tool("cut", q("a")).await.unwrap_err();
    assert!(
        matches!(
            lost,
            Failure::Failed(McpFailure::Http(HttpFailure::Transport { .. }))
        ),
        "{lost:?}"
    );
    let (slow, cut) = (server.calls_of("slow"), server.calls_of("cut"));
    assert_eq!((slow.len(), cut.len()), (1, 1));
    assert_eq!(
        server.cancelled(),
        [slow[0].id.clone().unwrap(), cut[0].id.clone().unwrap()]
    );
}

#[tokio::test]
async fn the_callers_deadline_bounds_the_call_and_cancels_it_first() {
    let server = FaultMcp::start(&["slow"]).await;
    server.on_tool("slow", [McpAnswer::hang()]);
    let tools = client(&server);
    let deadline = Instant::now() + Duration::from_millis(600);
    let error = a2a_error::with_deadline(deadline, tools.call_tool("slow", q("a")))
        .await
        .unwrap_err();
    // By the deadline (its margin is 50 ms), plus at most the 250 ms the call waits for its
    // cancellation to leave, on a machine however busy.
    assert!(
        Instant::now() <= deadline + Duration::from_millis(250),
        "answered after the deadline"
    );
    assert!(
        matches!(error, Failure::Timeout(Timeout::Total)),
        "{error:?}"
    );
    assert_eq!(server.cancelled().len(), 1);
}

#[tokio::test]
async fn a_caller_that_goes_away_still_cancels() {
    let server = FaultMcp::start(&["slow"]).await;
    server.on_tool("slow", [McpAnswer::hang()]);
    let tools = client(&server);
    let call = tools.call_tool("slow", q("a"));
    let _ = tokio::time::timeout(Duration::from_millis(300), call).await;
    let waited = Instant::now();
    while server.cancelled().is_empty() && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.cancelled().len(), 1);
}

#[tokio::test]
async fn a_server_that_restarted_costs_one_new_session() {
    let server = FaultMcp::start(&["search"]).await;
    let tools = client(&server);
    tools.tool("search", q("a")).await;
    server.restart();
    let outcome = tools.tool("search", q("b")).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: b".into()));
    let methods = server.methods();
    assert_eq!(
        &methods[5..],
        [
            "tools/call",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call",
        ]
    );
    let received = server.received();
    assert_eq!(received[5].session.as_deref(), Some("s1"));
    assert_eq!(received[9].session.as_deref(), Some("s2"));
    // The new session's tools are listed before the next call.
    tools.tool("search", q("c")).await;
    assert_eq!(&server.methods()[10..], ["tools/list", "tools/call"]);
}

#[tokio::test]
async fn one_tools_open_circuit_leaves_the_others_callable() {
    let server = FaultMcp::start(&["a", "b"]).await;
    server.on_tool(
        "a",
        std::iter::repeat_n(McpAnswer::rpc_error(-32603, "x"), 50),
    );
    let registry = BreakerRegistry::new(BreakerConfig::default().consecutive_failures(3));
    let tools = builder(server.url())
        .breakers(&registry)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    for _ in 0..3 {
        tools.tool("a", q("x")).await;
    }
    assert_eq!(tools.tool_breaker("a").unwrap().state(), State::Open);
    let sent = server.calls_of("a").len();
    assert_eq!(
        tools.tool("a", q("x")).await,
        ToolOutcome::Unavailable(Unavailable::CircuitOpen)
    );
    assert_eq!(
        server.calls_of("a").len(),
        sent,
        "sent through an open circuit"
    );
    assert_eq!(
        tools.tool("b", q("y")).await,
        ToolOutcome::Answered("b: y".into())
    );
    assert_eq!(tools.breaker().unwrap().state(), State::Closed);
    assert_eq!(registry.get("tools/a").state(), State::Open);
}

#[tokio::test]
async fn a_server_that_is_down_opens_the_servers_circuit() {
    let url = format!("{}/mcp", closed_url());
    let registry = BreakerRegistry::new(BreakerConfig::default().consecutive_failures(2));
    let tools = builder(&url)
        .breakers(&registry)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    for _ in 0..2 {
        assert_eq!(
            tools.tool("a", q("x")).await,
            ToolOutcome::Unavailable(Unavailable::Down)
        );
    }
    assert_eq!(tools.breaker().unwrap().state(), State::Open);
    assert_eq!(
        tools.tool("b", q("x")).await,
        ToolOutcome::Unavailable(Unavailable::CircuitOpen)
    );
}

#[tokio::test]
async fn progress_extends_the_attempt_up_to_its_bound() {
    let server = FaultMcp::start(&["long"]).await;
    // Twelve notes 100 ms apart: 1.2 s in all, past an 800 ms attempt timeout, each gap far
    // inside it however busy the machine.
    let slow = || McpAnswer::text("done").progress(12, Duration::from_millis(100));
    server.on_tool("long", [slow(), slow()]);
    let extended = builder(server.url())
        .attempt_timeout(Duration::from_millis(800))
        .progress_extends_up_to(Duration::from_secs(20))
        .build()
        .unwrap();
    assert_eq!(
        extended.tool("long", q("a")).await,
        ToolOutcome::Answered("done".into())
    );
    let call = &server.calls_of("long")[0];
    assert_eq!(
        call.params["_meta"]["progressToken"],
        call.id.clone().unwrap()
    );
    let strict = builder(server.url())
        .attempt_timeout(Duration::from_millis(800))
        .build()
        .unwrap();
    assert_eq!(
        strict.tool("long", q("a")).await,
        ToolOutcome::Unavailable(Unavailable::TimedOut)
    );
}

#[tokio::test]
async fn initialize_is_retried_when_the_server_is_briefly_unavailable() {
    let server = FaultMcp::start(&["search"]).await;
    server.on_method("initialize", [McpAnswer::status(503)]);
    let outcome = client(&server).tool("search", q("a")).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: a".into()));
    // Discovered once: the retry starts the session the server was found to speak.
    assert_eq!(
        server.methods()[..4],
        [
            "server/discover",
            "initialize",
            "initialize",
            "notifications/initialized"
        ]
    );
}

/// Requests are recorded under OpenTelemetry's MCP names, with tool names only as the server
/// listed them.
#[test]
fn the_series_name_only_listed_tools() {
    let snapshot = crate::metrics::with_own_recorder(|snapshotter| async move {
        let server = FaultMcp::start(&["search"]).await;
        server.on_tool("search", [McpAnswer::tool_error(&["no"])]);
        let tools = client(&server);
        tools.tool("search", q("a")).await;
        tools.tool("search", q("b")).await;
        tools.tool("made-up\nname", q("c")).await;
        crate::metrics::recorded(&snapshotter)
    });
    let count = |labels: &[(&str, &str)]| {
        crate::metrics::samples(&snapshot, "mcp.client.operation.duration", labels).len()
    };
    let call = ("mcp.method.name", "tools/call");
    assert_eq!(count(&[call, ("gen_ai.tool.name", "search")]), 2);
    assert_eq!(
        count(&[
            call,
            ("gen_ai.tool.name", "search"),
            ("error.type", "TOOL_ERROR")
        ]),
        1
    );
    assert_eq!(count(&[call, ("gen_ai.tool.name", "other")]), 1);
    assert_eq!(count(&[("mcp.method.name", "tools/list")]), 1);
    let labels: Vec<String> = snapshot
        .iter()
        .flat_map(|(key, _)| key.key().labels().map(|label| label.value().to_owned()))
        .collect();
    assert!(!labels.iter().any(|value| value.contains("made-up")));
}

#[tokio::test]
async fn a_server_that_will_not_list_its_tools_is_still_called_and_not_asked_again() {
    let server = FaultMcp::start(&["search"]).await;
    server.on_method("tools/list", [McpAnswer::rpc_error(-32601, "no")]);
    let tools = client(&server);
    for query in ["a", "b"] {
        let outcome = tools.tool("search", q(query)).await;
        assert_eq!(outcome, ToolOutcome::Answered(format!("search: {query}")));
    }
    assert_eq!(
        server.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call"
        ]
    );
    assert!(tools.known_tools().is_empty());
}

/// A server of the test's own that answers every POST with `reply` (after initialize, which
/// it answers plainly with `session` as its session id).
async fn hostile(session: &'static str, reply: fn() -> axum::response::Response) -> String {
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: String| async move {
            let message: Value = serde_json::from_str(&body).unwrap_or_default();
            match message["method"].as_str() {
                Some("initialize") => (
                    [("mcp-session-id", session)],
                    axum::Json(json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {},
                        "serverInfo": {"name": "h", "version": "1"}}})),
                )
                    .into_response(),
                Some(method) if method.starts_with("notifications/") => {
                    axum::http::StatusCode::ACCEPTED.into_response()
                }
                _ => reply(),
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn sse(body: axum::body::Body) -> axum::response::Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

#[tokio::test]
async fn a_hostile_server_is_bounded_and_typed() {
    // A session id that is not one: refused, typed, nothing kept.
    let url = hostile("bad id", || axum::http::StatusCode::OK.into_response()).await;
    let error = builder(&url)
        .build()
        .unwrap()
        .call_tool("t", q("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, Failure::Failed(McpFailure::Protocol { .. })),
        "{error:?}"
    );

    // Events that never answer, forever: the attempt's limit ends it, and it is cancelled.
    let url = hostile("s", || {
        let junk = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            let event = b"id: 1\ndata:\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n";
            Some((Ok::<_, std::io::Error>(bytes::Bytes::from_static(event)), ()))
        });
        sse(axum::body::Body::from_stream(junk))
    })
    .await;
    let tools = builder(&url)
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = tools.call_tool("t", q("a")).await.unwrap_err();
    assert!(
        matches!(error, Failure::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // An event over the limit, and a reply over the limit: typed, read no further.
    let url = hostile("s", || {
        let big = format!("data: {}\n\n", "x".repeat(2 << 20));
        sse(axum::body::Body::from(big))
    })
    .await;
    let error = builder(&url)
        .build()
        .unwrap()
        .call_tool("t", q("a"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Failure::Failed(McpFailure::Http(HttpFailure::TooLarge { .. }))
        ),
        "{error:?}"
    );
    let url = hostile("s", || "y".repeat(2 << 20).into_response()).await;
    let tools = builder(&url).max_reply_bytes(1 << 20).build().unwrap();
    let error = tools.call_tool("t", q("a")).await.unwrap_err();
    assert!(
        matches!(
            error,
            Failure::Failed(McpFailure::Http(HttpFailure::TooLarge { .. }))
        ),
        "{error:?}"
    );
}

/// The fake MCP server over stdio (`fixtures/mcp_stdio_server.py`), logging what it receives
/// to a file of the test's own.
fn stdio(
    test: &str,
) -> (
    a2a_error::dependency::McpDependencyBuilder,
    std::path::PathBuf,
) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration/fixtures/mcp_stdio_server.py"
    );
    let log = std::env::temp_dir().join(format!("mcp-stdio-{}-{test}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let builder = McpDependency::stdio("local", "python3", [script, log.to_str().unwrap()]).retry(
        RetryPolicy::default()
            .max_attempts(3)
            .base_delay(Duration::from_millis(10)),
    );
    (builder, log)
}

/// What the stdio server logged, one message a line.
fn logged(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn methods_in(log: &std::path::Path) -> Vec<String> {
    logged(log)
        .iter()
        .map(|m| m["method"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_tool_over_stdio_is_guarded_as_over_http() {
    let (builder, log) = stdio("guarded");
    // Long enough for a Python process to start on a busy machine.
    let tools = builder
        .attempt_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("echo", q("a")).await,
        ToolOutcome::Answered("echo: a".into())
    );
    assert_eq!(
        methods_in(&log),
        [
            "start",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    // Over stdio `_meta` is the trace's only carrier (SEP-414).
    let call = logged(&log).pop().unwrap();
    let traceparent = call["params"]["_meta"]["traceparent"].as_str().unwrap();
    assert_eq!(traceparent.len(), 55, "{traceparent}");
    assert_eq!(
        tools.tool("fail", q("a")).await,
        ToolOutcome::Failed("no rows".into())
    );
    // No answer: timed out, not sent again, and cancelled.
    assert_eq!(
        tools.tool("hang", q("a")).await,
        ToolOutcome::Unavailable(Unavailable::TimedOut)
    );
    let waited = Instant::now();
    while !methods_in(&log).contains(&"notifications/cancelled".to_owned())
        && waited.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let messages = logged(&log);
    let hang = messages
        .iter()
        .find(|m| m["params"]["name"] == "hang")
        .unwrap();
    let cancelled = messages
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap();
    assert_eq!(cancelled["params"]["requestId"], hang["id"]);
    assert_eq!(
        messages
            .iter()
            .filter(|m| m["params"]["name"] == "hang")
            .count(),
        1
    );
    // The process ends mid-call: a lost connection (it may have run), not sent again; the
    // next call starts a new process, a new session, whose tools are listed before the call
    // after it (as after a 404 over HTTP).
    assert_eq!(
        tools.tool("crash", q("a")).await,
        ToolOutcome::Unavailable(Unavailable::Down)
    );
    assert_eq!(
        tools.tool("echo", q("b")).await,
        ToolOutcome::Answered("echo: b".into())
    );
    let methods = methods_in(&log);
    assert_eq!(methods.iter().filter(|m| *m == "start").count(), 2);
    assert_eq!(
        methods[methods.len() - 4..],
        [
            "start",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "tools/call").count(),
        5,
        "the crashed call was sent again"
    );
    // A line over the limit ends the process; the next call starts another.
    assert_eq!(
        tools.tool("huge", q("a")).await,
        ToolOutcome::Unavailable(Unavailable::Down)
    );
    assert_eq!(
        tools.tool("echo", q("c")).await,
        ToolOutcome::Answered("echo: c".into())
    );
    assert_eq!(methods_in(&log).iter().filter(|m| *m == "start").count(), 3);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn progress_over_stdio_extends_the_attempt() {
    let (builder, log) = stdio("progress");
    // Twelve notes 100 ms apart: 1.2 s in all, past an 800 ms attempt timeout, each gap far
    // inside it however busy the machine.
    let tools = builder
        .attempt_timeout(Duration::from_millis(800))
        .progress_extends_up_to(Duration::from_secs(20))
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("slow", q("12")).await,
        ToolOutcome::Answered("done".into())
    );
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn a_program_that_does_not_start_is_down_and_nothing_ran() {
    let tools = McpDependency::stdio("missing", "/nonexistent/mcp-server", ["x"])
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let error = tools.call_tool("t", q("a")).await.unwrap_err();
    assert!(
        matches!(
            error,
            Failure::Failed(McpFailure::Http(HttpFailure::Connect { .. }))
        ),
        "{error:?}"
    );
    assert!(!a2a_error::resilience::Classify::may_have_run(&error));
}

/// `tool` reads a result's text parts in place and skips the rest: images and their base64,
/// `structuredContent`, parts by the hundred thousand; `call_tool` still has the whole model.
#[tokio::test]
async fn tool_reads_text_parts_and_skips_every_other_part_and_member() {
    let server = FaultMcp::start(&["mixed", "many", "odd"]).await;
    let mixed = json!({
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "iVBORw0KGgo=".repeat(10_000), "mimeType": "image/png"},
            {"type": "text", "text": "second", "annotations": {"priority": 1}},
        ],
        "structuredContent": {"rows": vec![json!({"deep": [0, 1, {"x": null}]}); 10_000]},
    });
    server.on_tool(
        "mixed",
        [McpAnswer::result(mixed.clone()), McpAnswer::result(mixed)],
    );
    let tools = client(&server);
    let outcome = tools.tool("mixed", q("a")).await;
    assert_eq!(outcome, ToolOutcome::Answered("first\nsecond".into()));
    let whole = tools.call_tool("mixed", q("a")).await.unwrap();
    assert_eq!(whole.content.len(), 3);
    assert!(whole.structured_content.is_some());

    let parts: Vec<Value> = (0..100_000)
        .map(|_| json!({"type": "text", "text": "a"}))
        .collect();
    server.on_tool("many", [McpAnswer::result(json!({"content": parts}))]);
    let ToolOutcome::Answered(text) = tools.tool("many", q("a")).await else {
        panic!("not answered");
    };
    assert_eq!(text.len(), 2 * 100_000 - 1);

    // Not a tool result (content not a list, or an `isError` not a boolean): the server's
    // fault, said in a word; one that says it failed is the tool's own failure whatever else
    // it holds. None is sent twice.
    server.on_tool(
        "odd",
        [
            McpAnswer::result(json!({"content": "text"})),
            McpAnswer::result(
                json!({"content": [{"type": "text", "text": "x"}], "isError": "yes"}),
            ),
            McpAnswer::result(json!({"content": "text", "isError": true})),
        ],
    );
    let down = ToolOutcome::Unavailable(Unavailable::Down);
    assert_eq!(tools.tool("odd", q("a")).await, down);
    assert_eq!(tools.tool("odd", q("a")).await, down);
    assert_eq!(
        tools.tool("odd", q("a")).await,
        ToolOutcome::Failed(String::new())
    );
    assert_eq!(server.calls_of("odd").len(), 3);
}

/// The official MCP Python SDK's server (`tests/interop/python_mcp_server.py`, mcp 2.3.0,
/// streamable HTTP) on a free port, started and listening; `None` when the Python interop
/// tests are skipped on purpose.
pub(crate) fn python_mcp_server() -> Option<(tokio::process::Child, u16)> {
    let python = crate::python_interop::python_or_skip("mcp.server.mcpserver")?;
    let port = a2a_error_testkit::free_port();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/interop/python_mcp_server.py"
    );
    let server = tokio::process::Command::new(&python)
        .args([script, &port.to_string()])
        .current_dir(std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    crate::common::wait_until_listening(port, Duration::from_secs(30), "the MCP Python server");
    Some((server, port))
}

/// The official MCP Python SDK's server (mcp 2.3.0, streamable HTTP): the session starts, the
/// tools are listed, `tool` reads a result's text parts (its image and structured content
/// skipped) and a tool's own failure, and `call_tool` still has the whole result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdks_server_is_read_in_place() {
    let Some((mut server, port)) = python_mcp_server() else {
        return;
    };
    let tools = builder(&format!("http://127.0.0.1:{port}/mcp"))
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("mixed", q("a")).await,
        ToolOutcome::Answered("first a\nsecond".into())
    );
    let mut known = tools.known_tools();
    known.sort();
    assert_eq!(known, ["broken", "mixed"]);
    let ToolOutcome::Failed(text) = tools.tool("broken", q("a")).await else {
        panic!("not the tool's own failure");
    };
    assert!(text.contains("broken"), "{text}");
    let whole = tools.call_tool("mixed", q("a")).await.unwrap();
    assert_eq!(whole.content.len(), 3);
    assert!(whole.structured_content.is_some());
    server.kill().await.unwrap();
}
