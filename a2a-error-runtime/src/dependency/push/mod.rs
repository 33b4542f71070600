//! `PushSender`: push notifications to webhooks (A2A's push receivers), under the same stack as
//! every other callee, with what the webhook world expects of a sender.
//!
//! - Standard Webhooks' headers: `webhook-id` (the same on every attempt of one notification),
//!   `webhook-timestamp` (each attempt's send time) and, with a signing secret,
//!   `webhook-signature` (`v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`).
//! - Retries that respect the receiver: 408, 425, 429, 5xx and failures to connect are retried
//!   with exponential backoff (the first within 1.2 s, each later one at most twice the one
//!   before plus 20 % jitter, at most 60 s); `Retry-After` (seconds or a date) on any of them
//!   is waited, capped at 60 s; other statuses end the notification (410: the receiver is gone).
//! - A breaker and a bulkhead per receiver origin (scheme, host, port), so that a dead or
//!   hanging receiver costs nothing for the others; an open circuit is waited out, up to the
//!   notification's deadline, after which it is a dead letter.
//! - Never inside: see [`guard`]; a URL inside the network is refused at set time
//!   ([`guard::check_url`]) and never connected to (a resolver that drops those addresses,
//!   no redirects, no proxy), unless private receivers are allowed (development, tests).
//!
//! The outbox that keeps notifications until they end (in memory, or in Redis for a fleet) is
//! the bridge's: see `sdk::PushDelivery` (feature `sdk`).

mod call;
pub mod guard;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use call::{PushCall, PushService};
pub use call::{WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP, sign};
pub use guard::Refused;

use super::http::HttpService;
use crate::dependency::failure::Failure;
use crate::dependency::http::{HttpError, HttpFailure, HttpReply};
use crate::http::BuildError;
use crate::resilience::breaker::{BreakDuration, BreakerConfig, CircuitBreaker};
use crate::resilience::{
    Bulkhead, CalleeSettings, HedgeConfig, HedgeDelay, Jitter, RetryPolicy, Stack, StackBuilder,
    Timeout,
};

/// The header a receiver's token travels in, as the official Rust and Go SDKs send it.
pub const NOTIFICATION_TOKEN: HeaderName = HeaderName::from_static("a2a-notification-token");
/// The same token as the official Python and JS SDKs send it. A2A names no header, so every
/// notification carries both: a receiver written to either convention reads its token.
pub const NOTIFICATION_TOKEN_X: HeaderName = HeaderName::from_static("x-a2a-notification-token");

/// The most receiver origins whose breaker and bulkhead are kept at once: past it, the one
/// used longest ago is forgotten (its circuit starts closed when it comes back).
pub const MAX_ORIGINS: usize = 1024;

/// Where one notification goes: the receiver's URL and what it is told to expect.
#[derive(Clone, Debug)]
pub struct Receiver {
    url: String,
    /// `url` parsed, once: a URL's parse costs about as much as the rest of a delivery.
    parsed: reqwest::Url,
    /// Its origin (scheme, host, port), the key of its breaker and bulkhead.
    origin: String,
    headers: HeaderMap,
}

impl Receiver {
    /// The receiver at `url`, with its `token` (sent as both `A2A-Notification-Token` and
    /// `X-A2A-Notification-Token`, the two spellings of the official SDKs) and its
    /// authentication (`Bearer` or `Basic` credentials, sent as `Authorization`; other
    /// schemes are not sent). A token or credential with CR or LF is refused.
    pub fn new(
        url: impl Into<String>,
        token: Option<&str>,
        authentication: Option<(&str, &str)>,
    ) -> Result<Self, Refused> {
        let url = url.into();
        let parsed = guard::parse(&url)?;
        let mut headers = HeaderMap::new();
        let header = |value: String| {
            guard::check_header(&value)?;
            HeaderValue::from_str(&value).map_err(|_| Refused::Header)
        };
        if let Some(token) = token {
            let value = header(token.to_owned())?;
            headers.insert(NOTIFICATION_TOKEN_X, value.clone());
            headers.insert(NOTIFICATION_TOKEN, value);
        }
        if let Some((scheme, credentials)) = authentication {
            let scheme = match scheme.to_ascii_lowercase().as_str() {
                "bearer" => Some("Bearer"),
                "basic" => Some("Basic"),
                _ => None,
            };
            if let Some(scheme) = scheme {
                headers.insert(AUTHORIZATION, header(format!("{scheme} {credentials}"))?);
            }
        }
        Ok(Receiver {
            url,
            origin: parsed.origin().ascii_serialization(),
            parsed,
            headers,
        })
    }

