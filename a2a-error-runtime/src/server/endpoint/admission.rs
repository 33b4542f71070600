//! The limit on handlers running at once (`JsonRpc::max_concurrent`, and the bridge's gRPC
//! server's `GrpcLimits::max_in_flight`): a caller past it is shed with AGENT_UNAVAILABLE and
//! a truthful retry delay.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[cfg(feature = "grpc")]
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::wire::standard::StandardError;

use super::DynError;

/// The limit on handlers running at once, and what it has seen of their time.
pub(crate) struct Admission {
    running: Arc<Semaphore>,
    /// A moving average of handler run time, in microseconds: the delay a shed caller is told.
    service_micros: AtomicU64,
}

/// A running handler's place under the limit.
pub(crate) struct Slot<'a> {
    admission: &'a Admission,
    _permit: SemaphorePermit<'a>,
    started: tokio::time::Instant,
}

/// A handler's place under the limit, held for as long as it lives (a gRPC call's, until its
/// reply has been sent); its time goes into the average when it is dropped.
#[cfg(feature = "grpc")]
pub(crate) struct OwnedSlot {
    admission: Arc<Admission>,
    _permit: OwnedSemaphorePermit,
    started: tokio::time::Instant,
}

impl Admission {
    /// A limit of `limit` handlers at once (at least 1).
    pub(crate) fn new(limit: usize) -> Self {
        Admission {
            running: Arc::new(Semaphore::new(limit.clamp(1, Semaphore::MAX_PERMITS))),
            service_micros: AtomicU64::new(0),
        }
    }

    /// A slot for one handler, or the AGENT_UNAVAILABLE a shed caller gets (see
    /// [`refusal`](Self::refusal)).
    pub(super) fn admit(&self) -> Result<Slot<'_>, DynError> {
        match self.running.try_acquire() {
            Ok(permit) => Ok(Slot {
                admission: self,
                _permit: permit,
                started: tokio::time::Instant::now(),
            }),
            Err(_) => Err(Box::new(self.refusal())),
        }
    }

    /// As [`admit`](Self::admit), with a slot that owns its place.
    #[cfg(feature = "grpc")]
    pub(crate) fn admit_owned(self: &Arc<Self>) -> Result<OwnedSlot, StandardError> {
        match Arc::clone(&self.running).try_acquire_owned() {
            Ok(permit) => Ok(OwnedSlot {
                admission: Arc::clone(self),
                _permit: permit,
                started: tokio::time::Instant::now(),
            }),
            Err(_) => Err(self.refusal()),
        }
    }

    /// What a shed caller gets: AGENT_UNAVAILABLE with a delay of about one handler's recent
    /// time (at least 100 ms, at most 30 s), by when a slot has most likely come free.
    fn refusal(&self) -> StandardError {
        crate::observe::shed();
        let millis = self.service_micros.load(Ordering::Relaxed) / 1000;
        let delay = Duration::from_millis(millis)
            .clamp(Duration::from_millis(100), Duration::from_secs(30));
        StandardError::AgentUnavailable {
            retry_after: Some(delay),
        }
    }

    /// A handler that started at `started` finished: its time goes into the average.
    fn record(&self, started: tokio::time::Instant) {
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let average = &self.service_micros;
        let old = average.load(Ordering::Relaxed);
        // Weight 1/8, as TCP's smoothed RTT; a lost update under a race only costs precision.
        let new = if old == 0 {
            took
        } else {
            old - old / 8 + took / 8
        };
        average.store(new, Ordering::Relaxed);
    }
}

impl Slot<'_> {
    /// The handler finished: its time goes into the average.
    pub(super) fn finished(self) {
        self.admission.record(self.started);
    }
}

#[cfg(feature = "grpc")]
impl Drop for OwnedSlot {
    fn drop(&mut self) {
        self.admission.record(self.started);
    }
}
