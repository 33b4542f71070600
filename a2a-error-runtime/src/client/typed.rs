//! `Client`: the typed front of a transport stack.

use std::borrow::Cow;

use futures_util::stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use std::sync::Arc;

use tokio::time::Instant;
use tracing::Instrument;

use crate::client::downstream::Downstream;
use crate::client::error::ClientError;
use crate::client::flow::{Call, EventStream, Reply};
use crate::observe::System;
use crate::resilience::Timeout;
use crate::resilience::breaker::CircuitBreaker;
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::method;
use crate::wire::remote::RemoteError;

/// A client of one agent: calls go through the stack it was built with (by default a total
/// timeout, retries and an attempt timeout over an HTTP transport; see [`ClientBuilder`](crate::ClientBuilder)) and
/// end in a typed result or a [`ClientError<E>`].
///
/// Cloning is cheap and clones share the connection pool and the retry budget.
pub struct Client<E = RemoteError> {
    service: BoxCloneSyncService<Call, Reply<E>, ClientError<E>>,
    name: Arc<str>,
    breaker: Option<CircuitBreaker>,
    /// The binding its calls are labelled with (`rpc.system.name`).
    system: System,
}

impl<E> Clone for Client<E> {
    fn clone(&self) -> Self {
        Client {
            service: self.service.clone(),
            name: self.name.clone(),
            breaker: self.breaker.clone(),
            system: self.system,
        }
    }
}

impl<E> std::fmt::Debug for Client<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<E> Client<E> {
    /// The agent's name: in metrics, logs, breaker registries and the `downstreamAgent` of
    /// errors passed on ([`ClientBuilder::name`](crate::ClientBuilder::name); by default the URL's host and port).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's circuit breaker, when the stack has one (its state for a health endpoint).
    pub fn breaker(&self) -> Option<&CircuitBreaker> {
        self.breaker.as_ref()
    }

    /// `error` from this client, named for passing on: see [`Downstream`].
    pub fn downstream(&self, error: ClientError<E>) -> Downstream<E> {
        Downstream::new(self.name.clone(), error)
    }
}

impl<E> Client<E>
where
    E: A2aError + FromErrorObject + Send + 'static,
{
    /// A client over any stack: a [`Transport`](crate::client::transport::Transport), or one under layers of
    /// [`resilience`](crate::resilience) or your own.
    pub fn from_service<S>(service: S) -> Self
    where
        S: Service<Call, Response = Reply<E>, Error = ClientError<E>> + Clone + Send + Sync,
        S: 'static,
        S::Future: Send + 'static,
    {
        Client {
            service: BoxCloneSyncService::new(service),
            name: Arc::from("agent"),
            breaker: None,
            system: System::Stack,
        }
    }

    /// Names the agent (see [`name`](Self::name)).
    pub fn with_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    pub(super) fn with_breaker(mut self, breaker: Option<CircuitBreaker>) -> Self {
        self.breaker = breaker;
        self
    }

    pub(super) fn with_system(mut self, system: System) -> Self {
        self.system = system;
        self
    }

    /// Sends a prepared call through the stack.
    ///
    /// Inside a handler of this crate's server, the call inherits what is left of the
    /// request's deadline (less a tenth of what is left, at most 50 ms, so that our reply can
    /// still reach our caller): with 50 ms or less left it fails at once as
    /// [`Timeout::Total`] (DEADLINE_EXCEEDED when passed on), without calling the agent.
    pub async fn send(&self, call: Call) -> Result<Reply<E>, ClientError<E>> {
        let mut call = call.with_agent(self.name.clone());
        match crate::deadline::for_downstream() {
            Ok(Some(deadline)) => call = call.with_deadline(deadline),
            Ok(None) => {}
            Err(()) => {
                tracing::debug!(agent = &*self.name, "no time left for the downstream call");
                return Err(ClientError::Timeout(Timeout::Total));
            }
        }
        let span = crate::observe::client_span(self.system, &self.name, call.method(), call.id());
        // The trace being served goes on from this call's span (or a trace starts here).
        let call = call.with_trace(&crate::trace::for_call(&span));
        let method = call.method_name();
        let started = Instant::now();
        let result = self
            .service
            .clone()
            .oneshot(call)
            .instrument(span.clone())
            .await;
        crate::observe::call_ended(
            self.system,
            &self.name,
            method,
            started.elapsed(),
            result.as_ref().err().map(error_labels),
            &span,
        );
        result
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
            Reply::Result(json) => {
                serde_json::from_str(json.get()).map_err(|error| ClientError::Malformed {
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
        self.call(method::SEND_MESSAGE, request).await
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
            Reply::Result(json) => Ok(EventStream::new(stream::iter([Ok(json)]))),
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
        self.stream(method::SEND_STREAMING_MESSAGE, request).await
    }
}

fn invalid_params<E>(error: serde_json::Error) -> ClientError<E> {
    ClientError::InvalidCall {
        detail: format!("params do not serialize: {error}"),
    }
}

/// The code and reason (`error.type`) a client error is known by in metrics and spans. A
/// local failure's reason is one of the client's own, a closed set by construction; a peer's
/// code and reason go through the closed sets of labels.
fn error_labels<E: A2aError + 'static>(
    error: &ClientError<E>,
) -> (metrics::SharedString, metrics::SharedString) {
    let hop = error.first_hop(None);
    let reason = match error.remote() {
        Some(_) => crate::observe::reason_label(&hop.reason),
        None => metrics::SharedString::const_str(error.local_reason()),
    };
    (crate::observe::code_label(hop.code), reason)
}
