//! `Dedup`: replies remembered by key (A2A: `message.messageId`), so a client that retries a
//! `SendMessage` after a lost reply does not run the work twice.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use tokio::time::Instant;

use crate::wire::error::A2aError;

/// The text of a panic in the deduplicated work, re-raised in every waiter.
#[derive(Clone, Debug)]
struct Panicked(Arc<str>);

type Work<T, E> = Shared<BoxFuture<'static, Result<Result<T, E>, Panicked>>>;

struct Entry<T, E> {
    started: Instant,
    generation: u64,
    work: Work<T, E>,
}

struct State<T, E> {
    entries: HashMap<String, Entry<T, E>>,
    generation: u64,
}

/// Remembers the outcome of work by key for a window, up to a capacity.
///
/// - A second call with the same key while the first is running waits for the first's
///   outcome instead of running again.
/// - Successes and final errors are remembered for `window`; a retryable error is forgotten
///   at once, so the client's retry really runs again.
/// - Clones share the same memory.
pub struct Dedup<T, E> {
    state: Arc<Mutex<State<T, E>>>,
    window: Duration,
    capacity: usize,
}

impl<T, E> Clone for Dedup<T, E> {
    fn clone(&self) -> Self {
        Dedup {
            state: Arc::clone(&self.state),
            window: self.window,
            capacity: self.capacity,
        }
    }
}

impl<T, E> Dedup<T, E>
where
    T: Clone + Send + Sync + 'static,
    E: A2aError + Clone + Send + Sync + 'static,
{
    /// Remembers outcomes for `window`, at most `capacity` of them (the oldest finished ones
    /// are forgotten first).
    pub fn new(window: Duration, capacity: usize) -> Self {
        Dedup {
            state: Arc::new(Mutex::new(State {
                entries: HashMap::new(),
                generation: 0,
            })),
            window,
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T, E>> {
        // A panic while holding this lock cannot leave the map half-updated.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `work` unless the outcome for `key` is remembered or on its way. Without a key
    /// the work simply runs.
    pub async fn run<F, Fut>(&self, key: Option<&str>, work: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
    {
        let Some(key) = key else {
            return work().await;
        };
        let (generation, shared) = {
            let mut state = self.lock();
            let now = Instant::now();
            let window = self.window;
            state
                .entries
                .retain(|_, e| e.work.peek().is_none() || now.duration_since(e.started) < window);
            match state.entries.get(key) {
                Some(entry) => (entry.generation, entry.work.clone()),
                None => {
                    if state.entries.len() >= self.capacity {
                        let oldest = state
                            .entries
                            .iter()
                            .filter(|(_, e)| e.work.peek().is_some())
                            .min_by_key(|(_, e)| e.started)
                            .map(|(k, _)| k.clone());
                        if let Some(oldest) = oldest {
                            state.entries.remove(&oldest);
                        }
                    }
                    state.generation += 1;
                    let generation = state.generation;
                    let shared = AssertUnwindSafe(work())
                        .catch_unwind()
                        .map(|outcome| {
                            outcome.map_err(|panic| {
                                Panicked(Arc::from(super::log::panic_text(&*panic)))
                            })
                        })
                        .boxed()
                        .shared();
                    let entry = Entry {
                        started: now,
                        generation,
                        work: shared.clone(),
                    };
                    state.entries.insert(key.to_owned(), entry);
                    (generation, shared)
                }
            }
        };
        let outcome = shared.await;
        let forget = match &outcome {
            Err(Panicked(_)) => true,
            Ok(Err(error)) => error.is_retryable(),
            Ok(Ok(_)) => false,
        };
        if forget {
            let mut state = self.lock();
            if state
                .entries
                .get(key)
                .is_some_and(|e| e.generation == generation)
            {
                state.entries.remove(key);
            }
        }
        match outcome {
            Ok(result) => result,
            // The original caller's panic was caught; each waiter fails the same way.
            Err(Panicked(text)) => panic!("{text}"),
        }
    }

    /// How many outcomes (finished or running) are remembered now.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
