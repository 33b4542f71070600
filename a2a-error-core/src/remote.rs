//! `RemoteError`: an error decoded from the wire that keeps everything, even for codes nobody
//! here knows.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::code::{self, SPEC_DOMAIN};
use crate::data::DataSink;
use crate::error::{A2aError, Category, FromErrorObject, RetryHint};
use crate::object::{ErrorObject, WireProfile};

/// An error received from a peer: code, message, reason, domain, metadata, retry delay and the
/// raw `data`, nothing dropped.
///
/// Encoding a decoded `RemoteError` again sends the peer's `data` exactly as it came, so
/// unknown codes and details survive being passed along a chain of agents.
#[derive(Clone, Debug, PartialEq)]
pub struct RemoteError {
    object: ErrorObject,
    reason: Option<String>,
    domain: Option<String>,
    metadata: Map<String, Value>,
    retry_after: Option<Duration>,
    retryable: Option<bool>,
    // Whether `object.data` came from a peer (sent back verbatim) or is ours to encode.
    received: bool,
}

impl RemoteError {
    /// Reads everything out of a received error object.
    pub fn from_object(object: ErrorObject) -> Self {
        RemoteError {
            reason: object.reason().map(str::to_owned),
            domain: object.domain().map(str::to_owned),
            metadata: object.metadata(),
            retry_after: object.retry_after(),
            retryable: object.retryable(),
            received: true,
            object,
        }
    }

    /// A remote error built by hand (tests, adapters); encoded like any other error.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RemoteError {
            object: ErrorObject::new(code, message),
            reason: None,
            domain: None,
            metadata: Map::new(),
            retry_after: None,
            retryable: None,
            received: false,
        }
    }

    /// Sets the ErrorInfo reason.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self.received = false;
        self
    }

    /// Sets the ErrorInfo domain.
    pub fn with_domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self.received = false;
        self
    }

    /// Adds a metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self.received = false;
        self
    }

    /// Sets the retry delay the peer asked for.
    pub fn with_retry_delay(mut self, delay: Duration) -> Self {
        self.retry_after = Some(delay);
        self.received = false;
        self
    }

    /// Sets whether the peer said the call may be retried (legacy `retryable`).
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self.received = false;
        self
    }

    /// The error object as received (or as built).
    pub fn object(&self) -> &ErrorObject {
        &self.object
    }

    /// The peer's message.
    pub fn message(&self) -> &str {
        &self.object.message
    }

    /// The reason exactly as the peer sent it, if it sent one.
    pub fn received_reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The domain exactly as the peer sent it, if it sent one.
    pub fn received_domain(&self) -> Option<&str> {
        self.domain.as_deref()
    }

    /// The retry delay the peer asked for.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether the peer said the call may be retried: the legacy `retryable` member, or the
    /// `retryable` ErrorInfo metadata entry this project's servers send when an error's retry
    /// advice differs from its code's default (a sanitized panic is `-32603` with
    /// `retryable: "false"`). `None` when the peer said nothing.
    pub fn retryable(&self) -> Option<bool> {
        self.retryable
    }

    /// The agents below the one that sent this error, as it named them (a DOWNSTREAM_FAILED
    /// from an agent built with this crate, or the legacy nested `downstreamError`): the
    /// agent it called first, the root cause last. Empty when it names none.
    pub fn chain(&self) -> std::vec::IntoIter<crate::chain::Hop> {
        crate::chain::hops_of(&self.object).into_iter()
    }

    /// The last hop of [`chain`](Self::chain): where the failure started.
    pub fn root_cause(&self) -> Option<crate::chain::Hop> {
        self.chain().next_back()
    }

    /// The raw `data` member as received.
    pub fn data(&self) -> Option<&Value> {
        self.object.data.as_ref()
    }
}

/// The peer's reason and message, escaped and cut ([`Shown`](crate::text::Shown)): this
/// text goes into logs and terminals, where a peer must not forge lines or fill the disk.
impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::text::{LOG_BYTES, Shown};
        write!(
            f,
            "remote error {} {}: {}",
            self.code(),
            Shown::new(self.reason(), 64),
            Shown::new(self.message(), LOG_BYTES)
        )
    }
}

impl std::error::Error for RemoteError {}

impl A2aError for RemoteError {
    fn code(&self) -> i32 {
        self.object.code
    }

    fn reason(&self) -> &str {
        match &self.reason {
            Some(reason) => reason,
            None => code::default_reason(self.object.code).unwrap_or("UNKNOWN"),
        }
    }

    fn domain(&self) -> &str {
        match (&self.domain, code::lookup(self.object.code)) {
            (Some(domain), _) => domain,
            (None, Some(row)) if row.origin.is_spec() => SPEC_DOMAIN,
            (None, _) => "",
        }
    }

