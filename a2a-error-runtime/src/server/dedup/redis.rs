//! `RedisStore` (feature `redis`): replicas of one agent share claims and outcomes.
//!
//! The claim is one Lua script (read, and write only if nothing is there), so two replicas
//! can never both claim a key; finishing and releasing compare the claim first, so a replica
//! whose claim expired cannot overwrite the claim of the one that took over. Expiry is Redis's
//! own TTL (`PX`): a replica that dies mid-work leaves a claim that expires, and the client's
//! retry then runs the work once more. Every command is bounded by a timeout, so a Redis that
//! stops answering gives an error, never a hang.
//!
//! Outcomes are bounded in bytes, in total and per caller, as they weigh in Redis's own
//! memory (see [`RedisStore::max_bytes`]): the finishing script counts each outcome under its
//! caller (the scope part of its key) in the same step as it writes it, and makes room by
//! dropping the caller's oldest outcomes, then the oldest of all. Keys beside the records,
//! under the prefix `P`: `P#m` (each outcome's weight and caller), `P#all` and `P#s:{caller}`
//! (outcomes by when they finished), `P#bytes` and `P#sb:{caller}` (their weights); they
//! expire with the window, as the records do.

use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::run::caller_of;
use super::store::{DedupStore, StoreError, too_large};

/// Claims `KEYS[1]` for `ARGV[2]` ms unless it holds a record; returns the record, or nil.
const CLAIM: &str = r#"
local held = redis.call('GET', KEYS[1])
if held then return held end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"#;

/// Replaces the claim `ARGV[1]` by `ARGV[2]` for `ARGV[3]` ms, if it is still there, and
/// counts it: prefix `ARGV[4]`, its key after the prefix `ARGV[5]`, its caller `ARGV[6]`, its
/// weight `ARGV[7]`, the bounds in total `ARGV[8]` and per caller `ARGV[9]`. Outcomes past
/// the window are uncounted first (up to 64 a call), then the caller's oldest and the oldest
/// of all are dropped until the new one fits.
const FINISH: &str = r#"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local P, member, s, w = ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7])
local ttl = tonumber(ARGV[3])
local M, ALL, BYTES = P .. '#m', P .. '#all', P .. '#bytes'
local S, SB = P .. '#s:' .. s, P .. '#sb:' .. s
local function uncount(m)
  local held = redis.call('HGET', M, m)
  if not held then return end
  local mw, ms = string.match(held, '^(%d+) (.*)$')
  redis.call('HDEL', M, m)
  redis.call('ZREM', ALL, m)
  redis.call('DECRBY', BYTES, mw)
  redis.call('ZREM', P .. '#s:' .. ms, m)
  if redis.call('DECRBY', P .. '#sb:' .. ms, mw) <= 0 then redis.call('DEL', P .. '#sb:' .. ms) end
end
local function drop(m)
  local record = redis.call('GET', P .. m)
  if record and string.sub(record, 1, 1) == 'D' then redis.call('DEL', P .. m) end
  uncount(m)
end
local function room(set, counter, max)
  local n = 0
  while tonumber(redis.call('GET', counter) or '0') + w > max and n < 4096 do
    local oldest = redis.call('ZRANGE', set, 0, 0)
    if not oldest[1] then break end
    drop(oldest[1])
    n = n + 1
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', ALL, '-inf', now - ttl, 'LIMIT', 0, 64)) do
  uncount(m)
end
uncount(member)
room(S, SB, tonumber(ARGV[9]))
room(ALL, BYTES, tonumber(ARGV[8]))
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
redis.call('HSET', M, member, w .. ' ' .. s)
redis.call('ZADD', ALL, now, member)
redis.call('INCRBY', BYTES, w)
redis.call('ZADD', S, now, member)
redis.call('INCRBY', SB, w)
for _, k in ipairs({M, ALL, BYTES, S, SB}) do redis.call('PEXPIRE', k, ttl) end
return 1
"#;

