//! Serving one HTTP request: reading the body within its limits, one request or a batch (at
//! most 8 at once), and the guards each request runs under (version, deadline, panic).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

use axum::http::request::Parts;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use futures_util::StreamExt;
use futures_util::future::{BoxFuture, Either};

use crate::server::body::ReadError;
use crate::server::headers::Known;
use crate::wire::error::A2aError;
use crate::wire::jsonrpc::{self, Body, Id, Request as RpcRequest};
use crate::wire::standard::StandardError;

use super::admission::Admission;
use super::stream::{self, Events};
use super::{Answer, Call, DynError, JsonRpc, Registered, RequestContext};

/// The reply to one request of a body.
enum Reply {
    /// A JSON-RPC response.
    Body(Vec<u8>),
    /// The events of a streaming method, answered as SSE (never in a batch).
    Events(Id, Events),
}

/// What a request's headers say, read once on arrival ([`Known`]): each request of a batch
/// is served with the same.
struct Arrived {
    headers: Arc<HeaderMap>,
    /// The A2A version asked for.
    version: Arc<str>,
    /// Boxed, and only when the caller sent either: inline, they would take `respond`'s
    /// future past 1 KiB.
    sent: Option<Box<Sent>>,
}

/// What a caller sends along when it is an agent of a chain.
struct Sent {
    /// Its `A2A-Deadline-Ms`, from arrival.
    deadline: Option<tokio::time::Instant>,
    /// Its trace context, when it reads.
    caller: Option<crate::trace::TraceContext>,
}

/// How many requests of one batch run at once.
const BATCH_CONCURRENCY: usize = 8;

