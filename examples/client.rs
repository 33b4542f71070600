//! Sends TEXT as a `SendMessage` to the agent at URL with the default retry policy, printing
//! one line per attempt, then the reply or the final error.
//!
//! ```text
//! cargo run --example agent &
//! cargo run --example client -- http://127.0.0.1:8080/ flaky:2            # 3rd attempt succeeds
//! cargo run --example client -- http://127.0.0.1:8080/ fail:rate_limited  # waits 2 s each time
//! cargo run --example client -- http://127.0.0.1:8080/ fail:unsupported   # one attempt
//! cargo run --example client -- --rest http://127.0.0.1:8080 hello        # HTTP+JSON binding
//! cargo run --example client -- --method TransferFunds http://127.0.0.1:8080/ hi
//! cargo run --example client -- --stream http://127.0.0.1:8080/ hello     # SendStreamingMessage
//! ```
//!
//! `--method NAME` sends the text as a SendMessage-shaped message to any method (default
//! `SendMessage`); a method the retry policy does not know is treated as unsafe to repeat.
//! `--stream` calls `SendStreamingMessage` (or the `--method`) and prints each event.
//!
//! Exit status: 0 on success, 1 when the call failed, 2 on bad usage.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[path = "shared/report.rs"]
#[macro_use]
mod report;

use a2a_error::Client;
use a2a_error::RemoteError;
use a2a_error::client::ClientError;
use a2a_error::resilience::RetryPolicy;
use futures_util::StreamExt;
use report::{answer, describe, give_up, seconds, stream_failed};
use serde_json::{Value, json};

fn usage() -> ! {
    eprintln!("usage: client [--rest] [--method NAME] [--stream] URL TEXT");
    std::process::exit(2);
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (mut rest, mut stream, mut method) = (false, false, None::<String>);
    let mut positional = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rest" => rest = true,
            "--stream" => stream = true,
            "--method" => match args.next() {
                Some(name) if !name.is_empty() => method = Some(name),
                _ => usage(),
            },
            flag if flag.starts_with("--") => usage(),
            _ => positional.push(arg),
        }
    }
    let [url, text] = positional.as_slice() else {
        usage();
    };
    let default_method = if stream {
        "SendStreamingMessage"
    } else {
        "SendMessage"
    };
    let method = method.unwrap_or_else(|| default_method.to_owned());

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

    if stream {
        let result = client.stream(method, &request).await;
        let attempt = failed.load(Ordering::SeqCst) + 1;
        let mut events = match result {
            Ok(events) => events,
            Err(error) => give_up(attempt, &error),
        };
        say!("attempt {attempt}: ok");
        let mut count = 0;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    count += 1;
                    let event = serde_json::from_str(event.get()).unwrap_or_default();
                    say!("event {count}: {}", answer(&event));
                }
                Err(error) => stream_failed(count, &error),
            }
        }
        say!("stream done: {count} events");
        return;
    }

    let result: Result<Value, ClientError> = client.call(method, &request).await;
    let attempt = failed.load(Ordering::SeqCst) + 1;
    match result {
        Ok(reply) => {
            say!("attempt {attempt}: ok");
            say!("reply: {}", answer(&reply));
        }
        Err(error) => give_up(attempt, &error),
    }
}
