//! The `llm_agent` example from outside: an agent on the official Rust SDK whose executor
//! calls a model provider over HTTP (a fallback model, a search tool), run as its own process
//! on loopback against fake providers the tests start, and driven by a real HTTP client.

use std::time::{Duration, Instant, SystemTime};

use crate::common::ExampleProcess;
use crate::common::requests::{rpc, rpc_with, send};
use a2a_error_testkit::{FaultService, HttpAnswer, closed_url};
use serde_json::{Value, json};

/// Starts the agent on a port of its own choosing (`--addr 127.0.0.1:0`), read from the line
/// it logs once listening: no port can be taken by another test in between.
pub(crate) fn agent(model: &str, more: &[&str]) -> (ExampleProcess, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(crate::common::example_exe("llm_agent"))
        .args(["--addr", "127.0.0.1:0", "--model", model])
        .args(more)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let process = ExampleProcess::from(child);
    let url = loop {
        let line = lines
            .next()
            .expect("the llm_agent example exited before listening")
            .unwrap();
        if let Some(at) = line.find("listening on ") {
            break line[at + "listening on ".len()..].trim().to_owned();
        }
    };
    // Keep reading, so that the agent never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (process, url)
}

/// The answer's text, or a panic with the reply.
pub(crate) fn text(reply: &Value) -> &str {
    reply["result"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not an answer: {reply}"))
}

pub(crate) fn degraded(reply: &Value) -> &Value {
    &reply["result"]["message"]["metadata"]["degraded"]
}

pub(crate) fn reason(reply: &Value) -> &str {
    reply["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

pub(crate) fn retry_delay(reply: &Value) -> Option<&str> {
    reply["error"]["data"]
        .as_array()?
        .iter()
        .find(|detail| detail["@type"] == "type.googleapis.com/google.rpc.RetryInfo")?["retryDelay"]
        .as_str()
}

fn retryable(reply: &Value) -> Option<bool> {
    let metadata = &reply["error"]["data"][0]["metadata"];
    metadata["retryable"].as_str().map(|value| value == "true")
}

/// Nothing of a provider's own text, its address or a Rust type reaches the wire.
fn assert_clean(reply: &Value, providers: &[&FaultService]) {
    let text = reply.to_string();
    for word in [
        "provider-internal-secret",
        "/srv/llm",
        "HttpFailure",
        "reqwest",
        "Failure",
    ] {
        assert!(!text.contains(word), "{word} on the wire: {text}");
    }
    for provider in providers {
        let host = provider.url().trim_start_matches("http://");
        assert!(
            !text.contains(host),
            "a provider's address on the wire: {text}"
        );
    }
}

#[tokio::test]
async fn a_rate_limited_model_is_retried_after_its_delay_and_asked_exactly() {
    let primary = FaultService::start(HttpAnswer::completion("hello back")).await;
    primary.then([HttpAnswer::status(429).header("retry-after", "1")]);
    let (_agent, url) = agent(primary.url(), &[]);
    let started = Instant::now();
    let reply = rpc(&url, send(1, "m-1", "hello")).await;
    assert_eq!(text(&reply), "hello back", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    let received = primary.received();
    assert_eq!(received.len(), 2);
    // The provider's own delay, not the backoff's quarter second.
    assert!(received[1].at - received[0].at >= Duration::from_millis(950));
    assert!(started.elapsed() >= Duration::from_millis(950));
    for request in &received {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path_and_query, "/chat/completions");
        assert_eq!(request.headers["content-type"], "application/json");
        // The bytes of the contract, members in its order.
        assert_eq!(
            std::str::from_utf8(&request.body).unwrap(),
            r#"{"model":"primary","messages":[{"role":"user","content":"hello"}]}"#
        );
    }
}

#[tokio::test]
async fn both_delay_forms_are_honoured_and_retry_after_ms_wins() {
    let primary = FaultService::start(HttpAnswer::completion("ok")).await;
    let (_agent, url) = agent(primary.url(), &[]);
    // An HTTP date three seconds ahead (to the second, as dates are), read here as an instant:
    // the retry must not come before it, however long anything here took.
    let date = SystemTime::now() + Duration::from_secs(3);
    let text_date = httpdate::fmt_http_date(date);
    let not_before = Instant::now()
        + httpdate::parse_http_date(&text_date)
            .unwrap()
            .duration_since(SystemTime::now())
            .unwrap_or_default();
    primary.then([
        HttpAnswer::status(503).header("retry-after", text_date),
        // Both sent: the milliseconds win over the 30 seconds.
        HttpAnswer::status(503)
            .header("retry-after", "30")
            .header("retry-after-ms", "300"),
    ]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "ok", "{reply}");
    let at: Vec<Instant> = primary.received().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 3);
    // Not before the date (a clock read apart, hence the few milliseconds).
    assert!(
        at[1] + Duration::from_millis(20) >= not_before,
        "{:?} early",
        not_before - at[1]
    );
    assert!(
        at[2] - at[1] >= Duration::from_millis(280),
        "{:?}",
        at[2] - at[1]
    );
    assert!(
        at[2] - at[1] < Duration::from_secs(20),
        "{:?}",
        at[2] - at[1]
    );
}

#[tokio::test]
async fn x_should_retry_overrides_the_status_either_way() {
    let primary = FaultService::start(HttpAnswer::completion("retried")).await;
    primary.then([HttpAnswer::status(400).header("x-should-retry", "true")]);
    let (_agent, url) = agent(primary.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "retried", "{reply}");
    assert_eq!(primary.received().len(), 2);

    let refusing =
        FaultService::start(HttpAnswer::status(503).header("x-should-retry", "false")).await;
    let (_agent, url) = agent(refusing.url(), &[]);
    let reply = rpc(&url, send(2, "m-2", "hi")).await;
    assert_eq!(
        refusing.received().len(),
        1,
        "retried against x-should-retry: false"
    );
    assert_eq!(reason(&reply), "MODEL_UNAVAILABLE", "{reply}");
    assert_clean(&reply, &[&refusing]);
}

#[tokio::test]
async fn a_slow_attempt_is_cut_by_the_attempt_timeout_and_retried() {
    let primary = FaultService::start(HttpAnswer::completion("second try")).await;
    primary.then([HttpAnswer::completion("too slow").after(Duration::from_secs(30))]);
    let (_agent, url) = agent(primary.url(), &["--attempt-timeout-ms", "300"]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "second try", "{reply}");
    let received = primary.received();
    assert_eq!(received.len(), 2);
    // The first attempt was given up after its 300 ms, and its request dropped.
    assert!(received[1].at - received[0].at >= Duration::from_millis(290));
    assert_eq!(primary.dropped().len(), 1);
}

#[tokio::test]
async fn an_overloaded_529_is_retried() {
    let primary = FaultService::start(HttpAnswer::completion("after 529")).await;
    primary.then([HttpAnswer::status(529), HttpAnswer::status(529)]);
    let (_agent, url) = agent(primary.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "after 529", "{reply}");
    assert_eq!(primary.received().len(), 3);
}

#[tokio::test]
async fn a_slow_primary_hands_over_within_the_callers_deadline_and_is_not_left_running() {
    let primary =
        FaultService::start(HttpAnswer::completion("too late").after(Duration::from_secs(60)))
            .await;
    let fallback = FaultService::start(HttpAnswer::completion("from the fallback")).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    let started = Instant::now();
    let reply = rpc_with(&url, ("A2A-Deadline-Ms", "4000"), send(1, "m-1", "hi")).await;
    let elapsed = started.elapsed();
    assert_eq!(text(&reply), "from the fallback", "{reply}");
    assert_eq!(degraded(&reply)["step"], "fallback", "{reply}");
    assert!(elapsed < Duration::from_millis(4000), "{elapsed:?}");
    let body: Value = serde_json::from_slice(&fallback.received()[0].body).unwrap();
    assert_eq!(body["model"], "fallback");
    // The primary's request was dropped, by its share of the deadline, not left running.
    let dropped = primary.dropped();
    assert!(
        !dropped.is_empty(),
        "the primary's request is still running"
    );
    assert!(
        dropped
            .iter()
            .all(|at| *at - started < Duration::from_millis(4000))
    );

    // Nothing answers in time: DEADLINE_EXCEEDED, by the deadline, and nothing left running.
    let slow_fallback =
        FaultService::start(HttpAnswer::completion("late").after(Duration::from_secs(60))).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", slow_fallback.url()]);
    let started = Instant::now();
    let reply = rpc_with(&url, ("A2A-Deadline-Ms", "1500"), send(2, "m-2", "hi")).await;
    // By the deadline, counted by the agent from when the request reached it; the margin is
    // the round trip on a busy machine (a run beside a release build took 1,505 ms).
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(reason(&reply), "DEADLINE_EXCEEDED", "{reply}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        slow_fallback.dropped().len(),
        slow_fallback.received().len()
    );
}

#[tokio::test]
async fn a_down_primary_hands_over_to_the_fallback_marked_degraded() {
    let fallback = FaultService::start(HttpAnswer::completion("fallback here")).await;
    let (_agent, url) = agent(&closed_url(), &["--fallback-model", fallback.url()]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "fallback here", "{reply}");
    assert_eq!(
        degraded(&reply),
        &json!({"step": "fallback", "index": 1}),
        "{reply}"
    );
}

#[tokio::test]
async fn a_refusing_primary_is_rejected_and_not_handed_to_the_fallback() {
    for status in [400, 401, 403, 404, 422] {
        let primary = FaultService::start(HttpAnswer::status(status)).await;
        let fallback = FaultService::start(HttpAnswer::completion("never")).await;
        let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
        let reply = rpc(&url, send(1, "m-1", "hi")).await;
        assert_eq!(reason(&reply), "MODEL_REJECTED", "{status}: {reply}");
        // Not retryable: the code's own default, so no `retryable` entry overrides it.
        assert_ne!(retryable(&reply), Some(true), "{reply}");
        assert_eq!(reply["error"]["code"], -32059, "{reply}");
        assert_eq!(retry_delay(&reply), None, "{reply}");
        assert_eq!(primary.received().len(), 1, "{status} was retried");
        assert!(
            fallback.received().is_empty(),
            "{status} went to the fallback"
        );
        assert_clean(&reply, &[&primary, &fallback]);
    }
}

#[tokio::test]
async fn the_tool_is_asked_first_and_its_failure_degrades_the_answer() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let tool = FaultService::start(HttpAnswer::json(200, json!({"result": "42 results"}))).await;
    let (_agent, url) = agent(model.url(), &["--tool", tool.url()]);
    let reply = rpc(&url, send(1, "m-1", "search:rust a2a&more")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    let asked = &tool.received()[0];
    assert_eq!(asked.method, "GET");
    assert_eq!(asked.path_and_query, "/search?q=rust%20a2a%26more");
    let body: Value = serde_json::from_slice(&model.received()[0].body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "tool: 42 results\nuser: search:rust a2a&more"
    );

    let (_agent, url) = agent(model.url(), &["--tool", &closed_url()]);
    let reply = rpc(&url, send(2, "m-2", "search:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(degraded(&reply)["tool"], "unavailable", "{reply}");
    let body: Value = serde_json::from_slice(&model.received().last().unwrap().body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "tool unavailable\nuser: search:q"
    );
}

#[tokio::test]
async fn the_tools_circuit_opens_and_the_agent_still_answers() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    let tool = FaultService::start(HttpAnswer::status(500)).await;
    let (_agent, url) = agent(model.url(), &["--tool", tool.url()]);
    for i in 0..3 {
        let reply = rpc(&url, send(i, &format!("m-{i}"), "search:q")).await;
        assert_eq!(text(&reply), "answered", "{reply}");
        assert_eq!(degraded(&reply)["tool"], "unavailable", "{reply}");
    }
    // Five failures in a row open the circuit: the third call's tool was not asked at all.
    let asked = tool.received().len();
    assert!((5..8).contains(&asked), "{asked}");
    let metrics = crate::common::requests::get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains("a2a_breaker_state{agent=\"tool\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn everything_down_is_model_unavailable_with_the_soonest_delay() {
    let primary = FaultService::start(HttpAnswer::status(429).header("retry-after", "120")).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", &closed_url()]);
    let reply = rpc_with(&url, ("A2A-Deadline-Ms", "5000"), send(1, "m-1", "hi")).await;
    assert_eq!(reason(&reply), "MODEL_UNAVAILABLE", "{reply}");
    assert_eq!(retry_delay(&reply), Some("120s"), "{reply}");
    assert_clean(&reply, &[&primary]);

    // No delay from anyone: retryable, without RetryInfo.
    let (_agent, url) = agent(&closed_url(), &["--fallback-model", &closed_url()]);
    let reply = rpc(&url, send(2, "m-2", "hi")).await;
    assert_eq!(reason(&reply), "MODEL_UNAVAILABLE", "{reply}");
    assert_eq!(retry_delay(&reply), None, "{reply}");
    assert_ne!(retryable(&reply), Some(false), "{reply}");

    // Once the primary's circuit is open, the same answer carries the time until it half-opens.
    let (_agent, url) = agent(&closed_url(), &[]);
    let mut delays = Vec::new();
    for i in 0..3 {
        let reply = rpc(&url, send(i, &format!("m-{i}"), "hi")).await;
        assert_eq!(reason(&reply), "MODEL_UNAVAILABLE", "{reply}");
        delays.push(retry_delay(&reply).map(str::to_owned));
    }
    assert!(delays.last().unwrap().is_some(), "{delays:?}");
}

#[tokio::test]
async fn a_reply_over_the_limit_is_the_models_failure() {
    let huge = "x".repeat((32 << 20) + 1024);
    let primary = FaultService::start(HttpAnswer::completion(&huge)).await;
    let fallback = FaultService::start(HttpAnswer::completion("small")).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "small", "{reply}");
    assert_eq!(
        primary.received().len(),
        1,
        "an oversized reply is not asked for again"
    );
}

#[tokio::test]
async fn metrics_have_series_per_dependency() {
    let primary = FaultService::start(HttpAnswer::completion("ok")).await;
    primary.then([HttpAnswer::status(503)]);
    let fallback = FaultService::start(HttpAnswer::completion("ok")).await;
    let tool = FaultService::start(HttpAnswer::json(200, json!({"result": "r"}))).await;
    let (_agent, url) = agent(
        primary.url(),
        &[
            "--fallback-model",
            fallback.url(),
            "--tool",
            tool.url(),
            "--attempt-timeout-ms",
            "5000",
        ],
    );
    let reply = rpc(&url, send(1, "m-1", "search:x")).await;
    assert_eq!(text(&reply), "ok", "{reply}");
    let metrics = crate::common::requests::get_text(&format!("{url}/metrics")).await;
    for series in [
        "a2a_dependency_calls{dependency=\"primary\",outcome=\"ok\"",
        "a2a_dependency_calls{dependency=\"tool\",outcome=\"ok\"",
        "a2a_dependency_retries{dependency=\"primary\",error_type=\"SERVER_ERROR\"} 1",
        "a2a_dependency_attempts",
        "a2a_breaker_state{agent=\"primary\"} 0",
        "a2a_breaker_state{agent=\"fallback\"} 0",
        "a2a_breaker_state{agent=\"tool\"} 0",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    // Model calls are not counted as calls to agents.
    assert!(!metrics.contains("a2a_client_retries"), "{metrics}");
}

/// A model call made for a request carries the request's W3C trace on.
#[tokio::test]
async fn the_callers_trace_reaches_the_model() {
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let model = FaultService::start(HttpAnswer::completion("hello")).await;
    let (_agent, url) = agent(model.url(), &[]);
    let reply = rpc_with(&url, ("traceparent", PARENT), send(1, "m-1", "hi")).await;
    assert!(reply.get("result").is_some(), "{reply}");
    let received = model.received();
    let sent = received[0].headers["traceparent"].to_str().unwrap();
    let sent = a2a_error::trace::TraceContext::parse(sent.as_bytes(), None).unwrap();
    assert_eq!(
        sent.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_ne!(sent.parent_id(), "00f067aa0ba902b7");
}

/// A reply under the 32 MiB limit whose JSON is mostly numbers: the shape that costs the
/// most when parsed into a `serde_json::Value` (17 times its size in resident memory).
fn padded(mut head: String, bytes: usize) -> HttpAnswer {
    head.push_str(",\"padding\":[0");
    while head.len() < bytes {
        head.push_str(",0");
    }
    head.push_str("]}");
    let mut reply = HttpAnswer::json(200, json!({}));
    reply.body = head.into_bytes();
    reply
}

#[tokio::test]
async fn a_reply_under_the_limit_costs_its_size_not_seventeen_times_it() {
    let model = FaultService::start(padded(
        r#"{"choices":[{"message":{"role":"assistant","content":"answered"}}]"#.to_owned(),
        30 << 20,
    ))
    .await;
    let tool = FaultService::start(padded(r#"{"result":"found""#.to_owned(), 30 << 20)).await;
    let (agent, url) = agent(model.url(), &["--tool", tool.url()]);
    let before = agent.peak_rss();
    let reply = rpc(&url, send(2, "m-1", "search:q")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    let body: Value = serde_json::from_slice(&model.received()[0].body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "tool: found\nuser: search:q"
    );
    // Two 30 MiB replies read in turn: each is held as its bytes while read and parsed, and
    // parsed into the fields the agent uses only. As `serde_json::Value` trees they grew the
    // peak by about 510 MiB.
    let grown = agent.peak_rss().saturating_sub(before);
    eprintln!("peak grew {} MiB", grown >> 20);
    assert!(grown <= 128 << 20, "peak grew {} MiB", grown >> 20);
}

/// A spent quota, as the providers and the gateways in front of them say it.
fn quota_replies() -> Vec<(&'static str, HttpAnswer)> {
    let openai = json!({"error": {
        "message": "You exceeded your current quota, see /srv/billing-secret",
        "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}});
    let budget = json!({"error": {"message": "Budget has been exceeded! /srv/budget-secret",
        "type": "budget_exceeded"}});
    vec![
        ("429 insufficient_quota", HttpAnswer::json(429, openai)),
        (
            "402",
            HttpAnswer::json(402, json!({"error": "payment required /srv/secret"})),
        ),
        ("412 budget_exceeded", HttpAnswer::json(412, budget.clone())),
        ("422 budget_exceeded", HttpAnswer::json(422, budget)),
        (
            "403 quota",
            HttpAnswer::json(
                403,
                json!({"message": "Out of call volume quota /srv/secret"}),
            ),
        ),
    ]
}

#[tokio::test]
async fn a_spent_quota_is_sent_once_and_the_fallback_answers() {
    for (what, spent) in quota_replies() {
        let primary = FaultService::start(spent).await;
        let fallback = FaultService::start(HttpAnswer::completion("from the fallback")).await;
        let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
        let reply = rpc(&url, send(1, "m-1", "hi")).await;
        assert_eq!(text(&reply), "from the fallback", "{what}: {reply}");
        assert_eq!(degraded(&reply)["step"], "fallback", "{what}: {reply}");
        assert_eq!(primary.received().len(), 1, "{what}: not retried");
        assert!(!reply.to_string().contains("secret"), "{what}: {reply}");
    }
}

#[tokio::test]
async fn a_spent_quota_without_a_fallback_is_passed_on_as_the_quota_not_retryable() {
    for (what, spent) in quota_replies() {
        let primary = FaultService::start(spent).await;
        let (_agent, url) = agent(primary.url(), &[]);
        let reply = rpc(&url, send(1, "m-1", "hi")).await;
        assert_eq!(reason(&reply), "MODEL_QUOTA_EXHAUSTED", "{what}: {reply}");
        assert_eq!(reply["error"]["code"], -32063, "{what}: {reply}");
        assert_ne!(retryable(&reply), Some(true), "{what}: {reply}");
        assert_eq!(retry_delay(&reply), None, "{what}: {reply}");
        assert_eq!(primary.received().len(), 1, "{what}: not retried");
        let wire = reply.to_string();
        assert!(
            !wire.contains("secret") && !wire.contains("exceeded"),
            "{what}: {wire}"
        );
    }
    // A renewal the provider names is passed on as the time to wait.
    let dated = HttpAnswer::json(402, json!({})).header("retry-after", "120");
    let primary = FaultService::start(dated).await;
    let (_agent, url) = agent(primary.url(), &[]);
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(reason(&reply), "MODEL_QUOTA_EXHAUSTED", "{reply}");
    assert_eq!(retry_delay(&reply), Some("120s"), "{reply}");
    assert_eq!(primary.received().len(), 1);
}
