//! Agents calling agents, over real loopback HTTP: the example coordinator, run as a
//! process, in front of specialists (the example agent, the test kit's fault agent: down,
//! slow) and of other coordinators.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::common::requests::{get_text, rpc, send};
use crate::common::{ExampleProcess, serve, start_example};
use a2a_error::server::{JsonRpc, RequestContext};
use a2a_error::{A2aError, Client, RemoteError, StandardError, code};
use a2a_error_testkit::{Answer, FaultAgent, closed_url};
use serde_json::{Value, json};

/// The example coordinator, as a process, over `agents`.
fn coordinator_over(agents: &[(&str, String)], min_results: usize) -> (ExampleProcess, String) {
    let mut args: Vec<String> = agents
        .iter()
        .flat_map(|(name, url)| ["--agent".to_owned(), format!("{name}={url}")])
        .collect();
    args.extend(["--min-results".to_owned(), min_results.to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    start_example("coordinator", &args)
}

/// A specialist that is down: every call fails with AGENT_UNAVAILABLE, whose text must not
/// leave it.
async fn down_agent() -> FaultAgent {
    let down = Answer::error(code::AGENT_UNAVAILABLE).message("backend warming up (attempt 1)");
    FaultAgent::start(down.into()).await
}

/// How many calls `agent` received for `message_id`.
fn runs(agent: &FaultAgent, message_id: &str) -> usize {
    agent
        .received()
        .iter()
        .filter(|call| call.message_id.as_deref() == Some(message_id))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn fan_out_degrades_with_min_results_and_fails_below_it() {
    let (_healthy, healthy) = start_example("agent", &[]);
    let down = down_agent().await;
    let agents = [
        ("healthy", format!("{healthy}/")),
        ("down", format!("{}/", down.url())),
        ("gone", format!("{}/", closed_url())),
    ];
    let (_one, url) = coordinator_over(&agents, 1);
    let reply = rpc(&format!("{url}/"), send(1, "m-1", "hi")).await;
    let result = &reply["result"];
    assert_eq!(
        result["answered"],
        json!({"healthy": "echo: hi"}),
        "{reply}"
    );
    assert_eq!(
        result["failed"],
        json!({"down": "AGENT_UNAVAILABLE", "gone": "UNREACHABLE"})
    );
    assert_eq!(result["degraded"], true);
    // An A2A Message too, with the same summary in its metadata.
    assert_eq!(result["message"]["parts"][0]["text"], "healthy: echo: hi");
    assert_eq!(result["message"]["metadata"]["degraded"], true);
    // Each specialist was called with a messageId derived from ours and its name, and the
    // one that is down was retried by the default policy (4 attempts).
    assert_eq!(runs(&down, "m-1:down"), 4);

    // Needing two answers, it fails: one DOWNSTREAM_FAILED naming each failed agent.
    let (_two, url) = coordinator_over(&agents, 2);
    let reply = rpc(&format!("{url}/"), send(2, "m-2", "hi")).await;
    let error: a2a_error::ErrorObject = serde_json::from_value(reply["error"].clone()).unwrap();
    assert_eq!(error.code, code::DOWNSTREAM_FAILED, "{reply}");
    assert_eq!(error.domain(), Some("coordinator.example"));
    let failed: Value =
        serde_json::from_str(&error.data_field::<String>("failedAgents").unwrap()).unwrap();
    assert_eq!(
        failed,
        json!({"down": "AGENT_UNAVAILABLE", "gone": "UNREACHABLE"})
    );
    assert_eq!(error.retryable(), Some(false));
    let text = reply.to_string();
    assert!(!text.contains("warming up"), "no downstream text: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_of_three_reports_every_hop_and_the_leaf_sees_one_policy() {
    // top client → a → b → leaf, every client with the default policy (4 attempts).
    let leaf = down_agent().await;
    let (_b, b) = coordinator_over(&[("leaf", format!("{}/", leaf.url()))], 1);
    let (_a, a) = coordinator_over(&[("b", format!("{b}/"))], 1);
    let top = Client::<StandardError>::jsonrpc(format!("{a}/"))
        .build()
        .unwrap();
    let error = top
        .send_message::<_, Value>(&json!({"message": {
            "messageId": "m-chain", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}))
        .await
        .unwrap_err();
    // Without the exhausted marker: 4 × 4 × 4 = 64 attempts at the leaf.
    assert_eq!(runs(&leaf, "m-chain:b:leaf"), 4);
    assert_eq!(leaf.received().len(), 4);
    assert!(!error.retry_advice().is_retryable());
    let remote = error.remote().unwrap();
    assert_eq!(remote.code(), code::DOWNSTREAM_FAILED);
    let hops: Vec<_> = remote
        .chain()
        .map(|hop| (hop.agent.unwrap(), hop.code, hop.reason))
        .collect();
    assert_eq!(
        hops,
        [
            (
                "b".into(),
                code::DOWNSTREAM_FAILED,
                "DOWNSTREAM_FAILED".into()
            ),
            (
                "leaf".into(),
                code::AGENT_UNAVAILABLE,
                "AGENT_UNAVAILABLE".into()
            ),
        ]
    );
    assert_eq!(
        remote.object().metadata_value("retriesExhausted"),
        Some(&json!("true"))
    );
    // Coordinators' domains are their own; the leaf's error text stayed at the leaf.
    assert_eq!(remote.received_domain(), Some("coordinator.example"));
    assert!(
        !remote
            .object()
            .data
            .as_ref()
            .unwrap()
            .to_string()
            .contains("warming")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_breaker_opens_and_fails_fast_with_a_truthful_retry_after() {
    let down = down_agent().await;
    // The coordinator's breakers: open after 5 consecutive failures, for 5 s ± 10 % at first.
    let (_coordinator, url) = coordinator_over(&[("down", format!("{}/", down.url()))], 1);
    let endpoint = format!("{url}/");
    // The first call's 4 attempts fail; the second's first attempt is the fifth failure and
    // trips the circuit, and its next attempt fails fast and ends the call.
    rpc(&endpoint, send(1, "m-1", "hi")).await;
    assert_eq!(runs(&down, "m-1:down"), 4);
    let reply = rpc(&endpoint, send(2, "m-2", "hi")).await;
    assert_eq!(runs(&down, "m-2:down"), 1, "{reply}");
    let health = rpc(
        &endpoint,
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetAgentHealth"}),
    )
    .await;
    let down_health = &health["result"]["down"];
    assert_eq!(down_health["state"], "open", "{health}");
    let left = down_health["timeToHalfOpenMs"].as_u64().unwrap();
    assert!(left > 0 && left <= 5_500, "{left}");
    // The next call is not sent at all, and says when to come back: no later than the
    // breaker said a moment ago.
    let reply = rpc(&endpoint, send(4, "m-3", "hi")).await;
    assert_eq!(runs(&down, "m-3:down"), 0);
    let error: a2a_error::ErrorObject = serde_json::from_value(reply["error"].clone()).unwrap();
    assert_eq!(error.code, code::DOWNSTREAM_FAILED, "{reply}");
    assert_eq!(
        error.metadata_value("downstreamReason"),
        Some(&json!("CIRCUIT_OPEN"))
    );
    let delay = error.retry_after().expect("RetryInfo");
    assert!(
        delay > Duration::ZERO && delay <= Duration::from_millis(left).max(Duration::from_secs(1)),
        "{delay:?} after {left} ms"
    );
}

/// A specialist that takes 10 s: the test kit's fault agent, which records the deadline each
/// call was given and counts the calls dropped before they were answered.
async fn serve_slow() -> FaultAgent {
    let late =
        json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "late"}]}});
    FaultAgent::start(Answer::result(late).after(Duration::from_secs(10))).await
}

/// Whether `slow` was called, and what that call's `A2A-Deadline-Ms` said was left.
fn time_left_ms(slow: &FaultAgent) -> Option<u64> {
    slow.received().first().map(|call| {
        call.deadline
            .map_or(u64::MAX, |left| left.as_millis() as u64)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_callers_deadline_travels_down_the_chain() {
    let slow = serve_slow().await;
    let (_coordinator, coordinator) = coordinator_over(&[("slow", format!("{}/", slow.url()))], 1);
    let top = Client::<RemoteError>::jsonrpc(format!("{coordinator}/"))
        .total_timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let error = top
        .send_message::<_, Value>(&json!({"message": {
            "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "{error:?}");
    // The specialist was given less than our 1.5 s: the coordinator passed on what was left
    // of our deadline, less its margin, without being told to.
    let left = time_left_ms(&slow).unwrap();
    assert!(left > 0 && left < 1500, "{left}");
    // And its work was stopped, not left running for 10 s.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(slow.dropped().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_goes_away_cancels_the_calls_made_for_it() {
    let slow = serve_slow().await;
    let (_coordinator, coordinator) = coordinator_over(&[("slow", format!("{}/", slow.url()))], 1);
    // No deadline anywhere: only the caller leaving can stop the work.
    let request =
        tokio::spawn(async move { rpc(&format!("{coordinator}/"), send(1, "m-1", "hi")).await });
    for _ in 0..100 {
        if time_left_ms(&slow).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(time_left_ms(&slow).unwrap() > 20_000);
    request.abort();
    for _ in 0..100 {
        if slow.dropped().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        slow.dropped().len(),
        1,
        "the specialist's work outlived the caller"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exhausted_deadline_is_deadline_exceeded_before_any_call() {
    let slow = serve_slow().await;
    let (_coordinator, coordinator) = coordinator_over(&[("slow", format!("{}/", slow.url()))], 1);
    // A deadline of 1 ms: gone before the coordinator can call anyone.
    let reply = {
        let response = reqwest::Client::new()
            .post(format!("{coordinator}/"))
            .header("A2A-Deadline-Ms", "1")
            .json(&send(1, "m-1", "hi"))
            .send()
            .await
            .unwrap();
        response.json::<Value>().await.unwrap()
    };
    assert_eq!(reply["error"]["code"], code::DEADLINE_EXCEEDED, "{reply}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(slow.received().is_empty());
}

/// The example binaries, from outside: the coordinator's command-line contract.
#[tokio::test(flavor = "multi_thread")]
async fn the_coordinator_example_keeps_its_contract() {
    let (_ok, ok) = start_example("agent", &[]);
    let (_down, down) = start_example("agent", &["--fail"]);
    let agents = [format!("ok={ok}/"), format!("down={down}/")];
    let start_coordinator = |min_results: &str| {
        start_example(
            "coordinator",
            &[
                "--agent",
                &agents[0],
                "--agent",
                &agents[1],
                "--min-results",
                min_results,
            ],
        )
    };
    let (_coordinator, url) = start_coordinator("1");
    let endpoint = format!("{url}/");
    let reply = rpc(&endpoint, send(1, "m-1", "hello")).await;
    let result = &reply["result"];
    assert_eq!(result["answered"], json!({"ok": "echo: hello"}), "{reply}");
    assert_eq!(result["failed"], json!({"down": "AGENT_UNAVAILABLE"}));
    assert_eq!(result["degraded"], true);
    let health = rpc(
        &endpoint,
        json!({"jsonrpc": "2.0", "id": 2, "method": "GetAgentHealth"}),
    )
    .await;
    assert_eq!(health["result"]["ok"]["state"], "closed", "{health}");
    assert!(health["result"]["down"]["state"].is_string());
    let card: Value =
        serde_json::from_str(&get_text(&format!("{url}/.well-known/agent-card.json")).await)
            .unwrap();
    assert_eq!(card["supportedInterfaces"][0]["url"], endpoint);
    let metrics = get_text(&format!("{url}/metrics")).await;
    // The down agent was retried 3 times, each retry counted with its reason.
    let retries = metrics
        .lines()
        .find(|line| {
            line.starts_with("a2a_client_retries")
                && line.contains("agent=\"down\"")
                && line.contains("AGENT_UNAVAILABLE")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(retries.ends_with(" 3"), "{retries}");
    assert!(
        metrics.contains("a2a_breaker_state{agent=\"ok\"} 0"),
        "{metrics}"
    );

    // Needing both: DOWNSTREAM_FAILED naming the one that failed. Bad arguments: exit 2.
    let (_strict, strict) = start_coordinator("2");
    let reply = rpc(&format!("{strict}/"), send(3, "m-2", "hello")).await;
    assert_eq!(reply["error"]["code"], code::DOWNSTREAM_FAILED, "{reply}");
    assert!(reply.to_string().contains("down"), "{reply}");
    for args in [
        &["--agent", "no-equals-sign"][..],
        &["--agent", &agents[0], "--min-results", "3"][..],
        &[][..],
    ] {
        let status = std::process::Command::new(crate::common::example_exe("coordinator"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_read_is_hedged_over_loopback() {
    use a2a_error::resilience::HedgeDelay;
    let calls = Arc::new(AtomicU64::new(0));
    let seen = calls.clone();
    let endpoint = JsonRpc::new().method("GetTask", move |_: Value, _: RequestContext| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        async move {
            if n == 0 {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            Ok::<_, StandardError>(json!({"id": "t-1", "attempt": n}))
        }
    });
    let url = serve(endpoint.into_router()).await;
    let client = Client::<RemoteError>::jsonrpc(format!("{url}/"))
        .hedge(HedgeDelay::Fixed(Duration::from_millis(100)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let task: Value = client.call("GetTask", &json!({"id": "t-1"})).await.unwrap();
    assert_eq!(task["attempt"], 1, "the hedge answered");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // SendMessage is not a read: never hedged, however slow.
    let sends = Arc::new(AtomicU64::new(0));
    let seen = sends.clone();
    let endpoint = JsonRpc::new().method("SendMessage", move |_: Value, _: RequestContext| {
        seen.fetch_add(1, Ordering::SeqCst);
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, StandardError>(
                json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": []}}),
            )
        }
    });
    let url = serve(endpoint.into_router()).await;
    let client = Client::<RemoteError>::jsonrpc(format!("{url}/"))
        .hedge(HedgeDelay::Fixed(Duration::from_millis(50)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let _: Value = client
        .send_message(&json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(sends.load(Ordering::SeqCst), 1);
}

/// The coordinator, from outside: a caller's W3C trace goes on to the specialists it calls
/// (same trace id, a span of the coordinator's as parent, `tracestate` unchanged); a request
/// without one, or with one that does not read, starts a trace of its own.
#[tokio::test(flavor = "multi_thread")]
async fn the_callers_trace_goes_down_the_chain() {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let reply =
        json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}});
    let specialist = FaultAgent::start(Answer::result(reply)).await;
    let (_coordinator, url) = coordinator_over(&[("s", format!("{}/", specialist.url()))], 1);
    let endpoint = format!("{url}/");
    let http = reqwest::Client::new();
    let post = |n: u64, headers: Vec<(&'static str, String)>| {
        let mut request = http.post(&endpoint).json(&send(n, &format!("m-{n}"), "hi"));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move {
            let reply: Value = request.send().await.unwrap().json().await.unwrap();
            assert!(reply.get("result").is_some(), "{reply}");
        }
    };
    post(
        1,
        vec![
            ("traceparent", PARENT.to_owned()),
            ("tracestate", "congo=t61rcWkgMzE".to_owned()),
        ],
    )
    .await;
    let sent = crate::common::traces_sent(&specialist);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_ne!(sent[0].parent_id(), "00f067aa0ba902b7");
    assert_eq!(sent[0].tracestate(), Some("congo=t61rcWkgMzE"));

    let malformed = [
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    ];
    post(2, vec![]).await;
    for (n, traceparent) in (3..).zip(malformed) {
        post(n, vec![("traceparent", traceparent.to_owned())]).await;
    }
    // 100 KiB of it: ignored too, the request served.
    post(9, vec![("traceparent", "0".repeat(100 << 10))]).await;
    let fresh: Vec<String> = crate::common::traces_sent(&specialist)[1..]
        .iter()
        .map(|context| context.trace_id().to_string())
        .collect();
    assert_eq!(fresh.len(), 6, "{fresh:?}");
    let distinct: std::collections::HashSet<&String> = fresh.iter().collect();
    assert_eq!(distinct.len(), 6, "a trace of its own each time: {fresh:?}");
    assert!(
        !fresh.contains(&"4bf92f3577b34da6a3ce929d0e0e4736".to_owned()),
        "{fresh:?}"
    );
}
