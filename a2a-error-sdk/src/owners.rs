//! [`Owners`]: which caller's scope each task the bridge has answered belongs to.
//!
//! The SDK's `DefaultRequestHandler` serves any task to anyone who names it: with another
//! `Authorization`, a caller read (GetTask), listed (ListTasks), subscribed to and canceled
//! another caller's task. The bridge records the scope of the caller a task was created for
//! when it first hands out the task's id, and serves a task only to that scope; to any other
//! it does not exist (TASK_NOT_FOUND, so that its existence is not told either).
//!
//! Bounded in count: at most `max` tasks are remembered (the oldest recorded go first). Each
//! is the table's entry (80 bytes: the id inline when it is at most 38 bytes, as the SDK's
//! 36-byte UUIDs are, else in a block of its own; its hash and stamp; the scope's 128-bit
//! hash, 16-byte aligned; ~92 bytes with the table's spare room), a place in its scope's
//! queue and one in the eviction queue (16 bytes each, each queue up to twice its live
//! places and its capacity rounded up to a power of two). Measured for the default of
//! 100,000 (a test, in a process of its own, the ids recorded three times over): 28.2 MB
//! however long it runs (28.0 MB with each id in an `Arc` of its own, as before: the memory
//! is the same, the allocation and the cold free a task are gone); stated bound 32 MB. A task
//! whose record was dropped is served to no one (it fails closed), as the task store's own
//! bound drops tasks.
//!
//! One hash table, each id hashed once per call; a scope's tasks are a queue in the order
//! they were recorded, so the oldest task, the one evicted, is at the front of its scope's
//! queue as of the whole index's: a record and an eviction touch one table entry each, and
//! the queues only at their ends. (A scope's ids were kept in a `BTreeSet` for ListTasks' id
//! order, whose inserts and removals compare random ids along a path of cold nodes: about
//! 2 % of the bridge's success path, in branches no predictor learns and in cache misses.)
//! ListTasks sorts the caller's ids when it asks, beside the read of each of those tasks it
//! makes anyway.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

pub(crate) use super::scope_key::{ScopeKey, key_of};

/// Where the bridge keeps which task is whose: in this process ([`Owners`]), or with the
/// tasks in the shared store (each written with its owner when it is created).
#[derive(Clone)]
pub(crate) enum Ownership {
    /// This process's index.
    Local(Arc<Owners>),
    /// The shared store's.
    Shared(Arc<dyn super::owned::OwnedTaskStore>),
}

impl Ownership {
    /// Whether `task` is `scope`'s (an error when the shared store does not answer).
    pub(crate) async fn owns(&self, scope: ScopeKey, task: &str) -> Result<bool, a2a::A2AError> {
        match self {
            Ownership::Local(owners) => Ok(owners.owns(scope, task)),
            Ownership::Shared(store) => store.owns(super::owned::Owner(scope), task).await,
        }
    }

    /// Records that `task` is `scope`'s, if it is no one's yet (the shared store wrote its
    /// owner with it).
    pub(crate) fn record(&self, scope: ScopeKey, task: &str) {
        match self {
            Ownership::Local(owners) => owners.record(scope, task),
            Ownership::Shared(_) => {}
        }
    }
}

/// The default number of tasks whose owner is remembered.
pub(crate) const DEFAULT_MAX_TASKS: usize = 100_000;

/// Which scope each task belongs to, and each scope's tasks.
pub(crate) struct Owners {
    max: usize,
    /// SipHash with a random key: callers pick task ids only through the SDK's handler, but
    /// a store's ids may be anything, and colliding ones would make every lookup a scan.
    hasher: RandomState,
    index: Mutex<Index>,
}

/// A task's id as the table keeps it: inline when it is no longer than 38 bytes (the SDK's
/// ids are 36-byte UUIDs), so that recording a task allocates nothing and evicting one frees
/// nothing long cold.
enum Text {
    Inline(u8, [u8; INLINE]),
    Heap(Box<str>),
}

const INLINE: usize = 38;

