//! [`Link`]: what ties a request served by the [`Bridge`](crate::serve::Bridge) to the execution
//! the SDK's handler runs for it in a task of its own, so that the execution ends when its
//! caller goes away, and a stream's execution runs no further ahead of its reader than the
//! SDK's buffer holds.
//!
//! The SDK's `DefaultRequestHandler` spawns the executor's work and hands the request only a
//! subscription to its events: dropping the request (a caller that hung up, a stream reset,
//! the bridge's own timeout) leaves the work running, for as long as the executor likes. The
//! bridge makes a [`Link`] for each SendMessage and SendStreamingMessage and names it in its
//! service param (`sdk::call`); [`Guarded`](crate::executor::Guarded) finds it by that name and ends
//! the execution, with the task CANCELED, once the link is dropped. Service params are text,
//! so the link is found through a map of this process; a caller's own param of the same name
//! is removed before the bridge adds its own, so no caller can name another's.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Notify;

/// How many events a stream's execution may make before its reader has received them. The
/// SDK's handler passes events through a broadcast buffer of 32 and ends the subscription of
/// a reader that falls further behind ("subscription fell behind active execution", a bare
/// INTERNAL): at most 16 in the buffer, with room for the handler's own last event.
pub(crate) const STREAM_WINDOW: usize = 16;

/// What is told a task's id when its execution starts.
type OnStart = Box<dyn Fn(&str) + Send + Sync>;

/// The part of a link the execution holds.
#[derive(Default)]
pub(crate) struct Watch {
    gone: AtomicBool,
    notify: Notify,
    /// For a stream: one permit per event the execution may make before the reader has
    /// received more (see [`STREAM_WINDOW`]).
    credits: Option<tokio::sync::Semaphore>,
    /// The id of the task the execution runs, once it has started.
    task: OnceLock<String>,
    /// Told the task's id when the execution starts (the bridge records the caller as its
    /// owner then, so that the caller reads its task while a SendMessage still runs it).
    on_start: OnceLock<OnStart>,
    ended: AtomicBool,
    ended_notify: Notify,
    /// The execution asked for a failure after its first event to end its caller's stream
    /// as a FAILED status update (see `executor::fail_as_status`): a failure the SDK's
    /// handler itself publishes then (its task store refusing an event) is sent that way too.
    as_status: AtomicBool,
    /// A stream's tokens, sent to its reader beside the handler's events (see
    /// `sdk::appends`): each with the number of events the guard had given the handler when
    /// it came, so that it is sent after that many of them. At most [`STREAM_WINDOW`]: each
    /// took a credit.
    tokens: Mutex<std::collections::VecDeque<(u64, a2a::StreamResponse)>>,
    /// The reader's task, woken when a token is sent.
    reader: futures_util::task::AtomicWaker,
}

/// Waits on `flag`, set before `notify` is told.
async fn wait(flag: &AtomicBool, notify: &Notify) {
    loop {
        let notified = notify.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if flag.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }
}

impl Watch {
    /// Waits for a credit to make one more event (at once for a unary request's execution).
    pub(crate) async fn credit(&self) {
        if let Some(credits) = &self.credits
            && let Ok(permit) = credits.acquire().await
        {
            permit.forget();
        }
    }

    /// Takes a credit if one is free at once (as [`credit`](Watch::credit) would without
    /// waiting): false when the execution must wait for its reader.
    pub(crate) fn try_credit(&self) -> bool {
        match &self.credits {
            Some(credits) => match credits.try_acquire() {
                Ok(permit) => {
                    permit.forget();
                    true
                }
                Err(tokio::sync::TryAcquireError::NoPermits) => false,
                Err(tokio::sync::TryAcquireError::Closed) => true,
            },
            None => true,
        }
    }

    /// The execution ends a failure after its first event as a FAILED status update.
    pub(crate) fn fails_as_status(&self) {
        self.as_status.store(true, Ordering::Relaxed);
    }

    /// Whether the execution asked for failures as FAILED status updates.
    pub(crate) fn as_status(&self) -> bool {
        self.as_status.load(Ordering::Relaxed)
    }

    /// Sends `token` to the stream's reader after the handler's `after` events.
    pub(crate) fn send_token(&self, after: u64, token: a2a::StreamResponse) {
        self.tokens
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push_back((after, token));
        self.reader.wake();
    }

    /// The next token to send once the reader has sent `sent` of the handler's events, if
    /// one is due; `waker` is woken when one is sent.
    pub(crate) fn next_token(
        &self,
        sent: u64,
        waker: &std::task::Waker,
    ) -> Option<a2a::StreamResponse> {
        self.reader.register(waker);
        let mut tokens = self
            .tokens
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        match tokens.front() {
            Some((after, _)) if *after <= sent => tokens.pop_front().map(|(_, token)| token),
            _ => None,
        }
    }

