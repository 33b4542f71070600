//! [`PushStore`]: a store that keeps push notifications for every replica that shares it, so
//! that a fleet delivers each notification once, in order, even when the replica that queued
//! it dies. `RedisTaskStore` is one; a store of your own (Postgres, DynamoDB, …) another once
//! it implements this trait, and [`PushDelivery::shared`](super::PushDelivery::shared) is
//! built on it.

use std::sync::Arc;
use std::time::Duration;

use a2a_server::PushConfigStore;

use super::PushDelivery;
use super::outbox::Outbox;

/// A store whose replicas deliver push notifications together: the tasks' push configs,
/// where every replica reads them, and an [`Outbox`] every replica queues into and claims
/// lanes of.
pub trait PushStore: Send + Sync + 'static {
    /// The tasks' push configs (the SDK's `PushConfigStore`), beside the tasks: the bridge
    /// saves, lists and deletes them here, and the delivery reads them at each event.
    fn push_configs(&self) -> Arc<dyn PushConfigStore>;

    /// The outbox the replicas share.
    fn outbox(&self) -> Arc<dyn Outbox>;

    /// How long a replica's claim of a lane lasts without a renewal: a dead replica's lanes
    /// go to another after it (the claims are renewed every third of it).
    fn claim_duration(&self) -> Duration;

    /// Given the delivery built on this store, once: a store that ends tasks itself (a reaper
    /// of lapsed leases) tells each one's last status with
    /// [`PushDelivery::notify_ended`](super::PushDelivery::notify_ended). By default nothing.
    fn delivered_by(&self, push: &PushDelivery) {
        let _ = push;
    }
}
