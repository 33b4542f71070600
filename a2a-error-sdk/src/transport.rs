//! [`StackTransport`] and [`TransportFactory`]: the SDK client's `Transport` backed by this crate's
//! [`Client`] and its layers.

use std::borrow::Cow;
use std::sync::Arc;

use a2a::{
    A2AError, AgentCard, AgentInterface, CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use a2a_client::{BoxStream, ServiceParams};
use a2a_pb::protojson_conv::{self, ProtoJsonPayload};
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use a2a_error_runtime::client::{Call, ClientError, Reply};
use a2a_error_runtime::sdk_errors::from_client_failure;
use a2a_error_runtime::wire::method;
use a2a_error_runtime::wire::remote::RemoteError;
use a2a_error_runtime::{Client, ClientBuilder};

/// The SDK client's `Transport` over this crate's [`Client`]: the total timeout, retries
/// with the retry budget and `Retry-After`, the agent's circuit breaker, the attempt timeout,
/// hedged reads, the `A2A-Deadline-Ms` header (and a deadline inherited inside a handler),
/// safe repeats (a SendMessage retried sends the same bytes, so the same messageId) and the
/// reply limits, over JSON-RPC, HTTP+JSON or gRPC as the client was built. Streams are retried only
/// before their first event.
///
/// Its errors are `A2AError`s: an error reply is the peer's own (so
/// [`decode`](a2a_error_runtime::sdk_errors::decode) reads the caller's enum from it), and what our
/// [`ClientError`] knew (HTTP status, `Retry-After`, which timeout, connection failure or
/// server error) is recovered with [`client_error`](a2a_error_runtime::sdk_errors::client_error).
///
/// ```no_run
/// # async fn run() -> Result<(), a2a::A2AError> {
/// use a2a_client::A2AClient;
/// use a2a_error::{Client, sdk};
///
/// let client = Client::jsonrpc("http://127.0.0.1:8080/").build().unwrap();
/// let sdk_client = A2AClient::new(sdk::StackTransport::new(client));
/// let task = sdk_client
///     .get_task(&a2a::GetTaskRequest { id: "t1".into(), history_length: None, tenant: None })
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct StackTransport {
    client: Client<RemoteError>,
}

impl StackTransport {
    /// The transport over `client` (built with [`Client::jsonrpc`] or [`Client::rest`] and
    /// whatever layers you chose).
    pub fn new(client: Client<RemoteError>) -> Self {
        StackTransport { client }
    }

    /// The client underneath (its breaker, its name).
    pub fn client(&self) -> &Client<RemoteError> {
        &self.client
    }

    async fn unary<Req, Resp>(
        &self,
        method: &'static str,
        params: &ServiceParams,
        request: &Req,
    ) -> Result<Resp, A2AError>
    where
        Req: ProtoJsonPayload,
        Resp: ProtoJsonPayload,
    {
        match self.client.send(call(method, params, request)?).await {
            Ok(Reply::Result(json)) => read(json.get()),
            Ok(Reply::Stream(_)) => {
                Err(malformed("a stream answered a call that is not streaming"))
            }
            Err(error) => Err(from_client_failure(&error)),
        }
    }

    async fn stream<Req: ProtoJsonPayload>(
        &self,
        method: &'static str,
        params: &ServiceParams,
        request: &Req,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        let call = call(method, params, request)?.streaming();
        match self.client.send(call).await {
            Ok(Reply::Stream(events)) => Ok(events
                .map(|event| match event {
                    Ok(json) => read(json.get()),
                    Err(error) => Err(from_client_failure(&error)),
                })
                .boxed()),
            // A server may answer a streaming method with one JSON result.
            Ok(Reply::Result(json)) => Ok(futures_util::stream::iter([read(json.get())]).boxed()),
            Err(error) => Err(from_client_failure(&error)),
        }
    }
}

/// The call for `request`: its A2A JSON, and the SDK's service params (its interceptors'
/// credentials, extensions) as headers.
fn call<Req: ProtoJsonPayload>(
    method: &'static str,
    params: &ServiceParams,
    request: &Req,
) -> Result<Call, A2AError> {
    let json = protojson_conv::to_value(request)
        .map_err(|error| error.to_string())
        .and_then(|json| serde_json::to_vec(&json).map_err(|error| error.to_string()))
        .map_err(|error| {
            from_client_failure(&ClientError::InvalidCall {
                detail: format!("the request does not convert: {error}"),
            })
        })?;
    let mut headers = HeaderMap::new();
    for (name, values) in params {
        let Ok(name) = HeaderName::try_from(name.as_str()) else {
            continue;
        };
        for value in values {
            if let Ok(value) = HeaderValue::try_from(value.as_str()) {
                headers.append(name.clone(), value);
            }
        }
    }
    Ok(Call::from_json(Cow::Borrowed(method), json).with_headers(headers))
}

fn read<T: ProtoJsonPayload>(json: &str) -> Result<T, A2AError> {
    protojson_conv::from_str(json)
        .map_err(|error| malformed(&format!("the result is not the expected type: {error}")))
}

fn malformed(detail: &str) -> A2AError {
    from_client_failure(&ClientError::Malformed {
        detail: detail.to_owned(),
        http: None,
    })
}

#[async_trait::async_trait]
impl a2a_client::Transport for StackTransport {
    async fn send_message(
        &self,
        params: &ServiceParams,
        req: &SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        self.unary(method::SEND_MESSAGE, params, req).await
    }

    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: &SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.stream(method::SEND_STREAMING_MESSAGE, params, req)
            .await
    }

    async fn get_task(
        &self,
        params: &ServiceParams,
        req: &GetTaskRequest,
    ) -> Result<Task, A2AError> {
        self.unary(method::GET_TASK, params, req).await
    }

    async fn list_tasks(
        &self,
        params: &ServiceParams,
        req: &ListTasksRequest,
    ) -> Result<ListTasksResponse, A2AError> {
        self.unary(method::LIST_TASKS, params, req).await
    }

    async fn cancel_task(
        &self,
        params: &ServiceParams,
        req: &CancelTaskRequest,
    ) -> Result<Task, A2AError> {
        self.unary(method::CANCEL_TASK, params, req).await
    }

    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: &SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.stream(method::SUBSCRIBE_TO_TASK, params, req).await
    }

    async fn create_push_config(
        &self,
        params: &ServiceParams,
        req: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.unary(method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG, params, req)
            .await
    }

    async fn get_push_config(
        &self,
        params: &ServiceParams,
        req: &GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.unary(method::GET_TASK_PUSH_NOTIFICATION_CONFIG, params, req)
            .await
    }

    async fn list_push_configs(
        &self,
        params: &ServiceParams,
        req: &ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.unary(method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS, params, req)
            .await
    }

    async fn delete_push_config(
        &self,
        params: &ServiceParams,
        req: &DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        let call = call(method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG, params, req)?;
        match self.client.send(call).await {
            Ok(_) => Ok(()),
            Err(error) => Err(from_client_failure(&error)),
        }
    }

    async fn get_extended_agent_card(
        &self,
        params: &ServiceParams,
        req: &GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.unary(method::GET_EXTENDED_AGENT_CARD, params, req)
            .await
    }

    async fn destroy(&self) -> Result<(), A2AError> {
        Ok(())
    }
}

