//! Every parser a peer's bytes reach, run on one input, with everything a caller then does
//! with what they read: the property tests (`hostile_input`) and the coverage-guided fuzzer
//! (`fuzz/`, feature `fuzzing`) drive it. Nothing here may panic, whatever the input.

use std::time::{Duration, SystemTime};

use crate::client::{Call, ClientError, ResponseHead};
use crate::resilience::retry::RetryPolicy;
use crate::wire::error::A2aError;
use crate::wire::remote::RemoteError;
use crate::wire::{jsonrpc, standard::StandardError};

/// Runs every parser a peer reaches on `data`: the JSON-RPC request parser, the JSON-RPC and
/// REST reply decoders, an SSE error event and the SSE parser fed in pieces, `ErrorView`,
/// the `Retry-After`, `A2A-Deadline-Ms` and `grpc-timeout` headers, and (feature `grpc`) a
/// gRPC status's details and its `grpc-status-details-bin` and pushback headers.
#[doc(hidden)]
pub fn peer_bytes(data: &[u8]) {
    decode_everything(data);
    sse(data);
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(view) = crate::wire::view::ErrorView::parse(text)
    {
        use crate::wire::received::ReceivedError;
        let _ = (
            view.message(),
            view.code(),
            view.reason(),
            view.retry_after(),
        );
        let _ = (
            view.data_value("retryable").read::<bool>(),
            view.to_object(),
        );
    }
    let _ = crate::http::retry_after::parse_retry_after(data, SystemTime::UNIX_EPOCH);
    let _ = crate::http::retry_after::parse_retry_after(data, SystemTime::now());
    let _ = crate::wire::headers::parse_deadline_ms(data);
    #[cfg(feature = "grpc")]
    grpc(data);
}

/// The SSE parser fed `data` in two pieces split where its first byte says, reading every
/// event out as the client does.
fn sse(data: &[u8]) {
    let split = data
        .first()
        .map_or(0, |&b| usize::from(b) % (data.len() + 1));
    let mut parser = crate::http::sse::Parser::new(4096);
    for piece in [&data[..split], &data[split..]] {
        let mut rest = piece;
        while !rest.is_empty() {
            match parser.feed(rest) {
                Ok((used, event)) => {
                    if let Some(event) = event
                        && let Err(error) =
                            crate::client::rest::decode_event::<StandardError>(&event, &reply(200))
                    {
                        use_error(&error);
                    }
                    if used == 0 {
                        break;
                    }
                    rest = &rest[used..];
                }
                Err(_) => return,
            }
        }
    }
}

#[cfg(feature = "grpc")]
fn grpc(data: &[u8]) {
    let status = tonic::Status::with_details(
        tonic::Code::Unavailable,
        "m",
        bytes::Bytes::copy_from_slice(data),
    );
    let _ = crate::wire::grpc::remote(&status).retry_hint();
    let _ = crate::wire::grpc::parse_timeout(data);
    // The headers a peer sends with a status: what tonic would read after our guard.
    if let Ok(value) = tonic::codegen::http::HeaderValue::from_bytes(data) {
        let mut headers = tonic::codegen::http::HeaderMap::new();
        headers.insert(
            "grpc-status",
            tonic::codegen::http::HeaderValue::from_static("14"),
        );
        headers.insert("grpc-status-details-bin", value.clone());
        headers.insert(crate::wire::grpc::PUSHBACK_HEADER, value);
        crate::client::grpc::guard::sanitize(&mut headers);
        if let Some(status) = tonic::Status::from_header_map(&headers) {
            let _ = crate::wire::grpc::remote(&status).retry_hint();
        }
    }
}

fn reply(status: u16) -> ResponseHead {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::RETRY_AFTER,
        reqwest::header::HeaderValue::from_static("18446744073709551615"),
    );
    ResponseHead { status, headers }
}

/// Everything a caller does with an error; none of it may panic.
fn use_error(error: &ClientError<StandardError>) {
    let _ = (error.is_retryable(), error.may_have_run(), error.category());
    let _ = error.retry_after_at(SystemTime::UNIX_EPOCH);
    let _ = error.retry_after_at(SystemTime::now());
    let _ = (
        error.to_error_object(),
        error.grpc_status(),
        error.to_string(),
    );
    let policy = RetryPolicy::default();
    let mut previous = Duration::MAX;
    let without_deadline = Call::from_json("SendMessage", &b"{}"[..]);
    let due_now = without_deadline
        .clone()
        .with_deadline(tokio::time::Instant::now());
    for call in [without_deadline, due_now] {
        for attempt in [1, u32::MAX] {
            let _ = policy.next_delay(&call, error, attempt, &mut previous);
        }
    }
    let mut out = Vec::new();
    crate::wire::error::write_rest_status(
        error,
        502,
        crate::wire::code::StatusMapping::V1_0_0,
        &mut out,
    );
}

/// The request parser and the reply decoders on `body`.
pub(crate) fn decode_everything(body: &[u8]) {
    let _ = jsonrpc::parse(body, 100);
    for status in [200, 400, 429, 503] {
        let http = reply(status);
        if let Err(error) = crate::client::jsonrpc::decode::<StandardError>(body, 7, &http) {
            use_error(&error);
        }
        if let Err(error) = crate::client::rest::decode::<StandardError>(body, http.clone()) {
            use_error(&error);
        }
    }
    let event = crate::http::sse::StreamEvent {
        event: "error".to_owned(),
        data: String::from_utf8_lossy(body).into_owned(),
    };
    if let Err(error) = crate::client::rest::decode_event::<StandardError>(&event, &reply(200)) {
        use_error(&error);
    }
    if let Ok(object) = serde_json::from_slice::<crate::ErrorObject>(body) {
        let remote = RemoteError::from_object(object);
        let _ = (
            remote.retry_hint(),
            remote.to_error_object(),
            remote.metadata(),
        );
    }
}

/// The events of `body` through this crate's SSE parser alone, each at most `max_event`
/// bytes: what a streamed dependency call reads, without its layers, for the benchmark that
/// compares the two (`benches/stream.rs`).
#[doc(hidden)]
pub fn sse_events<S, E>(
    body: S,
    max_event: usize,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, ()>>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
{
    use futures_util::StreamExt;
    crate::http::sse::Events::new(body, max_event)
        .map(|event| event.map(|e| e.data.into_bytes()).map_err(|_| ()))
}
