//! The semantics in paused tokio time, over the memory store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use futures_util::future::{BoxFuture, ready};
use serde_json::{Value, json};

use super::*;
use crate::wire::error::{A2aError, RetryHint};
use crate::wire::standard::StandardError;

type D = Dedup<Value, StandardError>;

/// Counts runs of the work; each run sleeps `takes`, then ends in `outcome`.
#[derive(Clone, Default)]
struct Work {
    runs: Arc<AtomicU32>,
}

impl Work {
    fn run<R>(
        &self,
        takes: Duration,
        outcome: Result<Value, StandardError>,
    ) -> impl FnOnce(R) -> BoxFuture<'static, Result<Value, StandardError>> {
        let runs = Arc::clone(&self.runs);
        move |_: R| {
            Box::pin(async move {
                let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(takes).await;
                outcome.map(|value| json!({"run": n, "value": value}))
            })
        }
    }

    fn runs(&self) -> u32 {
        self.runs.load(Ordering::SeqCst)
    }
}

fn headers() -> &'static HeaderMap {
    static NONE: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
    NONE.get_or_init(HeaderMap::new)
}

const S: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn the_window_counts_from_completion() {
    let dedup = D::in_memory().window(60 * S);
    let work = Work::default();
    let first = dedup
        .run(
            "SendMessage",
            headers(),
            "m-1",
            "hi",
            work.run(30 * S, Ok(json!(1))),
        )
        .await
        .unwrap();
    // 50 s after it finished (80 s after it started): replayed, the same reply.
    tokio::time::advance(50 * S).await;
    let again = dedup
        .run(
            "SendMessage",
            headers(),
            "m-1",
            "hi",
            work.run(S, Ok(json!(2))),
        )
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(work.runs(), 1);
    // Past the window: a new run.
    tokio::time::advance(11 * S).await;
    let later = dedup
        .run(
            "SendMessage",
            headers(),
            "m-1",
            "hi",
            work.run(S, Ok(json!(3))),
        )
        .await
        .unwrap();
    assert_eq!(later["run"], 2);
}

