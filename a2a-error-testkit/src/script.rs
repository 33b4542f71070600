//! The fault agent's script and record, which every binding it serves (JSON-RPC and REST in
//! `agent`, gRPC in `grpc`) answers from and writes to.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::HeaderMap;
use serde_json::json;

use crate::answer::Answer;

/// One call as the fault agent received it.
#[derive(Clone, Debug)]
pub struct Received {
    /// `"jsonrpc"`, `"rest"` or `"grpc"`.
    pub binding: &'static str,
    /// The A2A method (its 1.0 name), when the call named one the agent knows.
    pub method: Option<String>,
    /// The request's headers.
    pub headers: HeaderMap,
    /// What the caller's `A2A-Deadline-Ms` said was left, if it sent one.
    pub deadline: Option<Duration>,
    /// The message's `messageId`, for SendMessage and SendStreamingMessage.
    pub message_id: Option<String>,
    /// The W3C `traceparent` header, if the caller sent one.
    pub traceparent: Option<String>,
    /// The body.
    pub body: Bytes,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Default)]
pub(crate) struct Script {
    pub(crate) by_method: HashMap<String, VecDeque<Answer>>,
    pub(crate) in_order: VecDeque<Answer>,
    pub(crate) otherwise: Option<Answer>,
    pub(crate) received: Vec<Received>,
    pub(crate) dropped: Vec<Instant>,
}

impl Script {
    pub(crate) fn next(&mut self, method: Option<&str>) -> Answer {
        if let Some(answer) = method
            .and_then(|method| self.by_method.get_mut(method))
            .and_then(VecDeque::pop_front)
        {
            return answer;
        }
        self.in_order
            .pop_front()
            .or_else(|| self.otherwise.clone())
            .unwrap_or_else(|| Answer::Result(json!({})))
    }
}

/// Counts a call dropped before its answer was sent.
pub(crate) struct Unanswered(pub(crate) Arc<Mutex<Script>>, pub(crate) bool);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if !self.1 {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .dropped
                .push(Instant::now());
        }
    }
}
