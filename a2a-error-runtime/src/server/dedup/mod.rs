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

mod memory;
#[cfg(feature = "redis")]
mod redis;
mod store;

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::http::HeaderMap;
use bytes::Bytes;
use futures_util::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use store::{DedupStore, StoreError};
use store::{Record, claim_record, outcome_record, read_record};

use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, RetryHint};
use crate::wire::object::{ErrorObject, WireProfile};
use crate::wire::remote::RemoteError;

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

type Identify = Arc<dyn Fn(&HeaderMap) -> Option<String> + Send + Sync>;

/// The retry delay of every refusal that asks the caller to come back.
const COME_BACK: Duration = Duration::from_secs(1);

/// What a record found at a key means for a request with a given fingerprint.
enum Found<T, E> {
    /// A finished outcome for this request (or a refusal: the id serves another request).
    Settled(Result<T, DedupError<E>>),
    /// This request is in flight elsewhere.
    Running,
    /// Bytes no store of this crate wrote.
    Unreadable,
}

struct Settings {
    store: Arc<dyn DedupStore>,
    window: Duration,
    claim_ttl: Duration,
    wait_limit: Duration,
    max_id_bytes: usize,
    identify: Option<Identify>,
    on_store_failure: StoreFailure,
}

/// Runs work at most once per key, remembering outcomes in a [`DedupStore`] (see the module
/// documentation for the semantics). Clones share the settings and the store.
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
            }),
            outcome: PhantomData,
        }
    }

    fn settings_mut(&mut self) -> &mut Settings {
        Arc::get_mut(&mut self.settings).expect("Dedup is configured before it is cloned")
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
    /// Only a hash of it is stored.
    pub fn identify(
        mut self,
        identify: impl Fn(&HeaderMap) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.settings_mut().identify = Some(Arc::new(identify));
        self
    }

    /// What to do when the store cannot be reached (default [`StoreFailure::FailClosed`]).
    pub fn on_store_failure(mut self, failure: StoreFailure) -> Self {
        self.settings_mut().on_store_failure = failure;
        self
    }
}

