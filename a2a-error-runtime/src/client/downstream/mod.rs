//! Passing a downstream failure on: [`Downstream`] (a client's failure with the name of the
//! agent that failed) and, in `propagate`, the translation every passed-on failure goes
//! through.

mod propagate;

pub(crate) use propagate::CHAIN_BYTES;

use std::fmt;
use std::sync::Arc;

use super::error::ClientError;
use crate::wire::error::A2aError;
use crate::wire::remote::RemoteError;

/// A call to agent `agent` failed with `error`. Passed on to our own caller it is the
/// translated DOWNSTREAM_FAILED of [`ClientError`]'s `A2aError` impl, with `downstreamAgent`
/// and the first hop of the chain naming the agent.
///
/// The typed [`Client`](crate::Client) knows its agent's name:
/// `Downstream::new(client.name(), error)`.
pub struct Downstream<E = RemoteError> {
    agent: Arc<str>,
    error: ClientError<E>,
}

impl<E> Downstream<E> {
    /// `error` from a call to `agent`.
    pub fn new(agent: impl Into<Arc<str>>, error: ClientError<E>) -> Self {
        Downstream {
            agent: agent.into(),
            error,
        }
    }

    /// The agent that failed.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// What the call ended in.
    pub fn error(&self) -> &ClientError<E> {
        &self.error
    }

    /// The failed agent as a hop: its name, and the code, reason and domain it failed with
    /// (or the local failure's code and reason: `UNREACHABLE`, `TIMEOUT`, `CIRCUIT_OPEN`, …).
    pub fn hop(&self) -> crate::wire::chain::Hop
    where
        E: A2aError + 'static,
    {
        self.error.first_hop(Some(&self.agent))
    }

    /// The client error, without the name.
    pub fn into_error(self) -> ClientError<E> {
        self.error
    }
}

impl<E: fmt::Debug> fmt::Debug for Downstream<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Downstream")
            .field("agent", &self.agent)
            .field("error", &self.error)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for Downstream<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent {}: {}", self.agent, self.error)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Downstream<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

// The agent's failure as its client passes it on, this agent's name added to the chain.
a2a_error_core::forward_a2a_error! {
    impl[E: A2aError + 'static] for Downstream<E>;
    inner = |this| this.error;
    write_data = |this, sink| this.error.write_downstream(Some(&this.agent), sink);
}

/// Never rebuilt from a received object: what arrives is the agent's own DOWNSTREAM_FAILED,
/// read as a [`ClientError`] whose [`RemoteError::chain`] names the hops.
impl<E> crate::wire::error::FromErrorObject for Downstream<E> {
    fn from_error_object(_: &crate::wire::object::ErrorObject) -> Option<Self> {
        None
    }

    fn code_for_reason(reason: &str) -> Option<i32> {
        (reason == "DOWNSTREAM_FAILED").then_some(crate::wire::code::DOWNSTREAM_FAILED)
    }
}
