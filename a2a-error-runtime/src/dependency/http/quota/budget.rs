//! [`CallerBudget`]: each caller's budget of a model's tokens in a window (say 10,000 tokens
//! in any minute), so that one busy caller cannot spend what the provider allows the whole
//! agent while the others wait.
//!
//! The caller is the one of the request being served (the SDK bridge's executors: the
//! credential's bytes however its scheme is spelled, or without one the peer's address); a
//! call made for no request is not counted. A call is admitted while what its caller used
//! in the window, with what its calls in flight were admitted with, is below the budget; it
//! is then counted at its estimate (see [`HttpDependencyBuilder::expected_output_tokens`]),
//! which the provider's `usage` replaces when the reply (or the stream's last event) brings
//! it (`total_tokens`, else the input's and the output's). A caller over its budget is
//! refused unsent ([`HttpFailure::OverBudget`](super::super::HttpFailure::OverBudget)),
//! passed on as `RATE_LIMITED` with the time until the window frees enough (at most the
//! window); other callers are served as before.
//!
//! The window is kept as [`SLOTS`] slots (5 s each for a minute): a caller's use is the
//! slots of the last window, so a token counts for between eleven and twelve twelfths of the
//! window after it was used. In process, at most [`MAX_CALLERS`] callers are kept, about
//! 11 MiB of resident memory when full (measured; `cargo test --release --lib rss_of_a_full_table
//! -- --ignored` prints it): past that, a caller whose use has left the window goes first,
//! then any (that caller starts again with its whole budget, never less). With
//! a [`SharedQuota`](super::SharedQuota) (feature `redis`) the budget is one for every
//! replica: one key a caller and slot, expiring with the window; one round trip when a call
//! is admitted (the slot's count and the window's read in one pipeline, 50 ms at most), the
//! usage written off the call's path. Redis slow or down: the replica goes on with its own
//! count of the caller.
//!
//! [`HttpDependencyBuilder::expected_output_tokens`]: crate::dependency::HttpDependencyBuilder::expected_output_tokens

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs `future` on behalf of `caller` (its credential as [`server::scope`] reads one, or any
/// text that names it): the model calls made inside it count against that caller's budgets
/// ([`CallerBudget`]). The SDK bridge does this for every request it serves (its scope: the
/// `Authorization` credential, or the peer's address without one); a server of your own, or
/// a job working for a caller, does it with this. The caller is kept as a hash of `caller`,
/// never its text.
///
/// [`server::scope`]: https://docs.rs/a2a-error/latest/a2a_error/server/scope/index.html
pub fn for_caller<F: std::future::Future>(
    caller: &str,
    future: F,
) -> impl std::future::Future<Output = F::Output> {
    let mut inherited = crate::inherited::current();
    inherited.caller = Some(caller_key(caller));
    crate::inherited::scope(inherited, future)
}

/// A caller's key: the hash the SDK bridge keys its scopes with (never 0, the anonymous key).
fn caller_key(caller: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(caller.as_bytes()).max(1)
}

/// How many slots a window is kept as.
pub const SLOTS: usize = 12;
/// The most callers a budget keeps in process.
pub const MAX_CALLERS: usize = 65_536;

/// A budget of model tokens for each caller, per window: give the same budget (or a clone:
/// clones share their counts) to every model a caller's tokens are counted across, or one to
/// each for a budget per model
/// ([`HttpDependencyBuilder::caller_budget`](crate::dependency::HttpDependencyBuilder::caller_budget)).
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use a2a_error::dependency::{CallerBudget, HttpDependency};
///
/// let budget = CallerBudget::per_minute(10_000);
/// let primary = HttpDependency::model("primary", "http://127.0.0.1:9000/v1")
///     .caller_budget(budget.clone())
///     .build()
///     .unwrap();
/// let fallback = HttpDependency::model("fallback", "http://127.0.0.1:9001/v1")
///     .caller_budget(budget) // one budget across both models
///     .build()
///     .unwrap();
/// # let _ = (primary, fallback);
/// ```
#[derive(Clone)]
pub struct CallerBudget {
    inner: Arc<Budget>,
}

impl std::fmt::Debug for CallerBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerBudget")
            .field("tokens", &self.inner.tokens)
            .field("window", &self.inner.window)
            .finish_non_exhaustive()
    }
}

