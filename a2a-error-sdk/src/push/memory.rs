//! The outbox and the push configs in this process: bounded, gone with it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{A2AError, TaskPushNotificationConfig};
use a2a_server::PushConfigStore;

use super::outbox::{
    ClaimLost, DeadLetter, Entry, MAX_DEAD_BYTES, MAX_DEAD_LETTERS, MAX_PENDING, MAX_PENDING_BYTES,
    MAX_PER_LANE, Outbox, within_share,
};
use crate::scope_key::ScopeKey;
use a2a_error_runtime::bounded::{BoundedMap, Change};

use super::{MAX_CONFIGS_PER_TASK as MAX_PER_TASK, checked, not_found};
/// The most bytes of configs kept in this process (the tasks' configs used longest ago go
/// first, as the tasks themselves do).
const MAX_CONFIGS_BYTES: u64 = 16 << 20;
/// The most bytes of configs one caller keeps (a sixteenth of the whole): past it, its next
/// config is refused, so that no caller alone pushes another's out.
pub(crate) const MAX_CALLER_CONFIGS_BYTES: u64 = MAX_CONFIGS_BYTES / 16;
/// How long a task's configs are kept after their last change.
const CONFIG_TTL: Duration = Duration::from_secs(24 * 3600);

/// A task's configs, the caller whose they are (the task's owner: only it reaches them) and
/// what they weigh.
#[derive(Clone, Default)]
struct TaskPush {
    configs: Arc<Vec<TaskPushNotificationConfig>>,
    caller: ScopeKey,
    weight: u64,
}

/// The push configs of this process's tasks: at most 50 a task, each at most 8 KiB of JSON,
/// 1 MiB a caller, 16 MiB in all (the tasks used longest ago forgotten first), each task's
/// kept 24 hours.
#[derive(Clone)]
pub(crate) struct MemoryConfigs {
    tasks: Arc<BoundedMap<TaskPush>>,
    /// What each caller's configs weigh now; a caller is here while it has configs.
    callers: Arc<Mutex<HashMap<ScopeKey, u64>>>,
}

/// `weight` of `caller`'s configs gone.
fn release(callers: &Mutex<HashMap<ScopeKey, u64>>, caller: ScopeKey, weight: u64) {
    let mut callers = callers.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(used) = callers.get_mut(&caller) {
        *used = used.saturating_sub(weight);
        if *used == 0 {
            callers.remove(&caller);
        }
    }
}

impl MemoryConfigs {
    pub(crate) fn new() -> Self {
        let callers: Arc<Mutex<HashMap<ScopeKey, u64>>> = Arc::default();
        let let_go = Arc::clone(&callers);
        // Configs the map evicts or lets expire leave their caller's share.
        let tasks = BoundedMap::new(1 << 16, MAX_CONFIGS_BYTES)
            .telling(move |held: &TaskPush| release(&let_go, held.caller, held.weight));
        MemoryConfigs {
            tasks: Arc::new(tasks),
            callers,
        }
    }

    /// What `caller`'s configs weigh now.
    #[cfg(test)]
    fn used_by(&self, caller: ScopeKey) -> u64 {
        let callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        callers.get(&caller).copied().unwrap_or(0)
    }

    /// The configs of `task_id` (none: empty), read at once.
    pub(crate) fn list_now(&self, task_id: &str) -> Vec<TaskPushNotificationConfig> {
        self.tasks
            .get(task_id)
            .map(|held| (*held.configs).clone())
            .unwrap_or_default()
    }
}

fn weight(configs: &[TaskPushNotificationConfig]) -> u64 {
    configs
        .iter()
        .map(|config| serde_json::to_string(config).map_or(0, |json| json.len()) as u64 + 128)
        .sum::<u64>()
        + 64
}

