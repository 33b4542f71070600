//! Retries: the [`Retry`] service and its [`RetryLayer`], driven by a [`RetryPolicy`].

mod backoff;
mod budget;
mod future;
mod policy;
mod retrying;
mod service;

pub use backoff::{Backoff, Jitter};
pub use budget::RetryBudget;
pub use future::RetryFuture;
pub use policy::{RetryPolicy, RetrySafety};
pub use service::{Retry, RetryLayer};
