//! `HttpCall` and `HttpReply`: one request to an HTTP dependency, and its answer.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::error::{HttpError, HttpFailure};
use crate::dependency::failure::Failure;
use crate::resilience::{Request, TimeLimit};

/// One request to an HTTP dependency: a method, a path under the dependency's base URL,
/// headers and a body, fixed when it is made, so every attempt sends the same bytes (and the
/// same idempotency key). Cloning is cheap.
#[derive(Clone, Debug)]
pub struct HttpCall {
    fixed: Arc<Fixed>,
    limit: TimeLimit,
}

#[derive(Clone, Debug)]
pub(super) struct Fixed {
    pub(super) method: Method,
    pub(super) path: String,
    /// The whole URL, parsed once by whoever made the call (then `path` is empty): a
    /// URL's parse costs about as much as the rest of a small request.
    pub(super) url: Option<reqwest::Url>,
    pub(super) headers: HeaderMap,
    pub(super) body: Option<Bytes>,
    pub(super) idempotency_key: Option<HeaderValue>,
    operation: Cow<'static, str>,
    target: Option<Arc<str>>,
    repeatable: Option<bool>,
}

impl HttpCall {
    /// The request body, when it has one.
    pub(crate) fn body_bytes(&self) -> Option<&[u8]> {
        self.fixed.body.as_deref()
    }

    /// A `method` request to `path` (with its query, if any) under the base URL.
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        let operation = Cow::Owned(method.as_str().to_owned());
        HttpCall {
            fixed: Arc::new(Fixed {
                method,
                path: path.into(),
                url: None,
                headers: HeaderMap::new(),
                body: None,
                idempotency_key: None,
                operation,
                target: None,
                repeatable: None,
            }),
            limit: TimeLimit::NONE,
        }
    }

    /// A `method` request to `url`, parsed already (the base URL is not used).
    #[cfg(any(feature = "mcp", feature = "push"))]
    pub(in crate::dependency) fn to_url(method: Method, url: reqwest::Url) -> Self {
        let mut call = HttpCall::new(method, String::new());
        Arc::make_mut(&mut call.fixed).url = Some(url);
        call
    }

    /// A `GET` of `path`.
    pub fn get(path: impl Into<String>) -> Self {
        HttpCall::new(Method::GET, path)
    }

    /// A `POST` to `path`.
    pub fn post(path: impl Into<String>) -> Self {
        HttpCall::new(Method::POST, path)
    }

    /// `body` as JSON, with `Content-Type: application/json`.
    pub fn json<B: Serialize + ?Sized>(self, body: &B) -> Result<Self, HttpError> {
        let bytes = serde_json::to_vec(body).map_err(|error| {
            Failure::Failed(HttpFailure::Invalid {
                detail: format!("the body does not serialize: {error}"),
            })
        })?;
        Ok(self
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(bytes))
    }

    /// The raw body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        Arc::make_mut(&mut self.fixed).body = Some(body.into());
        self
    }

    /// Sends `trace` on (`traceparent`, and `tracestate` when it has one), unless the
    /// call's own headers already carry a `traceparent`.
    pub(crate) fn with_trace(mut self, trace: &crate::trace::TraceContext) -> Self {
        crate::trace::insert(&mut Arc::make_mut(&mut self.fixed).headers, trace);
        self
    }

    /// `headers` in place of the call's.
    #[cfg(feature = "mcp")]
    pub(in crate::dependency) fn with_headers(mut self, headers: HeaderMap) -> Self {
        Arc::make_mut(&mut self.fixed).headers = headers;
        self
    }

    /// Adds a header, sent with every attempt.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        Arc::make_mut(&mut self.fixed).headers.append(name, value);
        self
    }

    /// Sends `key` as the idempotency key (the dependency's idempotency header, by default
    /// `Idempotency-Key`) with every attempt, so that the service can run the request once;
    /// the call may then be repeated after an ambiguous failure.
    pub fn idempotency_key(mut self, key: HeaderValue) -> Self {
        Arc::make_mut(&mut self.fixed).idempotency_key = Some(key);
        self
    }

    /// Sends a fresh random idempotency key (128 bits, hex) with every attempt of this call.
    pub fn with_idempotency_key(self) -> Self {
        let key = format!("{:032x}", fastrand::u128(..));
        self.idempotency_key(HeaderValue::from_str(&key).expect("hex is a valid header value"))
    }

    /// Names the operation (default: the HTTP method), for the retry policy's table and logs.
    pub fn operation(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        Arc::make_mut(&mut self.fixed).operation = name.into();
        self
    }

    /// Says whether this request may be repeated after a failure that leaves open whether it
    /// ran. By default: yes for GET, HEAD, PUT, DELETE, OPTIONS and TRACE (idempotent by
    /// RFC 9110) and for a request with an idempotency key; else as the dependency says.
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        Arc::make_mut(&mut self.fixed).repeatable = Some(repeatable);
        self
    }

    /// Ends the call by `deadline` at the latest.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.limit = self.limit.with_deadline(deadline);
        self
    }

    /// Gives the call at most `budget` from its first send.
    pub fn with_budget(mut self, budget: Duration) -> Self {
        self.limit = self.limit.with_budget(budget);
        self
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.fixed.method
    }

    /// The path (and query) under the base URL.
    pub fn path(&self) -> &str {
        &self.fixed.path
    }

    /// What the call sends, taken whole when no clone of the call shares it (a call made
    /// for one attempt), else copied.
    pub(super) fn into_fixed(self) -> Fixed {
        Arc::try_unwrap(self.fixed).unwrap_or_else(|shared| (*shared).clone())
    }

    pub(in crate::dependency) fn with_target(mut self, target: Arc<str>) -> Self {
        Arc::make_mut(&mut self.fixed).target = Some(target);
        self
    }
}

