//! `ClientError`: everything a call to another agent can end in, with the facts a caller acts
//! on (HTTP status, headers, retry delay) on the error itself, not in a cause chain.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

use a2a_error_codes::{CodeRow, DefaultRetry};
use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::wire::chain::{self, Hop};
use crate::wire::code::{self, SPEC_DOMAIN};
use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, FromErrorObject, HasKind, RetryHint};
use crate::wire::object::ErrorObject;
use crate::wire::remote::RemoteError;
use a2a_error_codes::PROJECT_DOMAIN;

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
        crate::wire::headers::parse_retry_after(self.headers.get(RETRY_AFTER)?.as_bytes(), now)
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

/// Which timeout fired.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Timeout {
    /// The TCP (and TLS) connection was not up in time; the request was never sent.
    Connect,
    /// One attempt took longer than its limit; the peer may still be working on it.
    Attempt,
    /// The whole call, retries included, ran out of time.
    Total,
    /// A stream went silent for longer than its idle limit between two events.
    Idle,
}

impl Timeout {
    /// The limit that fires first: `limit` (which fires as itself) or the call's `deadline`
    /// (which fires as [`Timeout::Total`] and wins a tie). `None` when there is neither.
    pub(crate) fn first(
        limit: Option<(tokio::time::Instant, Timeout)>,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<(tokio::time::Instant, Timeout)> {
        match (limit, deadline) {
            (Some((at, fired)), Some(deadline)) if at < deadline => Some((at, fired)),
            (_, Some(deadline)) => Some((deadline, Timeout::Total)),
            (limit, None) => limit,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Timeout::Connect => "connect",
            Timeout::Attempt => "attempt",
            Timeout::Total => "total",
            Timeout::Idle => "stream idle",
        }
    }
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
    /// ([`ReplyLimits`](super::ReplyLimits)); reading stopped there.
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

/// The codes a client sends only by its own mistake; retrying them cannot help.
const CLIENT_MISTAKES: [i32; 4] = [
    code::PARSE_ERROR,
    code::INVALID_REQUEST,
    code::METHOD_NOT_FOUND,
    code::INVALID_PARAMS,
];

/// The codes a server answers before it does any work: the request could not be read, was not
/// allowed, or was refused for load. Such an error reply proves the peer did not run the
/// call, so even a method that is unsafe to repeat may be sent again. Every other error reply
/// (internal errors, deadline exceeded after the handler was stopped, downstream failures,
/// codes nobody here knows) may come from work that was already under way.
/// AGENT_UNAVAILABLE counts only with pushback (a retry delay): without one it may be a
/// handler's own failure halfway through.
pub const DECIDED_BEFORE_WORK: [i32; 11] = [
    code::PARSE_ERROR,
    code::INVALID_REQUEST,
    code::METHOD_NOT_FOUND,
    code::INVALID_PARAMS,
    code::VERSION_NOT_SUPPORTED,
    code::CONTENT_TYPE_NOT_SUPPORTED,
    code::EXTENSION_SUPPORT_REQUIRED,
    code::AUTH_REQUIRED,
    code::INSUFFICIENT_SCOPE,
    code::RATE_LIMITED,
    code::CONTENT_TOO_LARGE,
];

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

    /// Whether the peer may have run the request: `false` only when it provably did not (no
    /// connection, refused with HTTP 408/429/503, or an error reply whose code is decided
    /// before any work: see [`DECIDED_BEFORE_WORK`]). A method that is not safe to repeat is
    /// retried only when this is `false`.
    pub fn may_have_run(&self) -> bool {
        match self {
            ClientError::Remote { reply, .. } | ClientError::Unrecognized(reply) => {
                let code = reply.error.code();
                let pushback = reply.error.retry_delay().is_some()
                    || reply
                        .http
                        .as_ref()
                        .is_some_and(|http| http.headers.contains_key(RETRY_AFTER));
                !(DECIDED_BEFORE_WORK.contains(&code)
                    || code == code::AGENT_UNAVAILABLE && pushback)
            }
            ClientError::Connect(_)
            | ClientError::Timeout(Timeout::Connect)
            | ClientError::InvalidCall { .. }
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => false,
            // 408: the request never fully arrived; 429 and 503: refused for load.
            ClientError::Status(http) => !matches!(http.status, 408 | 429 | 503),
            ClientError::Timeout(_)
            | ClientError::Transport(_)
            | ClientError::Malformed { .. }
            | ClientError::ReplyTooLarge { .. } => true,
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
                .retry_delay()
                .or_else(|| self.http()?.retry_after_at(now))
                .or_else(|| error.retry_hint().delay()),
            ClientError::Unrecognized(reply) => reply
                .error
                .retry_delay()
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

    /// Whether trying again may help (see [`retry_advice`](Self::retry_advice)).
    fn may_help_to_retry(&self) -> bool
    where
        E: A2aError,
    {
        match self {
            ClientError::Remote { error, reply } => remote_retryable(&**error, &reply.error),
            ClientError::Unrecognized(reply) => remote_retryable(&reply.error, &reply.error),
            ClientError::Status(http) => status_row(http).retry != DefaultRetry::Never,
            ClientError::Timeout(timeout) => *timeout != Timeout::Total,
            ClientError::Connect(_)
            | ClientError::Transport(_)
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => true,
            // The same peer would send the same oversized reply again.
            ClientError::Malformed { .. }
            | ClientError::ReplyTooLarge { .. }
            | ClientError::InvalidCall { .. } => false,
        }
    }

    /// What kind of failure this is.
    fn failure_category(&self) -> Category
    where
        E: A2aError,
    {
        match self {
            ClientError::Remote { error, .. } => error.category(),
            ClientError::Unrecognized(reply) => reply.error.category(),
            ClientError::Status(http) => status_row(http).category,
            ClientError::Timeout(_) => Category::Timeout,
            ClientError::Connect(_)
            | ClientError::Transport(_)
            | ClientError::CircuitOpen { .. }
            | ClientError::BulkheadFull => Category::Transient,
            ClientError::Malformed { .. } | ClientError::ReplyTooLarge { .. } => Category::Fatal,
            ClientError::InvalidCall { .. } => Category::Validation,
        }
    }

    /// The table row a local failure is passed on as. A bare status passes on only as a
    /// refusal for load (which the caller may retry just the same); a downstream 404 or 401 is
    /// not the caller's missing task or missing credentials.
    fn local_row(&self) -> &'static CodeRow {
        let code = match self {
            ClientError::Timeout(_) => code::DEADLINE_EXCEEDED,
            ClientError::Status(http) => match status_row(http).code {
                code @ (code::RATE_LIMITED | code::AGENT_UNAVAILABLE) => code,
                _ => code::DOWNSTREAM_FAILED,
            },
            ClientError::InvalidCall { .. } => code::INTERNAL_ERROR,
            ClientError::CircuitOpen { .. } | ClientError::BulkheadFull => code::AGENT_UNAVAILABLE,
            _ => code::DOWNSTREAM_FAILED,
        };
        row(code)
    }
}

/// The table row of a code this module names (every one is in the table).
fn row(code: i32) -> &'static CodeRow {
    code::lookup(code).unwrap_or(&a2a_error_codes::TABLE[0])
}

/// The table row a bare HTTP status stands for ([`code::code_for_http`]).
fn status_row(http: &ResponseHead) -> &'static CodeRow {
    row(code::code_for_http(http.status, None))
}