impl MemoryConfigs {
    /// Saves `config` as `caller`'s (the task's owner): refused when the caller's configs
    /// would weigh more than [`MAX_CALLER_CONFIGS_BYTES`].
    pub(crate) fn save_for(
        &self,
        mut config: TaskPushNotificationConfig,
        caller: ScopeKey,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let (id, _) = checked(&mut config)?;
        let task = config.task_id.clone();
        let saved = config.clone();
        self.tasks.update(&task, |held| {
            // A task's configs stay its first saver's (its owner's).
            let (caller, before) = held.map_or((caller, 0), |held| (held.caller, held.weight));
            let mut configs: Vec<_> = held.map(|held| (*held.configs).clone()).unwrap_or_default();
            let full = configs.len() >= MAX_PER_TASK;
            match configs
                .iter_mut()
                .find(|kept| kept.id.as_deref() == Some(&id))
            {
                Some(kept) => *kept = config,
                None if full => {
                    return (
                        Change::Keep,
                        Err(A2AError::invalid_params(format!(
                            "too many push notification configs for task (max {MAX_PER_TASK})"
                        ))),
                    );
                }
                None => configs.push(config),
            }
            let weight = weight(&configs);
            // The share is checked and taken under the map's lock for the task, the only lock
            // taken inside it (the map's own telling takes the same one, in the same order).
            let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
            let used = callers.get(&caller).copied().unwrap_or(0);
            let after = (used - before.min(used)) + weight;
            if weight > before && after > MAX_CALLER_CONFIGS_BYTES {
                return (
                    Change::Keep,
                    Err(A2AError::invalid_params(format!(
                        "too many push notification configs for this caller (at most {} KiB \
                         of configs; delete some first)",
                        MAX_CALLER_CONFIGS_BYTES >> 10
                    ))),
                );
            }
            callers.insert(caller, after);
            let put = Change::Put {
                weight,
                value: TaskPush {
                    configs: Arc::new(configs),
                    caller,
                    weight,
                },
                ttl: CONFIG_TTL,
            };
            (put, Ok(saved))
        })
    }
}

#[async_trait::async_trait]
impl PushConfigStore for MemoryConfigs {
    /// Saved as the anonymous caller's: the bridge saves a caller's configs with
    /// [`save_for`](MemoryConfigs::save_for).
    async fn save(
        &self,
        config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.save_for(config, 0)
    }

    async fn get(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.tasks
            .get(task_id)
            .and_then(|held| {
                held.configs
                    .iter()
                    .find(|config| config.id.as_deref() == Some(config_id))
                    .cloned()
            })
            .ok_or_else(|| not_found(config_id))
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        Ok(self.list_now(task_id))
    }

    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        self.tasks.update(task_id, |held| {
            let Some(held) = held else {
                return (Change::Keep, ());
            };
            let configs: Vec<_> = held
                .configs
                .iter()
                .filter(|config| config.id.as_deref() != Some(config_id))
                .cloned()
                .collect();
            release(&self.callers, held.caller, held.weight);
            if configs.is_empty() {
                return (Change::Remove, ());
            }
            let weight = weight(&configs);
            let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
            *callers.entry(held.caller).or_default() += weight;
            let put = Change::Put {
                weight,
                value: TaskPush {
                    configs: Arc::new(configs),
                    caller: held.caller,
                    weight,
                },
                ttl: CONFIG_TTL,
            };
            (put, ())
        });
        Ok(())
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), A2AError> {
        self.tasks.update(task_id, |held| {
            if let Some(held) = held {
                release(&self.callers, held.caller, held.weight);
            }
            (Change::Remove, ())
        });
        Ok(())
    }
}

/// The outbox in this process (see [`Outbox`]): one replica, so a claim never lapses. What
/// `PushDelivery::memory` delivers from, and what a [`PushStore`](super::store::PushStore) of
/// your own may give when its replicas do not share pending notifications.
pub struct MemoryOutbox {
    state: Mutex<State>,
    /// Tasks whose terminal event was queued (kept a day, bounded).
    ended: BoundedMap<()>,
}

