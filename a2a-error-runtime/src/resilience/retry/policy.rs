//! `RetryPolicy`: when to try again, how long to wait, and how much time a call may take.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tower::retry::budget::Budget;

use super::RetryBudget;
use super::backoff::{Backoff, Jitter};
use crate::resilience::classify::Classify;
use crate::resilience::clock::{Clock, Random, SystemClock, ThreadRandom};
use crate::resilience::request::Request;
use crate::wire::method;

/// Whether a method may be sent again after a failure that leaves open whether the peer ran it
/// (a lost reply, an attempt timeout, a 502 from a proxy).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RetrySafety {
    /// Repeating it does no harm: reads, cancels, and `SendMessage`, whose every attempt
    /// carries the same `messageId` for the server to deduplicate.
    Safe,
    /// Retried only when the peer provably did not run it (no connection, 429/503, an error
    /// reply that says to retry).
    Unsafe,
}

type Predicate<F> = Arc<dyn Fn(&F) -> bool + Send + Sync>;
type Hook<F> = Arc<dyn Fn(u32, &F, Duration) + Send + Sync>;

/// The longest delay a peer may ask for and still be waited for, by default.
const DEFAULT_MAX_SERVER_DELAY: Duration = Duration::from_secs(300);

/// The retry policy of a client or a dependency; `F` is the error type of the service it
/// retries (`ClientError` for calls to agents, an
/// `HttpError`, a `Failure`),
/// read through its [`Classify`] impl.
///
/// Defaults: 4 attempts; full-jitter backoff from 250 ms capped at 30 s; a retry budget of 20 % of calls (plus 10 retries a second) shared
/// by every clone of the policy; the server's requested delay (`Retry-After`, RetryInfo,
/// legacy `retryAfter`) wins over the computed one, up to 5 minutes
/// ([`max_server_delay`](Self::max_server_delay)).
pub struct RetryPolicy<F> {
    max_attempts: u32,
    backoff: Backoff,
    max_server_delay: Duration,
    /// Whether a longer server delay is waited for `max_server_delay` (else refused).
    cap_server_delay: bool,
    budget: Arc<dyn Budget + Send + Sync>,
    retry_if: Option<Predicate<F>>,
    on_retry: Option<Hook<F>>,
    methods: HashMap<Cow<'static, str>, RetrySafety>,
    other_methods: RetrySafety,
    clock: Arc<dyn Clock>,
    random: Arc<dyn Random>,
}

impl<F> Clone for RetryPolicy<F> {
    fn clone(&self) -> Self {
        RetryPolicy {
            max_attempts: self.max_attempts,
            backoff: self.backoff,
            max_server_delay: self.max_server_delay,
            cap_server_delay: self.cap_server_delay,
            budget: self.budget.clone(),
            retry_if: self.retry_if.clone(),
            on_retry: self.on_retry.clone(),
            methods: self.methods.clone(),
            other_methods: self.other_methods,
            clock: self.clock.clone(),
            random: self.random.clone(),
        }
    }
}

impl<F> fmt::Debug for RetryPolicy<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("max_server_delay", &self.max_server_delay)
            .field("methods", &self.methods)
            .field("other_methods", &self.other_methods)
            .finish_non_exhaustive()
    }
}

impl<F> Default for RetryPolicy<F> {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            backoff: Backoff::default(),
            max_server_delay: DEFAULT_MAX_SERVER_DELAY,
            cap_server_delay: false,
            budget: Arc::new(RetryBudget::default()),
            retry_if: None,
            on_retry: None,
            // The A2A methods safe to repeat; the others fall to `other_methods`.
            methods: method::names(|m| m.safe)
                .map(|name| (Cow::Borrowed(name), RetrySafety::Safe))
                .collect(),
            other_methods: RetrySafety::Unsafe,
            clock: Arc::new(SystemClock),
            random: Arc::new(ThreadRandom),
        }
    }
}

impl<F> RetryPolicy<F> {
    /// The default policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// One attempt, no retries.
    pub fn none() -> Self {
        Self::default().max_attempts(1)
    }

