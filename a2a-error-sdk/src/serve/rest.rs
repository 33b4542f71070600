//! The bridge over HTTP+JSON: the routes of the method table, each request read from its
//! path, query and body into the SDK's type, answered as A2A JSON or a `google.rpc.Status`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use a2a::{
    A2AError, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig,
};
use a2a_server::{RequestHandler, ServiceParams};
use axum::Router;
use axum::extract::{FromRequest, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, get, on};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::protojson::{ProtoJson, SendParams};
use crate::scoped::Scoped;
use a2a_error_runtime::sdk_errors::public;
use a2a_error_runtime::server::Binding;
use a2a_error_runtime::server::rest::{self as status, Json};
use a2a_error_runtime::wire::error::A2aError;
use a2a_error_runtime::wire::method::{self, Method, Verb};
use a2a_error_runtime::wire::remote::RemoteError;
use a2a_error_runtime::wire::standard::StandardError;

use super::Bridge;
use super::admission::admit_rest;
use super::calls::Events;

impl<H: RequestHandler> Bridge<H> {
    /// The HTTP+JSON routes and the agent card, with a `google.rpc.Status` body for every
    /// error (an unknown route is a 404 Status), a sanitized 500 for a panic, and
    /// VERSION_NOT_SUPPORTED for an `A2A-Version` other than 1.0. The routes are the method
    /// table's (`wire/method.rs`), not written again here.
    pub fn rest_router(&self) -> Router {
        let rest = routes()
            .into_iter()
            .fold(Router::new(), |router, (path, verbs)| {
                router.route(&path, on(verbs, rest_call::<H>))
            })
            .fallback(status::not_found)
            .layer(status::catch_panic())
            .layer(status::RequireVersionLayer::new(["1.0"]))
            .layer(axum::middleware::from_fn_with_state(
                self.admission.clone(),
                admit_rest,
            ))
            .layer(axum::middleware::from_fn(record_rest));
        let card = Router::new().route(
            "/.well-known/agent-card.json",
            get(card::<H>).fallback(status::not_found),
        );
        card.merge(rest)
            .layer(status::StatusBodiesLayer)
            .with_state(self.clone())
    }
}

/// The method table's routes as axum paths, each with the verbs of its methods. axum captures
/// whole segments, so `tasks/{id}:cancel` is served at `/tasks/{id}`, and the request's own
/// path says which method it is ([`method::for_route`]).
fn routes() -> Vec<(String, MethodFilter)> {
    let mut routes: Vec<(String, MethodFilter)> = Vec::new();
    for row in &method::METHODS {
        let path: Vec<String> = row
            .path
            .split('/')
            .map(|segment| match segment.split_once('{') {
                None => segment.to_owned(),
                Some((_, rest)) => {
                    let field = rest.split_once('}').map_or(rest, |(field, _)| field);
                    format!("{{{field}}}")
                }
            })
            .collect();
        let path = format!("/{}", path.join("/"));
        let verb = match row.verb {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Delete => MethodFilter::DELETE,
        };
        match routes.iter_mut().find(|(known, _)| *known == path) {
            Some((_, verbs)) => *verbs = verbs.or(verb),
            None => routes.push((path, verb)),
        }
    }
    routes
}

/// The string fields that `path` (a route of `row`, as [`method::for_route`] found it) gives
/// its params: each `{field}` of the route, without what the route puts around it (the
/// `:cancel` after it), percent-decoded as axum decodes its captures.
fn path_fields(row: &Method, path: &str) -> Map<String, Value> {
    row.path
        .split('/')
        .zip(path.trim_matches('/').split('/'))
        .filter_map(|(template, segment)| {
            let (before, rest) = template.split_once('{')?;
            let (field, after) = rest.split_once('}')?;
            let value = segment.strip_prefix(before)?.strip_suffix(after)?;
            let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            Some((field.to_owned(), Value::String(value.into_owned())))
        })
        .collect()
}

