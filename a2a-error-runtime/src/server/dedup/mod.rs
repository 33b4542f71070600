//! `Dedup`: outcomes remembered by key (A2A: `message.messageId`), so a client that retries a
//! `SendMessage` after a lost reply gets the first reply instead of a second run, on this
//! replica or, with a shared store, on any other.
//!
//! Semantics:
//! - **Scope.** A key is the method, the caller's identity (read from the request headers by
//!   [`Dedup::identify`]; anonymous without it) and the id. A caller who guesses another's
//!   messageId gets nothing of theirs.
//! - **One run.** The first request claims the key and runs the work; duplicates in flight
//!   wait for its outcome, up to [`Dedup::wait_limit`], then get AGENT_UNAVAILABLE with reason
//!   `MESSAGE_IN_PROGRESS` and a retry delay (decided before any work, so a client may repeat).
//! - **Replay.** A success, or a final error, is replayed for [`Dedup::window`] counted from
//!   when it finished: the same reply, byte for byte.
//! - **Forgetting.** A retryable error, a panic and work that outruns [`Dedup::claim_ttl`]
//!   are forgotten, so the client's retry runs the work cleanly. Work keeps running when its
//!   first caller goes away, so its outcome is recorded once.
//! - **Reuse.** The same key with a different request is refused: INVALID_PARAMS with reason
//!   `MESSAGE_ID_REUSED` (the IETF Idempotency-Key draft's 422; JSON-RPC has one code for a
//!   request that does not fit, and the reason tells it apart). An id longer than
//!   [`Dedup::max_id_bytes`] (64 KiB) is INVALID_PARAMS too.
//! - **A store that fails.** By default the call fails closed with AGENT_UNAVAILABLE and a
//!   1 s retry delay (never a second run); [`StoreFailure::RunWithoutDedup`] runs the work
//!   instead. Either way a warning is logged.
//!
//! One idea a file: here the configuration; `run` (the claim protocol: key, fingerprint,
//! claim, wait, record, replay), `detach` (work that outlives its first caller), `error`
//! (what a call ends in besides success), `store` (the trait and the record format), and the
//! two stores, `memory` and `redis`.

mod detach;
mod error;
mod memory;
#[cfg(feature = "redis")]
mod redis;
mod run;
mod store;

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
/// A duration as Redis's `PX` milliseconds, for the other records kept in Redis.
#[cfg(all(feature = "redis", feature = "sdk"))]
pub use redis::millis as redis_millis;
pub use store::{DedupStore, StoreError};

pub use error::{DedupError, Refusal};
/// The fingerprint of a request's bytes, as the dedup takes it.
#[cfg(feature = "sdk")]
pub use run::hash as fingerprint;
#[cfg(feature = "sdk")]
pub use store::{OUTCOME_HEAD, outcome_head};

/// What to do when the store cannot be reached.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum StoreFailure {
    /// Refuse the call with AGENT_UNAVAILABLE and a retry delay of 1 s (the default): no
    /// work runs without the guarantee that it runs once.
    #[default]
    FailClosed,
    /// Run the work without deduplication: availability over exactly-once.
    RunWithoutDedup,
}

type Identify = crate::server::scope::ReadScope;

/// The retry delay of every refusal that asks the caller to come back.
const COME_BACK: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct Settings {
    store: Arc<dyn DedupStore>,
    window: Duration,
    claim_ttl: Duration,
    wait_limit: Duration,
    max_id_bytes: usize,
    identify: Option<Identify>,
    on_store_failure: StoreFailure,
    max_detached: usize,
    /// Work running for callers that went away, shared by clones.
    detached: Arc<detach::Detached>,
}

/// Runs work at most once per key, remembering outcomes in a [`DedupStore`] (see the module
/// documentation for the semantics). Clones share the store and the settings they were
/// cloned with; configuring a clone leaves the others as they were.
pub struct Dedup<T, E> {
    settings: Arc<Settings>,
    outcome: PhantomData<fn() -> (T, E)>,
}

impl<T, E> Clone for Dedup<T, E> {
    fn clone(&self) -> Self {
        Dedup {
            settings: Arc::clone(&self.settings),
            outcome: PhantomData,
        }
    }
}

