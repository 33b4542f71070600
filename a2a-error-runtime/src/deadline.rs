//! The deadline of the request being served, inherited by the calls made on its behalf.
//!
//! The server runs each handler inside [`scope`] with the request's deadline (the caller's
//! `A2A-Deadline-Ms` or the endpoint's own timeout, whichever ends first); the typed client
//! reads it with [`inherited`], so a handler that calls another agent passes its deadline on
//! without doing arithmetic. A task-local rather than a parameter, so that it reaches calls
//! made deep inside a handler's own code; tasks the handler spawns do not inherit it (use
//! [`with_deadline`] in them).

use std::future::Future;

use tokio::time::Instant;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// What a downstream call leaves of the inherited time, so that our reply still reaches our
/// caller: a tenth of the time left, at most this much. With no more than this left, a
/// downstream call is not started at all.
#[cfg(feature = "client")]
pub(crate) const MARGIN: std::time::Duration = std::time::Duration::from_millis(50);

/// The earlier of two optional limits (deadlines or budgets): whichever ends first, or the
/// one there is. Every "the earlier one holds" in this crate is this function.
pub(crate) fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The deadline of the request being served, when there is one.
pub(crate) fn inherited() -> Option<Instant> {
    DEADLINE.try_with(|deadline| *deadline).ok()
}

/// Runs `future` with `deadline` as the one calls made inside it inherit (an earlier one
/// already in force is kept).
pub(crate) async fn scope<F: Future>(deadline: Option<Instant>, future: F) -> F::Output {
    match earliest(deadline, inherited()) {
        Some(deadline) => DEADLINE.scope(deadline, future).await,
        None => future.await,
    }
}

/// Runs `future` so that the typed [`Client`](crate::Client) calls made inside it end by
/// `deadline` (less a small margin), as inside a handler of this crate's server. For tasks a
/// handler spawns, and for servers of your own.
pub async fn with_deadline<F: Future>(deadline: Instant, future: F) -> F::Output {
    scope(Some(deadline), future).await
}
