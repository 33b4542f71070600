//! `BreakerConfig`: when a circuit trips, how long it stays open, how it probes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::State;
use crate::resilience::clock::{Random, ThreadRandom};

/// How long a circuit stays open after a trip.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum BreakDuration {
    /// The same time after every trip.
    Fixed(Duration),
    /// `base × n` after the n-th trip in a row (a probe that fails is a trip again), capped at
    /// `max`, then spread by ± `jitter` (a fraction, 0.1 for ± 10 %) so that the clients of a
    /// failed agent do not all probe it at the same instant. Envoy's outlier ejection grows
    /// the same way (30 s × ejections, capped at 300 s).
    Growing {
        /// The time after the first trip.
        base: Duration,
        /// The longest time.
        max: Duration,
        /// The spread, a fraction in [0, 1].
        jitter: f64,
    },
}

impl BreakDuration {
    /// The break after trip number `trips` (from 1), given `r` uniform in [0, 1).
    pub(crate) fn after(&self, trips: u32, r: f64) -> Duration {
        match *self {
            BreakDuration::Fixed(duration) => duration,
            BreakDuration::Growing { base, max, jitter } => {
                let grown = base.saturating_mul(trips.max(1)).min(max);
                let jitter = jitter.clamp(0.0, 1.0);
                // 1 ± jitter, in integer per-mille so that huge durations cannot overflow f64
                // arithmetic into a panic.
                let factor = 1000.0 + jitter * 1000.0 * (2.0 * r - 1.0);
                let per_mille = factor.clamp(0.0, 2000.0) as u32;
                (grown / 1000).saturating_mul(per_mille)
            }
        }
    }
}

/// A change of a circuit's state, as passed to [`BreakerConfig::on_transition`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transition<'a> {
    /// The agent the circuit guards.
    pub agent: &'a str,
    /// The state it left.
    pub from: State,
    /// The state it entered.
    pub to: State,
}

type Hook = Arc<dyn Fn(&Transition<'_>) + Send + Sync>;

/// When a circuit trips and how it recovers. Every [`CircuitBreaker`](super::CircuitBreaker)
/// made from one config (a [`BreakerRegistry`](super::BreakerRegistry)) shares it.
///
/// # Defaults, and why
///
/// | setting | default | Polly v8 | resilience4j |
/// |---|---|---|---|
/// | consecutive failures | 5 | – | – |
/// | failure ratio | 0.5 | 0.1 | 50 % |
/// | sampling window | 30 s (10 buckets) | 30 s | 100 calls / 60 s |
/// | minimum throughput | 20 | 100 | 100 |
/// | break | 5 s × trips, ≤ 60 s, ± 10 % | 5 s fixed | 60 s fixed |
/// | half-open probes | 1 | 1 | 10 |
/// | an attempt cut by the call's deadline | a failure after 500 ms | a failure (timeout) | a failure (timeout) |
///
/// Agent calls are few and slow (an LLM behind each), unlike the HTTP services Polly's and
/// resilience4j's defaults are tuned for: 100 calls in 30 s may never come, so a ratio
/// trigger alone would never trip on a dead agent. Hence the consecutive trigger (5 failures
/// in a row: a dead agent is found within one or two calls with retries) next to a ratio
/// trigger with a small minimum throughput (20). The ratio is resilience4j's 50 %: agent
/// replies fail for content reasons more often than HTTP calls do, and a 10 % trip point
/// would open on a handful of slow LLM replies. The first break is Polly's 5 s; repeated
/// trips of an agent that stays down grow it (Envoy's rule) up to a minute, so a long outage
/// costs one probe a minute, not one every 5 s. One probe at a time, as in Polly: a sick
/// agent gets one request, not a burst.
///
/// A call cut by its own deadline (often inherited: our caller gave us one second) counts
/// against the agent once the attempt had run for 500 ms ([`deadline_counts_after`]). Polly,
/// resilience4j and Envoy's outlier detection count every timeout; not counting them at all
/// meant that an agent which accepts connections and never answers, called by a coordinator
/// whose own callers send a deadline, never opened its circuit (the attempt timeout, 30 s,
/// never fired first), and every call waited out its whole deadline. A cut after less than
/// 500 ms still counts as nothing: a caller that left us 50 ms says nothing about the agent.
///
/// [`deadline_counts_after`]: BreakerConfig::deadline_counts_after
#[derive(Clone)]
pub struct BreakerConfig {
    pub(crate) consecutive_failures: u32,
    pub(crate) failure_ratio: f64,
    pub(crate) sampling: Duration,
    pub(crate) buckets: u32,
    pub(crate) minimum_throughput: u32,
    pub(crate) break_duration: BreakDuration,
    pub(crate) half_open_probes: u32,
    pub(crate) slow_call: Option<Duration>,
    pub(crate) deadline_counts_after: Option<Duration>,
    pub(crate) count_rate_limits: bool,
    pub(crate) on_transition: Option<Hook>,
    pub(crate) random: Arc<dyn Random>,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            consecutive_failures: 5,
            failure_ratio: 0.5,
            sampling: Duration::from_secs(30),
            buckets: 10,
            minimum_throughput: 20,
            break_duration: BreakDuration::Growing {
                base: Duration::from_secs(5),
                max: Duration::from_secs(60),
                jitter: 0.1,
            },
            half_open_probes: 1,
            slow_call: None,
            deadline_counts_after: Some(Duration::from_millis(500)),
            count_rate_limits: true,
            on_transition: None,
            random: Arc::new(ThreadRandom),
        }
    }
}

