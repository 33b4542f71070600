//! The kit as a user uses it: clients built with a2a-error proven against the fault agent
//! over JSON-RPC and HTTP+JSON, an HTTP dependency against the fault service, and the chaos
//! layer's seeded faults.

use std::time::{Duration, Instant};

use a2a_error::client::ClientError;
use a2a_error::resilience::RetryPolicy;
use a2a_error::resilience::Timeout;
use a2a_error::{Client, HasKind, StandardError, StandardErrorKind};
use a2a_error_testkit::{Answer, ChaosLayer, FaultAgent, FaultService, HttpAnswer};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tower::{Layer, Service, ServiceExt};

/// The bindings the fault agent serves in this build.
const BINDINGS: &[&str] = &[
    "jsonrpc",
    "rest",
    #[cfg(feature = "grpc")]
    "grpc",
];

fn message(id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
}

/// A client of `agent` over `binding`, with quick retries.
fn client(agent: &FaultAgent, binding: &str) -> Client<StandardError> {
    let builder = match binding {
        "jsonrpc" => Client::jsonrpc(format!("{}/", agent.url())),
        #[cfg(feature = "grpc")]
        "grpc" => Client::grpc(agent.grpc_url()),
        _ => Client::rest(agent.url()),
    };
    builder
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(10)))
        .attempt_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_rate_limited_agent_is_retried_after_its_delay_on_every_binding() {
    for binding in BINDINGS.iter().copied() {
        let agent = FaultAgent::start(Answer::result(message("reply"))).await;
        agent.on(
            "SendMessage",
            [Answer::error(-32052)
                .retry_after(Duration::from_millis(300))
                .into()],
        );
        let started = Instant::now();
        let reply: Value = client(&agent, binding)
            .send_message(&message("m-1"))
            .await
            .unwrap();
        assert_eq!(reply["message"]["messageId"], "reply", "{binding}");
        assert!(started.elapsed() >= Duration::from_millis(290), "{binding}");
        let received = agent.received();
        assert_eq!(received.len(), 2, "{binding}");
        assert!(received.iter().all(|r| r.binding == binding));
        assert!(
            received
                .iter()
                .all(|r| r.method.as_deref() == Some("SendMessage"))
        );
        // The same message both times: the server can run it once.
        assert!(
            received
                .iter()
                .all(|r| r.message_id.as_deref() == Some("m-1"))
        );
        // The caller's deadline travels with each attempt.
        assert!(received.iter().all(|r| r.deadline.is_some()), "{binding}");
    }
}

#[tokio::test]
async fn an_error_decodes_into_the_callers_enum_with_its_reason() {
    for binding in BINDINGS.iter().copied() {
        let agent = FaultAgent::start(Answer::error(-32001).metadata("taskId", "t-9").into()).await;
        let error = client(&agent, binding)
            .call::<_, Value>("GetTask", &json!({"id": "t-9"}))
            .await
            .unwrap_err();
        let ClientError::Remote { error, .. } = error else {
            panic!("{binding}: {error:?}")
        };
        assert_eq!(error.kind(), StandardErrorKind::TaskNotFound, "{binding}");
        assert_eq!(agent.received().len(), 1, "not found is not retried");
    }
}

#[tokio::test]
async fn a_stream_fails_after_its_events() {
    for binding in BINDINGS.iter().copied() {
        let agent = FaultAgent::start(Answer::stream_failing_after(
            vec![json!({"n": 1}), json!({"n": 2})],
            Answer::error(-32053),
        ))
        .await;
        let events: Vec<_> = client(&agent, binding)
            .send_streaming_message(&message("m-s"))
            .await
            .unwrap()
            .collect()
            .await;
        assert_eq!(events.len(), 3, "{binding}");
        assert!(events[0].is_ok() && events[1].is_ok());
        let Err(ClientError::Remote { error, .. }) = &events[2] else {
            panic!("{binding}: {:?}", events[2])
        };
        assert_eq!(error.kind(), StandardErrorKind::AgentUnavailable);
    }
}

