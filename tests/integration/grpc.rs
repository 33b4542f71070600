//! The gRPC binding (feature `grpc`): derived errors as `google.rpc.Status` and back; the
//! `sdk_agent` example serving gRPC from outside (our client, a raw tonic client, and
//! `a2a-grpc`'s own client); our client against `a2a-grpc`'s own server; and retry,
//! RetryInfo and the breaker over gRPC against the test kit's fault agent. All on loopback
//! with real sockets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a_error::client::ClientError;
use a2a_error::code::StatusMapping;
use a2a_error::resilience::RetryPolicy;
use a2a_error::resilience::breaker::{BreakerConfig, BreakerRegistry};
use a2a_error::{A2aError, BadRequest, Client, RemoteError, StandardError, grpc};
use a2a_error_testkit::{Answer, FaultAgent};
use a2a_pb::proto;
use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use a2a_pb::proto::a2a_service_server::{A2aService, A2aServiceServer};
use futures_util::StreamExt;
use prost::Message as _;
use serde_json::{Value, json};
use tonic_types::StatusExt;

#[derive(Debug, thiserror::Error, A2aError)]
#[a2a(domain = "billing.example.com")]
enum BillingError {
    #[error("task {task_id} missing")]
    #[a2a(code = TASK_NOT_FOUND)]
    TaskNotFound {
        #[a2a(data)]
        task_id: String,
    },

    #[error("LLM provider said {0}")]
    #[a2a(code = -32603, reason = "LLM_UNAVAILABLE", retryable)]
    Llm(#[a2a(default)] String),

    #[error("quota exhausted")]
    #[a2a(code = RATE_LIMITED, retry_after = 10)]
    RateLimited,

    #[error("invalid part")]
    #[a2a(code = INVALID_PARAMS)]
    InvalidPart,

    #[error(transparent)]
    #[a2a(transparent)]
    Standard(#[from] StandardError),
}

fn metadata_of(status: &tonic::Status) -> std::collections::HashMap<String, String> {
    status.get_details_error_info().unwrap().metadata
}

#[test]
fn a_derived_enum_is_a_status_with_its_details_and_decodes_back() {
    let missing = BillingError::TaskNotFound {
        task_id: "t-1".into(),
    };
    let status = grpc::to_status(&missing);
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), "Task not found");
    let info = status.get_details_error_info().unwrap();
    assert_eq!(info.reason, "TASK_NOT_FOUND");
    // A spec code keeps the spec's domain; the enum's own reasons carry its domain.
    assert_eq!(info.domain, "a2a-protocol.org");
    assert_eq!(metadata_of(&status)["taskId"], "t-1");
    match grpc::decode::<BillingError>(&status) {
        Some(BillingError::TaskNotFound { task_id }) => assert_eq!(task_id, "t-1"),
        other => panic!("{other:?}"),
    }

    // The Display text (a provider's words) never reaches the status.
    let llm = grpc::to_status(&BillingError::Llm("key sk-secret rejected".into()));
    assert_eq!(llm.code(), tonic::Code::Internal);
    assert!(!format!("{llm:?}").contains("sk-secret"), "{llm:?}");
    let info = llm.get_details_error_info().unwrap();
    assert_eq!(info.reason, "LLM_UNAVAILABLE");
    assert_eq!(info.domain, "billing.example.com");
    assert!(matches!(
        grpc::decode::<BillingError>(&llm),
        Some(BillingError::Llm(_))
    ));
    assert!(grpc::remote(&llm).retry_hint().is_retryable());

    // The delay: RetryInfo, and A6's pushback trailer for gRPC's own retry policies.
    let limited = grpc::to_status(&BillingError::RateLimited);
    assert_eq!(limited.code(), tonic::Code::ResourceExhausted);
    let retry = limited.get_details_retry_info().unwrap();
    assert_eq!(retry.retry_delay, Some(Duration::from_secs(10)));
    assert_eq!(
        limited.metadata().get(grpc::PUSHBACK_HEADER).unwrap(),
        "10000"
    );
    let remote = grpc::remote(&limited);
    assert_eq!(remote.code(), -32052);
    assert_eq!(remote.retry_after(), Some(Duration::from_secs(10)));
    assert!(matches!(
        grpc::decode::<BillingError>(&limited),
        Some(BillingError::RateLimited)
    ));