impl Text {
    fn new(text: &str) -> Self {
        if text.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            Text::Inline(text.len() as u8, bytes)
        } else {
            Text::Heap(Box::from(text))
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // Copied from a `&str` whole: valid UTF-8.
            Text::Inline(len, bytes) => {
                std::str::from_utf8(&bytes[..*len as usize]).unwrap_or_default()
            }
            Text::Heap(text) => text,
        }
    }
}

/// A task's record: its id, its owner, and the hash and stamp its places in the queues name
/// it by.
struct Owned {
    hash: u64,
    /// Which recording of a task this is (unique in the index): a task forgotten and recorded
    /// again has another, so the places of its earlier record name nothing.
    stamp: u64,
    scope: ScopeKey,
    text: Text,
}

/// A task's place in a queue: the hash and stamp of its record (16 bytes).
#[derive(Clone, Copy)]
struct Place {
    hash: u64,
    stamp: u64,
}

impl Place {
    /// Whether `owned` is the record this place names.
    fn names(self) -> impl Fn(&Owned) -> bool {
        move |owned| owned.stamp == self.stamp
    }
}

/// A scope's tasks in the order they were recorded, with places that name nothing any more
/// (tasks forgotten) until they reach the front or the queue is compacted.
#[derive(Default)]
struct ScopeTasks {
    places: VecDeque<Place>,
    live: usize,
}

#[derive(Default)]
struct Index {
    by_task: HashTable<Owned>,
    by_scope: HashMap<ScopeKey, ScopeTasks>,
    /// Every task in the order it was recorded, for eviction, with places that name nothing
    /// until they reach the front or the queue is compacted.
    order: VecDeque<Place>,
    next_stamp: u64,
}

/// Whether `place` names a task recorded now.
fn held(by_task: &HashTable<Owned>, place: Place) -> bool {
    by_task.find(place.hash, place.names()).is_some()
}

impl Index {
    /// Takes `owned`, just removed from the table, out of its scope's count, and, when it was
    /// `evicted` (the oldest recorded, so the oldest of its scope's live tasks), its place
    /// off the front of its scope's queue: one lookup of the scope for both.
    fn uncount(&mut self, owned: &Owned, evicted: bool) {
        let Some(scope) = self.by_scope.get_mut(&owned.scope) else {
            return;
        };
        scope.live -= 1;
        if scope.live == 0 {
            self.by_scope.remove(&owned.scope);
            return;
        }
        if evicted {
            // Only places of forgotten tasks are before it in the scope's queue.
            while let Some(front) = scope.places.pop_front() {
                if front.stamp == owned.stamp {
                    break;
                }
            }
        }
    }

    /// Evicts the oldest task recorded; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        let Some(oldest) = self.order.pop_front() else {
            return false;
        };
        let Ok(found) = self.by_task.find_entry(oldest.hash, oldest.names()) else {
            // Forgotten already.
            return true;
        };
        let (owned, _) = found.remove();
        self.uncount(&owned, true);
        true
    }
}

