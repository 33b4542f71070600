//! The `llm_agent` example's quota contract from outside, in one process (issue 70's first
//! part): a model's stated rate-limit headers pace its calls; a fake model provider states
//! them, the agent runs as its own process, a real HTTP client drives it.

use std::time::{Duration, Instant};

use crate::common::requests::{get_text, rpc, rpc_with, send};
use crate::llm_agent::{agent, degraded, reason, retry_delay, text};
use a2a_error_testkit::{FaultService, HttpAnswer};

/// An answer whose headers say the model has nothing left until `reset`, in each format.
fn exhausted(format: &str, reset_secs: u64) -> HttpAnswer {
    let answer = HttpAnswer::completion("answered");
    match format {
        "openai" => answer
            .header("x-ratelimit-remaining-requests", "0")
            .header("x-ratelimit-reset-requests", format!("{reset_secs}s")),
        "openai-tokens" => answer.header("x-ratelimit-remaining-tokens", "10").header(
            "x-ratelimit-reset-tokens",
            format!("{}m0s", reset_secs / 60),
        ),
        "anthropic" => {
            // RFC 3339, as Anthropic writes it.
            let at = chrono::Utc::now() + Duration::from_secs(reset_secs);
            answer
                .header("anthropic-ratelimit-requests-remaining", "0")
                .header("anthropic-ratelimit-requests-reset", at.to_rfc3339())
        }
        "ietf" => answer.header("ratelimit", format!("\"default\";r=0;t={reset_secs}")),
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn a_model_with_nothing_left_gets_no_request_and_the_caller_is_told_when() {
    for format in ["openai", "openai-tokens", "anthropic", "ietf"] {
        let model = FaultService::start(HttpAnswer::completion("answered")).await;
        model.then([exhausted(format, 120)]);
        let (_agent, url) = agent(model.url(), &[]);
        let reply = rpc(&url, send(1, "m-1", "hi")).await;
        assert_eq!(text(&reply), "answered", "{format}: {reply}");
        // The reset is after the caller's deadline: refused at once, nothing sent.
        let reply = rpc_with(&url, ("A2A-Deadline-Ms", "3000"), send(2, "m-2", "hi")).await;
        assert_eq!(reason(&reply), "RATE_LIMITED", "{format}: {reply}");
        assert_eq!(reply["error"]["code"], -32052, "{format}: {reply}");
        let delay = retry_delay(&reply).unwrap_or_else(|| panic!("{format}: {reply}"));
        let secs: u64 = delay
            .trim_end_matches('s')
            .parse()
            .unwrap_or_else(|_| panic!("{format}: whole seconds: {delay}"));
        assert!((110..=120).contains(&secs), "{format}: {delay}");
        assert_eq!(
            model.received().len(),
            1,
            "{format}: the model got no request"
        );
        let metrics = get_text(&format!("{url}/metrics")).await;
        assert!(
            metrics.contains(
                "a2a_dependency_quota_held{dependency=\"primary\",outcome=\"refused\"} 1"
            ),
            "{format}: {metrics}"
        );
    }
}

#[tokio::test]
async fn a_reset_within_the_deadline_is_waited_for_and_the_call_then_sent() {
    let model = FaultService::start(HttpAnswer::completion("after the reset")).await;
    model.then([exhausted("openai", 2)]);
    let (_agent, url) = agent(model.url(), &[]);
    // Before the reply that states the quota: its reset is two seconds after that reply.
    let stated = Instant::now();
    rpc(&url, send(1, "m-1", "hi")).await;
    let reply = rpc(&url, send(2, "m-2", "hi")).await;
    assert_eq!(text(&reply), "after the reset", "{reply}");
    assert!(degraded(&reply).is_null(), "{reply}");
    let received = model.received();
    assert_eq!(received.len(), 2);
    // Not before the reset (the wait can only be longer on a busy machine).
    assert!(
        stated.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        stated.elapsed()
    );
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains("a2a_dependency_quota_held{dependency=\"primary\",outcome=\"waited\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn with_a_fallback_an_exhausted_model_is_skipped_at_once() {
    let primary = FaultService::start(HttpAnswer::completion("from the primary")).await;
    primary.then([exhausted("openai", 2)]);
    let fallback = FaultService::start(HttpAnswer::completion("from the fallback")).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    rpc(&url, send(1, "m-1", "hi")).await;
    let reply = rpc(&url, send(2, "m-2", "hi")).await;
    assert_eq!(text(&reply), "from the fallback", "{reply}");
    assert_eq!(degraded(&reply)["step"], "fallback", "{reply}");
    // Neither sent nor waited for (a wait would have sent it after the two seconds).
    assert_eq!(primary.received().len(), 1, "the primary got no request");
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains(
            "a2a_dependency_quota_remaining{dependency=\"primary\",limit=\"requests\"} 0"
        ),
        "{metrics}"
    );
    // Tokens were never stated: no series, rather than one reading 0.
    assert!(!metrics.contains("limit=\"tokens\""), "{metrics}");
}

#[tokio::test]
async fn the_estimate_uses_the_expected_output_tokens() {
    // 300 tokens left: room for a small call expecting 100 tokens, not for one expecting 400.
    let stated = || {
        HttpAnswer::completion("answered")
            .header("x-ratelimit-remaining-tokens", "300")
            .header("x-ratelimit-reset-tokens", "2m0s")
    };
    for (expected, sent) in [("100", 2), ("400", 1)] {
        let model = FaultService::start(stated()).await;
        let (_agent, url) = agent(model.url(), &["--expected-output-tokens", expected]);
        rpc(&url, send(1, "m-1", "hi")).await;
        let reply = rpc_with(&url, ("A2A-Deadline-Ms", "3000"), send(2, "m-2", "hi")).await;
        assert_eq!(
            model.received().len(),
            sent,
            "expecting {expected}: {reply}"
        );
    }
}

#[tokio::test]
async fn replicas_on_one_redis_keep_one_quota_per_model() {
    let Some(redis) = crate::common::redis_server("the shared model quota") else {
        return;
    };
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    model.then([exhausted("openai", 120)]);
    let (_a, url_a) = agent(model.url(), &["--redis", &redis.url]);
    let (_b, url_b) = agent(model.url(), &["--redis", &redis.url]);
    // Replica A learns that the model has nothing left for two minutes.
    let reply = rpc(&url_a, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    // Replica B's first call after it is not sent to the model (the statement is written on
    // a task of its own: it is in Redis within moments).
    let waited = Instant::now();
    let mut stored = redis.command(&["HGET", "a2a-quota:primary", "r"]).unwrap();
    while stored.trim() != "0" && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        stored = redis.command(&["HGET", "a2a-quota:primary", "r"]).unwrap();
    }
    let reply = rpc_with(&url_b, ("A2A-Deadline-Ms", "3000"), send(2, "m-2", "hi")).await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    assert_eq!(
        model.received().len(),
        1,
        "replica B sent the model nothing"
    );
    // The key expires with the statement's reset.
    let ttl = redis.command(&["PTTL", "a2a-quota:primary"]).unwrap();
    let ttl: i64 = ttl
        .split_whitespace()
        .last()
        .and_then(|ms| ms.trim_start_matches(':').parse().ok())
        .unwrap_or_else(|| panic!("PTTL: {ttl:?}"));
    assert!((100_000..=120_000).contains(&ttl), "{ttl}");
}

#[tokio::test]
async fn a_replica_whose_redis_is_down_goes_on_with_its_own_view() {
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    model.then([exhausted("openai", 120)]);
    let down = a2a_error_testkit::closed_url().replace("http://", "redis://");
    let (_agent, url) = agent(model.url(), &["--redis", &down]);
    let started = Instant::now();
    let reply = rpc(&url, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    // Its own view still holds the model back.
    let reply = rpc_with(&url, ("A2A-Deadline-Ms", "3000"), send(2, "m-2", "hi")).await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    assert_eq!(model.received().len(), 1);
    // Bounded by the store's 50 ms read, not by Redis (generous for a busy machine).
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains("a2a_dependency_quota_shared_unavailable"),
        "{metrics}"
    );
}

/// A completion whose `usage` reports `total` tokens (a third of them the prompt's).
fn used(text: &str, total: u64) -> HttpAnswer {
    HttpAnswer::json(
        200,
        serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": total / 3, "completion_tokens": total - total / 3,
                      "total_tokens": total}
        }),
    )
}

