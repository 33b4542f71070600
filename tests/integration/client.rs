//! The client over real loopback HTTP: the test kit's fault agent, the example agent, a proxy
//! that loses a reply, a raw socket that resets mid-response, and a closed port.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::serve;
use a2a_error::Client;
use a2a_error::client::ClientError;
use a2a_error::resilience::Timeout;
use a2a_error::resilience::{Jitter, RetryPolicy};
use a2a_error::{A2aError, RemoteError, StandardError};
use a2a_error_testkit::{Answer, FaultAgent};
use axum::Router;
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// The example agent's errors as a client of it declares them (its own mirror of the agent's
/// enum: the codes, reasons and data fields are the wire's, not the agent's source).
#[derive(Debug, thiserror::Error, A2aError)]
enum AgentError {
    #[error("task {task_id} not found")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
    },
    #[error("rate limited")]
    #[a2a(code = RATE_LIMITED, retry_after = 2)]
    RateLimited,
    #[error("unavailable (attempt {attempt})")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Unavailable {
        #[a2a(data)]
        attempt: u32,
    },
    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

/// The example agent, as its own process: its URL.
fn example_agent() -> (crate::common::ExampleProcess, String) {
    crate::common::start_example("agent", &[])
}

/// What the fault agent does with one request, in this file's words.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// 429, `Retry-After: N`, a plain-text body.
    TooMany(u64),
    /// 503, plain text.
    Unavailable,
    /// 502 with an HTML page, as a proxy sends.
    BadGateway,
    /// Answers after this long.
    Slow(Duration),
    /// Sends the start of a 200 reply, then breaks the connection.
    Reset,
}

impl From<Fault> for Answer {
    fn from(fault: Fault) -> Answer {
        match fault {
            Fault::TooMany(seconds) => {
                Answer::http(429, "slow down").header("retry-after", &seconds.to_string())
            }
            Fault::Unavailable => Answer::http(503, "maintenance"),
            Fault::BadGateway => Answer::http(502, "<html><body>502 Bad Gateway</body></html>")
                .header("content-type", "text/html"),
            Fault::Slow(delay) => Answer::Echo.after(delay),
            Fault::Reset => Answer::Reset,
        }
    }
}

/// The kit's fault agent, answering `plan` in order and then echoing each call's params.
async fn fault_agent(plan: impl IntoIterator<Item = Fault>) -> (FaultAgent, String) {
    let agent = FaultAgent::start(Answer::Echo).await;
    agent.then(plan.into_iter().map(Answer::from));
    let url = agent.url().to_owned();
    (agent, url)
}

type Log = Arc<Mutex<Vec<(u32, Option<i32>, Option<u16>, Duration)>>>;

/// A fast policy that records every retry: (attempt, remote code, HTTP status, delay).
fn recording<E: A2aError + 'static>() -> (RetryPolicy<ClientError<E>>, Log) {
    let log: Log = Arc::default();
    let hook = log.clone();
    let policy = RetryPolicy::new()
        .base_delay(Duration::from_millis(20))
        .jitter(Jitter::None)
        .on_retry(move |attempt, error: &ClientError<E>, delay| {
            hook.lock()
                .unwrap()
                .push((attempt, error.remote_code(), error.reply_status(), delay))
        });
    (policy, log)
}

fn jsonrpc<E>(url: &str, policy: RetryPolicy<ClientError<E>>) -> Client<E>
where
    E: A2aError + a2a_error::FromErrorObject + Send + 'static,
{
    Client::jsonrpc(url).retry(policy).build().unwrap()
}

/// A client of the example agent at `url` over `binding` ("jsonrpc" or "rest").
fn example_client(
    binding: &str,
    url: &str,
    policy: RetryPolicy<ClientError<AgentError>>,
) -> Client<AgentError> {
    let builder = match binding {
        "jsonrpc" => Client::jsonrpc(format!("{url}/")),
        _ => Client::rest(url),
    };
    builder.retry(policy).build().unwrap()
}

fn message(text: &str, id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test]
async fn a_429_with_retry_after_waits_that_long() {
    let (faults, url) = fault_agent([Fault::TooMany(1)]).await;
    let (policy, log) = recording::<RemoteError>();
    let client = jsonrpc(&format!("{url}/"), policy);
    let reply: Value = client.call("GetTask", &json!({"id": "t"})).await.unwrap();
    assert_eq!(reply["id"], "t");
    assert_eq!(
        log.lock().unwrap().as_slice(),
        [(1, None, Some(429), Duration::from_secs(1))]
    );
    let seen = faults.received();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].at - seen[0].at >= Duration::from_secs(1));
}

