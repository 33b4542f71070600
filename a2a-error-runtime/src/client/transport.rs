//! `Transport`: one A2A agent over HTTP, as a `tower::Service<Call>`, in either binding.

use std::marker::PhantomData;
use std::task::{Context, Poll};

use reqwest::header::HeaderValue;

use super::call::{Call, Reply, ReplyFuture};
use super::error::ClientError;
use super::http::{self, Http, ReplyLimits};
use super::{jsonrpc, rest};
use crate::wire::error::FromErrorObject;
use crate::wire::remote::RemoteError;

/// Which binding a transport speaks.
#[derive(Copy, Clone, Debug)]
enum Binding {
    /// JSON-RPC 2.0: one `POST` to one URL per call.
    JsonRpc,
    /// HTTP+JSON: methods as routes, errors as `google.rpc.Status` bodies.
    Rest,
}

/// One agent over HTTP: a `tower::Service<Call>` that sends each call once, within what is
/// left of its deadline, and decodes error objects through `E`'s mirror. Retries, timeouts
/// and the rest are layers above it ([`resilience`](crate::resilience)).
///
/// - [`Transport::jsonrpc`]: the JSON-RPC binding, SSE for streaming methods.
/// - [`Transport::rest`]: the HTTP+JSON binding: `SendMessage` → `POST /message:send`,
///   `GetTask` → `GET /tasks/{id}`, …
pub struct Transport<E = RemoteError> {
    http: Http,
    binding: Binding,
    errors: PhantomData<fn() -> E>,
}

impl<E> Clone for Transport<E> {
    fn clone(&self) -> Self {
        Transport {
            http: self.http.clone(),
            binding: self.binding,
            errors: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for Transport<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("binding", &self.binding)
            .field("url", &self.http.url.as_str())
            .finish()
    }
}

impl<E> Transport<E> {
    /// The agent's JSON-RPC endpoint at `url`, reached with `client` (its connect timeout,
    /// TLS and pool apply).
    pub fn jsonrpc(client: reqwest::Client, url: reqwest::Url) -> Self {
        Transport::new(client, url, Binding::JsonRpc)
    }

    /// The agent whose HTTP+JSON interface is at base URL `base`, reached with `client`.
    pub fn rest(client: reqwest::Client, base: reqwest::Url) -> Self {
        Transport::new(client, base, Binding::Rest)
    }

    fn new(client: reqwest::Client, url: reqwest::Url, binding: Binding) -> Self {
        Transport {
            http: Http::new(client, url),
            binding,
            errors: PhantomData,
        }
    }

    /// Sets the `A2A-Version` header sent (default `1.0`).
    pub fn version(mut self, version: HeaderValue) -> Self {
        self.http.version = version;
        self
    }

    /// Sets what is accepted from the peer (default [`ReplyLimits::default`]).
    pub fn limits(mut self, limits: ReplyLimits) -> Self {
        self.http.limits = limits;
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
        let http = self.http.clone();
        match self.binding {
            Binding::JsonRpc => Box::pin(http::within_deadline(
                deadline,
                jsonrpc::exchange(http, call, deadline),
            )),
            Binding::Rest => Box::pin(http::within_deadline(
                deadline,
                rest::exchange(http, call, deadline),
            )),
        }
    }
}
