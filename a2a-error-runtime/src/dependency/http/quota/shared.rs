//! `SharedQuota`: a service's stated quota kept in Redis, so that every replica of an agent
//! sees what any of them learned from a reply before its next call.
//!
//! One hash a service, `{prefix}{name}`: what the last reply stated (each limit's remaining
//! count and the Unix milliseconds of its reset) and when it was stated, expiring at the last
//! reset (a day at most). A reply's statement is written on a task of its own, off the call's
//! path; a call reads the hash once before it is admitted, taking the statement when it is
//! newer than the replica's own, and counts itself in the replicas' calls in flight
//! (`{prefix}{name}:flight`, a sorted set of the calls by when they were admitted, each with
//! its tokens; a call a minute old is dropped, and the set expires a minute after its last
//! change): a replica's room is the statement less its own calls in flight and the others'
//! admitted after the statement was made (the provider counted the earlier ones in it). A
//! finished call is counted out with its replica's next read, or on its own shortly after. A caller's budget kept here (`budget`) is read and counted in
//! the same pipeline: one round trip a call for both. Redis slow or down: the read gives up
//! after 50 ms, and the replica goes on with its own view (logged once, counted in
//! `a2a.dependency.quota.shared_unavailable`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::budget::{BudgetRead, SLOTS};
use super::{MAX_RESET, Stated, Window};
use crate::http::BuildError;

/// The longest a call waits for the shared statement before going on with its own.
const READ_LIMIT: Duration = Duration::from_millis(50);
/// The longest a statement's write may take, on its own task.
const WRITE_LIMIT: Duration = Duration::from_millis(500);
/// How long the replicas' count of calls in flight outlives its last change: a replica that
/// died with calls in flight holds the others back no longer than this.
const FLIGHT_TTL: Duration = Duration::from_secs(60);

/// What the replicas share of a service's quota, as a call read it: the last statement and
/// when it was made, and the other replicas' calls in flight (each one's admission, in Unix
/// ms, and its tokens); and the call's own member there, once it is known to be counted.
#[derive(Debug, Default)]
pub(crate) struct Fleet {
    pub(crate) stated: Option<(Stated, SystemTime)>,
    pub(crate) flight: Option<Vec<(u64, u64)>>,
    pub(crate) member: Option<String>,
}

/// What a call reads of a service's quota: the service `name`, the call's `member` counted
/// in the replicas' calls in flight, this replica's finished calls counted out (`owed`), and
/// its mark (to leave its own calls out of the others').
pub(crate) struct FlightRead<'a> {
    pub(crate) name: &'a str,
    pub(crate) member: &'a str,
    pub(crate) owed: &'a [String],
    pub(crate) own: &'a super::Owed,
}

/// The most calls in flight read back: a bound on the reply, whatever the fleet holds.
const MAX_FLIGHT: usize = 1024;

/// Where the replicas of an agent keep the quotas their model providers state: a Redis (or
/// Valkey) they share. Give it to
/// [`HttpDependencyBuilder::shared_quota`](crate::dependency::HttpDependencyBuilder::shared_quota)
/// (feature `redis`).
#[derive(Clone)]
pub struct SharedQuota {
    connection: ConnectionManager,
    /// The store's URL, which tells two stores apart.
    url: Arc<str>,
    prefix: Arc<str>,
    warned: Arc<AtomicBool>,
}