impl<S: Clone + Send + Sync + 'static> JsonRpc<S> {
    /// Answers one HTTP request.
    pub async fn handle(&self, request: Request<axum::body::Body>) -> Response {
        self.clone().respond(request).await
    }

    /// [`handle`](Self::handle), owning the endpoint: the future the endpoint's tower
    /// `Service` boxes for each request. The request's head is dropped here but for its
    /// headers (an `async fn` keeps the room of what it is given for as long as it runs).
    pub(super) fn respond(
        self,
        request: Request<axum::body::Body>,
    ) -> impl Future<Output = Response> + Send + 'static {
        let (Parts { headers, .. }, body) = request.into_parts();
        self.respond_to(headers, body)
    }

    /// The reply to a request of `headers` and `body`. Its future is kept under 1 KiB (the
    /// body is read in a future of its own, and `entry`, `call` and `run` are plain
    /// functions, so the request is held once): past 1,032 bytes, glibc's malloc and free take
    /// their slow paths for every request.
    async fn respond_to(self, headers: HeaderMap, body: axum::body::Body) -> Response {
        // What the headers say, read in one pass on arrival (in a plain function: what it
        // reads does not stay in this future).
        let arrived = match self.arrived(headers) {
            Ok(arrived) => arrived,
            Err(refused) => return *refused,
        };
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(refused) => return refused,
        };
        match jsonrpc::parse(&bytes, self.inner.max_batch) {
            Body::ParseError => self.reply(Some(
                self.error_response(&Id::Null, &StandardError::ParseError),
            )),
            Body::EmptyBatch => self.reply(Some(
                self.error_response(&Id::Null, &StandardError::InvalidRequest),
            )),
            Body::Single(entry) => match self.entry(entry, &arrived, false).await {
                Some(Reply::Events(id, events)) => {
                    crate::server::sse::encoded_response(
                        crate::server::sse::Binding::JsonRpc(id),
                        events,
                    )
                    .await
                }
                Some(Reply::Body(body)) => self.reply(Some(body)),
                None => self.reply(None),
            },
            Body::BatchTooLarge(size) => {
                tracing::debug!(size, "batch too large");
                self.reply(Some(
                    self.error_response(&Id::Null, &StandardError::InvalidRequest),
                ))
            }
            Body::Batch(entries) => {
                // A few at a time, in order: a batch is one caller's, and must not open a
                // hundred downstream calls at once.
                let replies: Vec<Option<Reply>> = futures_util::stream::iter(entries)
                    .map(|entry| self.entry(entry, &arrived, true))
                    .buffered(BATCH_CONCURRENCY)
                    .collect()
                    .await;
                // A streaming method in a batch is refused before it runs.
                let replies: Vec<Vec<u8>> = replies
                    .into_iter()
                    .flatten()
                    .filter_map(|reply| match reply {
                        Reply::Body(body) => Some(body),
                        Reply::Events(..) => None,
                    })
                    .collect();
                if replies.is_empty() {
                    return self.reply(None);
                }
                let mut body = Vec::with_capacity(replies.iter().map(Vec::len).sum::<usize>() + 2);
                body.push(b'[');
                for (i, reply) in replies.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    body.extend_from_slice(reply);
                }
                body.push(b']');
                self.reply(Some(body))
            }
        }
    }

    /// What a request's headers say, and the refusal of its body when it is not JSON or is
    /// declared longer than the limit, before any of it is read.
    fn arrived(&self, headers: HeaderMap) -> Result<Arrived, Box<Response>> {
        let known = Known::read(&headers);
        let json = crate::server::headers::is_json_type(known.content_type);
        let declared = known
            .content_length
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let version = self.inner.versions.asked_by(known.version);
        let deadline = crate::deadline::from_left(known.deadline_left);
        let caller = crate::trace::caller_by(known.traceparent.once(), known.tracestate.once());
        let sent =
            (deadline.is_some() || caller.is_some()).then(|| Box::new(Sent { deadline, caller }));
        if let Some(refused) = self.refused_body(json, declared) {
            // Boxed: a refusal is rare, and a `Response` is 128 bytes to move on every request.
            return Err(Box::new(refused));
        }
        Ok(Arrived {
            headers: Arc::new(headers),
            version,
            sent,
        })
    }

    /// The refusal of a body that is not JSON, or declared longer than the limit, before any
    /// of it is read.
    fn refused_body(&self, json: bool, declared: Option<u64>) -> Option<Response> {
        if !json {
            return Some(self.transport_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                StandardError::InvalidRequest,
            ));
        }
        declared
            .is_some_and(|len| len > self.inner.max_body_bytes as u64)
            .then(|| self.too_large())
    }

    /// The request's body, read within its limits (size, time), or the error reply.
    async fn read_body(&self, body: axum::body::Body) -> Result<bytes::Bytes, Response> {
        let mut read = std::pin::pin!(crate::server::body::read_whole(
            body,
            self.inner.max_body_bytes
        ));
        // A small body has usually arrived whole with its head: read it without arming a timer.
        let read = match read.as_mut().now_or_never() {
            Some(read) => Ok(read),
            None => tokio::time::timeout(self.inner.body_timeout, read).await,
        };
        match read {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(ReadError::TooLarge)) => Err(self.too_large()),
            Ok(Err(ReadError::Failed(error))) if crate::server::body::is_body_timeout(&error) => {
                Err(self.slow_body())
            }
            Err(_) => Err(self.slow_body()),
            Ok(Err(ReadError::Failed(error))) => {
                tracing::debug!("could not read a request body: {error}");
                Err(self.transport_error(StatusCode::BAD_REQUEST, StandardError::ParseError))
            }
        }
    }

    /// One request of a body: its reply, or `None` for a notification. Not an `async fn`,
    /// which would hold the entry beside the call that takes it.
    fn entry<'a>(
        &'a self,
        entry: jsonrpc::Entry,
        arrived: &'a Arrived,
        in_batch: bool,
    ) -> impl Future<Output = Option<Reply>> + Send + 'a {
        match entry {
            Err(invalid) => {
                tracing::debug!(reason = invalid.reason, "invalid request");
                Either::Left(std::future::ready(Some(Reply::Body(
                    self.error_response(&invalid.id, &StandardError::InvalidRequest),
                ))))
            }
            Ok(request) => Either::Right(self.call(request, arrived, in_batch)),
        }
    }

    /// One request: its reply, or `None` for a notification. The checks and the handler's
    /// call are made before the future, which so holds the request's id and method but not
    /// its params, and each of them once.
    fn call<'a>(
        &'a self,
        request: RpcRequest,
        arrived: &'a Arrived,
        in_batch: bool,
    ) -> impl Future<Output = Option<Reply>> + Send + 'a {
        let RpcRequest { id, method, params } = request;
        let Arrived {
            headers,
            version,
            sent,
        } = arrived;
        let (deadline, caller) = sent
            .as_deref()
            .map_or((None, None), |sent| (sent.deadline, sent.caller.as_ref()));
        let found = self.inner.methods.get(&method);
        // The caller's trace, or one of its own: the request's span, the handler, the calls it
        // makes and the log line of a failure all carry it.
        let span = crate::observe::server_span(
            crate::observe::System::JsonRpc,
            found.map_or("other", |registered| &registered.name),
        );
        let trace = crate::trace::served_as(caller, &span);
        let started = if !self.inner.versions.serves(version) {
            Err(Box::new(StandardError::VersionNotSupported) as DynError)
        } else {
            match found {
                None => Err(Box::new(StandardError::MethodNotFound) as DynError),
                // A batch's replies are one JSON array: a stream has no place in it.
                Some(Registered {
                    call: Call::Stream(_),
                    ..
                }) if in_batch => {
                    tracing::debug!(method, "a streaming method in a batch");
                    Err(Box::new(StandardError::InvalidRequest) as DynError)
                }
                Some(registered) => self
                    .inner
                    .admission
                    .as_deref()
                    .map(Admission::admit)
                    .transpose()
                    .map(|slot| {
                        let ctx = RequestContext {
                            method: Arc::clone(&registered.name),
                            id: id.clone(),
                            headers: Arc::clone(headers),
                            version: Arc::clone(version),
                            deadline,
                        };
                        let state = &self.inner.state;
                        let running = match &registered.call {
                            Call::Unary(call) => Either::Left(call(state, params, ctx)),
                            Call::Stream(call) => Either::Right(call(state, params, ctx)),
                        };
                        (running, slot)
                    }),
            }
        };
        let traced = !span.is_disabled();
        // One read of the clock for both the end and the duration recorded (each is ~30 ns
        // on a VM's clock, a few tenths of a percent of an error reply).
        let began = tokio::time::Instant::now();
        // When the handler must have answered by: the endpoint's own timeout or the caller's
        // deadline, whichever comes first. The calls it makes inherit it with the trace, from
        // the one scope the request runs in.
        let end = match &started {
            Ok(_) => crate::deadline::served_end(began, self.inner.timeout, deadline),
            Err(_) => None,
        };
        let inherited = crate::deadline::served(trace, end);
        let call = crate::inherited::scope(inherited, async move {
            let outcome = match started {
                Err(refused) => Err(refused),
                Ok((running, slot)) => {
                    let (method, id) = (method.as_str(), id.as_ref());
                    let outcome = match running {
                        Either::Left(unary) => {
                            self.run(unary, end, method, id).await.map(Answer::Result)
                        }
                        Either::Right(stream) => {
                            self.run(stream, end, method, id).await.map(Answer::Events)
                        }
                    };
                    if let Some(slot) = slot {
                        slot.finished();
                    }
                    outcome
                }
            };
            let registered = found.map(|registered| &registered.name);
            let system = crate::observe::System::JsonRpc;
            match &outcome {
                // A stream is recorded when it ends, by how it ended.
                Ok(Answer::Events(_)) => {}
                Ok(_) => crate::observe::request_served(system, registered, None, began.elapsed()),
                // A failing notification gets no reply, but its failure is counted and logged
                // like any other.
                Err(error) => {
                    let (code, reason) = (error.code(), error.reason());
                    crate::observe::request_failed(
                        system,
                        registered,
                        code,
                        reason,
                        began.elapsed(),
                    );
                    crate::server::log::failure(&method, id.as_ref(), error.as_ref());
                    if traced {
                        // The request's span, which this future runs in.
                        crate::observe::server_failed(&tracing::Span::current(), code, reason);
                    }
                }
            }
            let outcome = outcome.map(|answer| match answer {
                Answer::Events(events) => {
                    let record = crate::observe::StreamServed::new(
                        system,
                        registered.cloned(),
                        began.into_std(),
                    );
                    Answer::Events(stream::served(events, deadline, record))
                }
                answer => answer,
            });
            let id = id?;
            Some(match outcome {
                Ok(Answer::Result(result)) => {
                    let mut out = Vec::with_capacity(result.len() + 40);
                    jsonrpc::write_result(&id, &result, &mut out);
                    Reply::Body(out)
                }
                Ok(Answer::Events(events)) => Reply::Events(id, events),
                Err(error) => Reply::Body(self.error_response(&id, error.as_ref())),
            })
        });
        // A span is 40 bytes, which would take `respond`'s future past malloc's fast path:
        // a request nobody traces holds none, and a traced one is boxed.
        if traced {
            Either::Right(Box::pin(call.instrument(span)))
        } else {
            Either::Left(call)
        }
    }

    /// Runs a handler future until `end` (the configured timeout or the caller's deadline,
    /// whichever comes first), turning a panic into an internal error.
    fn run<'a, T: Send + 'static>(
        &self,
        future: BoxFuture<'static, Result<T, DynError>>,
        end: Option<tokio::time::Instant>,
        method: &'a str,
        id: Option<&'a Id>,
    ) -> impl Future<Output = Result<T, DynError>> + Send + 'a {
        let guarded = AssertUnwindSafe(future).catch_unwind();
        crate::deadline::until_any(end, guarded).map(move |finished| {
            let Some(finished) = finished else {
                return Err(Box::new(StandardError::DeadlineExceeded) as DynError);
            };
            finished.unwrap_or_else(|panic| {
                let text = crate::server::log::panic_text(&*panic);
                let id = id.map(crate::server::log::shown_id);
                tracing::error!(method, id, "handler panicked: {text}");
                Err(Box::new(crate::server::log::Panicked))
            })
        })
    }

    fn error_response(&self, id: &Id, error: &(dyn A2aError + Send + Sync)) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        jsonrpc::write_error(id, error, self.inner.profile, &mut out);
        out
    }

    fn reply(&self, body: Option<Vec<u8>>) -> Response {
        match body {
            Some(body) => crate::server::json::json_response(StatusCode::OK, body),
            None => StatusCode::NO_CONTENT.into_response(),
        }
    }

    fn too_large(&self) -> Response {
        self.transport_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            StandardError::ContentTooLarge,
        )
    }

    fn slow_body(&self) -> Response {
        self.transport_error(StatusCode::REQUEST_TIMEOUT, StandardError::DeadlineExceeded)
    }

    /// A failure of the HTTP exchange itself: still a JSON-RPC error body, id null.
    fn transport_error(&self, status: StatusCode, error: StandardError) -> Response {
        crate::server::log::error("", None, None, &error);
        crate::server::json::json_response(status, self.error_response(&Id::Null, &error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_future_of_a_request_stays_under_a_kib() {
        // See `respond_to`: its size does not depend on the state or the handlers (boxed).
        let future = JsonRpc::new().respond(Request::new(axum::body::Body::empty()));
        let size = std::mem::size_of_val(&future);
        assert!(size <= 1024, "JsonRpc::respond's future is {size} bytes");
    }
}
