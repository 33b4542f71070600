//! Leases: the replica that runs a task holds its lease and renews it while the execution
//! runs ([`Held`], its `TaskLeases`); every replica's reaper ends FAILED the tasks whose lease lapsed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use a2a::A2AError;
use tokio::sync::watch;

use super::{Mode, RedisTaskStore, Written, millis, now_ms};
use crate::lease::{LeaseError, LeaseLost, TaskLease, TaskLeases};
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::remote::RemoteError;

/// The lease of one running task, held by this replica and renewed in the background until
/// dropped (then given back). It is lost when a renewal fails for a whole lease, when the
/// task ended elsewhere (a cancel on another replica), or when the execution made no event
/// for the stall limit.
pub(crate) struct Held {
    lost: watch::Receiver<Option<LeaseLost>>,
    /// When the execution last made an event, in ms since the Unix epoch.
    last_event: Arc<AtomicU64>,
    renewer: tokio::task::JoinHandle<()>,
    store: RedisTaskStore,
    task: String,
}

#[async_trait::async_trait]
impl TaskLease for Held {
    fn event(&self) {
        self.last_event.store(now_ms(), Ordering::Relaxed);
    }

    async fn lost(&self) -> LeaseLost {
        let mut lost = self.lost.clone();
        match lost.wait_for(Option::is_some).await {
            Ok(why) => why.unwrap_or(LeaseLost::Lapsed),
            // The renewer is gone, which it is only once it said why.
            Err(_) => LeaseLost::Lapsed,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewer.abort();
        // A lapsing lease is not given back: the reaper must find it.
        if *self.lost.borrow() == Some(LeaseLost::Lapsed) {
            return;
        }
        let (store, task) = (self.store.clone(), std::mem::take(&mut self.task));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { store.give_back(&task).await });
        }
    }
}

/// The lease of a task is a key beside it, renewed every third of the lease while its
/// execution runs (and made no event for less than the stall limit).
#[async_trait::async_trait]
impl TaskLeases for RedisTaskStore {
    async fn hold(&self, task: &str) -> Result<Box<dyn TaskLease>, A2AError> {
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
            0 => {
                return Err(a2a_error_runtime::sdk_errors::to_sdk(
                    &LeaseError::Elsewhere,
                ));
            }
            -1 => return Err(A2AError::task_not_found(task)),
            _ => return Err(a2a_error_runtime::sdk_errors::to_sdk(&LeaseError::Lapsed)),
        }
        let (tell, lost) = watch::channel(None);
        let last_event = Arc::new(AtomicU64::new(now_ms()));
        let renewer = tokio::spawn(self.clone().renew(
            task.to_owned(),
            tell,
            Arc::clone(&last_event),
        ));
        Ok(Box::new(Held {
            lost,
            last_event,
            renewer,
            store: self.clone(),
            task: task.to_owned(),
        }))
    }
}

impl RedisTaskStore {
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
        tell: watch::Sender<Option<LeaseLost>>,
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
                    break LeaseLost::Lapsed;
                }
            }
            match self.take_lease(&task, true).await {
                Ok(1) => renewed = tokio::time::Instant::now(),
                Ok(2) => break LeaseLost::Ended,
                Ok(_) => break LeaseLost::Lapsed,
                // Past a whole lease without a renewal another replica may have reaped it.
                Err(_) if renewed.elapsed() >= lease => break LeaseLost::Lapsed,
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
            let public = RemoteError::from_object(LeaseError::Abandoned.to_error_object());
            task.status = crate::failed::failed_status_of(&public, &task.id, &task.context_id);
            task.status.timestamp = Some(chrono::Utc::now());
            match self.write(&task, Mode::Reap, Some(version)).await? {
                Written::Version(_) => {
                    a2a_error_runtime::observe::task_abandoned();
                    tracing::warn!(task = id, "a task's lease lapsed: it ended FAILED");
                    if let Some(push) = self.inner.reaped.get() {
                        let event = a2a::StreamResponse::StatusUpdate(a2a::TaskStatusUpdateEvent {
                            task_id: task.id.clone(),
                            context_id: task.context_id.clone(),
                            status: task.status.clone(),
                            metadata: None,
                        });
                        push.notify_ended(id, &event).await;
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
