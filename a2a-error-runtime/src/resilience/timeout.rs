//! `TotalTimeout` and `AttemptTimeout`: the two time limits of a call, as separate layers.
//!
//! Both read the clock only once the call has to wait: a reply that is ready at once costs
//! no clock read and no timer (see `benches/retry.rs`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

use crate::resilience::classify::{FromLayer, Timeout};
use crate::resilience::request::{Request, TimeLimit};

/// Bounds a whole call, retries and waits included, by a time budget that starts at its first
/// send. The budget goes down with the [`Request`] (an A2A `Call`, an HTTP dependency's call,
/// any `Op`), so layers below (a [`Retry`](crate::resilience::retry::Retry)
/// that will not start a wait past it, an attempt timeout) and the peer (`A2A-Deadline-Ms`)
/// see what is left. Fires as [`Timeout::Total`], which is never retried.
#[derive(Clone, Debug)]
pub struct TotalTimeout<S> {
    inner: S,
    limit: Duration,
}

impl<S> TotalTimeout<S> {
    /// Bounds calls on `inner` by `limit`.
    pub fn new(inner: S, limit: Duration) -> Self {
        TotalTimeout { inner, limit }
    }
}

/// The `tower::Layer` that builds [`TotalTimeout`].
#[derive(Copy, Clone, Debug)]
pub struct TotalTimeoutLayer {
    limit: Duration,
}

impl TotalTimeoutLayer {
    /// A layer bounding each call by `limit`.
    pub fn new(limit: Duration) -> Self {
        TotalTimeoutLayer { limit }
    }
}

impl<S> Layer<S> for TotalTimeoutLayer {
    type Service = TotalTimeout<S>;

    fn layer(&self, inner: S) -> TotalTimeout<S> {
        TotalTimeout::new(inner, self.limit)
    }
}

impl<S, R> Service<R> for TotalTimeout<S>
where
    S: Service<R>,
    S::Error: FromLayer,
    R: Request,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = TimeoutFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: R) -> Self::Future {
        request.set_time_limit(request.time_limit().with_budget(self.limit));
        TimeoutFuture::new(self.inner.call(request), Ends::Total(self.limit))
    }
}

/// Bounds each attempt of a call: placed below a [`Retry`](crate::resilience::retry::Retry), a slow attempt
/// fails as [`Timeout::Attempt`] (retried when the method is safe to repeat) while the call
/// goes on. An attempt never outlives the call's deadline either; when that comes first it
/// fires as [`Timeout::Total`].
#[derive(Clone, Debug)]
pub struct AttemptTimeout<S> {
    inner: S,
    limit: Duration,
}

impl<S> AttemptTimeout<S> {
    /// Bounds each call on `inner` by `limit`.
    pub fn new(inner: S, limit: Duration) -> Self {
        AttemptTimeout { inner, limit }
    }
}

/// The `tower::Layer` that builds [`AttemptTimeout`].
#[derive(Copy, Clone, Debug)]
pub struct AttemptTimeoutLayer {
    limit: Duration,
}

impl AttemptTimeoutLayer {
    /// A layer bounding each attempt by `limit`.
    pub fn new(limit: Duration) -> Self {
        AttemptTimeoutLayer { limit }
    }
}

impl<S> Layer<S> for AttemptTimeoutLayer {
    type Service = AttemptTimeout<S>;

    fn layer(&self, inner: S) -> AttemptTimeout<S> {
        AttemptTimeout::new(inner, self.limit)
    }
}

impl<S, R> Service<R> for AttemptTimeout<S>
where
    S: Service<R>,
    S::Error: FromLayer,
    R: Request,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = TimeoutFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let ends = Ends::Attempt {
            limit: self.limit,
            call: request.time_limit(),
        };
        TimeoutFuture::new(self.inner.call(request), ends)
    }
}

/// What a [`TimeoutFuture`] ends at, once it reads the clock.
#[derive(Copy, Clone, Debug)]
enum Ends {
    /// The call's budget from now.
    Total(Duration),
    /// The attempt's limit from now, or the call's own limit if that comes first.
    Attempt { limit: Duration, call: TimeLimit },
    /// An instant already known, and what its passing is (none: no limit).
    At(Option<(Instant, Timeout)>),
}

