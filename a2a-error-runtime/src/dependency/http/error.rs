//! `HttpFailure` and its classification, as the official model-provider SDKs classify HTTP.

use std::fmt;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

use crate::dependency::failure::Failure;
use crate::resilience::{Classify, Outcome};
use crate::wire::error::RetryHint;

/// What a call to an HTTP dependency ends in: its own [`HttpFailure`], or a layer's (a
/// timeout and its phase, an open circuit, a full bulkhead).
pub type HttpError = Failure<HttpFailure>;

/// How one attempt on an HTTP dependency failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HttpFailure {
    /// No connection: the request was never sent.
    Connect {
        /// What the connection failed with, for logs.
        detail: String,
    },
    /// The connection broke during the exchange: the service may have run the request.
    Transport {
        /// What the connection failed with, for logs.
        detail: String,
    },
    /// The service answered with a status that is not 2xx.
    Status(StatusFailure),
    /// The reply was larger than the dependency's reply limit; read no further.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// One event of a streamed reply, before its first content event, was larger than the
    /// dependency's event limit: retried (a model's next answer is another answer).
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The reply could not be read as what was expected.
    Malformed {
        /// What was wrong, for logs.
        detail: String,
    },
    /// The request could not be made (a bad path, a body that does not serialize).
    Invalid {
        /// What was wrong, for logs.
        detail: String,
    },
    /// A streamed reply carried an error before its first content event (`{"error": …}`,
    /// `event: error`): retried when its type is one a retry may help.
    InBand(InBand),
    /// Not sent: the service's stated quota has no room for the call before it resets, and
    /// the reset comes after the call's deadline. A fallback goes on to its next step at
    /// once; passed on, it is `RATE_LIMITED` with the time to the reset.
    Paced {
        /// The time until the quota resets.
        reset_in: Duration,
    },
    /// Not sent: the caller of the request being served used its budget of tokens
    /// ([`CallerBudget`](crate::dependency::CallerBudget)). A fallback goes on to its next
    /// step (a model outside the budget serves the caller); passed on, it is `RATE_LIMITED`
    /// with the time until the caller's window frees enough, and the budget's policy.
    OverBudget {
        /// The time until the caller's window frees enough (at most the window).
        retry_in: Duration,
        /// The budget as an IETF `RateLimit-Policy` item: `"tokens";q=N;w=S`.
        policy: std::sync::Arc<str>,
    },
}

/// A reply whose status is not 2xx, with what it said about retrying.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusFailure {
    /// The status.
    pub status: u16,
    /// The delay the service asked for: `retry-after-ms` when sent (it wins), else
    /// `Retry-After` in seconds or as an HTTP date, read when the reply arrived (at most a day).
    pub retry_after: Option<Duration>,
    /// The `x-should-retry` header: `true` or `false` overrides the status either way.
    pub should_retry: Option<bool>,
    /// The first bytes of the body (at most [`EXCERPT_BYTES`], control characters escaped),
    /// for logs only: never passed on.
    pub excerpt: String,
    /// Whether the reply says the caller's quota with the service is spent (a billing or
    /// spend budget, a daily limit), read from its status and the start of its body (see
    /// [`StatusFailure::read`]): never retried, not counted against the service's health.
    pub quota: bool,
}

/// How much of an error reply's body is kept for logs.
pub const EXCERPT_BYTES: usize = 256;

/// How much of an error reply's body is read for what it says (a spent quota): the rest is
/// not read.
pub const SCANNED_BYTES: usize = 4096;

/// The longest delay read from a reply: more is read as this much (a retry policy waits at
/// most its own `max_server_delay`).
const MAX_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