    /// The receiver's URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// How a notification ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The receiver accepted it (2xx).
    Delivered,
    /// The receiver refused it (a status other than 2xx, 408, 410, 425, 429 and 5xx), or its
    /// URL is refused (inside the network): not retried, not a dead letter.
    Rejected {
        /// The status, `0` when nothing was sent.
        status: u16,
    },
    /// The receiver answered 410 Gone: its config is to be removed.
    Gone,
    /// Not accepted by its deadline: a dead letter.
    Expired,
}

impl Delivery {
    /// The `outcome` label of `a2a_push_deliveries`: `delivered`, `rejected`, `gone`,
    /// `dead_letter`.
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Delivered => "delivered",
            Delivery::Rejected { .. } => "rejected",
            Delivery::Gone => "gone",
            Delivery::Expired => "dead_letter",
        }
    }
}

type Sending = BoxCloneSyncService<PushCall, HttpReply, HttpError>;

/// A sender of push notifications (see the [module](self)). Clones share the breakers and
/// bulkheads of the receivers.
#[derive(Clone)]
pub struct PushSender {
    inner: Arc<Inner>,
}

struct Inner {
    stack: Stack<HttpError>,
    breakers: bool,
    http: HttpService,
    secret: Option<Arc<[u8]>>,
    allow_inside: bool,
    origins: Mutex<Origins>,
}

#[derive(Default)]
struct Origins {
    by_origin: HashMap<String, (Sending, u64)>,
    uses: u64,
}

impl std::fmt::Debug for PushSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushSender")
            .field("stack", &self.inner.stack)
            .field("signed", &self.inner.secret.is_some())
            .field("allow_private", &self.inner.allow_inside)
            .finish_non_exhaustive()
    }
}

impl PushSender {
    /// A builder with the sender's defaults: no total timeout (each notification's deadline
    /// is its own), attempts of at most 10 s, connections within 10 s, the retry policy of
    /// [`PushSender::retry_policy`], a breaker (default configuration) and a bulkhead (32 in
    /// flight, 4,096 waiting) per receiver origin, replies read up to 64 KiB, no signature,
    /// private receivers refused.
    pub fn builder() -> PushSenderBuilder {
        let mut builder = StackBuilder::new(
            PushSettings {
                secret: None,
                allow_inside: false,
                connect_timeout: Duration::from_secs(10),
            },
            true,
        );
        builder.stack.total_timeout = None;
        builder.stack.attempt_timeout = Some(Duration::from_secs(10));
        builder.stack.retry = PushSender::retry_policy();
        builder.stack.bulkhead = Some(Bulkhead::new(32, 4096));
        builder
    }

    /// The retry policy of webhooks: attempts until the notification's deadline, from 1 s
    /// doubling to 60 s with up to 20 % added, the receiver's `Retry-After` waited (capped at
    /// 60 s); 408, 425, 429, 5xx, timeouts and failures to connect retried, nothing else; no
    /// retry budget (a notification waits its turn, it does not add load: one at a time per
    /// task and receiver).
    pub fn retry_policy() -> RetryPolicy<HttpError> {
        RetryPolicy::new()
            .max_attempts(u32::MAX)
            .base_delay(Duration::from_secs(1))
            .max_delay(Duration::from_secs(60))
            .jitter(Jitter::Added(20))
            .max_server_delay(Duration::from_secs(60))
            .cap_server_delay(true)
            .budget(Arc::new(Unlimited))
            .retry_if(retryable)
    }

    /// Whether private receivers (loopback, private, link-local) are allowed.
    pub fn allows_private(&self) -> bool {
        self.inner.allow_inside
    }

    /// Checks `url` as a receiver (see [`guard::check_url`]), private ones allowed when the
    /// sender allows them.
    pub async fn check(&self, url: &str) -> Result<(), Refused> {
        guard::check_url(url, self.inner.allow_inside)
            .await
            .map(|_| ())
    }

