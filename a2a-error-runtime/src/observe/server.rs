//! What a server records of the requests it serves.

use super::kept;
use super::{System, code_label, reason_label};

/// A request to a server was answered (a stream: ended, see [`StreamServed`]) after
/// `elapsed`, or failed with `failed` (its A2A code and reason); `method` is a registered
/// method's name, or `None` (`other`). A failure's series carries `error.type` and
/// `rpc.status_code` too.
#[doc(hidden)]
pub fn request_served(
    system: System,
    method: Option<&std::sync::Arc<str>>,
    failed: Option<(i32, &str)>,
    elapsed: std::time::Duration,
) {
    match failed {
        Some((code, reason)) => kept::failed(system, method, code, reason, elapsed),
        None => kept::answered(system, method, elapsed),
    }
}

/// A request to the JSON-RPC endpoint failed with `code` and `reason` after `elapsed`: its
/// duration and its error reply counted at once, as [`request_served`] and [`error_sent`]
/// would (one lookup of the thread's keys, not two).
#[doc(hidden)]
pub fn request_failed(
    system: System,
    method: Option<&std::sync::Arc<str>>,
    code: i32,
    reason: &str,
    elapsed: std::time::Duration,
) {
    kept::failed_and_counted(system, method, code, reason, elapsed);
}

thread_local! {
    /// While a served stream is polled for its caller (on this thread, the poll being
    /// synchronous): the failure it ended with, once something inside the poll said so
    /// ([`stream_failed`]). `None` outside such a poll.
    static STREAM_FAILURE: std::cell::Cell<Option<Option<(i32, metrics::SharedString)>>> =
        const { std::cell::Cell::new(None) };
}

/// The stream being polled for its caller ended failed with `code` and `reason`, though its
/// last item is no error: a task's FAILED status update, A2A's way of ending a stream whose
/// work had started. Nothing when no served stream is being polled on this thread.
#[cfg_attr(not(feature = "sdk"), allow(dead_code))]
#[doc(hidden)]
pub fn stream_failed(code: i32, reason: &str) {
    STREAM_FAILURE.with(|slot| {
        let current = slot.take();
        slot.set(match current {
            Some(None) => Some(Some((code, reason_label(reason)))),
            // Not inside a served stream's poll, or a failure already said: kept as it was.
            other => other,
        });
    });
}

/// A stream served to a caller, recorded when it ends (or its caller leaves): its duration
/// from the request's arrival to its end in `rpc.server.call.duration`, its outcome by how it
/// ended (an error, before or after its first event, or a FAILED status: `error` with its code
/// and reason, also counted in `a2a.server.errors`; else `ok`).
#[doc(hidden)]
pub struct StreamServed {
    system: System,
    method: Option<std::sync::Arc<str>>,
    began: std::time::Instant,
    failed: Option<(i32, metrics::SharedString)>,
}

impl StreamServed {
    /// A stream of `method` (a registered method's name, or `None`) that `system` began
    /// serving at `began`.
    pub(crate) fn new(
        system: System,
        method: Option<std::sync::Arc<str>>,
        began: std::time::Instant,
    ) -> Self {
        StreamServed {
            system,
            method,
            began,
            failed: None,
        }
    }

    /// A stream of one of the A2A methods (a 1.0 name), as the bridge's REST routes and
    /// gRPC service name them.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn a2a(system: System, method: &'static str, began: std::time::Instant) -> Self {
        Self::new(system, a2a_method(Some(method)).cloned(), began)
    }

    /// Polls `poll` (the stream's next item) with the stream's failure slot set, so that a
    /// FAILED status update made inside it is recorded; an error item is recorded as the
    /// stream's failure.
    pub(crate) fn poll<T, E: crate::wire::error::A2aError + ?Sized>(
        &mut self,
        poll: impl FnOnce() -> std::task::Poll<Option<Result<T, Box<E>>>>,
    ) -> std::task::Poll<Option<Result<T, Box<E>>>> {
        let outer = STREAM_FAILURE.replace(Some(None));
        let polled = poll();
        if let Some(Some(failed)) = STREAM_FAILURE.replace(outer)
            && self.failed.is_none()
        {
            self.failed = Some(failed);
        }
        if let std::task::Poll::Ready(Some(Err(error))) = &polled
            && self.failed.is_none()
        {
            self.failed = Some((error.code(), reason_label(error.reason())));
        }
        polled
    }
}

