//! [`GrpcService`]: an SDK `RequestHandler` served over gRPC as the A2A 1.0 service
//! `lf.a2a.v1.A2AService` (feature `grpc`), with the guarantees of the bridge's HTTP
//! bindings.
//!
//! What it does that `a2a-grpc`'s `GrpcHandler` does not: an error keeps its own reason,
//! domain, metadata and RetryInfo, with the status code of the code table (its
//! `a2a_error_to_status` rebuilds the ErrorInfo from the code, so a custom reason is lost, and
//! sends UNKNOWN for every code it does not list); no internal text reaches the caller; a
//! panicking handler is INTERNAL at once; `grpc-timeout` and `A2A-Deadline-Ms` bound the
//! handler and reach the executor's own calls; SendMessage goes through the bridge's dedup
//! (keyed by the `authorization` metadata as over HTTP), and a request without a message is
//! INVALID_ARGUMENT with a BadRequest naming the field, where the SDK would make up an empty
//! message and run it; a stream ends with the Status of its error, or DEADLINE_EXCEEDED.

mod serve;

pub use serve::GrpcLimits;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use a2a::A2AError;
use a2a_pb::pbconv;
use a2a_pb::proto;
use a2a_pb::proto::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_server::{RequestHandler, ServiceParams};
use axum::http::HeaderMap;
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use super::protojson::missing_in_send;
use super::scoped::Scoped;
use super::serve::{Bridge, Events};
use a2a_error_runtime::deadline::{earliest, until_any};
use a2a_error_runtime::sdk_errors::public;
use a2a_error_runtime::server::endpoint::guarded;
use a2a_error_runtime::wire::bad_request::BadRequest;
use a2a_error_runtime::wire::grpc::{parse_timeout, to_status};
use a2a_error_runtime::wire::method;
use a2a_error_runtime::wire::standard::StandardError;

/// The gRPC service of a [`Bridge`]: add it to a tonic server with
/// [`Bridge::grpc`].
///
/// ```no_run
/// # async fn run(handler: a2a_server::DefaultRequestHandler) {
/// use a2a_error::sdk::Bridge;
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await.unwrap();
/// tonic::transport::Server::builder()
///     .add_service(Bridge::new(handler).grpc())
///     .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
///     .await
///     .unwrap();
/// # }
/// ```
pub struct GrpcService<H> {
    bridge: Bridge<H>,
    /// The bytes of unary replies owed to their peers (made, not yet read), in KiB, shared
    /// by every connection (see [`GrpcLimits::max_owed_bytes`](super::GrpcLimits::max_owed_bytes)).
    owed: Arc<tokio::sync::Semaphore>,
    /// `owed`'s permits in all.
    owed_kib: u32,
}