/// Every HTTP+JSON request: its method found in the table by its verb and path, its params
/// read from the path, the query and the body, and the SDK handler's method called.
async fn rest_call<H: RequestHandler>(
    State(bridge): State<Bridge<H>>,
    Query(query): Query<HashMap<String, String>>,
    request: axum::extract::Request,
) -> Response {
    let verb = match *request.method() {
        axum::http::Method::GET => Verb::Get,
        axum::http::Method::POST => Verb::Post,
        axum::http::Method::DELETE => Verb::Delete,
        _ => return status::error_response(&StandardError::MethodNotFound),
    };
    let Some(row) = method::for_route(verb, request.uri().path()) else {
        return status::error_response(&StandardError::MethodNotFound);
    };
    let fields = path_fields(row, request.uri().path());
    let headers = request.headers().clone();
    // When the request arrived (`record_rest`): a stream's duration counts from then.
    let began = request
        .extensions()
        .get::<Began>()
        .map_or_else(std::time::Instant::now, |began| began.0);
    let deadline = a2a_error_runtime::server::headers::Known::read(&headers).deadline();
    match row.name {
        method::SEND_MESSAGE | method::SEND_STREAMING_MESSAGE => {
            let request = match Json::<SendParams>::from_request(request, &bridge).await {
                Ok(Json(request)) => request.0,
                Err(rejection) => return rejection.into_response(),
            };
            if row.name == method::SEND_STREAMING_MESSAGE {
                let opened = bridge.send_streaming(&headers, deadline, *request).await;
                return bridge.rest_events(&headers, row.name, began, opened).await;
            }
            let work = async {
                bridge
                    .send_message(&headers, deadline, request)
                    .await
                    .map_err(boxed)
            };
            bridge.rest_reply(deadline, work).await
        }
        method::SUBSCRIBE_TO_TASK => {
            let request = match from_query::<SubscribeToTaskRequest>(query, fields) {
                Ok(request) => request,
                Err(response) => return *response,
            };
            let opened = bridge.subscribe(&headers, deadline, request).await;
            bridge.rest_events(&headers, row.name, began, opened).await
        }
        method::GET_TASK => {
            let request = from_query::<GetTaskRequest>(query, fields);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler.get_task(&params, request).await.map(ProtoJson)
                })
                .await
        }
        method::LIST_TASKS => {
            let request = from_query::<ListTasksRequest>(query, fields);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler.list_tasks(&params, request).await.map(ProtoJson)
                })
                .await
        }
        method::CANCEL_TASK => {
            // Read whole (within axum's body limit), not left unread: hyper closes a
            // connection whose request body was not read, and a client that reused it for its
            // next request (the official Python client did, under load) saw it close without
            // a response. The body is the request's other members (its metadata).
            let body = match axum::body::Bytes::from_request(request, &bridge).await {
                Ok(body) => body,
                Err(rejection) => return rejection.into_response(),
            };
            let mut members = if body.iter().all(u8::is_ascii_whitespace) {
                Map::new()
            } else {
                match serde_json::from_slice::<Map<String, Value>>(&body) {
                    Ok(members) => members,
                    Err(_) => return status::error_response(&StandardError::InvalidParams),
                }
            };
            members.extend(fields);
            let request = from_query::<CancelTaskRequest>(HashMap::new(), members);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler.cancel_task(&params, request).await.map(ProtoJson)
                })
                .await
        }
        method::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            let mut body = match Json::<Map<String, Value>>::from_request(request, &bridge).await {
                Ok(Json(body)) => body,
                Err(rejection) => return rejection.into_response(),
            };
            body.extend(fields);
            let request = from_query::<TaskPushNotificationConfig>(HashMap::new(), body);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler
                        .create_push_config(&params, request)
                        .await
                        .map(ProtoJson)
                })
                .await
        }
        method::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            let request = from_query::<ListTaskPushNotificationConfigsRequest>(query, fields);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler
                        .list_push_configs(&params, request)
                        .await
                        .map(ProtoJson)
                })
                .await
        }
        method::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            let request =
                from_query::<GetTaskPushNotificationConfigRequest>(HashMap::new(), fields);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler
                        .get_push_config(&params, request)
                        .await
                        .map(ProtoJson)
                })
                .await
        }
        method::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            let request =
                from_query::<DeleteTaskPushNotificationConfigRequest>(HashMap::new(), fields);
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler
                        .delete_push_config(&params, request)
                        .await
                        .map(|()| Map::new())
                })
                .await
        }
        method::GET_EXTENDED_AGENT_CARD => {
            let request = Ok(GetExtendedAgentCardRequest { tenant: None });
            bridge
                .rest_unary(&headers, request, |handler, params, request| async move {
                    handler
                        .get_extended_agent_card(&params, request)
                        .await
                        .map(ProtoJson)
                })
                .await
        }
        _ => status::error_response(&StandardError::MethodNotFound),
    }
}

// HTTP+JSON.

impl<H: RequestHandler> Bridge<H> {
    /// A REST reply: `work` run until the caller's deadline or the bridge's timeout,
    /// whichever comes first (typed clients called inside inherit it); the result's A2A JSON,
    /// or the Status of the error.
    async fn rest_reply<T: Serialize>(
        &self,
        deadline: Option<Instant>,
        work: impl Future<Output = Result<T, Box<dyn A2aError + Send + Sync>>>,
    ) -> Response {
        let finished = a2a_error_runtime::deadline::run_until(self.end(deadline), work)
            .await
            .unwrap_or_else(|| Err(Box::new(StandardError::DeadlineExceeded)));
        match finished {
            Ok(result) => Json(result).into_response(),
            Err(error) => status::error_response(&*error),
        }
    }

