//! The rolling window of outcomes behind the failure-ratio trigger: a ring of time buckets of
//! atomic counters. Recording is a few relaxed atomics, no lock; a bucket whose slice of time
//! has passed is reset by the first writer that notices. Under a race at a bucket's rollover a
//! sample may land in the old slice: the ratio is approximate by design, like every sampled
//! breaker's.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

pub(crate) struct Window {
    buckets: Box<[Bucket]>,
    bucket_nanos: u64,
}

struct Bucket {
    // The index of the slice of time (now / bucket length) the counts belong to.
    slice: AtomicU64,
    successes: AtomicU32,
    failures: AtomicU32,
}

/// The sums over the window.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) successes: u32,
    pub(crate) failures: u32,
}

impl Window {
    pub(crate) fn new(length_nanos: u64, buckets: u32) -> Self {
        let buckets = buckets.max(1);
        Window {
            buckets: (0..buckets)
                .map(|_| Bucket {
                    slice: AtomicU64::new(u64::MAX),
                    successes: AtomicU32::new(0),
                    failures: AtomicU32::new(0),
                })
                .collect(),
            bucket_nanos: (length_nanos / u64::from(buckets)).max(1),
        }
    }

    /// Records one outcome at `now` (nanoseconds since the breaker's epoch).
    pub(crate) fn record(&self, now: u64, failed: bool) {
        let slice = now / self.bucket_nanos;
        let bucket = &self.buckets[(slice % self.buckets.len() as u64) as usize];
        let seen = bucket.slice.load(Relaxed);
        if seen != slice
            && bucket
                .slice
                .compare_exchange(seen, slice, Relaxed, Relaxed)
                .is_ok()
        {
            bucket.successes.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
        }
        let counter = if failed {
            &bucket.failures
        } else {
            &bucket.successes
        };
        counter.fetch_add(1, Relaxed);
    }

    /// The sums of the buckets still inside the window at `now`.
    pub(crate) fn totals(&self, now: u64) -> Totals {
        let current = now / self.bucket_nanos;
        let oldest = current.saturating_sub(self.buckets.len() as u64 - 1);
        let mut totals = Totals::default();
        for bucket in self.buckets.iter() {
            let slice = bucket.slice.load(Relaxed);
            if slice != u64::MAX && slice >= oldest && slice <= current {
                totals.successes = totals
                    .successes
                    .saturating_add(bucket.successes.load(Relaxed));
                totals.failures = totals
                    .failures
                    .saturating_add(bucket.failures.load(Relaxed));
            }
        }
        totals
    }

    /// Forgets everything (a circuit that closes starts with a clean window).
    pub(crate) fn clear(&self) {
        for bucket in self.buckets.iter() {
            bucket.slice.store(u64::MAX, Relaxed);
            bucket.successes.store(0, Relaxed);
            bucket.failures.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn old_buckets_leave_the_window() {
        let window = Window::new(10 * SECOND, 10);
        window.record(0, true);
        window.record(SECOND / 2, false);
        window.record(5 * SECOND, true);
        assert_eq!(
            window.totals(9 * SECOND),
            Totals {
                successes: 1,
                failures: 2
            }
        );
        // At 10 s the first second has left; at 16 s the sixth has too.
        assert_eq!(window.totals(10 * SECOND).failures, 1);
        assert_eq!(window.totals(16 * SECOND), Totals::default());
        // A bucket reused for a later slice starts from zero.
        window.record(20 * SECOND, false);
        assert_eq!(
            window.totals(20 * SECOND),
            Totals {
                successes: 1,
                failures: 0
            }
        );
    }
}