/// A peer's error, read as `error` (the typed mirror, or the object itself): retryable when
/// its hint says so or the peer sent a delay. A delay never overrides "do not retry": the
/// caller's own mistakes, the never-retried categories (validation, auth, not found, fatal)
/// and a peer's explicit `retryable: false` win over it.
fn remote_retryable(error: &impl A2aError, object: &RemoteError) -> bool {
    if CLIENT_MISTAKES.contains(&error.code())
        || error.category().is_never_retried()
        || object.retryable() == Some(false)
    {
        return false;
    }
    error.retry_hint().is_retryable() || object.retry_delay().is_some()
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

/// Passing a downstream failure on, translated, never forwarded (Google's API design guide,
/// "Propagating errors"): a received error object becomes DOWNSTREAM_FAILED with this
/// agent's own public message, naming in ErrorInfo metadata what the downstream failed with
/// and the chain below it (see [`Hop`](crate::Hop) for the fields and their limits); a local
/// failure becomes DEADLINE_EXCEEDED (a timeout), RATE_LIMITED or AGENT_UNAVAILABLE (a bare
/// 429 or 503), AGENT_UNAVAILABLE with the time to half-open as its RetryInfo (an open
/// circuit), or DOWNSTREAM_FAILED, with nothing of its `Display` text on the wire.
///
/// Retry advice, and retry amplification: the client that got this error has already retried
/// it as far as its policy allowed, so a failure that was retryable goes on marked
/// `retriesExhausted` and not retryable. A chain of agents retries in one layer only, the one
/// right above the failure: with the default policy everywhere, a failing leaf sees the
/// attempts of one policy per top-level call, not their product. An open circuit is the
/// exception: nothing was sent, and its delay is the truth for every layer above. The
/// category is the root cause's.
impl<E: A2aError + 'static> A2aError for ClientError<E> {
    fn code(&self) -> i32 {
        match self.remote() {
            Some(_) => code::DOWNSTREAM_FAILED,
            None => self.local_row().code,
        }
    }

    fn reason(&self) -> &str {
        match self.remote() {
            Some(_) => row(code::DOWNSTREAM_FAILED).reason,
            None => self.local_row().reason,
        }
    }

    fn domain(&self) -> &str {
        if self.has_placeholder_domain() {
            PROJECT_DOMAIN
        } else {
            SPEC_DOMAIN
        }
    }

    fn has_placeholder_domain(&self) -> bool {
        self.remote().is_some() || !self.local_row().origin.is_spec()
    }

    fn public_message(&self) -> Cow<'_, str> {
        Cow::Borrowed(row(self.code()).message)
    }

    fn retry_hint(&self) -> RetryHint {
        match self {
            ClientError::CircuitOpen { retry_after } if !retry_after.is_zero() => {
                RetryHint::After(*retry_after)
            }
            ClientError::CircuitOpen { .. } | ClientError::BulkheadFull => RetryHint::Backoff,
            _ => RetryHint::Never,
        }
    }

    fn category(&self) -> Category {
        let root = self
            .remote()
            .and_then(|remote| chain::hops_of(remote.object()).pop())
            .and_then(|hop| code::lookup(hop.code));
        match root {
            Some(row) => row.category,
            None => self.failure_category(),
        }
    }

    fn http_status(&self) -> u16 {
        row(self.code()).http_status
    }

    fn grpc_status(&self) -> &'static str {
        row(self.code()).grpc_status
    }

    fn write_data(&self, sink: &mut DataSink<'_>) {
        self.write_downstream(None, sink);
    }
}

