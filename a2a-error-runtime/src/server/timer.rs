//! The timer hyper's header-read timeout runs on, one per connection. hyper asks for a new
//! sleep each time it starts reading a request's head and drops it when the head is in, so
//! with tokio's timer every request of a kept-alive connection registered a timer entry and
//! cleared it again (about a fortieth of a JSON-RPC error reply's work under callgrind).
//! Here a connection keeps one tokio sleep, registered for the earliest deadline anyone asked
//! of it; a later deadline does not move it, and when it fires early the sleep that is
//! waiting moves it on to its own deadline. A busy connection so re-registers about once per
//! timeout, not once per request, and nothing fires later than asked.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use hyper::rt::{Sleep, Timer};

/// hyper's [`Timer`] for one connection (see the module's docs).
#[derive(Clone, Default)]
pub(crate) struct ConnectionTimer {
    shared: Arc<Mutex<Shared>>,
}

/// The connection's one sleep, and the waker it was last polled with.
#[derive(Default)]
struct Shared {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    waker: Option<Waker>,
}

impl Timer for ConnectionTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        let now = tokio::time::Instant::from_std(self.now());
        self.sleep_until(crate::deadline::after(now, duration).into_std())
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(Waiting {
            deadline: deadline.into(),
            shared: Arc::clone(&self.shared),
        })
    }

    fn now(&self) -> Instant {
        // tokio's clock, as hyper's `TokioTimer`: a paused test clock holds for it too.
        tokio::time::Instant::now().into_std()
    }
}

/// One sleep hyper waits on, until `deadline`.
struct Waiting {
    deadline: tokio::time::Instant,
    shared: Arc<Mutex<Shared>>,
}

impl Future for Waiting {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline;
        let mut shared = self
            .shared
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let Shared { sleep, waker } = &mut *shared;
        // Registered for this deadline or earlier, not fired, and to wake this same task:
        // nothing to do (the common case, once per request).
        if let (Some(sleep), Some(waker)) = (sleep.as_ref(), waker.as_ref())
            && sleep.deadline() <= deadline
            && !sleep.is_elapsed()
            && waker.will_wake(cx.waker())
        {
            return Poll::Pending;
        }
        if !waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            *waker = Some(cx.waker().clone());
        }
        let sleep = sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        loop {
            // Registered for later than this deadline: move it earlier (a later one it keeps,
            // and moves on when it fires).
            if sleep.deadline() > deadline {
                sleep.as_mut().reset(deadline);
            }
            match sleep.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if sleep.deadline() >= deadline => return Poll::Ready(()),
                // It fired for an earlier request's deadline: on to this one's.
                Poll::Ready(()) => sleep.as_mut().reset(deadline),
            }
        }
    }
}

impl Sleep for Waiting {}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    #[tokio::test(start_paused = true)]
    async fn a_sleep_ends_at_its_own_deadline_however_the_shared_one_stood() {
        let timer = ConnectionTimer::default();
        let start = tokio::time::Instant::now();
        // An earlier request's sleep registers the connection's for 100 ms, then is dropped.
        let mut first = timer.sleep(Duration::from_millis(100));
        assert!((&mut first).now_or_never().is_none());
        tokio::time::advance(Duration::from_millis(50)).await;
        // This one wants 300 ms from now: the shared sleep fires at 100 ms, and moves on.
        let mut second = timer.sleep(Duration::from_millis(300));
        second.as_mut().await;
        assert_eq!(start.elapsed(), Duration::from_millis(350));
        // One earlier than the shared sleep's deadline moves it back.
        let mut later = timer.sleep(Duration::from_secs(60));
        assert!((&mut later).now_or_never().is_none());
        let start = tokio::time::Instant::now();
        timer.sleep(Duration::from_millis(10)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        // A deadline already past is over at once.
        timer.sleep(Duration::ZERO).await;
    }
}
