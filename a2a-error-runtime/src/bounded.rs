//! [`BoundedMap`]: an in-process map of records that callers can add to, bounded by entries
//! and by bytes, with a time to live per record: a container every floor that keeps what
//! callers send uses (the server's dedup, the SDK bridge's tasks, an agent's own state). The
//! dedup's `MemoryStore` and the bridge's `MemoryTaskStore` keep their records in one; so
//! can an agent's own state keyed by what callers send (tasks, attempts), which must not grow
//! without bound.
//!
//! ```
//! # use a2a_error_runtime as a2a_error;
//! use std::time::Duration;
//! use a2a_error::bounded::{BoundedMap, Change};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // At most 10,000 records and 1 MiB.
//! let attempts: BoundedMap<u32> = BoundedMap::new(10_000, 1 << 20);
//! let count = |id: &str| {
//!     attempts.update(id, |seen| {
//!         let n = seen.map_or(1, |n| n + 1);
//!         let weight = id.len() as u64 + 64;
//!         let ttl = Duration::from_secs(3600);
//!         (Change::Put { value: n, weight, ttl }, n)
//!     })
//! };
//! assert_eq!(count("m-1"), 1);
//! assert_eq!(count("m-1"), 2);
//! assert_eq!(attempts.get("m-1"), Some(2));
//! # }
//! ```
//!
//!
//! Why not moka, which these maps used before: under a steady stream of new keys (every
//! SendMessage is one) a full moka cache evicts as fast as it inserts, and its lock-free hash
//! table rehashes the whole bucket array each time a tenth of it is tombstones, hashing every
//! key again; its per-key compute goes through a second table of waiters. A claim and its
//! outcome cost 3–9 µs there, a third of the success path's CPU. Here a record lives in one of
//! a few `Mutex`-guarded shards (by its key's SipHash under a random key, so callers cannot
//! pick colliding ids; no copy of the key is kept) and in its shard's queue in the order its
//! key was first written; the oldest go first. A claim and its outcome cost about a
//! microsecond (`cargo bench -p a2a-error-benches --bench dedup`).
//!
//! Why hashbrown's `HashTable` rather than a `HashMap`: a key is hashed once per operation
//! (the same hash picks the shard and finds the record), and the queue names a record by its
//! hash and stamp, so evicting the oldest neither hashes its key again nor reads it (a key
//! written long ago is out of the cache). A `HashMap` hashed a key three times a write.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use siphasher::sip128::{Hasher128, SipHasher13};
use tokio::time::Instant;

/// How a map knows its keys: by their 128-bit SipHash-1-3 (std's `HashMap` hashes with the
/// 64-bit one) under a key of its own, drawn at random (from std's `RandomState`, itself
/// seeded by the OS), never by a copy of the key. Keeping no copy spares an allocation a
/// record (and its free, on eviction, in memory long cold) and a read of that copy on every
/// lookup that finds the record. Two keys are taken for one only when both halves of their
/// hashes agree: 2⁻¹²⁸ for a pair of keys, about 2⁻⁹⁶ over all the pairs of a map of
/// 100,000, and SipHash is a keyed function whose key and outputs never leave the process,
/// so a caller cannot choose keys that collide.
struct Keys {
    k0: u64,
    k1: u64,
}

impl Keys {
    fn new() -> Self {
        let seed = RandomState::new();
        Keys {
            k0: seed.hash_one(0u8),
            k1: seed.hash_one(1u8),
        }
    }

    /// `key`'s hash (which places it) and check (which, with the hash, names it).
    fn of(&self, key: &str) -> (u64, u64) {
        let mut hasher = SipHasher13::new_with_keys(self.k0, self.k1);
        hasher.write(key.as_bytes());
        let hash = hasher.finish128();
        (hash.h1, hash.h2)
    }
}

