//! `FaultService`: an HTTP dependency on loopback (a model provider, a tool) that answers each
//! request from a script, and records what it received and which requests were dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One scripted answer of a [`FaultService`] (as [`Answer`](crate::Answer) is a [`FaultAgent`](crate::FaultAgent)'s): a status, headers, a body, and a delay before it.
#[derive(Clone, Debug)]
pub struct HttpAnswer {
    /// The status.
    pub status: u16,
    /// Headers (`retry-after`, `retry-after-ms`, `x-should-retry`, …).
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// How long to wait before answering.
    pub delay: Duration,
    /// A streamed body instead of `body`: each chunk sent after its pause, then the end (or,
    /// when `stall` is set, nothing more while the connection stays open).
    pub chunks: Vec<(Duration, Vec<u8>)>,
    /// Whether a streamed body stalls after its chunks instead of ending.
    pub stall: bool,
}

impl HttpAnswer {
    /// A chat completion whose content is `text`.
    pub fn completion(text: &str) -> HttpAnswer {
        HttpAnswer::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": text}}]}),
        )
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, body: Value) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
            chunks: Vec::new(),
            stall: false,
        }
    }

    /// A 200 `text/event-stream` reply of `events` (each the lines of one event, without its
    /// blank line), sent one by one as the connection allows.
    pub fn events<I, S>(events: I) -> HttpAnswer
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut answer = HttpAnswer::json(200, Value::Null);
        answer.headers = vec![("content-type", "text/event-stream".into())];
        answer.body = Vec::new();
        answer.chunks = events
            .into_iter()
            .map(|event| {
                (
                    Duration::ZERO,
                    format!("{}\n\n", event.as_ref()).into_bytes(),
                )
            })
            .collect();
        answer
    }

    /// An OpenAI-style chat completion streamed as one `data:` event a delta of `deltas`
    /// (after a first event with the role only), then a usage event and `data: [DONE]`.
    pub fn completion_stream(deltas: &[&str]) -> HttpAnswer {
        let mut events = vec![
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
                .to_string(),
        ];
        events.extend(deltas.iter().map(|delta| {
            json!({"choices": [{"index": 0, "delta": {"content": delta}}]}).to_string()
        }));
        events.push(
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": deltas.len()}})
                .to_string(),
        );
        events.push("[DONE]".into());
        HttpAnswer::events(events.iter().map(|data| format!("data: {data}")))
    }

    /// The streamed reply cut after its first `events` events: the connection closes with
    /// no end.
    pub fn cut_after(mut self, events: usize) -> HttpAnswer {
        self.chunks.truncate(events);
        self
    }

    /// The streamed reply stalls after its first `events` events: nothing more is sent and
    /// the connection stays open.
    pub fn stall_after(mut self, events: usize) -> HttpAnswer {
        self.chunks.truncate(events);
        self.stall = true;
        self
    }

    /// Waits `pause` before the streamed reply's event number `event` (from 0).
    pub fn pause_before(mut self, event: usize, pause: Duration) -> HttpAnswer {
        if let Some((wait, _)) = self.chunks.get_mut(event) {
            *wait = pause;
        }
        self
    }

    /// `status` with a body that names the provider's internals (which must never reach the
    /// agent's caller).
    pub fn status(status: u16) -> HttpAnswer {
        HttpAnswer::json(
            status,
            json!({"error": {"message": "provider-internal-secret at /srv/llm"}}),
        )
    }

    /// Adds a header.
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> HttpAnswer {
        self.headers.push((name, value.into()));
        self
    }

    /// Waits `delay` before answering.
    pub fn after(mut self, delay: Duration) -> HttpAnswer {
        self.delay = delay;
        self
    }
}

/// One request as the fault service received it (as [`Received`](crate::Received) is one a
/// [`FaultAgent`](crate::FaultAgent) received).
#[derive(Clone, Debug)]
pub struct HttpReceived {
    /// The HTTP method.
    pub method: String,
    /// The path and query.
    pub path_and_query: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body (at most 1 MiB is read).
    pub body: Bytes,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Default)]
struct Script {
    by_path: std::collections::HashMap<String, VecDeque<HttpAnswer>>,
    answers: VecDeque<HttpAnswer>,
    otherwise: Option<HttpAnswer>,
    received: Vec<HttpReceived>,
    dropped: Vec<Instant>,
}

