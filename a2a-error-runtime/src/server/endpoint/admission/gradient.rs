//! An adaptive limit on handlers running at once: Netflix's Gradient2 (concurrency-limits),
//! the limit following the ratio of the handlers' long-term average time to their recent
//! time.
//!
//! Why Gradient2 and not a controller of the minimum time (Envoy's gradient, Vegas): an
//! agent's handler time is mostly its model and tool calls, which vary by seconds from one
//! request to the next without any queueing here. A controller that compares recent time with
//! the fastest it has seen reads that variation as a queue and holds the limit at its floor;
//! one that compares it with its own long-term average reacts to what overload looks like (the
//! time rising as more handlers run) and leaves a steadily slow agent alone. And unlike AIMD,
//! it needs no target latency from the user, and shrinks before anything times out.
//!
//! Each window (at least [`MIN_SAMPLES`] handlers and [`MIN_WINDOW`], or [`MAX_WINDOW`])
//! gives the recent time (its mean); the long-term time is an average over about
//! [`LONG_WINDOWS`] windows. Then, unless fewer than half the limit ran (nothing to learn
//! while the agent is not busy):
//!
//! ```text
//! gradient = clamp(tolerance × long / recent, 0.5, 1)
//! limit    = 0.8 × limit + 0.2 × (limit × gradient + √limit)
//! ```
//!
//! so the limit grows by about √limit a window while time holds, and shrinks by up to a tenth
//! a window while it rises past `tolerance` times its norm.

use std::time::Duration;

use tokio::time::Instant;

/// The fewest handlers a window measures.
pub(crate) const MIN_SAMPLES: u32 = 10;
/// The shortest window.
pub(crate) const MIN_WINDOW: Duration = Duration::from_millis(50);
/// The longest window: past it, whatever was measured counts.
pub(crate) const MAX_WINDOW: Duration = Duration::from_secs(1);
/// About how many windows the long-term average covers.
pub(crate) const LONG_WINDOWS: f64 = 600.0;
/// How much of each new estimate the limit takes.
const SMOOTHING: f64 = 0.2;

/// An adaptive limit on handlers running at once, found from their measured time (see
/// `JsonRpc::adaptive_concurrency` and `GrpcLimits::adaptive`). The default starts at 20
/// handlers and stays between 4 and 1,000, tolerating recent time up to 1.5 times the norm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveLimit {
    initial: usize,
    min: usize,
    max: usize,
    /// In thousandths, so that a limit compares whole.
    tolerance_milli: u32,
}

impl Default for AdaptiveLimit {
    fn default() -> Self {
        AdaptiveLimit {
            initial: 20,
            min: 4,
            max: 1000,
            tolerance_milli: 1500,
        }
    }
}

impl AdaptiveLimit {
    /// The default: see [`AdaptiveLimit`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The limit to start with (default 20).
    pub fn initial(mut self, handlers: usize) -> Self {
        self.initial = handlers.max(1);
        self
    }

    /// The limit never goes below `handlers` (default 4, at least 1).
    pub fn min(mut self, handlers: usize) -> Self {
        self.min = handlers.max(1);
        self
    }

    /// The limit never goes above `handlers` (default 1,000).
    pub fn max(mut self, handlers: usize) -> Self {
        self.max = handlers.max(1);
        self
    }

    /// How much slower than their norm handlers may get before the limit shrinks (default
    /// 1.5; at least 1).
    pub fn tolerance(mut self, ratio: f64) -> Self {
        if ratio.is_finite() {
            // At most a thousandfold: past that, nothing would ever shrink it.
            self.tolerance_milli = (ratio.clamp(1.0, 1000.0) * 1000.0).round() as u32;
        }
        self
    }

    fn tolerance_ratio(&self) -> f64 {
        f64::from(self.tolerance_milli) / 1000.0
    }

    fn bounds(&self) -> (f64, f64) {
        let min = self.min.min(self.max) as f64;
        (min, self.max.max(self.min) as f64)
    }
}

/// The controller's state.
pub(crate) struct Gradient {
    config: AdaptiveLimit,
    limit: f64,
    /// The long-term average handler time, in microseconds, from the first window on.
    long: Option<f64>,
    window: Window,
}

/// What the current window has measured.
struct Window {
    started: Instant,
    samples: u32,
    total_micros: f64,
    most_running: usize,
}

impl Window {
    fn new(now: Instant) -> Self {
        Window {
            started: now,
            samples: 0,
            total_micros: 0.0,
            most_running: 0,
        }
    }
}

impl Gradient {
    pub(crate) fn new(config: AdaptiveLimit, now: Instant) -> Self {
        let (min, max) = config.bounds();
        Gradient {
            limit: (config.initial as f64).clamp(min, max),
            config,
            long: None,
            window: Window::new(now),
        }
    }

    /// The limit now.
    pub(crate) fn limit(&self) -> usize {
        self.limit.round() as usize
    }

