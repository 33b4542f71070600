//! A caller's scope: who a request comes from, read from its headers, so that one caller's
//! SendMessage replies ([`Dedup::identify`](super::Dedup::identify)) and tasks (the SDK
//! bridge's `Bridge::scope`) are never another's.
//!
//! A scope is text, compared whole. It is built from the credential's bytes without loss: two
//! credentials that differ in any byte are two scopes (a lossy decoding such as
//! `String::from_utf8_lossy` made `Bearer \xfe` and `Bearer \xff` one caller).

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

/// How a caller's scope is read from a request's headers; `None` is the anonymous caller,
/// one scope shared by every request without a credential.
pub type Scope = std::sync::Arc<dyn Fn(&HeaderMap) -> Option<String> + Send + Sync>;

/// The scope of a request's `Authorization` header (the `authorization` metadata over
/// gRPC): the default of the SDK bridge. Use it with [`Dedup::identify`](super::Dedup::identify)
/// too.
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use a2a_error::server::scope;
/// use axum::http::{HeaderMap, HeaderValue};
///
/// let mut a = HeaderMap::new();
/// a.insert("authorization", HeaderValue::from_bytes(b"Bearer \xfe").unwrap());
/// let mut b = HeaderMap::new();
/// b.insert("authorization", HeaderValue::from_bytes(b"Bearer \xff").unwrap());
/// assert_ne!(scope::authorization(&a), scope::authorization(&b));
/// assert_eq!(scope::authorization(&HeaderMap::new()), None);
/// ```
pub fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get(AUTHORIZATION)
        .map(|value| of_bytes(value.as_bytes()))
}

/// Credential bytes as a scope, without loss: the text itself when it is UTF-8 (prefixed
/// `t:`), else its bytes in hex (prefixed `x:`), so that no two byte strings meet.
pub fn of_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => format!("t:{text}"),
        Err(_) => {
            let mut out = String::with_capacity(2 + 2 * bytes.len());
            out.push_str("x:");
            for byte in bytes {
                out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
                out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_credentials_share_a_scope() {
        let samples: [&[u8]; 6] = [
            b"Bearer a",
            b"Bearer \xfe",
            b"Bearer \xff",
            b"Bearer \xef\xbf\xbd",
            b"x:4265",
            b"",
        ];
        let scopes: std::collections::HashSet<String> =
            samples.iter().map(|bytes| of_bytes(bytes)).collect();
        assert_eq!(scopes.len(), samples.len());
    }
}
