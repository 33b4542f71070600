//! The `llm_agent` example's MCP contract from outside (`--mcp URL`): the agent as its own
//! process, the test kit's fake MCP server and a fake model provider on loopback, driven by a
//! real HTTP client.

use std::time::{Duration, Instant};

use crate::common::requests::{get_text, rpc, rpc_with, send};
use crate::llm_agent::{agent, degraded, text};
use a2a_error_testkit::{FaultMcp, FaultService, HttpAnswer, McpAnswer, closed_url};
use serde_json::{Value, json};

/// What the model was last asked.
fn asked(model: &FaultService) -> String {
    let body: Value = serde_json::from_slice(&model.received().last().unwrap().body).unwrap();
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

/// The agent with `--mcp` at `server`, its model `model`.
fn with_mcp(
    model: &FaultService,
    server: &str,
    more: &[&str],
) -> (crate::common::ExampleProcess, String) {
    let mut args = vec!["--mcp", server];
    args.extend_from_slice(more);
    agent(model.url(), &args)
}

/// No server text but a tool's result reaches the wire.
fn assert_clean(reply: &Value) {
    let text = reply.to_string();
    for word in [
        "/srv/mcp-secret",
        "McpFailure",
        "JSON-RPC",
        "reqwest",
        "127.0.0.1",
    ] {
        assert!(!text.contains(word), "{word} on the wire: {text}");
    }
}

#[tokio::test]
async fn a_tool_call_starts_a_session_and_its_text_goes_to_the_model() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search", "fetch"]).await;
    server.on_tool(
        "search",
        [McpAnswer::result(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "second"},
        ]}))],
    );
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:rust a2a")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(
        asked(&model),
        "tool: first\nsecond\nuser: mcp:search:rust a2a"
    );
    // A server of an older revision: `server/discover` is not a method it knows (-32601).
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
    assert!(received[0].id.is_some(), "server/discover is a request");
    assert_eq!(received[0].headers["mcp-method"], "server/discover");
    assert!(received[1].id.is_some(), "initialize is a request");
    assert!(received[1].params["protocolVersion"].is_string());
    assert!(received[2].id.is_none(), "initialized is a notification");
    for request in &received[..2] {
        assert_eq!(
            request.headers["accept"],
            "application/json, text/event-stream"
        );
    }
    assert_eq!(
        received[4].params,
        json!({"name": "search", "arguments": {"q": "rust a2a"}})
    );
    assert!(received[4].headers.get("mcp-method").is_none());

    // The same session, listed once, whether the server answers as JSON or as SSE.
    server.answer_with_sse();
    let reply = rpc(&url, send(2, "m-2", "mcp:fetch:x")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(asked(&model), "tool: fetch: x\nuser: mcp:fetch:x");
    let received = server.received();
    assert_eq!(received.len(), 6);
    for later in &received[2..] {
        assert_eq!(later.session.as_deref(), Some("s1"));
    }
}

#[tokio::test]
async fn a_tool_error_is_told_as_its_own_text_cut_and_not_retried() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search"]).await;
    let long = "ü".repeat(2100); // 4200 bytes
    server.on_tool("search", [McpAnswer::tool_error(&[&long])]);
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(!degraded(&reply).is_null(), "{reply}");
    let expected = format!("tool error: {}\nuser: mcp:search:q", "ü".repeat(2048));
    assert_eq!(asked(&model), expected);
    assert_eq!(server.calls_of("search").len(), 1);
}

#[tokio::test]
async fn an_unavailable_tool_is_told_as_such_and_the_model_still_answers() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    // Refused connections.
    let url_down = format!("{}/mcp", closed_url());
    let (_agent, url) = with_mcp(&model, &url_down, &[]);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(!degraded(&reply).is_null(), "{reply}");
    assert_eq!(asked(&model), "tool unavailable\nuser: mcp:search:q");

    // A 5xx, a JSON-RPC error (its text never shown), no answer in time.
    let server = FaultMcp::start(&["search"]).await;
    server.on_tool(
        "search",
        [
            McpAnswer::status(500),
            McpAnswer::rpc_error(-32603, "/srv/mcp-secret failed"),
            McpAnswer::hang(),
        ],
    );
    let (_agent, url) = with_mcp(&model, server.url(), &["--attempt-timeout-ms", "500"]);
    for i in 0..3 {
        let reply = rpc(&url, send(i, &format!("m-{i}"), "mcp:search:q")).await;
        assert_eq!(text(&reply), "answered", "{reply}");
        assert!(!degraded(&reply).is_null(), "{reply}");
        assert_eq!(asked(&model), "tool unavailable\nuser: mcp:search:q");
        assert_clean(&reply);
    }
    // None retried: each may have run.
    assert_eq!(server.calls_of("search").len(), 3);
    for received in model.received() {
        let body = String::from_utf8_lossy(&received.body).into_owned();
        assert!(!body.contains("secret"), "{body}");
    }
}

#[tokio::test]
async fn a_call_refused_before_it_ran_is_retried_after_its_delay() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search"]).await;
    server.on_tool(
        "search",
        [
            McpAnswer::status(429).header("retry-after", "1"),
            McpAnswer::status(503),
        ],
    );
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    let calls = server.calls_of("search");
    assert_eq!(calls.len(), 3);
    assert!(calls[1].at - calls[0].at >= Duration::from_millis(950));
    assert_eq!(asked(&model), "tool: search: q\nuser: mcp:search:q");
}