#[derive(Default)]
struct State {
    lanes: HashMap<String, Lane>,
    /// Lanes with notifications that nobody delivers now.
    due: VecDeque<String>,
    pending: usize,
    bytes: u64,
    /// What each caller has pending (count, bytes); a caller is here while it has some.
    callers: HashMap<String, (usize, u64)>,
    dead: VecDeque<DeadLetter>,
    dead_bytes: u64,
}

#[derive(Default)]
struct Lane {
    entries: VecDeque<Entry>,
    claimed: bool,
}

impl Default for MemoryOutbox {
    fn default() -> Self {
        MemoryOutbox::new()
    }
}

impl std::fmt::Debug for MemoryOutbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryOutbox").finish_non_exhaustive()
    }
}

impl MemoryOutbox {
    /// An empty outbox, within the module's bounds.
    pub fn new() -> Self {
        MemoryOutbox {
            state: Mutex::default(),
            ended: BoundedMap::new(1 << 16, 8 << 20),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    fn bury(&mut self, entry: Entry, reason: &str) {
        let weight = entry.weight();
        self.dead_bytes += weight;
        self.dead.push_back(DeadLetter {
            entry,
            reason: reason.to_owned(),
        });
        while self.dead.len() > MAX_DEAD_LETTERS || self.dead_bytes > MAX_DEAD_BYTES {
            let Some(old) = self.dead.pop_front() else {
                break;
            };
            self.dead_bytes = self.dead_bytes.saturating_sub(old.entry.weight());
        }
    }

    /// Queues `entry`, or gives it back when a bound is reached (the outbox's, its caller's
    /// share, its lane's).
    fn queue(&mut self, entry: Entry) -> Option<Entry> {
        let weight = entry.weight();
        if self.pending >= MAX_PENDING || self.bytes + weight > MAX_PENDING_BYTES {
            return Some(entry);
        }
        let caller = self.callers.get(&entry.caller).copied().unwrap_or_default();
        if !within_share(caller, (self.pending, self.bytes), weight) {
            return Some(entry);
        }
        let name = entry.lane();
        let lane = self.lanes.entry(name.clone()).or_default();
        if lane.entries.len() >= MAX_PER_LANE {
            return Some(entry);
        }
        if lane.entries.is_empty() && !lane.claimed {
            self.due.push_back(name);
        }
        let held = self.callers.entry(entry.caller.clone()).or_default();
        held.0 += 1;
        held.1 += weight;
        lane.entries.push_back(entry);
        self.pending += 1;
        self.bytes += weight;
        None
    }

    /// `entry` is no longer pending.
    fn ended(&mut self, entry: &Entry) {
        let weight = entry.weight();
        self.pending -= 1;
        self.bytes = self.bytes.saturating_sub(weight);
        if let Some(held) = self.callers.get_mut(&entry.caller) {
            held.0 = held.0.saturating_sub(1);
            held.1 = held.1.saturating_sub(weight);
            if held.0 == 0 {
                self.callers.remove(&entry.caller);
            }
        }
    }
}

#[async_trait::async_trait]
impl Outbox for MemoryOutbox {
    async fn add(
        &self,
        task: &str,
        entries: Vec<Entry>,
        terminal: bool,
    ) -> Result<usize, A2AError> {
        if self.ended.get(task).is_some() {
            return Ok(0);
        }
        if terminal {
            self.ended.put(
                task,
                (),
                task.len() as u64 + 64,
                Duration::from_secs(24 * 3600),
            );
        }
        let mut state = self.state();
        let mut dead = 0;
        for entry in entries {
            if let Some(entry) = state.queue(entry) {
                state.bury(entry, "overflow");
                dead += 1;
            }
        }
        Ok(dead)
    }

    async fn claim(&self, max: usize) -> Vec<String> {
        let mut state = self.state();
        let mut claimed = Vec::new();
        while claimed.len() < max {
            let Some(name) = state.due.pop_front() else {
                break;
            };
            if let Some(lane) = state.lanes.get_mut(&name)
                && !lane.claimed
                && !lane.entries.is_empty()
            {
                lane.claimed = true;
                claimed.push(name);
            }
        }
        claimed
    }

    async fn head(&self, lane: &str) -> Result<Option<Entry>, ClaimLost> {
        let mut state = self.state();
        let Some(held) = state.lanes.get_mut(lane) else {
            return Ok(None);
        };
        match held.entries.front() {
            Some(entry) => Ok(Some(entry.clone())),
            None => {
                state.lanes.remove(lane);
                Ok(None)
            }
        }
    }

    async fn renew(&self, _: &str) -> Result<(), ClaimLost> {
        Ok(())
    }

    async fn end(&self, lane: &str, id: &str, dead: Option<&str>) -> Result<(), ClaimLost> {
        let mut state = self.state();
        let Some(held) = state.lanes.get_mut(lane) else {
            return Err(ClaimLost);
        };
        if held.entries.front().map(|entry| entry.id.as_str()) != Some(id) {
            return Err(ClaimLost);
        }
        let Some(entry) = held.entries.pop_front() else {
            return Err(ClaimLost);
        };
        state.ended(&entry);
        if let Some(reason) = dead {
            state.bury(entry, reason);
        }
        Ok(())
    }

    async fn drop_lane(&self, lane: &str) {
        let mut state = self.state();
        if let Some(held) = state.lanes.get_mut(lane) {
            let dropped = std::mem::take(&mut held.entries);
            for entry in &dropped {
                state.ended(entry);
            }
        }
    }

    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, A2AError> {
        Ok(self.state().dead.iter().cloned().collect())
    }

    async fn replay(&self, id: &str, now: u64) -> Result<bool, A2AError> {
        let mut state = self.state();
        let Some(at) = state.dead.iter().position(|dead| dead.entry.id == id) else {
            return Ok(false);
        };
        let Some(dead) = state.dead.remove(at) else {
            return Ok(false);
        };
        state.dead_bytes = state.dead_bytes.saturating_sub(dead.entry.weight());
        let mut entry = dead.entry;
        entry.at = now;
        match state.queue(entry) {
            None => Ok(true),
            Some(entry) => {
                state.bury(entry, "overflow");
                Ok(false)
            }
        }
    }

    async fn oldest(&self) -> Option<u64> {
        let state = self.state();
        state
            .lanes
            .values()
            .filter_map(|lane| lane.entries.front().map(|entry| entry.at))
            .min()
    }
}

/// The lanes this process is delivering now.
pub(super) type Running = Mutex<HashSet<String>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::lane;

    fn entry(task: &str, config: &str, n: u32) -> Entry {
        Entry {
            id: format!("msg_{task}_{config}_{n}"),
            task: task.to_owned(),
            config: config.to_owned(),
            at: 1000 + u64::from(n),
            url: "https://example.com/hook".to_owned(),
            token: None,
            auth: None,
            body: format!("{{\"n\":{n}}}"),
            caller: String::new(),
        }
    }

    #[tokio::test]
    async fn one_callers_hanging_receivers_leave_room_for_the_others() {
        let outbox = MemoryOutbox::new();
        let of = |caller: &str, task: &str, n: u32| Entry {
            caller: caller.to_owned(),
            ..entry(task, "c", n)
        };
        // Mallory's twelve tasks of 1,000 notifications each, to receivers that never answer.
        let mut dead = 0;
        for t in 0..12 {
            let task = format!("m{t}");
            let entries = (0..1000).map(|n| of("mallory", &task, n)).collect();
            dead += outbox.add(&task, entries, false).await.unwrap();
        }
        // Taken until the outbox is half full (its share is an eighth; past it, half).
        assert_eq!(12_000 - dead, MAX_PENDING / 2);
        // Alice's task: every notification taken, and the anonymous caller's too.
        let entries = (0..MAX_PER_LANE as u32)
            .map(|n| of("alice", "a", n))
            .collect();
        assert_eq!(outbox.add("a", entries, false).await.unwrap(), 0);
        assert_eq!(
            outbox
                .add("x", vec![entry("x", "c", 0)], false)
                .await
                .unwrap(),
            0
        );
        // What leaves gives the share back: Mallory's lanes dropped, Mallory is gone.
        for t in 0..12 {
            outbox.drop_lane(&lane(&format!("m{t}"), "c")).await;
        }
        assert!(!outbox.state().callers.contains_key("mallory"));
        assert_eq!(outbox.state().callers["alice"].0, MAX_PER_LANE);
    }

    #[tokio::test]
    async fn a_lane_is_delivered_in_order_by_one_claimer_and_stops_at_the_end() {
        let outbox = MemoryOutbox::new();
        for n in 0..3 {
            outbox
                .add("t", vec![entry("t", "c", n)], n == 2)
                .await
                .unwrap();
        }
        // After the terminal event, nothing more is queued.
        outbox
            .add("t", vec![entry("t", "c", 9)], false)
            .await
            .unwrap();
        let lanes = outbox.claim(10).await;
        assert_eq!(lanes, [lane("t", "c")]);
        assert!(outbox.claim(10).await.is_empty(), "claimed once");
        let mut seen = Vec::new();
        while let Ok(Some(head)) = outbox.head(&lanes[0]).await {
            seen.push(head.id.clone());
            outbox.end(&lanes[0], &head.id, None).await.unwrap();
        }
        assert_eq!(seen, ["msg_t_c_0", "msg_t_c_1", "msg_t_c_2"]);
        assert_eq!(outbox.oldest().await, None);
        // A lane emptied and released is claimed again when a new one comes.
        outbox
            .add("u", vec![entry("u", "c", 0)], false)
            .await
            .unwrap();
        assert_eq!(outbox.claim(10).await, [lane("u", "c")]);
    }

    #[tokio::test]
    async fn bounds_make_dead_letters_which_replay() {
        let outbox = MemoryOutbox::new();
        let entries: Vec<_> = (0..=MAX_PER_LANE as u32)
            .map(|n| entry("t", "c", n))
            .collect();
        let dead = outbox.add("t", entries, false).await.unwrap();
        assert_eq!(dead, 1, "one past the lane's bound");
        let letters = outbox.dead_letters().await.unwrap();
        assert_eq!(letters.len(), 1);
        assert_eq!(letters[0].reason(), "overflow");
        let lane = outbox.claim(1).await.remove(0);
        let head = outbox.head(&lane).await.unwrap().unwrap();
        outbox.end(&lane, &head.id, Some("expired")).await.unwrap();
        assert_eq!(outbox.dead_letters().await.unwrap().len(), 2);
        // Replayed: back in its lane (at its end), with a new age.
        assert!(outbox.replay(&head.id, 5_000).await.unwrap());
        assert!(!outbox.replay("msg_none", 5_000).await.unwrap());
        assert_eq!(outbox.dead_letters().await.unwrap().len(), 1);
        assert_eq!(outbox.oldest().await, Some(1001));
        // A dropped lane holds nothing.
        outbox.drop_lane(&lane).await;
        assert_eq!(outbox.oldest().await, None);
        assert_eq!(outbox.state().pending, 0);
        assert_eq!(outbox.state().bytes, 0);
    }

    #[tokio::test]
    async fn one_caller_cannot_push_out_anothers_configs() {
        let configs = MemoryConfigs::new();
        let config = |task: String, n: usize| TaskPushNotificationConfig {
            url: format!("https://example.com/{n}/{}", "x".repeat(6000)),
            id: None,
            task_id: task,
            token: None,
            authentication: None,
            tenant: None,
        };
        let (alice, mallory) = (1, 2);
        let kept = configs
            .save_for(config("alice-task".into(), 0), alice)
            .unwrap();
        // Mallory floods with 3,000 configs of ~6 KB on tasks of its own: past its share, refused.
        let mut refused = 0;
        for n in 0..3000 {
            if configs
                .save_for(config(format!("m-{}", n / 40), n), mallory)
                .is_err()
            {
                refused += 1;
            }
        }
        assert!(refused > 2800, "{refused} refused");
        assert!(configs.used_by(mallory) <= MAX_CALLER_CONFIGS_BYTES);
        // Alice's config is still there, and Alice can still save.
        let id = kept.id.unwrap();
        assert!(configs.get("alice-task", &id).await.is_ok());
        configs
            .save_for(config("alice-2".into(), 1), alice)
            .unwrap();
        // Deleting gives the share back.
        let before = configs.used_by(mallory);
        configs.delete_all("m-0").await.unwrap();
        assert!(configs.used_by(mallory) < before);
        assert!(configs.save_for(config("m-new".into(), 1), mallory).is_ok());
        for task in ["alice-task", "alice-2"] {
            configs.delete_all(task).await.unwrap();
        }
        assert_eq!(configs.used_by(alice), 0);
    }

    #[tokio::test]
    async fn configs_are_bounded_per_task() {
        let configs = MemoryConfigs::new();
        for n in 0..MAX_PER_TASK {
            let config = TaskPushNotificationConfig {
                url: format!("https://example.com/{n}"),
                id: None,
                task_id: "t".to_owned(),
                token: None,
                authentication: None,
                tenant: None,
            };
            configs.save(config).await.unwrap();
        }
        let one_more = TaskPushNotificationConfig {
            url: "https://example.com/more".to_owned(),
            id: None,
            task_id: "t".to_owned(),
            token: None,
            authentication: None,
            tenant: None,
        };
        assert!(configs.save(one_more).await.is_err());
        let listed = configs.list("t").await.unwrap();
        assert_eq!(listed.len(), MAX_PER_TASK);
        let id = listed[0].id.clone().unwrap();
        configs.delete("t", &id).await.unwrap();
        assert!(configs.get("t", &id).await.is_err());
        assert_eq!(configs.list("t").await.unwrap().len(), MAX_PER_TASK - 1);
    }

    #[tokio::test]
    async fn a_config_is_checked_as_every_store_checks_it() {
        // The same checks and codes as the shared store's (tests/integration/fleet.rs).
        let configs = MemoryConfigs::new();
        let config = |task: &str, id: Option<&str>, url: &str| TaskPushNotificationConfig {
            url: url.to_owned(),
            id: id.map(str::to_owned),
            task_id: task.to_owned(),
            token: None,
            authentication: None,
            tenant: None,
        };
        let long = "t".repeat(super::super::MAX_ID_BYTES + 1);
        let invalid = a2a::error_code::INVALID_PARAMS;
        let url = "https://example.com/hook";
        for refused in [
            config("", None, url),
            config(&long, None, url),
            config("t", Some(&long), url),
            config("t", None, ""),
        ] {
            let error = configs.save(refused).await.unwrap_err();
            assert_eq!(error.code, invalid, "{error:?}");
        }
        let huge = TaskPushNotificationConfig {
            token: Some("x".repeat(super::super::MAX_CONFIG_BYTES)),
            ..config("t", None, url)
        };
        let error = configs.save(huge).await.unwrap_err();
        assert_eq!(error.code, a2a_error_codes::CONTENT_TOO_LARGE, "{error:?}");
        // At the bounds: kept, an id made when there is none.
        let edge = "t".repeat(super::super::MAX_ID_BYTES);
        let saved = configs.save(config(&edge, None, url)).await.unwrap();
        assert_eq!(saved.id.as_deref().map(str::len), Some(32));
        assert_eq!(configs.list(&edge).await.unwrap().len(), 1);
    }
}
