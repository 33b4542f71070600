//! The limit on handlers running at once (`JsonRpc::max_concurrent` or
//! `JsonRpc::adaptive_concurrency`, and the bridge's gRPC server's `GrpcLimits`): a caller past
//! it is shed with AGENT_UNAVAILABLE and a truthful retry delay. The limit is a number, or
//! found from measured latency by `gradient`.

pub(crate) mod gradient;

#[cfg(feature = "sdk")]
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::wire::standard::StandardError;

use super::DynError;
pub use gradient::AdaptiveLimit;
use gradient::Gradient;

/// The limit on handlers running at once, and what it has seen of their time.
#[doc(hidden)]
pub struct Admission {
    /// Handlers admitted and not yet finished.
    running: AtomicUsize,
    /// The limit now: fixed, or the controller's latest.
    limit: AtomicUsize,
    /// The controller of an adaptive limit.
    adaptive: Option<Mutex<Gradient>>,
    /// A moving average of handler run time, in microseconds: the delay a shed caller is told.
    service_micros: AtomicU64,
}

/// A running handler's place under the limit, given back when dropped.
pub(crate) struct Slot<'a> {
    admission: &'a Admission,
    started: tokio::time::Instant,
    /// Handlers running when this one was admitted, itself included.
    running: usize,
}

/// A handler's place under the limit, held for as long as it lives (a gRPC call's, until its
/// reply has been sent); its time is measured when it is [`answered`](Self::answered).
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub struct OwnedSlot {
    admission: Arc<Admission>,
    started: tokio::time::Instant,
    running: usize,
    answered: bool,
}

impl Admission {
    /// A limit of `limit` handlers at once (at least 1).
    #[doc(hidden)]
    pub fn new(limit: usize) -> Self {
        Admission {
            running: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit.max(1)),
            adaptive: None,
            service_micros: AtomicU64::new(0),
        }
    }

    /// A limit found from the handlers' measured time, as `config` says.
    #[doc(hidden)]
    pub fn adaptive(config: AdaptiveLimit) -> Self {
        let gradient = Gradient::new(config, tokio::time::Instant::now());
        Admission {
            limit: AtomicUsize::new(gradient.limit()),
            adaptive: Some(Mutex::new(gradient)),
            ..Admission::new(1)
        }
    }

    /// Takes a place, or `None` at the limit; the handlers running, this one included.
    fn take(&self) -> Option<usize> {
        let limit = self.limit.load(Ordering::Relaxed);
        let before = self.running.fetch_add(1, Ordering::AcqRel);
        if before >= limit {
            self.running.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(before + 1)
    }

    /// A slot for one handler, or the AGENT_UNAVAILABLE a shed caller gets (see
    /// [`refusal`](Self::refusal)).
    pub(super) fn admit(&self) -> Result<Slot<'_>, DynError> {
        match self.take() {
            Some(running) => Ok(Slot {
                admission: self,
                started: tokio::time::Instant::now(),
                running,
            }),
            None => Err(Box::new(self.refusal())),
        }
    }

    /// As [`admit`](Self::admit), with a slot that owns its place.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn admit_owned(self: &Arc<Self>) -> Result<OwnedSlot, StandardError> {
        match self.take() {
            Some(running) => Ok(OwnedSlot {
                admission: Arc::clone(self),
                started: tokio::time::Instant::now(),
                running,
                answered: false,
            }),
            None => Err(self.refusal()),
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

    /// A handler that started at `started`, with `running` handlers then, finished: its time
    /// goes into the average, and to the controller of an adaptive limit.
    fn record(&self, started: tokio::time::Instant, running: usize) {
        let now = tokio::time::Instant::now();
        let took = now.saturating_duration_since(started);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let average = &self.service_micros;
        let old = average.load(Ordering::Relaxed);
        // Weight 1/8, as TCP's smoothed RTT; a lost update under a race only costs precision.
        let new = if old == 0 {
            micros
        } else {
            old - old / 8 + micros / 8
        };
        average.store(new, Ordering::Relaxed);
        if let Some(adaptive) = &self.adaptive
            // A poisoned controller (a panic inside it) keeps its last limit.
            && let Ok(mut gradient) = adaptive.lock()
            && let Some(limit) = gradient.sample(took, running, now)
        {
            self.limit.store(limit, Ordering::Relaxed);
        }
    }
}

impl Slot<'_> {
    /// The handler finished: its time goes into the average.
    pub(super) fn finished(self) {
        self.admission.record(self.started, self.running);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.admission.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(feature = "sdk")]
impl OwnedSlot {
    /// The call was answered (a stream: opened): its time goes into the average, once.
    #[doc(hidden)]
    pub fn answered(&mut self) {
        if !std::mem::replace(&mut self.answered, true) {
            self.admission.record(self.started, self.running);
        }
    }
}

#[cfg(feature = "sdk")]
impl Drop for OwnedSlot {
    fn drop(&mut self) {
        self.admission.running.fetch_sub(1, Ordering::AcqRel);
    }
}
