//! Sends TEXT as a `SendMessage` to the agent at URL with the default retry policy, printing
//! one line per attempt, then the reply or the final error.
//!
//! ```text
//! cargo run --example agent &
//! cargo run --example client -- http://127.0.0.1:8080/ flaky:2            # 3rd attempt succeeds
//! cargo run --example client -- http://127.0.0.1:8080/ fail:rate_limited  # waits 2 s each time
//! cargo run --example client -- http://127.0.0.1:8080/ fail:unsupported   # one attempt
//! cargo run --example client -- --rest http://127.0.0.1:8080 hello        # HTTP+JSON binding
//! ```
//!
//! Exit status: 0 on success, 1 when the call failed, 2 on bad usage.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_error::client::{Client, ClientError};
use a2a_error::retry::RetryPolicy;
use a2a_error::{A2aError, RemoteError};
use serde_json::{Value, json};

/// `println!` that ignores a closed stdout (`client … | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `-32052 RATE_LIMITED "Rate limited"`, or what went wrong locally.
fn describe(error: &ClientError) -> String {
    match error.remote() {
        Some(remote) => format!(
            "{} {} \"{}\"",
            remote.code(),
            remote.reason(),
            remote.message()
        ),
        None => match error.http_status() {
            Some(status) => format!("HTTP {status} ({error})"),
            None => error.to_string(),
        },
    }
}

fn seconds(delay: Duration) -> String {
    format!("{:.2}s", delay.as_secs_f64())
}

#[tokio::main]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.first().is_some_and(|a| a == "--rest");
    if rest {
        args.remove(0);
    }
    let [url, text] = args.as_slice() else {
        eprintln!("usage: client [--rest] URL TEXT");
        std::process::exit(2);
    };

    let failed = Arc::new(AtomicU32::new(0));
    let counter = failed.clone();
    let policy = RetryPolicy::default().on_retry(move |attempt, error: &ClientError, delay| {
        counter.store(attempt, Ordering::SeqCst);
        say!(
            "attempt {attempt}: {}; retrying in {}",
            describe(error),
            seconds(delay)
        );
    });
    let builder = if rest {
        Client::<RemoteError>::rest(url.as_str())
    } else {
        Client::<RemoteError>::jsonrpc(url.as_str())
    };
    let client = match builder.retry(policy).build() {
        Ok(client) => client,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };

    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let request = json!({"message": {
        "messageId": format!("client-{}-{nanos}", std::process::id()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }});

    let result: Result<Value, ClientError> = client.send_message(&request).await;
    let attempt = failed.load(Ordering::SeqCst) + 1;
    match result {
        Ok(reply) => {
            say!("attempt {attempt}: ok");
            let answer = &reply["task"]["status"]["message"]["parts"][0]["text"];
            match answer.as_str() {
                Some(answer) => say!("reply: {answer}"),
                None => say!("reply: {reply}"),
            }
        }
        Err(error) => {
            let why = if error.is_retryable() {
                "no retries left in the policy or time budget"
            } else {
                "not retryable"
            };
            say!("attempt {attempt}: {}; giving up ({why})", describe(&error));
            if let Some(delay) = error.retry_after() {
                say!(
                    "the agent asked to wait {} before trying again",
                    seconds(delay)
                );
            }
            say!(
                "error: {} (category {})",
                error.reason(),
                error.category().as_str()
            );
            std::process::exit(1);
        }
    }
}
