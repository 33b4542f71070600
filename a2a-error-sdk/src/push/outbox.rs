//! The outbox: the notifications not yet ended, in lanes (one task's notifications to one of
//! its configs, delivered in order), claimed under a lease by the replica that delivers them.
//! In this process ([`MemoryOutbox`](super::memory::MemoryOutbox)), in Redis (the fleet's
//! store, `shared::outbox`), or in a store of your own ([`Outbox`], through
//! [`PushStore`](super::store::PushStore)).

use a2a::A2AError;
use serde::{Deserialize, Serialize};

/// The largest notification body kept (a StreamResponse as JSON): a larger event is not
/// delivered, counted as a dead letter and logged, but not kept.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// The most notifications pending in one lane (one task, one receiver).
pub const MAX_PER_LANE: usize = 1000;
/// The most notifications pending in all.
pub const MAX_PENDING: usize = 10_000;
/// The most bytes of notifications pending in all (their bodies and receivers).
pub const MAX_PENDING_BYTES: u64 = 64 << 20;
/// The notifications one caller (the owner of their tasks) has pending that are always
/// taken while the outbox has room: an eighth of [`MAX_PENDING`]. Past it, a caller's
/// notifications are taken only while the outbox is less than half full (by count and by
/// bytes), so one caller whose receivers hang fills at most half of it and every other caller
/// keeps room for its own share.
pub const MAX_PENDING_PER_CALLER: usize = MAX_PENDING / 8;
/// The bytes of one caller's pending notifications always taken while there is room: an
/// eighth of [`MAX_PENDING_BYTES`] (see [`MAX_PENDING_PER_CALLER`]).
pub const MAX_PENDING_BYTES_PER_CALLER: u64 = MAX_PENDING_BYTES / 8;

/// Whether a caller with `caller` notifications of `caller_bytes` pending may queue one more
/// of `weight`, while `all` of `all_bytes` are pending in all (the outbox's and the lane's
/// own bounds checked apart): within its share, or while the outbox is less than half full.
/// What an [`Outbox`] of your own asks before it takes an entry.
pub fn within_share(
    (caller, caller_bytes): (usize, u64),
    (all, all_bytes): (usize, u64),
    weight: u64,
) -> bool {
    (caller < MAX_PENDING_PER_CALLER && caller_bytes + weight <= MAX_PENDING_BYTES_PER_CALLER)
        || (all < MAX_PENDING / 2 && all_bytes + weight <= MAX_PENDING_BYTES / 2)
}
/// The most dead letters kept (the oldest go first).
pub const MAX_DEAD_LETTERS: usize = 1000;
/// The most bytes of dead letters kept.
pub const MAX_DEAD_BYTES: u64 = 16 << 20;

/// One notification to one receiver, as the outbox keeps it: an outbox of your own keeps it
/// as it is (it is serde: the Redis outbox keeps it as JSON) and reads it through these
/// methods.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// The `webhook-id`, the same on every attempt and every replica.
    pub(crate) id: String,
    pub(crate) task: String,
    /// The config it is for.
    pub(crate) config: String,
    /// When the event happened, in Unix ms (its age counts from here).
    pub(crate) at: u64,
    pub(crate) url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<String>,
    /// `(scheme, credentials)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) auth: Option<(String, String)>,
    /// The StreamResponse, as JSON.
    pub(crate) body: String,
    /// The caller whose task it is (its scope key in hex; empty: the anonymous caller, or
    /// not known), whose share it takes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) caller: String,
}

impl Entry {
    /// The lane this entry waits in.
    pub fn lane(&self) -> String {
        lane(&self.task, &self.config)
    }

    /// Its `webhook-id`: unique, the same on every attempt and every replica.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task it is about.
    pub fn task(&self) -> &str {
        &self.task
    }

    /// When its event happened, in Unix milliseconds (its age counts from here).
    pub fn event_unix_ms(&self) -> u64 {
        self.at
    }

    /// The caller whose task it is, whose share of the outbox it takes (its scope key in
    /// hex; empty for the anonymous caller).
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// What it weighs in the outbox's byte bound.
    pub fn weight(&self) -> u64 {
        (self.body.len() + self.url.len() + self.task.len() + self.config.len() + 256) as u64
    }
}