/// A stable hash (the same in every replica running the same build).
fn hash(bytes: &[u8]) -> u64 {
    #[allow(deprecated)]
    let mut hasher = std::hash::SipHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

impl<T, E> Dedup<T, E>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    /// The store key of `id` for `method` from the caller of `headers`.
    fn key(&self, method: &str, headers: &HeaderMap, id: &str) -> String {
        let caller = self
            .settings
            .identify
            .as_ref()
            .and_then(|identify| identify(headers))
            .map_or_else(
                || "anonymous".to_owned(),
                |who| format!("{:016x}", hash(who.as_bytes())),
            );
        format!("{method}:{caller}:{id}")
    }

    /// Runs `work(request)` for `method` at most once per (caller, `id`), and returns its
    /// outcome or the remembered one. `request` is what makes two uses of one id the same
    /// request (the message; its JSON is hashed) and is handed to the work when it runs;
    /// `headers` are the request's, for [`identify`](Self::identify).
    pub async fn run<R, F, Fut>(
        &self,
        method: &str,
        headers: &HeaderMap,
        id: &str,
        request: R,
        work: F,
    ) -> Result<T, DedupError<E>>
    where
        R: Serialize,
        F: FnOnce(R) -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let settings = &self.settings;
        if id.len() > settings.max_id_bytes {
            return Err(DedupError::Refused(Refusal::IdTooLong {
                limit: settings.max_id_bytes,
            }));
        }
        let key = self.key(method, headers, id);
        let fingerprint = hash(&serde_json::to_vec(&request).unwrap_or_default());
        let work = move || work(request);
        let claim = claim_record(fingerprint, fastrand::u64(..));
        let waited_since = tokio::time::Instant::now();
        loop {
            let held = match settings.store.claim(&key, &claim, settings.claim_ttl).await {
                Ok(held) => held,
                Err(error) => return self.store_failed(error, work).await,
            };
            let Some(held) = held else {
                return self.run_claimed(key, claim, fingerprint, work).await;
            };
            match found(&held, fingerprint) {
                Found::Settled(outcome) => return outcome,
                Found::Running => {}
                Found::Unreadable => {
                    return self
                        .store_failed(StoreError("unreadable record".into()), work)
                        .await;
                }
            }
            // In flight elsewhere: wait for it to finish or to be forgotten.
            match self.wait(&key, fingerprint, waited_since).await {
                Ok(Some(outcome)) => return outcome,
                // Forgotten (a retryable failure, a panic, a claim that expired): claim again.
                Ok(None) => continue,
                Err(error) => return self.store_failed(error, work).await,
            }
        }
    }

    /// Waits for the record at `key` to stop being a claim: `Some(outcome)` when it settled,
    /// `None` when it was forgotten; past the wait limit, the in-progress refusal.
    async fn wait(
        &self,
        key: &str,
        fingerprint: u64,
        since: tokio::time::Instant,
    ) -> Result<Option<Result<T, DedupError<E>>>, StoreError> {
        let limit = self.settings.wait_limit;
        let mut pause = Duration::from_millis(5);
        loop {
            if since.elapsed() >= limit {
                return Ok(Some(Err(DedupError::Refused(Refusal::InProgress {
                    retry_after: COME_BACK,
                }))));
            }
            tokio::time::sleep(pause.min(limit.saturating_sub(since.elapsed()))).await;
            pause = (pause * 2).min(Duration::from_millis(100));
            match self.settings.store.get(key).await? {
                None => return Ok(None),
                Some(held) => match found(&held, fingerprint) {
                    Found::Settled(outcome) => return Ok(Some(outcome)),
                    // Still running; bytes that do not read keep the caller waiting until
                    // the limit, as before.
                    Found::Running | Found::Unreadable => {}
                },
            }
        }
    }

    /// Runs the work under our claim and records its outcome. The work is polled right here
    /// (no task, no thread hop on the common path); if this caller goes away first, the rest
    /// of it moves to a task of its own, so it still finishes and its outcome is recorded.
    async fn run_claimed<F, Fut>(
        &self,
        key: String,
        claim: Vec<u8>,
        fingerprint: u64,
        work: F,
    ) -> Result<T, DedupError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let settings = Arc::clone(&self.settings);
        let work = AssertUnwindSafe(work()).catch_unwind();
        let recorded = Detachable::new(async move {
            let outcome = tokio::time::timeout(settings.claim_ttl, work).await;
            let record = match &outcome {
                Ok(Ok(Ok(reply))) => serde_json::to_vec(reply)
                    .ok()
                    .map(|json| outcome_record(fingerprint, true, &json)),
                Ok(Ok(Err(error))) if !error.is_retryable() => {
                    let mut json = Vec::with_capacity(256);
                    error.write_error_object(WireProfile::A2a, &mut json);
                    Some(outcome_record(fingerprint, false, &json))
                }
                // A retryable error, a panic, work that outran its claim: forgotten.
                _ => None,
            };
            let stored = match record {
                Some(record) => {
                    settings
                        .store
                        .finish(&key, &claim, record, settings.window)
                        .await
                }
                None => settings.store.release(&key, &claim).await,
            };
            if let Err(error) = stored {
                // The claim expires on its own; until then duplicates wait or are refused.
                tracing::warn!(key, "could not record an outcome: {error}");
            }
            outcome
        });
        match recorded.await {
            Ok(Ok(outcome)) => outcome.map_err(DedupError::Failed),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(DedupError::Refused(Refusal::Abandoned)),
        }
    }

    async fn store_failed<F, Fut>(&self, error: StoreError, work: F) -> Result<T, DedupError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        match self.settings.on_store_failure {
            StoreFailure::FailClosed => {
                tracing::warn!("dedup store unavailable, refusing the call: {error}");
                Err(DedupError::Refused(Refusal::StoreUnavailable {
                    retry_after: COME_BACK,
                }))
            }
            StoreFailure::RunWithoutDedup => {
                tracing::warn!("dedup store unavailable, running without dedup: {error}");
                work().await.map_err(DedupError::Failed)
            }
        }
    }
}

/// A future polled in place that, dropped before it is done, finishes in a task of its own.
struct Detachable<F: Future<Output: Send> + Send + 'static> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future<Output: Send> + Send + 'static> Detachable<F> {
    fn new(inner: F) -> Self {
        Detachable {
            inner: Some(Box::pin(inner)),
        }
    }
}

impl<F: Future<Output: Send> + Send + 'static> Future for Detachable<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Unpin: the work itself is boxed.
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Pending;
        };
        let output = std::task::ready!(inner.as_mut().poll(cx));
        this.inner = None;
        Poll::Ready(output)
    }
}

impl<F: Future<Output: Send> + Send + 'static> Drop for Detachable<F> {
    fn drop(&mut self) {
        if let Some(rest) = self.inner.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                rest.await;
            });
        }
    }
}

/// Reads the record `held` for a request with `fingerprint`.
fn found<T: DeserializeOwned, E>(held: &Bytes, fingerprint: u64) -> Found<T, E> {
    match read_record(held) {
        Some(Record::Running { fingerprint: other })
        | Some(Record::Succeeded {
            fingerprint: other, ..
        })
        | Some(Record::Failed {
            fingerprint: other, ..
        }) if other != fingerprint => Found::Settled(Err(DedupError::Refused(Refusal::IdReused))),
        Some(Record::Succeeded { reply, .. }) => Found::Settled(replay_success(&reply)),
        Some(Record::Failed { error, .. }) => Found::Settled(Err(replay_error(&error))),
        Some(Record::Running { .. }) => Found::Running,
        None => Found::Unreadable,
    }
}