#[tokio::test]
async fn a_call_left_running_is_cancelled_before_the_answer_and_not_retried() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["slow", "cut"]).await;
    server.on_tool("slow", [McpAnswer::hang()]);
    server.on_tool("cut", [McpAnswer::close()]);
    let (_agent, url) = with_mcp(&model, server.url(), &["--attempt-timeout-ms", "500"]);
    for (i, tool) in ["slow", "cut"].into_iter().enumerate() {
        let reply = rpc(
            &url,
            send(i as u64, &format!("m-{i}"), &format!("mcp:{tool}:q")),
        )
        .await;
        assert_eq!(text(&reply), "answered", "{reply}");
        // Read as the answer arrives: the cancellation came first.
        let calls = server.calls_of(tool);
        assert_eq!(calls.len(), 1, "{tool} was retried");
        let cancelled = server.cancelled();
        assert_eq!(
            cancelled.last(),
            calls[0].id.as_ref(),
            "{tool}: {cancelled:?}"
        );
        let note = server
            .received()
            .into_iter()
            .rev()
            .find(|r| r.method == "notifications/cancelled")
            .unwrap();
        assert_eq!(note.session.as_deref(), Some("s1"));
    }
}

#[tokio::test]
async fn a_server_that_forgot_the_session_is_initialized_again_once() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search"]).await;
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    rpc(&url, send(1, "m-1", "mcp:search:a")).await;
    server.restart();
    let reply = rpc(&url, send(2, "m-2", "mcp:search:b")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(asked(&model), "tool: search: b\nuser: mcp:search:b");
    // The lost session is learned again: `server/discover` first, then the new session.
    assert_eq!(
        &server.methods()[5..],
        [
            "tools/call",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let received = server.received();
    assert_eq!(received[5].session.as_deref(), Some("s1"));
    assert_eq!(received[9].session.as_deref(), Some("s2"));
}

#[tokio::test]
async fn one_tools_open_circuit_leaves_the_others_called() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["a", "b"]).await;
    server.on_tool(
        "a",
        std::iter::repeat_n(McpAnswer::rpc_error(-32603, "x"), 20),
    );
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    // The default breaker opens after five failures in a row.
    for i in 0..5 {
        rpc(&url, send(i, &format!("m-{i}"), "mcp:a:q")).await;
    }
    assert_eq!(server.calls_of("a").len(), 5);
    let reply = rpc(&url, send(5, "m-5", "mcp:a:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(!degraded(&reply).is_null(), "{reply}");
    assert_eq!(asked(&model), "tool unavailable\nuser: mcp:a:q");
    assert_eq!(
        server.calls_of("a").len(),
        5,
        "sent through an open circuit"
    );
    let reply = rpc(&url, send(6, "m-6", "mcp:b:q")).await;
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(server.calls_of("b").len(), 1);
    assert_eq!(asked(&model), "tool: b: q\nuser: mcp:b:q");

    let metrics = get_text(&format!("{url}/metrics")).await;
    for series in [
        "a2a_breaker_state{agent=\"mcp/a\"} 2",
        "a2a_breaker_state{agent=\"mcp/b\"} 0",
        "a2a_breaker_state{agent=\"mcp\"} 0",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    let calls = |tool: &str, error: Option<&str>| {
        metrics
            .lines()
            .filter(|line| line.starts_with("mcp_client_operation_duration"))
            .filter(|line| line.contains("_count"))
            .filter(|line| line.contains(&format!("gen_ai_tool_name=\"{tool}\"")))
            .filter(|line| match error {
                Some(error) => line.contains(&format!("error_type=\"{error}\"")),
                None => !line.contains("error_type"),
            })
            .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum::<f64>()
    };
    assert_eq!(calls("a", Some("INTERNAL_ERROR")), 5.0, "{metrics}");
    assert_eq!(calls("a", Some("CIRCUIT_OPEN")), 1.0, "{metrics}");
    assert_eq!(calls("b", None), 1.0, "{metrics}");
}

#[tokio::test]
async fn tool_names_in_the_series_are_only_those_listed() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search"]).await;
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    for (i, name) in ["unlisted-1", "unlisted-2", "search"]
        .into_iter()
        .enumerate()
    {
        rpc(
            &url,
            send(i as u64, &format!("m-{i}"), &format!("mcp:{name}:q")),
        )
        .await;
    }
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(!metrics.contains("unlisted"), "{metrics}");
    assert!(metrics.contains("gen_ai_tool_name=\"other\""), "{metrics}");
    assert!(metrics.contains("gen_ai_tool_name=\"search\""), "{metrics}");
}

#[tokio::test]
async fn the_callers_deadline_bounds_the_tool_and_its_cancellation_comes_first() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["slow"]).await;
    server.on_tool("slow", [McpAnswer::hang(), McpAnswer::hang()]);
    let (_agent, url) = with_mcp(&model, server.url(), &[]);
    // Warm: the session is up, so the deadline is the tool call's alone.
    rpc(&url, send(1, "m-1", "hello")).await;
    let started = Instant::now();
    let reply = rpc_with(
        &url,
        ("A2A-Deadline-Ms", "1500"),
        send(2, "m-2", "mcp:slow:q"),
    )
    .await;
    let cancelled = server.cancelled();
    // By the deadline, with the round trip of a busy machine.
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
    let answered = reply["result"]["message"]["parts"][0]["text"] == "answered";
    let expired = reply["error"]["data"][0]["reason"] == "DEADLINE_EXCEEDED";
    assert!(answered || expired, "{reply}");
    if answered {
        assert_eq!(asked(&model), "tool unavailable\nuser: mcp:slow:q");
    }
    let calls = server.calls_of("slow");
    assert_eq!(calls.len(), 1);
    assert_eq!(cancelled, [calls[0].id.clone().unwrap()]);
    assert_clean(&reply);
}
