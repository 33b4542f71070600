//! The clock and the random source behind retry delays, injectable so that tests run in paused
//! tokio time and see exact delays.

use std::fmt;
use std::sync::Mutex;
use std::time::SystemTime;

use tokio::time::Instant;

/// Where retries read the time. Sleeping and timeouts use tokio's timer, so tests pause tokio
/// time (`tokio::time::pause`) for the monotonic side and inject the wall clock here, which an
/// HTTP-date `Retry-After` is read against.
pub trait Clock: Send + Sync + 'static {
    /// The monotonic now (tokio's, which paused time controls).
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// The wall-clock now.
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The system clock.
#[derive(Copy, Clone, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {}

/// A wall clock that stands still at a given time (for tests of HTTP-date `Retry-After`).
#[derive(Copy, Clone, Debug)]
pub struct FixedWallClock(pub SystemTime);

impl Clock for FixedWallClock {
    fn wall(&self) -> SystemTime {
        self.0
    }
}

/// Where jitter draws its randomness.
pub trait Random: Send + Sync + 'static {
    /// A number uniform in [0, 1).
    fn next_f64(&self) -> f64;
}

/// A fast, thread-local, randomly seeded source (the default).
#[derive(Copy, Clone, Debug, Default)]
pub struct ThreadRandom;

impl Random for ThreadRandom {
    fn next_f64(&self) -> f64 {
        fastrand::f64()
    }
}

/// A seeded source: the same seed gives the same delays.
pub struct SeededRandom(Mutex<fastrand::Rng>);

impl SeededRandom {
    /// A source seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SeededRandom(Mutex::new(fastrand::Rng::with_seed(seed)))
    }
}

impl fmt::Debug for SeededRandom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeededRandom")
    }
}

impl Random for SeededRandom {
    fn next_f64(&self) -> f64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).f64()
    }
}