impl std::fmt::Debug for SharedQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedQuota")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl SharedQuota {
    /// Connects to `url` (`redis://host:port/db`), lazily (and again when the connection
    /// drops); keys are prefixed `a2a-quota:`. Call it inside the tokio runtime that will use
    /// it.
    pub fn connect(url: &str) -> Result<Self, BuildError> {
        let invalid = |error: redis::RedisError| BuildError::InvalidUrl {
            url: url.to_owned(),
            reason: error.to_string(),
        };
        let client = crate::redis_connect::open(url).map_err(invalid)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(1)))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection =
            ConnectionManager::new_lazy_with_config(client, config).map_err(invalid)?;
        Ok(SharedQuota {
            connection,
            url: Arc::from(url),
            prefix: Arc::from("a2a-quota:"),
            warned: Arc::default(),
        })
    }

    /// Prefixes every key with `prefix` (agents sharing one Redis keep apart).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Arc::from(prefix.into());
        self
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Writes what a reply of service `name` stated at `at`, on a task of its own.
    pub(crate) fn publish(&self, name: &str, stated: Stated, at: SystemTime) {
        let key = self.key(name);
        let at_ms = unix_ms(at);
        let mut fields: Vec<(&str, u64)> = vec![("at", at_ms)];
        let mut expires = at_ms + 1000;
        for (remaining, until, window) in [("r", "ru", stated.requests), ("t", "tu", stated.tokens)]
        {
            let Some(window) = window else { continue };
            let reset = window.reset.unwrap_or(super::UNDATED).min(MAX_RESET);
            let until_ms = at_ms.saturating_add(millis(reset));
            fields.push((remaining, window.remaining));
            fields.push((until, until_ms));
            expires = expires.max(until_ms);
        }
        let mut pipe = redis::pipe();
        pipe.hset_multiple(&key, &fields)
            .ignore()
            .cmd("PEXPIREAT")
            .arg(&key)
            .arg(expires)
            .ignore();
        self.write_off_path(pipe);
    }

    /// What a call reads before it is admitted, in one pipelined round trip (50 ms at most):
    /// what the replicas last learned of service `quota` and when, and for a shared budget
    /// (`budget`) its estimate counted in its slot and the window's slots read back (by
    /// slot, as [`budget`](super::budget) keeps them). `(None, None)` when Redis did not
    /// answer in time; a statement is `None` too when none is kept.
    pub(crate) async fn read(
        &self,
        quota: Option<FlightRead<'_>>,
        budget: Option<&BudgetRead>,
    ) -> (Fleet, Option<[u64; SLOTS]>) {
        let mut pipe = redis::pipe();
        if let Some(read) = &quota {
            // This call counted in among the replicas' calls in flight (scored by when it was
            // admitted), this replica's finished ones and any a minute old counted out, then
            // the calls in flight and the statement.
            let flight = self.flight_key(read.name);
            let now = unix_ms(SystemTime::now());
            pipe.cmd("ZADD")
                .arg(&flight)
                .arg(now)
                .arg(read.member)
                .ignore();
            if !read.owed.is_empty() {
                pipe.cmd("ZREM").arg(&flight).arg(read.owed).ignore();
            }
            pipe.cmd("ZREMRANGEBYSCORE")
                .arg(&flight)
                .arg("-inf")
                .arg(now.saturating_sub(millis(FLIGHT_TTL)))
                .ignore()
                .cmd("PEXPIRE")
                .arg(&flight)
                .arg(millis(FLIGHT_TTL))
                .ignore()
                .cmd("ZRANGE")
                .arg(&flight)
                .arg(0)
                .arg(MAX_FLIGHT - 1)
                .arg("WITHSCORES")
                .cmd("HGETALL")
                .arg(self.key(read.name));
        }
        if let Some(budget) = budget {
            let key = self.budget_key(&budget.caller, budget.slot);
            let window: Vec<String> = (0..SLOTS as u64)
                .filter_map(|age| budget.slot.checked_sub(age))
                .map(|earlier| self.budget_key(&budget.caller, earlier))
                .collect();
            pipe.cmd("INCRBY")
                .arg(&key)
                .arg(budget.estimate)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(budget.ttl_ms)
                .ignore()
                .cmd("MGET")
                .arg(&window);
        }
        let mut connection = self.connection.clone();
        let read = tokio::time::timeout(
            READ_LIMIT,
            pipe.query_async::<Vec<redis::Value>>(&mut connection),
        )
        .await;
        let Ok(Ok(replies)) = read else {
            self.unavailable();
            return (Fleet::default(), None);
        };
        let mut replies = replies.into_iter();
        let fleet = match &quota {
            Some(read) => {
                let members: Vec<(String, f64)> = replies
                    .next()
                    .and_then(|reply| redis::from_redis_value(reply).ok())
                    .unwrap_or_default();
                let others = members
                    .iter()
                    .filter(|(member, _)| !read.own.is_own(member))
                    .filter_map(|(member, admitted)| {
                        let tokens = member.rsplit(':').next()?.parse::<u64>().ok()?;
                        Some((*admitted as u64, tokens))
                    })
                    .collect();
                Fleet {
                    stated: replies.next().and_then(statement),
                    flight: Some(others),
                    member: None,
                }
            }
            None => Fleet::default(),
        };
        let counts = budget.map(|budget| {
            let counts: Vec<Option<i64>> = replies
                .next()
                .and_then(|reply| redis::from_redis_value(reply).ok())
                .unwrap_or_default();
            let mut by_slot = [0u64; SLOTS];
            for (age, count) in counts.into_iter().enumerate() {
                let Some(earlier) = budget.slot.checked_sub(age as u64) else {
                    continue;
                };
                // A count a settlement wrote below zero (ahead of its charge) counts nothing.
                by_slot[(earlier % SLOTS as u64) as usize] = count.unwrap_or(0).max(0) as u64;
            }
            by_slot
        });
        (fleet, counts)
    }

    /// Calls of service `name` counted in flight (`owed`, their members) have their reply (or
    /// were not sent): counted out on a task of its own.
    pub(crate) fn flight_out(&self, name: &str, owed: Vec<String>) {
        let mut pipe = redis::pipe();
        pipe.cmd("ZREM")
            .arg(self.flight_key(name))
            .arg(&owed)
            .ignore();
        self.write_off_path(pipe);
    }

    fn flight_key(&self, name: &str) -> String {
        format!("{}{name}:flight", self.prefix)
    }

    /// Whether `other` keeps its state in the same Redis (its reads then go in one
    /// round trip with this one's).
    pub(crate) fn same_store(&self, other: &SharedQuota) -> bool {
        self.url == other.url
    }

    /// A call counted at `estimate` in slot `charged` used `used`, counted in slot `now`:
    /// written on a task of its own.
    pub(crate) fn budget_settle(
        &self,
        caller: &str,
        charged: u64,
        estimate: u64,
        now: u64,
        used: u64,
        ttl_ms: u64,
    ) {
        let (charged, now) = (
            self.budget_key(caller, charged),
            self.budget_key(caller, now),
        );
        let clamp = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
        let mut pipe = redis::pipe();
        // Each key written is given its expiry again: a key the settlement makes anew (its
        // count expired meanwhile) must not outlive the window either.
        pipe.cmd("DECRBY")
            .arg(&charged)
            .arg(clamp(estimate))
            .ignore()
            .cmd("PEXPIRE")
            .arg(&charged)
            .arg(ttl_ms)
            .ignore()
            .cmd("INCRBY")
            .arg(&now)
            .arg(clamp(used))
            .ignore()
            .cmd("PEXPIRE")
            .arg(&now)
            .arg(ttl_ms)
            .ignore();
        self.write_off_path(pipe);
    }

    fn budget_key(&self, caller: &str, slot: u64) -> String {
        format!("{}budget:{caller}:{slot}", self.prefix)
    }

    /// Sends `pipe` on a task of its own, off the call's path (500 ms at most; a failure is
    /// counted as Redis unavailable).
    fn write_off_path(&self, pipe: redis::Pipeline) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let this = self.clone();
        runtime.spawn(async move {
            let mut connection = this.connection.clone();
            let written =
                tokio::time::timeout(WRITE_LIMIT, pipe.query_async::<()>(&mut connection)).await;
            if !matches!(written, Ok(Ok(()))) {
                this.unavailable();
            }
        });
    }

    /// Redis did not answer: said once in the log, counted every time.
    fn unavailable(&self) {
        crate::observe::quota_shared_unavailable();
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "the shared quota store is unavailable; each replica goes on with its own view"
            );
        }
    }
}

/// A statement as [`SharedQuota::publish`] writes it (a hash's fields), and when it was made.
fn statement(reply: redis::Value) -> Option<(Stated, SystemTime)> {
    let fields: Vec<(String, u64)> = redis::from_redis_value(reply).ok()?;
    let get = |name: &str| fields.iter().find(|(key, _)| key == name).map(|(_, v)| *v);
    let at_ms = get("at")?;
    let at = UNIX_EPOCH + Duration::from_millis(at_ms);
    let window = |remaining: &str, until: &str| {
        let until_ms = get(until)?;
        Some(Window {
            remaining: get(remaining)?,
            reset: Some(Duration::from_millis(until_ms.saturating_sub(at_ms)).min(MAX_RESET)),
        })
    };
    let stated = Stated {
        requests: window("r", "ru"),
        tokens: window("t", "tu"),
    };
    (!stated.is_empty()).then_some((stated, at))
}

pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    millis(at.duration_since(UNIX_EPOCH).unwrap_or_default())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