struct Budget {
    tokens: u64,
    window: Duration,
    slot_ms: u64,
    /// The IETF `RateLimit-Policy` item a refusal names: `"tokens";q=N;w=S`.
    policy: Arc<str>,
    records: Mutex<Records>,
    #[cfg(feature = "redis")]
    shared: Option<super::SharedQuota>,
}

#[derive(Default)]
struct Records {
    by_caller: HashMap<u128, Record>,
    /// The slot in which the records were last cleared of callers out of the window.
    cleared: u64,
}

/// One caller's use: the tokens counted in each slot of the window, `newest` the latest slot
/// counted (slot `s` is at `counts[s % SLOTS]`).
#[derive(Clone, Copy, Default)]
struct Record {
    newest: u64,
    /// Four bytes a slot (a caller's tokens in a few seconds, saturating): the table's size
    /// is mostly these.
    counts: [u32; SLOTS],
}

impl Record {
    /// Moves the window on to `slot`: the slots that left it count nothing.
    fn advance(&mut self, slot: u64) {
        if slot <= self.newest {
            return;
        }
        let gap = (slot - self.newest).min(SLOTS as u64);
        for step in 1..=gap {
            self.counts[((self.newest + step) % SLOTS as u64) as usize] = 0;
        }
        self.newest = slot;
    }

    fn used(&self) -> u64 {
        self.counts.iter().map(|count| u64::from(*count)).sum()
    }

    /// The counts by slot, as [`frees_in`] reads them.
    fn wide(&self) -> [u64; SLOTS] {
        self.counts.map(u64::from)
    }

    /// Whether `slot` is still in the window.
    fn holds(&self, slot: u64) -> bool {
        slot <= self.newest && slot + SLOTS as u64 > self.newest
    }

    fn add(&mut self, slot: u64, tokens: u64) {
        if self.holds(slot) {
            let count = &mut self.counts[(slot % SLOTS as u64) as usize];
            *count = count.saturating_add(u32::try_from(tokens).unwrap_or(u32::MAX));
        }
    }

    fn remove(&mut self, slot: u64, tokens: u64) {
        if self.holds(slot) {
            let count = &mut self.counts[(slot % SLOTS as u64) as usize];
            *count = count.saturating_sub(u32::try_from(tokens).unwrap_or(u32::MAX));
        }
    }
}

/// The tokens counted in a window's slots.
fn used(counts: &[u64; SLOTS]) -> u64 {
    counts
        .iter()
        .fold(0u64, |sum, count| sum.saturating_add(*count))
}

/// How long until the window whose latest slot is `newest` (counts by slot as in [`Record`])
/// has used less than `limit`: the slots leave it oldest first. At most the window.
fn frees_in(newest: u64, counts: &[u64; SLOTS], limit: u64, slot_ms: u64, now_ms: u64) -> Duration {
    let mut used = used(counts);
    for age in (0..SLOTS as u64).rev() {
        let Some(slot) = newest.checked_sub(age) else {
            continue;
        };
        used = used.saturating_sub(counts[(slot % SLOTS as u64) as usize]);
        if used < limit {
            let leaves_ms = (slot + SLOTS as u64).saturating_mul(slot_ms);
            return Duration::from_millis(leaves_ms.saturating_sub(now_ms).max(1));
        }
    }
    Duration::from_millis(slot_ms.saturating_mul(SLOTS as u64))
}

fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

impl CallerBudget {
    /// `tokens` for each caller in any minute (at least 1), kept in this process.
    pub fn per_minute(tokens: u64) -> Self {
        CallerBudget::new(tokens, Duration::from_secs(60))
    }

