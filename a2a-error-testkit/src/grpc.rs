//! The fault agent over gRPC (feature `grpc`): `lf.a2a.v1.A2AService`, answering from the same
//! script as the HTTP bindings.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_error_runtime::grpc::{code_named, to_status};
use a2a_pb::proto::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::{proto, protojson};
use futures_util::Stream;
use prost::Message;
use serde_json::Value;
use tonic::{Request, Response, Status};

use crate::answer::Answer;
use crate::script::{Received, Script, Unanswered};

type Events = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// Serves the script over gRPC on a fresh loopback port; returns `http://127.0.0.1:PORT`.
pub(crate) async fn serve(script: Arc<Mutex<Script>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("a bound address"));
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let service = A2aServiceServer::new(GrpcFaults { script });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    url
}

struct GrpcFaults {
    script: Arc<Mutex<Script>>,
}

impl GrpcFaults {
    /// Records the call and takes its answer.
    fn take<T: Message>(
        &self,
        method: &str,
        request: Request<T>,
        message_id: Option<String>,
    ) -> Answer {
        let (metadata, _, message) = request.into_parts();
        let headers = metadata.into_headers();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let received = Received {
            binding: "grpc",
            method: Some(method.to_owned()),
            deadline: header("a2a-deadline-ms")
                .and_then(|ms| ms.trim().parse().ok())
                .map(Duration::from_millis),
            message_id,
            traceparent: header("traceparent"),
            body: message.encode_to_vec().into(),
            headers,
            at: Instant::now(),
        };
        let mut script = self.script.lock().unwrap_or_else(|e| e.into_inner());
        script.received.push(received);
        script.next(Some(method))
    }

    /// A unary answer: the result read into the method's reply type `P` (its A2A 1.0 JSON,
    /// through the matching ProtoJSON type `J`), or the error's Status.
    async fn unary<P, J>(&self, answer: Answer) -> Result<Response<P>, Status>
    where
        P: Message + Default,
        J: Message + Default + serde::de::DeserializeOwned,
    {
        let mut unanswered = Unanswered(self.script.clone(), false);
        let result = match settle(answer).await {
            Settled::Result(value) => reply::<P, J>(value).map(Response::new),
            Settled::Echo => Ok(Response::new(P::default())),
            Settled::Stream(..) => Err(Status::internal("a stream answered a unary method")),
            Settled::Failed(status) => Err(status),
        };
        unanswered.1 = true;
        result
    }

    /// A streaming answer: each event read as a `StreamResponse`, then the error's Status.
    async fn streaming(&self, answer: Answer) -> Result<Response<Events>, Status> {
        let mut unanswered = Unanswered(self.script.clone(), false);
        let result = match settle(answer).await {
            Settled::Result(value) => events(vec![value], None),
            Settled::Echo => events(Vec::new(), None),
            Settled::Stream(values, then) => events(values, then),
            Settled::Failed(status) => Err(status),
        };
        unanswered.1 = true;
        result
    }
}

/// What an answer comes to once its delays are waited out.
enum Settled {
    Result(Value),
    Echo,
    Stream(Vec<Value>, Option<Status>),
    Failed(Status),
}

/// Waits out `answer`'s delays (a black hole forever) and reads what is left as gRPC does:
/// a bare HTTP status becomes its gRPC code, a reset or malformed bytes become UNAVAILABLE and
/// INTERNAL (tonic sends whole messages; a trickle is sent whole).
async fn settle(answer: Answer) -> Settled {
    let mut answer = answer;
    loop {
        match answer {
            Answer::Delay(delay, then) => {
                tokio::time::sleep(delay).await;
                answer = *then;
            }
            Answer::Trickle(_, then) => answer = *then,
            Answer::BlackHole => std::future::pending::<()>().await,
            Answer::Result(value) => return Settled::Result(value),
            Answer::Echo => return Settled::Echo,
            Answer::Error(error) => return Settled::Failed(to_status(&error.to_remote())),
            Answer::Http { status, body, .. } => {
                let code = a2a_error_runtime::code::code_for_http(status, None);
                let name =
                    a2a_error_runtime::code::lookup(code).map_or("UNKNOWN", |row| row.grpc_status);
                return Settled::Failed(Status::new(code_named(name), body));
            }
            Answer::Reset => return Settled::Failed(Status::unavailable("connection reset")),
            Answer::Raw(_) => return Settled::Failed(Status::internal("malformed reply")),
            Answer::Stream { events, then } => {
                let then = then.map(|error| to_status(&error.to_remote()));
                return Settled::Stream(events, then);
            }
        }
    }
}

