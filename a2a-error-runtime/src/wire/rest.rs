//! The REST binding's error response as an HTTP response (feature `into-response`): the HTTP
//! status from the code table, a `google.rpc.Status` body with ErrorInfo (and RetryInfo),
//! `Retry-After` when a delay is known, content type `application/a2a+json`. On `axum-core`
//! and `http` alone, so that a derived error's axum `IntoResponse` (a default feature) costs
//! no server: the endpoint (`axum`) builds on this.

use std::borrow::Cow;

use axum_core::body::Body;
use axum_core::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::wire::code::StatusMapping;
use crate::wire::error as encode;
use crate::wire::error::A2aError;
use crate::wire::standard::StandardError;

/// The REST error response for `err` (A2A v1.0.1 status mapping).
pub fn error_response<E: A2aError + ?Sized>(err: &E) -> Response {
    error_response_with(err, StatusMapping::V1_0_1)
}

/// The REST error response for `err` under the given status mapping.
pub fn error_response_with<E: A2aError + ?Sized>(err: &E, mapping: StatusMapping) -> Response {
    let status = mapping.http_status(err.code(), err.http_status());
    status_response(err, status, mapping)
}

/// The Status response for `err` sent with HTTP `status`.
pub(crate) fn status_response<E: A2aError + ?Sized>(
    err: &E,
    status: u16,
    mapping: StatusMapping,
) -> Response {
    let mut body = Vec::with_capacity(256);
    encode::write_rest_status(err, status, mapping, &mut body);
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::wire::headers::A2A_JSON),
    );
    if let Some(delay) = err.retry_hint().delay() {
        // Retry-After takes whole seconds: round up, so the client never comes back early.
        let seconds = crate::wire::headers::whole_seconds_up(delay);
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        if err.code() == crate::wire::code::RATE_LIMITED {
            rate_limit_fields(err, seconds, headers);
        }
    }
    // For the request's span, which only sees the response (the bridge's REST routes).
    response
        .extensions_mut()
        .insert(FailedWith::new(err.code(), err.reason()));
    response
}

/// The IETF `RateLimit` field of a refusal for a rate limit (draft-ietf-httpapi-ratelimit-
/// headers): nothing left of the policy (`r=0`) for `seconds` (`t`), and `RateLimit-Policy`
/// when the error names its policy (`rateLimitPolicy`, a caller's budget): `"tokens";q=…;w=…`.
/// The policy is ours, but read through what an error carries: only a short item of a name
/// and parameters is sent.
fn rate_limit_fields<E: A2aError + ?Sized>(err: &E, seconds: u64, headers: &mut header::HeaderMap) {
    const RATELIMIT: header::HeaderName = header::HeaderName::from_static("ratelimit");
    const POLICY: header::HeaderName = header::HeaderName::from_static("ratelimit-policy");
    let policy = err
        .metadata()
        .remove(crate::wire::headers::RATE_LIMIT_POLICY_KEY)
        .and_then(|value| value.as_str().map(str::to_owned))
        .filter(|policy| {
            policy.len() <= 128
                && policy.starts_with('"')
                && policy
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"\";=_-.".contains(&byte))
        });
    let name = policy
        .as_deref()
        .and_then(|policy| policy.split(';').next())
        .unwrap_or("\"default\"");
    if let Ok(value) = HeaderValue::from_str(&format!("{name};r=0;t={seconds}")) {
        headers.insert(RATELIMIT, value);
    }
    if let Some(value) = policy.and_then(|policy| HeaderValue::from_str(&policy).ok()) {
        headers.insert(POLICY, value);
    }
}

/// `StandardError` is a floor-0 type of this crate, so its response is written here rather
/// than derived where it is defined (the derive would name this crate's `__private`).
impl IntoResponse for StandardError {
    fn into_response(self) -> Response {
        error_response(&self)
    }
}

/// The A2A code and reason of an error response, carried in its extensions to the layer that
/// ends the request's span (which labels the reason, within its bound on labels). A reason
/// longer than any a table or a derive writes is carried as `OTHER`.
#[derive(Clone, Debug)]
#[doc(hidden)]
pub struct FailedWith(i32, Cow<'static, str>);

impl FailedWith {
    const MAX_REASON: usize = 128;

    /// A response failed with `code` and `reason`.
    pub(crate) fn new(code: i32, reason: &str) -> Self {
        let reason = match a2a_error_codes::by_reason(reason) {
            Some(row) => Cow::Borrowed(row.reason),
            None if reason.len() <= Self::MAX_REASON => Cow::Owned(reason.to_owned()),
            None => Cow::Borrowed("OTHER"),
        };
        FailedWith(code, reason)
    }

    /// The code and reason.
    #[doc(hidden)]
    pub fn parts(&self) -> (i32, &str) {
        (self.0, &self.1)
    }
}