    /// Sends `body` (JSON) as notification `id` to `receiver` until it ends: accepted,
    /// refused, gone, or `deadline` reached (no attempt starts after it). An open circuit of
    /// the receiver's origin, or its full bulkhead, is waited out.
    pub async fn deliver(
        &self,
        receiver: &Receiver,
        id: &str,
        body: Bytes,
        deadline: Instant,
    ) -> Delivery {
        let url = &receiver.parsed;
        // A literal address is not resolved: checked here, as the resolver checks names.
        if !self.inner.allow_inside && guard::literal(url).is_some_and(guard::is_inside) {
            return Delivery::Rejected { status: 0 };
        }
        let Ok(id_value) = HeaderValue::from_str(id) else {
            return Delivery::Rejected { status: 0 };
        };
        let service = self.service(&receiver.origin);
        let mut http =
            crate::dependency::http::HttpCall::to_url(reqwest::Method::POST, url.clone())
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .header(WEBHOOK_ID, id_value)
                .body(body.clone())
                .with_deadline(deadline);
        for (name, value) in &receiver.headers {
            http = http.header(name.clone(), value.clone());
        }
        let call = PushCall {
            http,
            id: id.into(),
            body,
        };
        loop {
            if Instant::now() >= deadline {
                return Delivery::Expired;
            }
            let wait = match service.clone().oneshot(call.clone()).await {
                Ok(_) => return Delivery::Delivered,
                Err(error) => match ended(&error) {
                    Some(delivery) => return delivery,
                    None => waited(&error),
                },
            };
            // Retried (or refused by an open circuit) up to where the deadline allows: the
            // rest of the time is waited, so that no attempt starts after the deadline.
            let until = match wait {
                Some(wait) => (Instant::now() + wait).min(deadline),
                None => deadline,
            };
            tokio::time::sleep_until(until).await;
        }
    }

    /// The stack to `origin`, with its own breaker and bulkhead.
    fn service(&self, origin: &str) -> Sending {
        let mut origins = self.inner.origins.lock().unwrap_or_else(|e| e.into_inner());
        origins.uses += 1;
        let uses = origins.uses;
        if let Some((service, used)) = origins.by_origin.get_mut(origin) {
            *used = uses;
            return service.clone();
        }
        if origins.by_origin.len() >= MAX_ORIGINS
            && let Some(oldest) = origins
                .by_origin
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(origin, _)| origin.clone())
        {
            origins.by_origin.remove(&oldest);
        }
        let mut stack = self.inner.stack.clone();
        // One circuit per origin, all named `push` (a receiver's host is never a label).
        stack.breaker = self
            .inner
            .breakers
            .then(|| CircuitBreaker::new("push", breaker_config()));
        stack.bulkhead = stack.bulkhead.as_ref().map(Bulkhead::same_limits);
        let service = PushService {
            http: self.inner.http.clone(),
            secret: self.inner.secret.clone(),
        };
        let service = BoxCloneSyncService::new(stack.service(service));
        origins
            .by_origin
            .insert(origin.to_owned(), (service.clone(), uses));
        service
    }
}

/// A receiver's breaker: the default, but open at most 30 s (plus 10 %), so that an open
/// circuit never stretches a retry's delay past the 60 s of the backoff's cap: a retry waits
/// its backoff, and then at most what is left of the break.
fn breaker_config() -> BreakerConfig {
    BreakerConfig::default().break_duration(BreakDuration::Growing {
        base: Duration::from_secs(5),
        max: Duration::from_secs(30),
        jitter: 0.1,
    })
}

/// How a failed call ends the notification, or `None` when it is to be tried again.
fn ended(error: &HttpError) -> Option<Delivery> {
    match error {
        Failure::Failed(HttpFailure::Status(status)) => match status.status {
            410 => Some(Delivery::Gone),
            408 | 425 | 429 | 500..=599 => None,
            status => Some(Delivery::Rejected { status }),
        },
        // A 2xx reply too large to read was accepted all the same.
        Failure::Failed(HttpFailure::TooLarge { .. }) => Some(Delivery::Delivered),
        Failure::Failed(HttpFailure::Invalid { .. }) => Some(Delivery::Rejected { status: 0 }),
        _ => None,
    }
}

/// How long to wait before calling again after `error`: an open circuit's remaining time, a
/// second for a full bulkhead, else (the retries stopped short of the deadline) until the
/// deadline.
fn waited(error: &HttpError) -> Option<Duration> {
    match error {
        Failure::CircuitOpen { retry_after } => Some((*retry_after).max(Duration::from_millis(50))),
        Failure::BulkheadFull => Some(Duration::from_secs(1)),
        _ => None,
    }
}

/// Whether the stack retries `error` (see [`PushSender::retry_policy`]).
fn retryable(error: &HttpError) -> bool {
    match error {
        Failure::Failed(HttpFailure::Status(status)) => {
            matches!(status.status, 408 | 425 | 429 | 500..=599)
        }
        Failure::Failed(HttpFailure::Connect { .. } | HttpFailure::Transport { .. }) => true,
        Failure::Timeout(Timeout::Attempt | Timeout::Connect | Timeout::Idle) => true,
        _ => false,
    }
}

/// No retry budget: a notification retries one at a time per task and receiver.
struct Unlimited;

impl tower::retry::budget::Budget for Unlimited {
    fn deposit(&self) {}
    fn withdraw(&self) -> bool {
        true
    }
}

