//! The endpoint's limit on handlers running at once (`JsonRpc::max_concurrent`): a caller
//! past it is shed with AGENT_UNAVAILABLE and a truthful retry delay.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::wire::standard::StandardError;

use super::DynError;

/// The endpoint's limit on handlers running at once, and what it has seen of their time.
pub(super) struct Admission {
    pub(super) running: Semaphore,
    /// A moving average of handler run time, in microseconds: the delay a shed caller is told.
    pub(super) service_micros: AtomicU64,
}

/// A running handler's place under the limit.
pub(super) struct Slot<'a> {
    admission: &'a Admission,
    _permit: SemaphorePermit<'a>,
    started: tokio::time::Instant,
}

impl Admission {
    /// A slot for one handler, or the AGENT_UNAVAILABLE a shed caller gets, with a delay of
    /// about one handler's recent time (at least 100 ms, at most 30 s), by when a slot has
    /// most likely come free.
    pub(super) fn admit(&self) -> Result<Slot<'_>, DynError> {
        match self.running.try_acquire() {
            Ok(permit) => Ok(Slot {
                admission: self,
                _permit: permit,
                started: tokio::time::Instant::now(),
            }),
            Err(_) => {
                let millis = self.service_micros.load(Ordering::Relaxed) / 1000;
                let delay = Duration::from_millis(millis)
                    .clamp(Duration::from_millis(100), Duration::from_secs(30));
                Err(Box::new(StandardError::AgentUnavailable {
                    retry_after: Some(delay),
                }))
            }
        }
    }
}

impl Slot<'_> {
    /// The handler finished: its time goes into the average.
    pub(super) fn finished(self) {
        let took = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let average = &self.admission.service_micros;
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
