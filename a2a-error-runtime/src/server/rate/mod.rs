//! Per-caller rate limits (feature `sdk`: the SDK bridge applies them): each caller (by its scope, as the dedup and the bridge's tasks
//! know it) gets `requests` a second with a burst of `burst`, in this process
//! ([`RateLimiter::memory`]) or across every replica sharing a Redis
//! ([`RateLimiter::redis`]). A request over its caller's rate is refused with RATE_LIMITED and
//! the exact time until the caller's next request is allowed (RetryInfo; `Retry-After` over
//! HTTP+JSON, in whole seconds rounded up), which this crate's clients honour.
//!
//! The arithmetic is GCRA (the generic cell rate algorithm, a token bucket kept as one
//! number): a caller's record is the time its next request is due (`tat`); a request at `now`
//! is allowed when `tat - now` is at most `(burst - 1)` intervals, and then moves `tat` one
//! interval on; else it is refused for `tat - (burst - 1) intervals - now`. One number a
//! caller, kept only as long as it matters (until `tat`).

mod memory;
#[cfg(feature = "redis")]
mod redis;

use std::sync::Arc;
use std::time::Duration;

use crate::wire::standard::StandardError;

/// How fast each caller may call: `requests` a second (see [`per_second`](Self::per_second)),
/// with bursts of up to `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// The time one request takes from the caller's allowance.
    interval: Duration,
    burst: u32,
}

impl RateLimit {
    /// `requests` a second (at least 1), with a burst of as many.
    pub fn per_second(requests: u32) -> Self {
        let requests = requests.max(1);
        RateLimit {
            interval: Duration::from_secs(1) / requests,
            burst: requests,
        }
    }

    /// Up to `requests` at once after a quiet while (at least 1).
    pub fn burst(mut self, requests: u32) -> Self {
        self.burst = requests.max(1);
        self
    }

    /// How far ahead of now a caller's next due time may be and still be allowed.
    fn tolerance(&self) -> Duration {
        self.interval.saturating_mul(self.burst - 1)
    }
}

/// Per-caller rate limits, in process or shared on Redis (see the module `server::rate`). Cheap to
/// clone: clones share their records.
#[derive(Clone)]
pub struct RateLimiter {
    limit: RateLimit,
    store: Store,
}

#[derive(Clone)]
enum Store {
    Memory(Arc<memory::Records>),
    #[cfg(feature = "redis")]
    Redis(Arc<redis::Records>),
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let store = match &self.store {
            Store::Memory(_) => "memory",
            #[cfg(feature = "redis")]
            Store::Redis(_) => "redis",
        };
        f.debug_struct("RateLimiter")
            .field("limit", &self.limit)
            .field("store", &store)
            .finish()
    }
}

impl RateLimiter {
    /// Limits kept in this process: at most 100,000 callers' records (about 190 bytes each
    /// in resident memory, so at most about 19 MiB), a caller's kept only until its next
    /// request is due; past that bound the records due soonest go first (their callers get a
    /// fresh burst, never less).
    pub fn memory(limit: RateLimit) -> Self {
        RateLimiter {
            limit,
            store: Store::Memory(Arc::new(memory::Records::new())),
        }
    }

    /// Limits shared by every replica using `store`'s Redis (its connection and command
    /// timeout; keys `a2a-rate:{caller}` unless [`prefix`](Self::prefix) says otherwise, one
    /// short string a caller, expiring when its next request is due). Time is Redis's, so
    /// replicas' clocks do not matter. When Redis does not answer, requests are refused with
    /// AGENT_UNAVAILABLE (fail closed: the limit is never silently off) and a retry delay of a
    /// second.
    #[cfg(feature = "redis")]
    pub fn redis(store: &crate::server::dedup::RedisStore, limit: RateLimit) -> Self {
        RateLimiter {
            limit,
            store: Store::Redis(Arc::new(redis::Records::new(store.clone(), "a2a-rate:"))),
        }
    }

    /// Prefixes the Redis records' keys with `prefix` (default `a2a-rate:`): agents sharing
    /// one Redis keep their callers' allowances apart, as `RedisStore::prefix` keeps their
    /// dedup records apart; the replicas of one agent share one prefix. Limits kept in memory
    /// have no keys: there it changes nothing.
    pub fn prefix(self, prefix: impl Into<String>) -> Self {
        match self.store {
            #[cfg(feature = "redis")]
            Store::Redis(records) => RateLimiter {
                limit: self.limit,
                store: Store::Redis(Arc::new(records.with_prefix(prefix.into()))),
            },
            Store::Memory(_) => {
                let _ = prefix;
                self
            }
        }
    }

    /// Takes one request from `caller`'s allowance (`caller`: a bounded key, the scope's
    /// hash), or the error its caller gets.
    #[doc(hidden)]
    pub async fn admit(&self, caller: &str) -> Result<(), StandardError> {
        let wait = match &self.store {
            Store::Memory(records) => Ok(records.take(caller, &self.limit)),
            #[cfg(feature = "redis")]
            Store::Redis(records) => records.take(caller, &self.limit).await,
        };
        match wait {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => {
                crate::observe::rate_limited();
                Err(StandardError::RateLimited {
                    retry_after: Some(wait),
                })
            }
            Err(()) => Err(StandardError::AgentUnavailable {
                retry_after: Some(Duration::from_secs(1)),
            }),
        }
    }
}
