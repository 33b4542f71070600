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

/// `chunks` counted as they come: the chunk that takes the count past `max` bytes is one
/// `too_large(max)` item, and the stream ends there (or at its first other error). The one
/// count of a body read as a stream: a streamed model reply's, an MCP reply's events.
pub(crate) fn counted<S, E>(
    chunks: S,
    max: usize,
    too_large: impl Fn(usize) -> E,
) -> impl futures_util::Stream<Item = Result<Bytes, E>>
where
    S: futures_util::Stream<Item = Result<Bytes, E>>,
{
    use futures_util::StreamExt;
    chunks.scan(Some(0usize), move |received, chunk| {
        let Some(seen) = *received else {
            return std::future::ready(None);
        };
        let item = match chunk {
            Ok(chunk) if chunk.len() > max - seen.min(max) => Err(too_large(max)),
            other => other,
        };
        *received = item.as_ref().ok().map(|chunk| seen + chunk.len());
        std::future::ready(Some(item))
    })
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

    #[tokio::test]
    async fn a_stream_is_counted_and_ends_at_its_bound() {
        use futures_util::StreamExt;
        let chunks = |sizes: &[usize]| {
            let items: Vec<Result<Bytes, usize>> = sizes
                .iter()
                .map(|&n| Ok(Bytes::from(vec![b'x'; n])))
                .collect();
            futures_util::stream::iter(items)
        };
        // Exactly the bound: every chunk.
        let all: Vec<_> = counted(chunks(&[2, 3, 1]), 6, |max| max).collect().await;
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(Result::is_ok));
        // Past it: the chunk that passes it is the error, and nothing follows.
        let cut: Vec<_> = counted(chunks(&[2, 3, 2, 5]), 6, |max| max).collect().await;
        assert_eq!(cut.len(), 3);
        assert_eq!(cut[2], Err(6));
        // An error of the stream's own ends it too.
        let broken =
            futures_util::stream::iter([Ok(Bytes::from_static(b"ab")), Err(0), Ok(Bytes::new())]);
        let read: Vec<_> = counted(broken, 6, |max| max).collect().await;
        assert_eq!(read, [Ok(Bytes::from_static(b"ab")), Err(0)]);
    }
}
