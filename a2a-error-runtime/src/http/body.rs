//! A reply's body read whole within a limit, or a few bytes of it kept for a log.

use bytes::Bytes;

/// Why a body could not be read whole.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The body is (or says it is) larger than the limit; it was read no further.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The HTTP client's own timeout fired while reading.
    Timeout,
    /// The connection broke while reading.
    Broken(reqwest::Error),
}

/// Reads the whole body of `response`, at most `limit` bytes: a `Content-Length` over the
/// limit is refused before reading, and what arrives is counted as it comes.
pub(crate) async fn read(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Bytes, BodyError> {
    let declared = response.content_length();
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    // The declared length only sizes the buffer.
    let capacity = declared.map_or(0, |length| length as usize);
    let mut body = Vec::with_capacity(capacity);
    while let Some(chunk) = response.chunk().await.map_err(broken)? {
        if chunk.len() > limit - body.len() {
            return Err(BodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}

/// The first `limit` bytes of a body (an error reply's, for a log), reading no further.
pub(crate) async fn excerpt(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    while kept.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit - kept.len();
                kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    kept
}

/// A failure of the body's stream, read as a timeout or a broken connection.
pub(crate) fn broken(error: reqwest::Error) -> BodyError {
    if error.is_timeout() {
        BodyError::Timeout
    } else {
        BodyError::Broken(error)
    }
}
