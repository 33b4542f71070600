//! Where a server puts what it does not send: the full internal error, at the right level.

use crate::wire::error::{A2aError, Category};
use crate::wire::jsonrpc::Id;
use crate::wire::text::{LOG_BYTES, Shown};

/// The most of an error's text (Display and source chain) one log line holds.
const MAX_LOGGED: usize = 4096;

/// The Display text of `err` and its source chain, up to about [`MAX_LOGGED`] bytes.
fn full_text<E: A2aError + ?Sized>(err: &E) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        if text.len() > MAX_LOGGED {
            break;
        }
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Whether `err` is the server's fault (logged as an error) rather than the caller's.
fn is_server_fault<E: A2aError + ?Sized>(err: &E) -> bool {
    err.http_status() >= 500 || matches!(err.category(), Category::Fatal | Category::Unknown)
}

/// Logs an error handed to a framework that keeps only its public part (the SDK's
/// `A2AError`), at the level [`error`] would: this is the last place its full text is.
#[cfg(feature = "sdk")]
pub(crate) fn handed_over<E: A2aError + ?Sized>(err: &E) {
    let fault = is_server_fault(err);
    if !enabled(fault) {
        return;
    }
    let text = full_text(err);
    let text = Shown::new(&text, MAX_LOGGED);
    let reason = Shown::new(err.reason(), 64);
    let trace_id = crate::trace::current().map(|trace| trace.trace_id());
    let trace_id = trace_id.as_ref().map(tracing::field::display);
    if fault {
        tracing::error!(code = err.code(), %reason, trace_id, "executor failed: {text}");
    } else {
        tracing::debug!(code = err.code(), %reason, trace_id, "executor refused: {text}");
    }
}

/// Logs `err` with its Display text and source chain, which never reach the wire.
/// Faults of the server are errors; mistakes of the caller are debug.
///
/// `method` is the caller's text, `registered` the name the endpoint serves it by, if it
/// does (only then is it a metric label). Everything a peer may have written (the method, the
/// id, a downstream agent's message inside the chain) is escaped and cut ([`Shown`]), so it can
/// neither forge a log line nor write megabytes of log per request.
pub(crate) fn error(
    method: &str,
    registered: Option<&std::sync::Arc<str>>,
    id: Option<&Id>,
    err: &(dyn A2aError + Send + Sync),
) {
    crate::observe::error_sent(registered, err.code(), err.reason());
    failure(method, id, err);
}

/// [`error`]'s log line alone, for a failure counted with its request
/// ([`request_failed`](crate::observe::request_failed)).
pub(crate) fn failure(method: &str, id: Option<&Id>, err: &(dyn A2aError + Send + Sync)) {
    let fault = is_server_fault(err);
    if !enabled(fault) {
        return;
    }
    let text = full_text(err);
    let text = Shown::new(&text, MAX_LOGGED);
    let method = Shown::new(method, LOG_BYTES);
    let id = id.map(shown_id);
    let reason = Shown::new(err.reason(), 64);
    let trace_id = crate::trace::current().map(|trace| trace.trace_id());
    let trace_id = trace_id.as_ref().map(tracing::field::display);
    if fault {
        tracing::error!(
            %method,
            id,
            code = err.code(),
            %reason,
            trace_id,
            "request failed: {text}"
        );
    } else {
        tracing::debug!(
            %method,
            id,
            code = err.code(),
            %reason,
            trace_id,
            "request rejected: {text}"
        );
    }
}

/// Whether the event for an error is logged at all: a rejected request is logged at debug,
/// which a production filter leaves off, and its text is then not even formatted (the
/// Display of every client error cost ~3 % of the error path's CPU).
fn enabled(fault: bool) -> bool {
    if fault {
        tracing::enabled!(tracing::Level::ERROR)
    } else {
        tracing::enabled!(tracing::Level::DEBUG)
    }
}

/// A request id as a log field: its JSON text, cut (a peer chooses it).
pub(crate) fn shown_id(id: &Id) -> String {
    Shown::new(&String::from_utf8_lossy(&id.to_json()), LOG_BYTES).to_string()
}

/// The text of a caught panic (`&str` or `String` payloads), escaped and cut for the logs (a
/// panic message may quote what a peer sent).
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("panic");
    Shown::new(text, MAX_LOGGED).to_string()
}

/// Logs a panic caught around `what` (a REST handler, a stream…) with its text, and gives
/// what the caller is told instead.
#[doc(hidden)]
pub fn caught(what: &str, panic: &(dyn std::any::Any + Send)) -> Panicked {
    tracing::error!("{what} panicked: {}", panic_text(panic));
    Panicked
}

/// What a caller is told about a handler that panicked: -32603 with nothing of the panic, and
/// `retryable: false` on the wire. A panic is a bug in this server, which the next attempt
/// would most likely hit again; this project's client reads the marker and does not repeat
/// the call, where a plain -32603 (retried with backoff by default) would run it again.
#[derive(Debug, thiserror::Error, a2a_error_derive::A2aError)]
#[error("handler panicked")]
#[a2a(crate = "crate", into_response = false)]
#[a2a(code = INTERNAL_ERROR, retryable = false, category = "fatal")]
#[doc(hidden)]
pub struct Panicked;
