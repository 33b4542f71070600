//! The records of [`RateLimiter::redis`](super::RateLimiter::redis): each caller's due time in
//! Redis, read and moved by one script, on Redis's clock.

use std::time::Duration;

use super::RateLimit;
use crate::server::dedup::RedisStore;

/// GCRA in one step (see the [module](super)), in microseconds on Redis's clock: `0` when
/// allowed, else the wait. The record expires when its caller's next request is due.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local due = tonumber(redis.call('GET', KEYS[1]) or now)
if due < now then due = now end
if due - now > tolerance then
  return due - tolerance - now
end
local next = due + interval
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', math.floor((next - now) / 1000) + 1)
return 0
";

pub(crate) struct Records {
    store: RedisStore,
    /// Before each caller's key: agents sharing one Redis keep apart.
    prefix: String,
    take: redis::Script,
}

impl Records {
    pub(crate) fn new(store: RedisStore, prefix: &str) -> Self {
        Records {
            store,
            prefix: prefix.to_owned(),
            take: redis::Script::new(TAKE),
        }
    }

    /// The same records' connection under another prefix.
    pub(crate) fn with_prefix(&self, prefix: String) -> Self {
        Records {
            store: self.store.clone(),
            prefix,
            take: self.take.clone(),
        }
    }

    /// Takes one request from `caller`'s allowance: `None` when allowed, else how long until
    /// it would be; `Err` when Redis did not answer in time.
    pub(crate) async fn take(
        &self,
        caller: &str,
        limit: &RateLimit,
    ) -> Result<Option<Duration>, ()> {
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let mut invocation = self.take.key(format!("{}{caller}", self.prefix));
        invocation
            .arg(micros(limit.interval))
            .arg(micros(limit.tolerance()));
        let mut connection = self.store.connection();
        match self
            .store
            .bounded(invocation.invoke_async::<i64>(&mut connection))
            .await
        {
            Ok(wait) if wait > 0 => Ok(Some(Duration::from_micros(wait.unsigned_abs()))),
            Ok(_) => Ok(None),
            Err(error) => {
                tracing::warn!("rate limit store unavailable: {error}");
                Err(())
            }
        }
    }
}