/// What a [`BoundedMap::update`] does to the record at its key.
pub enum Change<V> {
    /// Leave it as it is.
    Keep,
    /// Write `value`, weighing `weight` bytes, to live `ttl` from now.
    Put {
        /// The new record.
        value: V,
        /// Its bytes as counted against the bound (key included).
        weight: u64,
        /// How long it lives from now.
        ttl: Duration,
    },
    /// Remove it.
    Remove,
}

struct Record<V> {
    /// The key's hash, kept so that growing the table and evicting never hash it again.
    hash: u64,
    /// The other half of the key's 128-bit SipHash: with `hash`, what the record is found by
    /// (see [`Keys`]).
    check: u64,
    value: V,
    weight: u64,
    expires_at: Instant,
    /// Which insertion of its key this is, unique in its shard: a place in the queue names a
    /// record by hash and stamp, so a key removed and inserted again leaves its older place
    /// stale.
    stamp: u64,
}

impl<V> Record<V> {
    fn live(&self, now: Instant) -> bool {
        now < self.expires_at
    }
}

/// A record's place in its shard's queue (32 bytes).
struct Place {
    hash: u64,
    stamp: u64,
    /// When the record expired as of its place's writing: before then it certainly has not,
    /// so the front is checked without a lookup. A record written again since may live
    /// longer; it then takes a new place at the back.
    expires_at: Instant,
}

impl Place {
    /// Whether `record` is the one this place names.
    fn names<V>(&self) -> impl Fn(&Record<V>) -> bool + '_ {
        move |record| record.stamp == self.stamp
    }
}

struct Shard<V> {
    records: HashTable<Record<V>>,
    /// Keys in the order they were inserted (the front is the oldest). A key written again
    /// keeps its place, so a write costs one lookup, not one per earlier write.
    order: VecDeque<Place>,
    bytes: u64,
    next_stamp: u64,
}

fn rehash<V>(record: &Record<V>) -> u64 {
    record.hash
}

impl<V> Shard<V> {
    /// Evicts the record the oldest place names, if it still does; false when the queue is
    /// empty.
    fn pop_oldest(&mut self, let_go: Option<&LetGo<V>>) -> bool {
        let Some(place) = self.order.pop_front() else {
            return false;
        };
        // A stale place (its key removed, or removed and inserted again) names nothing.
        if let Ok(found) = self.records.find_entry(place.hash, place.names()) {
            let (record, _) = found.remove();
            self.bytes -= record.weight;
            if let Some(let_go) = let_go {
                let_go(&record.value);
            }
        }
        true
    }

    /// Keeps the bounds after a write, frees the expired records at the front of the queue,
    /// and keeps stale places (and spare capacity) from outgrowing the records.
    fn settle(
        &mut self,
        max_entries: usize,
        max_bytes: u64,
        now: Instant,
        let_go: Option<&LetGo<V>>,
    ) {
        while self.records.len() > max_entries || self.bytes > max_bytes {
            if !self.pop_oldest(let_go) {
                break;
            }
        }
        // At most two places a write: the memory of expired records comes back as new ones
        // are written, at a constant cost per write.
        for _ in 0..2 {
            match self.order.front() {
                Some(front) if front.expires_at <= now => {}
                _ => break,
            }
            let Some(place) = self.order.pop_front() else {
                break;
            };
            match self.records.find_entry(place.hash, place.names()) {
                Ok(found) if found.get().live(now) => {
                    // Written again with a longer life: its expiry goes to the back.
                    let expires_at = found.get().expires_at;
                    self.order.push_back(Place {
                        expires_at,
                        ..place
                    });
                }
                Ok(found) => {
                    let (record, _) = found.remove();
                    self.bytes -= record.weight;
                    if let Some(let_go) = let_go {
                        let_go(&record.value);
                    }
                }
                // Stale: the record it named is gone.
                Err(_) => {}
            }
        }
        if self.order.len() > 2 * self.records.len() + 64 {
            let records = &self.records;
            self.order
                .retain(|place| records.find(place.hash, place.names()).is_some());
        }
        if self.order.capacity() > 4 * self.order.len() + 64 {
            self.order.shrink_to(2 * self.order.len() + 64);
        }
        if self.records.capacity() > 4 * self.records.len() + 64 {
            self.records
                .shrink_to(2 * self.records.len() + 64, rehash::<V>);
        }
    }
}

