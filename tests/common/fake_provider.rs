//! A fake model provider (and tool) on loopback: answers each request from a script the test
//! writes, and records what it received and which requests were dropped unfinished.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Answer {
    /// A chat completion whose content is `text`.
    pub fn completion(text: &str) -> Answer {
        Answer::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": text}}]}),
        )
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string().into_bytes(),
            delay: Duration::ZERO,
        }
    }

    /// `status` with a body that names the provider's internals (which must never reach the
    /// agent's caller).
    pub fn status(status: u16) -> Answer {
        Answer::json(
            status,
            json!({"error": {"message": "provider-internal-secret at /srv/llm"}}),
        )
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Answer {
        self.headers.push((name, value.into()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Answer {
        self.delay = delay;
        self
    }
}

/// What the fake received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path_and_query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
}

#[derive(Default)]
struct Script {
    answers: VecDeque<Answer>,
    otherwise: Option<Answer>,
    received: Vec<Received>,
    dropped: Vec<Instant>,
}

/// A fake provider: its base URL and its script.
#[derive(Clone)]
pub struct FakeProvider {
    pub url: String,
    script: Arc<Mutex<Script>>,
}

impl FakeProvider {
    /// Starts one on loopback; it answers `otherwise` once the scripted answers are spent.
    pub async fn start(otherwise: Answer) -> FakeProvider {
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
        FakeProvider { url, script }
    }

    /// Answers the next requests with `answers`, in order.
    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.script.lock().unwrap().answers.extend(answers);
    }

    pub fn received(&self) -> Vec<Received> {
        self.script.lock().unwrap().received.clone()
    }

    /// When each request dropped unfinished (its caller gone) was dropped.
    pub fn dropped(&self) -> Vec<Instant> {
        self.script.lock().unwrap().dropped.clone()
    }
}

/// Records a request dropped before its answer was given.
struct OnDrop(Arc<Mutex<Script>>, bool);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.lock().unwrap().dropped.push(Instant::now());
        }
    }
}

async fn answer(State(script): State<Arc<Mutex<Script>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let answer = {
        let mut script = script.lock().unwrap();
        script.received.push(Received {
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
        match script.answers.pop_front() {
            Some(answer) => answer,
            None => script.otherwise.clone().unwrap(),
        }
    };
    let mut guard = OnDrop(script, false);
    tokio::time::sleep(answer.delay).await;
    guard.1 = true;
    let mut response = (StatusCode::from_u16(answer.status).unwrap(), answer.body).into_response();
    for (name, value) in answer.headers {
        response.headers_mut().insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

/// A URL where nothing listens.
pub fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    url
}
