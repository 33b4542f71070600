//! Streamed model calls (`HttpDependency::stream`) against a fake provider on loopback: the
//! opening is the stack's (retried as whole replies are), the stream after it the caller's
//! (a failure ends it, typed, never retried, counted against the breaker).

use std::time::Duration;

use a2a_error::dependency::{
    Failure, HttpCall, HttpDependency, HttpFailure, HttpStream, InBand, Interruption, StreamEvent,
    StreamInterrupted,
};
use a2a_error::resilience::{Classify, RetryPolicy, Timeout};
use a2a_error_testkit::{FaultService, HttpAnswer};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::time::Instant;

/// The request of a streamed chat completion.
fn ask() -> HttpCall {
    let body = json!({"model": "primary", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    HttpCall::post("/chat/completions").json(&body).unwrap()
}

/// A model client of `provider` with quick retries and short stream limits.
fn model(provider: &FaultService) -> HttpDependency {
    HttpDependency::model("primary", provider.url())
        .retry(
            RetryPolicy::default()
                .max_attempts(3)
                .base_delay(Duration::from_millis(20)),
        )
        // Short enough for a quick test, long enough for a busy machine.
        .first_event_timeout(Duration::from_secs(2))
        .idle_timeout(Duration::from_secs(1))
        .build()
        .unwrap()
}

/// The deltas of content events, in order, and how the stream ended.
async fn drain(stream: HttpStream) -> (Vec<String>, Option<StreamInterrupted>) {
    let mut deltas = Vec::new();
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent { data, .. }) => {
                let value: Value = serde_json::from_str(&data).unwrap();
                deltas.push(
                    value["choices"][0]["delta"]["content"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                );
            }
            Err(interrupted) => return (deltas, Some(interrupted)),
        }
    }
    (deltas, None)
}

#[tokio::test]
async fn a_stream_delivers_its_content_events_in_order_and_ends() {
    let provider = FaultService::start(HttpAnswer::completion_stream(&["Hel", "lo", "!"])).await;
    let stream = model(&provider).stream(ask()).await.unwrap();
    let (deltas, ended) = drain(stream).await;
    assert_eq!(deltas, ["Hel", "lo", "!"]);
    assert_eq!(ended, None);
    let received = provider.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].headers["accept"], "text/event-stream");
}

