//! [`Owners`]: which caller's scope each task the bridge has answered belongs to.
//!
//! The SDK's `DefaultRequestHandler` serves any task to anyone who names it: with another
//! `Authorization`, a caller read (GetTask), listed (ListTasks), subscribed to and canceled
//! another caller's task. The bridge records the scope of the caller a task was created for
//! when it first hands out the task's id, and serves a task only to that scope; to any other
//! it does not exist (TASK_NOT_FOUND, so that its existence is not told either).
//!
//! Bounded in count: at most `max` tasks are remembered (the oldest recorded go first), which
//! is about 200 bytes each (the id twice behind one `Arc`, the scope's 128-bit hash, the
//! maps' and the queue's share): 20 MB for the default of 100,000. A task whose record was
//! dropped is served to no one (it fails closed), as the task store's own bound drops tasks.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

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

/// Which scope each task belongs to, and each scope's tasks in id order (ListTasks' order).
pub(crate) struct Owners {
    max: usize,
    index: Mutex<Index>,
}

#[derive(Default)]
struct Index {
    by_task: HashMap<Arc<str>, ScopeKey>,
    by_scope: HashMap<ScopeKey, BTreeSet<Arc<str>>>,
    /// Tasks in the order they were recorded, for eviction; a forgotten task's entry stays
    /// until it reaches the front or the queue is compacted.
    order: VecDeque<Arc<str>>,
}

impl Index {
    fn remove(&mut self, task: &str) {
        if let Some(scope) = self.by_task.remove(task)
            && let Some(tasks) = self.by_scope.get_mut(&scope)
        {
            tasks.remove(task);
            if tasks.is_empty() {
                self.by_scope.remove(&scope);
            }
        }
    }
}

impl Owners {
    /// An index of at most `max` tasks (at least 1).
    pub(crate) fn new(max: usize) -> Self {
        Owners {
            max: max.max(1),
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
        let mut index = self.lock();
        if index.by_task.contains_key(task) {
            return;
        }
        let task: Arc<str> = Arc::from(task);
        index.by_task.insert(Arc::clone(&task), scope);
        index
            .by_scope
            .entry(scope)
            .or_default()
            .insert(Arc::clone(&task));
        index.order.push_back(task);
        while index.by_task.len() > self.max {
            let Some(oldest) = index.order.pop_front() else {
                break;
            };
            index.remove(&oldest);
        }
        if index.order.len() > 2 * self.max {
            let Index { by_task, order, .. } = &mut *index;
            order.retain(|task| by_task.contains_key(task));
        }
    }

    /// Whether `task` belongs to `scope`: a task no one owns belongs to no one.
    pub(crate) fn owns(&self, scope: ScopeKey, task: &str) -> bool {
        self.lock().by_task.get(task) == Some(&scope)
    }

    /// The tasks of `scope` after `after` (all, without), in id order.
    pub(crate) fn tasks(&self, scope: ScopeKey, after: Option<&str>) -> Vec<Arc<str>> {
        let index = self.lock();
        let Some(tasks) = index.by_scope.get(&scope) else {
            return Vec::new();
        };
        match after {
            Some(after) => tasks
                .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
                .cloned()
                .collect(),
            None => tasks.iter().cloned().collect(),
        }
    }

    /// Forgets `task` (the store no longer has it).
    pub(crate) fn forget(&self, task: &str) {
        self.lock().remove(task);
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

    #[test]
    fn a_task_is_its_first_callers_and_the_oldest_go_first() {
        let owners = Owners::new(3);
        let (alice, bob) = (key_of(Some("t:alice")), key_of(Some("t:bob")));
        owners.record(alice, "t-2");
        owners.record(alice, "t-1");
        owners.record(bob, "t-1");
        owners.record(bob, "t-3");
        assert!(owners.owns(alice, "t-1"));
        assert!(!owners.owns(bob, "t-1"));
        assert!(!owners.owns(key_of(None), "t-1"));
        assert!(!owners.owns(alice, "nope"));
        let ids = |tasks: Vec<Arc<str>>| tasks.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert_eq!(ids(owners.tasks(alice, None)), ["t-1", "t-2"]);
        assert_eq!(ids(owners.tasks(alice, Some("t-1"))), ["t-2"]);
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
}
