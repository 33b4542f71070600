//! [`Request`]: what the resilience layers need of a request, whatever it is. A2A's [`Call`],
//! an HTTP dependency's `HttpCall` and any other operation
//! wrapped in an `Op` carry their time limit down the stack and say
//! what they are, so that one implementation of each layer serves them all.
//!
//! [`Call`]: super::Call

use std::time::Duration;

use tokio::time::Instant;

use crate::deadline::earliest;
use crate::observe::Callee;
use crate::resilience::breaker::CircuitBreaker;

/// What the resilience layers read of a request: its time limit, which travels down the
/// stack (a total timeout sets it, a retry never waits past it, an attempt timeout never
/// outlives it, a transport sends what is left of it on), what it is called for metrics and
/// retry safety, and whether the caller said it may be repeated.
pub trait Request: Clone {
    /// The request's deadline and unstarted budget.
    fn time_limit(&self) -> TimeLimit;

    /// Replaces the request's time limit (the layers only ever shorten it).
    fn set_time_limit(&mut self, limit: TimeLimit);

    /// The agent or dependency the request goes to, for metrics and logs.
    fn target(&self) -> Option<&str>;

    /// What the request does (an A2A method, `POST /chat/completions`, an operation's name):
    /// a retry policy's per-operation safety and hedging are looked up by it.
    fn operation(&self) -> &str;

    /// Whether the caller said this one request may be repeated after a failure that leaves
    /// open whether it ran (`Some(true)`), may not (`Some(false)`), or left it to the retry
    /// policy's per-operation table (`None`, the default).
    fn repeatable(&self) -> Option<bool> {
        None
    }

    /// What kind of callee the request goes to, which names its metrics (`a2a.client.*` for
    /// agents, `a2a.dependency.*` for the rest). Default: a dependency.
    fn callee(&self) -> Callee {
        Callee::Dependency
    }

    /// The circuit breaker of this request's own operation (one tool of an MCP server), which
    /// the breaker layer consults beside the callee's: an open circuit refuses the request,
    /// and a failure counts for the one the classifier's [`scope`](crate::resilience::classify::Classify::scope)
    /// names. Default: none, the callee's breaker alone.
    fn breaker(&self) -> Option<&CircuitBreaker> {
        None
    }
}

/// How long a request may take: a deadline, and a time budget whose clock has not started
/// yet. A first attempt sends the budget as it is, which spares a clock read on calls that
/// finish without waiting; a layer that has to wait turns it into a deadline
/// ([`deadline_from`](TimeLimit::deadline_from)).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeLimit {
    deadline: Option<Instant>,
    budget: Option<Duration>,
}

impl TimeLimit {
    /// No limit.
    pub const NONE: TimeLimit = TimeLimit {
        deadline: None,
        budget: None,
    };

    /// This limit, ending by `deadline` at the latest (an earlier deadline is kept).
    pub fn with_deadline(self, deadline: Instant) -> TimeLimit {
        TimeLimit {
            deadline: earliest(self.deadline, Some(deadline)),
            ..self
        }
    }

    /// This limit, with at most `budget` from the first send (a smaller budget is kept).
    pub fn with_budget(self, budget: Duration) -> TimeLimit {
        TimeLimit {
            budget: earliest(self.budget, Some(budget)),
            ..self
        }
    }

    /// The deadline of a request whose budget starts at `now`: the earlier of the two.
    pub fn deadline_from(self, now: Instant) -> Option<Instant> {
        let from_budget = self.budget.and_then(|budget| now.checked_add(budget));
        earliest(self.deadline, from_budget)
    }

    /// The budget's clock started at `now`: a deadline only from here on.
    pub fn started(self, now: Instant) -> TimeLimit {
        TimeLimit {
            deadline: self.deadline_from(now),
            budget: None,
        }
    }

    /// The deadline, if the clock has started or one was set.
    pub fn deadline(self) -> Option<Instant> {
        self.deadline
    }

    /// The time left: until the deadline, or the whole unstarted budget.
    pub fn time_left(self) -> Option<Duration> {
        let left = self
            .deadline
            .map(|deadline| deadline.saturating_duration_since(Instant::now()));
        earliest(left, self.budget)
    }
}

/// What metrics and logs name of `request`: its callee's kind and name, its operation.
pub(crate) fn observed(request: &impl Request) -> crate::observe::Target<'_> {
    crate::observe::Target {
        callee: request.callee(),
        name: request.target(),
        operation: request.operation(),
    }
}
