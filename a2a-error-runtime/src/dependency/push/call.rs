//! One notification's POST as the stack sends it ([`PushCall`]), and the service at the
//! bottom of the stack that stamps each attempt with its time and signature ([`PushService`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hmac::{KeyInit, Mac};
use reqwest::header::{HeaderName, HeaderValue};
use tower::Service;

use crate::dependency::http::HttpService;
use crate::dependency::http::{HttpCall, HttpError, HttpReply};
use crate::resilience::{Request, TimeLimit};

/// Standard Webhooks' id of a notification: the same on every attempt.
pub const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");
/// Standard Webhooks' send time of an attempt, in Unix seconds.
pub const WEBHOOK_TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
/// Standard Webhooks' signature: `v1,<base64 of HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`.
pub const WEBHOOK_SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");

/// One notification to one receiver: the POST (its URL, its headers but the time and the
/// signature, its body) and what each attempt is stamped with.
#[derive(Clone, Debug)]
pub(super) struct PushCall {
    pub(super) http: HttpCall,
    pub(super) id: Arc<str>,
    pub(super) body: Bytes,
}

impl Request for PushCall {
    fn time_limit(&self) -> TimeLimit {
        self.http.time_limit()
    }
    fn set_time_limit(&mut self, limit: TimeLimit) {
        self.http.set_time_limit(limit);
    }
    fn target(&self) -> Option<&str> {
        Some("push")
    }
    fn operation(&self) -> &str {
        "POST"
    }
    /// Every attempt carries the same `webhook-id`, for the receiver to deduplicate.
    fn repeatable(&self) -> Option<bool> {
        Some(true)
    }
}

/// Sends a [`PushCall`] once, stamped with the attempt's time and, with a secret, signed.
#[derive(Clone)]
pub(super) struct PushService {
    pub(super) http: HttpService,
    pub(super) secret: Option<Arc<[u8]>>,
}

impl std::fmt::Debug for PushService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushService")
            .field("signed", &self.secret.is_some())
            .finish_non_exhaustive()
    }
}

impl Service<PushCall> for PushService {
    type Response = HttpReply;
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpReply, HttpError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: PushCall) -> Self::Future {
        crate::observe::push_attempt();
        let timestamp = unix_seconds();
        let mut http = call
            .http
            .header(WEBHOOK_TIMESTAMP, HeaderValue::from(timestamp));
        if let Some(secret) = &self.secret {
            let signature = sign(secret, &call.id, timestamp, &call.body);
            if let Ok(value) = HeaderValue::from_str(&signature) {
                http = http.header(WEBHOOK_SIGNATURE, value);
            }
        }
        self.http.call(http)
    }
}

/// The attempt's send time, in Unix seconds.
fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Standard Webhooks' signature of `body` sent as `id` at `timestamp`, with `secret`.
pub fn sign(secret: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    use base64::Engine;
    let mut mac =
        hmac::Hmac::<sha2::Sha256>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_standard_webhooks_reference() {
        // The example of the Standard Webhooks specification (its secret is base64 after the
        // `whsec_` prefix; the key is the decoded bytes).
        use base64::Engine;
        let key = base64::engine::general_purpose::STANDARD
            .decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            .unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }
}
