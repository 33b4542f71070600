//! MCP's second round (`McpDependency`): both kinds of server (the stateless revision
//! `2026-07-28` learned through `server/discover`, the session-based ones), listings in pages,
//! tools that ask back, the stateless revision's errors; against the test kit's fake server in
//! each revision, the official MCP Python SDK's server and the reference server from npm.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_error::dependency::mcp::{
    MAX_INPUT_ROUNDS, MAX_PAGES, McpDependency, ToolOutcome, Unavailable,
};
use a2a_error::resilience::RetryPolicy;
use a2a_error_testkit::{FaultMcp, McpAnswer};
use serde_json::json;

fn builder(url: &str) -> a2a_error::dependency::McpDependencyBuilder {
    McpDependency::builder("tools", url).retry(
        RetryPolicy::default()
            .max_attempts(3)
            .base_delay(Duration::from_millis(10)),
    )
}

fn client(server: &FaultMcp) -> McpDependency {
    builder(server.url()).build().unwrap()
}

pub(crate) async fn stateless(tools: &[&str]) -> FaultMcp {
    let server = FaultMcp::start(tools).await;
    server.stateless();
    server
}

/// `request` was sent statelessly, as the revision asks: the envelope in `_meta`, the
/// version and method in the headers, no session.
pub(crate) fn assert_stateless(request: &a2a_error_testkit::McpReceived) {
    let meta = &request.params["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    let info = &meta["io.modelcontextprotocol/clientInfo"];
    assert!(
        info["name"].is_string() && info["version"].is_string(),
        "{info}"
    );
    assert_eq!(request.headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(request.headers["mcp-method"], request.method.as_str());
    assert!(request.session.is_none() && request.headers.get("mcp-session-id").is_none());
}

/// How many times `method` was received.
pub(crate) fn count(server: &FaultMcp, method: &str) -> usize {
    server.methods().iter().filter(|m| *m == method).count()
}

#[tokio::test]
async fn a_stateless_server_is_spoken_to_without_handshake_or_session() {
    let server = stateless(&["search", "fetch"]).await;
    let tools = client(&server);
    let outcome = tools.tool("search", json!({"q": "rust"})).await;
    assert_eq!(outcome, ToolOutcome::Answered("search: rust".into()));
    assert_eq!(
        server.methods(),
        ["server/discover", "tools/list", "tools/call"]
    );
    for request in server.received() {
        assert_stateless(&request);
        assert_eq!(
            request.headers["accept"],
            "application/json, text/event-stream"
        );
        assert!(request.session.is_none() && request.id.is_some());
    }
    let call = &server.calls_of("search")[0];
    assert_eq!(call.headers["mcp-name"], "search");
    let mut params = call.params.as_object().unwrap().clone();
    params.remove("_meta");
    assert_eq!(
        json!(params),
        json!({"name": "search", "arguments": {"q": "rust"}})
    );
    // Learned once, listed once: the next calls are one request each, in SSE or JSON.
    server.answer_with_sse();
    assert_eq!(
        tools.tool("fetch", json!({"q": "x"})).await,
        ToolOutcome::Answered("fetch: x".into())
    );
    assert_eq!(count(&server, "server/discover"), 1);
    assert_eq!(server.methods().len(), 4);
    let mut known = tools.known_tools();
    known.sort();
    assert_eq!(known, ["fetch", "search"]);
}

#[tokio::test]
async fn a_name_that_is_not_a_plain_header_value_is_sent_base64_encoded() {
    let server = stateless(&["search"]).await;
    let tools = client(&server);
    // Not a name the server listed: refused by it, but routed with the name it was given.
    tools.tool("café lookup", json!({})).await;
    let call = &server.calls_of("café lookup")[0];
    assert_eq!(
        call.headers["mcp-name"], "=?base64?Y2Fmw6kgbG9va3Vw?=",
        "the revision's encoding of the UTF-8 name"
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused_unsent() {
    let server = stateless(&["search"]).await;
    let tools = client(&server);
    assert_eq!(
        tools.tool("search", json!(["q"])).await,
        ToolOutcome::Unavailable(Unavailable::Refused)
    );
    assert!(server.methods().is_empty(), "{:?}", server.methods());
}

#[tokio::test]
async fn an_unsupported_version_is_learned_again_once_per_call() {
    let server = stateless(&["search"]).await;
    let tools = client(&server);
    tools.tool("search", json!({"q": "a"})).await;
    // The server moved on (-32022 with 400): discovered again, sent again, answered.
    server.on_tool(
        "search",
        [McpAnswer::rpc_error(-32022, "Unsupported protocol version").with_status(400)],
    );
    assert_eq!(
        tools.tool("search", json!({"q": "b"})).await,
        ToolOutcome::Answered("search: b".into())
    );
    // Learned again inside the call; its tools are listed again before the next one.
    assert_eq!(
        &server.methods()[3..],
        ["tools/call", "server/discover", "tools/call"]
    );
    // Twice in a row (in a 200 this time): unavailable, and sent no more than that.
    let before = server.calls_of("search").len();
    server.on_tool(
        "search",
        [
            McpAnswer::rpc_error(-32022, "no"),
            McpAnswer::rpc_error(-32022, "no"),
        ],
    );
    assert_eq!(
        tools.tool("search", json!({"q": "c"})).await,
        ToolOutcome::Unavailable(Unavailable::Refused)
    );
    assert_eq!(server.calls_of("search").len(), before + 2);
    assert_eq!(count(&server, "server/discover"), 3);
}

#[tokio::test]
async fn header_and_capability_refusals_are_sent_once_and_count_against_the_server() {
    for (code, status) in [(-32020, 400), (-32021, 400), (-32020, 200), (-32021, 200)] {
        let server = stateless(&["search"]).await;
        let tools = client(&server);
        let answer = McpAnswer::rpc_error(code, "refused").with_status(status);
        server.on_tool("search", [answer.clone(), answer]);
        assert_eq!(
            tools.tool("search", json!({"q": "a"})).await,
            ToolOutcome::Unavailable(Unavailable::Refused),
            "{code} in {status}"
        );
        assert_eq!(server.calls_of("search").len(), 1, "{code} in {status}");
        assert_eq!(count(&server, "server/discover"), 1, "{code} in {status}");
        let snapshot = tools.breaker().unwrap().snapshot();
        assert_eq!(snapshot.failures, 1, "{code} in {status}: the server's");
    }
}

#[tokio::test]
async fn a_listing_is_read_page_by_page_within_sixteen_pages() {
    let server = stateless(&["a", "b", "c"]).await;
    server.pages_of(1);
    let tools = client(&server);
    tools.tool("c", json!({"q": "x"})).await;
    let listings: Vec<_> = server
        .received()
        .into_iter()
        .filter(|r| r.method == "tools/list")
        .collect();
    let cursors: Vec<_> = listings
        .iter()
        .map(|r| r.params.get("cursor").cloned())
        .collect();
    assert_eq!(cursors, [None, Some(json!("p1")), Some(json!("p2"))]);
    assert_eq!(tools.tool_breaker("c").unwrap().agent(), "tools/c");

    // A server whose every page says there is another: the listing stops at 16 pages.
    let endless = stateless(&["a"]).await;
    endless.on_method(
        "tools/list",
        (0..40).map(|i| {
            McpAnswer::result(json!({"tools": [{"name": format!("t{i}"), "inputSchema": {}}], "nextCursor": format!("c{i}")}))
        }),
    );
    let tools = client(&endless);
    tools.tool("t3", json!({})).await;
    assert_eq!(count(&endless, "tools/list"), MAX_PAGES);
    assert_eq!(tools.known_tools().len(), MAX_PAGES);
}

#[tokio::test]
async fn a_listing_is_kept_for_its_ttl() {
    let listing = |ttl: u64| {
        McpAnswer::result(json!({"tools": [{"name": "a", "inputSchema": {}}], "ttlMs": ttl}))
    };
    // An hour: kept across calls, however slow the machine.
    let server = stateless(&["a"]).await;
    server.on_method("tools/list", [listing(3_600_000), listing(3_600_000)]);
    let tools = client(&server);
    for _ in 0..3 {
        tools.tool("a", json!({})).await;
    }
    assert_eq!(count(&server, "tools/list"), 1, "kept within its ttl");
    // A second (the floor): listed again once it has passed.
    let server = stateless(&["a"]).await;
    server.on_method("tools/list", [listing(1000), listing(1000)]);
    let tools = client(&server);
    tools.tool("a", json!({})).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tools.tool("a", json!({})).await;
    assert_eq!(
        count(&server, "tools/list"),
        2,
        "listed again once it passed"
    );
    assert_eq!(count(&server, "server/discover"), 1);
}

#[tokio::test]
async fn a_tool_that_asks_back_without_a_handler_is_its_own_failure_sent_once() {
    let server = stateless(&["search"]).await;
    let asks = || {
        McpAnswer::input_required(
            json!({"confirm": {"method": "elicitation/create", "params": {"message": "sure?"}}}),
            "state-1",
        )
    };
    server.on_tool("search", [asks(), asks(), asks()]);
    let tools = client(&server);
    let outcome = tools.tool("search", json!({"q": "a"})).await;
    assert_eq!(
        outcome,
        ToolOutcome::Failed("the tool asked for input".into())
    );
    assert_eq!(outcome.for_model(), "tool error: the tool asked for input");
    assert_eq!(outcome.degraded_mark(), Some("error"));
    assert_eq!(server.calls_of("search").len(), 1);
    let snapshot = tools.tool_breaker("search").unwrap().snapshot();
    assert_eq!(snapshot.failures, 1, "counted by the tool's breaker");
}

#[tokio::test]
async fn a_handler_answers_a_tool_that_asks_back_within_its_rounds() {
    let server = stateless(&["search"]).await;
    server.on_tool(
        "search",
        [
            McpAnswer::input_required(
                json!({"confirm": {"method": "elicitation/create", "params": {"message": "sure?"}}}),
                "state-1",
            ),
            McpAnswer::text("confirmed"),
        ],
    );
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let tools = builder(server.url())
        .on_input_required(move |requests| {
            seen.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(requests.tool, "search");
                let mut answers = serde_json::Map::new();
                for (key, request) in requests.requests {
                    assert_eq!(request["method"], "elicitation/create");
                    answers.insert(key, json!({"action": "accept", "content": {}}));
                }
                Some(answers)
            }
        })
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("search", json!({"q": "a"})).await,
        ToolOutcome::Answered("confirmed".into())
    );
    let calls = server.calls_of("search");
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id, "sent again under a new id");
    assert_eq!(calls[1].params["arguments"], json!({"q": "a"}));
    assert_eq!(calls[1].params["requestState"], "state-1");
    assert_eq!(
        calls[1].params["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {}}})
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(calls[0].params.get("inputResponses"), None);

    // A server that never stops asking: the tool's failure after the bounded rounds.
    server.on_tool(
        "search",
        (0..10).map(|i| {
            McpAnswer::input_required(
                json!({"k": {"method": "elicitation/create", "params": {}}}),
                &format!("s{i}"),
            )
        }),
    );
    assert_eq!(
        tools.tool("search", json!({"q": "b"})).await,
        ToolOutcome::Failed("the tool asked for input".into())
    );
    assert_eq!(server.calls_of("search").len(), 2 + 1 + MAX_INPUT_ROUNDS);
    assert_eq!(asked.load(Ordering::SeqCst), 1 + MAX_INPUT_ROUNDS);
}

#[tokio::test]
async fn a_session_lost_with_a_400_starts_a_new_session_once() {
    let server = FaultMcp::start(&["search"]).await;
    server.lost_session_status(400);
    let tools = client(&server);
    tools.tool("search", json!({"q": "a"})).await;
    server.restart();
    assert_eq!(
        tools.tool("search", json!({"q": "b"})).await,
        ToolOutcome::Answered("search: b".into())
    );
    assert_eq!(count(&server, "initialize"), 2);
    assert_eq!(server.calls_of("search").len(), 3);
    // The new session's listing, then a session lost again whose new one refuses the request
    // too (400): unavailable, and no third try.
    tools.tool("search", json!({"q": "c"})).await;
    server.restart();
    server.on_tool("search", [McpAnswer::status(400)]);
    assert_eq!(
        tools.tool("search", json!({"q": "d"})).await,
        ToolOutcome::Unavailable(Unavailable::Refused)
    );
    assert_eq!(count(&server, "initialize"), 3);
    assert_eq!(server.calls_of("search").len(), 6);
}

/// The official MCP Python SDK's server (mcp 2.3.0) speaks the stateless revision beside the
/// session-based ones: the client learns it through `server/discover` and calls its tools
/// without a session; its own refusals (a header that disagrees) are read from its 400s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdks_server_is_spoken_to_statelessly() {
    let Some((mut server, port)) = crate::mcp::python_mcp_server() else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    // What a stateless request is, checked by the server itself: its answer to discover.
    let discovered: serde_json::Value = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", "server/discover")
        .header("mcp-protocol-version", "2026-07-28")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        discovered["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{discovered}"
    );
    let tools = builder(&url).build().unwrap();
    assert_eq!(
        tools.tool("mixed", json!({"q": "a"})).await,
        ToolOutcome::Answered("first a\nsecond".into())
    );
    let ToolOutcome::Failed(text) = tools.tool("broken", json!({"q": "a"})).await else {
        panic!("not the tool's own failure");
    };
    assert!(text.contains("broken"), "{text}");
    let mut known = tools.known_tools();
    known.sort();
    assert_eq!(known, ["broken", "mixed"]);
    // A tool it does not have: its own failure, as this server reports it.
    assert!(matches!(
        tools.tool("absent", json!({"q": "a"})).await,
        ToolOutcome::Failed(_)
    ));
    server.kill().await.unwrap();
}

/// The reference server (`@modelcontextprotocol/server-everything` from npm, streamable
/// HTTP): a session-based server, found by its 400 to `server/discover`; after it restarts it
/// answers the lost session with 400, and the client starts a new session once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_is_spoken_to_in_a_session_that_survives_its_restart() {
    let Some(entry) =
        crate::js_interop::package_or_skip("@modelcontextprotocol/server-everything/dist/index.js")
    else {
        return;
    };
    let port = a2a_error_testkit::free_port();
    let start = || {
        tokio::process::Command::new("node")
            .args([entry.as_str(), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let mut server = start();
    crate::common::wait_until_listening(port, Duration::from_secs(30), "the reference MCP server");
    let tools = builder(&format!("http://127.0.0.1:{port}/mcp"))
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("echo", json!({"message": "hi"})).await,
        ToolOutcome::Answered("Echo: hi".into())
    );
    assert!(tools.known_tools().contains(&"echo".to_owned()));
    server.kill().await.unwrap();
    let _ = server.wait().await;
    let mut server = start();
    crate::common::wait_until_listening(port, Duration::from_secs(30), "the reference MCP server");
    assert_eq!(
        tools.tool("echo", json!({"message": "again"})).await,
        ToolOutcome::Answered("Echo: again".into())
    );
    server.kill().await.unwrap();
}

#[tokio::test]
async fn a_discover_answer_that_lists_no_versions_gets_the_session() {
    for odd in [
        json!({"supportedVersions": "2026-07-28"}),
        json!({"supportedVersions": ["2027-01-01"]}),
        json!([1, 2]),
        json!({}),
    ] {
        let server = FaultMcp::start(&["search"]).await;
        server.on_method("server/discover", [McpAnswer::result(odd.clone())]);
        let tools = client(&server);
        assert_eq!(
            tools.tool("search", json!({"q": "a"})).await,
            ToolOutcome::Answered("search: a".into()),
            "{odd}"
        );
        assert_eq!(count(&server, "initialize"), 1, "{odd}");
    }
}

#[tokio::test]
async fn a_stateless_request_left_running_is_cancelled_by_closing_its_connection() {
    let server = stateless(&["slow"]).await;
    server.on_tool("slow", [McpAnswer::hang()]);
    let tools = builder(server.url())
        .attempt_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    assert_eq!(
        tools.tool("slow", json!({"q": "a"})).await,
        ToolOutcome::Unavailable(Unavailable::TimedOut)
    );
    let id = server.calls_of("slow")[0].id.clone().unwrap();
    let waited = tokio::time::Instant::now();
    while server.abandoned().is_empty() && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.abandoned(), [id]);
    // The revision has no notification for it: none sent.
    assert!(server.cancelled().is_empty());
    assert_eq!(
        server.calls_of("slow").len(),
        1,
        "not sent again: it may have run"
    );
}