    /// A handler took `took`, with `running` handlers admitted when it started (itself
    /// included); at the end of a window, the new limit.
    pub(crate) fn sample(&mut self, took: Duration, running: usize, now: Instant) -> Option<usize> {
        let window = &mut self.window;
        window.samples += 1;
        window.total_micros += took.as_secs_f64() * 1e6;
        window.most_running = window.most_running.max(running);
        let age = now.saturating_duration_since(window.started);
        if !(age >= MAX_WINDOW || (window.samples >= MIN_SAMPLES && age >= MIN_WINDOW)) {
            return None;
        }
        // At least a microsecond: a handler that takes no time must not divide by zero.
        let recent = (window.total_micros / f64::from(window.samples)).max(1.0);
        let busy = window.most_running as f64 >= self.limit / 2.0;
        self.window = Window::new(now);
        let mut long = match self.long {
            None => recent,
            Some(long) => long + (recent - long) / LONG_WINDOWS,
        };
        // Time fell well below its norm (a slow period has passed): the norm follows faster.
        if long / recent > 2.0 {
            long *= 0.95;
        }
        self.long = Some(long);
        if !busy {
            return None;
        }
        let gradient = (self.config.tolerance_ratio() * long / recent).clamp(0.5, 1.0);
        let estimate = self.limit * gradient + self.limit.sqrt();
        let (min, max) = self.config.bounds();
        self.limit = (self.limit * (1.0 - SMOOTHING) + estimate * SMOOTHING).clamp(min, max);
        Some(self.limit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs windows of `MIN_SAMPLES` handlers each taking `took`, with `running` admitted.
    fn windows(
        gradient: &mut Gradient,
        now: &mut Instant,
        count: usize,
        took: Duration,
        running: usize,
    ) {
        for _ in 0..count {
            for _ in 0..MIN_SAMPLES {
                *now += MIN_WINDOW / MIN_SAMPLES;
                gradient.sample(took, running, *now);
            }
        }
    }

    #[test]
    fn the_limit_grows_while_time_holds_and_stops_when_the_agent_is_not_busy() {
        let mut now = Instant::now();
        let mut gradient = Gradient::new(AdaptiveLimit::new(), now);
        let ms10 = Duration::from_millis(10);
        windows(&mut gradient, &mut now, 20, ms10, 20);
        let grown = gradient.limit();
        assert!(grown > 30, "{grown}");
        // Fewer than half the limit running: nothing changes.
        windows(&mut gradient, &mut now, 20, ms10, grown / 4);
        assert_eq!(gradient.limit(), grown);
    }

    #[test]
    fn the_limit_shrinks_to_its_floor_while_time_rises_and_comes_back() {
        let mut now = Instant::now();
        let config = AdaptiveLimit::new().initial(100).min(4).max(500);
        let mut gradient = Gradient::new(config, now);
        windows(&mut gradient, &mut now, 10, Duration::from_millis(10), 100);
        let before = gradient.limit();
        // Ten times slower: the limit falls, by at most a tenth a window. (Held for long,
        // the norm itself creeps towards the new time, and the limit with it.)
        let mut last = before;
        for _ in 0..25 {
            windows(&mut gradient, &mut now, 1, Duration::from_millis(100), last);
            let limit = gradient.limit();
            assert!(
                limit <= last && limit as f64 >= last as f64 * 0.89,
                "{last} -> {limit}"
            );
            last = limit;
        }
        assert!(last < before / 3, "{before} -> {last}");
        // Fast again: it grows back.
        windows(&mut gradient, &mut now, 40, Duration::from_millis(10), last);
        assert!(gradient.limit() > last, "{last} -> {}", gradient.limit());
    }

    #[test]
    fn a_steadily_slow_agent_keeps_its_limit() {
        // Handler times that vary a hundredfold but do not rise: never shed for that.
        let mut now = Instant::now();
        let mut gradient = Gradient::new(AdaptiveLimit::new().initial(50), now);
        let mut rng = 7u64;
        for _ in 0..200 {
            for _ in 0..MIN_SAMPLES {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let took = Duration::from_millis(10 + (rng >> 33) % 1000);
                now += MIN_WINDOW / MIN_SAMPLES;
                gradient.sample(took, gradient.limit(), now);
            }
        }
        assert!(gradient.limit() >= 50, "{}", gradient.limit());
    }

    #[test]
    fn bounds_and_hostile_settings_hold() {
        let now = Instant::now();
        let config = AdaptiveLimit::new()
            .initial(0)
            .min(0)
            .max(0)
            .tolerance(f64::NAN);
        let mut gradient = Gradient::new(config, now);
        assert_eq!(gradient.limit(), 1);
        for n in 1..100u32 {
            let took = if n % 2 == 0 {
                Duration::ZERO
            } else {
                Duration::MAX
            };
            gradient.sample(took, 1, now + MAX_WINDOW * n);
            assert_eq!(gradient.limit(), 1);
        }
    }
}
