//! The push outbox in Redis, beside the tasks: each lane (one task's notifications to one
//! config) a list, claimed by one replica under a lease; a replica that dies leaves its
//! lanes to the others once the lease lapses. Every change is one script.
//!
//! Keys, under the tasks' prefix `P`:
//! - `P q:{lane}`: the lane's pending notifications (JSON), oldest first;
//! - `P due`: every lane with notifications, scored by when it may be claimed (now for a
//!   lane nobody holds, the lease's end for a claimed one);
//! - `P own:{lane}`: the replica holding the lane's claim;
//! - `P ages`: every pending notification's id, scored by its event's time (the oldest);
//! - `P pn`, `P pb`: how many notifications are pending, and their bytes;
//! - `P cn:{caller}`, `P cb:{caller}`: the same for one caller's (its scope key in hex, empty
//!   for the anonymous caller), removed when it has none;
//! - `P ended:{task}`: set (for a day) once the task's terminal event was queued;
//! - `P dead`: the dead letters (JSON), at most 1,000, oldest first.

use std::sync::Arc;
use std::time::Duration;

use a2a::A2AError;

use super::{RedisTaskStore, now_ms};
use crate::push::{
    ClaimLost, Entry, MAX_DEAD_BYTES, MAX_DEAD_LETTERS, MAX_PENDING, MAX_PENDING_BYTES,
    MAX_PENDING_BYTES_PER_CALLER, MAX_PENDING_PER_CALLER, MAX_PER_LANE, Outbox,
};

/// The outbox's scripts.
#[derive(Clone)]
pub(super) struct OutboxScripts {
    add: redis::Script,
    claim: redis::Script,
    renew: redis::Script,
    end: redis::Script,
    drop_lane: redis::Script,
    replay: redis::Script,
}

impl OutboxScripts {
    pub(super) fn new() -> Self {
        OutboxScripts {
            add: script(ADD),
            claim: script(CLAIM),
            renew: script(RENEW),
            end: script(END),
            drop_lane: script(DROP),
            replay: script(REPLAY),
        }
    }
}

/// Shared by the scripts: keeping a dead letter within the bounds (`ARGV[1]` the prefix),
/// and a caller's pending count as its notifications leave.
const PRELUDE: &str = r"
local P = ARGV[1]
local function left(caller, weight)
  if redis.call('DECR', P .. 'cn:' .. caller) <= 0 then
    redis.call('DEL', P .. 'cn:' .. caller, P .. 'cb:' .. caller)
  else
    redis.call('DECRBY', P .. 'cb:' .. caller, weight)
  end
end
local function bury(json, reason, max_dead, max_bytes)
  local letter = cjson.encode({j = json, r = reason})
  redis.call('RPUSH', P .. 'dead', letter)
  redis.call('INCRBY', P .. 'db', string.len(letter))
  while redis.call('LLEN', P .. 'dead') > max_dead
    or tonumber(redis.call('GET', P .. 'db') or '0') > max_bytes do
    local old = redis.call('LPOP', P .. 'dead')
    if not old then break end
    redis.call('DECRBY', P .. 'db', string.len(old))
  end
end
";

fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{PRELUDE}{body}"))
}