    /// A unary REST reply: `call` of the SDK handler on the request read from the path and
    /// query (or the body), within the deadline; the result's A2A JSON, or the Status of the
    /// error (a request that does not read is INVALID_PARAMS).
    async fn rest_unary<R, T, Fut>(
        &self,
        headers: &HeaderMap,
        request: Result<R, Box<Response>>,
        call: impl FnOnce(Arc<Scoped<H>>, ServiceParams, R) -> Fut,
    ) -> Response
    where
        T: Serialize,
        Fut: Future<Output = Result<T, A2AError>>,
    {
        let request = match request {
            Ok(request) => request,
            Err(response) => return *response,
        };
        let deadline = a2a_error_runtime::server::headers::Known::read(headers).deadline();
        let params = self.service_params(headers, deadline);
        let handler = Arc::clone(&self.handler);
        let work = async move {
            call(handler, params, request)
                .await
                .map_err(|error| boxed(public(&error)))
        };
        self.rest_reply(deadline, work).await
    }

    /// A streaming REST reply: SSE events of the stream, or the error's Status before it.
    /// An open stream is recorded when it ends (see `StreamServed`), not by `record_rest`.
    async fn rest_events(
        &self,
        headers: &HeaderMap,
        method: &'static str,
        began: std::time::Instant,
        opened: Result<Events, RemoteError>,
    ) -> Response {
        match opened {
            Ok(stream) => {
                let encoded = a2a_error_runtime::server::endpoint::events(stream);
                let record = a2a_error_runtime::observe::StreamServed::a2a(
                    a2a_error_runtime::observe::System::Http,
                    method,
                    began,
                );
                let deadline = a2a_error_runtime::server::headers::Known::read(headers).deadline();
                let encoded =
                    a2a_error_runtime::server::endpoint::served(encoded, deadline, record);
                let mut response =
                    a2a_error_runtime::server::sse::encoded_response(Binding::Rest, encoded).await;
                response.extensions_mut().insert(RecordedAtEnd);
                response
            }
            Err(error) => status::error_response(&error),
        }
    }
}

fn boxed<E: A2aError + Send + Sync + 'static>(error: E) -> Box<dyn A2aError + Send + Sync> {
    Box::new(error)
}

/// Query parameters as the JSON members of a request (numbers and booleans as such).
fn query_json(query: HashMap<String, String>, fields: Map<String, Value>) -> Value {
    let mut members = fields;
    for (key, value) in query {
        let value = match value.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            text => text
                .parse::<i64>()
                .map_or_else(|_| Value::String(value), Value::from),
        };
        members.entry(key).or_insert(value);
    }
    Value::Object(members)
}

/// A request read from the path and the query; a member of the wrong type is INVALID_PARAMS.
fn from_query<T>(
    query: HashMap<String, String>,
    fields: Map<String, Value>,
) -> Result<T, Box<Response>>
where
    ProtoJson<T>: serde::de::DeserializeOwned,
{
    serde_json::from_value::<ProtoJson<T>>(query_json(query, fields))
        .map(|request| request.0)
        .map_err(|_| Box::new(status::error_response(&StandardError::InvalidParams)))
}

async fn card<H: RequestHandler>(State(bridge): State<Bridge<H>>) -> Response {
    match &bridge.card {
        Some(card) => Json(&**card).into_response(),
        None => status::not_found().await,
    }
}

/// When a REST request arrived, for the route (a stream counts its duration from then).
#[derive(Clone, Copy)]
struct Began(std::time::Instant);

/// A response whose request is recorded by its stream when it ends: not by `record_rest`.
#[derive(Clone, Copy)]
struct RecordedAtEnd;

/// Runs a REST request in its trace, and records it in `rpc.server.call.duration` under its
/// A2A method (`other` for a route that is none) and outcome (a status under 400 is
/// answered).
async fn record_rest(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use tracing::Instrument;
    let method = a2a_error_runtime::wire::method::method_of_route(
        request.method().as_str(),
        request.uri().path(),
    );
    let began = std::time::Instant::now();
    let mut request = request;
    request.extensions_mut().insert(Began(began));
    // The route runs in the caller's trace (or one of its own), as a JSON-RPC handler does.
    let span = a2a_error_runtime::observe::server_span(
        a2a_error_runtime::observe::System::Http,
        method.unwrap_or("other"),
    );
    let trace = a2a_error_runtime::server::headers::Known::read(request.headers()).trace(&span);
    let response = a2a_error_runtime::trace::scope(trace, next.run(request))
        .instrument(span.clone())
        .await;
    if response.extensions().get::<RecordedAtEnd>().is_some() {
        return response;
    }
    let status = response.status().as_u16();
    let failed = match response
        .extensions()
        .get::<a2a_error_runtime::wire::rest::FailedWith>()
    {
        Some(failed) => Some(failed.parts()),
        // A failure this crate did not write (none is expected: the routes answer with
        // status bodies).
        None if status >= 400 => Some((i32::from(status), "OTHER")),
        None => None,
    };
    a2a_error_runtime::observe::a2a_request_served(
        a2a_error_runtime::observe::System::Http,
        method,
        &span,
        failed,
        began.elapsed(),
    );
    response
}
