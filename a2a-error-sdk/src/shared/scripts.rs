//! The Lua scripts of [`RedisTaskStore`](super::RedisTaskStore): each write is one script, so
//! that its checks and its change are one step on the server, and the byte counts it keeps
//! move with the tasks they count.
//!
//! Keys, under the prefix `P` (`ARGV[1]` of every script):
//! - `P t:{id}`: a hash: `j` the task's JSON, `v` its version, `w` its weight in bytes, `st`
//!   its state, `term` `1` once terminal, `s` the owner's scope key (hex), `h` the replica
//!   holding its lease (empty when none), `r` `1` once reaped (ended FAILED by the store
//!   because its lease lapsed: no write is taken after that);
//! - `P p:{id}`: the task's push configs, by config id (their weight is in the task's);
//! - `P all`: every task, scored by its last write in ms (age order, for the TTL and the
//!   total bound);
//! - `P bytes`: the weight of every task;
//! - `P s:{scope}`, `P sb:{scope}`: a scope's tasks (scored by last write) and their weight;
//! - `P l:{id}`: the lease, the holder's replica id, expiring (`PX`) when not renewed;
//! - `P running`: leased tasks, scored by when their lease runs out (a hint for the reaper,
//!   which checks the lease key itself);
//! - channel `P c:{id}`: the new version after each write, `end` when a lease is given back.
//!
//! The keys are built in the scripts, so the store needs one Redis (or Valkey) server, not a
//! Cluster.

/// Shared by every script: dropping a task with its counts, and making room.
const PRELUDE: &str = r"
local P = ARGV[1]
local function drop(id)
  local t = P .. 't:' .. id
  local w = tonumber(redis.call('HGET', t, 'w') or '0')
  local s = redis.call('HGET', t, 's')
  redis.call('DEL', t, P .. 'p:' .. id)
  redis.call('ZREM', P .. 'all', id)
  redis.call('DECRBY', P .. 'bytes', w)
  if s and s ~= '' then
    redis.call('ZREM', P .. 's:' .. s, id)
    if redis.call('DECRBY', P .. 'sb:' .. s, w) <= 0 then redis.call('DEL', P .. 'sb:' .. s) end
  end
  redis.call('DEL', P .. 'l:' .. id)
  redis.call('ZREM', P .. 'running', id)
end
local function sweep(now, ttl)
  local old = redis.call('ZRANGEBYSCORE', P .. 'all', '-inf', now - ttl, 'LIMIT', 0, 64)
  for _, id in ipairs(old) do drop(id) end
end
local function room(set, counter, need, max, keep)
  local n = 0
  while tonumber(redis.call('GET', counter) or '0') + need > max and n < 4096 do
    local oldest = redis.call('ZRANGE', set, 0, 1)
    local id = oldest[1]
    if id == keep then id = oldest[2] end
    if not id then break end
    drop(id)
    n = n + 1
  end
end
";

/// The body of a script with the prelude.
fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{PRELUDE}{body}"))
}

/// Creates task `ARGV[2]` (JSON `ARGV[3]`, weight `ARGV[4]`, state `ARGV[5]`, terminal
/// `ARGV[6]`) at `ARGV[7]` ms, owned by scope `ARGV[8]` (empty: none yet), leased to replica
/// `ARGV[9]` for `ARGV[10]` ms (`0`: not leased); bounds `ARGV[11]` total bytes, `ARGV[12]`
/// a scope's, TTL `ARGV[13]` ms. Returns 1, or -1 when the task exists.
pub(super) fn create() -> redis::Script {
    script(
        r"
local id, w, now = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[7])
local t = P .. 't:' .. id
if redis.call('EXISTS', t) == 1 then return -1 end
sweep(now, tonumber(ARGV[13]))
room(P .. 'all', P .. 'bytes', w, tonumber(ARGV[11]), id)
local s = ARGV[8]
if s ~= '' then room(P .. 's:' .. s, P .. 'sb:' .. s, w, tonumber(ARGV[12]), id) end
redis.call('HSET', t, 'j', ARGV[3], 'v', 1, 'w', w, 'st', ARGV[5], 'term', ARGV[6], 's', s,
  'h', '', 'r', '0')
redis.call('ZADD', P .. 'all', now, id)
redis.call('INCRBY', P .. 'bytes', w)
if s ~= '' then
  redis.call('ZADD', P .. 's:' .. s, now, id)
  redis.call('INCRBY', P .. 'sb:' .. s, w)
end
local lease = tonumber(ARGV[10])
if lease > 0 and ARGV[6] ~= '1' then
  redis.call('SET', P .. 'l:' .. id, ARGV[9], 'PX', lease)
  redis.call('HSET', t, 'h', ARGV[9])
  redis.call('ZADD', P .. 'running', now + lease, id)
end
redis.call('PUBLISH', P .. 'c:' .. id, '1')
return 1
",
    )
}