impl StatusFailure {
    /// Reads a non-2xx reply's head (its status, `retry-after-ms`, `Retry-After` in seconds
    /// or as an HTTP date, `x-should-retry`) and the start of its body, as this crate reads
    /// every HTTP dependency's: for a transport of your own (a provider's SDK, a websocket),
    /// so that its failures are classified as this crate's are
    /// (`HttpFailure::Status(StatusFailure::read(…))`).
    ///
    /// A spent quota is read from the first [`SCANNED_BYTES`] of the body, as the providers
    /// and the gateways in front of them write it: a 429 naming `insufficient_quota`
    /// (OpenAI's `error.code` or `error.type`), any 402 (Payment Required: Bifrost), a 412 or
    /// 422 naming `budget_exceeded` (Portkey, LiteLLM), a 403 naming a quota (Azure API
    /// Management), and a 429 whose `google.rpc.QuotaFailure` names a per-day limit (Gemini).
    pub fn read(status: u16, headers: &HeaderMap, body: &[u8], now: SystemTime) -> Self {
        let retry_after_ms = headers
            .get("retry-after-ms")
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64((ms / 1000.0).min(MAX_DELAY.as_secs_f64())));
        let retry_after = retry_after_ms
            .or_else(|| {
                crate::http::retry_after::parse_retry_after(
                    headers.get(RETRY_AFTER)?.as_bytes(),
                    now,
                )
            })
            .map(|delay| delay.min(MAX_DELAY));
        let should_retry = match headers.get("x-should-retry").map(|value| value.as_bytes()) {
            Some(b"true") => Some(true),
            Some(b"false") => Some(false),
            _ => None,
        };
        let cut = &body[..body.len().min(EXCERPT_BYTES)];
        let excerpt = String::from_utf8_lossy(cut).escape_debug().to_string();
        StatusFailure {
            status,
            retry_after,
            should_retry,
            excerpt,
            quota: spent(status, &body[..body.len().min(SCANNED_BYTES)]),
        }
    }

    /// Whether another try may help: `x-should-retry` when sent, else 408, 409, 429 and 5xx
    /// (529 included), as the official OpenAI and Anthropic SDKs decide; never for a spent
    /// quota.
    pub fn is_retryable(&self) -> bool {
        !self.quota
            && self
                .should_retry
                .unwrap_or(matches!(self.status, 408 | 409 | 429) || self.status >= 500)
    }
}

/// Whether a reply of `status` whose body starts with `body` says a quota is spent.
fn spent(status: u16, body: &[u8]) -> bool {
    let names = |word: &[u8]| {
        body.windows(word.len())
            .any(|window| window.eq_ignore_ascii_case(word))
    };
    match status {
        402 => true,
        412 | 422 => names(b"budget_exceeded"),
        403 => names(b"quota"),
        429 => {
            names(b"insufficient_quota") || (names(b"google.rpc.QuotaFailure") && names(b"PerDay"))
        }
        _ => false,
    }
}

/// An error a service sent inside a stream (`{"error": {...}}`, `event: error`), by its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InBand {
    /// The error's type as the service named it (`overloaded_error`, `rate_limit_error`, …),
    /// cut to 64 characters of letters, digits, `_`, `-` and `.`; `unknown` when it named none.
    pub kind: String,
    /// Whether another try may help: overloaded, rate limited, a server or API error, a
    /// timeout; not a refusal (an invalid request, authentication, permission, not found).
    pub retryable: bool,
}

impl InBand {
    /// An in-band error of type `kind`, classified as the providers' SDKs and agent
    /// frameworks classify it: `overloaded_error`, `rate_limit_error`, `api_error`,
    /// `server_error` and `timeout` are retryable; `invalid_request_error`,
    /// `authentication_error`, `permission_error` and `not_found_error` are refusals; a type
    /// nobody lists is retryable (the service failed, the request did not).
    pub fn of(kind: &str) -> InBand {
        let kind: String = kind
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            .take(64)
            .collect();
        let kind = if kind.is_empty() {
            "unknown".to_owned()
        } else {
            kind
        };
        let retryable = !matches!(
            kind.as_str(),
            "invalid_request_error"
                | "authentication_error"
                | "permission_error"
                | "not_found_error"
                | "invalid_request"
                | "request_too_large"
        );
        InBand { kind, retryable }
    }