    let invalid = grpc::to_status(&BadRequest::field("message.parts", "at least one part"));
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
    let violations = invalid.get_details_bad_request().unwrap().field_violations;
    assert_eq!(violations[0].field, "message.parts");
    assert_eq!(violations[0].description, "at least one part");

    // `?` in a tonic service.
    fn handler() -> Result<(), tonic::Status> {
        Err(BillingError::RateLimited)?
    }
    assert_eq!(
        handler().unwrap_err().code(),
        tonic::Code::ResourceExhausted
    );
}

/// One error reads the same over gRPC as over JSON-RPC: code, reason, domain, data, delay.
#[test]
fn a_status_reads_as_the_json_rpc_error_object_reads() {
    for error in [
        BillingError::TaskNotFound {
            task_id: "t-9".into(),
        },
        BillingError::RateLimited,
        BillingError::Llm("x".into()),
        BillingError::InvalidPart,
        BillingError::Standard(StandardError::TaskNotCancelable),
    ] {
        let json_rpc = RemoteError::from_object(error.to_error_object());
        let over_grpc = grpc::remote(&grpc::to_status(&error));
        assert_eq!(over_grpc.code(), json_rpc.code(), "{error:?}");
        assert_eq!(over_grpc.message(), json_rpc.message());
        assert_eq!(over_grpc.reason(), json_rpc.reason());
        assert_eq!(over_grpc.domain(), json_rpc.domain());
        assert_eq!(over_grpc.retry_after(), json_rpc.retry_after());
        assert_eq!(over_grpc.retryable(), json_rpc.retryable());
        assert_eq!(
            over_grpc.object().metadata(),
            json_rpc.object().metadata(),
            "{error:?}"
        );
    }
}

#[test]
fn the_v1_0_0_mapping_and_unknown_details_passed_on() {
    let unsupported = StandardError::UnsupportedOperation;
    assert_eq!(
        grpc::to_status(&unsupported).code(),
        tonic::Code::FailedPrecondition
    );
    assert_eq!(
        grpc::to_status_with(&unsupported, StatusMapping::V1_0_0).code(),
        tonic::Code::Unimplemented
    );

    // A peer's detail of a type nobody here knows survives being passed on.
    let custom = prost_types::Any {
        type_url: "type.googleapis.com/acme.Quota".into(),
        value: vec![8, 42, 18, 3, b'a', b'b', b'c'],
    };
    let info = prost_types::Any {
        type_url: a2a_error::ERROR_INFO_TYPE.into(),
        value: tonic_types::pb::ErrorInfo {
            reason: "QUOTA".into(),
            domain: "acme.example".into(),
            metadata: Default::default(),
        }
        .encode_to_vec(),
    };
    let received = tonic::Status::with_details(
        tonic::Code::ResourceExhausted,
        "over quota",
        tonic_types::pb::Status {
            code: tonic::Code::ResourceExhausted as i32,
            message: "over quota".into(),
            details: vec![info, custom.clone()],
        }
        .encode_to_vec()
        .into(),
    );
    let remote = grpc::remote(&received);
    assert_eq!(
        remote.code(),
        -32052,
        "RESOURCE_EXHAUSTED with an unknown reason"
    );
    assert_eq!(remote.reason(), "QUOTA");
    assert_eq!(remote.domain(), "acme.example");
    let sent_on = grpc::to_status(&remote);
    let details = tonic_types::pb::Status::decode(sent_on.details()).unwrap();
    assert!(details.details.contains(&custom), "{details:?}");
}

