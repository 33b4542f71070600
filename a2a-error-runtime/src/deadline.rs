//! The deadline of the request being served, inherited by the calls made on its behalf.
//!
//! The server runs each handler with the request's deadline (the caller's `A2A-Deadline-Ms`
//! or the endpoint's own timeout, whichever ends first) as what its calls inherit; the typed
//! client reads it with `inherited`, so a handler that calls another agent passes its
//! deadline on without doing arithmetic. A task-local rather than a parameter, so that it
//! reaches calls made deep inside a handler's own code (the one of
//! [`inherited`](crate::inherited), beside the trace); tasks the handler spawns do not
//! inherit it (use [`with_deadline`] in them).

use std::future::Future;

use futures_util::future::Either;
use tokio::time::Instant;

/// What a downstream call leaves of the inherited time, so that our reply still reaches our
/// caller: a tenth of the time left, at most this much. With no more than this left, a
/// downstream call is not started at all.
#[cfg(feature = "client")]
pub(crate) const MARGIN: std::time::Duration = std::time::Duration::from_millis(50);

/// The earlier of two optional limits (deadlines or budgets): whichever ends first, or the
/// one there is. Every "the earlier one holds" in this crate is this function.
#[doc(hidden)]
pub fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `limit` after `now`; one past what an `Instant` holds is thirty years on, as tokio's `sleep`
/// reads it: a limit that large is as good as none.
#[cfg(feature = "axum")]
pub(crate) fn after(now: Instant, limit: std::time::Duration) -> Instant {
    now.checked_add(limit)
        .unwrap_or_else(|| now + std::time::Duration::from_secs(86_400 * 365 * 30))
}

/// The deadline of the request being served, when there is one.
pub(crate) fn inherited() -> Option<Instant> {
    crate::inherited::read(|inherited| inherited.deadline).flatten()
}

/// What a request served in `trace` until `end` passes on to its calls: its trace, and the
/// earlier of `end` and a deadline already in force. Every server's scope is this.
#[doc(hidden)]
pub fn served(
    trace: crate::wire::trace::TraceContext,
    end: Option<Instant>,
) -> crate::inherited::Inherited {
    crate::inherited::Inherited {
        trace: Some(trace),
        deadline: earliest(end, inherited()),
        caller: crate::inherited::read(|inherited| inherited.caller).flatten(),
    }
}

