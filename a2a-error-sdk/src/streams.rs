//! [`Streams`]: the SendStreamingMessage calls the bridge has run, by caller and messageId,
//! so that a retried stream is resumed rather than run a second time.
//!
//! The dedup remembers a unary reply and replays it; a stream cannot be replayed byte for
//! byte, and before this a SendStreamingMessage with a messageId already used ran the work
//! again. With a dedup configured, the bridge records each stream's message (its
//! fingerprint) and, once the first event names it, its task. The same messageId from the
//! same caller then:
//! - with the same message, once the task is known: is the task's subscription (its state as
//!   it stands, then its live events), or the task itself if it has ended; a unary
//!   SendMessage gets the task;
//! - with the same message, before the first event: MESSAGE_IN_PROGRESS, retry in 1 s;
//! - with another message: MESSAGE_ID_REUSED.
//!
//! A stream that failed before its first event is forgotten: its retry runs it.
//!
//! In this process only (a replica does not see another's streams), for 10 minutes, at most
//! 100,000 streams and 16 MiB.

use std::time::Duration;

use a2a_error_runtime::bounded::{BoundedMap, Change};

/// How long a stream's record is kept.
const WINDOW: Duration = Duration::from_secs(600);

/// A stream the bridge ran.
#[derive(Clone)]
struct Stream {
    fingerprint: u64,
    task: Option<String>,
}

/// What a SendStreamingMessage (or SendMessage) finds of an earlier stream of its messageId.
pub(crate) enum EarlierStream {
    /// None: this call runs it (and is recorded).
    New,
    /// The stream of this message, on this task.
    Task(String),
    /// The stream of this message, before its first event.
    InProgress,
    /// Another message under the same id.
    Reused,
}

/// The streams the bridge ran, by `scope:messageId`.
pub(crate) struct Streams {
    records: BoundedMap<Stream>,
    /// Whether any stream was ever recorded: until then a SendMessage looks nothing up.
    any: std::sync::atomic::AtomicBool,
}

impl Streams {
    pub(crate) fn new() -> Self {
        Streams {
            records: BoundedMap::new(100_000, 16 << 20),
            any: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn weight(key: &str) -> u64 {
        key.len() as u64 + 160
    }

    /// Whether any stream was ever recorded (a SendMessage need look nothing up before).
    pub(crate) fn any(&self) -> bool {
        self.any.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the record of `key` says of a call with `fingerprint`; a new stream's record is
    /// made when `start` is true.
    pub(crate) fn seen(&self, key: &str, fingerprint: u64, start: bool) -> EarlierStream {
        use std::sync::atomic::Ordering;
        if start {
            self.any.store(true, Ordering::Relaxed);
        } else if !self.any.load(Ordering::Relaxed) {
            return EarlierStream::New;
        }
        self.records.update(key, |held| match held {
            None if start => {
                let record = Stream {
                    fingerprint,
                    task: None,
                };
                let put = Change::Put {
                    value: record,
                    weight: Self::weight(key),
                    ttl: WINDOW,
                };
                (put, EarlierStream::New)
            }
            None => (Change::Keep, EarlierStream::New),
            Some(held) if held.fingerprint != fingerprint => (Change::Keep, EarlierStream::Reused),
            Some(held) => match &held.task {
                Some(task) => (Change::Keep, EarlierStream::Task(task.clone())),
                None => (Change::Keep, EarlierStream::InProgress),
            },
        })
    }

    /// The stream of `key` runs `task`.
    pub(crate) fn started(&self, key: &str, task: &str) {
        self.records.update(key, |held| match held {
            Some(held) if held.task.is_none() => {
                let record = Stream {
                    fingerprint: held.fingerprint,
                    task: Some(task.to_owned()),
                };
                let put = Change::Put {
                    value: record,
                    weight: Self::weight(key) + task.len() as u64,
                    ttl: WINDOW,
                };
                (put, ())
            }
            _ => (Change::Keep, ()),
        });
    }

    /// The stream of `key` failed before it started: a retry runs it again.
    pub(crate) fn forget(&self, key: &str) {
        self.records.update(key, |_| (Change::Remove, ()));
    }
}
