//! The gRPC binding (feature `grpc`): a call as one RPC of the A2A 1.0 service
//! `lf.a2a.v1.A2AService` over a tonic channel.
//!
//! A call's params are the A2A 1.0 JSON of the method's request message, which is the
//! protobuf JSON mapping of the gRPC request: they are read into the protobuf type
//! (`a2a_pb::protojson`), sent as protobuf, and the reply is turned back into the same JSON
//! the other bindings return. So every layer above, and the typed client's callers, see one
//! shape whatever the binding.

pub(crate) mod guard;

use std::error::Error as _;
use std::time::Duration;

use a2a_pb::protojson as pj;
use futures_util::StreamExt;
use reqwest::header::HeaderValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::error::ClientError;
use super::flow::{Call, RawJson, Reply};
use super::http::{self, ReplyLimits};
use crate::resilience::Timeout;
use crate::wire::error::FromErrorObject;
use crate::wire::grpc::{MAX_HEADER_LIST_BYTES, object_for};
use crate::wire::headers::{DEADLINE_HEADER, VERSION_HEADER};
use crate::wire::method;

/// The settings of one gRPC transport: the channel (its connection, reconnected as needed),
/// the version sent and the reply limits.
#[derive(Clone, Debug)]
pub(crate) struct Grpc {
    pub(crate) channel: guard::Guarded,
    pub(crate) url: String,
    pub(crate) version: HeaderValue,
    pub(crate) limits: ReplyLimits,
}

impl Grpc {
    /// The agent at `url` (`http://host:port`), connected on first use within
    /// `connect_timeout`; a lost connection is opened again by the next call.
    pub(crate) fn lazy(
        url: &str,
        connect_timeout: Duration,
    ) -> Result<Grpc, tonic::transport::Error> {
        let channel = tonic::transport::Endpoint::from_shared(url.to_owned())?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
            .connect_lazy();
        Ok(Grpc {
            channel: guard::Guarded(channel),
            url: url.to_owned(),
            version: HeaderValue::from_static(http::DEFAULT_VERSION),
            limits: ReplyLimits::default(),
        })
    }
}

/// One exchange of `call`: the RPC its method names, within `deadline`.
pub(crate) async fn exchange<E>(
    grpc: Grpc,
    call: Call,
    deadline: Option<Instant>,
) -> Result<Reply<E>, ClientError<E>>
where
    E: FromErrorObject + Send + 'static,
{
    let Some(method) = method::lookup(call.method()) else {
        return Err(ClientError::InvalidCall {
            detail: format!("{:?} is not an A2A method", call.method()),
        });
    };
    macro_rules! unary {
        ($request:ty => $reply:ty) => {
            unary::<$request, $reply, E>(grpc, &call, method.name).await
        };
    }
    macro_rules! streaming {
        ($request:ty) => {
            streaming::<$request, E>(grpc, &call, method.name, deadline).await
        };
    }
    match method.name {
        method::SEND_MESSAGE => unary!(pj::SendMessageRequest => pj::SendMessageResponse),
        method::SEND_STREAMING_MESSAGE => streaming!(pj::SendMessageRequest),
        method::GET_TASK => unary!(pj::GetTaskRequest => pj::Task),
        method::LIST_TASKS => unary!(pj::ListTasksRequest => pj::ListTasksResponse),
        method::CANCEL_TASK => unary!(pj::CancelTaskRequest => pj::Task),
        method::SUBSCRIBE_TO_TASK => streaming!(pj::SubscribeToTaskRequest),
        method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            unary!(pj::TaskPushNotificationConfig => pj::TaskPushNotificationConfig)
        }
        method::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            unary!(pj::GetTaskPushNotificationConfigRequest => pj::TaskPushNotificationConfig)
        }
        method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            unary!(pj::ListTaskPushNotificationConfigsRequest
                => pj::ListTaskPushNotificationConfigsResponse)
        }
        method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            unary!(pj::DeleteTaskPushNotificationConfigRequest => ())
        }
        method::GET_EXTENDED_AGENT_CARD => unary!(pj::GetExtendedAgentCardRequest => pj::AgentCard),
        other => Err(ClientError::InvalidCall {
            detail: format!("{other} has no gRPC method here"),
        }),
    }
}

