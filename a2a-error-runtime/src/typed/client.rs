//! `Client`: the typed front of a transport stack.

use std::borrow::Cow;

use futures_util::stream;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

use super::builder::ClientBuilder;
use crate::client::{Call, ClientError, EventStream, Reply, Transport};
use crate::wire::error::{A2aError, FromErrorObject};
use crate::wire::remote::RemoteError;

/// A client of one agent: calls go through the stack it was built with (by default a total
/// timeout, retries and an attempt timeout over an HTTP transport; see [`ClientBuilder`]) and
/// end in a typed result or a [`ClientError<E>`].
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
        ClientBuilder::new(url.into(), Transport::jsonrpc)
    }

    /// A builder for an agent's HTTP+JSON interface at base URL `url`.
    pub fn rest(url: impl Into<String>) -> ClientBuilder<E> {
        ClientBuilder::new(url.into(), Transport::rest)
    }

    /// A client over any stack: a [`Transport`], or one under layers of
    /// [`resilience`](crate::resilience) or your own.
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
