//! `Call` and `Reply`: what flows through a client's tower stack.

use std::borrow::Cow;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::time::Instant;

use super::error::ClientError;
use crate::resilience::{Request, TimeLimit};
use crate::wire::remote::RemoteError;

/// One A2A call: a method, its params as JSON bytes and a JSON-RPC id, fixed when the call is
/// made. Cloning is cheap, and every attempt of a retried call sends the same bytes, so a
/// `SendMessage` keeps its `messageId` and a server's dedup recognises it.
#[derive(Clone, Debug)]
pub struct Call {
    // What every attempt sends, behind one `Arc`: a retry layer keeps a clone of each call,
    // and one reference count is cheaper than one per field.
    fixed: Arc<Fixed>,
    limit: TimeLimit,
}

#[derive(Clone, Debug)]
struct Fixed {
    method: Cow<'static, str>,
    params: Bytes,
    id: u64,
    streaming: bool,
    agent: Option<Arc<str>>,
    headers: reqwest::header::HeaderMap,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Call {
    /// A call of `method` with `params` serialized to JSON.
    pub fn new<P: Serialize + ?Sized>(
        method: impl Into<Cow<'static, str>>,
        params: &P,
    ) -> Result<Call, serde_json::Error> {
        Ok(Call::from_json(method, serde_json::to_vec(params)?))
    }

    /// A call whose params are already JSON text (not checked here).
    pub fn from_json(method: impl Into<Cow<'static, str>>, params: impl Into<Bytes>) -> Call {
        Call {
            fixed: Arc::new(Fixed {
                method: method.into(),
                params: params.into(),
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                streaming: false,
                agent: None,
                headers: reqwest::header::HeaderMap::new(),
            }),
            limit: TimeLimit::default(),
        }
    }

    /// Marks the call as streaming: the reply is a stream of events (`SendStreamingMessage`).
    pub fn streaming(mut self) -> Call {
        Arc::make_mut(&mut self.fixed).streaming = true;
        self
    }

    /// Names the agent the call goes to, for the layers' metrics and logs (the typed
    /// [`Client`](crate::Client) sets its own name).
    pub fn with_agent(mut self, agent: Arc<str>) -> Call {
        Arc::make_mut(&mut self.fixed).agent = Some(agent);
        self
    }

    /// The agent the call goes to, if named.
    pub fn agent(&self) -> Option<&str> {
        self.fixed.agent.as_deref()
    }

    /// Sets the instant by which the whole call must be done; transports send what is left of
    /// it as the `A2A-Deadline-Ms` header. An earlier deadline already set is kept.
    pub fn with_deadline(mut self, deadline: Instant) -> Call {
        self.limit = self.limit.with_deadline(deadline);
        self
    }

    /// Gives the call `budget` of time from its first send, for a caller that has not read
    /// the clock yet (the layers that wait turn it into a deadline once they do). A smaller
    /// budget already set is kept.
    pub fn with_budget(mut self, budget: Duration) -> Call {
        self.limit = self.limit.with_budget(budget);
        self
    }

    /// The time left for the whole call, as sent in `A2A-Deadline-Ms`.
    pub fn time_left(&self) -> Option<Duration> {
        self.limit.time_left()
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.fixed.method
    }

    /// The method name, shared (a `'static` name is not copied), for metric labels.
    pub(crate) fn method_name(&self) -> Cow<'static, str> {
        self.fixed.method.clone()
    }

    /// The params as JSON text.
    pub fn params(&self) -> &Bytes {
        &self.fixed.params
    }

    /// The JSON-RPC request id, the same on every attempt.
    pub fn id(&self) -> u64 {
        self.fixed.id
    }

    /// Whether the reply is a stream.
    pub fn is_streaming(&self) -> bool {
        self.fixed.streaming
    }

    /// Sends `headers` with every attempt (credentials, A2A extensions). The headers the
    /// transport owns (`Content-Type`, `Accept`, `A2A-Version`, `A2A-Deadline-Ms`) are set by
    /// the transport and win over these.
    pub fn with_headers(mut self, headers: reqwest::header::HeaderMap) -> Call {
        Arc::make_mut(&mut self.fixed).headers = headers;
        self
    }

    /// Sends `trace` on with every attempt (`traceparent`, and `tracestate` when it has
    /// one), unless the call's own headers already carry a `traceparent`.
    pub(crate) fn with_trace(mut self, trace: &crate::trace::TraceContext) -> Call {
        crate::trace::insert(&mut Arc::make_mut(&mut self.fixed).headers, trace);
        self
    }

    /// The extra headers every attempt sends.
    pub fn headers(&self) -> &reqwest::header::HeaderMap {
        &self.fixed.headers
    }

    /// When the whole call must be done, if it has a deadline (a budget whose clock has not
    /// started yet is not one; see [`time_left`](Self::time_left)).
    pub fn deadline(&self) -> Option<Instant> {
        self.limit.deadline()
    }
}

impl Request for Call {
    fn time_limit(&self) -> TimeLimit {
        self.limit
    }
    fn set_time_limit(&mut self, limit: TimeLimit) {
        self.limit = limit;
    }
    fn target(&self) -> Option<&str> {
        self.agent()
    }
    fn operation(&self) -> &str {
        self.method()
    }
    fn callee(&self) -> crate::observe::Callee {
        crate::observe::Callee::Agent
    }
}

/// A result as the peer's JSON text, validated but not parsed into a tree: it is read once,
/// into the caller's own type (`serde_json::Value` costs up to ~85 times the bytes it was read
/// from, so a tree of a large reply would multiply its memory).
pub type RawJson = Box<RawValue>;

/// A successful answer: the JSON-RPC `result` (the REST body), or a stream of them.
pub enum Reply<E = RemoteError> {
    /// One result.
    Result(RawJson),
    /// A stream of results; its first event has already arrived.
    Stream(EventStream<E>),
}

impl<E> fmt::Debug for Reply<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Result(json) => f.debug_tuple("Result").field(&json.get()).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// The future of a service in a client's stack: a transport's, or a layer's that has to wait.
pub(crate) type ReplyFuture<E> =
    Pin<Box<dyn std::future::Future<Output = Result<Reply<E>, ClientError<E>>> + Send>>;

/// The events of a streaming call. An error ends it; it is returned as it came, never retried
/// (the events before it have been seen).
pub struct EventStream<E = RemoteError> {
    inner: Pin<Box<dyn Stream<Item = Result<RawJson, ClientError<E>>> + Send>>,
}

impl<E> EventStream<E> {
    /// Wraps any stream of results.
    pub fn new(
        stream: impl Stream<Item = Result<RawJson, ClientError<E>>> + Send + 'static,
    ) -> Self {
        EventStream {
            inner: Box::pin(stream),
        }
    }
}

impl<E> Stream for EventStream<E> {
    type Item = Result<RawJson, ClientError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