impl<T, E> std::fmt::Debug for Dedup<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dedup")
            .field("window", &self.settings.window)
            .field("claim_ttl", &self.settings.claim_ttl)
            .field("wait_limit", &self.settings.wait_limit)
            .field("max_id_bytes", &self.settings.max_id_bytes)
            .field("on_store_failure", &self.settings.on_store_failure)
            .field("max_detached", &self.settings.max_detached)
            .finish_non_exhaustive()
    }
}

impl<T, E> Dedup<T, E> {
    /// Deduplication in this process ([`MemoryStore::default`]): replies kept 10 minutes
    /// after they finish, claims held 60 s, duplicates waiting up to 10 s, ids up to 64 KiB.
    pub fn in_memory() -> Self {
        Dedup::with_store(MemoryStore::default())
    }

    /// Deduplication in `store` (a `RedisStore` shared by replicas, a bounded
    /// [`MemoryStore`], or your own), with the defaults of [`in_memory`](Self::in_memory).
    pub fn with_store(store: impl DedupStore) -> Self {
        Dedup {
            settings: Arc::new(Settings {
                store: Arc::new(store),
                window: Duration::from_secs(600),
                claim_ttl: Duration::from_secs(60),
                wait_limit: Duration::from_secs(10),
                max_id_bytes: 64 << 10,
                identify: None,
                on_store_failure: StoreFailure::FailClosed,
                max_detached: 1024,
                detached: Arc::default(),
            }),
            outcome: PhantomData,
        }
    }

    /// The settings of this handle; configuring a clone leaves the others as they were.
    fn settings_mut(&mut self) -> &mut Settings {
        Arc::make_mut(&mut self.settings)
    }

    /// How long a finished outcome is replayed, from when it finished (default 10 minutes).
    pub fn window(mut self, window: Duration) -> Self {
        self.settings_mut().window = window;
        self
    }

    /// How long a claim holds, which is also how long the work may run (default 60 s): work
    /// still running then is given up and forgotten, and a replica that died holding a claim
    /// stops blocking its key then. Keep it above the handler's own timeout.
    pub fn claim_ttl(mut self, ttl: Duration) -> Self {
        self.settings_mut().claim_ttl = ttl;
        self
    }

    /// How long a duplicate waits for the work in flight (default 10 s) before it is told
    /// to come back (`MESSAGE_IN_PROGRESS`, with a retry delay).
    pub fn wait_limit(mut self, limit: Duration) -> Self {
        self.settings_mut().wait_limit = limit;
        self
    }

    /// The longest id accepted (default 64 KiB); a longer one is INVALID_PARAMS.
    pub fn max_id_bytes(mut self, bytes: usize) -> Self {
        self.settings_mut().max_id_bytes = bytes;
        self
    }

    /// Reads the caller's identity from the request headers (an `Authorization` value, a
    /// tenant header, a client certificate name put there by a proxy): keys are scoped by it.
    /// Only a hash of it is stored. [`scope::authorization`](crate::server::scope::authorization)
    /// reads the `Authorization` header without loss; a lossy decoding would let two
    /// credentials share replies.
    pub fn identify(
        mut self,
        identify: impl Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.settings_mut().identify = Some(Arc::new(identify));
        self
    }

    /// How much work may run at once for callers that went away (default 1,024). Work whose
    /// caller left keeps running so that its outcome is recorded once; past this bound the
    /// work left longest ago is stopped (its claim released, so a retry of it runs again) to
    /// make room: work nobody waits for never keeps out a caller who waits. This bounds the
    /// memory callers who hang up at once can take (each holds its work's future: for the SDK
    /// bridge's SendMessage about 4 KiB, so 4 MiB at the default).
    pub fn max_detached(mut self, work: usize) -> Self {
        self.settings_mut().max_detached = work;
        self
    }

    /// Whether [`identify`](Self::identify) was set.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn identifies(&self) -> bool {
        self.settings.identify.is_some()
    }

    /// As [`identify`](Self::identify), with a scope already shared.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn identify_by(mut self, scope: Identify) -> Self {
        self.settings_mut().identify = Some(scope);
        self
    }

    /// What to do when the store cannot be reached (default [`StoreFailure::FailClosed`]).
    pub fn on_store_failure(mut self, failure: StoreFailure) -> Self {
        self.settings_mut().on_store_failure = failure;
        self
    }
}

#[cfg(test)]
mod tests;
