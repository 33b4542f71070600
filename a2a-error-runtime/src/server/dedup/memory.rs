//! `MemoryStore`: the embedded store, a moka cache bounded by entries and by bytes.
//!
//! Why moka: its per-key `and_compute_with` is the atomic claim and compare-and-set the store
//! needs, eviction and expiry are O(1) amortized with no scan under a global lock, and its
//! weigher bounds bytes. Expiry is also checked against tokio's clock on every read, so the
//! window is exact (and testable in paused time); moka's own timer frees the memory.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{BoxFuture, ready};
use moka::ops::compute::Op;
use moka::sync::Cache;
use tokio::time::Instant;

use super::store::{DedupStore, StoreError};

#[derive(Clone)]
struct Slot {
    bytes: Bytes,
    expires_at: Instant,
    ttl: Duration,
}

impl Slot {
    fn live(&self) -> bool {
        Instant::now() < self.expires_at
    }
}

/// Expires each record after its own time to live, counted from when it was written.
struct PerRecord;

impl moka::Expiry<Arc<str>, Slot> for PerRecord {
    fn expire_after_create(
        &self,
        _: &Arc<str>,
        slot: &Slot,
        _: std::time::Instant,
    ) -> Option<Duration> {
        Some(slot.ttl)
    }

    fn expire_after_update(
        &self,
        _: &Arc<str>,
        slot: &Slot,
        _: std::time::Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(slot.ttl)
    }
}

/// The in-process store: at most `max_entries` records and `max_bytes` of keys and records
/// (defaults 100,000 and 64 MiB); when full, the least recently used go first.
#[derive(Clone)]
pub struct MemoryStore {
    cache: Cache<Arc<str>, Slot>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("entries", &self.cache.entry_count())
            .field("bytes", &self.cache.weighted_size())
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
    /// key and bytes, and never less than `max_bytes / max_entries`, so both bounds hold.
    pub fn new(max_entries: u64, max_bytes: u64) -> Self {
        let floor = (max_bytes / max_entries.max(1)).max(1);
        let cache = Cache::builder()
            .max_capacity(max_bytes)
            .weigher(move |key: &Arc<str>, slot: &Slot| {
                let weight = (key.len() + slot.bytes.len() + 64) as u64;
                u32::try_from(weight.max(floor)).unwrap_or(u32::MAX)
            })
            .expire_after(PerRecord)
            .build();
        MemoryStore { cache }
    }

    /// How many records are held now (after pending evictions).
    pub fn len(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.entry_count()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held now, as the weigher counts them.
    pub fn bytes(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size()
    }

    fn slot(bytes: Bytes, ttl: Duration) -> Slot {
        let now = Instant::now();
        Slot {
            bytes,
            // A time to live too long to be an instant is as good as forever.
            expires_at: now
                .checked_add(ttl)
                .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30)),
            ttl,
        }
    }

    fn claim_now(&self, key: &str, claim: &[u8], ttl: Duration) -> Option<Bytes> {
        let mut held = None;
        self.cache
            .entry(Arc::from(key))
            .and_compute_with(|existing| match existing {
                Some(entry) if entry.value().live() => {
                    held = Some(entry.value().bytes.clone());
                    Op::Nop
                }
                _ => Op::Put(Self::slot(Bytes::copy_from_slice(claim), ttl)),
            });
        held
    }

    /// Applies `change` to the record at `key` only while it still holds `claim`.
    fn if_claimed(&self, key: &str, claim: &[u8], change: impl FnOnce() -> Op<Slot>) {
        self.cache
            .entry(Arc::from(key))
            .and_compute_with(|existing| match existing {
                Some(entry) if entry.value().bytes == claim => change(),
                _ => Op::Nop,
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
        self.if_claimed(key, claim, || Op::Put(Self::slot(outcome, ttl)));
        Box::pin(ready(Ok(())))
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.if_claimed(key, claim, || Op::Remove);
        Box::pin(ready(Ok(())))
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        let held = self
            .cache
            .get(key)
            .filter(Slot::live)
            .map(|slot| slot.bytes);
        Box::pin(ready(Ok(held)))
    }
}
