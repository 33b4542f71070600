//! Leases: the replica that runs a task holds its lease and renews it while the execution
//! runs ([`Held`]); every replica's reaper ends FAILED the tasks whose lease lapsed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2a::{A2AError, StreamResponse};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio::sync::watch;

use super::{Mode, RedisTaskStore, SharedTaskError, Written, millis, now_ms};
use crate::wire::error::A2aError;
use crate::wire::remote::RemoteError;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// The lease of one running task, held by this replica and renewed in the background until
/// dropped (then given back). It is lost when a renewal fails for a whole lease, when the
/// task ended elsewhere (a cancel on another replica), or when the execution made no event
/// for the stall limit.
pub(crate) struct Held {
    lost: watch::Receiver<Option<Lost>>,
    /// When the execution last made an event, in ms since the Unix epoch.
    last_event: Arc<AtomicU64>,
    renewer: tokio::task::JoinHandle<()>,
    store: RedisTaskStore,
    task: String,
}

impl Held {
    /// The execution made an event.
    pub(crate) fn event(&self) {
        self.last_event.store(now_ms(), Ordering::Relaxed);
    }

    /// Resolves once the lease is lost, with why.
    pub(crate) async fn lost(&self) -> Lost {
        let mut lost = self.lost.clone();
        match lost.wait_for(Option::is_some).await {
            Ok(why) => why.unwrap_or(Lost::Lapsed),
            // The renewer is gone, which it is only once it said why.
            Err(_) => Lost::Lapsed,
        }
    }
}

/// Why an execution's lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lost {
    /// Not renewed in time (the stall limit, Redis unreachable, or taken): the lease is left
    /// to lapse, and the reaper ends the task FAILED.
    Lapsed,
    /// The task ended elsewhere (cancelled on another replica).
    Ended,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewer.abort();
        // A lapsing lease is not given back: the reaper must find it.
        if *self.lost.borrow() == Some(Lost::Lapsed) {
            return;
        }
        let (store, task) = (self.store.clone(), std::mem::take(&mut self.task));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { store.give_back(&task).await });
        }
    }
}

impl RedisTaskStore {
    /// Takes (or keeps, after the create) the lease of `task` for this replica, and renews
    /// it every third of the lease.
    pub(crate) async fn hold(&self, task: &str) -> Result<Held, A2AError> {
        let fresh = (self.inner.fresh.lock())
            .unwrap_or_else(|p| p.into_inner())
            .remove(task);
        // Just created here, with its lease: the renewer's first renewal checks it.
        let taken = if fresh {
            1
        } else {
            self.take_lease(task, false).await?
        };
        match taken {
            1 => {}
            0 => return Err(crate::sdk::error::to_sdk(&SharedTaskError::Elsewhere)),
            -1 => return Err(A2AError::task_not_found(task)),
            _ => return Err(crate::sdk::error::to_sdk(&SharedTaskError::Lapsed)),
        }
        let (tell, lost) = watch::channel(None);
        let last_event = Arc::new(AtomicU64::new(now_ms()));
        let renewer = tokio::spawn(self.clone().renew(
            task.to_owned(),
            tell,
            Arc::clone(&last_event),
        ));
        Ok(Held {
            lost,
            last_event,
            renewer,
            store: self.clone(),
            task: task.to_owned(),
        })
    }

    /// 1 held, 0 another's (or lapsed, for a renewal), -1 no task, 2 the task ended.
    async fn take_lease(&self, task: &str, renew: bool) -> Result<i64, A2AError> {
        self.run(&self.inner.scripts.lease, |call| {
            call.arg(task)
                .arg(&self.inner.replica)
                .arg(millis(self.inner.lease))
                .arg(now_ms())
                .arg(if renew { "renew" } else { "take" });
        })
        .await
    }

    /// Renews `task`'s lease until it is lost (then says so on `tell`).
    async fn renew(
        self,
        task: String,
        tell: watch::Sender<Option<Lost>>,
        last_event: Arc<AtomicU64>,
    ) {
        let lease = self.inner.lease;
        let mut renewed = tokio::time::Instant::now();
        let why = loop {
            tokio::time::sleep(lease / 3).await;
            if let Some(stall) = self.inner.stall {
                let idle = now_ms().saturating_sub(last_event.load(Ordering::Relaxed));
                if idle > millis(stall) {
                    tracing::warn!(task, "an execution made no event for its stall limit");
                    break Lost::Lapsed;
                }
            }
            match self.take_lease(&task, true).await {
                Ok(1) => renewed = tokio::time::Instant::now(),
                Ok(2) => break Lost::Ended,
                Ok(_) => break Lost::Lapsed,
                // Past a whole lease without a renewal another replica may have reaped it.
                Err(_) if renewed.elapsed() >= lease => break Lost::Lapsed,
                Err(_) => {}
            }
        };
        let _ = tell.send(Some(why));
    }