impl Request for HttpCall {
    fn time_limit(&self) -> TimeLimit {
        self.limit
    }
    fn set_time_limit(&mut self, limit: TimeLimit) {
        self.limit = limit;
    }
    fn target(&self) -> Option<&str> {
        self.fixed.target.as_deref()
    }
    fn operation(&self) -> &str {
        &self.fixed.operation
    }
    fn repeatable(&self) -> Option<bool> {
        let fixed = &self.fixed;
        fixed.repeatable.or_else(|| {
            (fixed.idempotency_key.is_some() || fixed.method.is_idempotent()).then_some(true)
        })
    }
}

/// A dependency's successful (2xx) answer: its status, headers and whole body (at most the
/// dependency's reply limit).
#[derive(Clone, Debug)]
pub struct HttpReply {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

/// The largest reply [`HttpReply::json_value`] reads (2 MiB): a `serde_json::Value` costs up
/// to 32 bytes of memory per byte of JSON (`[0,0,…]`: 32 bytes a number, with a vector's
/// doubling), so at most 64 MiB for one reply.
pub const MAX_VALUE_BYTES: usize = 2 << 20;

impl HttpReply {
    /// The body read as JSON into `T`; a body that is not fails as
    /// [`HttpFailure::Malformed`].
    ///
    /// Memory: a struct that names only the fields it uses (serde skips the others without
    /// building them, however long) costs what those fields hold, whatever the reply's size;
    /// read a field whose shape you do not know as `Box<serde_json::value::RawValue>` (its
    /// text, one copy). A `serde_json::Value` costs up to 32 times the bytes it is read from,
    /// so the reply limit (32 MiB by default) would allow a gigabyte: read untyped replies
    /// with [`json_value`](Self::json_value), which is bounded.
    ///
    /// ```
    /// # use a2a_error_runtime as a2a_error;
    /// use a2a_error::dependency::HttpReply;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Completion {
    ///     choices: Vec<Choice>,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct Choice {
    ///     message: Message,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct Message {
    ///     content: String,
    /// }
    ///
    /// let body = r#"{"choices":[{"message":{"content":"hi"}}],"padding":[0,0,0]}"#;
    /// let reply = HttpReply { status: 200, headers: Default::default(), body: body.into() };
    /// let completion: Completion = reply.json().unwrap();
    /// assert_eq!(completion.choices[0].message.content, "hi");
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|error| {
            Failure::Failed(HttpFailure::Malformed {
                detail: format!("the reply is not the expected JSON: {error}"),
            })
        })
    }

    /// The body read as an untyped `serde_json::Value`, for replies whose shape is not known:
    /// at most [`MAX_VALUE_BYTES`] (2 MiB, so at most 64 MiB of memory); a larger body fails as
    /// [`HttpFailure::TooLarge`] without being parsed. Prefer [`json`](Self::json) with a type.
    pub fn json_value(&self) -> Result<serde_json::Value, HttpError> {
        if self.body.len() > MAX_VALUE_BYTES {
            return Err(Failure::Failed(HttpFailure::TooLarge {
                limit: MAX_VALUE_BYTES,
            }));
        }
        self.json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_untyped_path_refuses_what_it_cannot_hold_in_its_bound() {
        let reply = |body: Vec<u8>| HttpReply {
            status: 200,
            headers: HeaderMap::new(),
            body: body.into(),
        };
        // `[0,0,…]` of `len` bytes at most, as many zeros as fit.
        let zeros = |len: usize| format!("[0{}]", ",0".repeat((len - 3) / 2));
        assert!(matches!(
            reply(zeros(MAX_VALUE_BYTES + 2).into_bytes()).json_value(),
            Err(Failure::Failed(HttpFailure::TooLarge {
                limit: MAX_VALUE_BYTES
            }))
        ));
        let fits = zeros(MAX_VALUE_BYTES);
        assert!(fits.len() <= MAX_VALUE_BYTES);
        assert!(reply(fits.into_bytes()).json_value().unwrap().is_array());
        // A type reads a larger reply at once, skipping what it does not name.
        let padded = format!(r#"{{"a":1,"pad":{}}}"#, zeros(4 * MAX_VALUE_BYTES));
        #[derive(serde::Deserialize)]
        struct A {
            a: u8,
        }
        assert_eq!(reply(padded.into_bytes()).json::<A>().unwrap().a, 1);
    }
}