impl Drop for StreamServed {
    fn drop(&mut self) {
        let elapsed = self.began.elapsed();
        match &self.failed {
            Some((code, reason)) => {
                request_failed(self.system, self.method.as_ref(), *code, reason, elapsed);
            }
            None => request_served(self.system, self.method.as_ref(), None, elapsed),
        }
    }
}

/// The name of A2A method `method` (a 1.0 name) as the keys' caches know it: one `Arc` a
/// method; `None` for a name that is none.
#[cfg(feature = "sdk")]
fn a2a_method(method: Option<&'static str>) -> Option<&'static std::sync::Arc<str>> {
    static NAMES: std::sync::LazyLock<Vec<std::sync::Arc<str>>> = std::sync::LazyLock::new(|| {
        crate::wire::method::METHODS
            .iter()
            .map(|method| std::sync::Arc::from(method.name))
            .collect()
    });
    method.and_then(|name| NAMES.iter().find(|known| &***known == name))
}

/// A request to one of the A2A methods (`method`, a 1.0 name; `None`: not one) was answered by
/// the SDK bridge's REST routes or gRPC service, as [`request_served`] records the JSON-RPC
/// endpoint's; a failure is recorded on its `span` too.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn a2a_request_served(
    system: System,
    method: Option<&'static str>,
    span: &tracing::Span,
    failed: Option<(i32, &str)>,
    elapsed: std::time::Duration,
) {
    if let Some((code, reason)) = failed {
        server_failed(span, code, reason);
    }
    request_served(system, a2a_method(method), failed, elapsed);
}

/// The span of a request served by `system`'s endpoint (`a2a.server.call`, at `DEBUG`, as
/// tower-http's are, so that a log filter at `INFO` makes none), for `method`: a registered
/// or A2A method's name, else `other`. OpenTelemetry sees it as a server span named after the
/// method.
#[doc(hidden)]
pub fn server_span(system: System, method: &str) -> tracing::Span {
    tracing::debug_span!(
        "a2a.server.call",
        otel.name = method,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        rpc.system.name = system.name(),
        rpc.method = method,
        rpc.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    )
}

/// The request `span` serves failed with the A2A `code` (`rpc.status_code`, on every binding)
/// and `reason` (`error.type`).
#[doc(hidden)]
pub fn server_failed(span: &tracing::Span, code: i32, reason: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "error");
    span.record("rpc.status_code", &*code_label(code));
    span.record("error.type", &*reason_label(reason));
}

/// A request was refused at its caller's rate limit.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn rate_limited() {
    metrics::counter!("a2a.server.rate_limited").increment(1);
}

/// A shared task whose lease lapsed was ended FAILED by this replica.
#[cfg(all(feature = "sdk", feature = "redis"))]
#[doc(hidden)]
pub fn task_abandoned() {
    metrics::counter!("a2a.tasks.abandoned").increment(1);
}

/// This replica stopped an execution whose task's lease it lost.
#[cfg(feature = "sdk")]
#[doc(hidden)]
pub fn lease_lost() {
    metrics::counter!("a2a.tasks.leases_lost").increment(1);
}

/// A request was refused by an endpoint at its concurrency limit (shed).
#[doc(hidden)]
pub fn shed() {
    metrics::counter!("a2a.server.shed").increment(1);
}

