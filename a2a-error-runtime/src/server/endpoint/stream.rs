//! Streaming methods (`SendStreamingMessage`, `SubscribeToTask`): a handler that returns a
//! stream of results, answered as SSE. The guards of every other method hold: params read
//! under the panic guard, the version, admission, the deadline (which also ends the stream),
//! and a panic while the stream is polled is one sanitized error event.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::State;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::wire::error::A2aError;
use crate::wire::standard::StandardError;

use super::handler::{boxed_by_size, read_params, result_json};
use super::{DynError, RequestContext};

/// The serialized events of a streaming method (each the JSON of one result), or the error
/// that ends them.
pub(crate) type Events = BoxStream<'static, Result<Vec<u8>, DynError>>;

/// A JSON-RPC streaming method handler: like a [`Handler`](super::Handler), but its `Ok` is a
/// `Stream` of results, each sent as one SSE event:
///
/// - `|params: P, ctx: RequestContext| async { Ok::<_, E>(stream) }`
/// - `|State(state): State<S>, params: P, ctx: RequestContext| async { ... }`
///
/// An `Err` from the handler, or an error before the stream's first result, is an ordinary
/// error response; an error after it is one error event, and the stream ends. Register it
/// with [`JsonRpc::stream`](super::JsonRpc::stream).
#[diagnostic::on_unimplemented(
    message = "this is not a JSON-RPC streaming handler for `JsonRpc<{S}>`",
    label = "not a streaming handler of the accepted shapes",
    note = "a streaming handler is `async fn(params: P, ctx: RequestContext) -> Result<St, E>` \
            where St: Stream<Item = Result<T, E2>> + Send + 'static (optionally after \
            `State(state): State<S>` on `JsonRpc::with_state`)"
)]
pub trait StreamHandler<T, S>: Send + Sync + 'static {
    /// Runs the handler on raw params, under the endpoint's panic guard.
    #[doc(hidden)]
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Events, DynError>>;
}

/// Serializes each result; a panic while the stream is polled ends it with -32603.
#[doc(hidden)]
pub fn events<St, T, E>(stream: St) -> Events
where
    St: Stream<Item = Result<T, E>> + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    guarded(stream, |result| result_json(&result))
}

/// `stream`'s results through `each`, its errors boxed, a panic while it is polled as one
/// -32603 error, and nothing polled after the first error (a stream that panicked must not
/// be polled again). Every binding's streams go through this.
#[doc(hidden)]
pub fn guarded<St, T, U, E>(
    stream: St,
    mut each: impl FnMut(T) -> Result<U, DynError> + Send + 'static,
) -> BoxStream<'static, Result<U, DynError>>
where
    St: Stream<Item = Result<T, E>> + Send + 'static,
    U: Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    let items = AssertUnwindSafe(stream)
        .catch_unwind()
        .map(move |item| match item {
            Ok(Ok(result)) => each(result),
            Ok(Err(error)) => Err(Box::new(error) as DynError),
            Err(panic) => {
                Err(Box::new(crate::server::log::caught("a stream", &*panic)) as DynError)
            }
        });
    futures_util::stream::unfold(Some(items.boxed()), |items| async move {
        let mut items = items?;
        let item = items.next().await?;
        let rest = item.is_ok().then_some(items);
        Some((item, rest))
    })
    .boxed()
}

async fn open<P, St, T, E, E2, Fut>(
    params: Box<RawValue>,
    run: impl FnOnce(P) -> Fut,
) -> Result<Events, DynError>
where
    P: DeserializeOwned,
    St: Stream<Item = Result<T, E2>> + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
    E2: A2aError + Send + Sync + 'static,
    Fut: Future<Output = Result<St, E>>,
{
    match run(read_params(&params)?).await {
        Ok(stream) => Ok(events(stream)),
        Err(error) => Err(Box::new(error) as DynError),
    }
}

impl<F, Fut, P, St, T, E, E2, S> StreamHandler<(P, St, T, E2), S> for F
where
    F: Fn(P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<St, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    St: Stream<Item = Result<T, E2>> + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
    E2: A2aError + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        _: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Events, DynError>> {
        boxed_by_size!(Fut, open(params, move |params| self(params, ctx)))
    }
}

impl<F, Fut, P, St, T, E, E2, S> StreamHandler<(State<S>, P, St, T, E2), S> for F
where
    F: Fn(State<S>, P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<St, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    St: Stream<Item = Result<T, E2>> + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
    E2: A2aError + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Events, DynError>> {
        let state = State(state.clone());
        boxed_by_size!(Fut, open(params, move |params| self(state, params, ctx)))
    }
}

/// Ends `events` with DEADLINE_EXCEEDED at `deadline` (the caller's), if it has not ended.
fn until<T: Send + 'static>(
    events: BoxStream<'static, Result<T, DynError>>,
    deadline: Option<tokio::time::Instant>,
) -> BoxStream<'static, Result<T, DynError>> {
    let Some(deadline) = deadline else {
        return events;
    };
    futures_util::stream::unfold(Some(events), move |events| async move {
        let mut events = events?;
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(item) => item.map(|item| (item, Some(events))),
            Err(_) => Some((
                Err(Box::new(StandardError::DeadlineExceeded) as DynError),
                None,
            )),
        }
    })
    .boxed()
}

/// `events` served to a caller on any binding: ended with DEADLINE_EXCEEDED at the caller's
/// `deadline` (an endpoint's own timeout bounds only the wait for a stream to open: a long
/// stream is what streaming is for), and recorded when they end (or the caller leaves) by
/// `record`: the duration to the end and how it ended, the deadline included (see
/// [`StreamServed`](crate::observe::StreamServed)).
#[doc(hidden)]
pub fn served<T: Send + 'static>(
    events: BoxStream<'static, Result<T, DynError>>,
    deadline: Option<tokio::time::Instant>,
    record: crate::observe::StreamServed,
) -> BoxStream<'static, Result<T, DynError>> {
    Served {
        events: until(events, deadline),
        record,
    }
    .boxed()
}

/// [`served`]'s stream.
struct Served<T> {
    events: BoxStream<'static, Result<T, DynError>>,
    record: crate::observe::StreamServed,
}

impl<T> Stream for Served<T> {
    type Item = Result<T, DynError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let Served { events, record } = self.get_mut();
        record.poll(|| events.poll_next_unpin(cx))
    }
}
