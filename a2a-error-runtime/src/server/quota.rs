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
//! Memory: one entry per caller with a request being served (at most the slots), 48 bytes
//! each.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::Mutex;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

/// The slots of one server, counted by caller.
#[derive(Debug)]
pub(crate) struct Quotas {
    /// Callers are kept as hashes under a key of this process's own, so that no caller can
    /// make its count another's.
    hasher: std::collections::hash_map::RandomState,
    held: Mutex<Held>,
    /// How many slots one caller may hold once three quarters are taken.
    quota: usize,
    /// Three quarters of the slots: below it, no quota is enforced.
    threshold: usize,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_caller: HashMap<u64, usize>,
}

impl Quotas {
    /// Quotas of `slots` slots, `quota` at most for one caller (at least 1).
    pub(crate) fn new(slots: usize, quota: usize) -> Arc<Self> {
        Arc::new(Quotas {
            hasher: std::collections::hash_map::RandomState::new(),
            held: Mutex::default(),
            quota: quota.max(1),
            threshold: slots - slots / 4,
        })
    }

    /// The caller of a request with `headers` from `peer`.
    pub(crate) fn caller(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> u64 {
        match headers.get(AUTHORIZATION) {
            Some(value) => self
                .hasher
                .hash_one((0u8, super::scope::credential(value.as_bytes()))),
            None => self.hasher.hash_one((1u8, peer)),
        }
    }

    /// A slot for `caller`, or `None` when it already holds its quota of scarce slots.
    pub(crate) fn take(self: &Arc<Self>, caller: u64) -> Option<Quota> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mine = held.by_caller.get(&caller).copied().unwrap_or(0);
        if held.total >= self.threshold && mine >= self.quota {
            crate::observe::shed();
            return None;
        }
        held.total += 1;
        *held.by_caller.entry(caller).or_insert(0) += 1;
        Some(Quota {
            quotas: Arc::clone(self),
            caller,
        })
    }
}

/// One slot taken by a caller, given back when dropped.
#[derive(Debug)]
pub(crate) struct Quota {
    quotas: Arc<Quotas>,
    caller: u64,
}

impl Drop for Quota {
    fn drop(&mut self) {
        let mut held = self
            .quotas
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        held.total -= 1;
        if let Some(mine) = held.by_caller.get_mut(&self.caller) {
            *mine -= 1;
            if *mine == 0 {
                held.by_caller.remove(&self.caller);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn as_caller(quotas: &Quotas, credential: Option<&str>) -> u64 {
        let mut headers = HeaderMap::new();
        if let Some(credential) = credential {
            headers.insert(AUTHORIZATION, HeaderValue::from_str(credential).unwrap());
        }
        quotas.caller(&headers, Some(IpAddr::from([127, 0, 0, 1])))
    }

    #[test]
    fn a_caller_past_its_quota_is_refused_only_while_slots_are_scarce() {
        let quotas = Quotas::new(8, 2);
        let greedy = as_caller(&quotas, Some("Bearer greedy"));
        // Below three quarters of the slots, a burst from one caller is served.
        let mut held: Vec<Quota> = (0..6).map(|_| quotas.take(greedy).unwrap()).collect();
        // Past that, it holds more than its quota: refused.
        assert!(quotas.take(greedy).is_none());
        // Another caller, anonymous or not, is served.
        let other = as_caller(&quotas, None);
        held.push(quotas.take(other).unwrap());
        held.push(quotas.take(other).unwrap());
        assert!(quotas.take(other).is_none());
        let third = as_caller(&quotas, Some("bearer  third"));
        held.push(quotas.take(third).unwrap());
        // One credential, however its scheme is spelled.
        assert_eq!(third, as_caller(&quotas, Some("BEARER third")));
        // Slots given back are the caller's again once the server is calm.
        held.clear();
        assert!(quotas.take(greedy).is_some());
        assert_eq!(quotas.held.lock().unwrap().total, 0);
        assert!(quotas.held.lock().unwrap().by_caller.is_empty());
    }
}