/// The reply of caller `credential` (none: anonymous) to `text` over JSON-RPC.
async fn as_caller(url: &str, credential: Option<&str>, id: u64, text: &str) -> serde_json::Value {
    let message = send(id, &format!("m-{id}"), text);
    match credential {
        Some(credential) => rpc_with(url, ("Authorization", credential), message).await,
        None => rpc(url, message).await,
    }
}

#[tokio::test]
async fn a_caller_over_its_budget_gets_rate_limited_and_the_others_are_served() {
    let model = FaultService::start(used("answered", 60)).await;
    let (_agent, url) = agent(
        model.url(),
        &[
            "--caller-tokens-per-minute",
            "100",
            "--expected-output-tokens",
            "1",
        ],
    );
    // 60 used, then 120: the second call was admitted under the budget.
    for id in 1..=2 {
        let reply = as_caller(&url, Some("Bearer alice"), id, "hi").await;
        assert_eq!(text(&reply), "answered", "{reply}");
    }
    // Over it, however the scheme is spelled: refused, with no model request.
    for (id, credential) in [(3, "Bearer alice"), (4, "BEARER   alice")] {
        let reply = as_caller(&url, Some(credential), id, "hi").await;
        assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
        assert_eq!(reply["error"]["code"], -32052, "{reply}");
        let delay = retry_delay(&reply).unwrap_or_else(|| panic!("{reply}"));
        let secs: u64 = delay.trim_end_matches('s').parse().unwrap();
        assert!((1..=60).contains(&secs), "{delay}");
        assert!(!reply.to_string().contains("alice"), "{reply}");
    }
    assert_eq!(model.received().len(), 2, "the refused calls sent nothing");
    // Another credential, and a caller without one (its address), are served.
    let reply = as_caller(&url, Some("Bearer bob"), 5, "hi").await;
    assert_eq!(text(&reply), "answered", "{reply}");
    let reply = as_caller(&url, None, 6, "hi").await;
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(model.received().len(), 4);
    // The anonymous caller has a budget of its own (by its address): 120 used, then refused.
    let reply = as_caller(&url, None, 7, "hi").await;
    assert_eq!(text(&reply), "answered", "{reply}");
    let reply = as_caller(&url, None, 8, "hi").await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    assert_eq!(model.received().len(), 5);
    // REST: 429 with Retry-After and the IETF fields.
    let refused = reqwest::Client::new()
        .post(format!("{url}/message:send"))
        .header("Authorization", "Bearer alice")
        .json(
            &serde_json::json!({"message": {"messageId": "m-rest", "role": "ROLE_USER",
                                              "parts": [{"text": "hi"}]}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    let header = |name: &str| {
        refused
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    };
    let retry_after: u64 = header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(
        header("ratelimit").as_deref(),
        Some(format!("\"tokens\";r=0;t={retry_after}").as_str())
    );
    assert_eq!(
        header("ratelimit-policy").as_deref(),
        Some("\"tokens\";q=100;w=60")
    );
    assert_eq!(model.received().len(), 5);
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains("a2a_dependency_budget_refused{dependency=\"primary\"} 4"),
        "{metrics}"
    );
    assert!(!metrics.contains("alice"), "no caller in a label");
}

#[tokio::test]
async fn the_budget_is_across_both_models_and_counts_what_the_usage_says() {
    // Each reply reports 30 tokens: the estimate (the body's bytes / 4 plus 256 expected)
    // would have refused the second call, the usage does not.
    let primary = FaultService::start(used("from the primary", 30)).await;
    primary.then(vec![HttpAnswer::status(503); 8]);
    let fallback = FaultService::start(used("from the fallback", 30)).await;
    let (_agent, url) = agent(
        primary.url(),
        &[
            "--fallback-model",
            fallback.url(),
            "--caller-tokens-per-minute",
            "300",
        ],
    );
    let mut answered = 0;
    for id in 1..=12 {
        let reply = as_caller(&url, Some("Bearer carol"), id, "hi").await;
        if reply["error"]["data"][0]["reason"] == "RATE_LIMITED" {
            break;
        }
        assert!(!text(&reply).is_empty(), "{reply}");
        answered += 1;
    }
    // 30 a call, whichever model answered: the tenth brings it to 300.
    assert_eq!(answered, 10, "calls served before the budget was used");
    assert!(
        !fallback.received().is_empty(),
        "the fallback answered some"
    );
    let sent = primary.received().len() + fallback.received().len();
    let reply = as_caller(&url, Some("Bearer carol"), 20, "hi").await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    assert_eq!(
        primary.received().len() + fallback.received().len(),
        sent,
        "neither model got a request"
    );
}

#[tokio::test]
async fn a_streamed_answers_usage_counts_against_its_caller() {
    let usage = |input: u64, output: u64| {
        HttpAnswer::events([
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"}}]}".to_owned(),
            format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{input},\"completion_tokens\":{output}}}}}"
            ),
            "data: [DONE]".to_owned(),
        ])
    };
    let model = FaultService::start(used("answered", 1)).await;
    model.then([usage(50, 60), usage(2, 3)]);
    let (_agent, url) = agent(
        model.url(),
        &[
            "--caller-tokens-per-minute",
            "100",
            "--expected-output-tokens",
            "1",
        ],
    );
    // Dave's stream used 110; Erin's 5 (each estimated at well under 100).
    for credential in ["Bearer dave", "Bearer erin"] {
        let streamed =
            crate::llm_stream::stream(&url, "hi", &[("Authorization", credential)]).await;
        assert!(!streamed.events().is_empty(), "{streamed:?}");
    }
    // The usage is counted as the stream ends: within moments of its last event.
    let waited = Instant::now();
    let mut reply = as_caller(&url, Some("Bearer dave"), 1, "hi").await;
    while reply["error"]["data"][0]["reason"] != "RATE_LIMITED"
        && waited.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        reply = as_caller(&url, Some("Bearer dave"), 1, "hi").await;
    }
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    let reply = as_caller(&url, Some("Bearer erin"), 2, "hi").await;
    assert_eq!(text(&reply), "answered", "{reply}");
}

