//! Circuit breakers: one per downstream agent, closed → open → half-open.
//!
//! A [`CircuitBreaker`] admits calls while closed, fails them fast while open, and lets a
//! bounded number of probes through once the break is over (half-open): a probe that
//! succeeds closes the circuit, one that fails opens it again for a longer break. Only
//! failures that say something about the agent's health count: the classifier's
//! `ClientError::health` decides which.
//!
//! The admission check of a closed circuit is one atomic load; nothing on the hot path takes
//! a lock, and breakers of different agents share nothing. [`CircuitBreakerLayer`] puts one
//! in a tower stack (each attempt is one sample); [`CircuitBreaker::call`] wraps any future;
//! a [`BreakerRegistry`] keeps one breaker per agent for every client that names it.

mod config;
mod layer;
mod registry;
mod window;

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

pub use config::{BreakDuration, BreakerConfig, Transition};
pub use layer::{BreakerFuture, CircuitBreakerLayer, CircuitBreakerService};
pub use registry::BreakerRegistry;
use window::Window;

use crate::resilience::classify::Outcome;

/// The state of a circuit.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls go through; outcomes are counted.
    Closed,
    /// Calls fail fast until the break is over.
    Open,
    /// The break is over: a bounded number of probes go through.
    HalfOpen,
    /// Opened by hand ([`CircuitBreaker::isolate`]); stays open until closed by hand.
    Isolated,
}

impl State {
    /// The name used in health replies and metrics: `closed`, `open`, `half-open`, `isolated`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half-open",
            State::Isolated => "isolated",
        }
    }

    /// The value of the `a2a.breaker.state` gauge: 0 closed, 1 half-open, 2 open, 3 isolated.
    pub fn gauge(self) -> f64 {
        match self {
            State::Closed => 0.0,
            State::HalfOpen => 1.0,
            State::Open => 2.0,
            State::Isolated => 3.0,
        }
    }

    fn from_u8(value: u8) -> State {
        match value {
            CLOSED => State::Closed,
            OPEN => State::Open,
            HALF_OPEN => State::HalfOpen,
            _ => State::Isolated,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            State::Closed => CLOSED,
            State::Open => OPEN,
            State::HalfOpen => HALF_OPEN,
            State::Isolated => ISOLATED,
        }
    }
}

impl serde::Serialize for State {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const CLOSED: u8 = 0;
const OPEN: u8 = 1;
const HALF_OPEN: u8 = 2;
const ISOLATED: u8 = 3;

/// A call refused because the circuit is open: when it half-opens.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("circuit open: the agent is not called for another {retry_after:?}")]
pub struct CircuitOpen {
    /// The time until the circuit half-opens (zero when isolated by hand with no end known,
    /// or when its probes are all taken and one may free up any moment).
    pub retry_after: Duration,
}

/// A read-only view of a circuit, for health endpoints.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BreakerSnapshot {
    /// The state.
    pub state: State,
    /// Failures in a row (closed).
    pub consecutive_failures: u32,
    /// Successes in the sampling window.
    pub successes: u32,
    /// Failures in the sampling window.
    pub failures: u32,
    /// Refusals for load seen since the breaker was made.
    pub rate_limited: u64,
    /// Calls refused while open.
    pub rejected: u64,
    /// Trips in a row without a successful probe.
    pub trips: u32,
    /// The time until an open circuit half-opens.
    pub time_to_half_open: Option<Duration>,
}

/// For health endpoints: `{"state": "half-open", "consecutiveFailures": 0, …,
/// "timeToHalfOpenMs": 1500}` (camelCase, as A2A's JSON; the delay in whole milliseconds, or
/// `null`).
impl serde::Serialize for BreakerSnapshot {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut snapshot = serializer.serialize_struct("BreakerSnapshot", 8)?;
        snapshot.serialize_field("state", &self.state)?;
        snapshot.serialize_field("consecutiveFailures", &self.consecutive_failures)?;
        snapshot.serialize_field("successes", &self.successes)?;
        snapshot.serialize_field("failures", &self.failures)?;
        snapshot.serialize_field("rateLimited", &self.rate_limited)?;
        snapshot.serialize_field("rejected", &self.rejected)?;
        snapshot.serialize_field("trips", &self.trips)?;
        let millis = self
            .time_to_half_open
            .map(|left| u64::try_from(left.as_millis()).unwrap_or(u64::MAX));
        snapshot.serialize_field("timeToHalfOpenMs", &millis)?;
        snapshot.end()
    }
}

/// The breaker of one agent. Clones share the circuit.
#[derive(Clone)]
pub struct CircuitBreaker {
    core: Arc<Core>,
}

