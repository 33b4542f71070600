//! What both example clients print: one line per attempt, the reply's text, and the final
//! error naming the peer's own reason. Shared by `client` (this crate's client) and
//! `sdk_client` (the official SDK's client over this crate's transport), whose output contract
//! is the same.

use std::time::Duration;

use a2a_error::client::ClientError;
use a2a_error::{A2aError, Shown};
use serde_json::Value;

/// `println!` that ignores a closed stdout (`client … | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// A peer's text as this terminal may show it: control characters (escape sequences, line
/// breaks that fake output lines) escaped, and at most 512 bytes.
pub fn shown(text: &str) -> String {
    Shown::new(text, 512).to_string()
}

/// `-32052 RATE_LIMITED "Rate limited"`, or what went wrong locally.
pub fn describe(error: &ClientError) -> String {
    match error.remote() {
        Some(remote) => format!(
            "{} {} \"{}\"",
            remote.code(),
            shown(remote.reason()),
            shown(remote.message())
        ),
        None => match error.reply_status() {
            Some(status) => format!("HTTP {status} ({error})"),
            None => error.to_string(),
        },
    }
}

pub fn seconds(delay: Duration) -> String {
    format!("{:.2}s", delay.as_secs_f64())
}

/// The text of a reply: a Task's status message, a Message's parts, or the JSON itself.
pub fn answer(reply: &Value) -> String {
    let parts = reply
        .pointer("/task/status/message/parts")
        .or_else(|| reply.pointer("/status/message/parts"))
        .or_else(|| reply.pointer("/message/parts"))
        .or_else(|| reply.pointer("/parts"));
    let text: Option<String> = parts.and_then(Value::as_array).map(|parts| {
        parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect()
    });
    match text {
        Some(text) if !text.is_empty() => shown(&text),
        _ => shown(&reply.to_string()),
    }
}

/// Prints why the call failed and exits 1.
pub fn give_up(attempt: u32, error: &ClientError) -> ! {
    let why = if error.retry_advice().is_retryable() {
        "no retries left in the policy or time budget"
    } else {
        "not retryable"
    };
    say!("attempt {attempt}: {}; giving up ({why})", describe(error));
    if let Some(delay) = error.retry_after() {
        say!(
            "the agent asked to wait {} before trying again",
            seconds(delay)
        );
    }
    final_error(error);
}

/// Prints why a stream ended after `count` events and exits 1.
pub fn stream_failed(count: usize, error: &ClientError) -> ! {
    say!("stream ended after {count} events: {}", describe(error));
    final_error(error);
}

/// The last line of a failure, naming the peer's own reason, and exit status 1.
fn final_error(error: &ClientError) -> ! {
    say!(
        "error: {} (category {})",
        shown(error.failure_reason()),
        error.failure_category().as_str()
    );
    std::process::exit(1);
}
