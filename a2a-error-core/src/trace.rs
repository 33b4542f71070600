//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the `traceparent` and
//! `tracestate` headers that tie the calls of one request together across agents.
//!
//! What a caller sends is read within fixed bounds and trusted for nothing but the trace: a
//! malformed `traceparent` is ignored (the request starts a trace of its own), and a
//! `tracestate` longer than [`MAX_TRACESTATE`] bytes or with bytes outside printable ASCII is
//! dropped, never cut into something the caller did not send.

use std::fmt;
use std::sync::Arc;

use crate::hex;

/// The W3C `traceparent` header: `00-{32 hex trace id}-{16 hex parent id}-{2 hex flags}`.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// The W3C `tracestate` header: vendors' key-value pairs, passed on unchanged.
pub const TRACESTATE_HEADER: &str = "tracestate";

/// The most bytes of `tracestate` passed on: the W3C limit of what a participant must
/// propagate (32 members, 512 characters). A longer one is dropped whole.
pub const MAX_TRACESTATE: usize = 512;

/// The length of a version-00 `traceparent`.
const TRACEPARENT_LEN: usize = 55;

/// Where a request stands in a trace: its trace id, the id of the span that sent it (the
/// parent of whatever it starts), its flags, and the vendors' `tracestate`.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
    state: Option<Arc<str>>,
}

impl TraceContext {
    /// Reads a caller's `traceparent` (and `tracestate`, when it sent one): `None` for
    /// anything W3C calls invalid (a wrong length, version `ff`, upper-case or non-hex digits,
    /// an all-zero id). A version after 00 is read by its first four fields, as the
    /// specification asks.
    pub fn parse(traceparent: &[u8], tracestate: Option<&[u8]>) -> Option<TraceContext> {
        let value = trim(traceparent);
        if value.len() < TRACEPARENT_LEN {
            return None;
        }
        let version = hex::read::<1>(&value[0..2])?[0];
        if version == 0xff
            || (version == 0 && value.len() != TRACEPARENT_LEN)
            || (value.len() > TRACEPARENT_LEN && value[TRACEPARENT_LEN] != b'-')
            || value[2] != b'-'
            || value[35] != b'-'
            || value[52] != b'-'
        {
            return None;
        }
        let trace_id = hex::read::<16>(&value[3..35])?;
        let parent_id = hex::read::<8>(&value[36..52])?;
        let flags = hex::read::<1>(&value[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceContext {
            trace_id,
            parent_id,
            flags,
            state: tracestate.and_then(read_state),
        })
    }

    /// A new trace, for a request that came without one (or with one that did not read):
    /// random ids, sampled.
    pub fn root() -> TraceContext {
        TraceContext {
            trace_id: random_id(),
            parent_id: random_id(),
            flags: 0x01,
            state: None,
        }
    }

    /// The same trace, sent on by a new span of ours: a fresh parent id, the same trace id,
    /// flags and `tracestate`.
    pub fn child(&self) -> TraceContext {
        TraceContext {
            parent_id: random_id(),
            ..self.clone()
        }
    }

    /// A context from its parts, as a tracer that made the span gave them (OpenTelemetry's
    /// span context): `None` for an all-zero id, which W3C calls invalid.
    pub fn from_parts(
        trace_id: [u8; 16],
        parent_id: [u8; 8],
        flags: u8,
        state: Option<Arc<str>>,
    ) -> Option<TraceContext> {
        (trace_id != [0; 16] && parent_id != [0; 8]).then_some(TraceContext {
            trace_id,
            parent_id,
            flags,
            state,
        })
    }

    /// The ids and flags, as a tracer takes them.
    pub fn parts(&self) -> ([u8; 16], [u8; 8], u8) {
        (self.trace_id, self.parent_id, self.flags)
    }

    /// The `tracestate`, shared.
    pub fn state(&self) -> Option<Arc<str>> {
        self.state.clone()
    }

    /// The trace id as 32 lower-case hex digits, as logs and trace viewers show it.
    pub fn trace_id(&self) -> TraceId {
        TraceId(self.trace_id)
    }

    /// The id of the span that sent this context, 16 lower-case hex digits.
    pub fn parent_id(&self) -> String {
        hex::string(&self.parent_id)
    }

    /// Whether the caller sampled the trace (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags & 0x01 == 0x01
    }