/// `value` (A2A 1.0 JSON) as the protobuf message `P`, through its ProtoJSON twin `J`.
fn reply<P, J>(value: Value) -> Result<P, Status>
where
    P: Message + Default,
    J: Message + Default + serde::de::DeserializeOwned,
{
    let json: J = serde_json::from_value(value)
        .map_err(|error| Status::internal(format!("the scripted result does not fit: {error}")))?;
    P::decode(json.encode_to_vec().as_slice()).map_err(|error| Status::internal(error.to_string()))
}

fn events(values: Vec<Value>, then: Option<Status>) -> Result<Response<Events>, Status> {
    let mut items = Vec::new();
    for value in values {
        items.push(Ok(
            reply::<proto::StreamResponse, protojson::StreamResponse>(value)?,
        ));
    }
    items.extend(then.map(Err));
    Ok(Response::new(Box::pin(futures_util::stream::iter(items))))
}

/// A unary method: `$name` answered as `$reply` (ProtoJSON twin `$json`).
macro_rules! unary {
    ($self:ident, $request:ident, $name:literal, $reply:ty, $json:ty) => {{
        let answer = $self.take($name, $request, None);
        $self.unary::<$reply, $json>(answer).await
    }};
}

#[tonic::async_trait]
impl A2aService for GrpcFaults {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let id = request
            .get_ref()
            .message
            .as_ref()
            .map(|m| m.message_id.clone());
        let answer = self.take("SendMessage", request, id);
        self.unary::<proto::SendMessageResponse, protojson::SendMessageResponse>(answer)
            .await
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let id = request
            .get_ref()
            .message
            .as_ref()
            .map(|m| m.message_id.clone());
        let answer = self.take("SendStreamingMessage", request, id);
        self.streaming(answer).await
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        unary!(self, request, "GetTask", proto::Task, protojson::Task)
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        unary!(
            self,
            request,
            "ListTasks",
            proto::ListTasksResponse,
            protojson::ListTasksResponse
        )
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        unary!(self, request, "CancelTask", proto::Task, protojson::Task)
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let answer = self.take("SubscribeToTask", request, None);
        self.streaming(answer).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        unary!(
            self,
            request,
            "CreateTaskPushNotificationConfig",
            proto::TaskPushNotificationConfig,
            protojson::TaskPushNotificationConfig
        )
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        unary!(
            self,
            request,
            "GetTaskPushNotificationConfig",
            proto::TaskPushNotificationConfig,
            protojson::TaskPushNotificationConfig
        )
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        unary!(
            self,
            request,
            "ListTaskPushNotificationConfigs",
            proto::ListTaskPushNotificationConfigsResponse,
            protojson::ListTaskPushNotificationConfigsResponse
        )
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        unary!(
            self,
            request,
            "GetExtendedAgentCard",
            proto::AgentCard,
            protojson::AgentCard
        )
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let answer = self.take("DeleteTaskPushNotificationConfig", request, None);
        let mut unanswered = Unanswered(self.script.clone(), false);
        let result = match settle(answer).await {
            Settled::Failed(status) => Err(status),
            _ => Ok(Response::new(())),
        };
        unanswered.1 = true;
        result
    }
}
