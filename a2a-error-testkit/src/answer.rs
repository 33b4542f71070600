//! `Answer`: what the fault agent does with one call.

use std::time::Duration;

use a2a_error_runtime::{ERROR_INFO_TYPE, ErrorObject, RETRY_INFO_TYPE, RemoteError};
use serde_json::{Map, Value, json};

/// What the [`FaultAgent`](crate::FaultAgent) does with one call, on whichever binding it
/// came (JSON-RPC or HTTP+JSON; a streaming method answers over SSE).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Answer {
    /// A result: the JSON-RPC `result`, or the REST body; for a streaming method, one event.
    Result(Value),
    /// The call's own params (the REST body) as its result.
    Echo,
    /// An A2A error, encoded as the binding encodes it (an error object; a `google.rpc.Status`
    /// with its HTTP status and `Retry-After`).
    Error(ErrorAnswer),
    /// A bare HTTP reply that is not A2A, as a proxy or a load balancer sends one.
    Http {
        /// The status.
        status: u16,
        /// Its headers.
        headers: Vec<(String, String)>,
        /// Its body.
        body: String,
    },
    /// Waits, then answers.
    Delay(Duration, Box<Answer>),
    /// Sends the start of a 200 reply, then breaks the connection.
    Reset,
    /// Never answers: the call hangs until its caller gives up.
    BlackHole,
    /// The answer's body one byte every `interval`.
    Trickle(Duration, Box<Answer>),
    /// These bytes as a 200 `application/json` reply: malformed or hostile on purpose.
    Raw(Vec<u8>),
    /// A stream of events (SSE), then an error event if `then` is set.
    Stream {
        /// The events, in order.
        events: Vec<Value>,
        /// The error that ends the stream, if any.
        then: Option<ErrorAnswer>,
    },
}

impl Answer {
    /// A result.
    pub fn result(value: Value) -> Answer {
        Answer::Result(value)
    }

    /// An A2A error with `code` (its reason and message from the code table unless set).
    pub fn error(code: i32) -> ErrorAnswer {
        ErrorAnswer {
            code,
            reason: None,
            domain: None,
            message: None,
            metadata: Map::new(),
            retry_after: None,
        }
    }

    /// A bare HTTP `status` with a plain-text body.
    pub fn http(status: u16, body: &str) -> Answer {
        Answer::Http {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.to_owned(),
        }
    }

    /// `self` (a bare HTTP reply) with header `name` set to `value`, replacing any of that
    /// name; other answers are left as they are.
    pub fn header(self, name: &str, value: &str) -> Answer {
        match self {
            Answer::Http {
                status,
                mut headers,
                body,
            } => {
                headers.retain(|(known, _)| !known.eq_ignore_ascii_case(name));
                headers.push((name.to_owned(), value.to_owned()));
                Answer::Http {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    /// `self`, after `delay`.
    pub fn after(self, delay: Duration) -> Answer {
        Answer::Delay(delay, Box::new(self))
    }

    /// `self`, its body one byte every `interval`.
    pub fn trickled(self, interval: Duration) -> Answer {
        Answer::Trickle(interval, Box::new(self))
    }

    /// `events`, then `error`.
    pub fn stream_failing_after(events: Vec<Value>, error: ErrorAnswer) -> Answer {
        Answer::Stream {
            events,
            then: Some(error),
        }
    }
}

/// An A2A error the fault agent answers with: a code, and what its ErrorInfo and RetryInfo
/// say.
#[derive(Clone, Debug)]
pub struct ErrorAnswer {
    code: i32,
    reason: Option<String>,
    domain: Option<String>,
    message: Option<String>,
    metadata: Map<String, Value>,
    retry_after: Option<Duration>,
}

impl ErrorAnswer {
    /// The ErrorInfo reason (default: the code table's).
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_owned());
        self
    }

    /// The ErrorInfo domain (default: `a2a-protocol.org` for the spec's codes, else
    /// `a2a-error`).
    pub fn domain(mut self, domain: &str) -> Self {
        self.domain = Some(domain.to_owned());
        self
    }

    /// The message (default: the code table's).
    pub fn message(mut self, message: &str) -> Self {
        self.message = Some(message.to_owned());
        self
    }

    /// One ErrorInfo metadata entry.
    pub fn metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.insert(key.to_owned(), Value::from(value));
        self
    }

    /// A RetryInfo of `delay` (and `Retry-After` over REST).
    pub fn retry_after(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self
    }

    /// The error as this crate's runtime reads and writes it.
    pub fn to_remote(&self) -> RemoteError {
        let row = a2a_error_runtime::code::lookup(self.code);
        let reason = self
            .reason
            .clone()
            .or_else(|| row.map(|row| row.reason.to_owned()))
            .unwrap_or_else(|| "UNKNOWN".to_owned());
        let domain =
            self.domain
                .clone()
                .unwrap_or_else(|| match row.map(|row| row.origin.is_spec()) {
                    Some(true) => a2a_error_runtime::code::SPEC_DOMAIN.to_owned(),
                    _ => "a2a-error".to_owned(),
                });
        let message = self
            .message
            .clone()
            .or_else(|| row.map(|row| row.message.to_owned()))
            .unwrap_or_else(|| "Error".to_owned());
        let mut data = vec![json!({
            "@type": ERROR_INFO_TYPE,
            "reason": reason,
            "domain": domain,
            "metadata": self.metadata,
        })];
        if let Some(delay) = self.retry_after {
            data.push(json!({
                "@type": RETRY_INFO_TYPE,
                "retryDelay": format!("{}.{:03}s", delay.as_secs(), delay.subsec_millis()),
            }));
        }
        RemoteError::from_object(ErrorObject {
            code: self.code,
            message,
            data: Some(Value::Array(data)),
        })
    }
}

impl From<ErrorAnswer> for Answer {
    fn from(error: ErrorAnswer) -> Answer {
        Answer::Error(error)
    }
}
