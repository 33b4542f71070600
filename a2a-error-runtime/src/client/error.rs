//! `ClientError`: everything a call to another agent can end in, with the facts a caller acts
//! on (HTTP status, headers, retry delay) on the error itself, not in a cause chain.

use crate::resilience::Timeout;
use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::wire::error::{A2aError, FromErrorObject, HasKind};
use crate::wire::object::ErrorObject;
use crate::wire::remote::RemoteError;

/// A boxed source error (reqwest's, an I/O error).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The head of an HTTP response: its status and headers (the body has been read already).
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseHead {
    /// The HTTP status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
}

impl ResponseHead {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The `Retry-After` header as a delay from `now`: delta-seconds or an HTTP-date
    /// (RFC 9110 §10.2.3). A date in the past is a zero delay.
    pub fn retry_after_at(&self, now: SystemTime) -> Option<Duration> {
        crate::http::retry_after::parse_retry_after(self.headers.get(RETRY_AFTER)?.as_bytes(), now)
    }
}

/// An error object the peer sent, with the HTTP reply it came in.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorReply {
    /// The error as received, nothing dropped.
    pub error: RemoteError,
    /// The HTTP reply it came in (absent for an SSE error event).
    pub http: Option<ResponseHead>,
}

/// Everything a call to another agent can end in.
///
/// `E` is the caller's own error enum (`#[derive(A2aError)]`): a reply whose error object `E`
/// mirrors arrives as [`ClientError::Remote`], anything else as [`ClientError::Unrecognized`],
/// and both keep the received object whole.
///
/// [`reply_status`](ClientError::reply_status) is the status of the reply that was received,
/// if any; [`A2aError::http_status`] is the status this error maps to when an agent passes it
/// on to its own caller. [`A2aError`] also gives its category and whether a retry may help.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError<E = RemoteError> {
    /// The peer answered with an error object that `E` mirrors.
    Remote {
        /// The typed error.
        error: Box<E>,
        /// The object as received and the HTTP reply it came in.
        reply: Box<ErrorReply>,
    },
    /// The peer answered with an error object that `E` does not mirror.
    Unrecognized(Box<ErrorReply>),
    /// An HTTP reply that is not an A2A answer at all (a proxy's 502 page, a 404).
    Status(Box<ResponseHead>),
    /// A timeout fired.
    Timeout(Timeout),
    /// No connection could be made (refused, DNS, TLS); the request was never sent.
    Connect(BoxError),
    /// The connection failed after the request was sent (reset mid-response).
    Transport(BoxError),
    /// The peer's reply could not be read as A2A (bad JSON, a wrong id, an unexpected shape).
    Malformed {
        /// What was wrong, for logs.
        detail: String,
        /// The HTTP reply, if one arrived.
        http: Option<Box<ResponseHead>>,
    },
    /// The reply, or one event of a stream, was larger than the client's limit
    /// ([`ReplyLimits`](crate::client::http::ReplyLimits)); reading stopped there.
    ReplyTooLarge {
        /// The limit in bytes.
        limit: usize,
        /// The HTTP reply, if the limit was hit reading a whole body.
        http: Option<Box<ResponseHead>>,
    },
    /// The call could not be built (params that do not serialize, a method the binding has
    /// no route for).
    InvalidCall {
        /// What was wrong, for logs.
        detail: String,
    },
    /// The agent's circuit breaker is open: the call failed fast without being sent. Passed
    /// on to our own caller it is AGENT_UNAVAILABLE with this delay as its RetryInfo.
    CircuitOpen {
        /// The time until the circuit half-opens (zero when that is not known: isolated by
        /// hand, or every half-open probe slot taken).
        retry_after: Duration,
    },
    /// This process already has as many calls in flight to the agent as its bulkhead allows,
    /// and as many waiting ([`Bulkhead`](crate::resilience::Bulkhead)): the call failed fast
    /// without being sent. It says nothing about the agent's health (the breaker does not
    /// count it) and is not retried here. Passed on to our own caller it is
    /// AGENT_UNAVAILABLE.
    BulkheadFull,
}

impl<E> ClientError<E> {
    /// Builds the error for a received error object: `E` when it mirrors, else unrecognized.
    pub fn from_object(object: ErrorObject, http: Option<ResponseHead>) -> Self
    where
        E: FromErrorObject,
    {
        let typed = E::from_error_object(&object);
        let reply = Box::new(ErrorReply {
            error: RemoteError::from_object(object),
            http,
        });
        match typed {
            Some(error) => ClientError::Remote {
                error: Box::new(error),
                reply,
            },
            None => ClientError::Unrecognized(reply),
        }
    }

    /// The received error object, for a reply that carried one.
    pub fn remote(&self) -> Option<&RemoteError> {
        match self {
            ClientError::Remote { reply, .. } | ClientError::Unrecognized(reply) => {
                Some(&reply.error)
            }
            _ => None,
        }
    }

