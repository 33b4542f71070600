//! The `llm_agent` example's streaming contract from outside: SendStreamingMessage against
//! fake streaming providers the tests start, read by a real HTTP client as SSE.

use std::time::{Duration, Instant};

use crate::common::requests::{card, events, get_text};
use crate::llm_agent::agent;
use a2a_error_testkit::{FaultService, HttpAnswer};
use serde_json::{Value, json};

/// The streaming call of `text`, at JSON-RPC `POST /`.
fn stream_call(text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": {
        "messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}}})
}

/// What a streaming call got: an ordinary JSON-RPC reply (an error before any event), or the
/// events of a stream.
#[derive(Debug)]
pub(crate) enum Streamed {
    Reply(Value),
    Events(Vec<Value>),
}

impl Streamed {
    /// The stream's events (each JSON-RPC response's `result`), or a panic.
    pub(crate) fn events(&self) -> &[Value] {
        match self {
            Streamed::Events(events) => events,
            Streamed::Reply(reply) => panic!("not a stream: {reply}"),
        }
    }

    /// The ordinary reply's error, or a panic.
    fn error(&self) -> &Value {
        match self {
            Streamed::Reply(reply) => &reply["error"],
            Streamed::Events(events) => panic!("not an error reply: {events:?}"),
        }
    }
}

/// Sends the streaming call of `text` with `headers`, and reads its whole answer.
pub(crate) async fn stream(url: &str, text: &str, headers: &[(&str, &str)]) -> Streamed {
    let mut request = reqwest::Client::new()
        .post(format!("{url}/"))
        .json(&stream_call(text));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = response.text().await.unwrap();
    assert_clean(&body);
    if content_type.starts_with("application/json") {
        return Streamed::Reply(serde_json::from_str(&body).unwrap());
    }
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let events = events(&body)
        .into_iter()
        .map(|(name, data)| {
            assert_eq!(name, "message", "no error events: {body}");
            data["result"].clone()
        })
        .collect();
    Streamed::Events(events)
}

/// No provider text, URL or Rust type name on the wire.
fn assert_clean(body: &str) {
    for word in [
        "provider-internal-secret",
        "127.0.0.1",
        "HttpFailure",
        "Interrupted {",
        "reqwest",
    ] {
        assert!(!body.contains(word), "{word} on the wire: {body}");
    }
}

