//! Task-level failures: a task that ran and failed is not a protocol error. Its status is
//! `TASK_STATE_FAILED` with a status message carrying the public message only.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::wire::error::{A2aError, RetryHint, proto_duration};

/// The A2A 1.0 `TaskStatus` of a task that failed with `err`: state `TASK_STATE_FAILED` and an
/// agent message whose text is the public message. Code, reason and domain go in the
/// message's `metadata.error`, so clients can still tell failures apart, with `retryable` as
/// the library marks it and, when a delay is known, `retryDelay` as RetryInfo writes it
/// (`"3s"`); the Display text and non-data fields never appear.
pub fn failed_status<E: A2aError + ?Sized>(err: &E) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let message_id = format!("failed-{nanos:x}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut error = json!({
        "code": err.code(),
        "reason": err.reason(),
        "domain": err.domain(),
        "retryable": err.is_retryable(),
    });
    if let RetryHint::After(delay) = err.retry_hint() {
        error["retryDelay"] = Value::String(proto_duration(delay));
    }
    json!({
        "state": "TASK_STATE_FAILED",
        "message": {
            "messageId": message_id,
            "role": "ROLE_AGENT",
            "parts": [{"text": err.public_message()}],
            "metadata": {"error": error},
        },
    })
}