/// `ARGV`: prefix, task (`''`: a replay, whatever the task's end), terminal (0/1), now, per
/// lane, pending max, bytes max, dead max, dead bytes max, a caller's share (count, bytes),
/// then (lane, id, weight, caller, json) for each entry. Returns how many became dead
/// letters, or -1 when the task had ended. A caller past its share is taken only while the
/// outbox is less than half full (see `MAX_PENDING_PER_CALLER`).
const ADD: &str = r"
local task = ARGV[2]
local ended = P .. 'ended:' .. task
if task ~= '' and redis.call('EXISTS', ended) == 1 then return -1 end
if ARGV[3] == '1' then redis.call('SET', ended, '1', 'PX', 86400000) end
local now, per_lane, max_n, max_b = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local max_dead, max_db = tonumber(ARGV[8]), tonumber(ARGV[9])
local share_n, share_b = tonumber(ARGV[10]), tonumber(ARGV[11])
local dead = 0
local i = 12
while i <= #ARGV do
  local lane, id, weight, caller, json = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ARGV[i + 4]
  local q = P .. 'q:' .. lane
  local n = tonumber(redis.call('GET', P .. 'pn') or '0')
  local b = tonumber(redis.call('GET', P .. 'pb') or '0')
  local cn = tonumber(redis.call('GET', P .. 'cn:' .. caller) or '0')
  local cb = tonumber(redis.call('GET', P .. 'cb:' .. caller) or '0')
  local within = (cn < share_n and cb + weight <= share_b)
    or (n < max_n / 2 and b + weight <= max_b / 2)
  if n >= max_n or b + weight > max_b or not within or redis.call('LLEN', q) >= per_lane then
    bury(json, 'overflow', max_dead, max_db)
    dead = dead + 1
  else
    redis.call('RPUSH', q, json)
    redis.call('INCR', P .. 'pn')
    redis.call('INCRBY', P .. 'pb', weight)
    redis.call('INCR', P .. 'cn:' .. caller)
    redis.call('INCRBY', P .. 'cb:' .. caller, weight)
    redis.call('ZADD', P .. 'ages', now, id)
    redis.call('ZADD', P .. 'due', 'NX', now, lane)
  end
  i = i + 5
end
return dead
";

/// `ARGV`: prefix, replica, now, lease ms, max. Claims the lanes whose score is due.
const CLAIM: &str = r"
local me, now, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local lanes = redis.call('ZRANGEBYSCORE', P .. 'due', '-inf', now, 'LIMIT', 0, tonumber(ARGV[5]))
for _, lane in ipairs(lanes) do
  redis.call('ZADD', P .. 'due', now + lease, lane)
  redis.call('SET', P .. 'own:' .. lane, me, 'PX', lease)
end
return lanes
";

/// `ARGV`: prefix, replica, now, lease ms, lane, head (0/1). Renews the claim; returns
/// the head's JSON (or `''` when the lane is empty, and then releases it) for head = 1, `1`
/// otherwise; `false` when the claim is not this replica's.
const RENEW: &str = r"
local me, now, lease, lane = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local own = P .. 'own:' .. lane
if redis.call('GET', own) ~= me then return false end
local q = P .. 'q:' .. lane
if redis.call('LLEN', q) == 0 then
  redis.call('ZREM', P .. 'due', lane)
  redis.call('DEL', own)
  return ''
end
redis.call('ZADD', P .. 'due', now + lease, lane)
redis.call('SET', own, me, 'PX', lease)
if ARGV[6] == '1' then return redis.call('LINDEX', q, 0) end
return '1'
";

/// `ARGV`: prefix, replica, lane, id, dead reason (`''`: none), dead max, dead bytes max.
/// Pops the
/// head when it is `id` and the claim this replica's. Returns 1, or 0 when not.
const END: &str = r"
local me, lane, id = ARGV[2], ARGV[3], ARGV[4]
if redis.call('GET', P .. 'own:' .. lane) ~= me then return 0 end
local q = P .. 'q:' .. lane
local head = redis.call('LINDEX', q, 0)
if not head or cjson.decode(head)['id'] ~= id then return 0 end
redis.call('LPOP', q)
local entry = cjson.decode(head)
redis.call('DECR', P .. 'pn')
redis.call('DECRBY', P .. 'pb', tonumber(entry['w'] or 0))
left(entry['caller'] or '', tonumber(entry['w'] or 0))
redis.call('ZREM', P .. 'ages', id)
if ARGV[5] ~= '' then bury(head, ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])) end
return 1
";

/// `ARGV`: prefix, lane. Drops every pending notification of the lane.
const DROP: &str = r"
local lane = ARGV[2]
local q = P .. 'q:' .. lane
for _, json in ipairs(redis.call('LRANGE', q, 0, -1)) do
  local entry = cjson.decode(json)
  redis.call('DECR', P .. 'pn')
  redis.call('DECRBY', P .. 'pb', tonumber(entry['w'] or 0))
  left(entry['caller'] or '', tonumber(entry['w'] or 0))
  redis.call('ZREM', P .. 'ages', entry['id'])
end
redis.call('DEL', q)
redis.call('ZREM', P .. 'due', lane)
return 1
";