#[tokio::test]
async fn a_503_is_retried_with_backoff() {
    let (faults, url) = fault_agent([Fault::Unavailable, Fault::Unavailable]).await;
    let (policy, log) = recording::<RemoteError>();
    let client = jsonrpc(&format!("{url}/"), policy);
    let _: Value = client.call("GetTask", &json!({"id": "t"})).await.unwrap();
    let delays: Vec<_> = log.lock().unwrap().iter().map(|e| (e.2, e.3)).collect();
    let ms = Duration::from_millis;
    assert_eq!(delays, [(Some(503), ms(20)), (Some(503), ms(40))]);
    assert_eq!(faults.received().len(), 3);
}

#[tokio::test]
async fn a_non_json_502_from_a_proxy_keeps_status_and_headers() {
    let (faults, url) = fault_agent([Fault::BadGateway; 5]).await;
    let (policy, log) = recording::<RemoteError>();
    let client = jsonrpc(&format!("{url}/"), policy.max_attempts(3));
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "t"}))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Status(_)), "{error:?}");
    assert_eq!(error.reply_status(), Some(502));
    assert_eq!(error.http().unwrap().headers["content-type"], "text/html");
    assert_eq!(error.category(), a2a_error::Category::Transient);
    assert_eq!(faults.received().len(), 3);
    assert_eq!(log.lock().unwrap().len(), 2);
    // Passed on to this agent's own caller, it is a DOWNSTREAM_FAILED, without the page.
    let wire = serde_json::to_string(&error.to_error_object()).unwrap();
    assert!(
        wire.contains("DOWNSTREAM_FAILED") && !wire.contains("html"),
        "{wire}"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let url = format!("{}/", a2a_error_testkit::closed_url());
    let (policy, log) = recording::<RemoteError>();
    let client = jsonrpc(&url, policy.max_attempts(3));
    let error = client
        .call::<_, Value>("SendMessage", &message("hi", "m-1"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Connect(_)), "{error:?}");
    assert!(error.retry_advice().is_retryable() && !error.may_have_run());
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_reset_mid_response_is_retried_for_safe_methods_only() {
    let (faults, url) = fault_agent([Fault::Reset]).await;
    let (policy, log) = recording::<RemoteError>();
    let client = jsonrpc(&format!("{url}/"), policy.clone());
    let reply: Value = client
        .send_message(&message("hi", "m-reset"))
        .await
        .unwrap();
    assert_eq!(reply["message"]["messageId"], "m-reset");
    assert_eq!(log.lock().unwrap().len(), 1);
    let seen = faults.received();
    assert_eq!(seen[0].body, seen[1].body, "byte-identical resend");

    // A method nobody marked safe is not repeated after an ambiguous failure.
    let (faults, url) = fault_agent([Fault::Reset]).await;
    let client = jsonrpc(&format!("{url}/"), policy);
    let error = client
        .call::<_, Value>("TransferFunds", &json!({"amount": 5}))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Transport(_)), "{error:?}");
    assert!(error.may_have_run());
    assert_eq!(faults.received().len(), 1);
}

#[tokio::test]
async fn a_reply_slower_than_the_attempt_timeout_is_cut_and_retried() {
    let (faults, url) = fault_agent([Fault::Slow(Duration::from_secs(3))]).await;
    let (policy, log) = recording::<RemoteError>();
    let client = Client::jsonrpc(format!("{url}/"))
        .retry(policy)
        .attempt_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let start = Instant::now();
    let _: Value = client.call("GetTask", &json!({"id": "t"})).await.unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(faults.received().len(), 2);

    // Without retries the timeout is the error, as its own variant.
    let (_, url) = fault_agent([Fault::Slow(Duration::from_secs(3))]).await;
    let client = Client::<RemoteError>::jsonrpc(format!("{url}/"))
        .retry(RetryPolicy::none())
        .attempt_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "t"}))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
}

