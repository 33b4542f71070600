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