    /// `tokens` for each caller in any `window` (at least 1 token; a window of 1.2 s to a
    /// day), kept in this process.
    pub fn new(tokens: u64, window: Duration) -> Self {
        let window = window.clamp(Duration::from_millis(1200), Duration::from_secs(86_400));
        let tokens = tokens.max(1);
        let slot_ms = (window.as_millis() as u64).div_ceil(SLOTS as u64);
        CallerBudget {
            inner: Arc::new(Budget {
                tokens,
                window,
                slot_ms,
                policy: Arc::from(format!(
                    "\"tokens\";q={tokens};w={}",
                    window.as_secs().max(1)
                )),
                records: Mutex::default(),
                #[cfg(feature = "redis")]
                shared: None,
            }),
        }
    }

    /// Keeps the counts in `store`'s Redis, one budget for every replica given the same
    /// (feature `redis`; keys `a2a-quota:budget:{caller}:{slot}` under the store's prefix,
    /// each expiring a slot after it leaves the window).
    #[cfg(feature = "redis")]
    pub fn shared(self, store: &super::SharedQuota) -> Self {
        let inner = &self.inner;
        CallerBudget {
            inner: Arc::new(Budget {
                tokens: inner.tokens,
                window: inner.window,
                slot_ms: inner.slot_ms,
                policy: Arc::clone(&inner.policy),
                records: Mutex::default(),
                shared: Some(store.clone()),
            }),
        }
    }

    /// Each caller's tokens in a window.
    pub fn tokens(&self) -> u64 {
        self.inner.tokens
    }

    /// The window.
    pub fn window(&self) -> Duration {
        self.inner.window
    }

    /// A call refused for its caller's budget, `frees_in` before the window frees enough.
    pub(crate) fn refusal(&self, frees_in: Duration) -> super::HttpFailure {
        // Whole seconds, rounded up (a caller told to wait never comes back early), within
        // the window.
        let whole = crate::wire::headers::whole_seconds_up(frees_in)
            .clamp(1, self.inner.window.as_secs().max(1));
        super::HttpFailure::OverBudget {
            retry_in: Duration::from_secs(whole),
            policy: Arc::clone(&self.inner.policy),
        }
    }

    /// Admits a call of `caller` estimated at `estimate` tokens by this replica's own count
    /// (counting it), or the time until the caller's window frees enough. With a shared
    /// budget, [`finish`](Self::finish) decides with the replicas' counts.
    pub(crate) fn begin(&self, caller: u128, estimate: u64) -> Result<Pending, Duration> {
        let budget = &*self.inner;
        let now = now_ms();
        let slot = now / budget.slot_ms;
        budget.take_local(caller, slot, now, estimate)?;
        Ok(Pending {
            caller,
            slot,
            now,
            estimate,
        })
    }

    /// What a shared budget reads and counts in Redis for `pending`, when it is shared.
    #[cfg(feature = "redis")]
    pub(crate) fn shared_read(
        &self,
        pending: &Pending,
    ) -> Option<(&super::SharedQuota, BudgetRead)> {
        let shared = self.inner.shared.as_ref()?;
        Some((
            shared,
            BudgetRead {
                caller: crate::wire::hex::string(&pending.caller.to_be_bytes()),
                slot: pending.slot,
                estimate: pending.estimate,
                ttl_ms: self.inner.ttl_ms(),
            },
        ))
    }

    /// The call `pending` admitted here, decided with what the replicas counted together
    /// (`counts`, by slot, this call's estimate included; `None`: not shared, or Redis did
    /// not answer, and this replica's own count stands).
    pub(crate) fn finish(
        &self,
        pending: Pending,
        counts: Option<[u64; SLOTS]>,
    ) -> Result<Charge, Duration> {
        let budget = &*self.inner;
        if let Some(mut counts) = counts {
            let own = &mut counts[(pending.slot % SLOTS as u64) as usize];
            *own = own.saturating_sub(pending.estimate);
            if used(&counts) >= budget.tokens {
                // Counted nowhere: the call is not made.
                #[cfg(feature = "redis")]
                if let Some(shared) = &budget.shared {
                    let key = crate::wire::hex::string(&pending.caller.to_be_bytes());
                    let slot = pending.slot;
                    shared.budget_settle(&key, slot, pending.estimate, slot, 0, budget.ttl_ms());
                }
                budget.settle_local(pending.caller, pending.slot, pending.estimate, 0);
                return Err(frees_in(
                    pending.slot,
                    &counts,
                    budget.tokens,
                    budget.slot_ms,
                    pending.now,
                ));
            }
        }
        Ok(Charge {
            budget: Arc::clone(&self.inner),
            caller: pending.caller,
            slot: pending.slot,
            estimate: pending.estimate,
        })
    }