impl fmt::Debug for BreakerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerConfig")
            .field("consecutive_failures", &self.consecutive_failures)
            .field("failure_ratio", &self.failure_ratio)
            .field("sampling", &self.sampling)
            .field("buckets", &self.buckets)
            .field("minimum_throughput", &self.minimum_throughput)
            .field("break_duration", &self.break_duration)
            .field("half_open_probes", &self.half_open_probes)
            .field("slow_call", &self.slow_call)
            .field("deadline_counts_after", &self.deadline_counts_after)
            .field("count_rate_limits", &self.count_rate_limits)
            .finish_non_exhaustive()
    }
}

impl BreakerConfig {
    /// The defaults (see the table above).
    pub fn new() -> Self {
        Self::default()
    }

    /// Trips after `failures` failures in a row (0: never on this trigger).
    pub fn consecutive_failures(mut self, failures: u32) -> Self {
        self.consecutive_failures = failures;
        self
    }

    /// Trips when at least `ratio` (0 < ratio ≤ 1) of the calls in the sampling window failed,
    /// once the window holds `minimum_throughput` calls.
    pub fn failure_ratio(mut self, ratio: f64, minimum_throughput: u32) -> Self {
        self.failure_ratio = ratio.clamp(f64::MIN_POSITIVE, 1.0);
        self.minimum_throughput = minimum_throughput.max(1);
        self
    }

    /// The rolling window the ratio is computed over, in `buckets` slices (at least 1): old
    /// samples leave it one slice at a time.
    pub fn sampling(mut self, window: Duration, buckets: u32) -> Self {
        self.sampling = window.max(Duration::from_millis(1));
        self.buckets = buckets.clamp(1, 1000);
        self
    }

    /// How long the circuit stays open after a trip.
    pub fn break_duration(mut self, duration: BreakDuration) -> Self {
        self.break_duration = duration;
        self
    }

    /// How many probes a half-open circuit lets through at once (at least 1).
    pub fn half_open_probes(mut self, probes: u32) -> Self {
        self.half_open_probes = probes.max(1);
        self
    }

    /// Counts a call that succeeded but took longer than `threshold` as a failure (off by
    /// default: it costs a clock read per call).
    pub fn slow_call(mut self, threshold: impl Into<Option<Duration>>) -> Self {
        self.slow_call = threshold.into();
        self
    }

    /// How long an attempt must have run for its call's deadline cutting it to count as a
    /// failure (default 500 ms; `None`: such a cut never counts). See the type's docs for why.
    pub fn deadline_counts_after(mut self, ran: impl Into<Option<Duration>>) -> Self {
        self.deadline_counts_after = ran.into();
        self
    }

    /// Whether rate limiting (429, RATE_LIMITED) counts as a failure (default: yes; either way
    /// it is counted on its own in the [`BreakerSnapshot`](super::BreakerSnapshot)).
    pub fn count_rate_limits(mut self, count: bool) -> Self {
        self.count_rate_limits = count;
        self
    }

    /// Called on every change of state, after it happened.
    pub fn on_transition(mut self, hook: impl Fn(&Transition<'_>) + Send + Sync + 'static) -> Self {
        self.on_transition = Some(Arc::new(hook));
        self
    }

    /// The random source of the break's jitter (tests inject a fixed one).
    pub fn random(mut self, random: impl Random) -> Self {
        self.random = Arc::new(random);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_breaks_are_capped_and_jittered_within_bounds() {
        let growing = BreakDuration::Growing {
            base: Duration::from_secs(5),
            max: Duration::from_secs(60),
            jitter: 0.1,
        };
        assert_eq!(growing.after(1, 0.5), Duration::from_secs(5));
        assert_eq!(growing.after(3, 0.5), Duration::from_secs(15));
        assert_eq!(growing.after(100, 0.5), Duration::from_secs(60));
        assert_eq!(growing.after(2, 0.0), Duration::from_secs(9));
        assert_eq!(growing.after(2, 0.999_999), Duration::from_millis(10_990));
        let huge = BreakDuration::Growing {
            base: Duration::MAX,
            max: Duration::MAX,
            jitter: 1.0,
        };
        assert!(huge.after(u32::MAX, 0.99) > Duration::from_secs(1));
    }
}
