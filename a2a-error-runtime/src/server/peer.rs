//! The address of the peer whose request is being served by [`serve`](super::serve): what
//! tells an anonymous caller (one without a credential) from another, for the callers'
//! budgets of `dependency`. A task-local set around each request's future, rather than a
//! request extension: an extension allocates the request's extension map, a scope is a swap
//! at each poll.

use std::future::Future;
use std::net::IpAddr;

use tokio::task::futures::TaskLocalFuture;

tokio::task_local! {
    static PEER: IpAddr;
}

/// The address of the peer whose request is being served here, when it is known.
#[cfg_attr(not(feature = "sdk"), allow(dead_code))]
pub(crate) fn current() -> Option<IpAddr> {
    PEER.try_with(|peer| *peer).ok()
}

/// Runs `future` as serving a request of `peer`.
pub(crate) fn scope<F: Future>(peer: IpAddr, future: F) -> TaskLocalFuture<IpAddr, F> {
    PEER.scope(peer, future)
}

/// Runs `f` as serving a request of `peer` (what a request's future is made with, before it
/// is polled).
pub(crate) fn sync_scope<R>(peer: IpAddr, f: impl FnOnce() -> R) -> R {
    PEER.sync_scope(peer, f)
}
