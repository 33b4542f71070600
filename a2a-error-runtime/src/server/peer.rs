//! The address of the peer whose request is being served by [`serve`](super::serve): what
//! tells an anonymous caller (one without a credential) from another, for the callers'
//! budgets of `dependency`.
//!
//! A thread-local cell set around each poll of a request's future (`Peer`), rather than a
//! request extension (which allocates the request's extension map) or a tokio task-local
//! (whose scope borrows a `RefCell` and swaps the value at each poll: 1.8 % of an error
//! reply's instructions on the endpoint, measured; this is a few instructions).

use std::cell::Cell;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    static PEER: Cell<Option<IpAddr>> = const { Cell::new(None) };
}

/// The address of the peer whose request is being served here, when it is known.
#[cfg_attr(not(feature = "sdk"), allow(dead_code))]
#[doc(hidden)]
pub fn current() -> Option<IpAddr> {
    PEER.with(Cell::get)
}

/// Puts the previous peer back when dropped (a panicking poll included).
struct Restore(Option<IpAddr>);

impl Drop for Restore {
    fn drop(&mut self) {
        PEER.with(|peer| peer.set(self.0));
    }
}

/// Runs `f` as serving a request of `peer` (what a request's future is made with, before it
/// is polled).
pub(crate) fn sync_scope<R>(peer: IpAddr, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(PEER.with(|cell| cell.replace(Some(peer))));
    f()
}

pin_project_lite::pin_project! {
    /// A request's future, polled as serving a request of `peer`.
    pub(crate) struct Peer<F> {
        peer: IpAddr,
        #[pin]
        future: F,
    }
}

/// `future`, polled as serving a request of `peer`.
pub(crate) fn scope<F: Future>(peer: IpAddr, future: F) -> Peer<F> {
    Peer { peer, future }
}

impl<F: Future> Future for Peer<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _restore = Restore(PEER.with(|cell| cell.replace(Some(*this.peer))));
        this.future.poll(cx)
    }
}
