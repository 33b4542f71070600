//! The bridge to the official Rust SDK, in process: errors both ways, the SDK's own client
//! (`A2AClient`) over our transport against an agent that fails, rate-limits and dies, and the
//! same failing executor served side by side by the SDK's own routers and by the bridge.

use std::sync::Arc;
use std::time::Duration;

use crate::common::calling::{Calling, guarded};
use crate::common::start_example;
use a2a::{
    A2AError, AgentCapabilities, AgentCard, Message, Part, Role, SendMessageRequest,
    StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_client::{A2AClient, A2AClientFactory};
use a2a_error::client::ClientError;
use a2a_error::resilience::RetryPolicy;
use a2a_error::resilience::Timeout;
use a2a_error::sdk::{self, Bridge, MemoryTaskStore, TransportFactory};
use a2a_error::{A2aError, HasKind, RemoteError, RetryHint, StandardError};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext};
use futures_util::stream::{self, BoxStream, StreamExt};
use serde_json::{Value, json};

/// The caller's mirror of the SDK agent's errors (`examples/sdk_agent/app.rs`).
#[derive(Debug, thiserror::Error, a2a_error::A2aError)]
enum AgentError {
    #[error("internal")]
    #[a2a(code = INTERNAL_ERROR)]
    Storage,
    #[error("rate limited")]
    #[a2a(code = RATE_LIMITED, retry_after = 2)]
    RateLimited,
    #[error("unavailable")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    Unavailable {
        #[a2a(data)]
        attempt: u32,
    },
    #[error("quota {quota} exceeded")]
    #[a2a(code = -32099, reason = "QUOTA_EXCEEDED", domain = "billing.example.com")]
    Quota {
        #[a2a(data)]
        quota: String,
    },
}

fn request(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text(text)]),
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

fn quick_retries() -> RetryPolicy<ClientError> {
    RetryPolicy::default()
        .base_delay(Duration::from_millis(5))
        .max_delay(Duration::from_millis(20))
}

#[test]
fn a_derived_error_becomes_an_sdk_error_and_back_with_everything() {
    let error: A2AError = AgentError::Quota {
        quota: "gold".into(),
    }
    .into();
    assert_eq!(error.code, -32099);
    assert_eq!(
        error.message,
        AgentError::Quota {
            quota: "gold".into()
        }
        .public_message()
    );
    assert!(
        !error.message.contains("gold exceeded"),
        "never the Display text"
    );
    let back: AgentError = sdk::decode(&error).expect("decodes into the enum");
    assert!(matches!(back, AgentError::Quota { ref quota } if quota == "gold"));
    let remote = sdk::remote(&error);
    assert_eq!(remote.reason(), "QUOTA_EXCEEDED");
    assert_eq!(remote.domain(), "billing.example.com");

    let limited: A2AError = AgentError::RateLimited.into();
    let remote = sdk::remote(&limited);
    assert_eq!(
        remote.retry_hint(),
        RetryHint::After(Duration::from_secs(2))
    );
    assert_eq!(remote.http_status(), 429);
    assert_eq!(
        sdk::decode::<AgentError>(&limited).map(|error| error.kind()),
        Some(AgentErrorKind::RateLimited)
    );

    // An error object the SDK's REST client rebuilt with only the reason (code -32603)
    // still decodes into the variant with that reason.
    let mut rest = error.clone();
    rest.code = -32603;
    assert!(matches!(
        sdk::decode::<AgentError>(&rest),
        Some(AgentError::Quota { .. })
    ));
}

#[test]
fn a_downstream_failure_inside_an_executor_is_passed_on_translated() {
    let downstream: ClientError = ClientError::from_object(
        AgentError::Quota {
            quota: "gold".into(),
        }
        .to_error_object(),
        None,
    );
    let error: A2AError = downstream.into();
    assert_eq!(error.code, a2a_error::code::DOWNSTREAM_FAILED);
    let remote = sdk::remote(&error);
    assert_eq!(remote.reason(), "DOWNSTREAM_FAILED");
    assert_eq!(
        remote.chain().next().map(|hop| hop.reason),
        Some("QUOTA_EXCEEDED".into())
    );
    let timeout: A2AError = ClientError::<RemoteError>::Timeout(Timeout::Total).into();
    assert_eq!(timeout.code, a2a_error::code::DEADLINE_EXCEEDED);
}