/// An error reply a server sent; `method` is a registered method's name or `None`.
#[doc(hidden)]
pub fn error_sent(method: Option<&std::sync::Arc<str>>, code: i32, reason: &str) {
    kept::error(method, code, reason);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    /// The value of `key`'s label `name`.
    fn label(key: &metrics::Key, name: &str) -> Option<String> {
        key.labels()
            .find(|label| label.key() == name)
            .map(|label| label.value().to_owned())
    }

    /// The server error counts in `recorder`, as (method, code, reason, count).
    fn counts(recorder: &DebuggingRecorder) -> Vec<(String, String, String, u64)> {
        let mut counts: Vec<_> = recorder
            .snapshotter()
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| {
                let key = key.key();
                let DebugValue::Counter(count) = value else {
                    return None;
                };
                let label = |name: &str| label(key, name).unwrap_or_default();
                (key.name() == "a2a.server.errors").then(|| {
                    (
                        label("rpc.method"),
                        label("rpc.status_code"),
                        label("error.type"),
                        count,
                    )
                })
            })
            .collect();
        counts.sort();
        counts
    }

    #[test]
    fn a_stream_is_recorded_at_its_end_by_how_it_ended() {
        use super::super::{StreamServed, System, stream_failed};
        use std::task::Poll;
        type Item = Option<Result<u8, Box<crate::wire::standard::StandardError>>>;
        let recorder = DebuggingRecorder::new();
        let method: Arc<str> = Arc::from("SendStreamingMessage");
        metrics::with_local_recorder(&recorder, || {
            // Said outside a served stream's poll: nothing.
            stream_failed(-32055, "CONTENT_TOO_LARGE");
            // An event, then one that says the stream ended FAILED.
            let began = std::time::Instant::now();
            let mut served = StreamServed::new(System::JsonRpc, Some(method.clone()), began);
            let _ = served.poll(|| -> Poll<Item> { Poll::Ready(Some(Ok(1))) });
            let _ = served.poll(|| -> Poll<Item> {
                stream_failed(-32062, "MODEL_STREAM_INTERRUPTED");
                stream_failed(-32603, "INTERNAL_ERROR");
                Poll::Ready(Some(Ok(2)))
            });
            drop(served);
            // An error item.
            let mut served = StreamServed::new(System::JsonRpc, Some(method.clone()), began);
            let _ = served.poll(|| -> Poll<Item> {
                Poll::Ready(Some(Err(Box::new(
                    crate::wire::standard::StandardError::DeadlineExceeded,
                ))))
            });
            drop(served);
            // Ended well.
            let served = StreamServed::new(System::JsonRpc, Some(method.clone()), began);
            drop(served);
        });
        let found = |method: &str, code: &str, reason: &str, n| {
            (method.to_owned(), code.to_owned(), reason.to_owned(), n)
        };
        assert_eq!(
            counts(&recorder),
            [
                found("SendStreamingMessage", "-32054", "DEADLINE_EXCEEDED", 1),
                found(
                    "SendStreamingMessage",
                    "-32062",
                    "MODEL_STREAM_INTERRUPTED",
                    1
                ),
            ]
        );
        let outcomes: Vec<String> = recorder
            .snapshotter()
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(key, ..)| key.key().name() == "rpc.server.call.duration")
            .map(|(key, ..)| label(key.key(), "outcome").unwrap_or_default())
            .collect();
        assert_eq!(outcomes.iter().filter(|o| *o == "error").count(), 2);
        assert_eq!(outcomes.iter().filter(|o| *o == "ok").count(), 1);
    }

    #[test]
    fn server_error_keys_are_made_once_and_every_recorder_gets_its_counts() {
        let get: Arc<str> = Arc::from("GetTask");
        let first = DebuggingRecorder::new();
        metrics::with_local_recorder(&first, || {
            super::super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            super::super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            super::super::error_sent(None, -32601, "METHOD_NOT_FOUND");
        });
        let found = |method: &str, code: &str, reason: &str, n| {
            (method.to_owned(), code.to_owned(), reason.to_owned(), n)
        };
        assert_eq!(
            counts(&first),
            [
                found("GetTask", "-32001", "TASK_NOT_FOUND", 2),
                found("other", "-32601", "METHOD_NOT_FOUND", 1)
            ]
        );
        // Another recorder, the keys already made: its counts are its own.
        let second = DebuggingRecorder::new();
        metrics::with_local_recorder(&second, || {
            super::super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
            // Past the keys a thread keeps: still counted, under the bounded labels.
            for i in 0..200 {
                super::super::error_sent(Some(&get), -32099, &format!("PEER_REASON_{i}"));
            }
        });
        let counts = counts(&second);
        assert!(counts.contains(&found("GetTask", "-32001", "TASK_NOT_FOUND", 1)));
        let all: u64 = counts.iter().map(|(.., n)| n).sum();
        assert_eq!(all, 201);
        assert!(counts.iter().any(|(_, _, reason, _)| reason == "OTHER"));
        // The first recorder again, after the second: the thread's handle, the second's, is
        // replaced by one of the first's (a snapshot takes what was counted since the last).
        metrics::with_local_recorder(&first, || {
            super::super::error_sent(Some(&get), -32001, "TASK_NOT_FOUND");
        });
        assert!(counts_of_first_include(&first, 1));
    }

    fn counts_of_first_include(recorder: &DebuggingRecorder, n: u64) -> bool {
        counts(recorder).iter().any(|(method, _, reason, count)| {
            method == "GetTask" && reason == "TASK_NOT_FOUND" && *count == n
        })
    }

    /// The durations of `method` in `recorder`, answered and failed.
    fn durations(recorder: &DebuggingRecorder, method: &str) -> (usize, usize) {
        let mut found = (0, 0);
        for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
            let key = key.key();
            if key.name() != "rpc.server.call.duration"
                || label(key, "rpc.method").as_deref() != Some(method)
            {
                continue;
            }
            let DebugValue::Histogram(samples) = value else {
                continue;
            };
            match label(key, "outcome").as_deref() {
                Some("ok") => found.0 += samples.len(),
                _ => found.1 += samples.len(),
            }
        }
        found
    }

    #[test]
    fn server_durations_reach_whichever_recorder_is_current() {
        let name: Arc<str> = Arc::from("SendMessage");

        let time = std::time::Duration::from_millis(3);
        let record = |ok: bool| {
            let failed = (!ok).then_some((-32603, "INTERNAL_ERROR"));
            super::super::request_served(super::super::System::JsonRpc, Some(&name), failed, time)
        };
        // Handles made with no recorder at all (the no-op one) are not the next recorder's.
        record(true);
        let first = DebuggingRecorder::new();
        metrics::with_local_recorder(&first, || {
            record(true);
            record(true);
            record(false);
        });
        assert_eq!(durations(&first, "SendMessage"), (2, 1));
        let second = DebuggingRecorder::new();
        metrics::with_local_recorder(&second, || record(true));
        assert_eq!(durations(&second, "SendMessage"), (1, 0));
        // Back to the first: a snapshot takes what was recorded since the last.
        metrics::with_local_recorder(&first, || record(false));
        assert_eq!(durations(&first, "SendMessage"), (0, 1));
    }

    #[test]
    fn a_failure_counted_with_its_request_is_both_series_in_every_recorder() {
        let name: Arc<str> = Arc::from("GetTask");
        let time = std::time::Duration::from_millis(2);
        let fail = || {
            super::super::request_failed(
                super::super::System::JsonRpc,
                Some(&name),
                -32001,
                "TASK_NOT_FOUND",
                time,
            )
        };
        let first = DebuggingRecorder::new();
        metrics::with_local_recorder(&first, || {
            fail();
            fail();
        });
        assert_eq!(both_series(&first), (2, 2));
        // Another recorder, the thread's keys already made: its own handles.
        let second = DebuggingRecorder::new();
        metrics::with_local_recorder(&second, fail);
        assert_eq!(both_series(&second), (1, 1));
    }

    /// The durations and error counts in one snapshot of `recorder` (a snapshot takes what
    /// was recorded since the last), each series checked to carry the labels
    /// `request_served` and `error_sent` give a failed GetTask.
    fn both_series(recorder: &DebuggingRecorder) -> (usize, u64) {
        let (mut durations, mut errors) = (0, 0);
        for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
            let key = key.key();
            assert_eq!(label(key, "rpc.method").as_deref(), Some("GetTask"));
            assert_eq!(label(key, "rpc.status_code").as_deref(), Some("-32001"));
            assert_eq!(label(key, "error.type").as_deref(), Some("TASK_NOT_FOUND"));
            match (key.name(), value) {
                ("rpc.server.call.duration", DebugValue::Histogram(samples)) => {
                    assert_eq!(label(key, "outcome").as_deref(), Some("error"));
                    assert_eq!(label(key, "rpc.system.name").as_deref(), Some("jsonrpc"));
                    durations += samples.len();
                }
                ("a2a.server.errors", DebugValue::Counter(count)) => errors += count,
                other => panic!("unexpected series {other:?}"),
            }
        }
        (durations, errors)
    }
}