impl Ends {
    fn from(self, now: Instant) -> Option<(Instant, Timeout)> {
        match self {
            // A limit too far away to be an `Instant` is no limit.
            Ends::Total(limit) => now.checked_add(limit).map(|at| (at, Timeout::Total)),
            Ends::Attempt { limit, call } => Timeout::first(
                now.checked_add(limit).map(|at| (at, Timeout::Attempt)),
                call.deadline_from(now),
            ),
            Ends::At(at) => at,
        }
    }
}

/// `future`, failed as `limit`'s [`Timeout`] once its instant passes (no limit: `future`
/// itself). The one way this crate runs a future until a time: a transport used without the
/// layers, an MCP attempt's own clock, a stream's first event. A future of its own, not an
/// `async fn` around `tokio::time::timeout`: each `async` layer would hold `future` once
/// more, and a request's future is moved whole each time it is.
pub(crate) fn within<F, T, E>(limit: Option<(Instant, Timeout)>, future: F) -> TimeoutFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: FromLayer,
{
    TimeoutFuture::new(future, Ends::At(limit))
}

pin_project! {
    /// The future of [`TotalTimeout`] and [`AttemptTimeout`].
    pub struct TimeoutFuture<F> {
        #[pin]
        inner: F,
        ends: Ends,
        // Made when the call first has to wait, and only if there is a limit.
        timer: Option<(Pin<Box<Sleep>>, Timeout)>,
        started: bool,
    }
}

impl<F> TimeoutFuture<F> {
    fn new(inner: F, ends: Ends) -> Self {
        TimeoutFuture {
            inner,
            ends,
            timer: None,
            started: false,
        }
    }
}

impl<F, T, E> Future for TimeoutFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: FromLayer,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(result) = this.inner.poll(cx) {
            return Poll::Ready(result);
        }
        if !*this.started {
            *this.started = true;
            *this.timer = this
                .ends
                .from(Instant::now())
                .map(|(end, fired)| (Box::pin(tokio::time::sleep_until(end)), fired));
        }
        match this.timer {
            Some((timer, fired)) => match timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(E::timeout(*fired))),
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Pending,
        }
    }
}

/// `items` with each wait for the next bounded by `idle` (from the item before, or from now
/// for the first) and by `deadline`: past either, one item `timed_out(fired)` (fired is
/// [`Timeout::Idle`] or [`Timeout::Total`]), and the stream ends; it ends after its first
/// error too. The one timer of every stream this crate reads (an agent's events, a
/// dependency's body).
pub(crate) fn within_time<S, T, E>(
    items: S,
    idle: Option<Duration>,
    deadline: Option<Instant>,
    timed_out: impl Fn(Timeout) -> E + Send + Clone,
) -> impl futures_util::Stream<Item = Result<T, E>> + Send
where
    S: futures_util::Stream<Item = Result<T, E>> + Send + Unpin,
    T: Send,
    E: Send,
{
    use futures_util::StreamExt;
    futures_util::stream::unfold(Some(items), move |items| {
        let timed_out = timed_out.clone();
        async move {
            let mut items = items?;
            let idle_end = idle.and_then(|idle| Instant::now().checked_add(idle));
            let end = Timeout::first(idle_end.map(|at| (at, Timeout::Idle)), deadline);
            let item = match end {
                None => items.next().await?,
                Some((end, fired)) => match tokio::time::timeout_at(end, items.next()).await {
                    Ok(item) => item?,
                    Err(_) => Err(timed_out(fired)),
                },
            };
            let rest = item.is_ok().then_some(items);
            Some((item, rest))
        }
    })
}

impl Timeout {
    /// The limit that fires first: `limit` (which fires as itself) or the call's `deadline`
    /// (which fires as [`Timeout::Total`] and wins a tie). `None` when there is neither.
    pub(crate) fn first(
        limit: Option<(tokio::time::Instant, Timeout)>,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<(tokio::time::Instant, Timeout)> {
        let at = crate::deadline::earliest(limit.map(|(at, _)| at), deadline)?;
        // The call's deadline wins a tie: it fires as `Total`.
        let fired = match limit {
            Some((_, fired)) if deadline != Some(at) => fired,
            _ => Timeout::Total,
        };
        Some((at, fired))
    }
}