    /// At most `attempts` attempts in all (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The delay before the first retry, before jitter.
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.backoff.base = delay;
        self
    }

    /// The longest computed delay (a server's own delay has its own cap,
    /// [`max_server_delay`](Self::max_server_delay)).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.backoff.max = delay;
        self
    }

    /// The jitter mode.
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.backoff.jitter = jitter;
        self
    }

    /// The longest delay a peer may ask for (`Retry-After`, RetryInfo, legacy `retryAfter`)
    /// and still be waited for (default 5 minutes). A peer asking for more ends the call at
    /// once with its error, which carries the delay it asked for, just as a delay that would
    /// end past the call's deadline does. This holds without any deadline too, so a hostile
    /// `Retry-After: 999999999` cannot park a call for 31 years.
    pub fn max_server_delay(mut self, limit: Duration) -> Self {
        self.max_server_delay = limit;
        self
    }

    /// Waits a longer delay asked for by a peer for [`max_server_delay`](Self::max_server_delay)
    /// instead of ending the call (webhooks' senders cap a receiver's `Retry-After`; default:
    /// the call ends).
    pub fn cap_server_delay(mut self, cap: bool) -> Self {
        self.cap_server_delay = cap;
        self
    }

    /// The retry budget, shared with every other policy holding the same `Arc`
    /// ([`RetryBudget`], tower's `TpsBudget`, or any `Budget`). Every call deposits; every
    /// retry withdraws. The default is `RetryBudget::default()`: 20 % of the calls of the last
    /// 10 s, plus 10 retries a second.
    pub fn budget(mut self, budget: Arc<dyn Budget + Send + Sync>) -> Self {
        self.budget = budget;
        self
    }

    /// Replaces the built-in classification: `predicate` says which errors are retried.
    pub fn retry_if(mut self, predicate: impl Fn(&F) -> bool + Send + Sync + 'static) -> Self {
        self.retry_if = Some(Arc::new(predicate));
        self
    }

    /// Called before each wait with the number of the attempt that failed (from 1), its error
    /// and the delay before the next attempt.
    pub fn on_retry(mut self, hook: impl Fn(u32, &F, Duration) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(hook));
        self
    }

    /// Marks `method` (an A2A method, or a dependency call's [`operation`](Request::operation))
    /// as safe or unsafe to repeat. A request that says so itself
    /// ([`Request::repeatable`]) wins over this table.
    pub fn method(mut self, method: impl Into<Cow<'static, str>>, safety: RetrySafety) -> Self {
        self.methods.insert(method.into(), safety);
        self
    }

    /// The safety of methods not marked (default: unsafe).
    pub fn other_methods(mut self, safety: RetrySafety) -> Self {
        self.other_methods = safety;
        self
    }

    /// The clock (tests inject a fixed wall clock for HTTP-date `Retry-After`).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The random source of jitter (tests inject a seeded one).
    pub fn random(mut self, random: impl Random) -> Self {
        self.random = Arc::new(random);
        self
    }

    pub(crate) fn backoff(&self) -> &Backoff {
        &self.backoff
    }

    /// Whether `method` may be repeated after an ambiguous failure.
    pub fn safety(&self, method: &str) -> RetrySafety {
        self.methods
            .get(method)
            .copied()
            .unwrap_or(self.other_methods)
    }

    pub(crate) fn clock_ref(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The retry budget, to share with a hedge layer ([`HedgeConfig::budget`](crate::resilience::hedge::HedgeConfig::budget)).
    pub fn shared_budget(&self) -> Arc<dyn Budget + Send + Sync> {
        self.budget.clone()
    }

    pub(crate) fn deposit(&self) {
        self.budget.deposit();
    }

    pub(crate) fn notify(&self, attempt: u32, error: &F, delay: Duration) {
        if let Some(hook) = &self.on_retry {
            hook(attempt, error, delay);
        }
    }
}

impl<F: Classify> RetryPolicy<F> {
    /// Whether `error` from `request` may be retried, ignoring attempts, time and budget: the
    /// predicate (or the error's own classification, which never waits for an open circuit),
    /// then whether the request may be repeated (its own statement, else the table's).
    pub fn is_retryable(&self, request: &impl Request, error: &F) -> bool {
        self.is_retryable_at(request, error, self.clock.wall())
    }

    fn is_retryable_at(&self, request: &impl Request, error: &F, now: SystemTime) -> bool {
        let retryable = match &self.retry_if {
            Some(predicate) => predicate(error),
            None => error.retry_advice_at(now).is_retryable() && !error.is_local_refusal(),
        };
        let safe = match request.repeatable() {
            Some(repeatable) => repeatable,
            None => self.safety(request.operation()) == RetrySafety::Safe,
        };
        retryable && (safe || !error.may_have_run())
    }

    /// The wait before attempt `attempt + 1`, or `None` to stop now with `error`. `previous`
    /// is the last computed delay (decorrelated jitter grows from it). The budget is
    /// withdrawn from only when a retry is granted.
    pub(crate) fn next_delay(
        &self,
        request: &impl Request,
        error: &F,
        attempt: u32,
        previous: &mut Duration,
    ) -> Option<Wait> {
        let now = self.clock.wall();
        if attempt >= self.max_attempts || !self.is_retryable_at(request, error, now) {
            return None;
        }
        let wait = match error.delay_at(now) {
            Some(delay) if delay > self.max_server_delay && !self.cap_server_delay => return None,
            Some(delay) if delay > self.max_server_delay => Wait {
                delay: self.max_server_delay,
                source: DelaySource::Peer,
            },
            Some(delay) => Wait {
                delay,
                source: DelaySource::Peer,
            },
            None => {
                let r = self.random.next_f64();
                *previous = self.backoff.delay(attempt - 1, *previous, r);
                Wait {
                    delay: *previous,
                    source: DelaySource::Backoff,
                }
            }
        };
        if let Some(deadline) = request.time_limit().deadline()
            && self
                .clock
                .now()
                .checked_add(wait.delay)
                .is_none_or(|end| end >= deadline)
        {
            return None;
        }
        if self.budget.withdraw() {
            Some(wait)
        } else {
            crate::observe::retry_budget_exhausted(crate::resilience::request::observed(request));
            None
        }
    }
}

/// A granted retry: how long to wait, and whose delay it is.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Wait {
    pub(crate) delay: Duration,
    pub(crate) source: DelaySource,
}

/// Where a retry's delay came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum DelaySource {
    /// The peer asked for it (Retry-After, RetryInfo, legacy `retryAfter`).
    Peer,
    /// The policy's backoff.
    Backoff,
}

impl DelaySource {
    /// The `delay.source` field of the `retrying` event.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DelaySource::Peer => "retry-after",
            DelaySource::Backoff => "backoff",
        }
    }
}
