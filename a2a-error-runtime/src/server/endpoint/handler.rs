//! What a handler is: a function of the params (and the state), with the request's context,
//! that returns a result or an `A2aError`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::wire::error::A2aError;
use crate::wire::jsonrpc::Id;
use crate::wire::standard::StandardError;

use super::{DynError, Outcome};

/// A registered handler, its types erased: a unary one answers `Vec<u8>` (the result's
/// JSON), a streaming one its events.
pub(super) type Erased<S, T> = Arc<
    dyn Fn(&S, Box<RawValue>, RequestContext) -> BoxFuture<'static, Result<T, DynError>>
        + Send
        + Sync,
>;

/// The largest handler future kept inside the endpoint's own (in bytes). A future is copied
/// whole each time it is moved: into the future that awaits it, then into the box that holds
/// that. One larger than this (an SDK call with its dedup is ~5 KiB) gets a box of its own,
/// so it is copied once; a small one stays inline, which saves an allocation.
pub(super) const INLINE_FUTURE_BYTES: usize = 1024;

/// `$finish($params, $run)` boxed, with the handler's future `$run` returns boxed on its own
/// first when it is larger than [`INLINE_FUTURE_BYTES`] (the test is on a type's size: the
/// other branch is compiled away).
macro_rules! boxed_by_size {
    ($fut:ty, $finish:ident($params:expr, move |$p:ident| $call:expr)) => {
        if std::mem::size_of::<$fut>() > super::handler::INLINE_FUTURE_BYTES {
            $finish($params, move |$p| Box::pin($call)).boxed()
        } else {
            $finish($params, move |$p| $call).boxed()
        }
    };
}
pub(super) use boxed_by_size;

/// What a handler knows about the request it serves.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestContext {
    /// The method as the caller named it (an alias stays an alias).
    pub method: Arc<str>,
    /// The request id; `None` for a notification.
    pub id: Option<Id>,
    /// The HTTP request headers.
    pub headers: Arc<HeaderMap>,
    /// The A2A version the caller asked for (the configured default when it sent none).
    pub version: Arc<str>,
    /// When the caller gives up (its `A2A-Deadline-Ms`, read on arrival). The handler is
    /// stopped then with DEADLINE_EXCEEDED; pass what is left on to agents it calls.
    pub deadline: Option<tokio::time::Instant>,
}

impl RequestContext {
    /// The time left before the caller's deadline, if it sent one.
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_duration_since(tokio::time::Instant::now()))
    }
}

/// A JSON-RPC method handler: an async closure or fn taking the method's params and the
/// [`RequestContext`], optionally after the endpoint's state as axum's `State`:
///
/// - `|params: P, ctx: RequestContext| async { ... }`
/// - `|State(state): State<S>, params: P, ctx: RequestContext| async { ... }`
///
/// `P` is deserialized from the request's `params` (a mismatch is -32602 with the field path);
/// the `Ok` value is serialized as the `result`; the `Err` is sent through its [`A2aError`]
/// impl. Implemented for every such closure; not meant to be implemented by hand.
#[diagnostic::on_unimplemented(
    message = "this is not a JSON-RPC handler for `JsonRpc<{S}>`",
    label = "not a handler of the accepted shapes",
    note = "a handler is `async fn(params: P, ctx: RequestContext) -> Result<T, E>`, or, on \
            `JsonRpc::with_state(state)`, `async fn(State(state): State<S>, params: P, ctx: \
            RequestContext) -> Result<T, E>`",
    note = "P: serde::Deserialize, T: serde::Serialize, and E an error with \
            #[derive(A2aError)] (or `StandardError`); a `String` is not an error type",
    note = "`RequestContext` is required, last (name it `_ctx` when unused); `State` needs \
            `JsonRpc::with_state`, not `JsonRpc::new()`"
)]
pub trait Handler<T, S>: Send + Sync + 'static {
    /// Runs the handler on raw params, under the endpoint's panic guard.
    #[doc(hidden)]
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Result<Vec<u8>, Box<dyn A2aError + Send + Sync>>>;
}

/// Params read inside the future, under the panic guard: a `Deserialize` impl that panics
/// gets the same -32603 reply as a handler that does. They are read from the request's text
/// straight into `P` (no `serde_json::Value` in between, which would cost up to ~85 times
/// the bytes), and a method nobody serves never reads them at all.
async fn finish<P, T, E, Fut>(params: Box<RawValue>, run: impl FnOnce(P) -> Fut) -> Outcome
where
    P: DeserializeOwned,
    T: Serialize + 'static,
    E: A2aError + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>>,
{
    match run(read_params(&params)?).await {
        Ok(result) => result_json(&result),
        Err(error) => Err(Box::new(error) as DynError),
    }
}

/// The params as `P`, or -32602 with the path of the field that is wrong.
pub(super) fn read_params<P: DeserializeOwned>(params: &RawValue) -> Result<P, DynError> {
    crate::server::params::from_raw::<P>(params).map_err(|invalid| Box::new(invalid) as DynError)
}

/// The JSON of one result (of a method, or one event of a stream); one that does not
/// serialize is -32603, and the reason goes to the log.
pub(super) fn result_json<T: Serialize + 'static>(result: &T) -> Result<Vec<u8>, DynError> {
    // As serde_json's `to_vec` starts.
    let mut json = Vec::with_capacity(128);
    match crate::server::json::write_json(&mut json, result) {
        Ok(()) => Ok(json),
        Err(error) => {
            tracing::error!("could not serialize a result: {error}");
            Err(Box::new(StandardError::Internal) as DynError)
        }
    }
}

impl<F, Fut, P, T, E, S> Handler<(P,), S> for F
where
    F: Fn(P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        _: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Outcome> {
        boxed_by_size!(Fut, finish(params, move |params| self(params, ctx)))
    }
}

impl<F, Fut, P, T, E, S> Handler<(State<S>, P), S> for F
where
    F: Fn(State<S>, P, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    P: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + Sync + 'static,
    S: Clone + Send + Sync + 'static,
{
    fn call(
        self: Arc<Self>,
        state: &S,
        params: Box<RawValue>,
        ctx: RequestContext,
    ) -> BoxFuture<'static, Outcome> {
        let state = State(state.clone());
        boxed_by_size!(Fut, finish(params, move |params| self(state, params, ctx)))
    }
}
