//! [`TaskLeases`]: a task store that leases each running task to the replica running it, so
//! that no two replicas run one task and a task whose replica died ends FAILED instead of
//! WORKING forever. [`Guarded::leased`](crate::executor::Guarded::leased) holds the lease
//! for each execution it guards; `RedisTaskStore` is one such store, a store of your own
//! (Postgres, DynamoDB, …) another once it implements this trait.

use a2a::{A2AError, StreamResponse};
use futures_util::StreamExt;
use futures_util::stream::BoxStream;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// A task store that leases its tasks to the replica running them.
///
/// What an implementation must guarantee:
/// - **One holder.** [`hold`](Self::hold) succeeds for one replica at a time; another gets an
///   error (`A2AError` INVALID_REQUEST with reason `TASK_RUNNING_ELSEWHERE` is what the
///   bridge's callers read for it), a task that does not exist TASK_NOT_FOUND.
/// - **Renewed while held.** The [`TaskLease`] renews itself until it is dropped, then gives
///   the lease back, unless it was lost by lapsing (which the store's reaper must find).
/// - **Lost, and said so.** [`TaskLease::lost`] resolves once the lease cannot be kept (the
///   store unreachable for a whole lease, the task ended elsewhere, an execution stalled):
///   the execution is then stopped, its executor's stream dropped.
/// - **Reaped.** A task whose lease lapsed is ended FAILED by the store (any replica's).
#[async_trait::async_trait]
pub trait TaskLeases: Send + Sync + 'static {
    /// Takes the lease of `task` for this replica (or keeps the one its create took), held
    /// until the returned lease is dropped.
    async fn hold(&self, task: &str) -> Result<Box<dyn TaskLease>, A2AError>;
}

/// The lease of one running task, held by this replica (see [`TaskLeases`]).
#[async_trait::async_trait]
pub trait TaskLease: Send + Sync + 'static {
    /// The execution made an event (a store with a stall limit counts from the last one).
    fn event(&self);

    /// Resolves once the lease is lost, with why.
    async fn lost(&self) -> LeaseLost;
}

/// Why an execution's lease was lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseLost {
    /// Not renewed in time (a stall, the store unreachable, or taken): the lease is left to
    /// lapse, and the store's reaper ends the task FAILED (`TASK_ABANDONED`). The execution
    /// ends with that error.
    Lapsed,
    /// The task ended elsewhere (cancelled on another replica): the execution's stream ends,
    /// and what the store holds is the answer.
    Ended,
}

/// `events`, the execution of `task`, run under its lease from `leases`: nothing of it runs
/// without the lease, and it stops when the lease is lost.
pub(crate) fn leased(
    leases: std::sync::Arc<dyn TaskLeases>,
    task: String,
    events: Events,
) -> Events {
    struct State {
        leases: std::sync::Arc<dyn TaskLeases>,
        task: String,
        events: Option<Events>,
        held: Option<Box<dyn TaskLease>>,
    }
    let state = State {
        leases,
        task,
        events: Some(events),
        held: None,
    };
    futures_util::stream::unfold(state, |mut state| async move {
        let mut events = state.events.take()?;
        if state.held.is_none() {
            match state.leases.hold(&state.task).await {
                Ok(held) => state.held = Some(held),
                // Nothing of the execution runs.
                Err(error) => return Some((Err(error), state)),
            }
        }
        let held = state.held.as_ref()?;
        let item = tokio::select! {
            biased;
            why = held.lost() => match why {
                LeaseLost::Lapsed => {
                    a2a_error_runtime::observe::lease_lost();
                    Some(Err(a2a_error_runtime::sdk_errors::to_sdk(&LeaseError::Abandoned)))
                }
                // Ended by a write elsewhere: what the store holds is the answer.
                LeaseLost::Ended => None,
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

/// The errors of leases, as every store's callers read them: a store of your own answers
/// with these (through [`to_sdk`](a2a_error_runtime::sdk_errors::to_sdk)) where `RedisTaskStore` does.
#[derive(Clone, Debug, thiserror::Error, a2a_error_derive::A2aError)]
#[a2a(
    crate = "a2a_error_runtime",
    domain = "a2a-error",
    into_response = false
)]
#[non_exhaustive]
pub enum LeaseError {
    /// The task is running on another replica: [`TaskLeases::hold`] refused.
    #[error("the task is running on another replica")]
    #[a2a(
        code = INVALID_REQUEST,
        reason = "TASK_RUNNING_ELSEWHERE",
        message = "The task is being worked on; retry when it is done"
    )]
    Elsewhere,
    /// A write to a task whose lease lapsed: it ended FAILED (`TASK_ABANDONED`), and no
    /// write is taken.
    #[error("the task's lease lapsed and it ended")]
    #[a2a(
        code = AGENT_UNAVAILABLE,
        reason = "TASK_LEASE_LAPSED",
        message = "The agent instance running this task lost it; send the message again"
    )]
    Lapsed,
    /// The replica running the task stopped renewing its lease: the cause its FAILED
    /// status carries, and what the caller waiting on that replica is told.
    #[error("the replica running this task stopped")]
    #[a2a(
        code = AGENT_UNAVAILABLE,
        reason = "TASK_ABANDONED",
        message = "The agent instance running this task stopped; send the message again"
    )]
    Abandoned,
}