/// `ARGV`: prefix, id. Takes dead letter `id` out of the dead letters and returns its
/// entry's JSON (queued again by the caller), or false.
const REPLAY: &str = r"
local id = ARGV[2]
for _, letter in ipairs(redis.call('LRANGE', P .. 'dead', 0, -1)) do
  local dead = cjson.decode(letter)
  if cjson.decode(dead['j'])['id'] == id then
    redis.call('LREM', P .. 'dead', 1, letter)
    redis.call('DECRBY', P .. 'db', string.len(letter))
    return dead['j']
  end
end
return false
";

/// An entry as the Redis outbox keeps it: the entry and its weight (`w`, for the counts).
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    #[serde(flatten)]
    entry: Entry,
    w: u64,
}

/// The outbox of a [`RedisTaskStore`] (see the module).
#[derive(Clone)]
pub(crate) struct RedisOutbox {
    tasks: RedisTaskStore,
    scripts: Arc<OutboxScripts>,
}

impl RedisTaskStore {
    /// The push outbox beside these tasks.
    pub(crate) fn outbox(&self) -> RedisOutbox {
        RedisOutbox {
            tasks: self.clone(),
            scripts: Arc::new(OutboxScripts::new()),
        }
    }

    /// The lease of running tasks, which the outbox's claims use too.
    pub(crate) fn lease_duration(&self) -> Duration {
        self.inner.lease
    }

    /// Tells `push` of every task this store's reaper ends FAILED.
    pub(crate) fn notify_reaped(&self, push: crate::push::PushDelivery) {
        let _ = self.inner.reaped.set(push);
    }
}

fn lease_ms(tasks: &RedisTaskStore) -> u64 {
    u64::try_from(tasks.inner.lease.as_millis()).unwrap_or(u64::MAX)
}

impl RedisOutbox {
    async fn renew_or_head(&self, lane: &str, head: bool) -> Result<Option<String>, ClaimLost> {
        let tasks = &self.tasks;
        let answer: Option<String> = tasks
            .run(&self.scripts.renew, |call| {
                call.arg(&tasks.inner.replica)
                    .arg(now_ms())
                    .arg(lease_ms(tasks))
                    .arg(lane)
                    .arg(if head { "1" } else { "0" });
            })
            .await
            .map_err(|_| ClaimLost)?;
        match answer {
            None => Err(ClaimLost),
            Some(json) if json.is_empty() => Ok(None),
            Some(json) => Ok(Some(json)),
        }
    }
}

#[async_trait::async_trait]
impl Outbox for RedisOutbox {
    async fn add(
        &self,
        task: &str,
        entries: Vec<Entry>,
        terminal: bool,
    ) -> Result<usize, A2AError> {
        let mut kept = Vec::with_capacity(entries.len());
        for entry in entries {
            let (lane, id, w) = (entry.lane(), entry.id.clone(), entry.weight());
            let caller = entry.caller.clone();
            let json = serde_json::to_string(&Kept { entry, w })
                .map_err(|_| A2AError::internal("an outbox entry did not serialize"))?;
            kept.push((lane, id, w, caller, json));
        }
        let dead: i64 = self
            .tasks
            .run(&self.scripts.add, |call| {
                call.arg(task)
                    .arg(if terminal { "1" } else { "0" })
                    .arg(now_ms())
                    .arg(MAX_PER_LANE)
                    .arg(MAX_PENDING)
                    .arg(MAX_PENDING_BYTES)
                    .arg(MAX_DEAD_LETTERS)
                    .arg(MAX_DEAD_BYTES)
                    .arg(MAX_PENDING_PER_CALLER)
                    .arg(MAX_PENDING_BYTES_PER_CALLER);
                for (lane, id, w, caller, json) in &kept {
                    call.arg(lane).arg(id).arg(*w).arg(caller).arg(json);
                }
            })
            .await?;
        Ok(usize::try_from(dead).unwrap_or(0))
    }

    async fn claim(&self, max: usize) -> Vec<String> {
        let tasks = &self.tasks;
        tasks
            .run(&self.scripts.claim, |call| {
                call.arg(&tasks.inner.replica)
                    .arg(now_ms())
                    .arg(lease_ms(tasks))
                    .arg(max);
            })
            .await
            .unwrap_or_default()
    }

