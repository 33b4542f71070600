//! A future that, dropped before it is done, finishes in a task of its own: work keeps running
//! when its first caller goes away, so its outcome is recorded once. The futures detached at
//! once are counted, so that the dedup can refuse new work while too many run for nobody
//! (each holds its work's future: an unbounded number would be memory any caller who hangs
//! up at once could take).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

/// A future polled in place that, dropped before it is done, finishes in a task of its own.
pub(super) struct Detachable<F: Future<Output: Send> + Send + 'static> {
    inner: Option<Pin<Box<F>>>,
    detached: Arc<AtomicUsize>,
}

impl<F: Future<Output: Send> + Send + 'static> Detachable<F> {
    /// `inner`, counted in `detached` while it runs detached.
    pub(super) fn new(inner: F, detached: Arc<AtomicUsize>) -> Self {
        Detachable {
            inner: Some(Box::pin(inner)),
            detached,
        }
    }
}

/// One detached future's place in the count, given back when it ends.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<F: Future<Output: Send> + Send + 'static> Future for Detachable<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Unpin: the work itself is boxed.
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Pending;
        };
        let output = std::task::ready!(inner.as_mut().poll(cx));
        this.inner = None;
        Poll::Ready(output)
    }
}

impl<F: Future<Output: Send> + Send + 'static> Drop for Detachable<F> {
    fn drop(&mut self) {
        if let Some(rest) = self.inner.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            self.detached.fetch_add(1, Ordering::AcqRel);
            let counted = Counted(Arc::clone(&self.detached));
            runtime.spawn(async move {
                let _counted = counted;
                rest.await;
            });
        }
    }
}