#[tokio::test]
async fn failures_before_the_first_token_are_retried_with_the_providers_delay() {
    let provider = FaultService::start(HttpAnswer::completion_stream(&["ok"])).await;
    provider.then([
        HttpAnswer::status(429).header("retry-after-ms", "300"),
        HttpAnswer::events([r#"event: error"#.to_owned()
            + "\n"
            + r#"data: {"type":"error","error":{"type":"overloaded_error","message":"secret"}}"#]),
    ]);
    let started = Instant::now();
    let stream = model(&provider).stream(ask()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(drain(stream).await, (vec!["ok".to_owned()], None));
    assert_eq!(provider.received().len(), 3);
}

#[tokio::test]
async fn a_first_token_too_late_fails_the_attempt_and_is_retried() {
    let provider = FaultService::start(HttpAnswer::completion_stream(&["on time"])).await;
    provider
        .then([HttpAnswer::completion_stream(&["late"]).pause_before(1, Duration::from_secs(8))]);
    let stream = model(&provider).stream(ask()).await.unwrap();
    assert_eq!(drain(stream).await.0, ["on time"]);
    assert_eq!(provider.received().len(), 2);
    // The late attempt's connection was closed when the attempt gave up on it.
    closed_within(&provider, Duration::from_secs(5), "the late attempt").await;
}

/// Waits until `provider` saw a request dropped unfinished (its connection closed), at most
/// `limit`: generous, so that a busy machine does not fail it.
async fn closed_within(provider: &FaultService, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    while provider.dropped().is_empty() {
        assert!(Instant::now() < deadline, "{what} was never closed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn refusals_before_the_first_token_are_not_retried() {
    for refusal in [
        HttpAnswer::status(400),
        HttpAnswer::events([r#"data: {"error":{"type":"invalid_request_error","message":"bad"}}"#]),
    ] {
        let provider = FaultService::start(HttpAnswer::completion_stream(&["never"])).await;
        provider.then([refusal]);
        let error = model(&provider).stream(ask()).await.unwrap_err();
        assert!(error.is_refusal(), "{error:?}");
        assert_eq!(provider.received().len(), 1);
    }
}

#[tokio::test]
async fn a_stream_cut_after_three_events_is_interrupted_not_retried_and_counted() {
    let provider =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b", "c", "d"]).cut_after(4))
            .await;
    let client = model(&provider);
    let (deltas, ended) = drain(client.stream(ask()).await.unwrap()).await;
    assert_eq!(deltas, ["a", "b", "c"]);
    let ended = ended.expect("interrupted");
    assert_eq!(ended.delivered, 3);
    assert_eq!(ended.cause, Interruption::Closed);
    assert_eq!(provider.received().len(), 1, "never retried after content");
    let failures = client.breaker().unwrap().snapshot().failures;
    assert_eq!(failures, 1, "the interruption counts against the breaker");
}

#[tokio::test]
async fn an_in_band_error_and_a_stall_after_content_interrupt_the_stream() {
    let mut events: Vec<String> = ["a", "b"]
        .iter()
        .map(|delta| {
            format!(
                "data: {}",
                json!({"choices": [{"delta": {"content": delta}}]})
            )
        })
        .collect();
    events.push(r#"data: {"error":{"type":"server_error","message":"internal /srv"}}"#.into());
    let provider = FaultService::start(HttpAnswer::events(&events)).await;
    let (deltas, ended) = drain(model(&provider).stream(ask()).await.unwrap()).await;
    assert_eq!(deltas, ["a", "b"]);
    let ended = ended.unwrap();
    assert_eq!(
        ended.cause,
        Interruption::InBand(InBand::of("server_error"))
    );

    let provider =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b", "c"]).stall_after(3)).await;
    let started = Instant::now();
    let (deltas, ended) = drain(model(&provider).stream(ask()).await.unwrap()).await;
    assert_eq!(deltas, ["a", "b"]);
    assert_eq!(ended.unwrap().cause, Interruption::Idle);
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "the stall outlived the idle limit"
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_providers_connection() {
    let provider =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b"]).stall_after(2)).await;
    let mut stream = model(&provider).stream(ask()).await.unwrap();
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    closed_within(&provider, Duration::from_secs(3), "the stream's connection").await;
}

#[tokio::test]
async fn everything_failing_before_content_ends_in_the_last_attempts_error() {
    let provider = FaultService::start(HttpAnswer::status(503)).await;
    let error = model(&provider).stream(ask()).await.unwrap_err();
    assert!(matches!(error, Failure::Failed(HttpFailure::Status(ref s)) if s.status == 503));
    assert_eq!(provider.received().len(), 3);
    assert!(
        error
            .retry_advice_at(std::time::SystemTime::now())
            .is_retryable()
    );
    let provider = FaultService::start(HttpAnswer::completion_stream(&["x"]).stall_after(1)).await;
    let error = model(&provider).stream(ask()).await.unwrap_err();
    assert!(
        matches!(error, Failure::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
}

/// `Fallback` over streams: a step is left for the next only while nothing was delivered (a
/// stream opens on its first content); the later step's answer is marked degraded, and the
/// primary's error is kept.
#[tokio::test]
async fn a_fallback_over_streams_takes_the_next_model_only_before_content() {
    let primary = FaultService::start(HttpAnswer::status(503)).await;
    let backup = FaultService::start(HttpAnswer::completion_stream(&["from", " backup"])).await;
    let (primary_client, backup_client) = (model(&primary), model(&backup));
    let answered = a2a_error::resilience::Fallback::new("primary", || {
        let client = primary_client.clone();
        async move { client.stream(ask()).await }
    })
    .or_if(
        |error: &a2a_error::dependency::HttpError| !error.is_refusal(),
        "backup",
        || {
            let client = backup_client.clone();
            async move { client.stream(ask()).await }
        },
    )
    .run()
    .await
    .unwrap();
    assert!(answered.is_degraded());
    assert_eq!(answered.step, "backup");
    assert_eq!(drain(answered.value).await.0, ["from", " backup"]);
    assert_eq!(primary.received().len(), 3);
}

/// A model's stream records OpenTelemetry's GenAI series under its configured name: the
/// call's duration, its time to the first chunk, and the tokens the provider reported by type.
#[test]
fn a_models_stream_records_the_gen_ai_series() {
    let snapshot = crate::metrics::with_own_recorder(|snapshotter| async move {
        let provider = FaultService::start(HttpAnswer::completion_stream(&["a", "b", "c"])).await;
        let stream = model(&provider).stream(ask()).await.unwrap();
        assert_eq!(drain(stream).await.0, ["a", "b", "c"]);
        crate::metrics::recorded(&snapshotter)
    });
    let values =
        |name: &str, labels: &[(&str, &str)]| crate::metrics::samples(&snapshot, name, labels);
    let primary = ("dependency", "primary");
    assert_eq!(
        values(
            "gen_ai.client.token.usage",
            &[primary, ("gen_ai.token.type", "input")]
        ),
        [7.0]
    );
    assert_eq!(
        values(
            "gen_ai.client.token.usage",
            &[primary, ("gen_ai.token.type", "output")]
        ),
        [3.0]
    );
    assert_eq!(
        values("gen_ai.client.operation.duration", &[primary]).len(),
        1
    );
    let first = values("gen_ai.client.operation.time_to_first_chunk", &[primary]);
    let whole = values("gen_ai.client.operation.duration", &[primary]);
    assert_eq!(first.len(), 1);
    assert!(first[0] <= whole[0], "{first:?} {whole:?}");
}