#[tokio::test]
async fn resets_black_holes_trickles_and_garbage_end_as_their_errors() {
    let agent = FaultAgent::start(Answer::result(message("ok"))).await;
    // A client of its own for each fault: the black hole would open a shared one's circuit.
    let fresh = || client(&agent, "jsonrpc");
    let client = fresh();
    // A reset, then an answer: SendMessage is safe to repeat.
    agent.then([Answer::Reset]);
    let _: Value = client.send_message(&message("m-r")).await.unwrap();
    assert_eq!(agent.received().len(), 2);
    // A black hole: each attempt times out, and the agent sees its callers leave.
    agent.then([
        Answer::BlackHole,
        Answer::BlackHole,
        Answer::BlackHole,
        Answer::BlackHole,
    ]);
    let error = client
        .send_message::<_, Value>(&message("m-b"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::Timeout(Timeout::Attempt)),
        "{error:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(agent.dropped().len(), 4);
    // Malformed bytes are the agent's failure, not retried.
    let client = fresh();
    let before = agent.received().len();
    agent.then([Answer::Raw(b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec())]);
    let error = client
        .send_message::<_, Value>(&message("m-g"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Malformed { .. }), "{error:?}");
    assert_eq!(agent.received().len(), before + 1);
    // A bare 502 from a proxy.
    let client = fresh();
    agent.then(std::iter::repeat_n(
        Answer::http(502, "<html>bad gateway</html>"),
        4,
    ));
    let error = client
        .send_message::<_, Value>(&message("m-p"))
        .await
        .unwrap_err();
    assert_eq!(error.reply_status(), Some(502), "{error:?}");
    // A reply trickled slower than the attempt timeout allows.
    let client = fresh();
    agent.then(std::iter::repeat_n(
        Answer::result(message("slow")).trickled(Duration::from_millis(50)),
        4,
    ));
    let error = client
        .send_message::<_, Value>(&message("m-t"))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Timeout(_)), "{error:?}");
}

#[tokio::test]
async fn an_http_dependency_meets_the_fault_service() {
    let model = FaultService::start(HttpAnswer::completion("hello")).await;
    model.then([HttpAnswer::status(503).header("retry-after-ms", "100")]);
    let dependency = a2a_error::dependency::HttpDependency::model("model", model.url())
        .build()
        .unwrap();
    let reply: Value = dependency
        .post_json("/chat/completions", &json!({"messages": []}))
        .await
        .unwrap();
    assert_eq!(reply["choices"][0]["message"]["content"], "hello");
    let received = model.received();
    assert_eq!(received.len(), 2);
    assert!(received[1].at - received[0].at >= Duration::from_millis(95));
}

#[tokio::test]
async fn chaos_is_seeded_and_off_unless_enabled() {
    let faults = |layer: ChaosLayer<&'static str>| async move {
        let mut service = tower::ServiceBuilder::new()
            .layer(layer)
            .service(tower::service_fn(|n: u32| async move {
                Ok::<_, &'static str>(n)
            }));
        let mut failed = Vec::new();
        for n in 0..200 {
            if service.ready().await.unwrap().call(n).await.is_err() {
                failed.push(n);
            }
        }
        failed
    };
    let chaos = || ChaosLayer::new(7).fault(0.25, || "injected");
    let first = faults(chaos().enabled(true)).await;
    let again = faults(chaos().enabled(true)).await;
    assert_eq!(first, again, "the same seed, the same faults");
    assert!((30..70).contains(&first.len()), "{}", first.len());
    assert!(faults(chaos()).await.is_empty(), "off unless enabled");
    // Latency delays every call at rate 1.
    let mut slow = ChaosLayer::<&'static str>::new(1)
        .latency(1.0, Duration::from_millis(50))
        .enabled(true)
        .layer(tower::service_fn(|n: u32| async move {
            Ok::<_, &'static str>(n)
        }));
    let started = Instant::now();
    slow.ready().await.unwrap().call(1).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(45));
}

/// The fault service answers per path first, then in order, then its default, as the fault
/// agent answers per method, then in order.
#[tokio::test]
async fn the_fault_service_answers_per_path_then_in_order_then_its_default() {
    let tool = FaultService::start(HttpAnswer::json(200, json!({"from": "default"}))).await;
    tool.on(
        "/search",
        [HttpAnswer::json(200, json!({"from": "search"}))],
    );
    tool.then([HttpAnswer::json(200, json!({"from": "in order"}))]);
    let get = |path: &'static str| {
        let url = format!("{}{path}", tool.url());
        async move {
            let reply = reqwest::get(url).await.unwrap();
            reply.json::<Value>().await.unwrap()["from"].clone()
        }
    };
    assert_eq!(get("/other").await, "in order");
    assert_eq!(get("/search?q=1").await, "search");
    assert_eq!(get("/search").await, "default");
    let paths: Vec<String> = tool
        .received()
        .into_iter()
        .map(|request| request.path_and_query)
        .collect();
    assert_eq!(paths, ["/other", "/search?q=1", "/search"]);
    assert!(tool.dropped().is_empty());
}