    /// What it is called in metrics and logs (`error.type`).
    pub(super) fn reason(&self) -> &'static str {
        match self.kind.as_str() {
            "overloaded_error" => "OVERLOADED",
            "rate_limit_error" | "rate_limit_exceeded" => "RATE_LIMITED",
            "api_error" | "server_error" => "SERVER_ERROR",
            "timeout" | "timeout_error" => "HTTP_TIMEOUT",
            "authentication_error" | "permission_error" => "AUTH_FAILED",
            "not_found_error" => "NOT_FOUND",
            "invalid_request_error" | "invalid_request" | "request_too_large" => "INVALID_REQUEST",
            _ => "IN_BAND_ERROR",
        }
    }
}

impl Classify for HttpFailure {
    fn retry_advice_at(&self, _now: SystemTime) -> RetryHint {
        match self {
            HttpFailure::Connect { .. } | HttpFailure::Transport { .. } => RetryHint::Backoff,
            HttpFailure::Status(status) if status.is_retryable() => match status.retry_after {
                Some(delay) => RetryHint::After(delay),
                None => RetryHint::Backoff,
            },
            HttpFailure::InBand(error) if error.retryable => RetryHint::Backoff,
            HttpFailure::EventTooLarge { .. } => RetryHint::Backoff,
            HttpFailure::Paced { reset_in } => RetryHint::After(*reset_in),
            HttpFailure::OverBudget { retry_in, .. } => RetryHint::After(*retry_in),
            // The same service would send the same oversized or unreadable reply again.
            HttpFailure::InBand(_)
            | HttpFailure::Status(_)
            | HttpFailure::TooLarge { .. }
            | HttpFailure::Malformed { .. }
            | HttpFailure::Invalid { .. } => RetryHint::Never,
        }
    }

    fn may_have_run(&self) -> bool {
        match self {
            HttpFailure::Connect { .. }
            | HttpFailure::Invalid { .. }
            | HttpFailure::Paced { .. }
            | HttpFailure::OverBudget { .. } => false,
            // 408: the request never fully arrived; 429, 503 and 529: refused for load.
            HttpFailure::Status(status) => {
                !status.quota && !matches!(status.status, 408 | 429 | 503 | 529)
            }
            _ => true,
        }
    }

    fn health(&self) -> Outcome {
        match self {
            // Up, and the caller's quota spent: nothing about its health.
            HttpFailure::Status(status) if status.quota => Outcome::Ignored,
            HttpFailure::Status(status) => match status.status {
                429 => Outcome::RateLimited,
                408 | 500.. => Outcome::Failure,
                // The service answered: it is up, and said no.
                _ => Outcome::Success,
            },
            HttpFailure::Invalid { .. } => Outcome::Ignored,
            // Refused here, for the service's load: a rate limit of our own.
            HttpFailure::Paced { .. } | HttpFailure::OverBudget { .. } => Outcome::RateLimited,
            HttpFailure::InBand(error) if error.kind == "rate_limit_error" => Outcome::RateLimited,
            HttpFailure::InBand(error) if !error.retryable => Outcome::Success,
            _ => Outcome::Failure,
        }
    }

    fn is_quota_exhausted(&self) -> bool {
        matches!(self, HttpFailure::Status(status) if status.quota)
    }

    /// Paced by the stated quota, or over the caller's budget: nothing was sent.
    fn is_local_refusal(&self) -> bool {
        matches!(
            self,
            HttpFailure::Paced { .. } | HttpFailure::OverBudget { .. }
        )
    }

    fn rate_limit_policy(&self) -> Option<&str> {
        match self {
            HttpFailure::OverBudget { policy, .. } => Some(policy),
            _ => None,
        }
    }

    /// The delay the service asked for; for a spent quota (never retried) the time until it
    /// is renewed, when the reply said.
    fn delay_at(&self, now: SystemTime) -> Option<Duration> {
        match self {
            HttpFailure::Status(status) if status.quota => status.retry_after,
            _ => self.retry_advice_at(now).delay(),
        }
    }