#[tokio::test(start_paused = true)]
async fn duplicates_in_flight_wait_for_the_first_up_to_the_wait_limit() {
    let dedup = D::in_memory().wait_limit(20 * S);
    let work = Work::default();
    let first = dedup.run(
        "SendMessage",
        headers(),
        "m",
        "x",
        work.run(10 * S, Ok(json!(1))),
    );
    let second = dedup.run(
        "SendMessage",
        headers(),
        "m",
        "x",
        work.run(10 * S, Ok(json!(2))),
    );
    let (first, second) = tokio::join!(first, second);
    assert_eq!(first.unwrap(), second.unwrap());
    assert_eq!(work.runs(), 1);

    // Past the wait limit: told to come back, with a delay, without a second run.
    let dedup = D::in_memory().wait_limit(5 * S);
    let work = Work::default();
    let first = dedup.run(
        "SendMessage",
        headers(),
        "m",
        "x",
        work.run(30 * S, Ok(json!(1))),
    );
    let second = dedup.run(
        "SendMessage",
        headers(),
        "m",
        "x",
        work.run(S, Ok(json!(2))),
    );
    let (first, second) = tokio::join!(first, second);
    assert!(first.is_ok());
    let refused = second.unwrap_err();
    assert!(matches!(
        refused,
        DedupError::Refused(Refusal::InProgress { .. })
    ));
    assert_eq!(refused.reason(), "MESSAGE_IN_PROGRESS");
    assert_eq!(refused.code(), crate::wire::code::AGENT_UNAVAILABLE);
    assert_eq!(refused.retry_hint(), RetryHint::After(S));
    assert_eq!(work.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn final_errors_are_replayed_and_retryable_ones_forgotten() {
    let dedup = D::in_memory();
    let work = Work::default();
    let gone = || {
        Err(StandardError::TaskNotFound {
            task_id: Some("t".into()),
        })
    };
    let first = dedup
        .run("SendMessage", headers(), "final", "x", work.run(S, gone()))
        .await
        .unwrap_err();
    assert!(matches!(first, DedupError::Failed(_)));
    let replay = dedup
        .run(
            "SendMessage",
            headers(),
            "final",
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap_err();
    assert!(matches!(replay, DedupError::Replayed(_)));
    assert_eq!(replay.to_error_object(), first.to_error_object());
    assert_eq!(work.runs(), 1);

    let work = Work::default();
    let busy = Err(StandardError::AgentUnavailable { retry_after: None });
    dedup
        .run("SendMessage", headers(), "busy", "x", work.run(S, busy))
        .await
        .unwrap_err();
    let retried = dedup
        .run(
            "SendMessage",
            headers(),
            "busy",
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap();
    assert_eq!(retried["run"], 2);
}

#[tokio::test(start_paused = true)]
async fn panics_are_forgotten_and_reach_the_caller_as_panics() {
    let dedup = D::in_memory();
    let runs = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&runs);
    let panicking = dedup.clone();
    let caller = tokio::spawn(async move {
        panicking
            .run("SendMessage", headers(), "p", "x", move |_| async move {
                counted.fetch_add(1, Ordering::SeqCst);
                panic!("on purpose");
            })
            .await
    });
    assert!(caller.await.unwrap_err().is_panic());
    let work = Work::default();
    let after = dedup
        .run(
            "SendMessage",
            headers(),
            "p",
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap();
    assert_eq!(after["run"], 1, "the retry ran cleanly");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn work_outlives_a_caller_that_goes_away_and_is_recorded_once() {
    let dedup = D::in_memory();
    let work = Work::default();
    let gave_up = tokio::time::timeout(
        S,
        dedup.run(
            "SendMessage",
            headers(),
            "m",
            "x",
            work.run(10 * S, Ok(json!(1))),
        ),
    )
    .await;
    assert!(gave_up.is_err(), "the caller left before the work finished");
    tokio::time::advance(20 * S).await;
    let retry = dedup
        .run(
            "SendMessage",
            headers(),
            "m",
            "x",
            work.run(S, Ok(json!(2))),
        )
        .await
        .unwrap();
    assert_eq!(retry["run"], 1, "the first run's outcome, replayed");
    assert_eq!(work.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn work_that_outruns_its_claim_is_given_up_and_forgotten() {
    let dedup = D::in_memory().claim_ttl(5 * S);
    let work = Work::default();
    let first = dedup
        .run(
            "SendMessage",
            headers(),
            "slow",
            "x",
            work.run(60 * S, Ok(json!(1))),
        )
        .await
        .unwrap_err();
    assert!(matches!(first, DedupError::Refused(Refusal::Abandoned)));
    let retry = dedup
        .run(
            "SendMessage",
            headers(),
            "slow",
            "x",
            work.run(S, Ok(json!(2))),
        )
        .await
        .unwrap();
    assert_eq!(retry["run"], 2);
}

#[tokio::test(start_paused = true)]
async fn a_key_reused_for_another_request_is_refused() {
    let dedup = D::in_memory();
    let work = Work::default();
    dedup
        .run(
            "SendMessage",
            headers(),
            "m",
            json!({"text": "pay 5"}),
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap();
    let reused = dedup
        .run(
            "SendMessage",
            headers(),
            "m",
            json!({"text": "pay 500"}),
            work.run(S, Ok(json!(2))),
        )
        .await
        .unwrap_err();
    assert!(matches!(reused, DedupError::Refused(Refusal::IdReused)));
    assert_eq!(reused.code(), crate::wire::code::INVALID_PARAMS);
    assert_eq!(reused.reason(), "MESSAGE_ID_REUSED");
    assert!(!reused.is_retryable());
    // Also while the first is still in flight.
    let slow = dedup.run(
        "SendMessage",
        headers(),
        "n",
        "a",
        work.run(10 * S, Ok(json!(3))),
    );
    let other = dedup.run(
        "SendMessage",
        headers(),
        "n",
        "b",
        work.run(S, Ok(json!(4))),
    );
    let (_, other) = tokio::join!(slow, other);
    assert!(matches!(other, Err(DedupError::Refused(Refusal::IdReused))));
    assert_eq!(work.runs(), 2);
}

#[tokio::test(start_paused = true)]
async fn keys_are_scoped_by_caller_and_method() {
    let dedup = D::in_memory().identify(|headers| {
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let as_user = |token: &'static str| {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static(token));
        headers
    };
    let work = Work::default();
    let alice = dedup
        .run(
            "SendMessage",
            &as_user("Bearer alice"),
            "m",
            "x",
            work.run(S, Ok(json!("a"))),
        )
        .await
        .unwrap();
    // Mallory guesses Alice's messageId: her own run, not Alice's reply.
    let mallory = dedup
        .run(
            "SendMessage",
            &as_user("Bearer mallory"),
            "m",
            "x",
            work.run(S, Ok(json!("m"))),
        )
        .await
        .unwrap();
    assert_ne!(alice, mallory);
    // Anonymous is a scope of its own, and so is another method.
    dedup
        .run(
            "SendMessage",
            headers(),
            "m",
            "x",
            work.run(S, Ok(json!("anon"))),
        )
        .await
        .unwrap();
    dedup
        .run(
            "Other",
            &as_user("Bearer alice"),
            "m",
            "x",
            work.run(S, Ok(json!("o"))),
        )
        .await
        .unwrap();
    assert_eq!(work.runs(), 4);
    let alice_again = dedup
        .run(
            "SendMessage",
            &as_user("Bearer alice"),
            "m",
            "x",
            work.run(S, Ok(json!("z"))),
        )
        .await
        .unwrap();
    assert_eq!(alice_again, alice);
}

#[tokio::test(start_paused = true)]
async fn an_id_over_the_limit_is_invalid_params_without_a_run() {
    let dedup = D::in_memory().max_id_bytes(16);
    let work = Work::default();
    let long = "x".repeat(17);
    let error = dedup
        .run(
            "SendMessage",
            headers(),
            &long,
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap_err();
    assert_eq!(error.code(), crate::wire::code::INVALID_PARAMS);
    assert_eq!(error.metadata()["limit"], 16);
    assert_eq!(work.runs(), 0);
    let ok = "x".repeat(16);
    dedup
        .run(
            "SendMessage",
            headers(),
            &ok,
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_memory_store_is_bounded_by_entries_and_by_bytes() {
    let by_count = MemoryStore::new(100, 64 << 20);
    let dedup: D = Dedup::with_store(by_count.clone());
    let work = Work::default();
    for i in 0..1_000 {
        dedup
            .run(
                "SendMessage",
                headers(),
                &format!("m-{i}"),
                "x",
                work.run(Duration::ZERO, Ok(json!(i))),
            )
            .await
            .unwrap();
    }
    assert!(by_count.len() <= 100, "{}", by_count.len());

    let by_bytes = MemoryStore::new(1_000_000, 100_000);
    let dedup: D = Dedup::with_store(by_bytes.clone());
    let big = "y".repeat(10_000);
    for i in 0..100 {
        dedup
            .run(
                "SendMessage",
                headers(),
                &format!("m-{i}"),
                "x",
                work.run(Duration::ZERO, Ok(json!(big))),
            )
            .await
            .unwrap();
    }
    assert!(by_bytes.bytes() <= 100_000, "{}", by_bytes.bytes());
    assert!(by_bytes.len() <= 10, "{}", by_bytes.len());
}

/// A store that is never there.
struct Down;

impl DedupStore for Down {
    fn claim<'a>(
        &'a self,
        _: &'a str,
        _: &'a [u8],
        _: Duration,
    ) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(ready(Err(StoreError("down".into()))))
    }
    fn finish<'a>(
        &'a self,
        _: &'a str,
        _: &'a [u8],
        _: Bytes,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(ready(Err(StoreError("down".into()))))
    }
    fn release<'a>(&'a self, _: &'a str, _: &'a [u8]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(ready(Err(StoreError("down".into()))))
    }
    fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Bytes>, StoreError>> {
        Box::pin(ready(Err(StoreError("down".into()))))
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_fails_fails_closed_or_runs_as_configured() {
    let work = Work::default();
    let closed: D = Dedup::with_store(Down);
    let refused = closed
        .run(
            "SendMessage",
            headers(),
            "m",
            "x",
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        refused,
        DedupError::Refused(Refusal::StoreUnavailable { .. })
    ));
    assert_eq!(refused.retry_hint(), RetryHint::After(S));
    assert_eq!(work.runs(), 0);
    let open: D = Dedup::with_store(Down).on_store_failure(StoreFailure::RunWithoutDedup);
    open.run(
        "SendMessage",
        headers(),
        "m",
        "x",
        work.run(S, Ok(json!(1))),
    )
    .await
    .unwrap();
    assert_eq!(work.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_clone_is_configured_on_its_own_and_shares_the_store() {
    /// "hi" under `id`, by work that answers `n` after a second.
    async fn send_hi(dedup: &D, work: &Work, id: &str, n: u32) -> Value {
        let work = work.run(S, Ok(json!(n)));
        dedup
            .run("SendMessage", headers(), id, "hi", work)
            .await
            .unwrap()
    }
    let work = Work::default();
    let held = D::in_memory();
    // Configuring after a clone used to panic (`Arc::get_mut`).
    let short = held.clone().window(S);
    // The window is the writer's: a record the short handle wrote is gone 5 s later, for
    // every handle of the store; one the original wrote is still replayed.
    let first = send_hi(&short, &work, "m-s", 1).await;
    assert_eq!(send_hi(&held, &work, "m-s", 2).await, first, "one store");
    assert_eq!(work.runs(), 1);
    let kept = send_hi(&held, &work, "m-h", 3).await;
    tokio::time::advance(5 * S).await;
    assert_ne!(send_hi(&held, &work, "m-s", 4).await, first);
    assert_eq!(send_hi(&short, &work, "m-h", 5).await, kept);
    assert_eq!(work.runs(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_request_that_does_not_serialize_is_refused_not_run() {
    // A map with non-string keys has no JSON form, so it has no fingerprint either.
    let request: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let work = Work::default();
    let error = D::in_memory()
        .run(
            "SendMessage",
            headers(),
            "m-x",
            request,
            work.run(S, Ok(json!(1))),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, DedupError::Refused(Refusal::Unfingerprintable)),
        "{error:?}"
    );
    assert_eq!(error.code(), crate::wire::code::INTERNAL_ERROR);
    assert_eq!(work.runs(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_reply_too_large_to_remember_is_never_run_twice() {
    // 100,000 bytes in one shard: the largest record is the whole bound.
    let store = MemoryStore::new(1_000, 100_000);
    let dedup: D = Dedup::with_store(store.clone());
    let work = Work::default();
    let big = "y".repeat(200_000);
    let first = dedup
        .run(
            "SendMessage",
            headers(),
            "m-big",
            "x",
            work.run(Duration::ZERO, Ok(json!(big))),
        )
        .await
        .unwrap();
    // The first caller got the reply.
    assert_eq!(first["value"].as_str().map(str::len), Some(200_000));
    // A retry: the work does not run again, and the retry is told why it gets no reply.
    let retry = dedup
        .run(
            "SendMessage",
            headers(),
            "m-big",
            "x",
            work.run(Duration::ZERO, Ok(json!("second"))),
        )
        .await
        .unwrap_err();
    assert_eq!(work.runs(), 1);
    match retry {
        DedupError::Replayed(error) => assert_eq!(error.code(), -32055),
        other => panic!("{other:?}"),
    }
    assert!(store.bytes() <= 100_000);
}

#[tokio::test(start_paused = true)]
async fn work_left_by_callers_that_went_away_is_bounded_and_never_keeps_out_a_caller() {
    let dedup = D::in_memory().max_detached(2);
    let work = Work::default();
    // Three callers start long work and go away at once: two works may go on detached, so
    // the oldest is stopped when the third goes.
    for n in 0..3 {
        let (dedup, work) = (dedup.clone(), work.clone());
        let caller = tokio::spawn(async move {
            let run = work.run(30 * S, Ok(json!(n)));
            dedup
                .run("SendMessage", headers(), &format!("gone-{n}"), "x", run)
                .await
        });
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_millis(10)).await;
        caller.abort();
        let _ = caller.await;
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(work.runs(), 3);
    assert_eq!(dedup.settings.detached.len(), 2);
    // A new caller is served at once, whatever is left running.
    let ran = dedup
        .run(
            "SendMessage",
            headers(),
            "next",
            "x",
            work.run(Duration::ZERO, Ok(json!("next"))),
        )
        .await
        .unwrap();
    assert_eq!(ran["value"], "next");
    // The stopped work gave its claim back: its retry runs it again, at once.
    let again = dedup
        .run(
            "SendMessage",
            headers(),
            "gone-0",
            "x",
            work.run(Duration::ZERO, Ok(json!("again"))),
        )
        .await
        .unwrap();
    assert_eq!(again["value"], "again");
    // The detached works that were not stopped end and record their outcomes.
    tokio::time::advance(31 * S).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(dedup.settings.detached.len(), 0);
    let replay = dedup
        .run(
            "SendMessage",
            headers(),
            "gone-2",
            "x",
            work.run(Duration::ZERO, Ok(json!("third"))),
        )
        .await
        .unwrap();
    assert_eq!(replay["value"], 2);
    assert_eq!(work.runs(), 5);
}
