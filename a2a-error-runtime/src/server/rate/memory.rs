//! The records of [`RateLimiter::memory`](super::RateLimiter::memory): each caller's due time
//! in a [`BoundedMap`], bounded in callers and bytes.

use std::time::Duration;

use tokio::time::Instant;

use super::RateLimit;
use crate::bounded::{BoundedMap, Change};

/// The most callers whose records are kept.
pub(crate) const MAX_CALLERS: u64 = 100_000;

/// What one record weighs in resident memory: its key (a 32-digit hash), its value and the
/// map's own share (measured: 100,000 records grew a process by 18.1 MiB, ~190 bytes each).
const RECORD_BYTES: u64 = 192;

pub(crate) struct Records(BoundedMap<Instant>);

impl Records {
    pub(crate) fn new() -> Self {
        Records(BoundedMap::new(MAX_CALLERS, MAX_CALLERS * RECORD_BYTES))
    }

    /// Takes one request from `caller`'s allowance: `None` when allowed, else how long until
    /// it would be.
    pub(crate) fn take(&self, caller: &str, limit: &RateLimit) -> Option<Duration> {
        let now = Instant::now();
        self.0.update(caller, |due| {
            // A record past its time is a caller with its whole burst back.
            let due = due.copied().filter(|due| *due > now).unwrap_or(now);
            let ahead = due - now;
            let tolerance = limit.tolerance();
            if ahead > tolerance {
                return (Change::Keep, Some(ahead - tolerance));
            }
            let next = due + limit.interval;
            let change = Change::Put {
                value: next,
                weight: RECORD_BYTES,
                ttl: next - now,
            };
            (change, None)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_one_an_interval_with_the_exact_wait() {
        let records = Records::new();
        let limit = RateLimit::per_second(4).burst(2);
        assert_eq!(records.take("a", &limit), None);
        assert_eq!(records.take("a", &limit), None);
        // The third waits until the first interval has passed: 250 ms.
        assert_eq!(records.take("a", &limit), Some(Duration::from_millis(250)));
        // Another caller has its own.
        assert_eq!(records.take("b", &limit), None);
        tokio::time::advance(Duration::from_millis(100)).await;
        assert_eq!(records.take("a", &limit), Some(Duration::from_millis(150)));
        tokio::time::advance(Duration::from_millis(150)).await;
        assert_eq!(records.take("a", &limit), None);
        assert_eq!(records.take("a", &limit), Some(Duration::from_millis(250)));
        // After a quiet while the whole burst is back, and the record is gone.
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(records.take("a", &limit), None);
        assert_eq!(records.take("a", &limit), None);
    }

    #[tokio::test(start_paused = true)]
    async fn many_callers_stay_within_the_bound() {
        let records = Records::new();
        let limit = RateLimit::per_second(1);
        for n in 0..(MAX_CALLERS + 5_000) {
            assert_eq!(records.take(&format!("{n:032x}"), &limit), None);
        }
        assert!(records.0.len() <= MAX_CALLERS);
    }
}