/// The request of `call`: its params read into the protobuf type, its extra headers, the
/// version and its deadline (`grpc-timeout`, and `A2A-Deadline-Ms` as over HTTP).
fn request<T: DeserializeOwned, E>(
    grpc: &Grpc,
    call: &Call,
) -> Result<tonic::Request<T>, ClientError<E>> {
    let message: T =
        serde_json::from_slice(call.params()).map_err(|error| ClientError::InvalidCall {
            detail: format!("params are not a {} request: {error}", call.method()),
        })?;
    let mut request = tonic::Request::new(message);
    let metadata = request.metadata_mut();
    let owned = [VERSION_HEADER, DEADLINE_HEADER, "te", "content-type"];
    for (name, value) in call.headers() {
        if owned
            .iter()
            .any(|own| name.as_str().eq_ignore_ascii_case(own))
            || name.as_str().starts_with("grpc-")
        {
            continue;
        }
        if let (Ok(name), Ok(value)) = (
            tonic::metadata::AsciiMetadataKey::from_bytes(name.as_str().as_bytes()),
            tonic::metadata::AsciiMetadataValue::try_from(value.as_bytes()),
        ) {
            metadata.append(name, value);
        }
    }
    if let Ok(version) = tonic::metadata::AsciiMetadataValue::try_from(grpc.version.as_bytes()) {
        metadata.insert("a2a-version", version);
    }
    if let Some(left) = call.time_left() {
        if let Ok(value) = left.as_millis().to_string().parse() {
            metadata.insert("a2a-deadline-ms", value);
        }
        request.set_timeout(left);
    }
    Ok(request)
}

/// A reply message as the A2A JSON the other bindings return.
fn json<T: Serialize, E>(message: &T) -> Result<RawJson, ClientError<E>> {
    // Metadata numbers are doubles in protobuf, and its timestamps end in `+00:00`: both
    // written as the other bindings write them (`-32603`, not `-32603.0`; `Z`).
    crate::wire::protojson::to_vec(message, true)
        .and_then(crate::wire::protojson::raw)
        .map_err(|_| ClientError::Malformed {
            detail: "a reply message has no JSON form".into(),
            http: None,
        })
}

/// What one RPC of `call` needs: a client of the channel reading messages up to `limit`
/// bytes, ready to send; the request; the method's path.
type Opened<Q> = (
    tonic::client::Grpc<guard::Guarded>,
    tonic::Request<Q>,
    tonic::codegen::http::uri::PathAndQuery,
);

async fn open<Q: DeserializeOwned, E>(
    grpc: Grpc,
    call: &Call,
    name: &str,
    limit: usize,
) -> Result<Opened<Q>, ClientError<E>> {
    let path = format!("/lf.a2a.v1.A2AService/{name}")
        .parse()
        .map_err(|_| ClientError::InvalidCall {
            detail: format!("{name} is not a gRPC method name"),
        })?;
    let request = request::<Q, E>(&grpc, call)?;
    let mut client = tonic::client::Grpc::new(grpc.channel).max_decoding_message_size(limit);
    client
        .ready()
        .await
        .map_err(|error| ClientError::Connect(error.into()))?;
    Ok((client, request, path))
}

async fn unary<Q, R, E>(grpc: Grpc, call: &Call, name: &str) -> Result<Reply<E>, ClientError<E>>
where
    Q: DeserializeOwned + prost::Message + Send + Sync + 'static,
    R: Serialize + prost::Message + Default + Send + Sync + 'static,
    E: FromErrorObject,
{
    let limit = grpc.limits.body_limit();
    let (mut client, request, path) = open::<Q, E>(grpc, call, name, limit).await?;
    let codec = tonic_prost::ProstCodec::<Q, R>::default();
    let reply = client
        .unary(request, path, codec)
        .await
        .map_err(|status| failure(status, limit))?;
    Ok(Reply::Result(json(reply.get_ref())?))
}