/// An HTTP service on 127.0.0.1 that answers every request from a script: per path
/// ([`on`](Self::on)), then in order ([`then`](Self::then)), then a default; the same verbs
/// as [`FaultAgent`](crate::FaultAgent)'s. For the dependencies an agent calls: a model provider (statuses, `Retry-After`,
/// `retry-after-ms`, `x-should-retry`, delays), a tool.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use a2a_error_testkit::{FaultService, HttpAnswer};
///
/// let model = FaultService::start(HttpAnswer::completion("hello")).await;
/// model.then([HttpAnswer::status(429).header("retry-after", "1")]);
/// // … point the HttpDependency under test at model.url() …
/// assert!(model.received().is_empty());
/// # }
/// ```
#[derive(Clone)]
pub struct FaultService {
    url: String,
    script: Arc<Mutex<Script>>,
}

impl std::fmt::Debug for FaultService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultService")
            .field("url", &self.url)
            .finish()
    }
}

impl FaultService {
    /// Starts one on loopback; it answers `otherwise` once the scripted replies are spent.
    pub async fn start(otherwise: HttpAnswer) -> FaultService {
        let script = Arc::new(Mutex::new(Script {
            otherwise: Some(otherwise),
            ..Script::default()
        }));
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FaultService { url, script }
    }

    /// Its base URL (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers the next requests to `path` (without the query: `/v1/chat/completions`) with
    /// `answers`, in order, before anything else.
    pub fn on(&self, path: &str, answers: impl IntoIterator<Item = HttpAnswer>) {
        (self.script.lock().unwrap().by_path)
            .entry(path.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answers the next requests, whatever their path, with `answers`, in order.
    pub fn then(&self, answers: impl IntoIterator<Item = HttpAnswer>) {
        self.script.lock().unwrap().answers.extend(answers);
    }

    /// Every request received, in order.
    pub fn received(&self) -> Vec<HttpReceived> {
        self.script.lock().unwrap().received.clone()
    }

    /// When each request dropped unfinished (its caller gone) was dropped.
    pub fn dropped(&self) -> Vec<Instant> {
        self.script.lock().unwrap().dropped.clone()
    }
}

/// Records a request dropped before its answer was given.
struct OnDrop(Arc<Mutex<Script>>, bool);

impl OnDrop {
    /// The answer was given whole: nothing was dropped.
    fn answered(&mut self) {
        self.1 = true;
    }
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.lock().unwrap().dropped.push(Instant::now());
        }
    }
}

async fn answer(
    State(script): State<Arc<Mutex<Script>>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let answer = {
        let mut script = script.lock().unwrap();
        script.received.push(HttpReceived {
            method: parts.method.to_string(),
            path_and_query: parts
                .uri
                .path_and_query()
                .map(|p| p.to_string())
                .unwrap_or_default(),
            headers: parts.headers.clone(),
            body,
            at: Instant::now(),
        });
        let by_path = (script.by_path.get_mut(parts.uri.path())).and_then(VecDeque::pop_front);
        match by_path.or_else(|| script.answers.pop_front()) {
            Some(answer) => answer,
            None => script.otherwise.clone().unwrap(),
        }
    };
    let mut guard = OnDrop(script, false);
    tokio::time::sleep(answer.delay).await;
    let status = StatusCode::from_u16(answer.status).unwrap();
    let mut response = if answer.chunks.is_empty() && !answer.stall {
        guard.answered();
        (status, answer.body).into_response()
    } else {
        // The guard goes with the body: a caller that closes the stream drops it.
        let chunks = answer.chunks;
        let stall = answer.stall;
        let body = futures_util::stream::unfold(
            (chunks.into_iter(), guard, stall),
            |(mut chunks, mut guard, stall)| async move {
                match chunks.next() {
                    Some((pause, chunk)) => {
                        tokio::time::sleep(pause).await;
                        Some((
                            Ok::<_, std::io::Error>(Bytes::from(chunk)),
                            (chunks, guard, stall),
                        ))
                    }
                    None if stall => std::future::pending().await,
                    None => {
                        guard.answered();
                        None
                    }
                }
            },
        );
        (status, axum::body::Body::from_stream(body)).into_response()
    };
    for (name, value) in answer.headers {
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}
