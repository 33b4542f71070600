//! The `llm_agent` example's MCP contract, second round, from outside (`--mcp URL`): the agent
//! as its own process against the test kit's fake MCP server in each revision (the stateless
//! `2026-07-28`, a session-based one) and a fake model provider, driven by a real HTTP client.

use crate::common::requests::{get_text, rpc, send};
use crate::llm_agent::{agent, degraded, text};
use crate::mcp_revisions::{assert_stateless, count, stateless};
use a2a_error_testkit::{FaultMcp, FaultService, HttpAnswer, McpAnswer};
use serde_json::{Value, json};

/// What the model was last asked.
fn asked(model: &FaultService) -> String {
    let body: Value = serde_json::from_slice(&model.received().last().unwrap().body).unwrap();
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn with_mcp(model: &FaultService, server: &FaultMcp) -> (crate::common::ExampleProcess, String) {
    agent(model.url(), &["--mcp", server.url()])
}

/// The answer was degraded because of the tool, as `how`.
fn tool_mark(reply: &Value) -> &Value {
    &degraded(reply)["tool"]
}

#[tokio::test]
async fn a_stateless_server_gets_no_handshake_and_every_request_its_envelope() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = stateless(&["search", "fetch"]).await;
    let (_agent, url) = with_mcp(&model, &server);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:rust a2a")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(
        asked(&model),
        "tool: search: rust a2a\nuser: mcp:search:rust a2a"
    );
    let reply = rpc(&url, send(2, "m-2", "mcp:fetch:x")).await;
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(
        server.methods(),
        ["server/discover", "tools/list", "tools/call", "tools/call"]
    );
    let received = server.received();
    let discover = &received[0];
    assert!(discover.id.is_some());
    assert_eq!(discover.headers["mcp-method"], "server/discover");
    let accept = discover.headers["accept"].to_str().unwrap();
    assert!(accept.contains("application/json") && accept.contains("text/event-stream"));
    for request in &received {
        assert_stateless(request);
    }
    for (call, name, q) in [
        (&received[2], "search", "rust a2a"),
        (&received[3], "fetch", "x"),
    ] {
        assert_eq!(call.headers["mcp-name"], name);
        let mut params = call.params.as_object().unwrap().clone();
        params.remove("_meta");
        assert_eq!(json!(params), json!({"name": name, "arguments": {"q": q}}));
    }
}

#[tokio::test]
async fn a_server_that_does_not_know_discover_gets_the_session() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    for refusal in [
        McpAnswer::rpc_error(-32601, "method not found"),
        McpAnswer::status(400),
        McpAnswer::status(404),
        McpAnswer::status(405),
    ] {
        let server = FaultMcp::start(&["search"]).await;
        server.on_method("server/discover", [refusal.clone()]);
        let (_agent, url) = with_mcp(&model, &server);
        let reply = rpc(&url, send(1, "m-1", "mcp:search:a")).await;
        assert!(degraded(&reply).is_null(), "{refusal:?}: {reply}");
        assert_eq!(asked(&model), "tool: search: a\nuser: mcp:search:a");
        assert_eq!(
            server.methods(),
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/list",
                "tools/call"
            ],
            "{refusal:?}"
        );
        rpc(&url, send(2, "m-2", "mcp:search:b")).await;
        assert_eq!(count(&server, "server/discover"), 1, "{refusal:?}");
    }
}

#[tokio::test]
async fn an_unsupported_version_is_discovered_again_and_the_call_sent_again_once() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = stateless(&["search"]).await;
    let (_agent, url) = with_mcp(&model, &server);
    rpc(&url, send(1, "m-1", "mcp:search:a")).await;
    server.on_tool(
        "search",
        [McpAnswer::rpc_error(-32022, "Unsupported protocol version").with_status(400)],
    );
    let reply = rpc(&url, send(2, "m-2", "mcp:search:b")).await;
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(asked(&model), "tool: search: b\nuser: mcp:search:b");
    assert_eq!(
        &server.methods()[3..],
        ["tools/call", "server/discover", "tools/call"]
    );
    // The second try fails the same way: unavailable, degraded, and nothing more sent.
    rpc(&url, send(3, "m-3", "mcp:search:c")).await;
    let before = server.methods().len();
    server.on_tool(
        "search",
        [
            McpAnswer::rpc_error(-32022, "no").with_status(400),
            McpAnswer::rpc_error(-32022, "no").with_status(400),
        ],
    );
    let reply = rpc(&url, send(4, "m-4", "mcp:search:d")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(tool_mark(&reply), "unavailable", "{reply}");
    assert_eq!(asked(&model), "tool unavailable\nuser: mcp:search:d");
    assert_eq!(
        &server.methods()[before..],
        ["tools/call", "server/discover", "tools/call"]
    );
}

