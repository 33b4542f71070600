//! A future that, dropped before it is done, finishes in a task of its own: work keeps running
//! when its first caller goes away, so its outcome is recorded once.
//!
//! The futures detached at once are bounded (each holds its work's future: an unbounded
//! number would be memory any caller who hangs up at once could take). Past the bound, the
//! work detached longest ago is stopped to make room, rather than refusing new callers: a
//! storm of calls reset after a delay (measured before: 2,000 gRPC SendMessage cancelled after
//! 1 s) otherwise filled the bound, and every new caller on every binding was refused
//! AGENT_UNAVAILABLE for as long as the abandoned work ran (the bridge's 30 s). Work nobody
//! waits for never keeps out a caller who waits.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::task::AbortHandle;

/// The work running detached, oldest first, shared by the clones of one dedup.
#[derive(Debug, Default)]
pub(super) struct Detached {
    running: Mutex<BTreeMap<u64, AbortHandle>>,
    next: AtomicU64,
}

impl Detached {
    /// How much work runs detached now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, AbortHandle>> {
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `rest` in a task of its own, stopping the oldest detached work while more than
    /// `max` would run.
    fn spawn<F>(self: &Arc<Self>, runtime: &tokio::runtime::Handle, rest: F, max: usize)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let detached = Arc::clone(self);
        // Held while the task is spawned and entered, so that it cannot end (and remove
        // itself) before it is listed.
        let mut running = self.lock();
        let task = runtime.spawn(async move {
            rest.await;
            detached.lock().remove(&id);
        });
        running.insert(id, task.abort_handle());
        while running.len() > max.max(1) {
            let Some((_, oldest)) = running.pop_first() else {
                break;
            };
            tracing::warn!("too much work left by callers that went away: the oldest is stopped");
            oldest.abort();
        }
    }
}

/// A future polled in place that, dropped before it is done, finishes in a task of its own.
pub(super) struct Detachable<F: Future<Output: Send> + Send + 'static> {
    inner: Option<Pin<Box<F>>>,
    detached: Arc<Detached>,
    max: usize,
}

impl<F: Future<Output: Send> + Send + 'static> Detachable<F> {
    /// `inner`, listed in `detached` while it runs detached, which stops the oldest past
    /// `max`.
    pub(super) fn new(inner: F, detached: Arc<Detached>, max: usize) -> Self {
        Detachable {
            inner: Some(Box::pin(inner)),
            detached,
            max,
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
            self.detached.spawn(
                &runtime,
                async move {
                    rest.await;
                },
                self.max,
            );
        }
    }
}