    fn public_message(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.object.message)
    }

    fn retry_hint(&self) -> RetryHint {
        match (self.retry_after, self.retryable) {
            (_, Some(false)) => RetryHint::Never,
            (Some(delay), _) => RetryHint::After(delay),
            (None, Some(true)) => RetryHint::Backoff,
            (None, None) => match code::lookup(self.object.code) {
                Some(row) if row.retry == code::DefaultRetry::Backoff => RetryHint::Backoff,
                _ => RetryHint::Never,
            },
        }
    }

    fn category(&self) -> Category {
        match code::lookup(self.object.code) {
            Some(row) => row.category,
            None if self.retryable == Some(true) || self.retry_after.is_some() => {
                Category::Transient
            }
            None => Category::Unknown,
        }
    }

    fn http_status(&self) -> u16 {
        code::lookup(self.object.code).map_or(500, |row| row.http_status)
    }

    /// The received data fields (ErrorInfo metadata or legacy members), as they came.
    fn metadata(&self) -> Map<String, Value> {
        self.metadata.clone()
    }

    fn write_data(&self, sink: &mut DataSink<'_>) {
        for (key, value) in &self.metadata {
            sink.field(key, value);
        }
    }

    /// The details the peer sent besides ErrorInfo and RetryInfo (a BadRequest, a
    /// DebugInfo…), so an error passed on over REST keeps them, as over JSON-RPC.
    fn write_extra_details(&self, out: &mut Vec<u8>) {
        for detail in self.object.details() {
            let untyped = detail
                .get("@type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let name = crate::object::detail_type(detail);
            if untyped || matches!(name, Some("google.rpc.ErrorInfo" | "google.rpc.RetryInfo")) {
                continue;
            }
            out.push(b',');
            // Serializing a Value into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, detail);
        }
    }

    fn write_error_object(&self, profile: WireProfile, out: &mut Vec<u8>) {
        if self.received {
            // Serializing a Value-backed struct into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, &self.object);
        } else {
            crate::error::write_error_object(self, profile, out);
        }
    }

    fn to_error_object_with(&self, profile: WireProfile) -> ErrorObject {
        if self.received {
            return self.object.clone();
        }
        crate::error::to_error_object(self, profile)
    }
}

impl FromErrorObject for RemoteError {
    fn from_error_object(obj: &ErrorObject) -> Option<Self> {
        Some(RemoteError::from_object(obj.clone()))
    }
}

impl From<ErrorObject> for RemoteError {
    fn from(object: ErrorObject) -> Self {
        RemoteError::from_object(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_code_and_data_survive() {
        let wire = json!({"code": 4711, "message": "odd", "data": {"x": [1, {"y": null}]}});
        let object: ErrorObject = serde_json::from_value(wire.clone()).unwrap();
        let remote = RemoteError::from_object(object);
        assert_eq!(remote.code(), 4711);
        assert_eq!(remote.reason(), "UNKNOWN");
        assert_eq!(remote.category(), Category::Unknown);
        assert_eq!(remote.retry_hint(), RetryHint::Never);
        assert_eq!(
            serde_json::to_value(remote.to_error_object()).unwrap(),
            wire
        );
        let mut bytes = Vec::new();
        remote.write_error_object(WireProfile::A2a, &mut bytes);
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), wire);
    }

    #[test]
    fn received_details_survive_a_rest_reencode() {
        let wire = json!({"code": -32602, "message": "Invalid parameters", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "INVALID_PARAMS",
             "domain": "a2a-protocol.org", "metadata": {}},
            {"@type": "type.googleapis.com/google.rpc.BadRequest",
             "fieldViolations": [{"field": "message.role", "description": "unknown value"}]}]});
        let remote = RemoteError::from_object(serde_json::from_value(wire).unwrap());
        let mut body = Vec::new();
        crate::error::write_rest_status(
            &remote,
            400,
            crate::code::StatusMapping::V1_0_1,
            &mut body,
        );
        let status: Value = serde_json::from_slice(&body).unwrap();
        let details = status["error"]["details"].as_array().unwrap();
        assert_eq!(details.len(), 2, "{status}");
        assert_eq!(details[1]["fieldViolations"][0]["field"], "message.role");
        assert_eq!(status["error"]["status"], "INVALID_ARGUMENT");
    }

    #[test]
    fn table_defaults_fill_what_the_peer_left_out() {
        let remote = RemoteError::from_object(ErrorObject::new(code::AGENT_UNAVAILABLE, "down"));
        assert_eq!(remote.reason(), "AGENT_UNAVAILABLE");
        assert_eq!(remote.domain(), "");
        assert_eq!(remote.retry_hint(), RetryHint::Backoff);
        assert_eq!(remote.http_status(), 503);
        let spec = RemoteError::from_object(ErrorObject::new(code::TASK_NOT_FOUND, "gone"));
        assert_eq!(spec.domain(), SPEC_DOMAIN);
        assert_eq!(spec.category(), Category::NotFound);
    }

    #[test]
    fn legacy_retryable_false_wins_over_table_default() {
        let object: ErrorObject = serde_json::from_value(json!({
            "code": -32603, "message": "m", "data": {"retryable": false}}))
        .unwrap();
        assert_eq!(
            RemoteError::from_object(object).retry_hint(),
            RetryHint::Never
        );
    }
}
