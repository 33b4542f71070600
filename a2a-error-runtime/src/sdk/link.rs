//! [`Link`]: what ties a request served by the [`Bridge`](super::Bridge) to the execution
//! the SDK's handler runs for it in a task of its own, so that the execution ends when its
//! caller goes away.
//!
//! The SDK's `DefaultRequestHandler` spawns the executor's work and hands the request only a
//! subscription to its events: dropping the request (a caller that hung up, a stream reset,
//! the bridge's own timeout) leaves the work running, for as long as the executor likes. The
//! bridge makes a [`Link`] for each SendMessage and SendStreamingMessage and names it in a
//! service param; [`Guarded`](super::Guarded) finds it by that name and ends the execution,
//! with the task CANCELED, once the link is dropped. Service params are text, so the link is
//! found through a map of this process; a caller's own param of the same name is removed
//! before the bridge adds its own (as for the deadline), so no caller can name another's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Notify;

/// The service param that names a request's link.
pub(crate) const LINK_PARAM: &str = "a2a-error-link";

/// The part of a link the execution holds: whether the request is gone.
#[derive(Default)]
pub(crate) struct Watch {
    gone: AtomicBool,
    notify: Notify,
}

impl Watch {
    /// Resolves once the request that made the link is gone.
    pub(crate) async fn gone(&self) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.gone.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// The links alive in this process, by number. One entry per request in flight: removed when
/// its [`Link`] is dropped.
fn links() -> &'static Mutex<HashMap<u64, Arc<Watch>>> {
    static LINKS: OnceLock<Mutex<HashMap<u64, Arc<Watch>>>> = OnceLock::new();
    LINKS.get_or_init(Default::default)
}

/// The request's end of a link: while it lives, the execution it names runs; dropped, the
/// execution is told to end.
pub(crate) struct Link {
    id: u64,
    watch: Arc<Watch>,
}

impl Link {
    /// A new link, known to the map until it is dropped.
    pub(crate) fn new() -> Link {
        let watch = Arc::new(Watch::default());
        let mut map = links().lock().unwrap_or_else(|poison| poison.into_inner());
        // 64 random bits: a clash with a link in flight is drawn again.
        let id = loop {
            let id = fastrand::u64(..);
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(id, Arc::clone(&watch));
        Link { id, watch }
    }

    /// The value of [`LINK_PARAM`] that names this link.
    pub(crate) fn param(&self) -> String {
        self.id.to_string()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        links()
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.id);
        self.watch.gone.store(true, Ordering::Release);
        self.watch.notify.notify_waiters();
    }
}

/// The watch of the link a service param names, if it is still alive.
pub(crate) fn find(param: &str) -> Option<Arc<Watch>> {
    let id: u64 = param.parse().ok()?;
    links()
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .get(&id)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_link_is_gone_and_forgotten() {
        let link = Link::new();
        let watch = find(&link.param()).unwrap();
        let waiting = tokio::spawn({
            let watch = Arc::clone(&watch);
            async move { watch.gone().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let param = link.param();
        drop(link);
        waiting.await.unwrap();
        assert!(find(&param).is_none());
        // Already gone: resolves at once.
        watch.gone().await;
        assert!(find("not a number").is_none());
    }
}
