//! `Bulkhead`: at most so many calls in flight to one agent, at most so many waiting.
//!
//! Without it nothing bounded what a coordinator opened toward an agent: 15 batches of 100
//! SendMessage to one agent that never answers held 3,000 sockets, and at the common
//! `ulimit -n` of 1024 the process ran out of descriptors, so calls to healthy agents failed
//! too. With it, each agent gets at most [`max_concurrent`](Bulkhead::new) connections'
//! worth of attempts; past that a bounded queue waits (within the call's deadline), and past
//! the queue a call fails at once with `ClientError::BulkheadFull` (for an agent; `FromLayer::bulkhead_full` for any error)
//! (or the error type's [`FromLayer::bulkhead_full`]), which the breaker does
//! not count against the agent and the retry layer does not repeat.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{Layer, Service, ServiceExt};

use crate::resilience::classify::FromLayer;
use crate::resilience::classify::Timeout;
use crate::resilience::request::{Request, TimeLimit};

/// The calls in flight to one agent, and those waiting. Clones share the limit: give one
/// bulkhead to every client of the same agent.
///
/// Defaults: 256 calls in flight and 1,024 waiting. Envoy's per-cluster defaults are 1,024
/// connections and 1,024 pending requests; a socket is a descriptor, and 1,024 descriptors is
/// a common whole-process limit, so in flight is a quarter of that here. A waiting call costs
/// memory only.
#[derive(Clone, Debug)]
pub struct Bulkhead {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    in_flight: Arc<Semaphore>,
    max_concurrent: usize,
    max_queued: usize,
    queued: AtomicUsize,
}

impl Default for Bulkhead {
    fn default() -> Self {
        Bulkhead::new(256, 1024)
    }
}

impl Bulkhead {
    /// A bulkhead of its own with this one's limits (one per receiver of push notifications).
    #[cfg(feature = "push")]
    pub(crate) fn same_limits(&self) -> Bulkhead {
        Bulkhead::new(self.inner.max_concurrent, self.inner.max_queued)
    }

    /// At most `max_concurrent` calls in flight (at least 1) and `max_queued` waiting.
    pub fn new(max_concurrent: usize, max_queued: usize) -> Self {
        let max_concurrent = max_concurrent.clamp(1, Semaphore::MAX_PERMITS);
        Bulkhead {
            inner: Arc::new(Inner {
                in_flight: Arc::new(Semaphore::new(max_concurrent)),
                max_concurrent,
                max_queued,
                queued: AtomicUsize::new(0),
            }),
        }
    }

    /// The calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.max_concurrent - self.inner.in_flight.available_permits()
    }

    /// The calls waiting now.
    pub fn queued(&self) -> usize {
        self.inner.queued.load(Ordering::Relaxed)
    }

    /// A slot for one call: at once when one is free, else after waiting in the queue (until
    /// the call's deadline, if it has one); `Err` when the queue is full or the deadline passes
    /// first. The clock is read only when the call has to wait.
    async fn admit<E: FromLayer>(&self, limit: TimeLimit) -> Result<OwnedSemaphorePermit, E> {
        if let Ok(permit) = Arc::clone(&self.inner.in_flight).try_acquire_owned() {
            return Ok(permit);
        }
        let inner = &self.inner;
        let taken = inner
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued < inner.max_queued).then_some(queued + 1)
            });
        if taken.is_err() {
            tracing::debug!("call rejected: bulkhead full");
            return Err(E::bulkhead_full());
        }
        // Leaves the queue however the wait ends (a permit, the deadline, the caller gone).
        struct Leave<'a>(&'a AtomicUsize);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _leave = Leave(&inner.queued);
        let wait = Arc::clone(&inner.in_flight).acquire_owned();
        let permit = match limit.deadline_from(tokio::time::Instant::now()) {
            Some(deadline) => tokio::time::timeout_at(deadline, wait)
                .await
                .map_err(|_| E::timeout(Timeout::Total))?,
            None => wait.await,
        };
        // The semaphore is never closed.
        permit.map_err(|_| E::bulkhead_full())
    }
}

/// The future of a layer that has to wait.
pub(crate) type BoxFuture<T, E> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, E>> + Send>>;

/// The `tower::Layer` that builds [`BulkheadService`]; every service it wraps shares the one
/// bulkhead.
#[derive(Clone, Debug, Default)]
pub struct BulkheadLayer {
    bulkhead: Bulkhead,
}

