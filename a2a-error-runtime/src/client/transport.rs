//! `Transport`: one A2A agent, as a `tower::Service<Call>`, in any of the three bindings.

use std::marker::PhantomData;
use std::task::{Context, Poll};

use reqwest::header::HeaderValue;

use super::error::ClientError;
use super::flow::{Call, Reply, ReplyFuture};
use super::http::{Http, ReplyLimits};
use super::{jsonrpc, rest};
use crate::resilience::Request as _;
use crate::resilience::{Timeout, within};
use crate::wire::error::FromErrorObject;
use crate::wire::remote::RemoteError;

/// Which binding a transport speaks, with its settings.
#[derive(Clone, Debug)]
enum Binding {
    /// JSON-RPC 2.0: one `POST` to one URL per call.
    JsonRpc(Http),
    /// HTTP+JSON: methods as routes, errors as `google.rpc.Status` bodies.
    Rest(Http),
    /// gRPC: methods as RPCs of `lf.a2a.v1.A2AService`, errors as `google.rpc.Status`
    /// trailers.
    #[cfg(feature = "grpc")]
    Grpc(super::grpc::Grpc),
}

/// One agent: a `tower::Service<Call>` that sends each call once, within what is
/// left of its deadline, and decodes error objects through `E`'s mirror. Retries, timeouts
/// and the rest are layers above it ([`resilience`](crate::resilience)).
///
/// - [`Transport::jsonrpc`]: the JSON-RPC binding, SSE for streaming methods.
/// - [`Transport::rest`]: the HTTP+JSON binding: `SendMessage` → `POST /message:send`,
///   `GetTask` → `GET /tasks/{id}`, …
/// - `Transport::grpc` (feature `grpc`): the gRPC binding, `SendMessage` →
///   `lf.a2a.v1.A2AService/SendMessage`, errors read from the `google.rpc.Status`.
pub struct Transport<E = RemoteError> {
    binding: Binding,
    errors: PhantomData<fn() -> E>,
}

impl<E> Clone for Transport<E> {
    fn clone(&self) -> Self {
        Transport {
            binding: self.binding.clone(),
            errors: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for Transport<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (binding, url) = match &self.binding {
            Binding::JsonRpc(http) => ("JsonRpc", http.url.as_str()),
            Binding::Rest(http) => ("Rest", http.url.as_str()),
            #[cfg(feature = "grpc")]
            Binding::Grpc(grpc) => ("Grpc", grpc.url.as_str()),
        };
        f.debug_struct("Transport")
            .field("binding", &binding)
            .field("url", &url)
            .finish()
    }
}

impl<E> Transport<E> {
    /// The agent's JSON-RPC endpoint at `url`, reached with `client` (its connect timeout,
    /// TLS and pool apply).
    pub fn jsonrpc(client: reqwest::Client, url: reqwest::Url) -> Self {
        Transport::new(Binding::JsonRpc(Http::new(client, url)))
    }

    /// The agent whose HTTP+JSON interface is at base URL `base`, reached with `client`.
    pub fn rest(client: reqwest::Client, base: reqwest::Url) -> Self {
        Transport::new(Binding::Rest(Http::new(client, base)))
    }

    /// The agent whose gRPC service is at `url` (`http://host:port`; TLS is not built in),
    /// connected on the first call within `connect_timeout` and again after a lost
    /// connection. Replies are read within [`ReplyLimits`] (a message as a body, a stream's
    /// message as an event) and a status's header block within
    /// [`MAX_HEADER_LIST_BYTES`](crate::grpc::MAX_HEADER_LIST_BYTES).
    #[cfg(feature = "grpc")]
    pub fn grpc(
        url: &str,
        connect_timeout: std::time::Duration,
    ) -> Result<Self, crate::client::error::BoxError> {
        let grpc = super::grpc::Grpc::lazy(url, connect_timeout)?;
        Ok(Transport::new(Binding::Grpc(grpc)))
    }

    fn new(binding: Binding) -> Self {
        Transport {
            binding,
            errors: PhantomData,
        }
    }

    /// Sets the `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: HeaderValue) -> Self {
        match &mut self.binding {
            Binding::JsonRpc(http) | Binding::Rest(http) => http.version = version,
            #[cfg(feature = "grpc")]
            Binding::Grpc(grpc) => grpc.version = version,
        }
        self
    }

    /// Sets what is accepted from the peer (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        match &mut self.binding {
            Binding::JsonRpc(http) | Binding::Rest(http) => http.limits = limits,
            #[cfg(feature = "grpc")]
            Binding::Grpc(grpc) => grpc.limits = limits,
        }
        self
    }
}

impl<E> tower::Service<Call> for Transport<E>
where
    E: FromErrorObject + Send + 'static,
{
    type Response = Reply<E>;
    type Error = ClientError<E>;
    type Future = ReplyFuture<E>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        // A call that starts now must be done by its deadline, or its budget from now.
        let deadline = call.time_limit().deadline_from(tokio::time::Instant::now());
        match &self.binding {
            Binding::JsonRpc(http) => Box::pin(within(
                deadline.map(|at| (at, Timeout::Total)),
                jsonrpc::exchange(http.clone(), call, deadline),
            )),
            Binding::Rest(http) => Box::pin(within(
                deadline.map(|at| (at, Timeout::Total)),
                rest::exchange(http.clone(), call, deadline),
            )),
            #[cfg(feature = "grpc")]
            Binding::Grpc(grpc) => Box::pin(within(
                deadline.map(|at| (at, Timeout::Total)),
                super::grpc::exchange(grpc.clone(), call, deadline),
            )),
        }
    }
}
