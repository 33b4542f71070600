//! A reply's JSON: written once into a buffer, and sent as a response.

use std::any::Any;
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;

/// A reply whose JSON was written before the server had it, after room for the head of the
/// dedup's record: the endpoint copies its JSON as it is (serialized, it would be a
/// `RawValue`, whose text serde_json checks again in full: ~3 % of a SendMessage's work), and
/// the dedup keeps the block itself as the record of a request with the same fingerprint. A
/// floor above implements it (the SDK bridge's reply) and says how to find it among any
/// handler's replies ([`recognize_prewritten`]): the server names no type above it.
#[doc(hidden)]
pub trait Prewritten {
    /// The reply's JSON.
    fn json_bytes(&self) -> &[u8];
    /// The dedup's record of this reply, when it was written for a request with
    /// `fingerprint`.
    fn record(&self, fingerprint: u64) -> Option<Bytes>;
}

/// How a reply is seen to be [`Prewritten`]: a downcast to the type above that is one.
type Recognize = for<'a> fn(&'a dyn Any) -> Option<&'a dyn Prewritten>;

static RECOGNIZE: OnceLock<Recognize> = OnceLock::new();

/// Makes `recognize` the way replies are seen to be [`Prewritten`] (the first call wins; the
/// bridge makes it before its first reply is made).
#[allow(dead_code)] // Called from a floor above, which not every feature set builds.
#[doc(hidden)]
pub fn recognize_prewritten(recognize: Recognize) {
    let _ = RECOGNIZE.set(recognize);
}

/// `value` as a [`Prewritten`] reply, when it is one.
#[doc(hidden)]
pub fn prewritten<T: Any>(value: &T) -> Option<&dyn Prewritten> {
    RECOGNIZE.get()?(value)
}

/// `value`'s JSON appended to `out`; a [`Prewritten`] reply's copied as it is.
#[doc(hidden)]
pub fn write_json<T: serde::Serialize + 'static>(
    out: &mut Vec<u8>,
    value: &T,
) -> serde_json::Result<()> {
    if let Some(reply) = prewritten(value) {
        out.extend_from_slice(reply.json_bytes());
        return Ok(());
    }
    serde_json::to_writer(out, value)
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