    /// The typed error, when the reply mirrored `E`.
    pub fn typed(&self) -> Option<&E> {
        match self {
            ClientError::Remote { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The HTTP reply, when one arrived.
    pub fn http(&self) -> Option<&ResponseHead> {
        match self {
            ClientError::Remote { reply, .. } | ClientError::Unrecognized(reply) => {
                reply.http.as_ref()
            }
            ClientError::Malformed { http, .. } | ClientError::ReplyTooLarge { http, .. } => {
                http.as_deref()
            }
            ClientError::Status(http) => Some(http),
            _ => None,
        }
    }

    /// The HTTP status of the reply, when one arrived.
    pub fn reply_status(&self) -> Option<u16> {
        self.http().map(|http| http.status)
    }

    /// The JSON-RPC code of the received error object.
    pub fn remote_code(&self) -> Option<i32> {
        self.remote().map(|remote| remote.object().code)
    }

    /// Which variant of `E` the peer's error stands for: the rebuilt error's kind, or, for
    /// a variant that cannot be rebuilt (its fields do not all travel), the kind its code
    /// and reason select. `None` for an error `E` does not mirror and for local failures.
    pub fn kind(&self) -> Option<E::Kind>
    where
        E: HasKind,
    {
        match self {
            ClientError::Remote { error, .. } => Some(error.kind()),
            ClientError::Unrecognized(reply) => E::kind_of(reply.error.object()),
            _ => None,
        }
    }

    /// The delay the peer asked for, read against `now` for an HTTP-date: RetryInfo or the
    /// legacy `retryAfter` in the error object first, then the `Retry-After` header.
    pub fn retry_after_at(&self, now: SystemTime) -> Option<Duration>
    where
        E: A2aError,
    {
        match self {
            ClientError::Remote { error, reply } => reply
                .error
                .retry_after()
                .or_else(|| self.http()?.retry_after_at(now))
                .or_else(|| error.retry_hint().delay()),
            ClientError::Unrecognized(reply) => reply
                .error
                .retry_after()
                .or_else(|| self.http()?.retry_after_at(now)),
            ClientError::CircuitOpen { retry_after } => {
                (!retry_after.is_zero()).then_some(*retry_after)
            }
            _ => self.http()?.retry_after_at(now),
        }
    }

    /// The delay the peer asked for (an HTTP-date is read against the system clock).
    pub fn retry_after(&self) -> Option<Duration>
    where
        E: A2aError,
    {
        self.retry_after_at(SystemTime::now())
    }
}

impl<E: fmt::Display> fmt::Display for ClientError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Remote { reply, .. } | ClientError::Unrecognized(reply) => {
                fmt::Display::fmt(&reply.error, f)
            }
            ClientError::Status(http) => {
                write!(f, "HTTP {} reply that is not an A2A answer", http.status)
            }
            ClientError::Timeout(timeout) => write!(f, "{} timeout", timeout.as_str()),
            ClientError::Connect(source) => write!(f, "cannot connect: {}", Root(&**source)),
            ClientError::Transport(source) => {
                write!(f, "connection failed mid-call: {}", Root(&**source))
            }
            ClientError::Malformed { detail, .. } => write!(f, "malformed reply: {detail}"),
            ClientError::ReplyTooLarge { limit, .. } => {
                write!(f, "reply larger than the client's limit of {limit} bytes")
            }
            ClientError::InvalidCall { detail } => write!(f, "invalid call: {detail}"),
            ClientError::CircuitOpen { retry_after } => {
                write!(f, "circuit open for another {retry_after:?}")
            }
            ClientError::BulkheadFull => f.write_str("too many calls in flight to the agent"),
        }
    }
}

/// The innermost cause of an error, which names the actual failure ("Connection refused")
/// where the outer ones only say what was being done.
struct Root<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Root<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut error = self.0;
        while let Some(source) = error.source() {
            error = source;
        }
        if std::ptr::addr_eq(error, self.0) {
            return fmt::Display::fmt(self.0, f);
        }
        write!(f, "{}: {error}", self.0)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ClientError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Remote { error, .. } => Some(&**error),
            ClientError::Connect(source) | ClientError::Transport(source) => Some(&**source),
            _ => None,
        }
    }
}

/// Read back from an error object (an agent's caller decoding the failure this agent passed
/// on): `E`'s variant when it mirrors the object, else the object as received. It matches
/// every object, so as a `transparent` variant it belongs last.
impl<E: FromErrorObject> FromErrorObject for ClientError<E> {
    fn from_error_object(obj: &ErrorObject) -> Option<Self> {
        Some(ClientError::from_object(obj.clone(), None))
    }

    fn code_for_reason(reason: &str) -> Option<i32> {
        E::code_for_reason(reason)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    /// A bare HTTP reply with `code` and, when given, a `Retry-After` header.
    pub(in crate::client) fn status(code: u16, retry_after: Option<&'static str>) -> ClientError {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from_static(value));
        }
        ClientError::Status(Box::new(ResponseHead {
            status: code,
            headers,
        }))
    }

    #[test]
    fn retry_after_both_forms() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let seconds = status(429, Some("7"));
        assert_eq!(seconds.retry_after_at(now), Some(Duration::from_secs(7)));
        let date = status(503, Some("Sun, 06 Nov 1994 08:50:07 GMT"));
        assert_eq!(date.retry_after_at(now), Some(Duration::from_secs(30)));
        let past = status(503, Some("Sun, 06 Nov 1994 08:00:00 GMT"));
        assert_eq!(past.retry_after_at(now), Some(Duration::ZERO));
        assert_eq!(status(503, Some("soon")).retry_after_at(now), None);
    }
}
