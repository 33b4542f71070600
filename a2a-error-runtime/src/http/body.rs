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
    // A body that comes as one chunk (most replies) is that chunk, not a copy of it: held
    // aside until a second one arrives, then both joined in `body`. One is always empty.
    let mut only: Option<Bytes> = None;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(broken)? {
        let held = only.as_ref().map_or(body.len(), Bytes::len);
        if chunk.len() > limit - held {
            return Err(BodyError::TooLarge { limit });
        }
        match only.take() {
            Some(first) => {
                body.reserve(capacity.max(first.len() + chunk.len()));
                body.extend_from_slice(&first);
            }
            None if body.is_empty() => {
                only = Some(chunk);
                continue;
            }
            None => {}
        }
        body.extend_from_slice(&chunk);
    }
    Ok(only.unwrap_or_else(|| Bytes::from(body)))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A response whose body comes as `chunks`, with `Content-Length` when `declared`.
    fn response(chunks: &[&'static [u8]], declared: bool) -> reqwest::Response {
        let total: usize = chunks.iter().map(|chunk| chunk.len()).sum();
        let items: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk)))
            .collect();
        let mut builder = http::Response::builder();
        if declared {
            builder = builder.header("content-length", total);
        }
        let body = reqwest::Body::wrap_stream(futures_util::stream::iter(items));
        reqwest::Response::from(builder.body(body).unwrap())
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_one_chunk_or_many_and_bounded() {
        for declared in [false, true] {
            let one = read(response(&[b"{\"a\":1}"], declared), 64).await.unwrap();
            assert_eq!(&one[..], b"{\"a\":1}");
            let many = read(response(&[b"ab", b"", b"cd", b"e"], declared), 64)
                .await
                .unwrap();
            assert_eq!(&many[..], b"abcde");
            let empty_first = read(response(&[b"", b"xy"], declared), 64).await.unwrap();
            assert_eq!(&empty_first[..], b"xy");
            let none = read(response(&[], declared), 64).await.unwrap();
            assert!(none.is_empty());
            // Exactly the limit is read; one byte more, in any chunk, is not.
            assert_eq!(
                read(response(&[b"abc", b"de"], declared), 5)
                    .await
                    .unwrap()
                    .len(),
                5
            );
            for chunks in [
                &[b"abcdef" as &[u8]][..],
                &[b"abc", b"def"],
                &[b"abcde", b"f"],
            ] {
                let error = read(response(chunks, declared), 5).await.unwrap_err();
                assert!(
                    matches!(error, BodyError::TooLarge { limit: 5 }),
                    "{error:?}"
                );
            }
        }
    }
}
