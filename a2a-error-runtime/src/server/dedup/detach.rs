//! A future that, dropped before it is done, finishes in a task of its own: work keeps running
//! when its first caller goes away, so its outcome is recorded once.

use std::pin::Pin;
use std::task::{Context, Poll};

/// A future polled in place that, dropped before it is done, finishes in a task of its own.
pub(super) struct Detachable<F: Future<Output: Send> + Send + 'static> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future<Output: Send> + Send + 'static> Detachable<F> {
    pub(super) fn new(inner: F) -> Self {
        Detachable {
            inner: Some(Box::pin(inner)),
        }
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
            runtime.spawn(async move {
                rest.await;
            });
        }
    }
}
