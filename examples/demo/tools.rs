//! The demo's ninth scene: tools over MCP. One MCP server (the test kit's `FaultMcp`) with two
//! tools: `lookup` keeps failing until its own circuit opens, while `weather` on the same
//! server is still called; then the server restarts, and its forgotten session costs one new
//! one, not a failed call.

use a2a_error::dependency::mcp::{McpDependency, ToolOutcome};
use a2a_error::resilience::RetryPolicy;
use a2a_error::resilience::breaker::BreakerRegistry;
use a2a_error_testkit::{FaultMcp, McpAnswer};

use crate::timeline::{Kind, Timeline};

fn query(text: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("q".into(), text.into());
    arguments
}

/// How a tool call went, in a line.
fn told(outcome: &ToolOutcome) -> String {
    let degraded = if outcome.is_degraded() {
        " [degraded]"
    } else {
        ""
    };
    format!("the model is told {:?}{degraded}", outcome.for_model())
}

/// The scene.
pub async fn scene(timeline: &Timeline, breakers: &BreakerRegistry) {
    let server = FaultMcp::start(&["lookup", "weather"]).await;
    let failing = McpAnswer::rpc_error(-32603, "pool exhausted at /srv/tools/db.py:88");
    server.on_tool("lookup", std::iter::repeat_n(failing, 10));
    let tools = McpDependency::builder("tools", server.url())
        .breakers(breakers)
        .retry(RetryPolicy::none())
        .build()
        .expect("a valid URL");
    for call in 1..=6 {
        let sent = server.calls_of("lookup").len();
        let outcome = tools.tool("lookup", query("rome")).await;
        let how = if server.calls_of("lookup").len() == sent {
            "circuit open, nothing sent"
        } else {
            "-32603 from the server"
        };
        timeline.push(Kind::Result {
            ok: true,
            text: format!("lookup call {call}: {how} → {}", told(&outcome)),
        });
    }
    let outcome = tools.tool("weather", query("rome")).await;
    timeline.push(Kind::Result {
        ok: true,
        text: format!("weather, same server: {}", told(&outcome)),
    });
    server.restart();
    let outcome = tools.tool("weather", query("rome")).await;
    let sessions = server
        .received()
        .iter()
        .filter(|r| r.method == "initialize")
        .count();
    timeline.push(Kind::Result {
        ok: !outcome.is_degraded(),
        text: format!(
            "after a restart: 404 for the old session, session {sessions} started, {}",
            told(&outcome)
        ),
    });
}
