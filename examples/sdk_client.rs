//! The official Rust SDK's own client (`a2a-client-lf`'s `A2AClient`) over a2a-error's
//! transport factory: sends TEXT to the agent at URL with the default retry policy, printing
//! one line per attempt, then the reply or the final error, as `examples/client` does.
//!
//! ```text
//! cargo run --example sdk_agent &
//! cargo run --example sdk_client -- http://127.0.0.1:8080/ flaky:2            # 3rd attempt succeeds
//! cargo run --example sdk_client -- http://127.0.0.1:8080/ fail:rate_limited  # waits 2 s each time
//! cargo run --example sdk_client -- --rest http://127.0.0.1:8080 hello        # HTTP+JSON
//! cargo run --example sdk_client -- --stream http://127.0.0.1:8080/ stream:3  # each event
//! cargo run --example sdk_agent -- --grpc 127.0.0.1:50051 &
//! cargo run --example sdk_client -- --grpc http://127.0.0.1:50051 hello        # gRPC
//! ```
//!
//! Exit status: 0 on success, 1 when the call failed, 2 on bad usage.

#[path = "shared/report.rs"]
#[macro_use]
mod report;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use a2a::{A2AError, AgentCard, AgentInterface, Message, Part, Role, SendMessageRequest};
use a2a_client::A2AClientFactory;
use a2a_error::RemoteError;
use a2a_error::client::ClientError;
use a2a_error::resilience::RetryPolicy;
use a2a_error::sdk::{self, ProtoJson, TransportFactory};
use futures_util::StreamExt;
use report::{answer, describe, give_up, seconds, stream_failed};
use serde_json::Value;

fn usage() -> ! {
    eprintln!("usage: sdk_client [--rest | --grpc] [--stream] URL TEXT");
    std::process::exit(2);
}

/// Our `ClientError` behind an SDK error (every error of our transport carries it); an error
/// the SDK's client made itself is read as the error object it is.
fn client_error(error: &A2AError) -> ClientError {
    sdk::client_error::<RemoteError>(error)
        .unwrap_or_else(|| ClientError::from_object(sdk::error_object(error), None))
}

/// The JSON of an SDK value, for the reply's text.
fn json<T>(value: T) -> Value
where
    ProtoJson<T>: serde::Serialize,
{
    serde_json::to_value(ProtoJson(value)).unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let (mut rest, mut grpc, mut stream) = (false, false, false);
    let mut positional = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--rest" => rest = true,
            "--grpc" => grpc = true,
            "--stream" => stream = true,
            flag if flag.starts_with("--") => usage(),
            _ => positional.push(arg),
        }
    }
    let [url, text] = positional.as_slice() else {
        usage();
    };

    let failed = Arc::new(AtomicU32::new(0));
    let counter = failed.clone();
    if rest && grpc {
        usage();
    }
    let (factory, binding) = match (rest, grpc) {
        (true, _) => (TransportFactory::rest(), "HTTP+JSON"),
        (_, true) => (TransportFactory::grpc(), "GRPC"),
        _ => (TransportFactory::jsonrpc(), "JSONRPC"),
    };
    let factory = factory.configure(move |client| {
        let counter = counter.clone();
        client.retry(
            RetryPolicy::default().on_retry(move |attempt, error: &ClientError, delay| {
                counter.store(attempt, Ordering::SeqCst);
                say!(
                    "attempt {attempt}: {}; retrying in {}",
                    describe(error),
                    seconds(delay)
                );
            }),
        )
    });
    // The card this client is given: one interface, the URL, in the binding asked for.
    let card = AgentCard {
        name: "agent".into(),
        description: String::new(),
        version: "1.0".into(),
        supported_interfaces: vec![AgentInterface::new(url.as_str(), binding)],
        capabilities: Default::default(),
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: Vec::new(),
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: None,
        security_requirements: None,
        signatures: None,
    };
    let client = match A2AClientFactory::builder()
        .register(Arc::new(factory))
        .build()
        .create_from_card(&card)
        .await
    {
        Ok(client) => client,
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(2);
        }
    };

    let request = SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text(text.as_str())]),
        configuration: None,
        metadata: None,
        tenant: None,
    };

    if stream {
        let result = client.send_streaming_message(&request).await;
        let attempt = failed.load(Ordering::SeqCst) + 1;
        let mut events = match result {
            Ok(events) => events,
            Err(error) => give_up(attempt, &client_error(&error)),
        };
        say!("attempt {attempt}: ok");
        let mut count = 0;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    count += 1;
                    say!("event {count}: {}", answer(&json(event)));
                }
                Err(error) => stream_failed(count, &client_error(&error)),
            }
        }
        say!("stream done: {count} events");
        return;
    }

    let result = client.send_message(&request).await;
    let attempt = failed.load(Ordering::SeqCst) + 1;
    match result {
        Ok(reply) => {
            say!("attempt {attempt}: ok");
            say!("reply: {}", answer(&json(reply)));
        }
        Err(error) => give_up(attempt, &client_error(&error)),
    }
}