    /// [`begin`](Self::begin) and [`finish`](Self::finish) with the shared counts read on
    /// their own.
    #[cfg(test)]
    pub(crate) async fn take(&self, caller: u128, estimate: u64) -> Result<Charge, Duration> {
        let pending = self.begin(caller, estimate)?;
        #[cfg(feature = "redis")]
        let counts = match self.shared_read(&pending) {
            Some((store, read)) => store.read(None, Some(&read)).await.1,
            None => None,
        };
        #[cfg(not(feature = "redis"))]
        let counts = None;
        self.finish(pending, counts)
    }
}

/// A call admitted by a replica's own count of its caller, before the replicas' counts are
/// read.
pub(crate) struct Pending {
    caller: u128,
    slot: u64,
    now: u64,
    estimate: u64,
}

/// What a shared budget reads and counts in Redis for one call: `estimate` counted in
/// `slot` of `caller` (its key's hex), the window's slots read.
#[cfg(feature = "redis")]
pub(crate) struct BudgetRead {
    pub(crate) caller: String,
    pub(crate) slot: u64,
    pub(crate) estimate: u64,
    pub(crate) ttl_ms: u64,
}

impl Budget {
    /// How long a slot's key is kept: until a slot after it left the window.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    fn ttl_ms(&self) -> u64 {
        self.slot_ms.saturating_mul(SLOTS as u64 + 1)
    }

    /// Admits (and counts) or refuses a call by this replica's own count.
    fn take_local(&self, caller: u128, slot: u64, now: u64, estimate: u64) -> Result<(), Duration> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if !records.by_caller.contains_key(&caller) && records.by_caller.len() >= MAX_CALLERS {
            records.make_room(slot);
        }
        let record = records.by_caller.entry(caller).or_default();
        record.advance(slot);
        if record.used() >= self.tokens {
            return Err(frees_in(
                record.newest,
                &record.wide(),
                self.tokens,
                self.slot_ms,
                now,
            ));
        }
        record.add(slot, estimate);
        Ok(())
    }

    /// A call admitted in `slot` at `estimate` used `used`, counted now.
    fn settle_local(&self, caller: u128, slot: u64, estimate: u64, used: u64) {
        let now = now_ms() / self.slot_ms;
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(record) = records.by_caller.get_mut(&caller) {
            record.advance(now);
            record.remove(slot, estimate);
            record.add(now, used);
        }
    }
}

impl Records {
    /// Room for one more caller: those whose use left the window go (once a slot at most:
    /// it walks every record), else any one.
    fn make_room(&mut self, slot: u64) {
        if self.cleared != slot {
            self.cleared = slot;
            self.by_caller
                .retain(|_, record| record.newest + SLOTS as u64 > slot);
        }
        if self.by_caller.len() >= MAX_CALLERS
            && let Some(any) = self.by_caller.keys().next().copied()
        {
            self.by_caller.remove(&any);
        }
    }
}

/// A call counted against its caller's budget at its estimate, until [`settle`](Self::settle)
/// replaces that with what it used (dropped unsettled, the estimate stays).
pub(crate) struct Charge {
    budget: Arc<Budget>,
    caller: u128,
    slot: u64,
    estimate: u64,
}

impl std::fmt::Debug for Charge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Charge")
            .field("slot", &self.slot)
            .field("estimate", &self.estimate)
            .finish_non_exhaustive()
    }
}

impl Charge {
    /// The call used `used` tokens.
    pub(crate) fn settle(self, used: u64) {
        if used == self.estimate {
            return;
        }
        let budget = &*self.budget;
        budget.settle_local(self.caller, self.slot, self.estimate, used);
        #[cfg(feature = "redis")]
        if let Some(shared) = &budget.shared {
            let key = crate::wire::hex::string(&self.caller.to_be_bytes());
            let now = now_ms() / budget.slot_ms;
            shared.budget_settle(&key, self.slot, self.estimate, now, used, budget.ttl_ms());
        }
    }