    fn failure_reason(&self) -> &str {
        match self {
            HttpFailure::Connect { .. } => "UNREACHABLE",
            HttpFailure::Transport { .. } => "CONNECTION_LOST",
            HttpFailure::TooLarge { .. } => "REPLY_TOO_LARGE",
            HttpFailure::EventTooLarge { .. } => "EVENT_TOO_LARGE",
            HttpFailure::Malformed { .. } => "INVALID_RESPONSE",
            HttpFailure::Invalid { .. } => "INVALID_CALL",
            HttpFailure::Paced { .. } => "QUOTA_WAIT",
            HttpFailure::OverBudget { .. } => "CALLER_BUDGET",
            HttpFailure::InBand(error) => error.reason(),
            HttpFailure::Status(status) if status.quota => "QUOTA_EXHAUSTED",
            HttpFailure::Status(status) => match status.status {
                429 => "RATE_LIMITED",
                408 => "HTTP_TIMEOUT",
                529 => "OVERLOADED",
                500.. => "SERVER_ERROR",
                401 | 403 => "AUTH_FAILED",
                404 => "NOT_FOUND",
                409 => "CONFLICT",
                400 | 422 => "INVALID_REQUEST",
                _ => "HTTP_STATUS",
            },
        }
    }
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpFailure::Connect { detail } => write!(f, "no connection: {detail}"),
            HttpFailure::Transport { detail } => write!(f, "connection lost: {detail}"),
            HttpFailure::Status(status) => {
                write!(f, "HTTP {}", status.status)?;
                if let Some(delay) = status.retry_after {
                    write!(f, " (retry after {delay:?})")?;
                }
                write!(f, ": {}", status.excerpt)
            }
            HttpFailure::TooLarge { limit } => write!(f, "reply larger than {limit} bytes"),
            HttpFailure::EventTooLarge { limit } => {
                write!(f, "a streamed event larger than {limit} bytes")
            }
            HttpFailure::Malformed { detail } => write!(f, "malformed reply: {detail}"),
            HttpFailure::Invalid { detail } => write!(f, "invalid request: {detail}"),
            HttpFailure::InBand(error) => write!(f, "in-band error {}", error.kind),
            HttpFailure::Paced { reset_in } => {
                write!(
                    f,
                    "not sent: the stated quota resets in {reset_in:?}, after the deadline"
                )
            }
            HttpFailure::OverBudget { retry_in, .. } => {
                write!(
                    f,
                    "not sent: the caller used its budget of tokens (frees in {retry_in:?})"
                )
            }
        }
    }
}