    async fn head(&self, lane: &str) -> Result<Option<Entry>, ClaimLost> {
        match self.renew_or_head(lane, true).await? {
            None => Ok(None),
            Some(json) => serde_json::from_str::<Kept>(&json)
                .map(|kept| Some(kept.entry))
                .map_err(|_| ClaimLost),
        }
    }

    async fn renew(&self, lane: &str) -> Result<(), ClaimLost> {
        self.renew_or_head(lane, false).await.map(|_| ())
    }

    async fn end(&self, lane: &str, id: &str, dead: Option<&str>) -> Result<(), ClaimLost> {
        let tasks = &self.tasks;
        // The weight the entry was counted with is in its JSON, read by the script.
        let ended: i64 = tasks
            .run(&self.scripts.end, |call| {
                call.arg(&tasks.inner.replica)
                    .arg(lane)
                    .arg(id)
                    .arg(dead.unwrap_or(""))
                    .arg(MAX_DEAD_LETTERS)
                    .arg(MAX_DEAD_BYTES);
            })
            .await
            .map_err(|_| ClaimLost)?;
        if ended == 1 { Ok(()) } else { Err(ClaimLost) }
    }

    async fn drop_lane(&self, lane: &str) {
        let dropped: Result<i64, _> = self
            .tasks
            .run(&self.scripts.drop_lane, |call| {
                call.arg(lane);
            })
            .await;
        if dropped.is_err() {
            tracing::debug!("a push lane was not dropped");
        }
    }

    async fn dead_letters(&self) -> Result<Vec<crate::push::DeadLetter>, A2AError> {
        let tasks = &self.tasks;
        let mut connection = tasks.inner.store.connection();
        let letters: Vec<String> = tasks
            .bounded(
                redis::cmd("LRANGE")
                    .arg(tasks.key("dead"))
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut connection),
            )
            .await?;
        Ok(letters
            .iter()
            .filter_map(|letter| dead_letter(letter))
            .collect())
    }

    async fn replay(&self, id: &str, now: u64) -> Result<bool, A2AError> {
        let found: Option<String> = self
            .tasks
            .run(&self.scripts.replay, |call| {
                call.arg(id);
            })
            .await?;
        let Some(json) = found else {
            return Ok(false);
        };
        let Ok(kept) = serde_json::from_str::<Kept>(&json) else {
            return Ok(false);
        };
        let mut entry = kept.entry;
        entry.at = now;
        // Queued again whatever the task's end (`''`).
        let (lane, w, caller) = (entry.lane(), entry.weight(), entry.caller.clone());
        let json = serde_json::to_string(&Kept { entry, w })
            .map_err(|_| A2AError::internal("an outbox entry did not serialize"))?;
        let dead: i64 = self
            .tasks
            .run(&self.scripts.add, |call| {
                call.arg("")
                    .arg("0")
                    .arg(now)
                    .arg(MAX_PER_LANE)
                    .arg(MAX_PENDING)
                    .arg(MAX_PENDING_BYTES)
                    .arg(MAX_DEAD_LETTERS)
                    .arg(MAX_DEAD_BYTES)
                    .arg(MAX_PENDING_PER_CALLER)
                    .arg(MAX_PENDING_BYTES_PER_CALLER)
                    .arg(lane)
                    .arg(id)
                    .arg(w)
                    .arg(caller)
                    .arg(json);
            })
            .await?;
        Ok(dead == 0)
    }

    async fn oldest(&self) -> Option<u64> {
        let tasks = &self.tasks;
        let mut connection = tasks.inner.store.connection();
        let oldest: Vec<(String, f64)> = tasks
            .bounded(
                redis::cmd("ZRANGE")
                    .arg(tasks.key("ages"))
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES")
                    .query_async(&mut connection),
            )
            .await
            .ok()?;
        oldest.first().map(|(_, at)| *at as u64)
    }
}

/// A dead letter as the script keeps it: `{"j": entry JSON, "r": reason}`.
fn dead_letter(letter: &str) -> Option<crate::push::DeadLetter> {
    #[derive(serde::Deserialize)]
    struct Letter {
        j: String,
        r: String,
    }
    let letter: Letter = serde_json::from_str(letter).ok()?;
    let kept: Kept = serde_json::from_str(&letter.j).ok()?;
    Some(crate::push::DeadLetter {
        entry: kept.entry,
        reason: letter.r,
    })
}
