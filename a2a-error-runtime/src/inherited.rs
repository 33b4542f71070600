//! What the calls made on behalf of the request being served inherit from it: its trace
//! context (`trace`), its deadline (`deadline`) and its caller (for the callers' budgets of
//! `dependency`), in one
//! task-local. One rather than one each: a request's handler then runs inside one scope,
//! which each poll of it enters and leaves (two scopes' polls were ~1.8 % of an error reply's
//! instructions, one is half that), and what the SDK bridge carries into its executor's task
//! is one value. Storage only: what is put in it is decided by `deadline`
//! (which stands on this file) and the servers.

use std::future::Future;

use tokio::task::futures::TaskLocalFuture;
use tokio::time::Instant;

use crate::wire::trace::TraceContext;

/// What a call made now inherits: the trace it belongs to, and when it must end by.
#[derive(Clone, Default)]
#[doc(hidden)]
pub struct Inherited {
    /// The trace context of the request being served.
    pub trace: Option<TraceContext>,
    /// The deadline of the request being served.
    pub deadline: Option<Instant>,
    /// Who the request being served is for, as a 128-bit key: its credential's, or its
    /// address's when it sent none (see `sdk::call`). `None`: no caller known.
    pub caller: Option<u128>,
}

tokio::task_local! {
    static INHERITED: Inherited;
}

/// Reads what is inherited here, if anything is.
pub(crate) fn read<R>(f: impl FnOnce(&Inherited) -> R) -> Option<R> {
    INHERITED.try_with(f).ok()
}

/// The caller of the request being served, when one is known.
#[cfg(feature = "client")]
pub(crate) fn caller() -> Option<u128> {
    read(|inherited| inherited.caller).flatten()
}

/// What is inherited here (nothing outside a scope).
pub(crate) fn current() -> Inherited {
    INHERITED.try_with(Clone::clone).unwrap_or_default()
}

/// Runs `future` with `inherited` as what calls made inside it inherit.
#[doc(hidden)]
pub fn scope<F: Future>(inherited: Inherited, future: F) -> TaskLocalFuture<Inherited, F> {
    INHERITED.scope(inherited, future)
}

/// Runs `f` with `inherited` as what calls made inside it inherit: [`scope`] for one poll of a
/// future that scopes itself at each poll, or for code that runs before any is polled.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn sync_scope<R>(inherited: Inherited, f: impl FnOnce() -> R) -> R {
    INHERITED.sync_scope(inherited, f)
}