#[tokio::test]
async fn version_and_remaining_deadline_travel_as_headers() {
    let (faults, url) = fault_agent([Fault::Unavailable]).await;
    let (policy, _) = recording::<RemoteError>();
    let client = Client::jsonrpc(format!("{url}/"))
        .retry(policy)
        .total_timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let _: Value = client.call("GetTask", &json!({"id": "t"})).await.unwrap();
    let seen = faults.received();
    let left: Vec<u64> = seen
        .iter()
        .map(|s| {
            s.headers["a2a-deadline-ms"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(left[0] <= 20_000 && left[0] > 19_000, "{left:?}");
    assert!(left[1] < left[0], "the budget shrinks: {left:?}");
    assert!(seen.iter().all(|s| s.headers["a2a-version"] == "1.0"));
}

#[tokio::test]
async fn streaming_retries_before_the_first_event_only() {
    // A 503 first, then two events and AGENT_UNAVAILABLE mid-stream.
    let (faults, url) = fault_agent([]).await;
    faults.on(
        "SendStreamingMessage",
        [
            Fault::Unavailable.into(),
            Answer::stream_failing_after(
                vec![json!({"n": 1}), json!({"n": 2})],
                Answer::error(-32053),
            ),
        ],
    );
    let (policy, log) = recording::<StandardError>();
    let client = jsonrpc(&format!("{url}/"), policy);
    let events: Vec<_> = client
        .send_streaming_message(&message("hi", "m-stream"))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(
        log.lock().unwrap().len(),
        1,
        "one retry before the first event"
    );
    assert_eq!(events.len(), 3);
    assert_eq!(events[0].as_ref().unwrap().get(), r#"{"n":1}"#);
    assert_eq!(events[1].as_ref().unwrap().get(), r#"{"n":2}"#);
    match &events[2] {
        Err(ClientError::Remote { error, .. }) => {
            assert!(matches!(**error, StandardError::AgentUnavailable { .. }))
        }
        other => panic!("expected the mid-stream error, got {other:?}"),
    }
    assert_eq!(faults.received().len(), 2, "no retry after the first event");
}

#[tokio::test]
async fn example_agent_flaky_succeeds_on_the_third_attempt() {
    let (_agent, url) = example_agent();
    let (policy, log) = recording::<AgentError>();
    let client = jsonrpc(&format!("{url}/"), policy);
    let reply: Value = client
        .send_message(&message("flaky:2", "m-flaky"))
        .await
        .unwrap();
    assert_eq!(reply["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let codes: Vec<_> = log.lock().unwrap().iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(codes, [(1, Some(-32053)), (2, Some(-32053))]);
}

#[tokio::test]
async fn example_agent_rate_limit_honours_its_retry_after() {
    let (_agent, url) = example_agent();
    for binding in ["jsonrpc", "rest"] {
        let (policy, log) = recording::<AgentError>();
        let client = example_client(binding, &url, policy.max_attempts(2));
        let start = Instant::now();
        let error = client
            .send_message::<_, Value>(&message("fail:rate_limited", &format!("m-rl-{binding}")))
            .await
            .unwrap_err();
        assert!(start.elapsed() >= Duration::from_secs(2), "{binding}");
        assert!(
            matches!(error.typed(), Some(AgentError::RateLimited)),
            "{binding}: {error:?}"
        );
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1, "{binding}");
        assert_eq!(log[0].3, Duration::from_secs(2), "{binding}");
    }
}

#[tokio::test]
async fn example_agent_non_retryable_errors_stop_after_one_attempt() {
    let (_agent, url) = example_agent();
    for binding in ["jsonrpc", "rest"] {
        let (policy, log) = recording::<AgentError>();
        let client = example_client(binding, &url, policy);
        let error = client
            .call::<_, Value>("GetTask", &json!({"id": "nope"}))
            .await
            .unwrap_err();
        match error.typed() {
            Some(AgentError::TaskNotFound { task_id }) => assert_eq!(task_id, "nope"),
            other => panic!("{binding}: {other:?}"),
        }
        assert!(!error.retry_advice().is_retryable());
        assert!(log.lock().unwrap().is_empty(), "{binding}");
    }
    // A malformed call (-32602) is the caller's own mistake: one attempt.
    let (policy, log) = recording::<AgentError>();
    let client = jsonrpc(&format!("{url}/"), policy);
    let error = client
        .call::<_, Value>("GetTask", &json!({"task": 5}))
        .await
        .unwrap_err();
    assert_eq!(error.remote_code(), Some(-32602));
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_downstream_error_is_translated_not_forwarded() {
    let (_agent, url) = example_agent();
    let client = jsonrpc::<RemoteError>(&format!("{url}/"), RetryPolicy::none());
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "gone"}))
        .await
        .unwrap_err();
    let received = error.remote().unwrap().object().clone();
    assert_eq!(received.metadata()["taskId"], "gone");
    // What this agent sends its own caller: DOWNSTREAM_FAILED in its own words, naming the
    // agent and what it failed with, but not the downstream's data.
    let passed_on = client.downstream(error).to_error_object();
    assert_eq!(passed_on.code, a2a_error::code::DOWNSTREAM_FAILED);
    let metadata = passed_on.metadata();
    assert_eq!(metadata["downstreamReason"], "TASK_NOT_FOUND");
    assert_eq!(metadata["downstreamCode"], "-32001");
    assert!(
        metadata["downstreamAgent"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:")
    );
    assert!(!metadata.contains_key("taskId"));
    let root = RemoteError::from_object(passed_on).root_cause().unwrap();
    assert_eq!(
        (root.code, root.reason.as_str()),
        (-32001, "TASK_NOT_FOUND")
    );
}

/// Runs the built `client` example against `url`.
fn run_example(args: &[&str]) -> (i32, String) {
    crate::common::run_example("client", args)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_client_example_prints_each_attempt() {
    let (_agent, url) = example_agent();
    let url = format!("{url}/");
    let flaky = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || run_example(&[&url, "flaky:2"]))
    };
    let rate_limited = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || run_example(&[&url, "fail:rate_limited"]))
    };
    let unsupported = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || run_example(&[&url, "fail:unsupported"]))
    };

    let (code, out) = flaky.await.unwrap();
    crate::common::assert_flaky_2_output(code, &out);

    let (code, out) = unsupported.await.unwrap();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("attempt 1: -32004 UNSUPPORTED_OPERATION"),
        "{out}"
    );
    assert!(out.contains("giving up (not retryable)"), "{out}");
    assert!(!out.contains("attempt 2"), "{out}");
    // The report names the peer's own reason, not the DOWNSTREAM_FAILED it would become if
    // passed on to a caller of ours.
    assert_eq!(
        out.lines().last(),
        Some("error: UNSUPPORTED_OPERATION (category validation)"),
        "{out}"
    );

    let (code, out) = rate_limited.await.unwrap();
    assert_eq!(code, 1, "{out}");
    let waits = out
        .matches("RATE_LIMITED \"Rate limited\"; retrying in 2.00s")
        .count();
    assert_eq!(waits, 3, "{out}");
    assert!(out.contains("attempt 4: -32052 RATE_LIMITED"), "{out}");
    // Retryable, and retried until the policy ran out: not "not retryable".
    assert!(
        out.contains("giving up (no retries left in the policy or time budget)"),
        "{out}"
    );
    assert_eq!(
        out.lines().last(),
        Some("error: RATE_LIMITED (category rate-limit)"),
        "{out}"
    );
}