fn replay_success<T: DeserializeOwned, E>(reply: &Bytes) -> Result<T, DedupError<E>> {
    serde_json::from_slice(reply).map_err(|error| {
        tracing::warn!("a remembered reply does not read back: {error}");
        DedupError::Refused(Refusal::StoreUnavailable {
            retry_after: COME_BACK,
        })
    })
}

fn replay_error<E>(error: &Bytes) -> DedupError<E> {
    match serde_json::from_slice::<ErrorObject>(error) {
        Ok(object) => DedupError::Replayed(Box::new(RemoteError::from_object(object))),
        Err(_) => DedupError::Refused(Refusal::StoreUnavailable {
            retry_after: COME_BACK,
        }),
    }
}

/// Why [`Dedup`] answered without running the work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, a2a_error_derive::A2aError)]
#[a2a(crate = "crate", domain = "a2a-error", into_response = false)]
#[non_exhaustive]
pub enum Refusal {
    /// The same request is in flight and did not finish within the wait limit.
    #[error("the message is still in progress")]
    #[a2a(
        code = AGENT_UNAVAILABLE,
        reason = "MESSAGE_IN_PROGRESS",
        message = "The message is still being processed; retry later"
    )]
    InProgress {
        /// When to come back.
        #[a2a(retry_after)]
        retry_after: Duration,
    },
    /// The id was used before, by this caller, for a different request.
    #[error("messageId reused for a different message")]
    #[a2a(
        code = INVALID_PARAMS,
        reason = "MESSAGE_ID_REUSED",
        message = "This messageId was already used for a different message"
    )]
    IdReused,
    /// The id is longer than the limit.
    #[error("messageId longer than {limit} bytes")]
    #[a2a(code = INVALID_PARAMS, message = "messageId is longer than {limit} bytes")]
    IdTooLong {
        /// The limit in bytes.
        #[a2a(data)]
        limit: usize,
    },
    /// The store could not be reached, and the call fails closed.
    #[error("the dedup store is unavailable")]
    #[a2a(code = AGENT_UNAVAILABLE)]
    StoreUnavailable {
        /// When to come back.
        #[a2a(retry_after)]
        retry_after: Duration,
    },
    /// The work outran its claim and was given up (or the runtime shut down).
    #[error("the work outran its claim")]
    #[a2a(code = DEADLINE_EXCEEDED)]
    Abandoned,
}

/// What a deduplicated call ends in besides success: the work's own error, a remembered one
/// replayed as it was first sent, or a refusal. An `A2aError`, so handlers return it as is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DedupError<E> {
    /// The work ran and failed.
    #[error(transparent)]
    Failed(E),
    /// A final error remembered from the first run, replayed byte for byte.
    #[error(transparent)]
    Replayed(Box<RemoteError>),
    /// Answered without running the work.
    #[error(transparent)]
    Refused(Refusal),
}

impl<E: A2aError + 'static> DedupError<E> {
    fn inner(&self) -> &dyn A2aError {
        match self {
            DedupError::Failed(error) => error,
            DedupError::Replayed(error) => &**error,
            DedupError::Refused(refusal) => refusal,
        }
    }
}

impl<E: A2aError + 'static> A2aError for DedupError<E> {
    fn code(&self) -> i32 {
        self.inner().code()
    }
    fn reason(&self) -> &str {
        self.inner().reason()
    }
    fn domain(&self) -> &str {
        self.inner().domain()
    }
    fn public_message(&self) -> Cow<'_, str> {
        self.inner().public_message()
    }
    fn retry_hint(&self) -> RetryHint {
        self.inner().retry_hint()
    }
    fn category(&self) -> Category {
        self.inner().category()
    }
    fn http_status(&self) -> u16 {
        self.inner().http_status()
    }
    fn grpc_status(&self) -> &'static str {
        self.inner().grpc_status()
    }
    fn write_data(&self, sink: &mut DataSink<'_>) {
        self.inner().write_data(sink)
    }
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        self.inner().write_extra_details(out)
    }
    fn has_placeholder_domain(&self) -> bool {
        self.inner().has_placeholder_domain()
    }
    fn write_error_object(&self, profile: WireProfile, out: &mut Vec<u8>) {
        self.inner().write_error_object(profile, out)
    }
}

impl<E: A2aError + 'static> axum::response::IntoResponse for DedupError<E> {
    fn into_response(self) -> axum::response::Response {
        super::rest::error_response(&self)
    }
}

#[cfg(test)]
mod tests;
