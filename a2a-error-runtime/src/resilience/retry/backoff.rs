//! Exponential backoff and its jitter modes.

use std::time::Duration;

/// How the computed delay is spread, so that many clients failing together do not retry
/// together. `n` counts retries from 0; `cap(n) = min(max, base·2ⁿ)`; `r` is uniform in [0, 1).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// `r·cap(n)`: the spread that best avoids retry storms (the default).
    #[default]
    Full,
    /// `cap(n)/2 + r·cap(n)/2`: never less than half the exponential delay.
    Equal,
    /// `min(max, base + r·(3·previous − base))`: grows from the previous delay.
    Decorrelated,
    /// `cap(n)`: exact exponential delays.
    None,
    /// `cap(n) + r·cap(n)·p/100`: the exponential delay plus at most `p` percent of it, so
    /// that each delay is at most twice the one before (plus the jitter) and never shorter
    /// than the exponential one: webhooks' retries (Standard Webhooks).
    Added(u8),
}

/// Exponential backoff: base delay, cap and jitter.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    /// The delay before the first retry, before jitter.
    pub base: Duration,
    /// No computed delay is longer than this (applied after jitter).
    pub max: Duration,
    /// How the delay is spread.
    pub jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(250),
            max: Duration::from_secs(30),
            jitter: Jitter::Full,
        }
    }
}

impl Backoff {
    /// `min(max, base·2ⁿ)`, without overflow.
    pub fn cap(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max)
    }

    /// The delay before retry `n` (from 0), given the previous computed delay (for
    /// decorrelated jitter) and `r` in [0, 1).
    pub fn delay(&self, n: u32, previous: Duration, r: f64) -> Duration {
        let r = r.clamp(0.0, 1.0);
        let delay = match self.jitter {
            Jitter::None => self.cap(n),
            Jitter::Full => scale(self.cap(n), r),
            Jitter::Equal => {
                let half = self.cap(n) / 2;
                half.saturating_add(scale(half, r))
            }
            Jitter::Added(percent) => {
                let cap = self.cap(n);
                cap.saturating_add(scale(cap, r * f64::from(percent) / 100.0))
            }
            Jitter::Decorrelated => {
                let high = previous.max(self.base).saturating_mul(3);
                self.base
                    .saturating_add(scale(high.saturating_sub(self.base), r))
            }
        };
        delay.min(self.max)
    }
}

/// `d·r` for `r` in [0, 1], saturating: `Duration::mul_f64` panics when the product rounds past
/// `Duration::MAX`, which a user-set `max` of `Duration::MAX` can reach.
fn scale(d: Duration, r: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * r).map_or(d, |scaled| scaled.min(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn modes_at_the_edges_of_r() {
        let backoff = |jitter| Backoff {
            base: 100 * MS,
            max: 1000 * MS,
            jitter,
        };
        assert_eq!(backoff(Jitter::None).delay(3, MS, 0.5), 800 * MS);
        assert_eq!(backoff(Jitter::None).delay(4, MS, 0.5), 1000 * MS);
        assert_eq!(backoff(Jitter::Full).delay(2, MS, 0.0), Duration::ZERO);
        assert_eq!(backoff(Jitter::Full).delay(2, MS, 0.5), 200 * MS);
        assert_eq!(backoff(Jitter::Equal).delay(2, MS, 0.0), 200 * MS);
        assert_eq!(backoff(Jitter::Equal).delay(2, MS, 0.5), 300 * MS);
        assert_eq!(
            backoff(Jitter::Decorrelated).delay(0, 100 * MS, 0.5),
            200 * MS
        );
        // Clamped after jitter.
        assert_eq!(
            backoff(Jitter::Decorrelated).delay(0, 900 * MS, 0.9),
            1000 * MS
        );
        assert_eq!(backoff(Jitter::None).cap(200), 1000 * MS);
        assert_eq!(backoff(Jitter::Added(20)).delay(1, MS, 0.0), 200 * MS);
        assert_eq!(backoff(Jitter::Added(20)).delay(1, MS, 0.5), 220 * MS);
        // At most the cap, after jitter.
        assert_eq!(backoff(Jitter::Added(20)).delay(4, MS, 0.9), 1000 * MS);
    }

    #[test]
    fn extreme_settings_saturate_instead_of_panicking() {
        for jitter in [
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::None,
            Jitter::Added(200),
        ] {
            let backoff = Backoff {
                base: Duration::MAX,
                max: Duration::MAX,
                jitter,
            };
            for r in [0.0, 0.5, 0.999_999_999, 1.0] {
                assert!(backoff.delay(u32::MAX, Duration::MAX, r) <= Duration::MAX);
            }
        }
    }
}