/// An application's own code and reason, which the HTTP+JSON binding carries only as reason.
#[derive(Debug, thiserror::Error, a2a_error::A2aError)]
#[a2a(domain = "billing.example.com")]
enum BillingError {
    #[error("quota of {account} exhausted")]
    #[a2a(code = -31000, reason = "QUOTA_EXCEEDED", retryable)]
    Quota {
        #[a2a(data)]
        account: String,
    },
    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

#[tokio::test]
async fn rest_errors_with_application_codes_decode_into_the_typed_enum() {
    let router = Router::new().route(
        "/message:send",
        post(|| async {
            Err::<axum::Json<Value>, _>(BillingError::Quota {
                account: "acme".into(),
            })
        }),
    );
    let url = serve(router).await;
    let client = Client::<BillingError>::rest(url)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let error = client
        .send_message::<_, Value>(&message("hi", "m-quota"))
        .await
        .unwrap_err();
    match error.typed() {
        Some(BillingError::Quota { account }) => assert_eq!(account, "acme"),
        other => panic!("{other:?} from {error:?}"),
    }
    assert_eq!(
        error.remote_code(),
        Some(-31000),
        "the code is rebuilt from the reason"
    );
    assert!(error.retry_advice().is_retryable());
    assert_eq!(error.reply_status(), Some(500));
}