struct Core {
    agent: Arc<str>,
    config: Arc<BreakerConfig>,
    epoch: Instant,
    state: AtomicU8,
    // Nanoseconds since `epoch` when an open circuit half-opens.
    open_until: AtomicU64,
    consecutive: AtomicU32,
    probes: AtomicU32,
    trips: AtomicU32,
    rate_limited: AtomicU64,
    rejected: AtomicU64,
    window: Window,
    // Serializes changes of state (rare); admission and recording never take it.
    transitions: Mutex<()>,
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("agent", &self.core.agent)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// A call admitted by a breaker: report its outcome with [`record`](Permit::record). A
/// permit dropped unreported (the caller went away) counts as nothing, and a half-open
/// probe's slot is given back.
#[must_use = "report the call's outcome with `record`"]
pub struct Permit {
    core: Arc<Core>,
    probe: bool,
    started: Instant,
    done: bool,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("probe", &self.probe)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// Reports the outcome of the admitted call.
    pub fn record(mut self, outcome: Outcome) {
        self.done = true;
        let config = &self.core.config;
        let ran = || self.started.elapsed();
        let outcome = match outcome {
            Outcome::Success if config.slow_call.is_some_and(|limit| ran() > limit) => {
                Outcome::Failure
            }
            Outcome::DeadlineCut => match config.deadline_counts_after {
                Some(limit) if ran() >= limit => Outcome::Failure,
                _ => Outcome::Ignored,
            },
            outcome => outcome,
        };
        self.core.record(outcome, self.probe);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.done && self.probe {
            self.core.probes.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl CircuitBreaker {
    /// A breaker for `agent` (its name in metrics, logs and health replies).
    pub fn new(agent: impl Into<Arc<str>>, config: BreakerConfig) -> Self {
        Self::with_shared_config(agent.into(), Arc::new(config))
    }

    pub(crate) fn with_shared_config(agent: Arc<str>, config: Arc<BreakerConfig>) -> Self {
        let window = Window::new(nanos(config.sampling), config.buckets);
        let breaker = CircuitBreaker {
            core: Arc::new(Core {
                agent,
                config,
                epoch: Instant::now(),
                state: AtomicU8::new(CLOSED),
                open_until: AtomicU64::new(0),
                consecutive: AtomicU32::new(0),
                probes: AtomicU32::new(0),
                trips: AtomicU32::new(0),
                rate_limited: AtomicU64::new(0),
                rejected: AtomicU64::new(0),
                window,
                transitions: Mutex::new(()),
            }),
        };
        crate::observe::breaker_state(&breaker.core.agent, State::Closed.gauge());
        breaker
    }

    /// The agent this breaker guards.
    pub fn agent(&self) -> &str {
        &self.core.agent
    }

    /// The current state. An open circuit whose break is over half-opens here, as the next
    /// call would make it, so that a health endpoint and the `a2a.breaker.state` gauge (and
    /// the transition event) never disagree.
    pub fn state(&self) -> State {
        let core = &self.core;
        if core.state.load(Ordering::Acquire) == OPEN
            && core.time_to_half_open(core.now()).is_none()
        {
            core.transition_if(OPEN, State::HalfOpen);
        }
        State::from_u8(core.state.load(Ordering::Acquire))
    }

    /// Asks to make a call: a [`Permit`] to report its outcome to, or the time until the
    /// circuit half-opens.
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit, CircuitOpen> {
        if self.core.state.load(Ordering::Acquire) == CLOSED {
            return Ok(Core::permit(&self.core, false));
        }
        self.core.admit_slow(&self.core)
    }

    /// Runs `call` if the circuit admits it, reporting what `classify` makes of its result.
    /// If the future is dropped before it finishes, nothing is counted.
    pub async fn call<T, E, F>(
        &self,
        call: F,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<Result<T, E>, CircuitOpen>
    where
        F: Future<Output = Result<T, E>>,
    {
        let permit = self.try_acquire()?;
        let result = call.await;
        permit.record(classify(&result));
        Ok(result)
    }

    /// Counts `outcome` for a call whose permit was already reported: a stream that opened
    /// (a success then) and failed later, which says the callee is not healthy after all.
    pub(crate) fn record_late(&self, outcome: Outcome) {
        self.core.record(outcome, false);
    }

    /// Opens the circuit by hand until [`close`](Self::close) (maintenance, a bad deploy).
    pub fn isolate(&self) {
        self.core.transition(State::Isolated, None);
    }

    /// Closes the circuit by hand, forgetting its counts.
    pub fn close(&self) {
        self.core.transition(State::Closed, None);
    }

    /// The counts and state, for a health endpoint.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let core = &self.core;
        let now = core.now();
        let totals = core.window.totals(now);
        let state = self.state();
        BreakerSnapshot {
            state,
            consecutive_failures: core.consecutive.load(Ordering::Relaxed),
            successes: totals.successes,
            failures: totals.failures,
            rate_limited: core.rate_limited.load(Ordering::Relaxed),
            rejected: core.rejected.load(Ordering::Relaxed),
            trips: core.trips.load(Ordering::Relaxed),
            time_to_half_open: match state {
                State::Open => core.time_to_half_open(now),
                _ => None,
            },
        }
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Core {
    /// A permit for an admitted call (a probe's slot already taken). It notes when the call
    /// started: how long an attempt ran decides whether a deadline's cut counts.
    fn permit(this: &Arc<Core>, probe: bool) -> Permit {
        Permit {
            core: this.clone(),
            probe,
            started: Instant::now(),
            done: false,
        }
    }

    fn now(&self) -> u64 {
        nanos(Instant::now().saturating_duration_since(self.epoch))
    }

    fn time_to_half_open(&self, now: u64) -> Option<Duration> {
        let until = self.open_until.load(Ordering::Acquire);
        (now < until).then(|| Duration::from_nanos(until - now))
    }

    /// Admission when the circuit is not closed.
    #[cold]
    fn admit_slow(&self, this: &Arc<Core>) -> Result<Permit, CircuitOpen> {
        loop {
            match self.state.load(Ordering::Acquire) {
                CLOSED => return Ok(Core::permit(this, false)),
                OPEN => {
                    let now = self.now();
                    if let Some(left) = self.time_to_half_open(now) {
                        return Err(self.reject(left));
                    }
                    // The break is over: the first to notice half-opens the circuit.
                    self.transition_if(OPEN, State::HalfOpen);
                }
                HALF_OPEN => {
                    let probes = &self.probes;
                    let mut taken = probes.load(Ordering::Acquire);
                    loop {
                        if taken >= self.config.half_open_probes {
                            return Err(self.reject(Duration::ZERO));
                        }
                        match probes.compare_exchange_weak(
                            taken,
                            taken + 1,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => break,
                            Err(now) => taken = now,
                        }
                    }
                    // The circuit may have changed under us (a probe closed it): then this is
                    // an ordinary call and the slot goes back.
                    if self.state.load(Ordering::Acquire) != HALF_OPEN {
                        probes.fetch_sub(1, Ordering::AcqRel);
                        continue;
                    }
                    return Ok(Core::permit(this, true));
                }
                _ => return Err(self.reject(Duration::ZERO)),
            }
        }
    }

    fn reject(&self, retry_after: Duration) -> CircuitOpen {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        crate::observe::breaker_rejected(&self.agent);
        tracing::debug!(
            agent = &*self.agent,
            retry_after_ms = retry_after.as_millis() as u64,
            "call rejected: circuit open"
        );
        CircuitOpen { retry_after }
    }

    fn record(&self, outcome: Outcome, probe: bool) {
        let failed = match outcome {
            Outcome::Ignored | Outcome::DeadlineCut => {
                if probe {
                    self.probes.fetch_sub(1, Ordering::AcqRel);
                }
                return;
            }
            Outcome::Success => false,
            Outcome::Failure => true,
            Outcome::RateLimited => {
                self.rate_limited.fetch_add(1, Ordering::Relaxed);
                self.config.count_rate_limits
            }
        };
        if probe {
            self.probes.fetch_sub(1, Ordering::AcqRel);
            if failed {
                self.transition_if(HALF_OPEN, State::Open);
            } else {
                self.transition_if(HALF_OPEN, State::Closed);
            }
            return;
        }
        let now = self.now();
        self.window.record(now, failed);
        if !failed {
            // Only write the shared line when there is something to reset.
            if self.consecutive.load(Ordering::Relaxed) != 0 {
                self.consecutive.store(0, Ordering::Relaxed);
            }
            return;
        }
        let consecutive = self.consecutive.fetch_add(1, Ordering::Relaxed) + 1;
        let config = &self.config;
        let by_count =
            config.consecutive_failures != 0 && consecutive >= config.consecutive_failures;
        let by_ratio = || {
            let totals = self.window.totals(now);
            let total = totals.successes + totals.failures;
            total >= config.minimum_throughput
                && f64::from(totals.failures) >= config.failure_ratio * f64::from(total)
        };
        if by_count || by_ratio() {
            self.transition_if(CLOSED, State::Open);
        }
    }

    /// Moves from `from` to `to` if the circuit is still in `from`.
    fn transition_if(&self, from: u8, to: State) {
        self.transition(to, Some(from));
    }

    /// Moves to `to` (from anything, or only from `from`), under the transition lock.
    fn transition(&self, to: State, from: Option<u8>) {
        let guard = self.transitions.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.state.load(Ordering::Acquire);
        if from.is_some_and(|from| from != current) || current == to.to_u8() {
            return;
        }
        match to {
            State::Open => {
                let trips = self.trips.fetch_add(1, Ordering::Relaxed).saturating_add(1);
                let duration = self
                    .config
                    .break_duration
                    .after(trips, self.config.random.next_f64());
                let until = self.now().saturating_add(nanos(duration));
                self.open_until.store(until, Ordering::Release);
            }
            State::Closed => {
                self.trips.store(0, Ordering::Relaxed);
                self.consecutive.store(0, Ordering::Relaxed);
                self.window.clear();
            }
            State::HalfOpen | State::Isolated => {}
        }
        self.state.store(to.to_u8(), Ordering::Release);
        drop(guard);
        let from = State::from_u8(current);
        crate::observe::breaker_transition(&self.agent, from.as_str(), to.as_str(), to.gauge());
        tracing::info!(
            agent = &*self.agent,
            from = from.as_str(),
            to = to.as_str(),
            "circuit breaker transition"
        );
        if let Some(hook) = &self.config.on_transition {
            hook(&Transition {
                agent: &self.agent,
                from,
                to,
            });
        }
    }
}

#[cfg(test)]
mod tests;