    /// What the call was admitted at.
    pub(crate) fn estimate(&self) -> u64 {
        self.estimate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_forgets_the_slots_that_left_it() {
        let mut record = Record::default();
        record.advance(100);
        record.add(100, 40);
        record.add(99, 1_000); // before the newest slot was counted from: still in the window
        record.advance(105);
        record.add(105, 10);
        assert_eq!(record.used(), 1_050);
        record.advance(111);
        assert_eq!(
            record.used(),
            50,
            "slot 99 left the window when slot 111 began"
        );
        record.advance(112);
        assert_eq!(record.used(), 10, "and slot 100 when slot 112 began");
        record.remove(105, 4);
        record.add(90, 7); // long gone: nothing
        assert_eq!(record.used(), 6);
        record.advance(1_000);
        assert_eq!(record.used(), 0);
    }

    #[test]
    fn a_caller_over_its_budget_is_told_when_the_window_frees_enough() {
        let slot_ms = 5_000;
        let mut counts = [0u64; SLOTS];
        // 600 used at slot 100, 500 at slot 104; the budget 1,000; now is 2 s into slot 110.
        counts[100 % SLOTS] = 600;
        counts[104 % SLOTS] = 500;
        let now = 110 * slot_ms + 2_000;
        // Slot 100 leaves the window when slot 112 begins: 500 left, under 1,000.
        assert_eq!(
            frees_in(110, &counts, 1_000, slot_ms, now),
            Duration::from_millis(112 * slot_ms - now)
        );
        // Under 500: slot 104 must go too, at slot 116.
        assert_eq!(
            frees_in(110, &counts, 500, slot_ms, now),
            Duration::from_millis(116 * slot_ms - now)
        );
        // Never more than the window.
        assert!(frees_in(110, &counts, 1, slot_ms, now) <= Duration::from_secs(60));
    }

    #[tokio::test]
    async fn callers_are_counted_apart_and_usage_replaces_the_estimate() {
        let budget = CallerBudget::per_minute(1_000);
        let (alice, bob) = (1u128, 2u128);
        let first = budget.take(alice, 600).await.expect("nothing used yet");
        let second = budget
            .take(alice, 600)
            .await
            .expect("600 in flight, under 1,000");
        let refused = budget.take(alice, 1).await.expect_err("1,200 in flight");
        assert!(refused <= Duration::from_secs(60) && refused > Duration::ZERO);
        // Another caller is served.
        budget
            .take(bob, 900)
            .await
            .expect("bob's own budget")
            .settle(900);
        // What the replies said they used replaces the estimates: 100 + 200.
        first.settle(100);
        second.settle(200);
        let third = budget.take(alice, 600).await.expect("300 used");
        third.settle(700);
        budget.take(alice, 1).await.expect_err("1,000 used");
        budget.take(bob, 1).await.expect("bob used 900");
    }

    #[tokio::test]
    async fn the_callers_kept_are_bounded() {
        let budget = CallerBudget::per_minute(10);
        for caller in 0..(MAX_CALLERS as u128 + 1_000) {
            budget.take(caller, 1).await.unwrap();
        }
        let kept = budget.inner.records.lock().unwrap().by_caller.len();
        assert_eq!(kept, MAX_CALLERS);
    }
}
/// The resident memory of a full table, alone in its process (other tests' allocations
/// would count): `--ignored`.
#[cfg(test)]
mod rss_probe {
    #[tokio::test]
    #[ignore = "measures the process's resident memory: run alone"]
    async fn rss_of_a_full_table() {
        fn rss_kib() -> u64 {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            statm
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<u64>()
                .unwrap()
                * 4
        }
        let before = rss_kib();
        let budget = super::CallerBudget::per_minute(10);
        for caller in 0..(super::MAX_CALLERS as u128 * 3) {
            budget.take(caller, 1).await.unwrap();
        }
        let grew = rss_kib() - before;
        eprintln!("RSS grew {grew} KiB");
        // The module's documentation says about 11 MiB.
        assert!(grew < 12 << 10, "{grew} KiB");
    }
}
