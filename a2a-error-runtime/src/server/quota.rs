//! [`Quotas`]: no caller takes more than its quota of a server's slots while they are
//! scarce.
//!
//! A cap on connections or calls in flight protects the process, not its callers: one caller
//! that opens streams and never reads them (800 SSE streams, measured before this module)
//! takes every slot, and every other caller waits. So each request counts against its
//! caller, as long as it is served (a stream until it ends): the caller is its credential
//! ([`scope::credential`](super::scope::credential): one credential however its scheme is
//! spelled), or its address when it sends none. While fewer than three quarters of the slots
//! are taken, nobody is refused for its quota (a burst from one caller is served as before,
//! and a sole caller can use three quarters of the server); past that, a caller already
//! holding its quota is refused at once, so that the last quarter stays for the others.
//!
//! Callers are counted in a fixed table of `COUNTERS` counters, a caller's by a hash under
//! a key of this process's own (no caller can aim at another's counter): 16 KiB a server
//! whatever its callers, no allocation and no lock per request (two atomic additions, and a
//! hash of the address, or of the credential when there is one). Two callers that share a
//! counter share a quota; with the table's 4,096 counters a given caller shares with a hog
//! one time in 4,096, and only while slots are scarce does it matter.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

/// How many counters callers are counted in: `2^COUNTER_BITS`.
const COUNTERS: usize = 1 << COUNTER_BITS;
const COUNTER_BITS: u32 = 12;

/// The slots of one server, counted by caller.
#[derive(Debug)]
#[doc(hidden)]
pub struct Quotas {
    /// Keys the credentials' hashes.
    hasher: std::collections::hash_map::RandomState,
    /// Keys the addresses' hashes (cheaper than hashing them with `hasher`).
    key: u64,
    counts: Box<[AtomicU32]>,
    total: AtomicUsize,
    /// How many slots one caller may hold once three quarters are taken.
    quota: u32,
    /// Three quarters of the slots: below it, no quota is enforced.
    threshold: usize,
}

impl Quotas {
    /// Quotas of `slots` slots, `quota` at most for one caller (at least 1; by default a
    /// quarter of the slots).
    #[doc(hidden)]
    pub fn new(slots: usize, quota: Option<usize>) -> Arc<Self> {
        let quota = quota.unwrap_or(slots / 4).max(1);
        let hasher = std::collections::hash_map::RandomState::new();
        Arc::new(Quotas {
            key: hasher.hash_one(0x5eed_u64) | 1,
            hasher,
            counts: (0..COUNTERS).map(|_| AtomicU32::new(0)).collect(),
            total: AtomicUsize::new(0),
            quota: u32::try_from(quota).unwrap_or(u32::MAX),
            threshold: slots - slots / 4,
        })
    }

    /// The counter of the caller of a request with `headers` from `peer`.
    #[doc(hidden)]
    pub fn caller(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> usize {
        let hash = match (headers.get(AUTHORIZATION), peer) {
            (Some(value), _) => self
                .hasher
                .hash_one(super::scope::credential(value.as_bytes())),
            (None, Some(peer)) => {
                let bits = match peer {
                    IpAddr::V4(v4) => u128::from(v4.to_bits()),
                    IpAddr::V6(v6) => v6.to_bits(),
                };
                // Keyed: without the key no address can be chosen to land on another's
                // counter.
                bits as u64 ^ (bits >> 64) as u64 ^ self.key
            }
            (None, None) => 0,
        };
        // Fibonacci hashing: the product's top bits, which every bit of the hash moves
        // (neighbouring addresses land far apart).
        (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - COUNTER_BITS)) as usize
    }

    /// A slot for `caller`, or `None` when it already holds its quota of scarce slots.
    #[doc(hidden)]
    pub fn take(self: &Arc<Self>, caller: usize) -> Option<Quota> {
        let total = self.total.fetch_add(1, Ordering::AcqRel);
        let mine = self.counts[caller].fetch_add(1, Ordering::AcqRel);
        if total >= self.threshold && mine >= self.quota {
            self.give_back(caller);
            crate::observe::shed();
            return None;
        }
        Some(Quota {
            quotas: Arc::clone(self),
            caller,
        })
    }

    fn give_back(&self, caller: usize) {
        self.counts[caller].fetch_sub(1, Ordering::AcqRel);
        self.total.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a caller past its quota is told, on every binding: RATE_LIMITED, back in a second.
#[doc(hidden)]
pub fn refusal() -> crate::wire::standard::StandardError {
    crate::wire::standard::StandardError::RateLimited {
        retry_after: Some(std::time::Duration::from_secs(1)),
    }
}

/// One slot taken by a caller, given back when dropped.
#[derive(Debug)]
#[doc(hidden)]
pub struct Quota {
    quotas: Arc<Quotas>,
    caller: usize,
}

impl Drop for Quota {
    fn drop(&mut self) {
        self.quotas.give_back(self.caller);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn as_caller(quotas: &Quotas, credential: Option<&str>) -> usize {
        let mut headers = HeaderMap::new();
        if let Some(credential) = credential {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(credential).unwrap());
        }
        quotas.caller(&headers, Some(IpAddr::from([127, 0, 0, 1])))
    }

    /// Quotas of 8 slots, 2 a caller, whose three callers below have counters of their own
    /// (this process's keys could, one time in a few thousand, give two of them one).
    fn quotas() -> (Arc<Quotas>, [usize; 3]) {
        loop {
            let quotas = Quotas::new(8, Some(2));
            let callers = [
                as_caller(&quotas, Some("Bearer greedy")),
                as_caller(&quotas, None),
                as_caller(&quotas, Some("bearer  third")),
            ];
            if callers[0] != callers[1] && callers[1] != callers[2] && callers[0] != callers[2] {
                return (quotas, callers);
            }
        }
    }

    #[test]
    fn a_caller_past_its_quota_is_refused_only_while_slots_are_scarce() {
        let (quotas, [greedy, other, third]) = quotas();
        // Below three quarters of the slots, a burst from one caller is served.
        let mut held: Vec<Quota> = (0..6).map(|_| quotas.take(greedy).unwrap()).collect();
        // Past that, it holds more than its quota: refused.
        assert!(quotas.take(greedy).is_none());
        // Another caller, anonymous or not, is served up to its quota.
        held.push(quotas.take(other).unwrap());
        held.push(quotas.take(other).unwrap());
        assert!(quotas.take(other).is_none());
        held.push(quotas.take(third).unwrap());
        // One credential, however its scheme is spelled.
        assert_eq!(third, as_caller(&quotas, Some("BEARER third")));
        // Slots given back are the caller's again once the server is calm.
        held.clear();
        assert!(quotas.take(greedy).is_some());
        assert_eq!(quotas.total.load(Ordering::Relaxed), 0);
        assert!(
            quotas
                .counts
                .iter()
                .all(|count| count.load(Ordering::Relaxed) == 0)
        );
    }

    #[test]
    fn addresses_spread_over_the_counters() {
        let quotas = Quotas::new(8, Some(2));
        let counters: std::collections::HashSet<usize> = (0..=255u8)
            .map(|last| quotas.caller(&HeaderMap::new(), Some(IpAddr::from([10, 0, 0, last]))))
            .collect();
        // 256 addresses in 4,096 counters: a handful may share, not many.
        assert!(counters.len() > 240, "{}", counters.len());
    }
}