type Configure =
    Arc<dyn Fn(ClientBuilder<RemoteError>) -> ClientBuilder<RemoteError> + Send + Sync>;

/// The SDK's `TransportFactory` for [`StackTransport`]: register it with the SDK's
/// `A2AClientFactory` (it replaces the SDK's own factory for its binding) and keep your
/// `A2AClient` code. Each transport it creates is a [`Client`] for the interface's URL,
/// configured by your closure.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use a2a_client::A2AClientFactory;
/// use a2a_error::sdk::TransportFactory;
///
/// let factory = A2AClientFactory::builder()
///     .register(Arc::new(TransportFactory::jsonrpc()
///         .configure(|client| client.total_timeout(Duration::from_secs(10)))))
///     .register(Arc::new(TransportFactory::rest()))
///     .build();
/// ```
#[derive(Clone)]
pub struct TransportFactory {
    protocol: &'static str,
    configure: Configure,
}

impl std::fmt::Debug for TransportFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransportFactory")
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl TransportFactory {
    /// For the agent card's `JSONRPC` interfaces.
    pub fn jsonrpc() -> Self {
        TransportFactory {
            protocol: "JSONRPC",
            configure: Arc::new(|builder| builder),
        }
    }

    /// For the agent card's `HTTP+JSON` interfaces.
    pub fn rest() -> Self {
        TransportFactory {
            protocol: "HTTP+JSON",
            configure: Arc::new(|builder| builder),
        }
    }

    /// For the agent card's `GRPC` interfaces (feature `grpc`): the same stack over the gRPC
    /// binding.
    #[cfg(feature = "grpc")]
    pub fn grpc() -> Self {
        TransportFactory {
            protocol: "GRPC",
            configure: Arc::new(|builder| builder),
        }
    }

    /// Configures each client this factory builds (timeouts, retry policy, breakers, hedging,
    /// bulkhead, limits).
    pub fn configure(
        mut self,
        configure: impl Fn(ClientBuilder<RemoteError>) -> ClientBuilder<RemoteError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.configure = Arc::new(configure);
        self
    }
}

#[async_trait::async_trait]
impl a2a_client::TransportFactory for TransportFactory {
    fn protocol(&self) -> &str {
        self.protocol
    }

    async fn create(
        &self,
        card: &AgentCard,
        iface: &AgentInterface,
    ) -> Result<Box<dyn a2a_client::Transport>, A2AError> {
        let builder = match self.protocol {
            "JSONRPC" => Client::jsonrpc(iface.url.as_str()),
            #[cfg(feature = "grpc")]
            "GRPC" => Client::grpc(iface.url.as_str()),
            _ => Client::rest(iface.url.as_str()),
        };
        // Named by the builder from the URL, not by the card's `name`: names become metric
        // labels, and a card's text is the peer's.
        let _ = card;
        let client = (self.configure)(builder).build().map_err(|error| {
            from_client_failure(&ClientError::InvalidCall {
                detail: format!("the client could not be built: {error}"),
            })
        })?;
        Ok(Box::new(StackTransport::new(client)))
    }
}
