//! Where a server puts what it does not send: the full internal error, at the right level.

use crate::wire::error::{A2aError, Category};
use crate::wire::jsonrpc::Id;

/// Logs `err` with its Display text and source chain, which never reach the wire.
/// Faults of the server are errors; mistakes of the caller are debug.
pub(crate) fn error(method: &str, id: Option<&Id>, err: &(dyn A2aError + Send + Sync)) {
    let mut chain = String::new();
    let mut source = err.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    crate::observe::error_sent(method, err.code(), err.reason());
    let id = id.map(|id| String::from_utf8_lossy(&id.to_json()).into_owned());
    let server_fault =
        err.http_status() >= 500 || matches!(err.category(), Category::Fatal | Category::Unknown);
    if server_fault {
        tracing::error!(
            method,
            id,
            code = err.code(),
            reason = err.reason(),
            "request failed: {err}{chain}"
        );
    } else {
        tracing::debug!(
            method,
            id,
            code = err.code(),
            reason = err.reason(),
            "request rejected: {err}{chain}"
        );
    }
}

/// The text of a caught panic (`&str` or `String` payloads), for the logs.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

/// What a caller is told about a handler that panicked: -32603 with nothing of the panic, and
/// `retryable: false` on the wire. A panic is a bug in this server, which the next attempt
/// would most likely hit again; this project's client reads the marker and does not repeat
/// the call, where a plain -32603 (retried with backoff by default) would run it again.
#[derive(Debug, thiserror::Error)]
#[error("handler panicked")]
pub(crate) struct Panicked;

impl A2aError for Panicked {
    fn code(&self) -> i32 {
        crate::wire::code::INTERNAL_ERROR
    }
    fn reason(&self) -> &str {
        "INTERNAL_ERROR"
    }
    fn domain(&self) -> &str {
        crate::wire::code::SPEC_DOMAIN
    }
    fn public_message(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed("Internal error")
    }
    fn retry_hint(&self) -> crate::wire::error::RetryHint {
        crate::wire::error::RetryHint::Never
    }
    fn category(&self) -> Category {
        Category::Fatal
    }
    fn http_status(&self) -> u16 {
        500
    }
}
