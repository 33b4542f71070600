//! The clock and the random source behind retry delays, injectable so that tests run in paused
//! tokio time and see exact delays.

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
