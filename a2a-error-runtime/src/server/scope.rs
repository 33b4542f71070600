//! A caller's scope: who a request comes from, read from its headers, so that one caller's
//! SendMessage replies ([`Dedup::identify`](crate::server::dedup::Dedup::identify)) and tasks (the SDK
//! bridge's `Bridge::scope`) are never another's.
//!
//! A scope is text, compared whole. It is built from the credential's bytes without loss: two
//! credentials that differ in any byte are two scopes (a lossy decoding such as
//! `String::from_utf8_lossy` made `Bearer \xfe` and `Bearer \xff` one caller). What HTTP
//! itself does not tell apart is one scope: the auth scheme is case-insensitive and separated
//! from its credentials by any run of spaces (RFC 9110, section 11.4), so `Bearer t`,
//! `bearer t`, `BEARER  t` are the one credential an authenticating proxy in front sees,
//! and one caller for the rate limit, task ownership and the dedup alike.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

/// How a caller's scope is read from a request's headers; `None` is the anonymous caller,
/// one scope shared by every request without a credential.
pub type ReadScope = std::sync::Arc<dyn Fn(&HeaderMap) -> Option<String> + Send + Sync>;

/// The scope of a request's `Authorization` header (the `authorization` metadata over
/// gRPC): the default of the SDK bridge. Use it with [`Dedup::identify`](crate::server::dedup::Dedup::identify)
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
        .map(|value| credential(value.as_bytes()))
}

/// An `Authorization` value as a scope: `scheme credentials` with the scheme in lower case and
/// one space between them, the credentials' bytes exact ([`of_bytes`]). A value that is not
/// `scheme SP credentials` (one token alone, a scheme that is not an RFC 9110 token) is
/// taken whole, byte for byte.
///
/// ```
/// # use a2a_error_runtime as a2a_error;
/// use a2a_error::server::scope::credential;
///
/// let one = credential(b"Bearer abc");
/// for spelling in [&b"bearer abc"[..], b"BEARER abc", b"bEaReR abc", b"Bearer  abc", b"Bearer\tabc"] {
///     assert_eq!(credential(spelling), one);
/// }
/// assert_ne!(credential(b"Bearer ABC"), one); // the token's bytes are kept exact
/// ```
pub fn credential(value: &[u8]) -> String {
    let value = value.trim_ascii();
    let Some(space) = value.iter().position(|byte| matches!(byte, b' ' | b'\t')) else {
        return of_bytes(value);
    };
    let (scheme, rest) = value.split_at(space);
    if !scheme.iter().all(|&byte| is_tchar(byte)) {
        return of_bytes(value);
    }
    let mut normal = Vec::with_capacity(value.len());
    normal.extend(scheme.iter().map(u8::to_ascii_lowercase));
    normal.push(b' ');
    normal.extend_from_slice(rest.trim_ascii_start());
    of_bytes(&normal)
}

/// RFC 9110's `tchar`: the characters of a token, such as an auth scheme.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Credential bytes as a scope, without loss: the text itself when it is UTF-8 (prefixed
/// `t:`), else its bytes in hex (prefixed `x:`), so that no two byte strings meet.
pub fn of_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => format!("t:{text}"),
        Err(_) => {
            let mut out = vec![0u8; 2 + 2 * bytes.len()];
            out[..2].copy_from_slice(b"x:");
            crate::wire::hex::write(bytes, &mut out[2..]);
            // ASCII only.
            String::from_utf8(out).unwrap_or_default()
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

    #[test]
    fn one_credential_is_one_scope_however_its_scheme_is_spelled() {
        let one = credential(b"Bearer tok\xfe");
        for spelling in [
            &b"bearer tok\xfe"[..],
            b"BEARER tok\xfe",
            b"bEaReR tok\xfe",
            b"Bearer  tok\xfe",
            b"Bearer \t tok\xfe",
            b" Bearer tok\xfe ",
        ] {
            assert_eq!(credential(spelling), one, "{spelling:?}");
        }
        // The credentials themselves are compared byte for byte.
        for other in [
            &b"Bearer TOK\xfe"[..],
            b"Bearer tok\xff",
            b"Bearer tok \xfe",
            b"Basic tok\xfe",
            b"Bearertok\xfe",
        ] {
            assert_ne!(credential(other), one, "{other:?}");
        }
        // A lone token is not a scheme: its case is kept.
        assert_ne!(credential(b"abc"), credential(b"ABC"));
    }
}