#[tokio::test]
async fn a_tool_listed_on_a_later_page_is_counted_under_its_own_name() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    for server in [
        stateless(&["search", "fetch"]).await,
        FaultMcp::start(&["search", "fetch"]).await,
    ] {
        server.pages_of(1);
        let (_agent, url) = with_mcp(&model, &server);
        rpc(&url, send(1, "m-1", "mcp:fetch:x")).await;
        let cursors: Vec<_> = server
            .received()
            .into_iter()
            .filter(|r| r.method == "tools/list")
            .map(|r| r.params.get("cursor").cloned())
            .collect();
        assert_eq!(cursors, [None, Some(json!("p1"))]);
        let metrics = get_text(&format!("{url}/metrics")).await;
        assert!(metrics.contains("gen_ai_tool_name=\"fetch\""), "{metrics}");
        assert!(!metrics.contains("gen_ai_tool_name=\"other\""), "{metrics}");
    }
}

#[tokio::test]
async fn a_tool_that_asks_for_input_is_told_as_such_and_not_sent_again() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = stateless(&["search"]).await;
    server.on_tool(
        "search",
        [McpAnswer::input_required(
            json!({"confirm": {"method": "elicitation/create", "params": {"message": "sure?"}}}),
            "s1",
        )],
    );
    let (_agent, url) = with_mcp(&model, &server);
    let reply = rpc(&url, send(1, "m-1", "mcp:search:a")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(tool_mark(&reply), "error", "{reply}");
    assert_eq!(
        asked(&model),
        "tool error: the tool asked for input\nuser: mcp:search:a"
    );
    assert_eq!(server.calls_of("search").len(), 1);
}

#[tokio::test]
async fn a_session_answered_with_400_is_started_again_once() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let server = FaultMcp::start(&["search"]).await;
    server.lost_session_status(400);
    let (_agent, url) = with_mcp(&model, &server);
    rpc(&url, send(1, "m-1", "mcp:search:a")).await;
    server.restart();
    let reply = rpc(&url, send(2, "m-2", "mcp:search:b")).await;
    assert!(degraded(&reply).is_null(), "{reply}");
    assert_eq!(asked(&model), "tool: search: b\nuser: mcp:search:b");
    let methods = server.methods();
    let lost = methods.len() - 5;
    assert_eq!(
        &methods[lost..],
        [
            "tools/call",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    let received = server.received();
    assert_eq!(received[lost].session.as_deref(), Some("s1"));
    assert_eq!(received[lost + 4].session.as_deref(), Some("s2"));

    // The second try answered 400 too: unavailable, degraded, no third session.
    rpc(&url, send(3, "m-3", "mcp:search:c")).await;
    server.restart();
    server.on_tool("search", [McpAnswer::status(400)]);
    let reply = rpc(&url, send(4, "m-4", "mcp:search:d")).await;
    assert_eq!(tool_mark(&reply), "unavailable", "{reply}");
    assert_eq!(asked(&model), "tool unavailable\nuser: mcp:search:d");
    assert_eq!(count(&server, "initialize"), 3);
}

#[tokio::test]
async fn header_and_capability_errors_are_unavailable_and_sent_once() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    for (code, status) in [(-32020, 400), (-32021, 400), (-32020, 200), (-32021, 200)] {
        let server = stateless(&["search"]).await;
        let answer = McpAnswer::rpc_error(code, "/srv/mcp-secret says no").with_status(status);
        server.on_tool("search", [answer.clone(), answer]);
        let (_agent, url) = with_mcp(&model, &server);
        let reply = rpc(&url, send(1, "m-1", "mcp:search:a")).await;
        assert_eq!(text(&reply), "answered", "{reply}");
        assert_eq!(
            tool_mark(&reply),
            "unavailable",
            "{code} in {status}: {reply}"
        );
        assert_eq!(asked(&model), "tool unavailable\nuser: mcp:search:a");
        assert_eq!(server.calls_of("search").len(), 1, "{code} in {status}");
        assert!(!reply.to_string().contains("mcp-secret"), "{reply}");
    }
}