impl<E: A2aError + 'static> ClientError<E> {
    /// Whether retrying this call may help, and after what delay: the advice a retry layer
    /// acts on. A peer's error object says so itself (never for -32700/-32600/-32601/-32602
    /// or auth); HTTP 408/429/502/503/504, connection failures, connect and attempt timeouts
    /// and an open circuit may clear. This is not what the error says once passed on to our
    /// own caller ([`A2aError::retry_hint`]): by then this client has retried it.
    pub fn retry_advice(&self) -> RetryHint {
        if !self.may_help_to_retry() {
            return RetryHint::Never;
        }
        match self.retry_after() {
            Some(delay) => RetryHint::After(delay),
            None => RetryHint::Backoff,
        }
    }

    /// The hops this failure names when passed on: the failed agent (`agent`, when known)
    /// with what it failed with, then the chain its own error named.
    pub(crate) fn hops(&self, agent: Option<&str>) -> Vec<Hop> {
        let mut hops = vec![self.first_hop(agent)];
        if let Some(remote) = self.remote() {
            hops.extend(chain::hops_of(remote.object()));
        }
        hops
    }

    /// The failed agent's own hop (`agent`, when known): the code, reason and domain it sent,
    /// or the local failure's code and reason. The chain below it is not read.
    pub(crate) fn first_hop(&self, agent: Option<&str>) -> Hop {
        match self.remote() {
            Some(remote) => Hop::new(agent, remote.code(), remote.reason(), Some(remote.domain())),
            None => Hop::new(agent, self.local_row().code, self.local_reason(), None),
        }
    }

    /// Whether the layer below has retried this as far as it goes: it was retryable here, or
    /// the downstream said its own layer had.
    pub(crate) fn retries_exhausted(&self) -> bool {
        if matches!(
            self,
            ClientError::CircuitOpen { .. } | ClientError::BulkheadFull
        ) {
            return false;
        }
        self.retry_advice().is_retryable()
            || self.remote().is_some_and(|remote| {
                // `"true"` in ErrorInfo metadata, `true` in the legacy profile.
                matches!(
                    remote.object().metadata_value("retriesExhausted"),
                    Some(serde_json::Value::Bool(true))
                ) || matches!(
                    remote.object().metadata_value("retriesExhausted"),
                    Some(serde_json::Value::String(flag)) if flag == "true"
                )
            })
    }

    /// Writes the hop fields of this failure, `agent` naming the failed agent, within the
    /// size limits of [`chain`].
    pub(crate) fn write_downstream(&self, agent: Option<&str>, sink: &mut DataSink<'_>) {
        self.write_downstream_within(agent, sink, CHAIN_BYTES);
    }

    /// As [`write_downstream`](Self::write_downstream), the hop fields within `budget` bytes.
    pub(crate) fn write_downstream_within(
        &self,
        agent: Option<&str>,
        sink: &mut DataSink<'_>,
        budget: usize,
    ) {
        let mut hops = self.hops(agent);
        let mut truncated = chain::cut_depth(&mut hops, chain::MAX_HOPS);
        let exhausted = self.retries_exhausted();
        let legacy = sink.is_legacy();
        loop {
            let fields = if legacy {
                chain::legacy_fields(&hops, truncated, exhausted)
            } else {
                chain::a2a_fields(&hops, truncated, exhausted)
            };
            let size: usize = fields
                .iter()
                .map(|(key, value)| key.len() + encoded_len(value, legacy))
                .sum();
            if size <= budget || hops.len() <= 2 {
                for (key, value) in &fields {
                    sink.field(key, value);
                }
                return;
            }
            // Too big: drop the hop just above the root cause.
            hops.remove(hops.len() - 2);
            truncated += 1;
        }
    }

    /// The reason of a local failure in a chain of hops.
    pub(crate) fn local_reason(&self) -> &'static str {
        match self {
            ClientError::Connect(_) | ClientError::Timeout(Timeout::Connect) => "UNREACHABLE",
            ClientError::Transport(_) => "CONNECTION_LOST",
            ClientError::Timeout(_) => "TIMEOUT",
            ClientError::CircuitOpen { .. } => "CIRCUIT_OPEN",
            ClientError::BulkheadFull => "BULKHEAD_FULL",
            ClientError::Malformed { .. } => "INVALID_AGENT_RESPONSE",
            ClientError::ReplyTooLarge { .. } => "REPLY_TOO_LARGE",
            ClientError::InvalidCall { .. } => "INVALID_CALL",
            ClientError::Status(_) => self.local_row().reason,
            ClientError::Remote { .. } | ClientError::Unrecognized(_) => "DOWNSTREAM_FAILED",
        }
    }
}

