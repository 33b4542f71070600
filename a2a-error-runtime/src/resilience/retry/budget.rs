//! A retry budget with tower's `TpsBudget` semantics and a lock-free deposit.
//!
//! Every call deposits and every retry withdraws, so the deposit is on every call's success
//! path. `TpsBudget` takes a mutex and reads the clock on each deposit (~44 ns on the 2-core
//! CI machine, half of the retry layer's overhead). Here a deposit is one atomic add; the
//! clock is read, and the window rotated, on every 8th deposit and on every withdrawal.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use tower::retry::budget::Budget;

/// Deposits between two window rotations triggered by deposits.
const ROTATE_EVERY: isize = 8;
/// Slots of the sliding window, as in `TpsBudget`.
const SLOTS: usize = 10;

/// Retries allowed as a fraction of recent calls, plus a floor: the budget of gRPC's retry
/// throttling and Finagle's `RetryBudget`, with the semantics of tower's `TpsBudget`.
///
/// Over a sliding window of `ttl` (10 slots), a withdrawal succeeds while
/// `deposits × ratio + min_per_sec × ttl − withdrawals ≥ 1`, in `TpsBudget`'s integer units.
/// Two differences, both on the strict side:
/// - A deposit made just after a slot boundary may be counted in the slot before, so it
///   leaves the window up to one slot (`ttl / 10`) early. At most 7 deposits between two
///   rotations are affected; with few calls the floor dominates anyway.
/// - A withdrawal is checked and taken under one lock, so two retries at once cannot both
///   take the last unit (`TpsBudget` checks, then takes).
pub struct RetryBudget {
    // Deposits minus withdrawals since the last rotation, on its own line: the hot counter.
    writer: CacheLine<AtomicIsize>,
    generation: Mutex<Generation>,
    slots: [AtomicIsize; SLOTS],
    slot: Duration,
    reserve: isize,
    deposit_amount: isize,
    withdraw_amount: isize,
    ttl: Duration,
    min_per_sec: u32,
    ratio: f32,
}

#[repr(align(64))]
struct CacheLine<T>(T);

struct Generation {
    index: usize,
    time: Instant,
}

impl RetryBudget {
    /// A budget allowing `ratio` retries per call (0 to 1000) over a window of `ttl` (1 to 60
    /// s), plus `min_per_sec` retries a second whatever the traffic.
    ///
    /// # Panics
    /// As `TpsBudget::new`, when a value is out of its range.
    pub fn new(ttl: Duration, min_per_sec: u32, ratio: f32) -> Self {
        assert!(ttl >= Duration::from_secs(1) && ttl <= Duration::from_secs(60));
        assert!((0.0..=1000.0).contains(&ratio));
        assert!(min_per_sec < i32::MAX as u32);
        // TpsBudget's integer units: a withdrawal costs 1/ratio deposits.
        let (deposit_amount, withdraw_amount) = if ratio == 0.0 {
            (0, 1)
        } else if ratio <= 1.0 {
            (1, (1.0 / ratio) as isize)
        } else {
            (1000, (1000.0 / ratio) as isize)
        };
        let reserve = (min_per_sec as isize)
            .saturating_mul(ttl.as_secs() as isize)
            .saturating_mul(withdraw_amount);
        RetryBudget {
            writer: CacheLine(AtomicIsize::new(0)),
            generation: Mutex::new(Generation {
                index: 0,
                time: Instant::now(),
            }),
            slots: Default::default(),
            slot: ttl / SLOTS as u32,
            reserve,
            deposit_amount,
            withdraw_amount,
            ttl,
            min_per_sec,
            ratio,
        }
    }

    /// Moves the writer into the current slot and clears the slots that passed, if a slot's
    /// time has passed since the last rotation.
    fn rotate(&self, generation: &mut Generation, now: Instant) {
        let mut elapsed = now.saturating_duration_since(generation.time);
        if elapsed < self.slot {
            return;
        }
        let committed = self.writer.0.swap(0, Ordering::AcqRel);
        self.slots[generation.index].store(committed, Ordering::Release);
        let mut index = (generation.index + 1) % SLOTS;
        let mut cleared = 0;
        while elapsed > self.slot && cleared < SLOTS {
            self.slots[index].store(0, Ordering::Release);
            elapsed -= self.slot;
            index = (index + 1) % SLOTS;
            cleared += 1;
        }
        generation.index = index;
        generation.time = now;
    }

    fn balance(&self) -> isize {
        let slots = self
            .slots
            .iter()
            .map(|slot| slot.load(Ordering::Acquire))
            .fold(0, isize::saturating_add);
        self.writer
            .0
            .load(Ordering::Acquire)
            .saturating_add(slots)
            .saturating_add(self.reserve)
    }

