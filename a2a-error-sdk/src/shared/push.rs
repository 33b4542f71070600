//! [`RedisPushConfigs`]: the SDK's `PushConfigStore` beside the shared tasks, living and dying
//! with its task and counted in its weight.

use std::sync::Arc;

use a2a::{A2AError, TaskPushNotificationConfig};
use a2a_server::PushConfigStore;

use super::{RedisTaskStore, decode, now_ms};

use crate::push::{MAX_CONFIGS_PER_TASK, MAX_ID_BYTES, PushDelivery, checked, not_found};
use a2a_error_runtime::dependency::PushSender;

/// What a config weighs beyond its JSON (its field in the task's hash).
const CONFIG_OVERHEAD: u64 = 128;

/// The push-notification configs of the tasks of a [`RedisTaskStore`], shared by the
/// replicas as the tasks are (from [`RedisTaskStore::push_configs`]; give it to
/// `DefaultRequestHandler::with_push_config_store`). A task's configs are kept with it: at
/// most 50, each at most 8 KiB of JSON, counted in the task's weight (and so in the store's
/// bounds), and gone when the task goes. A config for a task the store does not have is
/// TASK_NOT_FOUND.
#[derive(Clone, Debug)]
pub struct RedisPushConfigs {
    tasks: RedisTaskStore,
}

impl RedisTaskStore {
    /// The push-notification configs of these tasks (see [`RedisPushConfigs`]).
    pub fn push_configs(&self) -> RedisPushConfigs {
        RedisPushConfigs {
            tasks: self.clone(),
        }
    }
}

#[async_trait::async_trait]
impl PushConfigStore for RedisPushConfigs {
    async fn save(
        &self,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let (id, json) = checked(&mut config)?;
        let store = &self.tasks;
        let [max, max_scope, _] = store.bounds();
        let saved: i64 = store
            .run(&store.inner.scripts.push_save, |call| {
                call.arg(&config.task_id)
                    .arg(&id)
                    .arg(&json)
                    .arg(CONFIG_OVERHEAD)
                    .arg(MAX_CONFIGS_PER_TASK)
                    .arg(now_ms())
                    .arg(max)
                    .arg(max_scope);
            })
            .await?;
        match saved {
            1 => Ok(config),
            -1 => Err(A2AError::task_not_found(&config.task_id)),
            _ => Err(A2AError::invalid_params(format!(
                "too many push notification configs for task (max {MAX_CONFIGS_PER_TASK})"
            ))),
        }
    }

    async fn get(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        if task_id.len() > MAX_ID_BYTES || config_id.len() > MAX_ID_BYTES {
            return Err(not_found(config_id));
        }
        let store = &self.tasks;
        let mut connection = store.inner.store.connection();
        let json: Option<String> = store
            .bounded(
                redis::cmd("HGET")
                    .arg(store.key(&format!("p:{task_id}")))
                    .arg(config_id)
                    .query_async(&mut connection),
            )
            .await?;
        match json {
            Some(json) => decode(&json),
            None => Err(not_found(config_id)),
        }
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        if task_id.len() > MAX_ID_BYTES {
            return Ok(Vec::new());
        }
        let store = &self.tasks;
        let mut connection = store.inner.store.connection();
        // At most 50 of at most 8 KiB each.
        let configs: Vec<String> = store
            .bounded(
                redis::cmd("HVALS")
                    .arg(store.key(&format!("p:{task_id}")))
                    .query_async(&mut connection),
            )
            .await?;
        configs.iter().map(|json| decode(json)).collect()
    }

    async fn delete(&self, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        if task_id.len() > MAX_ID_BYTES || config_id.len() > MAX_ID_BYTES {
            return Ok(());
        }
        self.remove(task_id, Some(config_id)).await
    }

    async fn delete_all(&self, task_id: &str) -> Result<(), A2AError> {
        if task_id.len() > MAX_ID_BYTES {
            return Ok(());
        }
        self.remove(task_id, None).await
    }
}

impl RedisPushConfigs {
    /// Removes config `config` of `task` (all of its configs for `None`).
    async fn remove(&self, task: &str, config: Option<&str>) -> Result<(), A2AError> {
        let store = &self.tasks;
        let _: i64 = store
            .run(&store.inner.scripts.push_delete, |call| {
                call.arg(task)
                    .arg(config.unwrap_or(""))
                    .arg(CONFIG_OVERHEAD);
            })
            .await?;
        Ok(())
    }
}

/// The fleet's Redis keeps push too: the configs beside the tasks, the outbox's lanes claimed
/// under the tasks' lease, and the FAILED status of a task whose lease lapsed
/// (TASK_ABANDONED) notified by the reaper.
impl crate::push::PushStore for RedisTaskStore {
    fn push_configs(&self) -> Arc<dyn a2a_server::PushConfigStore> {
        Arc::new(RedisTaskStore::push_configs(self))
    }

    fn outbox(&self) -> Arc<dyn crate::push::Outbox> {
        Arc::new(RedisTaskStore::outbox(self))
    }

    fn claim_duration(&self) -> std::time::Duration {
        self.lease_duration()
    }

    fn delivered_by(&self, push: &PushDelivery) {
        self.notify_reaped(push.clone());
    }
}

/// The push engine over the fleet's Redis: written here, beside the store it stands on, so
/// that the engine's own module names no store.
impl PushDelivery {
    /// Configs and pending notifications in the fleet's Redis, beside `tasks` (its configs
    /// are [`RedisTaskStore::push_configs`](RedisTaskStore::push_configs)), each lane
    /// claimed under the tasks' lease; the FAILED status of a task whose lease lapsed
    /// (TASK_ABANDONED) is notified too: [`PushDelivery::shared`] over the store.
    pub fn redis(sender: PushSender, tasks: &RedisTaskStore) -> Self {
        PushDelivery::shared(sender, tasks)
    }
}
