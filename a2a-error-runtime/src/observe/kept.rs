//! The series a server records (`rpc.server.call.duration`, with a failure's `error.type`
//! and `rpc.status_code`, and `a2a.server.errors`), whose keys a request picks (its binding,
//! method, code and reason): each thread keeps the keys it has built, and with each the
//! handle of the recorder it was registered with. A handle belongs to the recorder that was
//! current when it was made: one kept without its recorder would never show a recorder
//! installed later (or a test's local one) these requests, so it is used only while the same
//! recorder is. An answered request's costs a scan of the thread's keys, no key hashed. Building a key (labels in a new Vec, the
//! code and reason looked up) was most of what counting an error cost, ~0.7k instructions of
//! a ~31k-instruction error reply; registering it again cost ~1.8k with Prometheus installed.
//! A recorder installed later (or a test's local one) still gets every count, its handle
//! made on its first.

use std::cell::RefCell;
use std::sync::Arc;
use std::thread::LocalKey;

use metrics::{Key, Label, Recorder, SharedString};

/// The recorder, as a number that tells it from any other recorder alive at the same time.
fn recorder_id(recorder: &dyn metrics::Recorder) -> usize {
    std::ptr::from_ref(recorder).cast::<()>() as usize
}

/// The metadata of every series a server records.
static SERVER_METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// The most keys one thread keeps of each series; past that (a peer's reasons passed on
/// are many), a key is built for each count, as the `counter!` macro does.
const MAX_KEYS: usize = 128;

/// What tells one failure's series from another's.
struct Labels {
    system: Option<super::System>,
    method: Option<Arc<str>>,
    code: i32,
    reason: Box<str>,
}

