//! The outbox and the push configs in this process: bounded, gone with it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::{A2AError, TaskPushNotificationConfig};
use a2a_server::PushConfigStore;

use super::outbox::{
    DeadLetter, Entry, Lost, MAX_DEAD_BYTES, MAX_DEAD_LETTERS, MAX_PENDING, MAX_PENDING_BYTES,
    MAX_PER_LANE, Outbox,
};
use crate::bounded::{BoundedMap, Change};
use crate::wire::standard::StandardError;

use super::{MAX_CONFIG_BYTES, MAX_CONFIGS_PER_TASK as MAX_PER_TASK, not_found};
/// The most bytes of configs kept in this process (the tasks' configs used longest ago go
/// first, as the tasks themselves do).
const MAX_CONFIGS_BYTES: u64 = 16 << 20;
/// How long a task's configs are kept after their last change.
const CONFIG_TTL: Duration = Duration::from_secs(24 * 3600);

/// A task's configs, and whether its terminal event was queued.
#[derive(Clone, Default)]
struct TaskPush {
    configs: Arc<Vec<TaskPushNotificationConfig>>,
}

/// The push configs of this process's tasks: at most 50 a task, each at most 8 KiB of JSON,
/// 16 MiB in all (the tasks used longest ago forgotten first), each task's kept 24 hours.
#[derive(Clone)]
pub(crate) struct MemoryConfigs {
    tasks: Arc<BoundedMap<TaskPush>>,
}

impl MemoryConfigs {
    pub(crate) fn new() -> Self {
        MemoryConfigs {
            tasks: Arc::new(BoundedMap::new(1 << 16, MAX_CONFIGS_BYTES)),
        }
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

#[async_trait::async_trait]
impl PushConfigStore for MemoryConfigs {
    async fn save(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        if config.url.is_empty() {
            return Err(A2AError::invalid_params("push config URL cannot be empty"));
        }
        let id = config
            .id
            .get_or_insert_with(|| format!("{:032x}", fastrand::u128(..)))
            .clone();
        if id.len() > 256 || config.task_id.len() > 256 {
            return Err(A2AError::invalid_params("push config id too long"));
        }
        let json = serde_json::to_string(&config)
            .map_err(|_| crate::sdk::to_sdk(&StandardError::Internal))?;
        if json.len() > MAX_CONFIG_BYTES {
            return Err(crate::sdk::to_sdk(&StandardError::ContentTooLarge));
        }
        let task = config.task_id.clone();
        let saved = config.clone();
        self.tasks.update(&task, |held| {
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
            let put = Change::Put {
                weight: weight(&configs),
                value: TaskPush {
                    configs: Arc::new(configs),
                },
                ttl: CONFIG_TTL,
            };
            (put, Ok(saved))
        })
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
            if configs.is_empty() {
                return (Change::Remove, ());
            }
            let put = Change::Put {
                weight: weight(&configs),
                value: TaskPush {
                    configs: Arc::new(configs),
                },
                ttl: CONFIG_TTL,
            };
            (put, ())
        });
        Ok(())
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), A2AError> {
        self.tasks.update(task_id, |_| (Change::Remove, ()));
        Ok(())
    }
}

/// The outbox in this process (see [`Outbox`]): one replica, so a claim never lapses.
pub(crate) struct MemoryOutbox {
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
    dead: VecDeque<DeadLetter>,
    dead_bytes: u64,
}

#[derive(Default)]
struct Lane {
    entries: VecDeque<Entry>,
    claimed: bool,
}

impl MemoryOutbox {
    pub(crate) fn new() -> Self {
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

    /// Queues `entry`, or gives it back when a bound is reached.
    fn queue(&mut self, entry: Entry) -> Option<Entry> {
        let weight = entry.weight();
        if self.pending >= MAX_PENDING || self.bytes + weight > MAX_PENDING_BYTES {
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
        lane.entries.push_back(entry);
        self.pending += 1;
        self.bytes += weight;
        None
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

    async fn head(&self, lane: &str) -> Result<Option<Entry>, Lost> {
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

    async fn renew(&self, _: &str) -> Result<(), Lost> {
        Ok(())
    }

    async fn end(&self, lane: &str, id: &str, dead: Option<&str>) -> Result<(), Lost> {
        let mut state = self.state();
        let Some(held) = state.lanes.get_mut(lane) else {
            return Err(Lost);
        };
        if held.entries.front().map(|entry| entry.id.as_str()) != Some(id) {
            return Err(Lost);
        }
        let Some(entry) = held.entries.pop_front() else {
            return Err(Lost);
        };
        state.pending -= 1;
        state.bytes = state.bytes.saturating_sub(entry.weight());
        if let Some(reason) = dead {
            state.bury(entry, reason);
        }
        Ok(())
    }

    async fn drop_lane(&self, lane: &str) {
        let mut state = self.state();
        if let Some(held) = state.lanes.get_mut(lane) {
            let dropped: Vec<_> = held.entries.drain(..).collect();
            state.pending -= dropped.len();
            let freed: u64 = dropped.iter().map(Entry::weight).sum();
            state.bytes = state.bytes.saturating_sub(freed);
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
    use crate::sdk::push::lane;

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
        }
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
}