    fn deposit_at(&self, now: impl FnOnce() -> Instant) {
        if self.deposit_amount == 0 {
            return;
        }
        let before = self
            .writer
            .0
            .fetch_add(self.deposit_amount, Ordering::AcqRel);
        if (before / self.deposit_amount).rem_euclid(ROTATE_EVERY) == 0 {
            // Whoever holds the lock is rotating already.
            if let Ok(mut generation) = self.generation.try_lock() {
                self.rotate(&mut generation, now());
            }
        }
    }

    fn withdraw_at(&self, now: Instant) -> bool {
        let mut generation = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        self.rotate(&mut generation, now);
        // Deposits only add while the lock is held, so the check stays true until the take.
        if self.balance() >= self.withdraw_amount {
            self.writer
                .0
                .fetch_sub(self.withdraw_amount, Ordering::AcqRel);
            true
        } else {
            false
        }
    }
}

impl Default for RetryBudget {
    /// 20 % of the calls of the last 10 s, plus 10 retries a second: `TpsBudget`'s default.
    fn default() -> Self {
        RetryBudget::new(Duration::from_secs(10), 10, 0.2)
    }
}

impl Budget for RetryBudget {
    fn deposit(&self) {
        self.deposit_at(Instant::now);
    }

    fn withdraw(&self) -> bool {
        self.withdraw_at(Instant::now())
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("ttl", &self.ttl)
            .field("min_per_sec", &self.min_per_sec)
            .field("ratio", &self.ratio)
            .field("balance", &self.balance())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use tower::retry::budget::TpsBudget;

    proptest! {
        /// Within one slot (no rotation), every decision is `TpsBudget`'s.
        #[test]
        fn decides_as_tps_budget(
            ops in prop::collection::vec(any::<bool>(), 0..3000),
            min_per_sec in 0u32..5,
            ratio in prop::sample::select(vec![0.0f32, 0.1, 0.2, 0.5, 1.0, 2.0]),
        ) {
            let ours = RetryBudget::new(Duration::from_secs(10), min_per_sec, ratio);
            let tower = TpsBudget::new(Duration::from_secs(10), min_per_sec, ratio);
            for (n, deposit) in ops.into_iter().enumerate() {
                if deposit {
                    ours.deposit();
                    tower.deposit();
                } else {
                    prop_assert_eq!(ours.withdraw(), tower.withdraw(), "op {}", n);
                }
            }
        }
    }

    #[test]
    fn deposits_leave_the_window_after_ttl() {
        let budget = RetryBudget::new(Duration::from_secs(10), 0, 0.5);
        let start = Instant::now();
        for _ in 0..100 {
            budget.deposit_at(|| start);
        }
        // Half a window later, the deposits still count: 50 retries, then none.
        let later = start + Duration::from_secs(5);
        assert_eq!((0..60).filter(|_| budget.withdraw_at(later)).count(), 50);
        // Refill, then let a whole window pass: nothing is left.
        for _ in 0..100 {
            budget.deposit_at(|| later);
        }
        assert!(budget.withdraw_at(later));
        let gone = later + Duration::from_secs(11);
        assert!(!budget.withdraw_at(gone));
    }

    #[test]
    fn the_floor_stays_when_deposits_expire() {
        // 2 a second over 10 s: 20 retries with no calls at all.
        let budget = RetryBudget::new(Duration::from_secs(10), 2, 0.2);
        let now = Instant::now() + Duration::from_secs(30);
        assert_eq!((0..30).filter(|_| budget.withdraw_at(now)).count(), 20);
    }

    #[test]
    fn a_deposit_is_never_counted_as_newer_than_it_is() {
        let budget = RetryBudget::new(Duration::from_secs(10), 0, 1.0);
        let start = Instant::now();
        // 7 deposits, then 9.5 s of silence: they are still in the window.
        for _ in 0..7 {
            budget.deposit_at(|| start);
        }
        let later = start + Duration::from_millis(9_500);
        assert!(budget.withdraw_at(later));
        // 10.5 s after them: gone, as in TpsBudget.
        let gone = start + Duration::from_millis(10_500);
        assert_eq!((0..10).filter(|_| budget.withdraw_at(gone)).count(), 0);
    }

    #[test]
    fn concurrent_deposits_and_withdrawals_never_overdraw() {
        let budget = Arc::new(RetryBudget::new(Duration::from_secs(60), 0, 0.25));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let budget = budget.clone();
                std::thread::spawn(move || {
                    let mut granted = 0;
                    for _ in 0..20_000 {
                        budget.deposit();
                        if budget.withdraw() {
                            granted += 1;
                        }
                    }
                    granted
                })
            })
            .collect();
        let granted: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        // 80,000 deposits at 4 per retry: 20,000 retries, never one more (the last few
        // deposits of each thread may find no withdrawal after them).
        assert!((19_990..=20_000).contains(&granted), "{granted}");
    }
}
