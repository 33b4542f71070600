//! Passing a downstream failure on: [`ClientError`]'s [`A2aError`] impl, which translates it
//! (never forwards it) into this agent's own error, and the hops of the chain it names.

use std::borrow::Cow;

use a2a_error_codes::{CodeRow, PROJECT_DOMAIN};

use crate::client::error::ClientError;
use crate::wire::chain::{self, Hop};
use crate::wire::code::{self, SPEC_DOMAIN, row};
use crate::wire::data::DataSink;
use crate::wire::error::{A2aError, Category, RetryHint};

impl<E> ClientError<E> {
    /// The table row a local failure is passed on as. A bare status passes on only as a
    /// refusal for load (which the caller may retry just the same); a downstream 404 or 401 is
    /// not the caller's missing task or missing credentials.
    pub(in crate::client) fn local_row(&self) -> &'static CodeRow {
        let code = match self {
            ClientError::Timeout(_) => code::DEADLINE_EXCEEDED,
            ClientError::Status(http) => match crate::client::classify::status_row(http).code {
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
        if self.is_local_refusal() {
            return false;
        }
        self.retry_advice().is_retryable()
            || self.remote().is_some_and(|remote| {
                // `"true"` in ErrorInfo metadata, `true` in the legacy profile.
                match remote
                    .object()
                    .metadata_value(chain::key::RETRIES_EXHAUSTED)
                {
                    Some(serde_json::Value::Bool(flag)) => *flag,
                    Some(serde_json::Value::String(flag)) => flag == "true",
                    _ => false,
                }
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
    use crate::client::error::tests::status;
    use crate::resilience::Timeout;
    use crate::wire::object::{ErrorObject, WireProfile};
    use crate::wire::remote::RemoteError;
    use std::time::Duration;

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
        assert_eq!(object.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(
            object.metadata_value("downstreamReason"),
            Some(&"CIRCUIT_OPEN".into())
        );
        assert!(object.metadata_value("retriesExhausted").is_none());
    }
}