/// Deletes the key if it still holds the claim `ARGV[1]`; returns 1 if it did, 0 if not.
const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0
"#;

/// How many orphaned claims are chased at once (see `release_orphan`); past it, an orphan
/// gets one release and then expires with its lease.
const MAX_ORPHANS: usize = 1024;

/// A store in Redis (or any server speaking its protocol), through redis-rs's tokio
/// connection manager, which reconnects on its own.
#[derive(Clone)]
pub struct RedisStore {
    connection: ConnectionManager,
    /// For connections of their own (subscriptions).
    #[cfg_attr(not(feature = "sdk"), allow(dead_code))]
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    max_bytes: u64,
    max_caller_bytes: u64,
    claim: redis::Script,
    finish: redis::Script,
    release: redis::Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("max_bytes", &self.max_bytes)
            .field("max_caller_bytes", &self.max_caller_bytes)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`). Keys are prefixed `a2a-dedup:`; every
    /// command times out after 1 s; outcomes are bounded to 256 MiB in total and 16 MiB a
    /// caller ([`max_bytes`](Self::max_bytes)). The connection is made lazily and remade when it drops;
    /// call this inside the tokio runtime that will use the store (its connection task runs
    /// there).
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let client = crate::redis_connect::open(url).map_err(store_error)?;
        let timeout = Duration::from_secs(1);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection =
            ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(store_error)?;
        Ok(RedisStore {
            connection,
            client,
            prefix: "a2a-dedup:".to_owned(),
            timeout,
            max_bytes: 256 << 20,
            max_caller_bytes: 16 << 20,
            claim: redis::Script::new(CLAIM),
            finish: redis::Script::new(FINISH),
            release: redis::Script::new(RELEASE),
        })
    }

    /// Prefixes every key with `prefix` (agents sharing one Redis keep apart).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Bounds every command (default 1 s): past it the command fails as unreachable.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// Bounds the outcomes kept to `total` bytes and each caller's (its scope, as
    /// [`Dedup::identify`](super::Dedup::identify) reads it; every anonymous caller is one)
    /// to `per_caller` (defaults 256 MiB and 16 MiB), as they weigh in Redis's own memory:
    /// an outcome weighs its bytes and a quarter (the allocator's rounding), three times its
    /// key (the indexes that count it) and 512 bytes. Past a bound the caller's outcomes that
    /// finished longest ago go first, then everyone's; a retry of a dropped one runs again.
    /// An outcome heavier than either bound is kept as a final CONTENT_TOO_LARGE, as the
    /// memory store does. Claims (33 bytes each, one per request in flight) are not counted.
    pub fn max_bytes(mut self, total: u64, per_caller: u64) -> Self {
        self.max_bytes = total;
        self.max_caller_bytes = per_caller;
        self
    }

    /// What the outcomes held now weigh, in bytes (see [`max_bytes`](Self::max_bytes)).
    pub async fn weighed_bytes(&self) -> Result<u64, StoreError> {
        let mut connection = self.connection.clone();
        let held: Option<u64> = self
            .bounded(
                redis::cmd("GET")
                    .arg(format!("{}#bytes", self.prefix))
                    .query_async(&mut connection),
            )
            .await?;
        Ok(held.unwrap_or(0))
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// The connection, for the rate limits kept beside the dedup's records.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// The client, for connections of their own (a subscription holds one).
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The timeout of every command.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn command_timeout(&self) -> Duration {
        self.timeout
    }

    /// `command`, bounded by the store's timeout.
    #[doc(hidden)]
    pub async fn bounded<T>(
        &self,
        command: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, command).await {
            Ok(result) => result.map_err(store_error),
            Err(_) => Err(StoreError(format!(
                "no answer within {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}

fn store_error(error: redis::RedisError) -> StoreError {
    StoreError(error.to_string())
}

/// What an outcome at `key` weighs in Redis's memory (see [`RedisStore::max_bytes`]).
fn weight(key: &str, outcome: &Bytes) -> u64 {
    let bytes = outcome.len() as u64;
    bytes + bytes / 4 + 3 * key.len() as u64 + 512
}

/// A duration as Redis's `PX` milliseconds: at least 1 (`PX 0` is an error), saturating.
#[doc(hidden)]
pub fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisStore {
    /// Deletes `key` if it still holds `claim`: whether it did.
    async fn release_claim(&self, key: &str, claim: &[u8]) -> Result<bool, StoreError> {
        let mut connection = self.connection.clone();
        let mut invocation = self.release.key(self.key(key));
        invocation.arg(claim);
        let released: i64 = self
            .bounded(invocation.invoke_async(&mut connection))
            .await?;
        Ok(released == 1)
    }

    /// A claim whose answer did not come in time may still run: a Redis that was stopped
    /// runs the queued command when it resumes, and its claim (a token nobody holds) would
    /// then make every retry of that message wait and get MESSAGE_IN_PROGRESS for the
    /// claim's whole lease, though nothing runs. So the claim is released, if it is still
    /// this token's, again and again (after 50 ms, then twice as long each time up to 2 s)
    /// until a release finds and removes it or the lease is over: one release queued behind
    /// the claim is not enough, since the connection manager reconnects after a timeout and
    /// the release then rides another connection, which Redis may serve first, or times out
    /// itself while Redis is still stopped. The caller was told the store is unavailable
    /// and nothing ran, so exactly-once holds.
    fn release_orphan(&self, key: &str, claim: &[u8], ttl: Duration) {
        static CHASED: std::sync::OnceLock<std::sync::Arc<tokio::sync::Semaphore>> =
            std::sync::OnceLock::new();
        let chased =
            CHASED.get_or_init(|| std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_ORPHANS)));
        let permit = std::sync::Arc::clone(chased).try_acquire_owned().ok();
        let store = self.clone();
        let (key, claim) = (key.to_owned(), claim.to_vec());
        tokio::spawn(async move {
            let _permit = &permit;
            let until = tokio::time::Instant::now() + ttl;
            let mut pause = Duration::from_millis(50);
            loop {
                let released = store.release_claim(&key, &claim).await;
                if matches!(released, Ok(true)) || permit.is_none() {
                    return;
                }
                if tokio::time::Instant::now() + pause >= until {
                    return;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        });
    }
}

impl DedupStore for RedisStore {
    fn claim<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let mut invocation = self.claim.key(self.key(key));
            invocation.arg(claim).arg(millis(ttl));
            let held = invocation.invoke_async::<Option<Vec<u8>>>(&mut connection);
            match self.bounded(held).await {
                Ok(held) => Ok(held.map(Bytes::from)),
                Err(error) => {
                    self.release_orphan(key, claim, ttl);
                    Err(error)
                }
            }
        })
    }

    fn finish<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
        outcome: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let limit = self.max_bytes.min(self.max_caller_bytes);
            let mut weighs = weight(key, &outcome);
            let outcome = if weighs <= limit {
                outcome
            } else {
                let kept = too_large(outcome, limit);
                weighs = weight(key, &kept);
                kept
            };
            let mut connection = self.connection.clone();
            let mut invocation = self.finish.key(self.key(key));
            invocation
                .arg(claim)
                .arg(outcome.as_ref())
                .arg(millis(ttl))
                .arg(&self.prefix)
                .arg(key)
                .arg(caller_of(key))
                .arg(weighs)
                .arg(self.max_bytes)
                .arg(self.max_caller_bytes);
            let _: i64 = self
                .bounded(invocation.invoke_async(&mut connection))
                .await?;
            Ok(())
        })
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        claim: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.release_claim(key, claim).await.map(|_| ()) })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let held: Option<Vec<u8>> = self
                .bounded(
                    redis::cmd("GET")
                        .arg(self.key(key))
                        .query_async(&mut connection),
                )
                .await?;
            Ok(held.map(Bytes::from))
        })
    }
}
