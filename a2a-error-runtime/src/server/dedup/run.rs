//! The claim protocol: a request's key and fingerprint, the claim that makes one run, the
//! wait of duplicates, and the records read back as replays.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use bytes::Bytes;
use futures_util::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::store::{
    Claim, Record, StoreError, claim_record, hex, outcome_record, read_record, success_record,
};

use super::detach::Detachable;
use super::{COME_BACK, Dedup, DedupError, Refusal, StoreFailure};
use crate::wire::error::A2aError;
use crate::wire::object::{ErrorObject, WireProfile};
use crate::wire::remote::RemoteError;

/// What a record found at a key means for a request with a given fingerprint.
enum Found<T, E> {
    /// A finished outcome for this request (or a refusal: the id serves another request).
    Settled(Result<T, DedupError<E>>),
    /// This request is in flight elsewhere.
    Running,
    /// Bytes no store of this crate wrote.
    Unreadable,
}

/// A stable hash: XXH3's output is fixed by its specification, so every replica and every
/// build agrees on it.
#[doc(hidden)]
pub fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

impl<T, E> Dedup<T, E>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
    fn check_id(&self, id: &str) -> Result<(), DedupError<E>> {
        let limit = self.settings.max_id_bytes;
        if id.len() > limit {
            return Err(DedupError::Refused(Refusal::IdTooLong { limit }));
        }
        Ok(())
    }

    /// The store key of `id` for `method` from the caller of `headers`.
    fn key(&self, method: &str, headers: &HeaderMap, id: &str) -> String {
        let who = self
            .settings
            .identify
            .as_ref()
            .and_then(|identify| identify(headers))
            .map(|who| hex(hash(who.as_bytes())));
        // `method:caller:id`, the caller a hash of who it is (or `anonymous`).
        let mut key = String::with_capacity(method.len() + id.len() + 18);
        key.push_str(method);
        key.push(':');
        match who {
            Some(digits) => key.extend(digits.map(char::from)),
            None => key.push_str("anonymous"),
        }
        key.push(':');
        key.push_str(id);
        key
    }
}

/// The caller part of a store key as [`Dedup::key`] writes it (`method:caller:id`): what a
/// store bounds each caller by.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(super) fn caller_of(key: &str) -> &str {
    key.split(':').nth(1).unwrap_or("")
}

impl<T, E> Dedup<T, E>
where
    T: Serialize + DeserializeOwned + Send + 'static,
    E: A2aError + Send + Sync + 'static,
{
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
        // Before the request is serialized: a long id is refused at no cost.
        self.check_id(id)?;
        // A request that does not serialize cannot be told apart from a reuse of its id;
        // refusing it is safer than giving every such request one fingerprint.
        let Ok(request_bytes) = serde_json::to_vec(&request) else {
            return Err(DedupError::Refused(Refusal::Unfingerprintable));
        };
        self.run_fingerprinted(method, headers, id, hash(&request_bytes), move || {
            work(request)
        })
        .await
    }

    /// As [`run`](Self::run), with the fingerprint that makes two uses of one id the same
    /// request given by the caller (the bridge's is its message's, `sdk::fingerprint`,
    /// instead of a hash of the request's JSON), and the request already in `work` (a
    /// request held beside the work that takes it would be a second copy in this future).
    #[doc(hidden)]
    pub async fn run_fingerprinted<F, Fut>(
        &self,
        method: &str,
        headers: &HeaderMap,
        id: &str,
        fingerprint: u64,
        work: F,
    ) -> Result<T, DedupError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let settings = &self.settings;
        self.check_id(id)?;
        let key = self.key(method, headers, id);
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
        claim: Claim,
        fingerprint: u64,
        work: F,
    ) -> Result<T, DedupError<E>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let settings = Arc::clone(&self.settings);
        // Boxed where it is made: a handler's future can be several KiB (the SDK's
        // SendMessage is ~3 KiB), and inline it would be copied into each future that wraps
        // it here, at every move.
        let work = Box::pin(AssertUnwindSafe(work()).catch_unwind());
        let detached = Arc::clone(&self.settings.detached);
        let max_detached = self.settings.max_detached;
        let recorded = Detachable::new(
            async move {
                let mut claimed = Claimed {
                    settings,
                    key,
                    claim,
                    settled: false,
                };
                let settings = &claimed.settings;
                let outcome = tokio::time::timeout(settings.claim_ttl, work).await;
                let record = match &outcome {
                    Ok(Ok(Ok(reply))) => success_record(fingerprint, reply),
                    Ok(Ok(Err(error))) if !error.is_retryable() => {
                        outcome_record(fingerprint, false, |out| {
                            error.write_error_object(WireProfile::A2a, out);
                            Ok(())
                        })
                    }
                    // A retryable error, a panic, work that outran its claim: forgotten.
                    _ => None,
                };
                let (key, claim) = (&claimed.key, &claimed.claim);
                let stored = match record {
                    Some(record) => {
                        settings
                            .store
                            .finish(key, claim, record, settings.window)
                            .await
                    }
                    None => settings.store.release(key, claim).await,
                };
                if let Err(error) = stored {
                    // The claim expires on its own; until then duplicates wait or are refused.
                    tracing::warn!(key, "could not record an outcome: {error}");
                }
                claimed.settled = true;
                outcome
            },
            detached,
            max_detached,
        );
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
                // Boxed, as in `run_claimed`: inline, the work would be held in every future
                // that can reach here, taken or not.
                Box::pin(work()).await.map_err(DedupError::Failed)
            }
        }
    }
}

/// A claim held by running work. Work stopped before it settled (the oldest detached work,
/// stopped to make room; a runtime shutting down) releases its claim on the way out, so that
/// a retry runs it again at once instead of waiting out the claim.
struct Claimed {
    settings: Arc<super::Settings>,
    key: String,
    claim: Claim,
    settled: bool,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let settings = Arc::clone(&self.settings);
            let (key, claim) = (std::mem::take(&mut self.key), self.claim);
            runtime.spawn(async move {
                let _ = settings.store.release(&key, &claim).await;
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