/// Writes task `ARGV[2]` (JSON, weight, state, terminal as for [`create`]) at `ARGV[7]` ms,
/// from replica `ARGV[8]`, in mode `ARGV[9]`, if its version is `ARGV[10]` (empty: any);
/// bounds as `ARGV[11..13]`. Returns the new version, or: -1 no such task, -2 reaped, -3 this
/// replica's lease on it lapsed, -4 terminal (a write that changes the state, or any cancel or
/// reap), -5 the version moved, -6 the lease is still held (reap).
///
/// Modes: `write` (the SDK's update), `cancel` (begin_cancel), `reap` (a lapsed lease: the
/// task is marked reaped, and its lease's hint goes).
pub(super) fn write() -> redis::Script {
    script(
        r"
local id, w, now, me, mode = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[7]), ARGV[8], ARGV[9]
local t = P .. 't:' .. id
local held = redis.call('HMGET', t, 'v', 'w', 'st', 'term', 's', 'h', 'r')
if not held[1] then return -1 end
if held[7] == '1' then return -2 end
if ARGV[10] ~= '' and held[1] ~= ARGV[10] then return -5 end
local lease = redis.call('GET', P .. 'l:' .. id)
if mode == 'write' then
  if held[6] == me and lease ~= me then return -3 end
  if held[4] == '1' and held[3] ~= ARGV[5] then return -4 end
elseif mode == 'cancel' then
  if held[4] == '1' then return -4 end
elseif mode == 'reap' then
  if held[4] == '1' then return -4 end
  if lease then return -6 end
end
local was = tonumber(held[2])
room(P .. 'all', P .. 'bytes', w - was, tonumber(ARGV[11]), id)
local s = held[5]
if s ~= '' then room(P .. 's:' .. s, P .. 'sb:' .. s, w - was, tonumber(ARGV[12]), id) end
if redis.call('EXISTS', t) == 0 then return -1 end
local v = tonumber(held[1]) + 1
redis.call('HSET', t, 'j', ARGV[3], 'v', v, 'w', w, 'st', ARGV[5], 'term', ARGV[6])
redis.call('ZADD', P .. 'all', now, id)
redis.call('INCRBY', P .. 'bytes', w - was)
if s ~= '' then
  redis.call('ZADD', P .. 's:' .. s, now, id)
  redis.call('INCRBY', P .. 'sb:' .. s, w - was)
end
if mode == 'reap' then
  redis.call('HSET', t, 'r', '1', 'h', '')
  redis.call('ZREM', P .. 'running', id)
end
sweep(now, tonumber(ARGV[13]))
redis.call('PUBLISH', P .. 'c:' .. id, tostring(v))
return v
",
    )
}

/// Takes or renews the lease of task `ARGV[2]` for replica `ARGV[3]`, `ARGV[4]` ms from
/// `ARGV[5]` ms. Returns 1 when held, 0 when another replica holds it (or it lapsed, for a
/// renewal: `ARGV[6]` is `renew`), -1 when the task is gone, 2 when the task ended (terminal,
/// or reaped): then the lease is not taken.
pub(super) fn lease() -> redis::Script {
    script(
        r"
local id, me, lease, now = ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local t = P .. 't:' .. id
local held = redis.call('HMGET', t, 'term', 'r')
if not held[1] then return -1 end
if held[1] == '1' or held[2] == '1' then return 2 end
local l = P .. 'l:' .. id
local current = redis.call('GET', l)
if current and current ~= me then return 0 end
if not current and ARGV[6] == 'renew' then return 0 end
redis.call('SET', l, me, 'PX', lease)
redis.call('HSET', t, 'h', me)
redis.call('ZADD', P .. 'running', now + lease, id)
return 1
",
    )
}