/// The deadline a call made now to a downstream agent or dependency inherits from the request
/// being served: what is left of it less a tenth (at most [`MARGIN`]), so that our reply can
/// still reach our caller. `Ok(None)` when no request deadline is in force; `Err(())` when
/// [`MARGIN`] or less is left, and the call must not be started.
#[cfg(feature = "client")]
pub(crate) fn for_downstream() -> Result<Option<Instant>, ()> {
    let Some(deadline) = inherited() else {
        return Ok(None);
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left <= MARGIN {
        return Err(());
    }
    Ok(Some(deadline - (left / 10).min(MARGIN)))
}

/// Runs `future` with `deadline` as the one calls made inside it inherit (an earlier one
/// already in force, read now, is kept; the trace too).
///
/// A plain function returning one of two futures, not an `async fn`: an `async fn` would
/// hold `future` both as its argument and inside what it awaits, twice the size of a
/// handler's future, and every layer above would copy that when moved.
pub(crate) fn scope<F: Future>(
    deadline: Option<Instant>,
    future: F,
) -> impl Future<Output = F::Output> {
    let mut inherited = crate::inherited::current();
    match earliest(deadline, inherited.deadline) {
        Some(deadline) => {
            inherited.deadline = Some(deadline);
            Either::Left(crate::inherited::scope(inherited, future))
        }
        None => Either::Right(future),
    }
}

/// Runs `future` until `end`, which is also the deadline calls made inside it inherit:
/// `None` when `end` came first and the future was dropped. The SDK bridge's REST routes
/// are bounded so (inside the trace's scope of their middleware); the JSON-RPC endpoint and
/// the bridge's gRPC calls put the deadline in the one scope they run a request in, beside
/// its trace, and bound it with [`until_any`].
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn run_until<F: Future>(
    end: Option<Instant>,
    future: F,
) -> impl Future<Output = Option<F::Output>> {
    until_any(end, scope(end, future))
}

/// `future` until `end` when there is one (`None` once it came first): [`until`] for a
/// request that may have no deadline.
#[cfg(feature = "axum")]
#[doc(hidden)]
pub fn until_any<F: Future>(
    end: Option<Instant>,
    future: F,
) -> impl Future<Output = Option<F::Output>> {
    use futures_util::FutureExt;
    match end {
        Some(end) => Either::Left(until(end, future)),
        None => Either::Right(future.map(Some)),
    }
}

/// `future` until `end` (`None` once `end` came first), its timer made only once `future`
/// has to wait; no deadline scope of its own (see [`run_until`]).
#[cfg(feature = "axum")]
pub(crate) fn until<F: Future>(end: Instant, future: F) -> impl Future<Output = Option<F::Output>> {
    Until {
        future,
        expiry: Expiry::new(end),
    }
}

#[cfg(feature = "axum")]
pin_project_lite::pin_project! {
    /// `future` until `end`: tokio's `timeout_at`, with its timer made only once `future` has
    /// to wait. A handler that answers in its first poll (an error, a cached reply) so never
    /// touches the timer wheel.
    struct Until<F> {
        #[pin]
        future: F,
        expiry: Expiry,
    }
}

#[cfg(feature = "axum")]
impl<F: Future> Future for Until<F> {
    type Output = Option<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(cx) {
            return Poll::Ready(Some(output));
        }
        if this.expiry.poll_passed(cx) {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }
}

/// A deadline's timer, made only the first time what it bounds has to wait, and kept.
#[cfg(feature = "axum")]
#[doc(hidden)]
pub struct Expiry {
    end: Instant,
    // Unconstrained, as tokio's own timeout polls its timer when the future used up the
    // task's budget: the deadline holds however busy the future keeps the task. Boxed: a
    // timer is ~100 bytes, which every request's future would hold (and copy) to answer in
    // its first poll.
    timer: Option<std::pin::Pin<Box<tokio::task::Unconstrained<tokio::time::Sleep>>>>,
}

#[cfg(feature = "axum")]
impl Expiry {
    /// The timer of `end`, not made yet.
    #[doc(hidden)]
    pub fn new(end: Instant) -> Self {
        Expiry { end, timer: None }
    }

    /// Whether `end` has come; when not, the task is woken at it.
    #[doc(hidden)]
    pub fn poll_passed(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        let end = self.end;
        self.timer
            .get_or_insert_with(|| {
                Box::pin(tokio::task::unconstrained(tokio::time::sleep_until(end)))
            })
            .as_mut()
            .poll(cx)
            .is_ready()
    }
}

/// The deadline `left` from now (an `A2A-Deadline-Ms` read on arrival).
#[cfg(feature = "axum")]
#[doc(hidden)]
pub fn from_left(left: Option<std::time::Duration>) -> Option<Instant> {
    left.and_then(|left| Instant::now().checked_add(left))
}

/// When a request a server answers under its own `timeout` must end: that timeout from `now`
/// or the caller's `deadline`, whichever comes first (the JSON-RPC endpoint's and the SDK
/// bridge's).
#[cfg(feature = "axum")]
#[doc(hidden)]
pub fn served_end(
    now: Instant,
    timeout: Option<std::time::Duration>,
    deadline: Option<Instant>,
) -> Option<Instant> {
    earliest(
        timeout.and_then(|timeout| now.checked_add(timeout)),
        deadline,
    )
}

/// Runs `future` so that the typed `Client` calls made inside it (feature `client`) end by
/// `deadline` (less a small margin), as inside a handler of this crate's server. For tasks a
/// handler spawns, and for servers of your own.
pub async fn with_deadline<F: Future>(deadline: Instant, future: F) -> F::Output {
    scope(Some(deadline), future).await
}