/// `bytes` in whole KiB, the owed bytes' unit: at least 1, at most `max`.
fn kib(bytes: usize, max: u32) -> u32 {
    u32::try_from(bytes.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .clamp(1, max)
}

/// A unary reply's share of the bytes owed, carried in its response's extensions to the
/// reply body (`serve::Held`), which holds it until the body is dropped: read to its end,
/// reset, or let go with its connection.
#[derive(Clone)]
pub(crate) struct Owed {
    _permit: Arc<tokio::sync::OwnedSemaphorePermit>,
}

impl<H: RequestHandler> Bridge<H> {
    /// The A2A 1.0 gRPC service (`lf.a2a.v1.A2AService`) over this bridge's handler, dedup
    /// and timeout, for `tonic::transport::Server::add_service`. Requests are read up to
    /// tonic's default of 4 MiB a message (set another on the returned server). Unary replies
    /// owed to their peers are bounded by the default of
    /// [`GrpcLimits::max_owed_bytes`](super::GrpcLimits::max_owed_bytes) when served by
    /// [`serve_grpc`](Self::serve_grpc).
    pub fn grpc(&self) -> A2aServiceServer<GrpcService<H>> {
        self.grpc_owing(serve::DEFAULT_MAX_OWED_BYTES)
    }

    /// [`grpc`](Self::grpc) with at most `bytes` of unary replies owed at once.
    pub(crate) fn grpc_owing(&self, bytes: usize) -> A2aServiceServer<GrpcService<H>> {
        let kib = kib(bytes, tokio::sync::Semaphore::MAX_PERMITS as u32);
        A2aServiceServer::new(GrpcService {
            bridge: self.clone(),
            owed: Arc::new(tokio::sync::Semaphore::new(kib as usize)),
            owed_kib: kib,
        })
    }
}

type StatusStream = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// The deadline of a gRPC request: the earlier of its `grpc-timeout` and its
/// `A2A-Deadline-Ms`, read on arrival.
fn deadline(headers: &HeaderMap) -> Option<Instant> {
    let timeout = headers
        .get("grpc-timeout")
        .and_then(|value| parse_timeout(value.as_bytes()));
    earliest(
        a2a_error_runtime::deadline::from_left(timeout),
        a2a_error_runtime::server::headers::Known::read(headers).deadline(),
    )
}

impl<H: RequestHandler> GrpcService<H> {
    /// The end of a request's work: its deadline or the bridge's timeout, the earlier.
    fn end(&self, deadline: Option<Instant>) -> Option<Instant> {
        self.bridge.end(deadline)
    }

    /// Room for a reply of `bytes` among the bytes owed to peers, or AGENT_UNAVAILABLE
    /// (retryable, after a second) at once: a reply that waited for room would be held all
    /// the same. A reply larger than the whole bound is taken only when nothing else is owed.
    fn owe(&self, bytes: usize) -> Result<Owed, Status> {
        match Arc::clone(&self.owed).try_acquire_many_owned(kib(bytes, self.owed_kib)) {
            Ok(permit) => Ok(Owed {
                _permit: Arc::new(permit),
            }),
            Err(_) => {
                a2a_error_runtime::observe::shed();
                Err(to_status(&StandardError::AgentUnavailable {
                    retry_after: Some(std::time::Duration::from_secs(1)),
                }))
            }
        }
    }

    /// `work` until `end`, under a panic guard: DEADLINE_EXCEEDED when the end came first,
    /// INTERNAL (with nothing of the panic) when it panicked. Run inside the request's one
    /// scope (`deadline::served`), which holds `end` for its calls.
    async fn guard<T>(
        &self,
        end: Option<Instant>,
        work: impl Future<Output = Result<T, Status>>,
    ) -> Result<T, Status> {
        match until_any(end, AssertUnwindSafe(work).catch_unwind()).await {
            None => Err(to_status(&StandardError::DeadlineExceeded)),
            Some(Err(panic)) => Err(to_status(&a2a_error_runtime::server::log::caught(
                "a gRPC handler",
                &*panic,
            ))),
            Some(Ok(result)) => result,
        }
    }

    /// A unary RPC: `work` on the handler, the request's service params, its headers (the
    /// metadata), its deadline and its message, guarded until the deadline.
    async fn unary<R, T, Fut>(
        &self,
        method: &'static str,
        request: Request<R>,
        work: impl FnOnce(Arc<Scoped<H>>, ServiceParams, HeaderMap, Option<Instant>, R) -> Fut,
    ) -> Result<Response<T>, Status>
    where
        Fut: Future<Output = Result<T, Status>>,
        T: prost::Message,
    {
        let began = std::time::Instant::now();
        let (metadata, _, message) = request.into_parts();
        let headers = metadata.into_headers();
        let deadline = deadline(&headers);
        // The call runs in the caller's trace (or one of its own), as over HTTP.
        let span = a2a_error_runtime::observe::server_span(
            a2a_error_runtime::observe::System::Grpc,
            method,
        );
        let trace = a2a_error_runtime::server::headers::Known::read(&headers).trace(&span);
        let end = self.end(deadline);
        let result = a2a_error_runtime::inherited::scope(
            a2a_error_runtime::deadline::served(trace, end),
            async move {
                let params = self.bridge.service_params(&headers, deadline);
                let handler = Arc::clone(&self.bridge.handler);
                let work = work(handler, params, headers, deadline, message);
                let reply = self.guard(end, work).await?;
                let owed = self.owe(reply.encoded_len())?;
                let mut response = Response::new(reply);
                response.extensions_mut().insert(owed);
                Ok(response)
            },
        )
        .instrument(span.clone())
        .await;
        served(&span, method, result.as_ref().err(), began);
        result
    }

    /// A streaming RPC: the stream `open` gives (opened as a unary call is run), ended by the
    /// request's deadline with DEADLINE_EXCEEDED, by a panic with INTERNAL, by an error with
    /// its Status.
    async fn streaming<R, Fut>(
        &self,
        method: &'static str,
        request: Request<R>,
        open: impl FnOnce(Bridge<H>, HeaderMap, Option<Instant>, R) -> Fut,
    ) -> Result<Response<StatusStream>, Status>
    where
        Fut: Future<Output = Result<Events, Status>>,
    {
        let began = std::time::Instant::now();
        let (metadata, _, message) = request.into_parts();
        let headers = metadata.into_headers();
        let deadline = deadline(&headers);
        let span = a2a_error_runtime::observe::server_span(
            a2a_error_runtime::observe::System::Grpc,
            method,
        );
        let trace = a2a_error_runtime::server::headers::Known::read(&headers).trace(&span);
        let opened = open(self.bridge.clone(), headers, deadline, message);
        // A stream's request is served once it is open.
        let end = self.end(deadline);
        let events = a2a_error_runtime::inherited::scope(
            a2a_error_runtime::deadline::served(trace, end),
            self.guard(end, opened),
        )
        .instrument(span.clone())
        .await;
        let events = match events {
            Ok(events) => events,
            Err(status) => {
                served(&span, method, Some(&status), began);
                return Err(status);
            }
        };
        let events = guarded(events, |event| {
            Ok(pbconv::to_proto_stream_response(&event.0))
        });
        // The stream outlives the call that opened it: the caller's deadline still ends it,
        // and it is recorded when it ends, by how it ended.
        let record = a2a_error_runtime::observe::StreamServed::a2a(
            a2a_error_runtime::observe::System::Grpc,
            method,
            began,
        );
        let events = a2a_error_runtime::server::endpoint::served(events, deadline, record)
            .map(|item| item.map_err(|error| to_status(&*error)));
        Ok(Response::new(Box::pin(events)))
    }
}

/// The SDK's error as the Status the caller is told: its public form (see
/// [`Bridge`]'s sanitizing).
fn sdk_status(error: &A2AError) -> Status {
    to_status(&public(error))
}

/// SendMessage's checks before the SDK's conversion, as over HTTP: a missing message or
/// messageId, role or parts is INVALID_ARGUMENT with a BadRequest naming the field.
fn checked_send(request: &proto::SendMessageRequest) -> Result<(), Status> {
    let message = request.message.as_ref().map(|message| {
        (
            message.message_id.as_str(),
            message.role,
            !message.parts.is_empty(),
        )
    });
    match missing_in_send(message) {
        Some(field) => Err(to_status(&BadRequest::field(
            field,
            format!("missing field `{field}`"),
        ))),
        None => Ok(()),
    }
}

/// A unary method of the SDK's `RequestHandler`: the request converted from protobuf, the
/// result converted back.
macro_rules! unary {
    ($self:ident, $name:expr, $request:ident, $from:path, $method:ident, $to:expr) => {
        $self
            .unary(
                $name,
                $request,
                |handler, params, _, _, message| async move {
                    handler
                        .$method(&params, $from(&message))
                        .await
                        .map(|result| $to(&result))
                        .map_err(|error| sdk_status(&error))
                },
            )
            .await
    };
}

#[tonic::async_trait]
impl<H: RequestHandler> A2aService for GrpcService<H> {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let bridge = self.bridge.clone();
        self.unary(
            method::SEND_MESSAGE,
            request,
            |_, _, headers, deadline, message| async move {
                checked_send(&message)?;
                let request = Box::new(pbconv::from_proto_send_message_request(&message));
                bridge
                    .send_message(&headers, deadline, request)
                    .await
                    .map_err(|error| to_status(&error))
                    .and_then(|reply| {
                        // A replay is read back from its JSON; a reply this process made is not.
                        let reply = reply.into_response().map_err(|error| {
                            tracing::error!("a remembered reply did not read back: {error}");
                            to_status(&StandardError::Internal)
                        })?;
                        Ok(pbconv::to_proto_send_message_response(&reply))
                    })
            },
        )
        .await
    }

    type SendStreamingMessageStream = StatusStream;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<StatusStream>, Status> {
        self.streaming(
            method::SEND_STREAMING_MESSAGE,
            request,
            |bridge, headers, deadline, message| async move {
                checked_send(&message)?;
                let request = pbconv::from_proto_send_message_request(&message);
                bridge
                    .send_streaming(&headers, deadline, request)
                    .await
                    .map_err(|error| to_status(&error))
            },
        )
        .await
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        unary!(
            self,
            method::GET_TASK,
            request,
            pbconv::from_proto_get_task_request,
            get_task,
            pbconv::to_proto_task
        )
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        unary!(
            self,
            method::LIST_TASKS,
            request,
            pbconv::from_proto_list_tasks_request,
            list_tasks,
            pbconv::to_proto_list_tasks_response
        )
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        unary!(
            self,
            method::CANCEL_TASK,
            request,
            pbconv::from_proto_cancel_task_request,
            cancel_task,
            pbconv::to_proto_task
        )
    }

    type SubscribeToTaskStream = StatusStream;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<StatusStream>, Status> {
        self.streaming(
            method::SUBSCRIBE_TO_TASK,
            request,
            |bridge, headers, deadline, message| async move {
                let request = pbconv::from_proto_subscribe_to_task_request(&message);
                bridge
                    .subscribe(&headers, deadline, request)
                    .await
                    .map_err(|error| to_status(&error))
            },
        )
        .await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        unary!(
            self,
            method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
            request,
            pbconv::from_proto_create_task_push_notification_config_request,
            create_push_config,
            pbconv::to_proto_task_push_notification_config
        )
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        unary!(
            self,
            method::GET_TASK_PUSH_NOTIFICATION_CONFIG,
            request,
            pbconv::from_proto_get_task_push_notification_config_request,
            get_push_config,
            pbconv::to_proto_task_push_notification_config
        )
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        unary!(
            self,
            method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
            request,
            pbconv::from_proto_list_task_push_notification_configs_request,
            list_push_configs,
            pbconv::to_proto_list_task_push_notification_configs_response
        )
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        unary!(
            self,
            method::GET_EXTENDED_AGENT_CARD,
            request,
            pbconv::from_proto_get_extended_agent_card_request,
            get_extended_agent_card,
            pbconv::to_proto_agent_card
        )
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        unary!(
            self,
            method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
            request,
            pbconv::from_proto_delete_task_push_notification_config_request,
            delete_push_config,
            |_: &()| ()
        )
    }
}

/// Records a request to `method` served since `began`, failed with `status` or not (the A2A
/// code and reason its details carry).
fn served(
    span: &tracing::Span,
    method: &'static str,
    status: Option<&Status>,
    began: std::time::Instant,
) {
    let object = status.map(a2a_error_runtime::wire::grpc::error_object);
    let failed = object
        .as_ref()
        .map(|object| (object.code, object.reason().unwrap_or("OTHER")));
    a2a_error_runtime::observe::a2a_request_served(
        a2a_error_runtime::observe::System::Grpc,
        Some(method),
        span,
        failed,
        began.elapsed(),
    );
}