impl BulkheadLayer {
    /// A layer limiting with `bulkhead`.
    pub fn new(bulkhead: Bulkhead) -> Self {
        BulkheadLayer { bulkhead }
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = BulkheadService<S>;

    fn layer(&self, inner: S) -> BulkheadService<S> {
        BulkheadService {
            inner,
            bulkhead: self.bulkhead.clone(),
        }
    }
}

/// Calls the service it wraps within a [`Bulkhead`]. Place it below the retry layer (a
/// backoff wait holds no slot) and above the attempt timeout (a wait in the queue is not the
/// agent's time).
#[derive(Clone, Debug)]
pub struct BulkheadService<S> {
    inner: S,
    bulkhead: Bulkhead,
}

impl<S, R> Service<R> for BulkheadService<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: FromLayer + Send + 'static,
    R: Request + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is decided per call, in the queue; the inner service's once admitted.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: R) -> Self::Future {
        let bulkhead = self.bulkhead.clone();
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let _slot = bulkhead.admit(call.time_limit()).await?;
            inner.ready().await?.call(call).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Call, ClientError, Reply, ReplyFuture};
    use std::time::Duration;

    use crate::wire::remote::RemoteError;

    /// A service that answers only when `release` is notified.
    #[derive(Clone)]
    struct Held(Arc<tokio::sync::Notify>, Arc<AtomicUsize>);

    impl Service<Call> for Held {
        type Response = Reply<RemoteError>;
        type Error = ClientError<RemoteError>;
        type Future = ReplyFuture<RemoteError>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: Call) -> Self::Future {
            let (release, started) = (self.0.clone(), self.1.clone());
            Box::pin(async move {
                started.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                Ok(Reply::Result(serde_json::value::to_raw_value(&1).unwrap()))
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn bounds_calls_in_flight_and_waiting() {
        let release = Arc::new(tokio::sync::Notify::new());
        let started = Arc::new(AtomicUsize::new(0));
        let bulkhead = Bulkhead::new(2, 1);
        let service =
            BulkheadLayer::new(bulkhead.clone()).layer(Held(release.clone(), started.clone()));
        let call = || Call::from_json("GetTask", "{}");
        let mut running = Vec::new();
        for _ in 0..3 {
            let mut service = service.clone();
            running.push(tokio::spawn(async move { service.call(call()).await }));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(
            (
                started.load(Ordering::SeqCst),
                bulkhead.in_flight(),
                bulkhead.queued()
            ),
            (2, 2, 1)
        );
        // The fourth finds the queue full and fails at once, as nothing the agent did.
        let error = service.clone().call(call()).await.unwrap_err();
        assert!(matches!(error, ClientError::BulkheadFull), "{error:?}");
        assert_eq!(
            error.health(),
            crate::resilience::classify::Outcome::Ignored
        );
        assert!(!error.may_have_run());
        // A waiting call with a deadline gives up at the deadline.
        let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
        let mut waiting = service.clone();
        let late = tokio::spawn(async move { waiting.call(call().with_deadline(deadline)).await });
        tokio::time::sleep(Duration::from_millis(1)).await;
        // The queue holds one: this one was refused; the earlier waiter is still queued.
        let refused = late.await.unwrap().unwrap_err();
        assert!(matches!(refused, ClientError::BulkheadFull), "{refused:?}");
        // Releasing the running ones lets the queued one in.
        release.notify_waiters();
        tokio::time::sleep(Duration::from_millis(1)).await;
        release.notify_waiters();
        for task in running {
            assert!(task.await.unwrap().is_ok());
        }
        assert_eq!((bulkhead.in_flight(), bulkhead.queued()), (0, 0));
        assert_eq!(started.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_in_the_queue_ends_at_the_call_deadline() {
        let release = Arc::new(tokio::sync::Notify::new());
        let started = Arc::new(AtomicUsize::new(0));
        let bulkhead = Bulkhead::new(1, 8);
        let service = BulkheadLayer::new(bulkhead.clone()).layer(Held(release, started));
        let mut first = service.clone();
        let _held = tokio::spawn(async move { first.call(Call::from_json("GetTask", "{}")).await });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
        let error = service
            .clone()
            .call(Call::from_json("GetTask", "{}").with_deadline(deadline))
            .await
            .unwrap_err();
        assert!(
            matches!(error, ClientError::Timeout(Timeout::Total)),
            "{error:?}"
        );
        assert_eq!(bulkhead.queued(), 0);
    }
}