/// The SDK's own client over our transport factory, built from a card naming `url`.
async fn sdk_client(
    url: &str,
    binding: &str,
    configure: impl Fn(a2a_error::ClientBuilder) -> a2a_error::ClientBuilder + Send + Sync + 'static,
) -> A2AClient<Box<dyn a2a_client::Transport>> {
    let factory = if binding == "JSONRPC" {
        TransportFactory::jsonrpc()
    } else {
        TransportFactory::rest()
    };
    let card: AgentCard = serde_json::from_value::<sdk::ProtoJson<AgentCard>>(json!({
        "name": "agent", "description": "", "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .unwrap()
    .0;
    A2AClientFactory::builder()
        .register(Arc::new(factory.configure(configure)))
        .build()
        .create_from_card(&card)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_sdk_client_over_our_transport_retries_and_keeps_what_failed() {
    let (_agent, base) = start_example("sdk_agent", &[]);
    for (binding, url) in [("JSONRPC", format!("{base}/")), ("HTTP+JSON", base.clone())] {
        let client = sdk_client(&url, binding, |client| client.retry(quick_retries())).await;

        // A flaky agent: the retries are ours, with the same messageId each time.
        let reply = client.send_message(&request("flaky:2")).await;
        let reply = reply.unwrap_or_else(|error| panic!("{binding}: {error:?}"));
        let json = serde_json::to_value(sdk::ProtoJson(reply)).unwrap();
        assert_eq!(
            json["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{binding}"
        );

        // Not retryable: one attempt, the caller's enum and the peer's own reason.
        let error = client
            .send_message(&request("fail:unsupported"))
            .await
            .unwrap_err();
        let failure = sdk::client_error::<RemoteError>(&error).expect("our transport's error");
        assert_eq!(
            failure.failure_reason(),
            "UNSUPPORTED_OPERATION",
            "{binding}"
        );
        assert_eq!(
            sdk::decode::<StandardError>(&error),
            Some(StandardError::UnsupportedOperation),
            "{binding}"
        );

        // Streaming through the transport: events, then the error event as an A2AError.
        let events = client
            .send_streaming_message(&request("stream:fail_after:2"))
            .await
            .unwrap();
        let (seen, last) = crate::common::drain(events).await;
        assert_eq!(seen, 2, "{binding}");
        let last = last.expect("the stream ends in an error");
        assert_eq!(sdk::remote(&last).reason(), "INTERNAL_ERROR", "{binding}");
    }

    // Rate limited over REST, with no retries: the HTTP status and Retry-After are kept.
    let client = sdk_client(&base, "HTTP+JSON", |client| {
        client.retry(RetryPolicy::default().max_attempts(1))
    })
    .await;
    let error = client
        .send_message(&request("fail:rate_limited"))
        .await
        .unwrap_err();
    assert!(matches!(
        sdk::decode::<AgentError>(&error),
        Some(AgentError::RateLimited)
    ));
    let failure = sdk::client_error::<AgentError>(&error).unwrap();
    assert_eq!(failure.reply_status(), Some(429));
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(2)));
    assert!(matches!(failure.typed(), Some(AgentError::RateLimited)));
}

#[tokio::test]
async fn the_sdk_client_over_our_transport_tells_a_dead_agent_from_a_slow_one() {
    let (agent, base) = start_example("sdk_agent", &[]);
    let url = format!("{base}/");
    let slow = sdk_client(&url, "JSONRPC", |client| {
        client
            .retry(RetryPolicy::default().max_attempts(1))
            .attempt_timeout(Duration::from_millis(200))
    })
    .await;
    let error = slow.send_message(&request("sleep:3000")).await.unwrap_err();
    assert!(matches!(
        sdk::client_error::<RemoteError>(&error),
        Some(ClientError::Timeout(Timeout::Attempt))
    ));
    assert_eq!(error.code, a2a_error::code::DEADLINE_EXCEEDED);

    drop(agent);
    let dead = sdk_client(&url, "JSONRPC", |client| {
        client.retry(quick_retries().max_attempts(2))
    })
    .await;
    let error = dead.send_message(&request("hello")).await.unwrap_err();
    let failure = sdk::client_error::<RemoteError>(&error).unwrap();
    assert!(matches!(failure, ClientError::Connect(_)), "{failure:?}");
    assert!(!failure.may_have_run());
}

/// An executor as many are written on the SDK: its own error text in an `A2AError`, or our
/// derived enum with `?`.
struct Failing {
    /// Fail with `A2AError::internal(text)` instead of the derived enum.
    raw: bool,
}

impl AgentExecutor for Failing {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text: String = ctx
            .message
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match &part.content {
                a2a::PartContent::Text(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        let error = if self.raw {
            A2AError::internal("db at /srv/app/db.rs: password=hunter2-secret refused")
        } else if text == "quota" {
            AgentError::Quota {
                quota: "gold".into(),
            }
            .into()
        } else {
            AgentError::RateLimited.into()
        };
        let working = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        if text == "after work" {
            return stream::iter([Ok(working), Err(error)]).boxed();
        }
        stream::iter([Err(error)]).boxed()
    }

    fn cancel(&self, _: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        stream::empty().boxed()
    }
}

fn capabilities() -> AgentCapabilities {
    AgentCapabilities {
        streaming: Some(true),
        push_notifications: Some(false),
        extensions: None,
        extended_agent_card: None,
    }
}

/// The SDK's own routers over `executor` (unguarded, as the SDK serves it).
async fn served_by_the_sdk(raw: bool) -> String {
    let handler = Arc::new(
        DefaultRequestHandler::new(Failing { raw }, MemoryTaskStore::new(1 << 20))
            .with_capabilities(capabilities()),
    );
    let router = a2a_server::jsonrpc::jsonrpc_router(handler.clone())
        .merge(a2a_server::rest::rest_router(handler));
    crate::common::serve(router).await
}

/// The bridge over the same executor.
async fn served_by_the_bridge(raw: bool) -> String {
    let handler = guarded(Failing { raw }).with_capabilities(capabilities());
    crate::common::serve(Bridge::new(handler).router()).await
}

async fn send_both(url: &str, text: &str) -> (Value, reqwest::Response) {
    let message = json!({"message": {"messageId": format!("m-{text}-{}", fastrand::u64(..)),
        "role": "ROLE_USER", "parts": [{"text": text}]}});
    let rpc = crate::common::requests::rpc(
        &format!("{url}/"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message}),
    )
    .await;
    let rest = reqwest::Client::new()
        .post(format!("{url}/message:send"))
        .header("A2A-Version", "1.0")
        .json(&message)
        .send()
        .await
        .unwrap();
    (rpc, rest)
}

/// What each server sends for the same executor errors, side by side: the SDK's routers
/// rebuild ErrorInfo from the code and put the executor's text on the wire; the bridge
/// keeps the custom reason, domain and RetryInfo, the table's HTTP status and `Retry-After`,
/// and sends only public text.
#[tokio::test]
async fn side_by_side_the_sdks_routers_and_the_bridge() {
    let sdk = served_by_the_sdk(false).await;
    let bridge = served_by_the_bridge(false).await;

    let (sdk_rpc, sdk_rest) = send_both(&sdk, "quota").await;
    let (bridge_rpc, bridge_rest) = send_both(&bridge, "quota").await;
    eprintln!("SDK routers, JSON-RPC: {sdk_rpc}");
    eprintln!("bridge, JSON-RPC:      {bridge_rpc}");
    let info = |reply: &Value| {
        reply["error"]["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|detail| detail["@type"] == a2a_error::ERROR_INFO_TYPE)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        info(&sdk_rpc)["reason"],
        "INTERNAL_ERROR",
        "the SDK loses the reason"
    );
    assert_eq!(info(&sdk_rpc)["domain"], "a2a-protocol.org");
    assert_eq!(info(&bridge_rpc)["reason"], "QUOTA_EXCEEDED");
    assert_eq!(info(&bridge_rpc)["domain"], "billing.example.com");
    assert_eq!(info(&bridge_rpc)["metadata"]["quota"], "gold");
    let (sdk_status, bridge_status) = (sdk_rest.status(), bridge_rest.status());
    let bridge_body: Value = bridge_rest.json().await.unwrap();
    assert_eq!(
        bridge_body["error"]["details"][0]["reason"],
        "QUOTA_EXCEEDED"
    );
    eprintln!("REST statuses: SDK {sdk_status}, bridge {bridge_status}");

    // RATE_LIMITED: the SDK answers REST with a 500 and no Retry-After.
    let (_, sdk_rest) = send_both(&sdk, "limited").await;
    let (bridge_rpc, bridge_rest) = send_both(&bridge, "limited").await;
    assert_eq!(sdk_rest.status(), 500);
    assert!(sdk_rest.headers().get("retry-after").is_none());
    assert_eq!(bridge_rest.status(), 429);
    assert_eq!(bridge_rest.headers()["retry-after"], "2");
    let object: a2a_error::ErrorObject =
        serde_json::from_value(bridge_rpc["error"].clone()).unwrap();
    assert_eq!(
        RemoteError::from_object(object).retry_after(),
        Some(Duration::from_secs(2))
    );

    // An executor's own text: the SDK sends it; the bridge sends the public message.
    let sdk = served_by_the_sdk(true).await;
    let bridge = served_by_the_bridge(true).await;
    let (sdk_rpc, sdk_rest) = send_both(&sdk, "x").await;
    let (bridge_rpc, bridge_rest) = send_both(&bridge, "x").await;
    assert!(sdk_rpc.to_string().contains("hunter2"), "{sdk_rpc}");
    assert!(sdk_rest.text().await.unwrap().contains("hunter2"));
    assert!(!bridge_rpc.to_string().contains("hunter2"), "{bridge_rpc}");
    assert!(!bridge_rest.text().await.unwrap().contains("hunter2"));
    assert_eq!(bridge_rpc["error"]["message"], "Internal error");

    // After work started: the SDK leaves the task WORKING; the bridge ends it FAILED.
    let (sdk_rpc, _) = send_both(&sdk, "after work").await;
    let (bridge_rpc, _) = send_both(&bridge, "after work").await;
    assert_eq!(
        bridge_rpc["result"]["task"]["status"]["state"], "TASK_STATE_FAILED",
        "{bridge_rpc}"
    );
    assert_ne!(
        sdk_rpc["result"]["task"]["status"]["state"], "TASK_STATE_FAILED",
        "{sdk_rpc}"
    );
}

/// The caller's `A2A-Deadline-Ms` reaches the typed clients an executor calls, though the
/// SDK runs the executor in a task of its own; a downstream failure comes back translated.
#[tokio::test]
async fn the_callers_deadline_reaches_the_executors_downstream_calls() {
    let seen = Arc::new(std::sync::Mutex::new(
        Vec::<(u64, std::time::Instant)>::new(),
    ));
    let record = Arc::clone(&seen);
    let downstream = axum::Router::new().route(
        "/",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::Json<Value>| {
                let record = Arc::clone(&record);
                async move {
                    let left: Option<u64> = headers
                        .get("a2a-deadline-ms")
                        .and_then(|value| value.to_str().ok()?.parse().ok());
                    let now = std::time::Instant::now();
                    record.lock().unwrap().extend(left.map(|left| (left, now)));
                    axum::Json(json!({"jsonrpc": "2.0", "id": body["id"], "error": {
                    "code": -32001, "message": "Task not found"}}))
                }
            },
        ),
    );
    let downstream = crate::common::serve(downstream).await;
    let client = a2a_error::Client::jsonrpc(format!("{downstream}/"))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let handler = guarded(Calling { downstream: client }).with_capabilities(capabilities());
    let url = crate::common::serve(Bridge::new(handler).router()).await;
    let sent = std::time::Instant::now();
    let reply = crate::common::requests::rpc_with(
        &format!("{url}/"),
        ("A2A-Deadline-Ms", "5000"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "d1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}}),
    )
    .await;
    let left = seen.lock().unwrap().clone();
    assert_eq!(left.len(), 1, "one downstream call: {reply}");
    // Inherited, less a margin: what the downstream was told is what was left of the 5 s
    // when it was called (however long the machine took to get there), less at most 1 s.
    let (told, at) = left[0];
    let elapsed = at.duration_since(sent).as_millis() as u64;
    assert!(
        told <= 5000 && told + elapsed + 1000 >= 5000,
        "told {told} ms left, {elapsed} ms after the call was sent"
    );
    assert_eq!(
        reply["error"]["code"],
        a2a_error::code::DOWNSTREAM_FAILED,
        "{reply}"
    );
    let hop = &reply["error"]["data"][0]["metadata"];
    assert!(hop.to_string().contains("TASK_NOT_FOUND"), "{reply}");
}

/// A caller's W3C trace reaches the calls an executor makes, on each of the bridge's
/// bindings, though the SDK runs the executor in a task of its own: the same trace id, a
/// span of ours as the parent, `tracestate` unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn the_callers_trace_reaches_the_executors_downstream_calls_on_every_binding() {
    use a2a_error::trace::TraceContext;
    use a2a_error_testkit::{Answer, FaultAgent};
    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const STATE: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";
    let downstream = FaultAgent::start(Answer::result(json!({"id": "t"}))).await;
    let client = a2a_error::Client::jsonrpc(format!("{}/", downstream.url()))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let handler = guarded(Calling { downstream: client }).with_capabilities(capabilities());
    let bridge = Bridge::new(handler);
    let url = crate::common::serve(bridge.router()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap().to_string();
    let grpc = bridge.clone();
    tokio::spawn(async move {
        grpc.serve_grpc(listener, a2a_error::sdk::GrpcLimits::default())
            .await
    });
    let message = |id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "go"}]}});
    let http = reqwest::Client::new();

    // JSON-RPC and REST, with the caller's headers as sent.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": message("j")});
    let reply: Value = http
        .post(format!("{url}/"))
        .header("traceparent", PARENT)
        .header("tracestate", STATE)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(reply.get("result").is_some(), "{reply}");
    let rest = http
        .post(format!("{url}/message:send"))
        .header("A2A-Version", "1.0")
        .header("traceparent", PARENT)
        .header("tracestate", STATE)
        .json(&message("r"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        rest.status().as_u16(),
        200,
        "{}",
        rest.text().await.unwrap()
    );
    // gRPC, from this crate's client inside the caller's trace: it sends the trace on as
    // metadata, from a span of its own.
    let caller = TraceContext::parse(PARENT.as_bytes(), Some(STATE.as_bytes())).unwrap();
    let grpc_client = a2a_error::Client::<RemoteError>::grpc(target.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let _: Value = a2a_error::trace::with_trace(caller, grpc_client.send_message(&message("g")))
        .await
        .unwrap();

    let seen = crate::common::traces_sent(&downstream);
    assert_eq!(seen.len(), 3, "{seen:?}");
    let mut parents = std::collections::HashSet::new();
    for sent in &seen {
        assert_eq!(
            sent.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "{seen:?}"
        );
        assert_ne!(
            sent.parent_id(),
            "00f067aa0ba902b7",
            "a span of ours: {seen:?}"
        );
        assert!(
            parents.insert(sent.parent_id()),
            "one span a call: {seen:?}"
        );
        assert_eq!(sent.tracestate(), Some(STATE));
    }

    // Without a trace, or with one that does not read, the request runs in a trace of its own.
    for traceparent in [
        None,
        Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"),
        Some("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
    ] {
        let mut request = http.post(format!("{url}/")).json(&body);
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        let reply: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(reply.get("result").is_some(), "{traceparent:?}: {reply}");
    }
    let fresh: Vec<_> = crate::common::traces_sent(&downstream)[3..]
        .iter()
        .map(|sent| sent.trace_id().to_string())
        .collect();
    let distinct: std::collections::HashSet<_> = fresh.iter().collect();
    assert_eq!(distinct.len(), 4, "a new trace each: {fresh:?}");
    assert!(
        !fresh
            .iter()
            .any(|id| id == "4bf92f3577b34da6a3ce929d0e0e4736" || id == "0".repeat(32).as_str()),
        "{fresh:?}"
    );
}
