//! A request body read within a total time limit, and how its lapse is recognised by those
//! who read it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use pin_project_lite::pin_project;
use tokio::time::Sleep;

/// Reading a request body took longer than [`ServeLimits::body_timeout`](crate::server::serve::ServeLimits::body_timeout).
#[derive(Debug, thiserror::Error)]
#[error("request body not received in time")]
pub(crate) struct BodyTimedOut;

/// Whether a body read failed because of [`BodyTimedOut`], anywhere in its source chain.
pub(crate) fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<BodyTimedOut>() {
            return true;
        }
        current = error.source();
    }
    false
}

pin_project! {
    /// A request body that fails with [`BodyTimedOut`] once its deadline passes: a total
    /// limit, unlike tower-http's `TimeoutBody`, which waits again after every frame and so
    /// lets a peer that drips one byte at a time hold the request forever.
    pub(crate) struct TimedBody {
        #[pin]
        body: Incoming,
        // Armed at the first read that has to wait, for the deadline set on arrival: a small
        // body has usually come whole with its head, and arming a timer for it (a clock
        // handle, a timer entry to clear) cost more than reading it.
        #[pin]
        timer: Option<Sleep>,
        deadline: tokio::time::Instant,
    }
}

impl TimedBody {
    pub(crate) fn new(body: Incoming, limit: Duration) -> Self {
        TimedBody {
            body,
            timer: None,
            deadline: crate::deadline::after(tokio::time::Instant::now(), limit),
        }
    }
}

impl http_body::Body for TimedBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        if let Poll::Ready(frame) = this.body.poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        if this.timer.is_none() {
            this.timer
                .set(Some(tokio::time::sleep_until(*this.deadline)));
        }
        let Some(timer) = this.timer.as_pin_mut() else {
            return Poll::Pending;
        };
        match timer.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Why a request body was not read whole.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// It is longer than the limit; reading stopped there.
    TooLarge,
    /// Reading it failed (the peer went away, [`BodyTimedOut`], bad chunked framing).
    Failed(axum::Error),
}

/// `body` read whole, up to `limit` bytes: a body that came as one frame is that frame (no
/// copy), one of several frames is joined once. What `Limited` and `collect` do, without the
/// queue of frames and the trailers they keep (a fifth of the error path's reading, measured
/// under callgrind). Trailers are dropped: no A2A binding sends any.
pub(crate) async fn read_whole(body: axum::body::Body, limit: usize) -> Result<Bytes, ReadError> {
    use http_body::Body as _;
    if body.size_hint().lower() > limit as u64 {
        return Err(ReadError::TooLarge);
    }
    let mut body = std::pin::pin!(body);
    let mut first = Bytes::new();
    let mut joined = Vec::new();
    let mut read = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let Ok(data) = frame.map_err(ReadError::Failed)?.into_data() else {
            continue;
        };
        read = read.saturating_add(data.len());
        if read > limit {
            return Err(ReadError::TooLarge);
        }
        if first.is_empty() && joined.is_empty() {
            first = data;
        } else {
            if joined.is_empty() {
                joined.reserve(read);
                joined.extend_from_slice(&first);
                first = Bytes::new();
            }
            joined.extend_from_slice(&data);
        }
    }
    Ok(if joined.is_empty() {
        first
    } else {
        Bytes::from(joined)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(parts: &[&'static [u8]]) -> axum::body::Body {
        let stream = futures_util::stream::iter(
            parts
                .iter()
                .map(|part| Ok::<_, std::io::Error>(Bytes::from_static(part)))
                .collect::<Vec<_>>(),
        );
        axum::body::Body::from_stream(stream)
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_its_limit() {
        let one = read_whole(axum::body::Body::from("abc"), 3).await.unwrap();
        assert_eq!(&one[..], b"abc");
        let joined = read_whole(frames(&[b"ab", b"", b"cd", b"e"]), 5)
            .await
            .unwrap();
        assert_eq!(&joined[..], b"abcde");
        let empty = read_whole(frames(&[]), 0).await.unwrap();
        assert!(empty.is_empty());
        // Past the limit, in one frame or over several, and by a declared length.
        assert!(matches!(
            read_whole(axum::body::Body::from("abcd"), 3).await,
            Err(ReadError::TooLarge)
        ));
        assert!(matches!(
            read_whole(frames(&[b"ab", b"cd"]), 3).await,
            Err(ReadError::TooLarge)
        ));
        // A failed read is the body's error.
        let failing = axum::body::Body::from_stream(futures_util::stream::iter([
            Ok(Bytes::from_static(b"a")),
            Err(std::io::Error::other("gone")),
        ]));
        assert!(matches!(
            read_whole(failing, 10).await,
            Err(ReadError::Failed(_))
        ));
    }
}