/// The artifact updates' texts, checked to be one artifact, the first not appended and the
/// rest appended.
fn artifact_texts(events: &[Value]) -> Vec<String> {
    let updates: Vec<&Value> = events
        .iter()
        .filter_map(|event| event.get("artifactUpdate"))
        .collect();
    for (at, update) in updates.iter().enumerate() {
        assert_eq!(
            update["artifact"]["artifactId"], updates[0]["artifact"]["artifactId"],
            "one artifact: {update}"
        );
        let append = update["append"].as_bool().unwrap_or(false);
        assert_eq!(append, at > 0, "{update}");
    }
    updates
        .iter()
        .map(|update| {
            update["artifact"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The final status update: the last event, a status update.
fn last_status(events: &[Value]) -> &Value {
    let last = events.last().expect("no event");
    let update = &last["statusUpdate"];
    assert!(
        update.is_object(),
        "the last event is a status update: {events:?}"
    );
    update
}

/// The stream's first event is its Task (SUBMITTED, with the caller's message), and every
/// later event names the same task.
fn assert_opens_with_task(events: &[Value]) {
    let task = &events[0]["task"];
    assert!(task.is_object(), "the first event is the Task: {events:?}");
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{task}");
    assert_eq!(task["history"][0]["role"], "ROLE_USER", "{task}");
    for event in &events[1..] {
        let about = event["artifactUpdate"]["taskId"]
            .as_str()
            .or(event["statusUpdate"]["taskId"].as_str());
        assert_eq!(about, task["id"].as_str(), "{event}");
    }
}

/// The value of the first series of `metrics` whose line starts with `name{` and has every
/// label of `labels`.
fn series(metrics: &str, name: &str, labels: &[&str]) -> Option<f64> {
    metrics
        .lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// The cause a FAILED status update carries, after checking its state.
fn failed_cause(events: &[Value]) -> &Value {
    let status = &last_status(events)["status"];
    assert_eq!(status["state"], "TASK_STATE_FAILED", "{status}");
    &status["message"]["metadata"]["error"]
}

#[tokio::test]
async fn tokens_arrive_as_one_appended_artifact_and_the_task_completes() {
    let deltas = ["Hel", "lo", ", wor", "ld"];
    let model = FaultService::start(HttpAnswer::completion_stream(&deltas)).await;
    let (_agent, url) = agent(model.url(), &[]);
    assert_eq!(card(&url).await["capabilities"]["streaming"], true);

    let streamed = stream(&url, "hello", &[]).await;
    let sent = streamed.events();
    assert_eq!(artifact_texts(sent), deltas, "{sent:?}");
    // A2A: the stream begins with the Task (the caller's message, SUBMITTED), then the
    // tokens, then the final status.
    assert_opens_with_task(sent);
    assert_eq!(sent.len(), deltas.len() + 2, "{sent:?}");
    let completed = last_status(sent);
    assert_eq!(completed["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(completed["metadata"]["degraded"].is_null(), "{completed}");

    let received = model.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path_and_query, "/chat/completions");
    assert_eq!(received[0].headers["accept"], "text/event-stream");
    assert_eq!(
        std::str::from_utf8(&received[0].body).unwrap(),
        r#"{"model":"primary","messages":[{"role":"user","content":"hello"}],"stream":true,"stream_options":{"include_usage":true}}"#
    );

    // REST: the same events at `POST /message:stream`.
    let response = reqwest::Client::new()
        .post(format!("{url}/message:stream"))
        .json(&json!({"message": {"messageId": "r-1", "role": "ROLE_USER",
            "parts": [{"text": "hello"}]}}))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let events: Vec<Value> = events(&body).into_iter().map(|(_, data)| data).collect();
    assert_eq!(artifact_texts(&events), deltas, "{body}");
    assert_opens_with_task(&events);
    assert_eq!(
        last_status(&events)["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // The GenAI series, by dependency; the tokens as the provider counted them (7 in, one a
    // delta out, per answer: two answers).
    let metrics = get_text(&format!("{url}/metrics")).await;
    for series in [
        "gen_ai_client_operation_duration_bucket{dependency=\"primary\"",
        "gen_ai_client_operation_time_to_first_chunk_bucket{dependency=\"primary\"",
        "gen_ai_client_operation_time_per_output_chunk_bucket{dependency=\"primary\"",
    ] {
        assert!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    let tokens = |kind: &str| -> f64 {
        metrics
            .lines()
            .filter(|line| {
                line.starts_with("gen_ai_client_token_usage_sum{")
                    && line.contains("dependency=\"primary\"")
                    && line.contains(&format!("gen_ai_token_type=\"{kind}\""))
            })
            .map(|line| line.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(tokens("input"), 14.0, "{metrics}");
    assert_eq!(tokens("output"), 8.0, "{metrics}");
}

#[tokio::test]
async fn a_rate_limited_or_overloaded_opening_is_retried_after_its_delay() {
    let model = FaultService::start(HttpAnswer::completion_stream(&["ok"])).await;
    model.then([
        HttpAnswer::status(429).header("retry-after", "1"),
        HttpAnswer::status(503).header("retry-after-ms", "300"),
        // Anthropic's overloaded error, in band, before the first token.
        HttpAnswer::events([
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"provider-internal-secret\"}}",
        ]),
    ]);
    let (_agent, url) = agent(model.url(), &[]);
    let streamed = stream(&url, "hi", &[]).await;
    assert_eq!(artifact_texts(streamed.events()), ["ok"]);
    let at: Vec<Instant> = model.received().iter().map(|r| r.at).collect();
    assert_eq!(at.len(), 4);
    assert!(
        at[1] - at[0] >= Duration::from_millis(950),
        "Retry-After: 1"
    );
    assert!(
        at[2] - at[1] >= Duration::from_millis(280),
        "retry-after-ms: 300"
    );

    // `Retry-After` as an HTTP date, two seconds ahead (to the second, as dates are): the
    // retry does not come before it.
    let date = std::time::SystemTime::now() + Duration::from_secs(2);
    let text_date = httpdate::fmt_http_date(date);
    let not_before = Instant::now()
        + httpdate::parse_http_date(&text_date)
            .unwrap()
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
    model.then([HttpAnswer::status(503).header("retry-after", text_date)]);
    let streamed = stream(&url, "again", &[]).await;
    assert_eq!(artifact_texts(streamed.events()), ["ok"]);
    let last = model.received().last().unwrap().at;
    assert!(last >= not_before, "retried before the date");
}

#[tokio::test]
async fn a_first_token_too_late_fails_the_attempt_which_is_retried() {
    let late = HttpAnswer::completion_stream(&["late"]).pause_before(1, Duration::from_secs(5));
    let model = FaultService::start(HttpAnswer::completion_stream(&["on time"])).await;
    model.then([late]);
    let (_agent, url) = agent(model.url(), &["--first-token-timeout-ms", "400"]);
    let streamed = stream(&url, "hi", &[]).await;
    assert_eq!(artifact_texts(streamed.events()), ["on time"]);
    assert_eq!(model.received().len(), 2);
    // The late attempt's connection was closed, not left open (the model server sees it
    // closed a moment later on a busy machine).
    wait_for(|| model.dropped().first().copied()).await;
}

#[tokio::test]
async fn a_stream_cut_after_three_tokens_fails_with_what_was_sent_standing() {
    let fallback = FaultService::start(HttpAnswer::completion_stream(&["never"])).await;
    // The role event, then three tokens, then the connection closes.
    let model =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b", "c", "d"]).cut_after(4))
            .await;
    let (_agent, url) = agent(model.url(), &["--fallback-model", fallback.url()]);
    let streamed = stream(&url, "hi", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["a", "b", "c"]);
    let cause = failed_cause(events);
    assert_eq!(cause["code"], -32062, "{cause}");
    assert_eq!(cause["reason"], "MODEL_STREAM_INTERRUPTED");
    assert_eq!(cause["retryable"], true);
    // No second model call for the message.
    assert_eq!(model.received().len(), 1);
    assert!(fallback.received().is_empty());
}

#[tokio::test]
async fn an_in_band_error_mid_stream_fails_the_task() {
    let model = FaultService::start(HttpAnswer::events([
        r#"data: {"choices":[{"delta":{"content":"part"}}]}"#,
        r#"data: {"error":{"type":"server_error","message":"provider-internal-secret"}}"#,
    ]))
    .await;
    let (_agent, url) = agent(model.url(), &[]);
    let streamed = stream(&url, "hi", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["part"]);
    assert_eq!(failed_cause(events)["reason"], "MODEL_STREAM_INTERRUPTED");
    assert_eq!(model.received().len(), 1);
}

#[tokio::test]
async fn a_silent_model_is_cut_at_the_idle_timeout() {
    let model =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b"]).stall_after(2)).await;
    let (_agent, url) = agent(model.url(), &["--idle-timeout-ms", "500"]);
    let started = Instant::now();
    let streamed = stream(&url, "hi", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["a"]);
    assert_eq!(failed_cause(events)["reason"], "MODEL_STREAM_INTERRUPTED");
    assert!(started.elapsed() >= Duration::from_millis(500));
    // The connection to the silent model is closed (seen by the model server a moment
    // later on a busy machine).
    wait_for(|| model.dropped().first().copied()).await;
}

#[tokio::test]
async fn a_refusal_is_rejected_before_any_event_and_not_handed_over() {
    let fallback = FaultService::start(HttpAnswer::completion_stream(&["never"])).await;
    let model = FaultService::start(HttpAnswer::status(400)).await;
    let (_agent, url) = agent(model.url(), &["--fallback-model", fallback.url()]);
    let error = stream(&url, "hi", &[]).await.error().clone();
    assert_eq!(error["data"][0]["reason"], "MODEL_REJECTED", "{error}");
    // Not retryable (the code's own default, so no marker) and no RetryInfo.
    assert_ne!(error["data"][0]["metadata"]["retryable"], "true", "{error}");
    assert_eq!(error["data"].as_array().unwrap().len(), 1, "{error}");
    assert!(fallback.received().is_empty());

    // In band, before the first token, too.
    let model = FaultService::start(HttpAnswer::events([
        r#"data: {"error":{"type":"invalid_request_error","message":"provider-internal-secret"}}"#,
    ]))
    .await;
    let (_agent, url) = agent(model.url(), &["--fallback-model", fallback.url()]);
    let error = stream(&url, "hi", &[]).await.error().clone();
    assert_eq!(error["data"][0]["reason"], "MODEL_REJECTED", "{error}");
    assert_eq!(model.received().len(), 1);
    assert!(fallback.received().is_empty());
}

#[tokio::test]
async fn a_down_primary_is_replaced_and_the_answer_marked_degraded() {
    let primary = FaultService::start(HttpAnswer::status(503)).await;
    let fallback = FaultService::start(HttpAnswer::completion_stream(&["from", " fallback"])).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    let streamed = stream(&url, "hi", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["from", " fallback"]);
    let completed = last_status(events);
    assert_eq!(completed["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        completed["metadata"]["degraded"],
        json!({"step": "fallback", "index": 1}),
        "{completed}"
    );
    assert!(
        std::str::from_utf8(&fallback.received()[0].body)
            .unwrap()
            .starts_with(r#"{"model":"fallback","#)
    );
    let metrics = get_text(&format!("{url}/metrics")).await;
    assert!(
        metrics.contains("gen_ai_client_operation_duration_bucket{dependency=\"fallback\""),
        "{metrics}"
    );
}

#[tokio::test]
async fn everything_down_is_model_unavailable_before_any_event() {
    let primary = FaultService::start(HttpAnswer::status(503).header("retry-after", "2")).await;
    let fallback = FaultService::start(HttpAnswer::status(503).header("retry-after", "3")).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    let error = stream(&url, "hi", &[]).await.error().clone();
    assert_eq!(error["data"][0]["reason"], "MODEL_UNAVAILABLE", "{error}");
    let delay = error["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|detail| detail["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
        .map(|detail| detail["retryDelay"].clone());
    assert!(delay.is_some(), "RetryInfo: {error}");
}

#[tokio::test]
async fn the_caller_leaving_closes_the_models_connection() {
    let model =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b"]).stall_after(2)).await;
    let (_agent, url) = agent(model.url(), &[]);
    let mut response = reqwest::Client::new()
        .post(format!("{url}/"))
        .json(&stream_call("hi"))
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("artifactUpdate") {
        let chunk = response
            .chunk()
            .await
            .unwrap()
            .expect("the stream ended early");
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(model.dropped().is_empty(), "still streaming");
    let left = Instant::now();
    drop(response);
    let closed = wait_for(|| model.dropped().first().copied()).await;
    // A second of the contract, and one more for a busy machine.
    assert!(
        closed - left <= Duration::from_secs(2),
        "{:?}",
        closed - left
    );
}

#[tokio::test]
async fn the_callers_deadline_bounds_the_whole_stream() {
    let model =
        FaultService::start(HttpAnswer::completion_stream(&["a", "b"]).stall_after(2)).await;
    let (_agent, url) = agent(model.url(), &[]);
    let started = Instant::now();
    let streamed = stream(&url, "hi", &[("A2A-Deadline-Ms", "1500")]).await;
    let ended = started.elapsed();
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["a"]);
    assert_eq!(failed_cause(events)["reason"], "DEADLINE_EXCEEDED");
    // The deadline, half a second of the contract, and a second for a busy machine.
    assert!(ended <= Duration::from_millis(3000), "{ended:?}");
    let closed = wait_for(|| model.dropped().first().copied()).await;
    assert!(closed - started <= Duration::from_millis(3000));

    // Nothing sent by the deadline: an ordinary error reply.
    let model = FaultService::start(
        HttpAnswer::completion_stream(&["late"]).pause_before(1, Duration::from_secs(30)),
    )
    .await;
    let (_agent, url) = agent(model.url(), &[]);
    let error = stream(&url, "hi", &[("A2A-Deadline-Ms", "800")])
        .await
        .error()
        .clone();
    assert_eq!(error["data"][0]["reason"], "DEADLINE_EXCEEDED", "{error}");
}

/// Waits (up to 10 s) for `probe` to give a value.
async fn wait_for<T>(probe: impl Fn() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < until, "waited 10 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn rest_errors_before_any_event_are_the_calls_status() {
    let model = FaultService::start(HttpAnswer::status(401)).await;
    let (_agent, url) = agent(model.url(), &[]);
    let response = reqwest::Client::new()
        .post(format!("{url}/message:stream"))
        .json(&json!({"message": {"messageId": "r-1", "role": "ROLE_USER",
            "parts": [{"text": "hi"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "MODEL_REJECTED",
        "{body}"
    );
    assert_clean(&body.to_string());
}

#[tokio::test]
async fn an_event_over_a_mebibyte_fails_the_attempt_before_the_first_token_and_the_stream_after() {
    let huge = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}\"}}}}]}}",
        "x".repeat((1 << 20) + 16)
    );
    // Before the first token: the attempt fails, and the retry answers.
    let model = FaultService::start(HttpAnswer::completion_stream(&["fine"])).await;
    model.then([HttpAnswer::events([huge.clone()])]);
    let (_agent, url) = agent(model.url(), &[]);
    let streamed = stream(&url, "hi", &[]).await;
    assert_eq!(artifact_texts(streamed.events()), ["fine"]);
    assert_eq!(model.received().len(), 2);

    // After it: the stream fails, what was sent stands, no second call.
    let model = FaultService::start(HttpAnswer::events([
        r#"data: {"choices":[{"delta":{"content":"a"}}]}"#.to_owned(),
        huge,
    ]))
    .await;
    let (_agent, url) = agent(model.url(), &[]);
    let streamed = stream(&url, "hi", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["a"]);
    assert_eq!(failed_cause(events)["reason"], "MODEL_STREAM_INTERRUPTED");
    assert_eq!(model.received().len(), 1);
}

#[tokio::test]
async fn a_tool_that_is_down_marks_the_streamed_answer_degraded() {
    let model = FaultService::start(HttpAnswer::completion_stream(&["without it"])).await;
    let tool = a2a_error_testkit::closed_url();
    let (_agent, url) = agent(model.url(), &["--tool", &tool]);
    let streamed = stream(&url, "search:rome", &[]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["without it"]);
    let completed = last_status(events);
    assert_eq!(completed["status"]["state"], "TASK_STATE_COMPLETED");
    // The unary answer's mark, in the final status update.
    assert_eq!(
        completed["metadata"]["degraded"],
        json!({"step": "primary", "index": 0, "tool": "unavailable"}),
        "{completed}"
    );
    let body: Value = serde_json::from_slice(&model.received()[0].body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "tool unavailable\nuser: search:rome"
    );
}

/// A model's answer that grows past what the task store keeps of a task: the stream does not
/// end with an error event in its middle but with the FAILED status that names the cause, on
/// both bindings, and the stored task is FAILED too; the server's series count it failed.
#[tokio::test]
async fn a_stream_past_the_task_stores_bound_ends_failed_with_its_cause() {
    // 24 tokens of 900 KB (each under the 1 MiB event bound, 21 MB in all, under the 32 MiB
    // reply bound): past the store's 16 MiB a task of the example's 64 MiB store.
    let token = "x".repeat(900_000);
    let event = format!(r#"data: {{"choices":[{{"delta":{{"content":"{token}"}}}}]}}"#);
    let model = FaultService::start(HttpAnswer::events(vec![event; 24])).await;
    let (_agent, url) = agent(model.url(), &[]);
    let streamed = stream(&url, "grow", &[]).await;
    let events = streamed.events();
    assert_opens_with_task(events);
    let sent = artifact_texts(events).len();
    assert!((1..24).contains(&sent), "{sent} tokens sent");
    let cause = failed_cause(events);
    assert_eq!(cause["reason"], "CONTENT_TOO_LARGE", "{cause}");
    assert_eq!(cause["code"], -32055, "{cause}");
    // The task as stored ended FAILED with the same cause.
    let task_id = events[0]["task"]["id"].as_str().unwrap();
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask",
        "params": {"id": task_id, "historyLength": 0}});
    let reply = crate::common::requests::rpc(&format!("{url}/"), get).await;
    assert_eq!(
        reply["result"]["status"]["state"], "TASK_STATE_FAILED",
        "{}",
        reply["result"]["status"]
    );

    // REST: the same.
    let message = json!({"message": {"messageId": "r-grow", "role": "ROLE_USER",
        "parts": [{"text": "grow"}]}});
    let (_, _, body) =
        crate::common::requests::post_raw(&format!("{url}/message:stream"), message.to_string())
            .await;
    let named: Vec<(String, Value)> = crate::common::requests::events(&body);
    assert!(
        named.iter().all(|(name, _)| name == "message"),
        "no error event"
    );
    let events: Vec<Value> = named.into_iter().map(|(_, data)| data).collect();
    assert_opens_with_task(&events);
    assert_eq!(failed_cause(&events)["reason"], "CONTENT_TOO_LARGE");

    // The server's series: both streams failed with the code, to their end.
    let metrics = get_text(&format!("{url}/metrics")).await;
    for system in ["jsonrpc", "http"] {
        let failed = series(
            &metrics,
            "rpc_server_call_duration_count",
            &[
                "rpc_method=\"SendStreamingMessage\"",
                "outcome=\"error\"",
                "rpc_status_code=\"-32055\"",
                &format!("rpc_system_name=\"{system}\""),
            ],
        );
        assert_eq!(failed, Some(1.0), "{system}:\n{metrics}");
    }
    let counted = series(
        &metrics,
        "a2a_server_errors",
        &[
            "rpc_method=\"SendStreamingMessage\"",
            "rpc_status_code=\"-32055\"",
        ],
    );
    assert_eq!(counted, Some(2.0), "{metrics}");
}

/// A stream that fails before its first token (an ordinary error reply) and one that ends
/// FAILED after it are recorded as failed, with their codes and their whole duration; a
/// stream that completes as `ok`.
#[tokio::test]
async fn the_servers_series_count_a_stream_by_how_it_ended() {
    let model = FaultService::start(HttpAnswer::status(400)).await;
    let (_agent, url) = agent(model.url(), &[]);
    let error = stream(&url, "hi", &[]).await.error().clone();
    assert_eq!(error["data"][0]["reason"], "MODEL_REJECTED", "{error}");
    let metrics = get_text(&format!("{url}/metrics")).await;
    let rejected = [
        "rpc_method=\"SendStreamingMessage\"",
        "outcome=\"error\"",
        "error_type=\"MODEL_REJECTED\"",
    ];
    assert_eq!(
        series(&metrics, "rpc_server_call_duration_count", &rejected),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        series(
            &metrics,
            "a2a_server_errors",
            &[
                "rpc_method=\"SendStreamingMessage\"",
                "error_type=\"MODEL_REJECTED\""
            ]
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        series(
            &metrics,
            "rpc_server_call_duration_count",
            &["rpc_method=\"SendStreamingMessage\"", "outcome=\"ok\""]
        ),
        None,
        "{metrics}"
    );

    // Cut after its first tokens, 300 ms apart: FAILED, MODEL_STREAM_INTERRUPTED, and the
    // duration runs to the end (at least the 0.6 s the tokens took), not to the headers.
    let model = FaultService::start(
        HttpAnswer::completion_stream(&["a", "b", "c", "d"])
            .cut_after(4)
            .pause_before(2, Duration::from_millis(300))
            .pause_before(3, Duration::from_millis(300)),
    )
    .await;
    let (_agent, url) = agent(model.url(), &[]);
    let events = stream(&url, "hi", &[]).await;
    assert_eq!(
        failed_cause(events.events())["reason"],
        "MODEL_STREAM_INTERRUPTED"
    );
    let metrics = get_text(&format!("{url}/metrics")).await;
    let cut = [
        "rpc_method=\"SendStreamingMessage\"",
        "outcome=\"error\"",
        "error_type=\"MODEL_STREAM_INTERRUPTED\"",
    ];
    assert_eq!(
        series(&metrics, "rpc_server_call_duration_count", &cut),
        Some(1.0),
        "{metrics}"
    );
    let seconds = series(&metrics, "rpc_server_call_duration_sum", &cut).unwrap();
    assert!(seconds >= 0.6, "{seconds} s: {metrics}");
}

/// A primary slower to its first token than the caller's deadline: cut at its share of the
/// deadline, and the fallback answers within it, marked degraded.
#[tokio::test]
async fn a_slow_first_token_falls_back_within_the_callers_deadline() {
    let slow = HttpAnswer::completion_stream(&["late"]).pause_before(1, Duration::from_secs(8));
    let primary = FaultService::start(slow).await;
    let fallback = FaultService::start(HttpAnswer::completion_stream(&["in time"])).await;
    let (_agent, url) = agent(
        primary.url(),
        &[
            "--fallback-model",
            fallback.url(),
            "--first-token-timeout-ms",
            "5000",
        ],
    );
    // Past its deadline the stream would end DEADLINE_EXCEEDED: the fallback's answer is
    // the proof that it came within it.
    let streamed = stream(&url, "hi", &[("A2A-Deadline-Ms", "3000")]).await;
    let events = streamed.events();
    assert_eq!(artifact_texts(events), ["in time"]);
    let completed = last_status(events);
    assert_eq!(completed["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        completed["metadata"]["degraded"]["step"], "fallback",
        "{completed}"
    );
    assert_eq!(fallback.received().len(), 1);
}

/// The official Python client (a2a-sdk 1.3.0) reads the streamed answer on both bindings:
/// the Task first, the tokens, then COMPLETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_client_reads_a_streamed_answer() {
    let Some(python) = crate::python_interop::python_or_skip("a2a.client") else {
        return;
    };
    let deltas = ["Hel", "lo", "!"];
    let model = FaultService::start(HttpAnswer::completion_stream(&deltas)).await;
    let (_agent, url) = agent(model.url(), &[]);
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let seen = crate::python_interop::run_script(
            &python,
            "python_stream_client.py",
            &[&url, binding, "hi"],
        )
        .await;
        assert_eq!(
            seen["kinds"],
            json!([
                "task",
                "artifact_update",
                "artifact_update",
                "artifact_update",
                "status_update"
            ]),
            "{binding}: {seen}"
        );
        assert!(seen["task"].is_string(), "{binding}: {seen}");
        assert_eq!(seen["text"], "Hello!", "{binding}: {seen}");
        // TASK_STATE_COMPLETED in the protocol's enum.
        assert_eq!(seen["last_state"], 3, "{binding}: {seen}");
        assert!(seen.get("error").is_none(), "{binding}: {seen}");
    }
}

/// The text of a task's artifact (its parts joined) and how many parts it has.
fn artifact_of(task: &Value) -> (String, usize) {
    let parts = task["artifacts"][0]["parts"].as_array().cloned();
    let parts = parts.unwrap_or_default();
    let text = parts
        .iter()
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    (text, parts.len())
}

/// A long answer (3,000 tokens): its caller receives every token as an event of its own, in
/// order, while the task gets them joined, a few appends in all rather than one a token (the
/// SDK's handler copies the whole task for each: what made an answer's cost quadratic). A
/// reader that subscribes in the middle gets the task as it stands and then the same text in
/// joined appends; the task as stored holds the whole answer in a few parts; no mark of the
/// bridge's reaches any of them.
#[tokio::test]
async fn a_long_answer_reaches_its_caller_token_by_token_and_its_task_joined() {
    let deltas: Vec<String> = (0..3000).map(|i| format!("t{i} ")).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let whole: String = deltas.concat();
    // A pause after half the tokens (the role event is the model's first), in which a second
    // reader subscribes.
    let answer = HttpAnswer::completion_stream(&refs).pause_before(1501, Duration::from_secs(2));
    let model = FaultService::start(answer).await;
    let (_agent, url) = agent(model.url(), &[]);

    let mut response = reqwest::Client::new()
        .post(format!("{url}/"))
        .json(&stream_call("long"))
        .send()
        .await
        .unwrap();
    let mut body = String::new();
    while !body.contains("\n\n") {
        let chunk = response.chunk().await.unwrap().expect("the first event");
        body.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let first = &events(&body)[0].1["result"];
    let task_id = first["task"]["id"].as_str().unwrap().to_owned();
    // The second reader, while the answer is paused at its half.
    let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask",
        "params": {"id": task_id}});
    let following = tokio::spawn({
        let url = url.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let (status, _, body) =
                crate::common::requests::post_raw(&format!("{url}/"), subscribe.to_string()).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    });
    while let Some(chunk) = response.chunk().await.unwrap() {
        body.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_clean(&body);
    assert!(!body.contains("a2a-error"), "no mark of the bridge's");
    let sent: Vec<Value> = events(&body)
        .into_iter()
        .map(|(name, data)| {
            assert_eq!(name, "message");
            data["result"].clone()
        })
        .collect();
    assert_opens_with_task(&sent);
    // Every token its own event, in order, then COMPLETED.
    assert_eq!(artifact_texts(&sent), deltas);
    assert_eq!(sent.len(), deltas.len() + 2);
    assert_eq!(
        last_status(&sent)["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // The subscriber: the task as it stood, then joined appends, the same text in all.
    let followed = following.await.unwrap();
    assert!(!followed.contains("a2a-error"), "no mark of the bridge's");
    let followed: Vec<Value> = events(&followed)
        .into_iter()
        .map(|(_, data)| data["result"].clone())
        .collect();
    let (mut text, _) = artifact_of(&followed[0]["task"]);
    let appends: Vec<&Value> = followed
        .iter()
        .filter_map(|event| event.get("artifactUpdate"))
        .collect();
    for update in &appends {
        assert_eq!(update["append"], true, "{update}");
        for part in update["artifact"]["parts"].as_array().unwrap() {
            text.push_str(part["text"].as_str().unwrap());
        }
    }
    assert!(
        (1..=12).contains(&appends.len()),
        "{} appends for 1,500 tokens",
        appends.len()
    );
    assert_eq!(text, whole);
    assert_eq!(
        last_status(&followed)["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // The task as stored: the whole answer in a few parts (15 KB: about log2(15 KB / 1 KiB)
    // doublings, the pause's, the end's).
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask",
        "params": {"id": task_id, "historyLength": 0}});
    let task = crate::common::requests::rpc(&format!("{url}/"), get).await;
    let (text, parts) = artifact_of(&task["result"]);
    assert_eq!(text, whole);
    assert!((2..=16).contains(&parts), "{parts} parts");
}

#[tokio::test]
async fn a_streamed_answer_is_paced_by_the_models_stated_quota() {
    // The first answer says no request is left for two minutes.
    let model = FaultService::start(HttpAnswer::completion_stream(&["ok"])).await;
    model.then([HttpAnswer::completion_stream(&["first"])
        .header("x-ratelimit-remaining-requests", "0")
        .header("x-ratelimit-reset-requests", "2m0s")]);
    let (_agent, url) = agent(model.url(), &[]);
    assert_eq!(
        artifact_texts(stream(&url, "hi", &[]).await.events()),
        ["first"]
    );
    let streamed = stream(&url, "hi", &[("A2A-Deadline-Ms", "3000")]).await;
    let error = streamed.error();
    assert_eq!(error["code"], -32052, "{error}");
    assert_eq!(error["data"][0]["reason"], "RATE_LIMITED", "{error}");
    assert_eq!(model.received().len(), 1, "the model got no second request");

    // With a fallback, the fallback answers at once.
    let primary = FaultService::start(HttpAnswer::completion_stream(&["primary"])).await;
    primary.then([HttpAnswer::completion_stream(&["first"])
        .header("x-ratelimit-remaining-requests", "0")
        .header("x-ratelimit-reset-requests", "2m0s")]);
    let fallback = FaultService::start(HttpAnswer::completion_stream(&["fallback"])).await;
    let (_agent, url) = agent(primary.url(), &["--fallback-model", fallback.url()]);
    stream(&url, "hi", &[]).await;
    let streamed = stream(&url, "hi", &[]).await;
    assert_eq!(artifact_texts(streamed.events()), ["fallback"]);
    assert_eq!(primary.received().len(), 1);
}