impl std::error::Error for HttpFailure {}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, headers: &[(&str, &str)]) -> HttpFailure {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        HttpFailure::Status(StatusFailure::read(code, &map, b"", SystemTime::UNIX_EPOCH))
    }

    fn replied(code: u16, body: &str, headers: &HeaderMap) -> HttpFailure {
        HttpFailure::Status(StatusFailure::read(
            code,
            headers,
            body.as_bytes(),
            SystemTime::UNIX_EPOCH,
        ))
    }

    #[test]
    fn a_spent_quota_is_read_as_the_providers_and_gateways_write_it() {
        let none = HeaderMap::new();
        let openai = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let gemini_day = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}"#;
        let gemini_minute = r#"{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"20s"}]}}"#;
        let litellm =
            r#"{"error":{"message":"Budget has been exceeded!","type":"budget_exceeded"}}"#;
        let apim = r#"{"statusCode":403,"message":"Out of call volume quota. Quota will be replenished in 00:00:05."}"#;
        for (code, body) in [
            (429, openai),
            (429, gemini_day),
            (402, ""),
            (412, litellm),
            (422, litellm),
            (403, apim),
        ] {
            let failure = replied(code, body, &none);
            assert!(failure.is_quota_exhausted(), "{code} {body}");
            assert!(
                !failure
                    .retry_advice_at(SystemTime::UNIX_EPOCH)
                    .is_retryable()
            );
            assert_eq!(
                failure.health(),
                Outcome::Ignored,
                "its breaker stays as it is"
            );
            assert!(!failure.is_refusal(), "a fallback goes on");
            assert!(!failure.may_have_run());
            assert_eq!(failure.failure_reason(), "QUOTA_EXHAUSTED");
        }
        for (code, body) in [
            (429, gemini_minute),
            (429, r#"{"error":{"type":"rate_limit_error"}}"#),
            (422, r#"{"error":{"type":"invalid_request_error"}}"#),
            (403, r#"{"error":"forbidden"}"#),
            (500, openai),
        ] {
            assert!(
                !replied(code, body, &none).is_quota_exhausted(),
                "{code} {body}"
            );
        }
        // The marker past the bytes scanned is not read.
        let far = format!("{}insufficient_quota", " ".repeat(SCANNED_BYTES));
        assert!(!replied(429, &far, &none).is_quota_exhausted());
        // When the renewal is known, it is the delay passed on (never retried here).
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "3600".parse().unwrap());
        let dated = replied(402, "", &headers);
        assert_eq!(
            dated.delay_at(SystemTime::UNIX_EPOCH),
            Some(Duration::from_secs(3600))
        );
        assert!(!dated.retry_advice_at(SystemTime::UNIX_EPOCH).is_retryable());
    }

    #[test]
    fn statuses_are_classified_as_the_provider_sdks_do() {
        let now = SystemTime::UNIX_EPOCH;
        for code in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(
                status(code, &[]).retry_advice_at(now).is_retryable(),
                "{code}"
            );
        }
        for code in [400, 401, 403, 404, 422, 413] {
            let failure = status(code, &[]);
            assert!(!failure.retry_advice_at(now).is_retryable(), "{code}");
            assert_eq!(failure.health(), Outcome::Success, "{code}");
        }
        assert_eq!(status(429, &[]).health(), Outcome::RateLimited);
        assert_eq!(status(529, &[]).health(), Outcome::Failure);
        assert!(!status(429, &[]).may_have_run());
        assert!(status(500, &[]).may_have_run());
    }

    #[test]
    fn x_should_retry_overrides_the_status_either_way() {
        let now = SystemTime::UNIX_EPOCH;
        let yes = status(400, &[("x-should-retry", "true")]);
        assert!(yes.retry_advice_at(now).is_retryable());
        let no = status(503, &[("x-should-retry", "false")]);
        assert!(!no.retry_advice_at(now).is_retryable());
        // Anything but the two words is no statement.
        let odd = status(503, &[("x-should-retry", "maybe")]);
        assert!(odd.retry_advice_at(now).is_retryable());
    }

    #[test]
    fn both_delay_forms_are_read_and_retry_after_ms_wins() {
        let now = SystemTime::UNIX_EPOCH;
        let seconds = status(429, &[("retry-after", "3")]);
        assert_eq!(seconds.delay_at(now), Some(Duration::from_secs(3)));
        let date = status(503, &[("retry-after", "Thu, 01 Jan 1970 00:00:07 GMT")]);
        assert_eq!(date.delay_at(now), Some(Duration::from_secs(7)));
        let both = status(429, &[("retry-after", "3"), ("retry-after-ms", "250")]);
        assert_eq!(both.delay_at(now), Some(Duration::from_millis(250)));
        for hostile in ["-1", "NaN", "inf", "1e400", "x"] {
            let odd = status(429, &[("retry-after-ms", hostile)]);
            assert!(
                odd.delay_at(now).is_none_or(|d| d <= MAX_DELAY),
                "{hostile}"
            );
        }
        let huge = status(429, &[("retry-after", "99999999999")]);
        assert_eq!(huge.delay_at(now), Some(MAX_DELAY));
    }

    #[test]
    fn the_excerpt_is_bounded_and_escaped() {
        let body = "\u{1b}[31mred\n".repeat(1000);
        let failure =
            StatusFailure::read(500, &HeaderMap::new(), body.as_bytes(), SystemTime::now());
        assert!(failure.excerpt.len() <= EXCERPT_BYTES * 10);
        assert!(!failure.excerpt.contains('\n') && !failure.excerpt.contains('\u{1b}'));
    }
}