/// A map from string keys to records, sharded by key, holding at most `max_entries` records
/// and `max_bytes` of weight; the keys first written longest ago go first (writing a key
/// again keeps its place, as dedup claims and task updates do), and a record past its
/// time to live reads as absent (its memory is freed as later records are written, or when
/// it is evicted).
///
/// Memory: the records, within the bounds given, plus 48 bytes of table entry beside each
/// value (its key's 128-bit hash, weight, expiry and stamp; the key itself is not kept) and
/// 32 bytes per key in the queue of keys; a map's spare capacity is given back once it holds
/// under a quarter of what it has room for. Each operation hashes its key once and locks one
/// shard for a lookup and, on a write, a constant amount of eviction and cleanup.
pub struct BoundedMap<V> {
    shards: Box<[Mutex<Shard<V>>]>,
    keys: Keys,
    max_entries: usize,
    max_bytes: u64,
    let_go: Option<LetGo<V>>,
}

/// What is told of each record a map lets go of by itself (see
/// [`BoundedMap::telling`]).
type LetGo<V> = Box<dyn Fn(&V) + Send + Sync>;

impl<V> std::fmt::Debug for BoundedMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedMap")
            .field("shards", &self.shards.len())
            .field("max_entries_per_shard", &self.max_entries)
            .field("max_bytes_per_shard", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

impl<V: Clone> BoundedMap<V> {
    /// A map of at most `max_entries` records and `max_bytes` of weight. Each shard holds an
    /// equal share of both bounds, so the whole map never holds more than either.
    pub fn new(max_entries: u64, max_bytes: u64) -> Self {
        // Enough shards to keep two threads off each other's lock; few enough that each
        // holds a useful share (at least 1,024 records and 16 MiB: a record can be at most a
        // shard's share, see `max_record_bytes`; 64 MiB is four shards).
        let wanted = (max_entries / 1024).min(max_bytes >> 24).clamp(1, 16);
        let count = 1usize << (63 - wanted.leading_zeros());
        let shards = (0..count)
            .map(|_| {
                Mutex::new(Shard {
                    records: HashTable::new(),
                    order: VecDeque::new(),
                    bytes: 0,
                    next_stamp: 0,
                })
            })
            .collect();
        let count = count as u64;
        BoundedMap {
            shards,
            keys: Keys::new(),
            max_entries: usize::try_from((max_entries / count).max(1)).unwrap_or(usize::MAX),
            max_bytes: (max_bytes / count).max(1),
            let_go: None,
        }
    }

    /// Tells `let_go` of each record the map lets go of by itself: evicted for its bounds,
    /// freed after it expired, or replaced or removed by an [`update`](Self::update) whose
    /// `decide` saw it absent because it had expired. Records that `decide` saw and changed
    /// are its caller's to account for. `let_go` runs under a shard's lock: it must not call
    /// the map.
    pub fn telling(mut self, let_go: impl Fn(&V) + Send + Sync + 'static) -> Self {
        self.let_go = Some(Box::new(let_go));
        self
    }

    /// The shard of a key of this hash, locked. The shard is picked by bits 48 and up: the
    /// table in it places a record by the low bits and tags it with the top seven, which must
    /// still vary among the keys of one shard.
    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard<V>> {
        let index = (hash >> 48) as usize & (self.shards.len() - 1);
        // Nothing is left half-changed by a panic under the lock: `update` calls its closure
        // before it changes anything.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The heaviest record the map keeps: its shard's share of `max_bytes` (the whole bound
    /// up to 16 MiB, at least 16 MiB above it). A [`Change::Put`] heavier than this removes
    /// the record at its key instead (it would push out every other record of its shard and
    /// then itself): a caller that must not lose a write checks its weight against this
    /// first and tells its own caller.
    pub fn max_record_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The live record at `key`, if any.
    pub fn get(&self, key: &str) -> Option<V> {
        let (hash, check) = self.keys.of(key);
        let shard = self.shard(hash);
        // The clock is read only for a record found: a lookup of a key not held (an unknown
        // task, a new id) reads none.
        shard
            .records
            .find(hash, |record| record.check == check)
            .filter(|record| record.live(Instant::now()))
            .map(|record| record.value.clone())
    }

    /// Reads the live record at `key` and changes it in one step: no other call sees or
    /// changes the key in between. Returns what `decide` returns beside its change.
    pub fn update<R>(&self, key: &str, decide: impl FnOnce(Option<&V>) -> (Change<V>, R)) -> R {
        let now = Instant::now();
        let (hash, check) = self.keys.of(key);
        let mut guard = self.shard(hash);
        let shard = &mut *guard;
        let entry = shard
            .records
            .entry(hash, |record| record.check == check, rehash::<V>);
        let (live, expired) = match &entry {
            Entry::Occupied(held) if held.get().live(now) => (Some(held.get()), false),
            Entry::Occupied(_) => (None, true),
            Entry::Vacant(_) => (None, false),
        };
        let (change, answer) = decide(live.map(|record| &record.value));
        if expired
            && !matches!(change, Change::Keep)
            && let (Some(let_go), Entry::Occupied(held)) = (&self.let_go, &entry)
        {
            let_go(&held.get().value);
        }
        let (value, weight, ttl) = match change {
            Change::Keep => return answer,
            Change::Put { value, weight, ttl } if weight <= self.max_bytes => (value, weight, ttl),
            // Kept, a record heavier than its shard's bound would push out every other record
            // of the shard and then itself.
            Change::Remove | Change::Put { .. } => {
                if let Entry::Occupied(held) = entry {
                    let (record, _) = held.remove();
                    shard.bytes -= record.weight;
                }
                return answer;
            }
        };
        // A time to live too long to be an instant is as good as forever.
        let expires_at = crate::deadline::after(now, ttl);
        match entry {
            // Written again: one lookup, and it keeps its place in the queue.
            Entry::Occupied(mut held) => {
                let held = held.get_mut();
                shard.bytes = shard.bytes - held.weight + weight;
                held.value = value;
                held.weight = weight;
                held.expires_at = expires_at;
            }
            Entry::Vacant(vacant) => {
                let stamp = shard.next_stamp;
                shard.next_stamp += 1;
                vacant.insert(Record {
                    hash,
                    check,
                    value,
                    weight,
                    expires_at,
                    stamp,
                });
                shard.bytes += weight;
                shard.order.push_back(Place {
                    hash,
                    stamp,
                    expires_at,
                });
            }
        }
        shard.settle(self.max_entries, self.max_bytes, now, self.let_go.as_ref());
        answer
    }

    /// Writes `value` at `key`, weighing `weight` bytes, to live `ttl` from now, whatever was
    /// there: an [`update`](Self::update) that always puts.
    pub fn put(&self, key: &str, value: V, weight: u64, ttl: Duration) {
        self.update(key, |_| (Change::Put { value, weight, ttl }, ()));
    }

    /// The live records, shard by shard (each shard locked while it is read).
    pub fn values(&self) -> Vec<V> {
        let now = Instant::now();
        let mut values = Vec::new();
        for shard in &self.shards {
            let shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            values.extend(
                shard
                    .records
                    .iter()
                    .filter(|record| record.live(now))
                    .map(|record| record.value.clone()),
            );
        }
        values
    }

    /// How many records are held (expired ones not yet freed included).
    pub fn len(&self) -> u64 {
        self.each_shard(|shard| shard.records.len() as u64)
    }

    /// The weight of the records held.
    pub fn bytes(&self) -> u64 {
        self.each_shard(|shard| shard.bytes)
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn each_shard(&self, count: impl Fn(&Shard<V>) -> u64) -> u64 {
        self.shards
            .iter()
            .map(|shard| count(&shard.lock().unwrap_or_else(PoisonError::into_inner)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[tokio::test(start_paused = true)]
    async fn the_oldest_written_go_first_within_both_bounds() {
        // One shard (under 1,024 entries): the order is exact.
        let map = BoundedMap::new(3, 1 << 20);
        for (i, key) in ["a", "b", "c"].into_iter().enumerate() {
            map.put(key, i as u32, 10, HOUR);
        }
        // Writing "a" again keeps its place: it is still the oldest.
        map.put("a", 9, 10, HOUR);
        assert_eq!(map.get("a"), Some(9));
        map.put("d", 3, 10, HOUR);
        assert_eq!(map.get("a"), None);
        assert_eq!(map.get("b"), Some(1));
        assert_eq!(map.get("c"), Some(2));
        // Removed and written again, a key goes to the back; its old place is stale.
        map.update("b", |_| (Change::<u32>::Remove, ()));
        map.put("b", 7, 10, HOUR);
        map.put("e", 4, 10, HOUR);
        assert_eq!(map.get("c"), None);
        assert_eq!(map.get("b"), Some(7));
        assert_eq!(map.get("d"), Some(3));
        assert_eq!(map.len(), 3);
        assert_eq!(map.bytes(), 30);

        let by_bytes = BoundedMap::new(1_000, 100);
        for i in 0..10 {
            by_bytes.put(&format!("k{i}"), i, 30, HOUR);
        }
        assert_eq!(by_bytes.len(), 3);
        assert_eq!(by_bytes.bytes(), 90);
        assert_eq!(by_bytes.get("k9"), Some(9));
        assert_eq!(by_bytes.get("k6"), None);
        // A record heavier than the bound is not kept, and pushes nothing out; writing one
        // at a held key removes what was there.
        by_bytes.put("huge", 1, 101, HOUR);
        by_bytes.put("k9", 1, 101, HOUR);
        assert_eq!(by_bytes.get("huge"), None);
        assert_eq!(by_bytes.get("k9"), None);
        assert_eq!(by_bytes.get("k8"), Some(8));
        assert_eq!(by_bytes.bytes(), 60);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_records_read_as_absent_and_are_freed_by_later_writes() {
        let map = BoundedMap::new(1_000, 1 << 20);
        map.put("short", 1, 10, Duration::from_secs(1));
        map.put("long", 2, 10, HOUR);
        let seen = map.update("short", |held| (Change::Keep, held.copied()));
        assert_eq!(seen, Some(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(map.get("short"), None);
        assert_eq!(
            map.update("short", |held| (Change::Keep, held.copied())),
            None
        );
        assert_eq!(map.get("long"), Some(2));
        map.put("new", 3, 10, HOUR);
        assert_eq!(map.len(), 2, "the expired record at the front was freed");
        assert_eq!(map.bytes(), 20);

        // Written again with a longer life (a claim, then its outcome), a record outlives
        // its first expiry: its place moves to the back instead of freeing it.
        let map = BoundedMap::new(1_000, 1 << 20);
        map.put("claimed", 1, 10, Duration::from_secs(1));
        map.put("claimed", 2, 10, HOUR);
        tokio::time::advance(Duration::from_secs(2)).await;
        map.put("other", 3, 10, HOUR);
        map.put("more", 4, 10, HOUR);
        assert_eq!(map.get("claimed"), Some(2));
        assert_eq!(map.len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn update_removes_keeps_or_replaces_and_stale_places_do_not_pile_up() {
        let map = BoundedMap::new(10, 1 << 20);
        map.put("k", 1, 10, HOUR);
        map.update("k", |_| (Change::<u32>::Remove, ()));
        assert_eq!(map.get("k"), None);
        assert_eq!(map.bytes(), 0);
        // One key removed and written again a million times: each time its old place goes
        // stale, and the queue stays near the record count.
        for i in 0..1_000_000 {
            map.update("k", |_| (Change::<u32>::Remove, ()));
            map.put("k", i, 10, HOUR);
        }
        let shard = map.shards[0].lock().unwrap();
        assert!(shard.order.len() <= 2 * shard.records.len() + 65);
        assert_eq!(shard.records.len(), 1);
        drop(shard);
        assert_eq!(map.get("k"), Some(999_999));
        // Values sees every live record.
        map.put("j", 7, 10, HOUR);
        let mut values = map.values();
        values.sort_unstable();
        assert_eq!(values, [7, 999_999]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_map_tells_of_what_it_lets_go_of_by_itself() {
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = std::sync::Arc::clone(&told);
        // One shard of 4 records.
        let map: BoundedMap<u32> =
            BoundedMap::new(4, 1 << 20).telling(move |value| seen.lock().unwrap().push(*value));
        let hour = Duration::from_secs(3600);
        for n in 0..4 {
            map.put(&format!("k{n}"), n, 10, hour);
        }
        // Changed by the caller: not told.
        map.put("k0", 10, 10, hour);
        map.update("k1", |_| (Change::Remove, ()));
        assert!(told.lock().unwrap().is_empty());
        // Evicted for the bound: told.
        map.put("k4", 4, 10, hour);
        map.put("k5", 5, 10, hour);
        assert_eq!(*told.lock().unwrap(), [10]);
        // Expired, then written again: the caller saw nothing there, so it is told.
        map.put("short", 7, 10, Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        map.update("short", |held| {
            assert!(held.is_none());
            (
                Change::Put {
                    value: 8,
                    weight: 10,
                    ttl: hour,
                },
                (),
            )
        });
        assert!(
            told.lock().unwrap().contains(&7),
            "{:?}",
            told.lock().unwrap()
        );
    }

    #[test]
    fn each_map_hashes_keys_under_a_random_key_of_its_own() {
        let (one, two) = (Keys::new(), Keys::new());
        assert_ne!(one.of("m-1"), two.of("m-1"));
        assert_eq!(one.of("m-1"), one.of("m-1"));
        assert_ne!(one.of("m-1"), one.of("m-2"));
        // A key's hash covers every byte: no two prefixes of a key are one key.
        assert_ne!(one.of("ab"), one.of("ab\0"));
    }

    #[test]
    fn the_overhead_per_record_is_what_the_docs_say() {
        // BoundedMap's docs: 48 bytes of table entry beside the value, 32 in the queue.
        assert_eq!(std::mem::size_of::<Record<()>>(), 48);
        assert_eq!(std::mem::size_of::<Place>(), 32);
    }

    #[tokio::test(start_paused = true)]
    async fn a_large_map_is_sharded_and_never_exceeds_its_bounds() {
        let map = BoundedMap::new(100_000, 64 << 20);
        // 16 MiB a shard at least, so that a record of up to 16 MiB is kept.
        assert_eq!(map.shards.len(), 4);
        assert_eq!(map.max_record_bytes(), 16 << 20);
        assert_eq!(BoundedMap::<u32>::new(1 << 20, 1 << 30).shards.len(), 16);
        for i in 0..300_000u32 {
            map.put(&format!("SendMessage:anonymous:m-{i}"), i, 100, HOUR);
        }
        assert!(map.len() <= 100_000, "{}", map.len());
        assert!(map.len() >= 90_000, "{}", map.len());
        assert_eq!(map.get("SendMessage:anonymous:m-299999"), Some(299_999));
        assert_eq!(map.get("SendMessage:anonymous:m-0"), None);
    }
}