async fn streaming<Q, E>(
    grpc: Grpc,
    call: &Call,
    name: &str,
    deadline: Option<Instant>,
) -> Result<Reply<E>, ClientError<E>>
where
    Q: DeserializeOwned + prost::Message + Send + Sync + 'static,
    E: FromErrorObject + Send + 'static,
{
    let limits = grpc.limits;
    let limit = limits.event_limit();
    let (mut client, request, path) = open::<Q, E>(grpc, call, name, limit).await?;
    let codec = tonic_prost::ProstCodec::<Q, pj::StreamResponse>::default();
    let events = client
        .server_streaming(request, path, codec)
        .await
        .map_err(|status| failure(status, limit))?
        .into_inner()
        .map(move |item| match item {
            Ok(event) => json(&event),
            Err(status) => Err(failure(status, limit)),
        });
    http::first_event(Box::pin(events), limits, deadline).await
}

/// What a failed RPC was. tonic reports failures of its own (no connection, a connection
/// lost, a reply it could not read) as statuses too: those carry the error behind them as
/// their source, or are the decoder's own refusals, and become the `ClientError` of the same
/// failure over HTTP. Everything else is the peer's status, read as an error object.
fn failure<E: FromErrorObject>(status: tonic::Status, limit: usize) -> ClientError<E> {
    if let Some(source) = status.source() {
        return match connection_failure(source) {
            Some(failure) => failure,
            None => ClientError::Transport(Box::new(status)),
        };
    }
    // The decoder's refusals have no details: a peer's error status always has its ErrorInfo.
    if status.details().is_empty() {
        let message = status.message();
        if status.code() == tonic::Code::OutOfRange
            && message.starts_with("Error, decoded message length too large")
        {
            return ClientError::ReplyTooLarge { limit, http: None };
        }
        if status.code() == tonic::Code::Internal && message.starts_with("failed to decode") {
            return ClientError::Malformed {
                detail: "a reply message does not decode as the method's reply".into(),
                http: None,
            };
        }
    }
    ClientError::from_object(object_for::<E>(&status), None)
}

/// A failure to open the connection (nothing was sent), or a connect timeout, found in the
/// chain of errors behind a status.
fn connection_failure<E>(source: &(dyn std::error::Error + 'static)) -> Option<ClientError<E>> {
    let mut next = Some(source);
    while let Some(error) = next {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionRefused | AddrNotAvailable | NotFound | HostUnreachable
                | NetworkUnreachable => {
                    return Some(ClientError::Connect(io.to_string().into()));
                }
                TimedOut => return Some(ClientError::Timeout(Timeout::Connect)),
                _ => {}
            }
        }
        let text = error.to_string();
        if text.contains("tcp connect error") || text.contains("dns error") {
            return Some(ClientError::Connect(text.into()));
        }
        next = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_written_as_the_other_bindings_write_it() {
        let task: pj::Task = serde_json::from_value(serde_json::json!({
            "id": "t-1",
            "status": {"state": "TASK_STATE_FAILED", "timestamp": "2026-11-27T10:00:00.5Z"},
            "metadata": {"failure": {"code": -32603.0}},
        }))
        .unwrap();
        let written = json::<_, crate::RemoteError>(&task).unwrap();
        let written = written.get();
        // protobuf's timestamp writes `+00:00`, and the number `-32603.0`.
        assert_eq!(
            written,
            r#"{"id":"t-1","metadata":{"failure":{"code":-32603}},"status":{"state":"TASK_STATE_FAILED","timestamp":"2026-11-27T10:00:00.500Z"}}"#
        );
    }
}