fn message(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// The sdk_agent example with `--grpc`: its HTTP URL and its gRPC target.
fn agent() -> (crate::common::ExampleProcess, String, String) {
    crate::common::start_grpc_agent()
}

async fn raw(grpc: &str) -> A2aServiceClient<tonic::transport::Channel> {
    A2aServiceClient::connect(format!("http://{grpc}"))
        .await
        .unwrap()
}

fn proto_message(message_id: &str, text: &str) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: message_id.into(),
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(proto::part::Content::Text(text.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_agent_over_grpc_with_our_client() {
    let (_agent, url, grpc_target) = agent();
    let client = Client::<RemoteError>::grpc(grpc_target.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();

    let hello: Value = client
        .send_message(&message("g-hello", "hello"))
        .await
        .unwrap();
    assert_eq!(hello["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        hello["task"]["status"]["message"]["parts"][0]["text"],
        "echo: hello"
    );

    // A task made over JSON-RPC is read over gRPC: one store.
    let over_http = crate::common::requests::rpc(
        &format!("{url}/"),
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
               "params": message("g-http", "hello")}),
    )
    .await;
    let id = over_http["result"]["task"]["id"].as_str().unwrap();
    let task: Value = client.call("GetTask", &json!({"id": id})).await.unwrap();
    assert_eq!(task["id"], id);

    let missing = client
        .call::<_, Value>("GetTask", &json!({"id": "nope"}))
        .await
        .unwrap_err();
    let remote = missing.remote().unwrap();
    assert_eq!(remote.code(), -32001);
    assert_eq!(remote.reason(), "TASK_NOT_FOUND");

    let limited = client
        .send_message::<_, Value>(&message("g-limited", "fail:rate_limited"))
        .await
        .unwrap_err();
    let remote = limited.remote().unwrap();
    assert_eq!(remote.code(), -32052);
    assert_eq!(remote.retry_after(), Some(Duration::from_secs(2)));
    assert_eq!(remote.domain(), "a2a-error");

    let internal = client
        .send_message::<_, Value>(&message("g-internal", "fail:internal"))
        .await
        .unwrap_err();
    assert_eq!(internal.remote().unwrap().message(), "Internal error");
    assert!(!format!("{internal:?}").contains("hunter2"));

    // A panicking executor: INTERNAL at once, and the agent still serves.
    let started = Instant::now();
    let panicked = client
        .send_message::<_, Value>(&message("g-panic", "fail:panic"))
        .await
        .unwrap_err();
    assert_eq!(panicked.remote().unwrap().code(), -32603);
    assert!(started.elapsed() < Duration::from_secs(10));
    let again: Value = client
        .send_message(&message("g-after-panic", "hello"))
        .await
        .unwrap();
    assert_eq!(again["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    // A stream that fails after two events ends with the error's status; after none, the
    // call itself fails.
    let events = client
        .stream(
            "SendStreamingMessage",
            &message("g-s2", "stream:fail_after:2"),
        )
        .await
        .unwrap();
    let (seen, last) = crate::common::drain(events).await;
    assert_eq!(seen, 2);
    assert_eq!(last.unwrap().remote().unwrap().code(), -32603);
    let at_once = client
        .stream(
            "SendStreamingMessage",
            &message("g-s0", "stream:fail_after:0"),
        )
        .await;
    assert_eq!(at_once.err().unwrap().remote().unwrap().code(), -32603);

    // The card advertises the gRPC interface.
    let card = crate::common::requests::card(&url).await;
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert!(
        interfaces
            .iter()
            .any(|i| i["protocolBinding"] == "GRPC" && i["url"] == grpc_target.as_str()),
        "{card}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_agent_over_grpc_from_a_raw_client() {
    let (_agent, _url, grpc_target) = agent();
    let mut client = raw(&grpc_target).await;

    // No message: INVALID_ARGUMENT naming the field, where the SDK would run an empty one.
    let empty = client
        .send_message(proto::SendMessageRequest::default())
        .await
        .unwrap_err();
    assert_eq!(empty.code(), tonic::Code::InvalidArgument);
    let violations = empty.get_details_bad_request().unwrap().field_violations;
    assert_eq!(violations[0].field, "message");

    // Dedup keyed by the `authorization` metadata: the same caller's repeat is replayed, another
    // caller's same messageId is its own.
    let send = |auth: &'static str| {
        let mut request = tonic::Request::new(proto_message("g-dedup", "hello"));
        request
            .metadata_mut()
            .insert("authorization", auth.parse().unwrap());
        request
    };
    let task_id =
        |reply: tonic::Response<proto::SendMessageResponse>| match reply.into_inner().payload {
            Some(proto::send_message_response::Payload::Task(task)) => task.id,
            other => panic!("{other:?}"),
        };
    let first = task_id(client.send_message(send("Bearer a")).await.unwrap());
    let repeat = task_id(client.send_message(send("Bearer a")).await.unwrap());
    let other = task_id(client.send_message(send("Bearer b")).await.unwrap());
    assert_eq!(first, repeat);
    assert_ne!(first, other);

    // The caller's A2A-Deadline-Ms bounds the handler long before the 10 s of work: the
    // task (WORKING at once) ends FAILED with DEADLINE_EXCEEDED as its cause, and is the
    // answer; on a machine so busy that the work had not started by the deadline, the
    // answer is the error itself.
    let started = Instant::now();
    let mut slow = tonic::Request::new(proto_message("g-slow", "sleep:10000"));
    slow.metadata_mut()
        .insert("a2a-deadline-ms", "300".parse().unwrap());
    match client.send_message(slow).await {
        Ok(reply) => {
            let late = reply.into_inner();
            let Some(proto::send_message_response::Payload::Task(task)) = late.payload else {
                panic!("{late:?}");
            };
            let status = task.status.unwrap();
            assert_eq!(status.state, proto::TaskState::Failed as i32, "{status:?}");
            let cause = format!("{:?}", status.message.unwrap().metadata);
            assert!(cause.contains("DEADLINE_EXCEEDED"), "{cause}");
        }
        Err(late) => {
            assert_eq!(late.code(), tonic::Code::DeadlineExceeded, "{late:?}");
            assert_eq!(
                late.get_details_error_info().unwrap().reason,
                "DEADLINE_EXCEEDED"
            );
        }
    }
    assert!(started.elapsed() < Duration::from_secs(8));

    // grpc-timeout bounds it too (tonic's own timer may answer CANCELLED at the same instant).
    let started = Instant::now();
    let mut slow = tonic::Request::new(proto_message("g-slow-2", "sleep:10000"));
    slow.set_timeout(Duration::from_millis(300));
    // tonic's timer and the server's answer (the task, FAILED) race at the same instant.
    match client.send_message(slow).await {
        Err(late) => assert!(
            matches!(
                late.code(),
                tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            ),
            "{late:?}"
        ),
        Ok(reply) => {
            let Some(proto::send_message_response::Payload::Task(task)) =
                reply.into_inner().payload
            else {
                panic!("not a task");
            };
            assert_eq!(task.status.unwrap().state, proto::TaskState::Failed as i32);
        }
    }
    assert!(started.elapsed() < Duration::from_secs(8));

    // A stream's error ends it with the error's Status.
    let mut stream = client
        .send_streaming_message(proto_message("g-raw-s1", "stream:fail_after:1"))
        .await
        .unwrap()
        .into_inner();
    assert!(stream.next().await.unwrap().is_ok());
    let ended = stream.next().await.unwrap().unwrap_err();
    assert_eq!(ended.code(), tonic::Code::Internal);
    assert_eq!(ended.message(), "Internal error");
    assert!(stream.next().await.is_none());
}

/// `a2a-grpc`'s own client against our gRPC service: the spec's errors arrive, and what it
/// loses is its own doing: it reads a reason only in the `a2a-protocol.org` domain and maps
/// RESOURCE_EXHAUSTED to nothing it knows, so an application's RATE_LIMITED is -32603 to it,
/// and it keeps no details at all (no RetryInfo, no metadata).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_grpc_client_reads_our_errors() {
    let (_agent, _url, grpc_target) = agent();
    let transport = a2a_grpc::GrpcTransport::connect(grpc_target.as_str())
        .await
        .unwrap();
    let client = a2a_client::A2AClient::new(transport);
    let missing = client
        .get_task(&a2a::GetTaskRequest {
            id: "nope".into(),
            history_length: None,
            tenant: None,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code, a2a::error_code::TASK_NOT_FOUND);

    let request = a2a::SendMessageRequest {
        message: a2a::Message::new(a2a::Role::User, vec![a2a::Part::text("fail:rate_limited")]),
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let limited = client.send_message(&request).await.unwrap_err();
    assert_eq!(limited.code, a2a::error_code::INTERNAL_ERROR, "{limited:?}");
    assert_eq!(limited.message, "Rate limited");
    assert!(limited.details.is_none());
}

/// An SDK executor that completes each task with `echo: TEXT`.
struct Echo;

impl a2a_server::AgentExecutor for Echo {
    fn execute(
        &self,
        ctx: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        let text: String = ctx
            .message
            .iter()
            .flat_map(|message| &message.parts)
            .filter_map(|part| match &part.content {
                a2a::PartContent::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let mut reply = a2a::Message::new(
            a2a::Role::Agent,
            vec![a2a::Part::text(format!("echo: {text}"))],
        );
        reply.task_id = Some(ctx.task_id.clone());
        reply.context_id = Some(ctx.context_id.clone());
        let done = a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            status: a2a::TaskStatus {
                state: a2a::TaskState::Completed,
                message: Some(reply),
                timestamp: None,
            },
            metadata: None,
        });
        futures_util::stream::iter([Ok(done)]).boxed()
    }

    fn cancel(
        &self,
        _: a2a_server::ExecutorContext,
    ) -> futures_util::stream::BoxStream<'static, Result<a2a::StreamResponse, a2a::A2AError>> {
        futures_util::stream::empty().boxed()
    }
}

/// Our client against `a2a-grpc`'s own server (its `GrpcHandler` over the SDK's handler).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_against_the_a2a_grpc_server() {
    let handler =
        a2a_server::DefaultRequestHandler::new(Echo, a2a_error::sdk::MemoryTaskStore::new(1 << 20));
    let target = serve_grpc(a2a_grpc::GrpcHandler::new(Arc::new(handler))).await;
    let client = Client::<StandardError>::grpc(target.as_str())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let missing = client
        .call::<_, Value>("GetTask", &json!({"id": "nope"}))
        .await
        .unwrap_err();
    assert!(
        matches!(
            missing,
            ClientError::Remote { ref error, .. } if matches!(**error, StandardError::TaskNotFound { .. })
        ),
        "{missing:?}"
    );
    let hello: Value = client
        .send_message(&message("g-sdk-hello", "hello"))
        .await
        .unwrap();
    assert_eq!(
        hello["task"]["status"]["message"]["parts"][0]["text"],
        "echo: hello"
    );
}

/// Serves `service` on loopback; its target (`127.0.0.1:PORT`).
async fn serve_grpc<T: A2aService>(service: T) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap().to_string();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(A2aServiceServer::new(service))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    target
}

/// The test kit's fault agent, its GetTask failing the first `fail_first` calls with
/// `failure`, then answering the task `t-7`: the agent (its `received()` counts the calls)
/// and its gRPC target.
async fn serve_faulty(fail_first: usize, failure: Answer) -> (FaultAgent, String) {
    let agent = FaultAgent::start(Answer::result(json!({"id": "t-7"}))).await;
    agent.on("GetTask", std::iter::repeat_n(failure, fail_first));
    let target = agent.grpc_url().trim_start_matches("http://").to_owned();
    (agent, target)
}

/// AGENT_UNAVAILABLE with a RetryInfo of 300 ms.
fn unavailable_for_a_while() -> Answer {
    Answer::error(-32053)
        .retry_after(Duration::from_millis(300))
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_info_over_grpc_is_waited_out_and_retried() {
    let (agent, target) = serve_faulty(2, unavailable_for_a_while()).await;
    let client = Client::<RemoteError>::grpc(target.as_str())
        .retry(RetryPolicy::default().max_attempts(4))
        .build()
        .unwrap();
    let started = Instant::now();
    let task: Value = client.call("GetTask", &json!({"id": "t-7"})).await.unwrap();
    assert_eq!(task["id"], "t-7");
    assert_eq!(agent.received().len(), 3);
    // Two waits of the peer's 300 ms at least (a lower bound: no machine is too fast).
    assert!(started.elapsed() >= Duration::from_millis(600));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_retry_cannot_fix_is_not_retried_over_grpc() {
    // A plain gRPC status (no ErrorInfo): what a bare HTTP 400 is over gRPC, INVALID_ARGUMENT.
    let (agent, target) = serve_faulty(100, Answer::http(400, "bad id")).await;
    let client = Client::<RemoteError>::grpc(target.as_str())
        .retry(RetryPolicy::default().base_delay(Duration::from_millis(1)))
        .build()
        .unwrap();
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "t"}))
        .await
        .unwrap_err();
    // A plain gRPC status (no ErrorInfo) reads by its code: INVALID_ARGUMENT is -32602.
    assert_eq!(error.remote().unwrap().code(), -32602);
    assert_eq!(agent.received().len(), 1);

    // Nothing listening: a connection failure, which nothing ran.
    let closed = a2a_error_testkit::closed_url();
    let closed = closed.trim_start_matches("http://");
    let client = Client::<RemoteError>::grpc(closed)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let error = client
        .call::<_, Value>("GetTask", &json!({"id": "t"}))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Connect(_)), "{error:?}");
    assert!(!error.may_have_run());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_breaker_opens_over_grpc() {
    let (agent, target) = serve_faulty(100, Answer::http(503, "down")).await;
    let breakers = BreakerRegistry::new(BreakerConfig::new().consecutive_failures(3));
    let client = Client::<RemoteError>::grpc(target.as_str())
        .retry(RetryPolicy::none())
        .breakers(&breakers)
        .build()
        .unwrap();
    let mut open = 0;
    for _ in 0..6 {
        let error = client
            .call::<_, Value>("GetTask", &json!({"id": "t"}))
            .await
            .unwrap_err();
        if matches!(error, ClientError::CircuitOpen { .. }) {
            open += 1;
        } else {
            // A plain UNAVAILABLE reads as AGENT_UNAVAILABLE.
            assert_eq!(error.remote().unwrap().code(), -32053);
        }
    }
    assert_eq!(agent.received().len(), 3);
    assert_eq!(open, 3);
}

fn run_sdk_client(args: &[&str]) -> (i32, String) {
    crate::common::run_example("sdk_client", args)
}

/// `sdk_client --grpc URL TEXT` keeps the output contract of the HTTP bindings.
#[test]
fn the_sdk_client_example_over_grpc_keeps_its_contract() {
    let (_agent, _url, grpc_target) = agent();
    let url = format!("http://{grpc_target}");

    let (code, out) = run_sdk_client(&["--grpc", &url, "flaky:2"]);
    crate::common::assert_flaky_2_output(code, &out);

    let (code, out) = run_sdk_client(&["--grpc", &url, "fail:unsupported"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("attempt 1: -32004"), "{out}");
    assert!(
        out.ends_with("error: UNSUPPORTED_OPERATION (category validation)\n"),
        "{out}"
    );

    let (code, out) = run_sdk_client(&["--grpc", "--stream", &url, "stream:fail_after:1"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("stream ended after 1 events: -32603"), "{out}");

    // Without the scheme, as agent cards spell a gRPC target.
    let (code, out) = run_sdk_client(&["--grpc", &grpc_target, "hello"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("reply: echo: hello\n"), "{out}");

    let (code, _) = run_sdk_client(&["--grpc", "--rest", &url, "hello"]);
    assert_eq!(code, 2);
}