/// The bytes the hop fields of a passed-on failure may take: what is left of
/// [`chain::MAX_ERROR_BYTES`] after the rest of the error object (code, message, ErrorInfo
/// and RetryInfo framing, a domain of up to 200 bytes).
pub(crate) const CHAIN_BYTES: usize = chain::MAX_ERROR_BYTES - 640;

/// The length of `value` as written: JSON text, quoted once more as a metadata string in the
/// A2A profile.
fn encoded_len(value: &serde_json::Value, legacy: bool) -> usize {
    let text = serde_json::to_string(value).unwrap_or_default();
    if legacy || value.is_string() {
        return text.len() + 4;
    }
    serde_json::to_string(&text).map_or(0, |quoted| quoted.len() + 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::object::WireProfile;
    use reqwest::header::HeaderValue;

    fn status(code: u16, retry_after: Option<&'static str>) -> ClientError {
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

    #[test]
    fn classification_of_http_statuses() {
        // Read through the code table: a bare status is what `code_for_http` says it is.
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(status(code, None).retry_advice().is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 413] {
            assert!(!status(code, None).retry_advice().is_retryable(), "{code}");
        }
        assert_eq!(status(404, None).category(), Category::NotFound);
        assert_eq!(status(504, None).category(), Category::Timeout);
        assert!(!status(429, None).may_have_run());
        assert!(status(502, None).may_have_run());
        assert_eq!(status(401, None).category(), Category::Auth);
    }

    #[test]
    fn client_mistakes_are_never_retried_even_with_a_delay() {
        for code in CLIENT_MISTAKES {
            let object: ErrorObject = serde_json::from_value(serde_json::json!({
                "code": code, "message": "m", "data": {"retryAfter": 3}}))
            .unwrap();
            let err = ClientError::<RemoteError>::from_object(object, None);
            assert!(!err.retry_advice().is_retryable(), "{code}");
        }
    }

    #[test]
    fn local_failures_pass_on_without_their_text() {
        let err: ClientError = ClientError::Connect("db password=hunter2".into());
        let wire = serde_json::to_string(&err.to_error_object()).unwrap();
        assert!(wire.contains("DOWNSTREAM_FAILED"), "{wire}");
        assert!(!wire.contains("hunter2"), "{wire}");
        let timeout: ClientError = ClientError::Timeout(Timeout::Attempt);
        assert_eq!(timeout.code(), code::DEADLINE_EXCEEDED);
        let limited = status(429, Some("4"));
        assert_eq!(
            limited.retry_advice(),
            RetryHint::After(Duration::from_secs(4))
        );
        assert_eq!(limited.code(), code::RATE_LIMITED);
        // Passed on, it has been retried here already: not again above.
        assert_eq!(A2aError::retry_hint(&limited), RetryHint::Never);
        let object = limited.to_error_object();
        assert_eq!(
            object.metadata_value("retriesExhausted"),
            Some(&"true".into())
        );
        assert_eq!(object.retryable(), Some(false));
    }

    /// A received error of agent `b` that names `c` below it.
    fn from_b() -> ClientError {
        let below = crate::client::Downstream::new(
            "c",
            ClientError::<RemoteError>::from_object(
                RemoteError::new(code::AGENT_UNAVAILABLE, "c is down: /srv/secret")
                    .with_domain("c.example")
                    .with_metadata("internal", "x")
                    .to_error_object(),
                None,
            ),
        );
        ClientError::from_object(below.to_error_object(), None)
    }

    #[test]
    fn a_received_error_is_translated_with_its_chain() {
        let err = crate::client::Downstream::new("b", from_b());
        let object = err.to_error_object();
        assert_eq!(object.code, code::DOWNSTREAM_FAILED);
        assert_eq!(object.message, "Downstream agent failed");
        let text = serde_json::to_string(&object).unwrap();
        assert!(
            !text.contains("secret") && !text.contains("internal"),
            "{text}"
        );
        let received = RemoteError::from_object(object);
        let hops: Vec<Hop> = received.chain().collect();
        assert_eq!(
            hops,
            [
                Hop::new(
                    Some("b"),
                    code::DOWNSTREAM_FAILED,
                    "DOWNSTREAM_FAILED",
                    Some(PROJECT_DOMAIN)
                ),
                Hop::new(
                    Some("c"),
                    code::AGENT_UNAVAILABLE,
                    "AGENT_UNAVAILABLE",
                    Some("c.example")
                ),
            ]
        );
        assert_eq!(received.metadata()["downstreamAgent"], "b");
        assert_eq!(received.metadata()["retriesExhausted"], "true");
        // The category is the root cause's; nobody above retries it.
        assert_eq!(err.category(), Category::Transient);
        assert_eq!(received.retryable(), Some(false));
        // The legacy profile nests the same chain.
        let legacy = err.to_error_object_with(WireProfile::Legacy);
        let data = legacy.data.as_ref().unwrap();
        assert_eq!(data["downstreamAgent"], "b");
        assert_eq!(data["downstreamError"]["data"]["downstreamAgent"], "c");
        assert_eq!(RemoteError::from_object(legacy).chain().count(), 2);
    }

    #[test]
    fn a_hostile_downstream_cannot_grow_our_error() {
        // 1 MiB of message, 200 hops of 1 KiB names.
        let long = "x".repeat(1024);
        let hops: Vec<serde_json::Value> = (0..200)
            .map(|i| serde_json::json!({"agent": format!("{i}{long}"), "code": -32057, "reason": long, "domain": long}))
            .collect();
        let object: ErrorObject = serde_json::from_value(serde_json::json!({
            "code": -32057, "message": "m".repeat(1 << 20),
            "data": [{"@type": crate::ERROR_INFO_TYPE, "reason": long, "domain": long,
                "metadata": {"downstreamChain": serde_json::to_string(&hops).unwrap(), "big": long}}]
        }))
        .unwrap();
        let err = crate::client::Downstream::new(
            long.as_str(),
            ClientError::<RemoteError>::from_object(object, None),
        );
        for profile in [WireProfile::A2a, WireProfile::Legacy] {
            let mut out = Vec::new();
            err.write_error_object(profile, &mut out);
            assert!(
                out.len() <= chain::MAX_ERROR_BYTES,
                "{profile:?}: {}",
                out.len()
            );
            let back: ErrorObject = serde_json::from_slice(&out).unwrap();
            let hops: Vec<Hop> = RemoteError::from_object(back.clone()).chain().collect();
            assert!((2..=chain::MAX_HOPS).contains(&hops.len()), "{profile:?}");
            // The root cause survives the cut, and the cut is marked.
            assert!(
                hops.last()
                    .unwrap()
                    .agent
                    .as_ref()
                    .unwrap()
                    .starts_with("199")
            );
            assert!(
                back.metadata_value("chainTruncated").is_some(),
                "{profile:?}"
            );
        }
    }

    #[test]
    fn an_open_circuit_passes_on_its_delay() {
        let err: ClientError = ClientError::CircuitOpen {
            retry_after: Duration::from_secs(3),
        };
        let object = crate::client::Downstream::new("b", err).to_error_object();
        assert_eq!(object.code, code::AGENT_UNAVAILABLE);
        assert_eq!(object.retry_delay(), Some(Duration::from_secs(3)));
        assert_eq!(
            object.metadata_value("downstreamReason"),
            Some(&"CIRCUIT_OPEN".into())
        );
        assert!(object.metadata_value("retriesExhausted").is_none());
    }
}