    /// Gives `task`'s lease back, if this replica still holds it.
    async fn give_back(&self, task: &str) {
        let released: Result<i64, _> = self
            .run(&self.inner.scripts.release, |call| {
                call.arg(task).arg(&self.inner.replica);
            })
            .await;
        if released.is_err() {
            tracing::debug!("a lease was not given back: it lapses");
        }
    }

    /// Starts this store's reaper, once.
    pub(super) fn start_reaper(&self) {
        let reaper = &self.inner.reaper;
        if reaper.started.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if reaper.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let reaper = Arc::clone(reaper);
        runtime.spawn(async move {
            // Each round reads the store as configured now; it ends with the last clone.
            let target = || {
                reaper
                    .target
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .upgrade()
            };
            while let Some(inner) = target() {
                let every =
                    (inner.lease / 5).clamp(Duration::from_millis(50), Duration::from_secs(1));
                drop(inner);
                tokio::time::sleep(every).await;
                let Some(inner) = target() else { return };
                RedisTaskStore { inner }.reap().await;
            }
        });
    }

    /// Ends FAILED every task whose lease lapsed; errors wait for the next round.
    pub(crate) async fn reap(&self) {
        let ttl = millis(self.inner.ttl);
        let lapsed: Vec<String> = match self
            .run(&self.inner.scripts.lapsed, |call| {
                call.arg(now_ms()).arg(ttl);
            })
            .await
        {
            Ok(lapsed) => lapsed,
            Err(_) => return,
        };
        for id in lapsed {
            if let Err(error) = self.reap_one(&id).await {
                tracing::debug!(code = error.code, "a lapsed task was not ended yet");
            }
        }
    }

    async fn reap_one(&self, id: &str) -> Result<(), A2AError> {
        for _ in 0..4 {
            let Some((mut task, version)) = self.read(id).await? else {
                return Ok(());
            };
            if task.status.state.is_terminal() {
                return Ok(());
            }
            // The cause: TASK_ABANDONED, as the caller that waited on the execution is told.
            let public = RemoteError::from_object(SharedTaskError::Abandoned.to_error_object());
            task.status = crate::sdk::failed::failed_status_of(&public, &task.id, &task.context_id);
            task.status.timestamp = Some(chrono::Utc::now());
            match self.write(&task, Mode::Reap, Some(version)).await? {
                Written::Version(_) => {
                    crate::observe::task_abandoned();
                    tracing::warn!(task = id, "a task's lease lapsed: it ended FAILED");
                    if let Some(push) = self.inner.reaped.get() {
                        let event = a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
                            task_id: task.id.clone(),
                            context_id: task.context_id.clone(),
                            status: task.status.clone(),
                            metadata: None,
                        });
                        push.notify(id, 0, &event).await;
                    }
                    return Ok(());
                }
                Written::Moved => continue,
                // Taken again, ended, or gone meanwhile: nothing to reap.
                _ => return Ok(()),
            }
        }
        Ok(())
    }
}

/// `events` of `task`'s execution, run while this replica holds the task's lease: refused
/// (the error) when another replica runs it; ended with TASK_ABANDONED when the lease
/// lapses (the store's reaper then ends the task FAILED), and quietly when the task ended
/// elsewhere; either way the executor's stream is dropped.
pub(crate) fn leased(store: RedisTaskStore, task: String, events: Events) -> Events {
    struct State {
        store: RedisTaskStore,
        task: String,
        events: Option<Events>,
        held: Option<Held>,
    }
    let state = State {
        store,
        task,
        events: Some(events),
        held: None,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        let mut events = state.events.take()?;
        if state.held.is_none() {
            match state.store.hold(&state.task).await {
                Ok(held) => state.held = Some(held),
                // Nothing of the execution runs.
                Err(error) => return Some((Err(error), state)),
            }
        }
        let held = state.held.as_ref()?;
        let item = tokio::select! {
            biased;
            why = held.lost() => match why {
                Lost::Lapsed => {
                    crate::observe::lease_lost();
                    Some(Err(crate::sdk::error::to_sdk(&SharedTaskError::Abandoned)))
                }
                // Ended by a write elsewhere: what the store holds is the answer.
                Lost::Ended => None,
            },
            item = events.next() => {
                held.event();
                state.events = Some(events);
                item
            }
        };
        item.map(|item| (item, state))
    })
    .boxed()
}
