//! `Call` and `Reply`: what flows through a client's tower stack.

use std::borrow::Cow;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::error::ClientError;
use crate::remote::RemoteError;

/// One A2A call: a method, its params as JSON bytes and a JSON-RPC id, fixed when the call is
/// made. Cloning is cheap, and every attempt of a retried call sends the same bytes, so a
/// `SendMessage` keeps its `messageId` and a server's dedup recognises it.
#[derive(Clone, Debug)]
pub struct Call {
    method: Cow<'static, str>,
    params: Bytes,
    id: u64,
    streaming: bool,
    deadline: Option<Instant>,
    // A time budget whose clock has not started: a first attempt sends it as it is, which
    // spares a clock read on calls that finish without waiting.
    budget: Option<Duration>,
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
            method: method.into(),
            params: params.into(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            streaming: false,
            deadline: None,
            budget: None,
        }
    }

    /// Marks the call as streaming: the reply is a stream of events (`SendStreamingMessage`).
    pub fn streaming(mut self) -> Call {
        self.streaming = true;
        self
    }

    /// Sets the instant by which the whole call must be done; transports send what is left of
    /// it as the `A2A-Deadline-Ms` header. An earlier deadline already set is kept.
    pub fn with_deadline(mut self, deadline: Instant) -> Call {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        self
    }

    /// Gives the call `budget` of time from its first send, for a caller that has not read
    /// the clock yet (the `Retry` decorator turns it into a deadline once it does).
    pub fn with_budget(mut self, budget: Duration) -> Call {
        self.budget = Some(self.budget.map_or(budget, |b| b.min(budget)));
        self
    }

    /// The time left for the whole call, as sent in `A2A-Deadline-Ms`.
    pub fn time_left(&self) -> Option<Duration> {
        let left = self
            .deadline
            .map(|deadline| deadline.saturating_duration_since(Instant::now()));
        match (left, self.budget) {
            (Some(left), Some(budget)) => Some(left.min(budget)),
            (left, budget) => left.or(budget),
        }
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params as JSON text.
    pub fn params(&self) -> &Bytes {
        &self.params
    }

    /// The JSON-RPC request id, the same on every attempt.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the reply is a stream.
    pub fn is_streaming(&self) -> bool {
        self.streaming
    }

    /// When the whole call must be done, if there is a limit.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

/// A successful answer: the JSON-RPC `result` (the REST body), or a stream of them.
pub enum Reply<E = RemoteError> {
    /// One result.
    Result(Value),
    /// A stream of results; its first event has already arrived.
    Stream(EventStream<E>),
}

impl<E> fmt::Debug for Reply<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Result(value) => f.debug_tuple("Result").field(value).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// The events of a streaming call. An error ends it; it is returned as it came, never retried
/// (the events before it have been seen).
pub struct EventStream<E = RemoteError> {
    inner: Pin<Box<dyn Stream<Item = Result<Value, ClientError<E>>> + Send>>,
}

impl<E> EventStream<E> {
    /// Wraps any stream of results.
    pub fn new(stream: impl Stream<Item = Result<Value, ClientError<E>>> + Send + 'static) -> Self {
        EventStream {
            inner: Box::pin(stream),
        }
    }
}

impl<E> Stream for EventStream<E> {
    type Item = Result<Value, ClientError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}
