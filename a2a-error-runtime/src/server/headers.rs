//! What a server reads of a request's headers: the ones A2A defines, found in one pass
//! ([`Known`]), and whether a body says it is JSON.

use axum::http::{HeaderMap, HeaderValue, header};

/// What a server reads of a request's headers that A2A defines or that have names of no
/// standard, found in one pass over them: a lookup of such a name hashes every byte of it
/// first, and the seven the JSON-RPC endpoint reads cost it about a thirtieth of an error
/// reply's work; one pass compares each header's name once. (A standard name,
/// `Authorization` say, hashes as a small number: `HeaderMap::get` reads it.) Several
/// `traceparent` (or `tracestate`) headers are kept as several, which W3C reads as none (or
/// as one list not passed on).
#[derive(Default)]
#[doc(hidden)]
pub struct Known<'a> {
    pub(crate) content_type: Option<&'a HeaderValue>,
    pub(crate) content_length: Option<&'a HeaderValue>,
    pub(crate) version: Option<&'a HeaderValue>,
    /// The smallest `A2A-Deadline-Ms` that reads (several: a proxy added one).
    pub(crate) deadline_left: Option<std::time::Duration>,
    pub(crate) traceparent: Occurrences<'a>,
    pub(crate) tracestate: Occurrences<'a>,
}

/// How many times a header came, and its value when once.
#[derive(Clone, Copy, Default)]
pub(crate) enum Occurrences<'a> {
    #[default]
    Never,
    Once(&'a HeaderValue),
    Several,
}

impl<'a> Occurrences<'a> {
    fn add(&mut self, value: &'a HeaderValue) {
        *self = match self {
            Occurrences::Never => Occurrences::Once(value),
            _ => Occurrences::Several,
        };
    }

    /// The value, when the header came exactly once.
    pub(crate) fn once(self) -> Option<&'a HeaderValue> {
        match self {
            Occurrences::Once(value) => Some(value),
            _ => None,
        }
    }
}

impl<'a> Known<'a> {
    /// One pass over `headers` (hyper caps them at 100).
    #[doc(hidden)]
    pub fn read(headers: &'a HeaderMap) -> Self {
        let mut known = Known::default();
        // Names are lowercase in a `HeaderMap` (A2A's own are written `A2A-Version`).
        for (name, value) in headers {
            match name.as_str() {
                "content-type" => {
                    known.content_type.get_or_insert(value);
                }
                "content-length" => {
                    known.content_length.get_or_insert(value);
                }
                "a2a-version" => {
                    known.version.get_or_insert(value);
                }
                "a2a-deadline-ms" => {
                    if let Some(left) = crate::wire::headers::parse_deadline_ms(value.as_bytes()) {
                        known.deadline_left =
                            crate::deadline::earliest(known.deadline_left, Some(left));
                    }
                }
                crate::trace::TRACEPARENT_HEADER => known.traceparent.add(value),
                crate::trace::TRACESTATE_HEADER => known.tracestate.add(value),
                _ => {}
            }
        }
        known
    }

    /// The caller's deadline, from now: the earliest `A2A-Deadline-Ms` when there are
    /// several (a proxy added one), so that no hop can extend what a caller allowed.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn deadline(&self) -> Option<tokio::time::Instant> {
        crate::deadline::from_left(self.deadline_left)
    }

    /// The trace a request with these headers runs in, as `span`: the caller's
    /// (`traceparent`, exactly one, and its `tracestate`), from `span` (with `otel`, the
    /// caller's span becomes its parent and its id is OpenTelemetry's); else a new trace.
    /// Headers beyond the bounds of `TraceContext::parse` are ignored, never an error.
    #[cfg(feature = "sdk")]
    #[doc(hidden)]
    pub fn trace(&self, span: &tracing::Span) -> crate::trace::TraceContext {
        let caller = crate::trace::caller_by(self.traceparent.once(), self.tracestate.once());
        crate::trace::served_as(caller.as_ref(), span)
    }
}

pub use crate::wire::headers::A2A_JSON;

/// Whether a request says its body is JSON (`application/json` or `application/a2a+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    is_json_type(headers.get(header::CONTENT_TYPE))
}

/// [`is_json`] of a `Content-Type` value.
pub(crate) fn is_json_type(value: Option<&HeaderValue>) -> bool {
    let Some(value) = value else {
        return false;
    };
    // What nearly every client sends, compared as bytes before anything is parsed.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    let Ok(value) = value.to_str() else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json") || essence.eq_ignore_ascii_case(A2A_JSON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_reads_what_lookups_read() {
        let mut headers = HeaderMap::new();
        headers.append(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        headers.append(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.append("A2A-Deadline-Ms", HeaderValue::from_static("30"));
        headers.append(header::CONTENT_LENGTH, HeaderValue::from_static("2"));
        headers.append("a2a-deadline-ms", HeaderValue::from_static("x"));
        headers.append("a2a-deadline-ms", HeaderValue::from_static("10"));
        headers.append("a2a-version", HeaderValue::from_static("0.3"));
        headers.append("traceparent", HeaderValue::from_static("a"));
        headers.append("tracestate", HeaderValue::from_static("b"));
        headers.append("tracestate", HeaderValue::from_static("c"));
        let known = Known::read(&headers);
        // The first value, as `HeaderMap::get` reads it.
        assert_eq!(known.content_type, headers.get(header::CONTENT_TYPE));
        assert_eq!(known.content_length, headers.get(header::CONTENT_LENGTH));
        assert_eq!(known.version, headers.get("a2a-version"));
        // The smallest deadline of those that read.
        assert_eq!(
            known.deadline_left,
            Some(std::time::Duration::from_millis(10))
        );
        // Exactly once, or not at all.
        assert_eq!(known.traceparent.once(), headers.get("traceparent"));
        assert_eq!(known.tracestate.once(), None);
        let empty = HeaderMap::new();
        let none = Known::read(&empty);
        assert!(none.content_type.is_none() && none.version.is_none());
        assert!(none.deadline_left.is_none() && none.traceparent.once().is_none());
    }
}