impl Labels {
    fn is(
        &self,
        system: Option<super::System>,
        method: Option<&Arc<str>>,
        code: i32,
        reason: &str,
    ) -> bool {
        self.system == system
            && self.code == code
            && *self.reason == *reason
            && match (&self.method, method) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

/// A kind of series handle, and the keys it is registered under.
trait Handle: Sized {
    type Keys;
    fn register(recorder: &dyn Recorder, keys: &Self::Keys) -> Self;
}

impl Handle for metrics::Counter {
    type Keys = Key;
    fn register(recorder: &dyn Recorder, key: &Key) -> Self {
        recorder.register_counter(key, &SERVER_METADATA)
    }
}

impl Handle for metrics::Histogram {
    type Keys = Key;
    fn register(recorder: &dyn Recorder, key: &Key) -> Self {
        recorder.register_histogram(key, &SERVER_METADATA)
    }
}

/// A failed request's two series, its duration's and its error count's: found with one
/// lookup (two cost ~0.2k instructions more an error reply).
struct Failure {
    duration: metrics::Histogram,
    errors: metrics::Counter,
}

impl Handle for Failure {
    type Keys = (Key, Key);
    fn register(recorder: &dyn Recorder, (duration, errors): &(Key, Key)) -> Self {
        Failure {
            duration: metrics::Histogram::register(recorder, duration),
            errors: metrics::Counter::register(recorder, errors),
        }
    }
}

struct Kept<H: Handle> {
    labels: Labels,
    key: H::Keys,
    /// The handle and the recorder it belongs to.
    handle: RefCell<Option<(usize, H)>>,
}

type Cache<H> = RefCell<Vec<Kept<H>>>;

thread_local! {
    static ERRORS: Cache<metrics::Counter> = const { RefCell::new(Vec::new()) };
    // Apart from the failures', so that many reasons never crowd the answered series out.
    static ANSWERED: Cache<metrics::Histogram> = const { RefCell::new(Vec::new()) };
    static FAILED: Cache<metrics::Histogram> = const { RefCell::new(Vec::new()) };
    static FAILED_AND_COUNTED: Cache<Failure> = const { RefCell::new(Vec::new()) };
}

/// Uses (`apply`) the current recorder's handle of the series `labels` names, from this
/// thread's `cache` when it is there; else registers the key `build` makes, and keeps it.
fn with<H: Handle>(
    cache: &'static LocalKey<Cache<H>>,
    labels: (Option<super::System>, Option<&Arc<str>>, i32, &str),
    build: impl Fn() -> H::Keys,
    apply: impl Fn(&H),
) {
    let (system, method, code, reason) = labels;
    metrics::with_recorder(|recorder| {
        let current = recorder_id(recorder);
        let done = cache.try_with(|kept| {
            // A recorder that counts an error of its own while this one is counted finds
            // the cache borrowed: it builds its key, and the cache is left as it is.
            if let Ok(kept) = kept.try_borrow()
                && let Some(found) = kept
                    .iter()
                    .find(|k| k.labels.is(system, method, code, reason))
            {
                let Ok(mut handle) = found.handle.try_borrow_mut() else {
                    return apply(&H::register(recorder, &found.key));
                };
                match &*handle {
                    Some((id, handle)) if *id == current => apply(handle),
                    _ => {
                        let fresh = H::register(recorder, &found.key);
                        apply(&fresh);
                        *handle = Some((current, fresh));
                    }
                }
                return;
            }
            let key = build();
            let handle = H::register(recorder, &key);
            apply(&handle);
            // A longer reason is an `OTHER` label anyway.
            if let Ok(mut kept) = kept.try_borrow_mut()
                && kept.len() < MAX_KEYS
                && reason.len() <= super::labels::MAX_LEN
            {
                kept.push(Kept {
                    labels: Labels {
                        system,
                        method: method.cloned(),
                        code,
                        reason: reason.into(),
                    },
                    key,
                    handle: RefCell::new(Some((current, handle))),
                });
            }
        });
        // Counted while the thread's locals are torn down: with a key of its own.
        if done.is_err() {
            apply(&H::register(recorder, &build()));
        }
    });
}

/// `rpc.method`: a registered name (the server's own, a set fixed at start-up), else
/// `other`.
fn method_label(method: Option<&Arc<str>>) -> SharedString {
    method.map_or(SharedString::const_str("other"), |name| {
        SharedString::from_shared(Arc::clone(name))
    })
}

/// The key of `a2a.server.errors` for an error reply.
fn error_key(method: Option<&Arc<str>>, code: i32, reason: &str) -> Key {
    let labels = vec![
        Label::new("rpc.method", method_label(method)),
        Label::new("rpc.status_code", super::code_label(code)),
        Label::new("error.type", super::reason_label(reason)),
    ];
    Key::from_parts("a2a.server.errors", labels)
}

/// The key of `rpc.server.call.duration` for a failed request.
fn failed_key(system: super::System, method: Option<&Arc<str>>, code: i32, reason: &str) -> Key {
    let labels = vec![
        Label::new("rpc.system.name", SharedString::const_str(system.name())),
        Label::new("rpc.method", method_label(method)),
        Label::new("outcome", SharedString::const_str("error")),
        Label::new("rpc.status_code", super::code_label(code)),
        Label::new("error.type", super::reason_label(reason)),
    ];
    Key::from_parts(super::SERVER_DURATION, labels)
}

/// Counts one error reply in `a2a.server.errors`.
pub(super) fn error(method: Option<&Arc<str>>, code: i32, reason: &str) {
    with(
        &ERRORS,
        (None, method, code, reason),
        || error_key(method, code, reason),
        |counter: &metrics::Counter| counter.increment(1),
    );
}

/// [`failed`] and [`error`] at once, for a request whose error is replied: one lookup.
pub(super) fn failed_and_counted(
    system: super::System,
    method: Option<&Arc<str>>,
    code: i32,
    reason: &str,
    elapsed: std::time::Duration,
) {
    let seconds = elapsed.as_secs_f64();
    with(
        &FAILED_AND_COUNTED,
        (Some(system), method, code, reason),
        || {
            (
                failed_key(system, method, code, reason),
                error_key(method, code, reason),
            )
        },
        |failure: &Failure| {
            failure.duration.record(seconds);
            failure.errors.increment(1);
        },
    );
}

/// Records an answered request's duration in `rpc.server.call.duration`.
pub(super) fn answered(
    system: super::System,
    method: Option<&Arc<str>>,
    elapsed: std::time::Duration,
) {
    let build = || {
        let labels = vec![
            Label::new("rpc.system.name", SharedString::const_str(system.name())),
            Label::new("rpc.method", method_label(method)),
            Label::new("outcome", SharedString::const_str("ok")),
        ];
        Key::from_parts(super::SERVER_DURATION, labels)
    };
    let seconds = elapsed.as_secs_f64();
    with(
        &ANSWERED,
        (Some(system), method, 0, ""),
        build,
        |histogram: &metrics::Histogram| histogram.record(seconds),
    );
}

/// Records a failed request's duration in `rpc.server.call.duration`.
pub(super) fn failed(
    system: super::System,
    method: Option<&Arc<str>>,
    code: i32,
    reason: &str,
    elapsed: std::time::Duration,
) {
    let seconds = elapsed.as_secs_f64();
    with(
        &FAILED,
        (Some(system), method, code, reason),
        || failed_key(system, method, code, reason),
        |histogram: &metrics::Histogram| histogram.record(seconds),
    );
}