/// The lane of `task`'s notifications for its config `config`: unambiguous whatever the two
/// hold (the task's length first).
pub(crate) fn lane(task: &str, config: &str) -> String {
    format!("{}.{task}{config}", task.len())
}

/// A notification that was not accepted before its deadline (or could not be kept): listed by
/// [`PushDelivery::dead_letters`](super::PushDelivery::dead_letters), replayable.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeadLetter {
    #[serde(flatten)]
    pub(crate) entry: Entry,
    /// Why: `expired`, `overflow`.
    pub(crate) reason: String,
}

impl DeadLetter {
    /// Its `webhook-id` (what [`replay`](super::PushDelivery::replay) takes).
    pub fn id(&self) -> &str {
        &self.entry.id
    }
    /// The task it is about.
    pub fn task_id(&self) -> &str {
        &self.entry.task
    }
    /// The receiver's URL.
    pub fn url(&self) -> &str {
        &self.entry.url
    }
    /// When its event happened, in Unix milliseconds.
    pub fn event_unix_ms(&self) -> u64 {
        self.entry.at
    }
    /// Why it is a dead letter: `expired` (not accepted within the maximum age) or
    /// `overflow` (past a bound of pending notifications).
    pub fn reason(&self) -> &str {
        &self.reason
    }
    /// The notification's body (a StreamResponse as JSON).
    pub fn body(&self) -> &str {
        &self.entry.body
    }
}

/// Where the outbox keeps its lanes: in this process ([`MemoryOutbox`](super::memory::MemoryOutbox)),
/// in Redis, or in a store of your own. What an implementation must guarantee, for the
/// replicas that share it:
/// - **Bounded.** `add` takes an entry only within [`MAX_PER_LANE`], [`MAX_PENDING`],
///   [`MAX_PENDING_BYTES`] and the caller's share ([`within_share`]); a larger one is a dead
///   letter at once (`overflow`), and the dead letters keep within [`MAX_DEAD_LETTERS`] and
///   [`MAX_DEAD_BYTES`], the oldest going first.
/// - **One replica a lane.** A lane `claim`ed by one replica is not claimed by another until
///   its claim lapsed unrenewed (`head` and `renew` renew it); a call on a lane whose claim
///   was lost answers [`ClaimLost`], and the replica stops delivering it.
/// - **In order, once ended.** `head` answers a lane's first entry until `end` removes it.
#[async_trait::async_trait]
pub trait Outbox: Send + Sync + 'static {
    /// Queues `entries` (one per config) of an event of `task`, unless the task's terminal
    /// event was queued before; `terminal` marks this one so. Entries past a bound are dead
    /// letters at once. Returns how many became dead letters.
    async fn add(&self, task: &str, entries: Vec<Entry>, terminal: bool)
    -> Result<usize, A2AError>;

    /// Claims up to `max` lanes with notifications that no live replica holds.
    async fn claim(&self, max: usize) -> Vec<String>;

    /// The first notification of claimed `lane`, renewing the claim; `Ok(None)` when the
    /// lane is empty (and released); `Err` when the claim was lost.
    async fn head(&self, lane: &str) -> Result<Option<Entry>, ClaimLost>;

    /// Renews the claim of `lane`; `Err` when it was lost.
    async fn renew(&self, lane: &str) -> Result<(), ClaimLost>;

    /// Ends notification `id`, the head of `lane`: gone from the lane, kept as a dead letter
    /// for `Some(reason)`.
    async fn end(&self, lane: &str, id: &str, dead: Option<&str>) -> Result<(), ClaimLost>;

    /// Drops every pending notification of `lane` (its config is gone).
    async fn drop_lane(&self, lane: &str);

    /// The dead letters kept, oldest first.
    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, A2AError>;

    /// Queues dead letter `id` again (its age counting from now); `false` when there is none.
    async fn replay(&self, id: &str, now: u64) -> Result<bool, A2AError>;

    /// When the oldest pending notification's event happened, in Unix ms.
    async fn oldest(&self) -> Option<u64>;
}

/// A lane's claim was lost (taken by another replica after a lapse, or the store failed).
#[derive(Clone, Copy, Debug)]
pub struct ClaimLost;
