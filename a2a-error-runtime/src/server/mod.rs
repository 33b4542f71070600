//! Serving A2A over axum 0.8 (feature `axum`): a spec-exact JSON-RPC 2.0 endpoint, REST error
//! responses, SSE streams that end in an error event, task-level failures, and a dedup cache
//! that makes client retries of `SendMessage` safe.

mod body;
mod dedup;
pub(crate) mod endpoint;
pub(crate) mod log;
mod memory;
mod params;
pub(crate) mod quota;
#[cfg(feature = "sdk")]
mod rate;
pub mod rest;
pub mod scope;
pub(crate) mod serve;
pub(crate) mod sse;
mod task;
mod timer;
mod version;

#[cfg(feature = "redis")]
pub use dedup::RedisStore;
#[cfg(feature = "sdk")]
pub(crate) use dedup::fingerprint;
#[cfg(all(feature = "redis", feature = "sdk"))]
pub(crate) use dedup::redis_millis;
pub use dedup::{Dedup, DedupError, DedupStore, MemoryStore, Refusal, StoreError, StoreFailure};
pub use endpoint::{AdaptiveLimit, Handler, JsonRpc, RequestContext, StreamHandler};
pub use memory::return_freed_memory;
#[cfg(feature = "sdk")]
pub use rate::{RateLimit, RateLimiter};
pub use serve::{App, ServeLimits, serve};
pub use sse::{Binding, sse_response};
pub use task::failed_status;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;

/// Up to how many header values a request's headers are scanned for a name rather than
/// looked up by its hash: a scan compares a few names (most requests carry under a dozen
/// headers), a lookup hashes every byte of the name first, which cost the error path about
/// a thirtieth of its work over the seven headers it reads. Past this, and so for a peer
/// that sends a hundred headers, the hash.
const SCAN_UP_TO: usize = 16;

/// The first value of header `name` in `headers` (`HeaderMap::get`, read by a scan when
/// there are few).
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a HeaderValue> {
    if headers.len() > SCAN_UP_TO {
        return headers.get(name);
    }
    headers
        .iter()
        .find(|(named, _)| *named == name)
        .map(|(_, value)| value)
}

/// Every value of header `name` in `headers`, in order (`HeaderMap::get_all`, read by a scan
/// when there are few).
#[cfg(feature = "sdk")]
pub(crate) fn header_values<'a>(headers: &'a HeaderMap, name: &'a HeaderName) -> HeaderValues<'a> {
    if headers.len() > SCAN_UP_TO {
        return HeaderValues::Hashed(headers.get_all(name).iter());
    }
    HeaderValues::Scanned(headers.iter(), name)
}

/// The values [`header_values`] reads.
#[cfg(feature = "sdk")]
pub(crate) enum HeaderValues<'a> {
    Scanned(header::Iter<'a, HeaderValue>, &'a HeaderName),
    Hashed(header::ValueIter<'a, HeaderValue>),
}

#[cfg(feature = "sdk")]
impl<'a> Iterator for HeaderValues<'a> {
    type Item = &'a HeaderValue;

    fn next(&mut self) -> Option<&'a HeaderValue> {
        match self {
            HeaderValues::Scanned(headers, name) => headers
                .find(|(named, _)| named == name)
                .map(|(_, value)| value),
            HeaderValues::Hashed(values) => values.next(),
        }
    }
}

/// What the JSON-RPC endpoint reads of a request's headers, found in one pass over them: a
/// lookup by name hashes the name first, and the seven the endpoint reads cost it about a
/// thirtieth of an error reply's work; one pass compares each header's name once. Several
/// `traceparent` (or `tracestate`) headers are kept as several, which W3C reads as none (or
/// as one list not passed on).
#[derive(Default)]
pub(crate) struct Known<'a> {
    pub(crate) content_type: Option<&'a HeaderValue>,
    pub(crate) content_length: Option<&'a HeaderValue>,
    pub(crate) version: Option<&'a HeaderValue>,
    /// The smallest `A2A-Deadline-Ms` that reads (several: a proxy added one).
    pub(crate) deadline_left: Option<std::time::Duration>,
    pub(crate) traceparent: Seen<'a>,
    pub(crate) tracestate: Seen<'a>,
}

/// How many times a header came, and its value when once.
#[derive(Clone, Copy, Default)]
pub(crate) enum Seen<'a> {
    #[default]
    Never,
    Once(&'a HeaderValue),
    Several,
}

impl<'a> Seen<'a> {
    fn add(&mut self, value: &'a HeaderValue) {
        *self = match self {
            Seen::Never => Seen::Once(value),
            _ => Seen::Several,
        };
    }

    /// The value, when the header came exactly once.
    pub(crate) fn once(self) -> Option<&'a HeaderValue> {
        match self {
            Seen::Once(value) => Some(value),
            _ => None,
        }
    }
}

impl<'a> Known<'a> {
    /// One pass over `headers` (hyper caps them at 100).
    pub(crate) fn read(headers: &'a HeaderMap) -> Self {
        let mut known = Known::default();
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
                "traceparent" => known.traceparent.add(value),
                "tracestate" => known.tracestate.add(value),
                _ => {}
            }
        }
        known
    }
}

/// A response with a JSON body (`application/json`, as JSON-RPC replies are sent).
pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Content type of A2A JSON bodies (REST replies use it; `application/json` is accepted).
pub const A2A_JSON: &str = "application/a2a+json";

/// Whether a request says its body is JSON (`application/json` or `application/a2a+json`).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    is_json_type(self::header(headers, &header::CONTENT_TYPE))
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
    fn a_scan_finds_what_the_hash_finds() {
        let deadline = HeaderName::from_static("a2a-deadline-ms");
        let absent = HeaderName::from_static("traceparent");
        // Few headers (scanned) and many (hashed), with a name repeated, in any case.
        for padding in [0, 3, SCAN_UP_TO + 5] {
            let mut headers = HeaderMap::new();
            headers.append(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            for i in 0..padding {
                let name = HeaderName::try_from(format!("x-pad-{i}")).unwrap();
                headers.append(name, HeaderValue::from_static("pad"));
            }
            headers.append("A2A-Deadline-Ms", HeaderValue::from_static("30"));
            headers.append(header::CONTENT_LENGTH, HeaderValue::from_static("2"));
            headers.append("a2a-deadline-ms", HeaderValue::from_static("10"));
            assert_eq!(header(&headers, &deadline), headers.get(&deadline));
            assert_eq!(
                header(&headers, &header::CONTENT_LENGTH),
                headers.get(header::CONTENT_LENGTH)
            );
            assert_eq!(header(&headers, &absent), None);
            #[cfg(feature = "sdk")]
            {
                let all: Vec<_> = header_values(&headers, &deadline).collect();
                let expected: Vec<_> = headers.get_all(&deadline).iter().collect();
                assert_eq!(all, expected);
                assert_eq!(all.len(), 2);
                assert_eq!(header_values(&headers, &absent).count(), 0);
            }
        }
    }
}