/// The HMAC key of a signing secret: a Standard Webhooks `whsec_<base64>` decoded, any other
/// secret as its bytes.
fn signing_key(secret: &[u8]) -> Result<Arc<[u8]>, ()> {
    use base64::Engine;
    match secret.strip_prefix(b"whsec_") {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .filter(|key| !key.is_empty())
            .map(Arc::from)
            .ok_or(()),
        None => Ok(Arc::from(secret)),
    }
}

/// Builds a [`PushSender`]. The layers' setters are [`StackBuilder`]'s, the same as every
/// other callee's; [`breakers`](StackBuilder::breakers) gives each origin a breaker of its
/// own all the same (a registry's are one per name), and
/// [`without_breaker`](StackBuilder::without_breaker) none.
pub type PushSenderBuilder = StackBuilder<PushSettings>;

/// What a [`PushSenderBuilder`] adds to the stack: the signing secret, whether private
/// receivers are allowed, the connect timeout.
pub struct PushSettings {
    /// The key, or `Err` for a `whsec_` secret whose tail is not base64 (refused at build).
    secret: Option<Result<Arc<[u8]>, ()>>,
    allow_inside: bool,
    connect_timeout: Duration,
}

impl std::fmt::Debug for PushSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushSettings")
            .field("signed", &self.secret.is_some())
            .field("allow_private", &self.allow_inside)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl CalleeSettings for PushSettings {
    type Error = HttpError;

    /// Notifications are never hedged: one at a time per task and receiver.
    fn hedge(&self, delay: HedgeDelay) -> HedgeConfig {
        HedgeConfig::new(delay).methods(std::iter::empty::<&'static str>())
    }
}

impl PushSenderBuilder {
    /// Signs every attempt with `secret`: Standard Webhooks' `webhook-signature`, `v1,` and
    /// the base64 of HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`.
    ///
    /// A secret written as Standard Webhooks writes one, `whsec_` and the key in base64, is
    /// decoded: the key is the decoded bytes, so receivers that verify with the Standard
    /// Webhooks libraries (`Webhook("whsec_…")`) accept the signatures. A `whsec_` secret
    /// whose tail is not base64 makes [`build`](Self::build) fail with
    /// [`BuildError::InvalidSecret`]. Any other secret is the key as its bytes.
    pub fn signing_secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.callee.secret = Some(signing_key(secret.as_ref()));
        self
    }

    /// Allows receivers on loopback, private and link-local addresses (development and
    /// tests; default: refused when set and never connected to).
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.callee.allow_inside = allow;
        self
    }

    /// The limit for setting up a connection to a receiver (default 10 s).
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.callee.connect_timeout = limit;
        self
    }

    /// Builds the sender.
    pub fn build(self) -> Result<PushSender, BuildError> {
        let breakers = !matches!(self.breaker, crate::resilience::BreakerSource::Off);
        let (stack, _, settings) = self.finish(&Arc::from("push"));
        let secret = settings
            .secret
            .transpose()
            .map_err(|()| BuildError::InvalidSecret)?;
        let mut client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .pool_max_idle_per_host(8)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if !settings.allow_inside {
            client = client.dns_resolver(guard::Screening::arc());
        }
        let http = HttpService {
            http: client.build()?,
            base: Arc::from(""),
            max_reply: 64 << 10,
            headers: HeaderMap::new(),
            deadline_header: None,
            idempotency_header: HeaderName::from_static("idempotency-key"),
            quota: None,
        };
        Ok(PushSender {
            inner: Arc::new(Inner {
                stack,
                breakers,
                http,
                secret,
                allow_inside: settings.allow_inside,
                origins: Mutex::default(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whsec_secrets_are_decoded_and_others_kept_as_bytes() {
        // The Standard Webhooks specification's example secret and signature.
        let key = signing_key(b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        assert_eq!(
            sign(
                &key,
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert_eq!(&*signing_key(b"plain secret").unwrap(), b"plain secret");
        // `whsec_` with a tail that is not base64, or nothing after it, is refused at build.
        assert!(signing_key(b"whsec_from_your_vault").is_err());
        assert!(signing_key(b"whsec_").is_err());
        assert!(matches!(
            PushSender::builder()
                .signing_secret("whsec_not base64!")
                .build(),
            Err(BuildError::InvalidSecret)
        ));
        assert!(
            PushSender::builder()
                .signing_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
                .build()
                .is_ok()
        );
    }

    #[test]
    fn the_token_travels_in_both_spellings() {
        let receiver = Receiver::new("https://hooks.example.com/a", Some("tok"), None).unwrap();
        assert_eq!(receiver.headers[&NOTIFICATION_TOKEN], "tok");
        assert_eq!(receiver.headers[&NOTIFICATION_TOKEN_X], "tok");
    }
}