    /// Whether the link is a stream's (its reader receives each event as it is made).
    pub(crate) fn is_stream(&self) -> bool {
        self.credits.is_some()
    }

    /// The reader received an event: the execution may make one more.
    pub(crate) fn received(&self) {
        if let Some(credits) = &self.credits {
            credits.add_permits(1);
        }
    }

    /// The execution started on `task`.
    pub(crate) fn started(&self, task: &str) {
        let _ = self.task.set(task.to_owned());
        if let Some(on_start) = self.on_start.get() {
            on_start(task);
        }
    }

    /// Tells `on_start` the task's id when the execution starts.
    pub(crate) fn on_start(&self, on_start: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.on_start.set(Box::new(on_start));
    }

    /// The id of the task the execution runs, once it has started.
    pub(crate) fn task(&self) -> Option<&str> {
        self.task.get().map(String::as_str)
    }

    /// The execution ended (its stream was dropped): what it wrote to the store is there.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.ended_notify.notify_waiters();
    }

    /// Resolves once the execution has ended.
    pub(crate) async fn ended(&self) {
        wait(&self.ended, &self.ended_notify).await;
    }

    /// Resolves once the request that made the link is gone.
    pub(crate) async fn gone(&self) {
        wait(&self.gone, &self.notify).await;
    }
}

/// The links alive in this process, by number. One entry per request in flight: removed when
/// its [`Link`] is dropped.
fn links() -> &'static Mutex<Links> {
    static LINKS: OnceLock<Mutex<Links>> = OnceLock::new();
    LINKS.get_or_init(Default::default)
}

/// The map of links: its keys are drawn at random by this process, never chosen by a caller,
/// so they are their own hash (SipHash's guard against chosen keys buys nothing here, and it
/// was hashed three times a SendMessage).
type Links = HashMap<u64, Arc<Watch>, BuildHasherDefault<DrawnHasher>>;

/// The hasher of keys drawn at random: the key itself.
#[derive(Default)]
struct DrawnHasher(u64);

impl Hasher for DrawnHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached for a `u64` key; any other input is folded in, never panics.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The request's end of a link: while it lives, the execution it names runs; dropped before
/// it is [`answered`](Link::answered), the execution is told to end.
pub(crate) struct Link {
    id: u64,
    watch: Arc<Watch>,
    answered: bool,
}

impl Link {
    /// A new link for a unary request, known to the map until it is dropped.
    pub(crate) fn new() -> Link {
        Link::with(Watch::default())
    }

    /// A new link for a stream: its execution makes at most [`STREAM_WINDOW`] events more
    /// than the reader has received ([`Watch::received`]).
    pub(crate) fn stream() -> Link {
        Link::with(Watch {
            credits: Some(tokio::sync::Semaphore::new(STREAM_WINDOW)),
            ..Watch::default()
        })
    }

    fn with(watch: Watch) -> Link {
        let watch = Arc::new(watch);
        let mut map = links().lock().unwrap_or_else(|poison| poison.into_inner());
        // 64 random bits: a clash with a link in flight is drawn again.
        let id = loop {
            let id = fastrand::u64(..);
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(id, Arc::clone(&watch));
        Link {
            id,
            watch,
            answered: false,
        }
    }

    /// The handler answered the request: from now on the execution is not the request's to
    /// end (a SendMessage with `returnImmediately` is answered while its task runs on).
    pub(crate) fn answered(mut self) {
        self.answered = true;
    }

    /// The execution's side of this link.
    pub(crate) fn watch(&self) -> &Watch {
        &self.watch
    }

    /// The id that names this link in the bridge's service param.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        links()
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(&self.id);
        if !self.answered {
            self.watch.gone.store(true, Ordering::Release);
            self.watch.notify.notify_waiters();
        }
    }
}

/// The watch of the link `id` names, if it is still alive.
pub(crate) fn find(id: u64) -> Option<Arc<Watch>> {
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
        let watch = find(link.id()).unwrap();
        let waiting = tokio::spawn({
            let watch = Arc::clone(&watch);
            async move { watch.gone().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        let id = link.id();
        drop(link);
        waiting.await.unwrap();
        assert!(find(id).is_none());
        // Already gone: resolves at once.
        watch.gone().await;

        // Answered: forgotten, and not gone.
        let link = Link::new();
        let (id, watch) = (link.id(), find(link.id()).unwrap());
        link.answered();
        assert!(find(id).is_none());
        assert!(!watch.gone.load(Ordering::Acquire));
    }
}
