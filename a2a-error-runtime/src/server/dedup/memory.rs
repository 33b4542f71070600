//! `MemoryStore`: the embedded store, a [`BoundedMap`] bounded by entries and by bytes.
//!
//! The map's update reads and changes a key in one step: the atomic claim and compare-and-set
//! the store needs. Expiry is checked against tokio's clock on every read, so the window is
//! exact (and testable in paused time).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{BoxFuture, ready};

use super::store::{DedupStore, StoreError, too_large};
use crate::bounded::{BoundedMap, Change};

/// The in-process store: at most `max_entries` records and `max_bytes` of keys and records
/// (defaults 100,000 and 64 MiB); when full, the keys first written longest ago go first.
#[derive(Clone)]
pub struct MemoryStore {
    records: Arc<BoundedMap<Bytes>>,
    /// The least a record weighs: `max_bytes / max_entries`, so both bounds hold.
    floor: u64,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("entries", &self.len())
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(100_000, 64 << 20)
    }
}

impl MemoryStore {
    /// A store of at most `max_entries` records and `max_bytes` bytes. Each record weighs its
    /// key and bytes plus 64, and never less than `max_bytes / max_entries`, so both bounds
    /// hold.
    pub fn new(max_entries: u64, max_bytes: u64) -> Self {
        MemoryStore {
            records: Arc::new(BoundedMap::new(max_entries, max_bytes)),
            floor: (max_bytes / max_entries.max(1)).max(1),
        }
    }

    /// How many records are held now.
    pub fn len(&self) -> u64 {
        self.records.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held now, as the records are weighed.
    pub fn bytes(&self) -> u64 {
        self.records.bytes()
    }

    fn weight(&self, key: &str, bytes: &Bytes) -> u64 {
        ((key.len() + bytes.len() + 64) as u64).max(self.floor)
    }

    fn put(&self, key: &str, bytes: Bytes, ttl: Duration) -> Change<Bytes> {
        Change::Put {
            weight: self.weight(key, &bytes),
            value: bytes,
            ttl,
        }
    }

    /// The record an outcome is remembered as: the outcome itself, or, when it is heavier
    /// than the map keeps a record ([`BoundedMap::max_record_bytes`]: 16 MiB for the
    /// default store), a final CONTENT_TOO_LARGE for the same request. A retry then gets that
    /// error, truthfully, instead of running the work a second time (the map would have
    /// dropped the record, and the claim with it).
    fn remembered(&self, key: &str, outcome: Bytes) -> Bytes {
        if self.weight(key, &outcome) <= self.records.max_record_bytes() {
            return outcome;
        }
        too_large(outcome, self.records.max_record_bytes())
    }

    fn claim_now(&self, key: &str, claim: &[u8], ttl: Duration) -> Option<Bytes> {
        self.records.update(key, |held| match held {
            Some(held) => (Change::Keep, Some(held.clone())),
            None => (self.put(key, Bytes::copy_from_slice(claim), ttl), None),
        })
    }

    /// Applies `change` to the record at `key` only while it still holds `claim`.
    fn if_claimed(&self, key: &str, claim: &[u8], change: impl FnOnce() -> Change<Bytes>) {
        self.records.update(key, |held| match held {
            Some(held) if held == claim => (change(), ()),
            _ => (Change::Keep, ()),
        });
    }
}

impl DedupStore for MemoryStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(ready(Ok(self.claim_now(key, claim, ttl))))
    }

    fn finish<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        outcome: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.if_claimed(key, claim, || {
            let outcome = self.remembered(key, outcome);
            self.put(key, outcome, ttl)
        });
        Box::pin(ready(Ok(())))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.if_claimed(key, claim, || Change::Remove);
        Box::pin(ready(Ok(())))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(ready(Ok(self.records.get(key))))
    }
}
