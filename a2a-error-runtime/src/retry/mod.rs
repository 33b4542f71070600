//! Retries: the [`Retry`] decorator over any transport (and its [`RetryLayer`]), driven by a
//! [`RetryPolicy`]: attempts, exponential backoff with jitter, the server's requested delay,
//! a retry budget shared across calls, per-method safety, attempt and total timeouts.

mod backoff;
mod clock;
mod future;
mod policy;
mod service;

pub use backoff::{Backoff, Jitter};
pub use clock::{Clock, FixedWallClock, Random, SeededRandom, SystemClock, ThreadRandom};
pub use future::ResponseFuture;
pub use policy::{RetryPolicy, RetrySafety};
pub use service::{Retry, RetryLayer};
/// Retry budgets from tower: every call deposits, every retry withdraws.
pub use tower::retry::budget::{Budget, TpsBudget};