#[tokio::test]
async fn replicas_on_one_redis_keep_one_budget_per_caller() {
    let Some(redis) = crate::common::redis_server("the shared caller budget") else {
        return;
    };
    let model = FaultService::start(used("answered", 60)).await;
    let flags = [
        "--redis",
        &redis.url,
        "--caller-tokens-per-minute",
        "100",
        "--expected-output-tokens",
        "1",
    ];
    let (_a, url_a) = agent(model.url(), &flags);
    let (_b, url_b) = agent(model.url(), &flags);
    for id in 1..=2 {
        let reply = as_caller(&url_a, Some("Bearer frank"), id, "hi").await;
        assert_eq!(text(&reply), "answered", "{reply}");
    }
    // The usage is written off the calls' path: in Redis within moments.
    let sum = || -> u64 {
        let keys = redis
            .command(&["KEYS", "a2a-quota:budget:*"])
            .unwrap_or_default();
        keys.split_whitespace()
            .filter(|key| key.starts_with("a2a-quota:budget:"))
            .filter_map(|key| redis.command(&["GET", key]).ok())
            .filter_map(|count| count.trim().parse::<i64>().ok())
            .sum::<i64>()
            .max(0) as u64
    };
    let waited = Instant::now();
    while sum() < 120 && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sum(), 120);
    let reply = as_caller(&url_b, Some("Bearer frank"), 3, "hi").await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    assert_eq!(
        model.received().len(),
        2,
        "replica B sent the model nothing"
    );
    let reply = as_caller(&url_b, Some("Bearer grace"), 4, "hi").await;
    assert_eq!(text(&reply), "answered", "{reply}");
    // Each key expires with the window (a slot after it leaves it).
    let keys = redis.command(&["KEYS", "a2a-quota:budget:*"]).unwrap();
    for key in keys
        .split_whitespace()
        .filter(|key| key.starts_with("a2a-quota:budget:"))
    {
        let ttl = redis.command(&["PTTL", key]).unwrap();
        let ttl: i64 = ttl.trim().trim_start_matches(':').parse().unwrap();
        assert!((0..=65_000).contains(&ttl), "{key}: {ttl}");
    }
}

