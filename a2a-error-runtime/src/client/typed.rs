//! `Client`: the typed front of a transport stack, and its builder.

use std::borrow::Cow;
use std::time::Duration;

use futures_util::stream;
use reqwest::header::HeaderValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::call::{Call, EventStream, Reply};
use super::error::ClientError;
use super::http::ReplyLimits;
use super::jsonrpc::JsonRpcTransport;
use super::rest::RestTransport;
use crate::error::{A2aError, FromErrorObject};
use crate::remote::RemoteError;
use crate::retry::{Retry, RetryPolicy};

/// A client of one agent: calls go through the stack it was built with (by default the
/// [`Retry`] decorator over an HTTP transport) and end in a typed result or a
/// [`ClientError<E>`].
///
/// Cloning is cheap and clones share the connection pool and the retry budget.
pub struct Client<E = RemoteError> {
    service: BoxCloneSyncService<Call, Reply<E>, ClientError<E>>,
}

impl<E> Clone for Client<E> {
    fn clone(&self) -> Self {
        Client {
            service: self.service.clone(),
        }
    }
}

impl<E> std::fmt::Debug for Client<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl<E> Client<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    /// A builder for an agent's JSON-RPC interface at `url`.
    pub fn jsonrpc(url: impl Into<String>) -> ClientBuilder<E> {
        ClientBuilder::new(url.into(), Binding::JsonRpc)
    }

    /// A builder for an agent's HTTP+JSON interface at base URL `url`.
    pub fn rest(url: impl Into<String>) -> ClientBuilder<E> {
        ClientBuilder::new(url.into(), Binding::Rest)
    }

    /// A client over any stack: a transport, `Retry<transport>`, or more tower layers.
    pub fn from_service<S>(service: S) -> Self
    where
        S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Clone + Send + Sync,
        S: 'static,
        S::Future: Send + 'static,
    {
        Client {
            service: BoxCloneSyncService::new(service),
        }
    }

    /// Sends a prepared call through the stack.
    pub async fn send(&self, call: Call) -> Result<Reply<E>, ClientError<E>> {
        self.service.clone().oneshot(call).await
    }

    /// Calls `method` with `params` and reads its result as `R`.
    pub async fn call<P, R>(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &P,
    ) -> Result<R, ClientError<E>>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let call = Call::new(method, params).map_err(invalid_params)?;
        match self.send(call).await? {
            Reply::Result(value) => {
                serde_json::from_value(value).map_err(|error| ClientError::Malformed {
                    detail: format!("the result is not the expected type: {error}"),
                    http: None,
                })
            }
            Reply::Stream(_) => Err(ClientError::Malformed {
                detail: "a stream answered a call that is not streaming".into(),
                http: None,
            }),
        }
    }

    /// `SendMessage`. Every attempt sends the same request, so the message keeps its
    /// `messageId` and a server that deduplicates runs it once.
    pub async fn send_message<P, R>(&self, request: &P) -> Result<R, ClientError<E>>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        self.call("SendMessage", request).await
    }

    /// Calls a streaming method. Failures before the first event are retried like any call;
    /// an error after it ends the stream and is not retried.
    pub async fn stream<P>(
        &self,
        method: impl Into<Cow<'static, str>>,
        params: &P,
    ) -> Result<EventStream<E>, ClientError<E>>
    where
        P: Serialize + ?Sized,
    {
        let call = Call::new(method, params)
            .map_err(invalid_params)?
            .streaming();
        match self.send(call).await? {
            Reply::Stream(events) => Ok(events),
            // A server may answer a streaming method with one JSON result.
            Reply::Result(value) => Ok(EventStream::new(stream::iter([Ok(value)]))),
        }
    }

    /// `SendStreamingMessage`.
    pub async fn send_streaming_message<P>(
        &self,
        request: &P,
    ) -> Result<EventStream<E>, ClientError<E>>
    where
        P: Serialize + ?Sized,
    {
        self.stream("SendStreamingMessage", request).await
    }
}

fn invalid_params<E>(error: serde_json::Error) -> ClientError<E> {
    ClientError::InvalidCall {
        detail: format!("params do not serialize: {error}"),
    }
}

#[derive(Copy, Clone, Debug)]
enum Binding {
    JsonRpc,
    Rest,
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The URL does not parse.
    #[error("invalid agent URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// The HTTP client could not be set up (TLS).
    #[error("cannot set up the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// Builds a [`Client`]: binding, connect timeout, protocol version and retry policy.
pub struct ClientBuilder<E = RemoteError> {
    url: String,
    binding: Binding,
    connect_timeout: Duration,
    http: Option<reqwest::Client>,
    version: HeaderValue,
    policy: RetryPolicy<E>,
    limits: ReplyLimits,
    max_redirects: usize,
}

impl<E> std::fmt::Debug for ClientBuilder<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("binding", &self.binding)
            .field("connect_timeout", &self.connect_timeout)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<E> ClientBuilder<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    fn new(url: String, binding: Binding) -> Self {
        ClientBuilder {
            url,
            binding,
            connect_timeout: Duration::from_secs(10),
            http: None,
            version: HeaderValue::from_static(super::http::DEFAULT_VERSION),
            policy: RetryPolicy::default(),
            limits: ReplyLimits::default(),
            max_redirects: 0,
        }
    }

    /// The limit for setting up a connection (default 10 s); it fires as
    /// [`Timeout::Connect`](super::Timeout::Connect). Ignored with
    /// [`http_client`](Self::http_client), whose own setting applies.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// What is accepted from the agent: reply and SSE event sizes, the idle limit of streams
    /// (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        self.limits = limits;
        self
    }

    /// How many redirects a call follows (default 0). A2A calls are POSTs to a known agent;
    /// a redirect is answered as an HTTP reply (`ClientError::Status`, not retried) unless
    /// allowed here, and a chain longer than allowed fails as `ClientError::Malformed`, not as
    /// a retryable transport error. Ignored with [`http_client`](Self::http_client), whose
    /// own redirect policy applies.
    pub fn max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects;
        self
    }

    /// Uses `client` (its pool, TLS roots, proxies) instead of building one.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http = Some(client);
        self
    }

    /// The `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: &'static str) -> Self {
        self.version = HeaderValue::from_static(version);
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]); [`RetryPolicy::none`] turns
    /// retries off and keeps the timeouts.
    pub fn retry(mut self, policy: RetryPolicy<E>) -> Self {
        self.policy = policy;
        self
    }

    /// Builds the client: `Retry` over the binding's transport.
    pub fn build(self) -> Result<Client<E>, BuildError> {
        let url = reqwest::Url::parse(&self.url).map_err(|error| BuildError::InvalidUrl {
            url: self.url.clone(),
            reason: error.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(BuildError::InvalidUrl {
                url: self.url,
                reason: "the scheme must be http or https".into(),
            });
        }
        let http = match self.http {
            Some(http) => http,
            None => reqwest::Client::builder()
                .connect_timeout(self.connect_timeout)
                .redirect(match self.max_redirects {
                    0 => reqwest::redirect::Policy::none(),
                    n => reqwest::redirect::Policy::limited(n),
                })
                .build()?,
        };
        Ok(match self.binding {
            Binding::JsonRpc => Client::from_service(Retry::new(
                JsonRpcTransport::new(http, url)
                    .version(self.version)
                    .limits(self.limits),
                self.policy,
            )),
            Binding::Rest => Client::from_service(Retry::new(
                RestTransport::new(http, url)
                    .version(self.version)
                    .limits(self.limits),
                self.policy,
            )),
        })
    }
}
