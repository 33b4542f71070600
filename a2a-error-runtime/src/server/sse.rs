//! Streaming: a `Stream` of results as an SSE response. An error before the first item is an
//! ordinary error response; after it, one `event: error` carrying the error in the binding's
//! shape, and the stream ends.

use std::convert::Infallible;

use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Serialize;

use crate::wire::error as encode;
use crate::wire::error::A2aError;
use crate::wire::jsonrpc::{self, Id};
use crate::wire::object::WireProfile;

/// Which binding a stream answers, and so the shape of its events.
#[derive(Clone, Debug)]
pub enum Binding {
    /// JSON-RPC: each event is a response to the request with this id.
    JsonRpc(Id),
    /// HTTP+JSON: each event is the item itself; an error is a `google.rpc.Status`.
    Rest,
}

impl Binding {
    /// One event's data: the item's JSON as it is (REST), or a response carrying it.
    fn item(&self, json: Vec<u8>) -> String {
        match self {
            Binding::JsonRpc(id) => {
                let mut out = Vec::with_capacity(json.len() + 40);
                jsonrpc::write_result(id, &json, &mut out);
                String::from_utf8(out).unwrap_or_default()
            }
            Binding::Rest => String::from_utf8(json).unwrap_or_default(),
        }
    }

    fn error<E: A2aError + ?Sized>(&self, err: &E) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        match self {
            Binding::JsonRpc(id) => jsonrpc::write_error(id, err, WireProfile::A2a, &mut out),
            Binding::Rest => encode::write_rest_status(
                err,
                err.http_status(),
                crate::wire::code::StatusMapping::V1_0_1,
                &mut out,
            ),
        }
        out
    }

    /// The ordinary (non-streaming) error response.
    fn error_response<E: A2aError + ?Sized>(&self, err: &E) -> Response {
        match self {
            Binding::Rest => super::rest::error_response(err),
            Binding::JsonRpc(_) => {
                crate::server::json::json_response(StatusCode::OK, self.error(err))
            }
        }
    }
}

/// Turns `items` into an SSE response for `binding`.
pub async fn sse_response<S, T, E>(binding: Binding, items: S) -> Response
where
    S: Stream<Item = Result<T, E>> + Send + 'static,
    T: Serialize + Send + 'static,
    E: A2aError + Send + 'static,
{
    let encoded = items.map(|item| match item {
        Ok(item) => Ok(serde_json::to_vec(&item).unwrap_or_else(|error| {
            tracing::error!("could not serialize a stream item: {error}");
            b"null".to_vec()
        })),
        Err(err) => Err(Box::new(err)),
    });
    encoded_response(binding, encoded).await
}

/// [`sse_response`] for items already serialized (each the JSON of one result).
#[doc(hidden)]
pub async fn encoded_response<S, E>(binding: Binding, items: S) -> Response
where
    S: Stream<Item = Result<Vec<u8>, Box<E>>> + Send + 'static,
    E: A2aError + Send + ?Sized + 'static,
{
    let mut items = Box::pin(items);
    let first = match items.next().await {
        Some(Err(err)) => return binding.error_response(&*err),
        first => first,
    };
    let state = (Some(binding), first, items);
    let events = stream::unfold(state, |(binding, pending, mut items)| async move {
        let binding = binding?;
        let next = match pending {
            Some(next) => Some(next),
            None => items.next().await,
        };
        match next? {
            Ok(json) => {
                let event = Event::default().data(binding.item(json));
                Some((Ok::<_, Infallible>(event), (Some(binding), None, items)))
            }
            Err(err) => {
                let data = String::from_utf8(binding.error(&*err)).unwrap_or_default();
                let event = Event::default().event("error").data(data);
                // The error ends the stream.
                Some((Ok(event), (None, None, items)))
            }
        }
    });
    Sse::new(events).into_response()
}