    /// The `traceparent` value that sends this context on (version 00).
    pub fn traceparent(&self) -> String {
        // Written in place: one allocation per call sent on, not one per field.
        let mut out = [0u8; TRACEPARENT_LEN];
        out[..3].copy_from_slice(b"00-");
        hex::write(&self.trace_id, &mut out[3..35]);
        out[35] = b'-';
        hex::write(&self.parent_id, &mut out[36..52]);
        out[52] = b'-';
        hex::write(&[self.flags], &mut out[53..55]);
        // Hex digits and dashes only.
        String::from_utf8(out.to_vec()).unwrap_or_default()
    }

    /// The `tracestate` to send on, unchanged, when the caller sent one that read.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }
}

impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("tracestate", &self.state)
            .finish()
    }
}

/// A trace id, shown as 32 lower-case hex digits (a log field, a span attribute).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TraceId([u8; 16]);

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Optional whitespace around a header value (RFC 9110), nothing else.
fn trim(value: &[u8]) -> &[u8] {
    value.trim_ascii()
}

/// A `tracestate` passed on only whole: at most [`MAX_TRACESTATE`] bytes of printable ASCII.
fn read_state(value: &[u8]) -> Option<Arc<str>> {
    let value = trim(value);
    if value.is_empty()
        || value.len() > MAX_TRACESTATE
        || !value.iter().all(|b| (0x20..0x7f).contains(b))
    {
        return None;
    }
    std::str::from_utf8(value).ok().map(Arc::from)
}

/// A random id (N at most 16) that is not all zeros, which W3C reserves for "none".
fn random_id<const N: usize>() -> [u8; N] {
    loop {
        let mut id = [0u8; N];
        id.copy_from_slice(&random_u128().to_le_bytes()[..N]);
        if id != [0; N] {
            return id;
        }
    }
}

fn random_u128() -> u128 {
    fastrand::u128(..)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_reads_and_writes_back() {
        let context = TraceContext::parse(VALID.as_bytes(), Some(b"congo=t61rcWkgMzE")).unwrap();
        assert_eq!(context.traceparent(), VALID);
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.parent_id(), "00f067aa0ba902b7");
        assert!(context.sampled());
        assert_eq!(context.tracestate(), Some("congo=t61rcWkgMzE"));
        let child = context.child();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_ne!(child.parent_id(), context.parent_id());
        assert_eq!(child.tracestate(), context.tracestate());
    }

    #[test]
    fn what_w3c_calls_invalid_is_ignored() {
        let long = "a".repeat(100 << 10);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            &long,
        ] {
            assert!(
                TraceContext::parse(bad.as_bytes(), None).is_none(),
                "{bad:.80}"
            );
        }
        // A later version is read by its first four fields.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes";
        assert!(TraceContext::parse(later.as_bytes(), None).is_some());
    }

    #[test]
    fn a_tracestate_passes_whole_or_not_at_all() {
        let parse = |state: &[u8]| {
            TraceContext::parse(VALID.as_bytes(), Some(state))
                .unwrap()
                .tracestate()
                .map(str::to_owned)
        };
        assert_eq!(parse(&[b'a'; 513]), None);
        assert_eq!(parse(&[b'a'; 512]).map(|s| s.len()), Some(512));
        assert_eq!(parse(b"a=1\r\nx-injected: yes"), None);
        assert_eq!(parse("a=é".as_bytes()), None);
    }

    #[test]
    fn a_root_is_random_and_valid() {
        let (a, b) = (TraceContext::root(), TraceContext::root());
        assert_ne!(a.trace_id(), b.trace_id());
        let again = TraceContext::parse(a.traceparent().as_bytes(), None).unwrap();
        assert_eq!(again, a);
    }
}