impl Owners {
    /// An index of at most `max` tasks (at least 1).
    pub(crate) fn new(max: usize) -> Self {
        Owners {
            max: max.max(1),
            hasher: RandomState::new(),
            index: Mutex::new(Index::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Records that `task` belongs to `scope`, unless it already belongs to someone: the
    /// first caller a task's id was handed to owns it.
    pub(crate) fn record(&self, scope: ScopeKey, task: &str) {
        let hash = self.hasher.hash_one(task);
        let mut index = self.lock();
        let Index {
            by_task,
            by_scope,
            order,
            next_stamp,
        } = &mut *index;
        let Entry::Vacant(vacant) = by_task.entry(
            hash,
            |owned| owned.text.as_str() == task,
            |owned| owned.hash,
        ) else {
            return;
        };
        let place = Place {
            hash,
            stamp: *next_stamp,
        };
        *next_stamp += 1;
        vacant.insert(Owned {
            hash,
            stamp: place.stamp,
            scope,
            text: Text::new(task),
        });
        let tasks = by_scope.entry(scope).or_default();
        tasks.places.push_back(place);
        tasks.live += 1;
        if tasks.places.len() > 2 * tasks.live + 64 {
            tasks.places.retain(|place| held(by_task, *place));
        }
        order.push_back(place);
        if order.len() > 2 * self.max {
            order.retain(|place| held(by_task, *place));
        }
        while index.by_task.len() > self.max {
            if !index.evict_oldest() {
                break;
            }
        }
    }

    /// Whether `task` belongs to `scope`: a task no one owns belongs to no one.
    pub(crate) fn owns(&self, scope: ScopeKey, task: &str) -> bool {
        let hash = self.hasher.hash_one(task);
        self.lock()
            .by_task
            .find(hash, |owned| owned.text.as_str() == task)
            .is_some_and(|owned| owned.scope == scope)
    }

    /// The tasks of `scope` after `after` (all, without), in id order.
    pub(crate) fn tasks(&self, scope: ScopeKey, after: Option<&str>) -> Vec<String> {
        let mut tasks: Vec<String> = {
            let index = self.lock();
            let Some(tasks) = index.by_scope.get(&scope) else {
                return Vec::new();
            };
            tasks
                .places
                .iter()
                .filter_map(|place| index.by_task.find(place.hash, place.names()))
                .map(|owned| owned.text.as_str())
                .filter(|id| after.is_none_or(|after| *id > after))
                .map(str::to_owned)
                .collect()
        };
        // Sorted outside the lock: a scope of many tasks does not hold up SendMessage.
        tasks.sort_unstable();
        tasks
    }

    /// Forgets `task` (the store no longer has it).
    pub(crate) fn forget(&self, task: &str) {
        let hash = self.hasher.hash_one(task);
        let mut index = self.lock();
        if let Ok(found) = index
            .by_task
            .find_entry(hash, |owned| owned.text.as_str() == task)
        {
            let (owned, _) = found.remove();
            index.uncount(&owned, false);
        }
    }

    /// How many tasks are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().by_task.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice_and_bob() -> (ScopeKey, ScopeKey) {
        (key_of(Some("t:alice")), key_of(Some("t:bob")))
    }

    #[test]
    fn a_task_is_its_first_callers_and_the_oldest_go_first() {
        let owners = Owners::new(3);
        let (alice, bob) = alice_and_bob();
        owners.record(alice, "t-2");
        owners.record(alice, "t-1");
        owners.record(bob, "t-1");
        owners.record(bob, "t-3");
        assert!(owners.owns(alice, "t-1"));
        assert!(!owners.owns(bob, "t-1"));
        assert!(!owners.owns(key_of(None), "t-1"));
        assert!(!owners.owns(alice, "nope"));
        assert_eq!(owners.tasks(alice, None), ["t-1", "t-2"]);
        assert_eq!(owners.tasks(alice, Some("t-1")), ["t-2"]);
        owners.record(bob, "t-4");
        // Three at most: t-2, recorded first, is gone.
        assert_eq!(owners.len(), 3);
        assert!(!owners.owns(alice, "t-2"));
        owners.forget("t-1");
        assert!(owners.tasks(alice, None).is_empty());
        for n in 0..100 {
            owners.record(bob, &format!("b-{n}"));
        }
        assert_eq!(owners.len(), 3);
        assert!(owners.lock().order.len() <= 7);
    }

    #[test]
    fn a_task_recorded_again_is_evicted_as_its_new_record_not_its_old_one() {
        let owners = Owners::new(3);
        let (alice, bob) = alice_and_bob();
        owners.record(alice, "a");
        owners.record(alice, "b");
        owners.forget("a");
        owners.record(bob, "a");
        owners.record(bob, "c");
        // Four: the oldest recorded is b (a's first place names nothing now).
        owners.record(bob, "d");
        assert_eq!(owners.len(), 3);
        assert!(owners.owns(bob, "a"));
        assert!(!owners.owns(alice, "b"));
        assert_eq!(owners.tasks(bob, None), ["a", "c", "d"]);
        assert_eq!(owners.tasks(bob, Some("a")), ["c", "d"]);
        assert!(owners.tasks(alice, None).is_empty());
        assert!(!owners.lock().by_scope.contains_key(&alice));
    }

    #[test]
    fn the_sizes_are_what_the_module_says() {
        assert_eq!(std::mem::size_of::<Owned>(), 80);
        assert_eq!(std::mem::size_of::<Place>(), 16);
    }

    #[test]
    fn an_id_of_any_length_is_kept_whole() {
        let owners = Owners::new(10);
        let (alice, bob) = alice_and_bob();
        let long = "x".repeat(300);
        let edge = "y".repeat(INLINE);
        let past = "z".repeat(INLINE + 1);
        for id in [&long, &edge, &past, "é-ü"] {
            owners.record(alice, id);
        }
        for id in [&long, &edge, &past, "é-ü"] {
            assert!(owners.owns(alice, id), "{id}");
            assert!(!owners.owns(bob, id), "{id}");
        }
        assert!(!owners.owns(alice, &"y".repeat(INLINE - 1)));
        assert!(!owners.owns(alice, &"x".repeat(299)));
        assert_eq!(
            owners.tasks(alice, None),
            [long.as_str(), &edge, &past, "é-ü"]
        );
    }

    #[test]
    fn the_places_of_forgotten_tasks_do_not_pile_up_in_a_scope() {
        let owners = Owners::new(10_000);
        let (alice, _) = alice_and_bob();
        owners.record(alice, "kept");
        for n in 0..1_000 {
            let task = format!("t-{n}");
            owners.record(alice, &task);
            owners.forget(&task);
        }
        let index = owners.lock();
        let scope = &index.by_scope[&alice];
        assert_eq!(scope.live, 1);
        assert!(scope.places.len() <= 2 + 64 + 1, "{}", scope.places.len());
        drop(index);
        assert_eq!(owners.tasks(alice, None).len(), 1);
    }

    /// The bound the module states, in resident memory: 100,000 tasks (36-byte ids, as the
    /// SDK makes them) of 8 callers, recorded three times over so that the queues have turned
    /// over, grow the process by at most 32 MB (28.2 MB measured). Measured in a process of
    /// its own (this test run again with only itself), where no other test allocates
    /// meanwhile.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_stated_bound_holds_in_resident_memory() {
        const CHILD: &str = "A2A_OWNERS_RSS_CHILD";
        const NAME: &str = "owners::tests::the_stated_bound_holds_in_resident_memory";
        if std::env::var_os(CHILD).is_none() {
            let ran = std::process::Command::new(std::env::current_exe().unwrap())
                .args([NAME, "--exact", "--test-threads=1", "--nocapture"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&ran.stdout);
            assert!(ran.status.success(), "{out}");
            assert!(
                out.contains("1 passed"),
                "the measurement did not run: {out}"
            );
            return;
        }
        let rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let kib: u64 = status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap();
            kib << 10
        };
        let scopes: Vec<ScopeKey> = (0..8).map(|n| key_of(Some(&format!("t:{n}")))).collect();
        let id = |n: u64| format!("{:08x}-0000-7000-8000-{:012x}", n >> 16, n);
        let before = rss();
        let owners = Owners::new(DEFAULT_MAX_TASKS);
        for n in 0..3 * DEFAULT_MAX_TASKS as u64 {
            owners.record(scopes[(n % 8) as usize], &id(n));
        }
        assert_eq!(owners.len(), DEFAULT_MAX_TASKS);
        let grown = rss().saturating_sub(before);
        println!("owners of 100,000 tasks: {} KiB resident", grown >> 10);
        assert!(grown <= 32_000_000, "grew by {} KiB", grown >> 10);
        // The newest are kept, the oldest gone.
        let last = 3 * DEFAULT_MAX_TASKS as u64 - 1;
        assert!(owners.owns(scopes[(last % 8) as usize], &id(last)));
        assert!(!owners.owns(scopes[0], &id(0)));
    }
}