#[tokio::test]
async fn replicas_on_one_redis_count_each_others_calls_in_flight() {
    let Some(redis) = crate::common::redis_server("the replicas' calls in flight") else {
        return;
    };
    // 500 tokens left for a minute; a call is estimated at its body's bytes / 4 plus 280.
    let room = |tokens: &str| {
        HttpAnswer::completion("answered")
            .header("x-ratelimit-remaining-tokens", tokens)
            .header("x-ratelimit-reset-tokens", "1m0s")
    };
    let model = FaultService::start(HttpAnswer::completion("answered")).await;
    model.then([
        room("500"),
        // Replica A's call: in flight for two seconds.
        room("200").after(Duration::from_secs(2)),
    ]);
    let flags = ["--redis", &redis.url, "--expected-output-tokens", "280"];
    let (_a, url_a) = agent(model.url(), &flags);
    let (_b, url_b) = agent(model.url(), &flags);
    let reply = rpc(&url_a, send(1, "m-1", "hi")).await;
    assert_eq!(text(&reply), "answered", "{reply}");
    // The statement reaches Redis off the call's path.
    let waited = Instant::now();
    while redis
        .command(&["HGET", "a2a-quota:primary", "t"])
        .unwrap()
        .trim()
        != "500"
        && waited.elapsed() < Duration::from_secs(5)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Replica A's second call goes out (room for one) and stays in flight...
    let in_flight = tokio::spawn({
        let url_a = url_a.clone();
        async move { rpc(&url_a, send(2, "m-2", "hi")).await }
    });
    let waited = Instant::now();
    while model.received().len() < 2 && waited.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(model.received().len(), 2);
    // ...so replica B, seeing it in flight, has no room: refused unsent (the reset is after
    // its deadline). Without the count it would have sent a third request.
    let reply = rpc_with(&url_b, ("A2A-Deadline-Ms", "1500"), send(3, "m-3", "hi")).await;
    assert_eq!(reason(&reply), "RATE_LIMITED", "{reply}");
    let reply = in_flight.await.unwrap();
    assert_eq!(text(&reply), "answered", "{reply}");
    assert_eq!(
        model.received().len(),
        2,
        "replica B sent the model nothing"
    );
    // Counted out once its reply was read: the count goes back to none.
    let waited = Instant::now();
    let mut count = String::new();
    while waited.elapsed() < Duration::from_secs(5) {
        count = redis
            .command(&["ZCARD", "a2a-quota:primary:flight"])
            .unwrap();
        if count.trim().trim_start_matches(':') == "0" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        count.trim().trim_start_matches(':'),
        "0",
        "calls in flight after every reply"
    );
}