/// Gives back replica `ARGV[3]`'s lease of task `ARGV[2]`, if it still holds it.
pub(super) fn release() -> redis::Script {
    script(
        r"
local id, me = ARGV[2], ARGV[3]
local l = P .. 'l:' .. id
if redis.call('GET', l) ~= me then return 0 end
redis.call('DEL', l)
redis.call('ZREM', P .. 'running', id)
if redis.call('EXISTS', P .. 't:' .. id) == 1 then redis.call('HSET', P .. 't:' .. id, 'h', '') end
redis.call('PUBLISH', P .. 'c:' .. id, 'end')
return 1
",
    )
}

/// The tasks whose lease ran out by `ARGV[2]` ms (at most 64), with the TTL `ARGV[3]` swept
/// first; a task gone from the store, or ended, leaves the list here.
pub(super) fn lapsed() -> redis::Script {
    script(
        r"
local now = tonumber(ARGV[2])
sweep(now, tonumber(ARGV[3]))
local due = redis.call('ZRANGEBYSCORE', P .. 'running', '-inf', now, 'LIMIT', 0, 64)
local out = {}
for _, id in ipairs(due) do
  local term = redis.call('HGET', P .. 't:' .. id, 'term')
  if not term or term == '1' then
    redis.call('ZREM', P .. 'running', id)
  elseif redis.call('EXISTS', P .. 'l:' .. id) == 0 then
    table.insert(out, id)
  end
end
return out
",
    )
}

/// Saves push config `ARGV[3]` (JSON `ARGV[4]`) of task `ARGV[2]` in the hash `P p:{id}`, at
/// most `ARGV[6]` per task, at `ARGV[7]` ms, within the bounds `ARGV[8]` (total) and `ARGV[9]`
/// (the scope's); a config weighs its JSON and `ARGV[5]`, added to its task's weight. Returns
/// 1, -1 for no such task, -2 for too many.
pub(super) fn push_save() -> redis::Script {
    script(
        r"
local id, config, json, extra = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local t, p = P .. 't:' .. id, P .. 'p:' .. id
local held = redis.call('HMGET', t, 'w', 's')
if not held[1] then return -1 end
local old = redis.call('HSTRLEN', p, config)
if old == 0 and redis.call('HLEN', p) >= tonumber(ARGV[6]) then return -2 end
local was = 0
if old > 0 then was = old + extra end
local delta = string.len(json) + extra - was
local s = held[2]
room(P .. 'all', P .. 'bytes', delta, tonumber(ARGV[8]), id)
if s and s ~= '' then room(P .. 's:' .. s, P .. 'sb:' .. s, delta, tonumber(ARGV[9]), id) end
if redis.call('EXISTS', t) == 0 then return -1 end
redis.call('HSET', p, config, json)
redis.call('HINCRBY', t, 'w', delta)
redis.call('INCRBY', P .. 'bytes', delta)
if s and s ~= '' then redis.call('INCRBY', P .. 'sb:' .. s, delta) end
redis.call('ZADD', P .. 'all', tonumber(ARGV[7]), id)
return 1
",
    )
}

/// Removes push config `ARGV[3]` of task `ARGV[2]` (all of them when `ARGV[3]` is empty),
/// and its weight (its JSON and `ARGV[4]`) from the task's. Returns how many went.
pub(super) fn push_delete() -> redis::Script {
    script(
        r"
local id, one, extra = ARGV[2], ARGV[3], tonumber(ARGV[4])
local t, p = P .. 't:' .. id, P .. 'p:' .. id
local s = redis.call('HGET', t, 's')
if not s then return 0 end
local configs = {one}
if one == '' then configs = redis.call('HKEYS', p) end
local freed, n = 0, 0
for _, config in ipairs(configs) do
  local len = redis.call('HSTRLEN', p, config)
  if len > 0 then
    redis.call('HDEL', p, config)
    freed = freed + len + extra
    n = n + 1
  end
end
if n == 0 then return 0 end
redis.call('HINCRBY', t, 'w', -freed)
redis.call('DECRBY', P .. 'bytes', freed)
if s ~= '' then redis.call('DECRBY', P .. 'sb:' .. s, freed) end
return n
",
    )
}
